"""N-space contact detection (stage 2): depth and normal of every candidate node.

Baseline: the static part's exact signed distance (``geometry.sdf``) in the static frame;
the normal is its gradient, which points out of the static material, i.e. the direction the
contact force pushes the moving part.  Later a neural SDF takes this module's place.
"""
from __future__ import annotations

import numpy as np

from .model import Contacts, Model


def detect(model: Model, x_s: np.ndarray) -> tuple[Contacts, np.ndarray]:
    """Signed distance of candidate nodes; returns (contacts with d < band, all distances).

    x_s: (n,3) candidate node positions in the static frame (from the broad phase).
    """
    if x_s.shape[0] == 0:
        return Contacts.empty(), np.zeros(0)
    d, g_s = model.sdf.query(x_s)
    sel = d < model.contact.band
    x_w = x_s[sel] @ model.R_ws.T + model.p_ws
    n_w = g_s[sel] @ model.R_ws.T
    return Contacts(x_w, n_w, d[sel]), d
