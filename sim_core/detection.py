"""N-space contact detection (stage 2): depth and normal of every candidate node.

The static part's signed distance in the static frame -- exact (``geometry.sdf``) or
neural (``neural_sdf``, config ``contact.detector``); the normal is its gradient, which
points out of the static material, i.e. the direction the contact force pushes the moving
part.  Normals are needed, and the neural SDF computes them, only for nodes inside the band.
"""
from __future__ import annotations

import numpy as np

from .model import Contacts, Model, State


def reach(model: Model, state: State) -> float:
    """Speculative contact distance (m): the configured band plus how far any node can move
    in one step, so a fast approach cannot jump from "no contact" to a deep penetration."""
    v, w = state.V[:3], state.V[3:]
    return model.contact.band + model.dt * (float(np.linalg.norm(v)) + float(np.linalg.norm(w)) * model.node_radius)


def detect(model: Model, x_s: np.ndarray, band: float, idx: np.ndarray | None = None) -> tuple[Contacts, np.ndarray]:
    """Signed distance of candidate nodes; returns (contacts with d < band, all distances).

    x_s: (n,3) candidate node positions in the static frame (from the broad phase); idx: their
    rows in model.nodes_b, carried on the contacts (the learned clustering's neighbour table).
    """
    if x_s.shape[0] == 0:
        return Contacts.empty(), np.zeros(0)
    d, g_s = model.sdf.query(x_s, band)
    sel = d < band
    x_w = x_s[sel] @ model.R_ws.T + model.p_ws
    n_w = g_s[sel] @ model.R_ws.T
    return Contacts(x_w, n_w, d[sel], None if idx is None else idx[sel]), d
