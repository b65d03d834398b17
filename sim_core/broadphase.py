"""Broad phase: which contact nodes may touch the static part (ARCHITECTURE sec. 4, stage 1).

The static parts are all bounded by an upright cylinder in their own frame, so a node goes on
only if, expressed in the static frame, it lies inside that cylinder grown by a margin --
and, for a part whose material lies outside an inner radius (the hole: its bore), outside
that radius shrunk by the margin.  For the peg that drops the end caps' nodes, 43 % of the
candidates, before the network sees them.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .model import Model, State


@njit(cache=True)
def _filter(nodes_b, R_sb, p_sb, r_max, z_lo, z_hi, r_min):
    n = nodes_b.shape[0]
    keep = np.empty(n, dtype=np.int64)
    out = np.empty((n, 3))
    m = 0
    r2 = r_max * r_max
    r2_min = r_min * r_min if r_min > 0.0 else -1.0
    for i in range(n):
        a, b, c = nodes_b[i, 0], nodes_b[i, 1], nodes_b[i, 2]
        z = R_sb[2, 0] * a + R_sb[2, 1] * b + R_sb[2, 2] * c + p_sb[2]
        if z < z_lo or z > z_hi:
            continue
        x = R_sb[0, 0] * a + R_sb[0, 1] * b + R_sb[0, 2] * c + p_sb[0]
        y = R_sb[1, 0] * a + R_sb[1, 1] * b + R_sb[1, 2] * c + p_sb[1]
        rr = x * x + y * y
        if rr <= r2 and rr >= r2_min:
            keep[m] = i
            out[m, 0], out[m, 1], out[m, 2] = x, y, z
            m += 1
    return keep[:m], out[:m]


def candidates(model: Model, state: State, reach: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Indices of candidate nodes and their positions in the static frame (m); the bounding
    cylinder grows by the configured margin or the speculative reach, whichever is larger."""
    R_sb = model.R_ws.T @ state.R_wb
    p_sb = model.R_ws.T @ (state.p_w - model.p_ws)
    r_max, z_min, z_max = model.bounds_s
    g = max(model.contact.margin, reach)
    return _filter(model.nodes_b, R_sb, p_sb, r_max + g, z_min - g, z_max + g, model.inner_radius_s - g)
