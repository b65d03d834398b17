"""The rigid bodies as one system, batched: every body's drive terms and PMI block in one
kernel call (``blocks``), every pose update in another (``advance``).

Per body (``dynamics.blocks`` derives the terms): the wrench besides the contacts is
F0 - B V+ (the spring-damper drive at the step's midpoint, the external wrench, gravity
m g at the COM); its PMI block  A_i V_i+ = b_i  with the Coriolis matrix at the contact-free
midpoint (``pmi.coriolis_point``, ``pmi.system``).  A body another system holds (the arm's)
has no drive (``driven`` false): that system adds its own coupling (``systems.base``).
``blocks_numpy`` is the same arithmetic one body at a time in NumPy, the reference the
kernel is tested against.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from sim_core.dynamics import pmi
from sim_core.math.so3 import log_so3


@dataclass
class Blocks:
    """The bodies' PMI blocks  A_i V_i+ = b_i + (contacts, couplings)  and their loads; systems
    fold their own coordinates into these in place (``systems.base.System.fold``)."""
    A: np.ndarray                  # (B,6,6)
    b: np.ndarray                  # (B,6)
    F0: np.ndarray                 # (B,6) the load F0 - B V+ besides contacts and couplings [N world; N m body]
    Bd: np.ndarray                 # (B,6) its diagonal B [N s/m x3, N m s/rad x3]
    pull: np.ndarray               # (B,6) the wrench on each body now [f world; tau body]: the learned
                                   # clustering's input


@njit(cache=True)
def _blocks(mass, inertia, p, R, V, T, K, D, driven, p_set, R_set, v_set, w_set, f_ext, g):
    nb = p.shape[0]
    A = np.empty((nb, 6, 6))
    b = np.empty((nb, 6))
    F0 = np.empty((nb, 6))
    Bd = np.zeros((nb, 6))
    pull = np.empty((nb, 6))
    for i in range(nb):
        B = np.zeros((6, 6))
        if driven[i]:
            e = np.empty(6)
            e[:3] = p_set[i] - p[i]
            e[3:] = log_so3(R[i].T @ R_set[i])
            Vs = np.empty(6)
            Vs[:3] = v_set[i]
            Vs[3:] = R[i].T @ w_set[i]
            bd = K[i] * T / 4 + D[i] / 2
            F = K[i] * e + (K[i] * T / 2 + D[i]) * Vs - bd * V[i] + f_ext[i]
            for j in range(6):
                B[j, j] = bd[j]
            Bd[i] = bd
        else:
            F = f_ext[i].copy()
        F[:3] += mass[i] * g
        F0[i] = F
        pull[i] = F - B @ V[i]
        w_bar = pmi.coriolis_point(mass[i], inertia[i], V[i], T, F, B)
        A[i], b[i] = pmi.system(mass[i], inertia[i], V[i], T, F, B, w_bar)
    return A, b, F0, Bd, pull


def _constants(model):
    """(masses (B,), inertias (B,3,3), driven (B,) bool, gravity (3,)): what the kernel reads
    of the model, cached on it (a Model is constant; ``dataclasses.replace`` makes a new one)."""
    got = model.__dict__.get("_rigid_cache")
    if got is None:
        got = (np.array([b.mass for b in model.bodies], float), np.array([b.inertia_b for b in model.bodies], float),
               driven(model), np.asarray(model.gravity, float))
        object.__setattr__(model, "_rigid_cache", got)
    return got


def driven(model) -> np.ndarray:
    """(B,) bool: the bodies their drive moves (not held by another system)."""
    out = np.ones(model.n_bodies, bool)
    for s in model.systems:
        out[list(s.holds)] = False
    return out


def blocks(model, state, inp, dt: float) -> Blocks:
    """Every body's loads and PMI block, one kernel call."""
    m, J, dr, g = _constants(model)
    return Blocks(*_blocks(m, J, state.p_w, state.R_wb, state.V, float(dt), model.drive.K, model.drive.D, dr,
                           inp.p_set_w, inp.R_set_w, inp.v_set_w, inp.w_set_w, inp.f_ext, g))


def blocks_numpy(model, state, inp, dt: float) -> Blocks:
    """``blocks`` one body at a time in NumPy (``dynamics.blocks.drive_terms``): the reference."""
    from sim_core.dynamics.blocks import drive_terms
    nb = model.n_bodies
    A = np.zeros((nb, 6, 6))
    b, F0, Bd, pull = (np.zeros((nb, 6)) for _ in range(4))
    dr = driven(model)
    for i in range(nb):
        body = model.bodies[i]
        if dr[i]:
            F, B = drive_terms(model.drive.K[i], model.drive.D[i], dt, state.p_w[i], state.R_wb[i], state.V[i],
                               inp.p_set_w[i], inp.R_set_w[i], inp.v_set_w[i], inp.w_set_w[i], inp.f_ext[i])
        else:
            F, B = inp.f_ext[i].copy(), np.zeros((6, 6))
        F[:3] += body.mass * model.gravity
        F0[i], Bd[i], pull[i] = F, np.diag(B), F - B @ state.V[i]
        w_bar = pmi.coriolis_point(body.mass, body.inertia_b, state.V[i], dt, F, B)
        A[i], b[i] = pmi.system(body.mass, body.inertia_b, state.V[i], dt, F, B, w_bar)
    return Blocks(A, b, F0, Bd, pull)


@njit(cache=True)
def _advance(p, R, V, Vn, T):
    nb = p.shape[0]
    p1 = np.empty((nb, 3))
    R1 = np.empty((nb, 3, 3))
    for i in range(nb):
        p1[i], R1[i] = pmi.advance(p[i], R[i], V[i], Vn[i], T)
    return p1, R1


def advance(state, V_next: np.ndarray, dt: float):
    """(p (B,3), R (B,3,3)) after the step: every body by its midpoint twist (``pmi.advance``)."""
    return _advance(state.p_w, state.R_wb, state.V, np.ascontiguousarray(V_next.reshape(-1, 6)), float(dt))
