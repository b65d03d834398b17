"""Dynamics as blocks: each body's PMI block and the drives (the arithmetic of
``systems.rigid``, which runs it batched), and ``loads`` for the callers that want a body's
load alone.

**A body's block** (seed 000 eq. (1), ``pmi.system``): with the wrench F0 - B V+ acting on it
besides the contacts, A_i V_i+ = b_i,  A_i = M/T + C(w_bar)/2 + B,  b_i = (M/T - C/2) V_i + F0,
the Coriolis matrix at the contact-free midpoint w_bar (``pmi.coriolis_point``: it keeps a free
body's world momentum; the energy balance is exact at any point).

**Drives** (``drive_terms``): the spring-damper pulling a body to its set pose (the arm's stand-in
and the law protocols' load frame), evaluated at the step's midpoint so a stiff drive stays
stable and passive at T = 10 ms:
    F = K e(t_k+1/2) + D (V_set - V_mid),   e(t_k+1/2) ~ e_k + T/2 (V_set - V_mid),
with e_k = [p_set - p (world); log(R^T R_set) (body)].  Linear in V+: F0 - B V+ with
    B = K T/4 + D/2,    F0 = K e_k + (K T/2 + D) V_set - B V_k  (+ the external wrench).

Couplings between blocks (the arm's grasp, a cable's joints) are ``dynamics.couplings``; the
arm is a system of its own (``systems.arm.system``) folded into the body it holds.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim_core.math.so3 import log_so3
from sim_core.types import Inputs, Model, State


def drive_terms(K, D, dt, p_w, R_wb, V, p_set, R_set, v_set, w_set, f_ext):
    """(F0 (6,), B (6,6)) of a body's drive wrench F0 - B V+, plus the external wrench."""
    e = np.concatenate([p_set - p_w, log_so3(R_wb.T @ R_set)])
    V_set = np.concatenate([v_set, R_wb.T @ w_set])
    Bd = K * dt / 4 + D / 2
    F0 = K * e + (K * dt / 2 + D) * V_set - Bd * V + f_ext
    return F0, np.diag(Bd)


@dataclass(frozen=True)
class Loads:
    """What acts on each body besides the contacts and couplings, linear in V+: F0 - B V+ (a
    body another system holds: the external wrench and gravity only)."""
    F0: np.ndarray                 # (B,6)
    B: np.ndarray                  # (B,6,6)
    pull: np.ndarray               # (B,6) the wrench on each body now, [f world; tau body] (with the
                                   # systems' couplings): the learned clustering's input


def loads(model: Model, state: State, inp: Inputs, dt: float) -> Loads:
    """Every body's load at the start of the step (``systems.rigid.blocks`` and each system's
    ``prepare``)."""
    from sim_core.systems import rigid
    blk = rigid.blocks(model, state, inp, dt)
    for s, sub in zip(model.systems, state.systems):
        s.prepare(model, state, sub, inp, dt, blk)
    B = np.zeros((model.n_bodies, 6, 6))
    B[:, np.arange(6), np.arange(6)] = blk.Bd
    return Loads(blk.F0, B, blk.pull)
