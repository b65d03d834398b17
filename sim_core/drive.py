"""Spring-damper drive of the moving part toward a set pose (stand-in for the robot arm).

Wrench, evaluated at the step's midpoint so that a stiff drive stays stable and passive at
T = 10 ms (trapezoidal spring, midpoint damper):
    F = K e(t_{k+1/2}) + D (V_set - V_mid),   e(t_{k+1/2}) ~ e_k + T/2 (V_set - V_mid),
    V_mid = (V_k + V_{k+1}) / 2,
with the pose error e_k = [p_set - p (world); log(R_wb^T R_set) (body)].  It is linear in
V_{k+1}, so it enters the PMI system as  F0 - B V_{k+1}  (``pmi.system``):
    B = K T/4 + D/2,    F0 = K e_k + (K T/2 + D) V_set - B V_k.
"""
from __future__ import annotations

import numpy as np

from .math3d import log_so3
from .model import Inputs, Model, State


def linearize(model: Model, state: State, inp: Inputs) -> tuple[np.ndarray, np.ndarray]:
    """(F0 (6,), B (6,6)) of the drive wrench F0 - B V_{k+1}, plus the external wrench."""
    T = model.dt
    e = np.concatenate([inp.p_set_w - state.p_w, log_so3(state.R_wb.T @ inp.R_set_w)])
    V_set = np.concatenate([inp.v_set_w, state.R_wb.T @ inp.w_set_w])
    Bd = model.K * T / 4 + model.D / 2
    F0 = model.K * e + (model.K * T / 2 + model.D) * V_set - Bd * state.V + inp.f_ext
    return F0, np.diag(Bd)
