"""Broad phase: which contact nodes may touch a signed-distance shape (ARCHITECTURE sec. 4, stage 1).

A signed-distance shape (``shapes.SDF``) is bounded by an upright cylinder in its own frame,
so a node goes on only if, expressed in that frame, it lies inside that cylinder grown by a margin --
and, for a part whose material lies outside an inner radius (the hole: its bore), outside
that radius shrunk by the margin.  For the peg that drops the end caps' nodes, 43 % of the
candidates, before the network sees them.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from sim_core.shapes import SDF, Nodes
from sim_core.types import BodyPose


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


def candidates(nodes: Nodes, shape: SDF, pose: BodyPose, margin: float,
               reach: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Indices of a node set's candidate nodes against a world-placed SDF shape
    (``shapes.placed``), its body at `pose`, and their positions in the shape's frame (m); the
    bounding cylinder grows by `margin` or the speculative reach, whichever is larger."""
    R_sb = shape.R_ws.T @ pose.R_wb
    p_sb = shape.R_ws.T @ (pose.p_w - shape.p_ws)
    r_max, z_min, z_max = shape.bounds_s
    g = max(margin, reach)
    return _filter(nodes.nodes_b, R_sb, p_sb, r_max + g, z_min - g, z_max + g, shape.inner_radius_s - g)
