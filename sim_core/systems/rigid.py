"""The rigid bodies as one system, batched: every body's drive terms and PMI block in one
kernel call (``blocks``), every pose update in another (``advance``).

Per body (``dynamics.blocks`` derives the terms): the wrench besides the contacts is
F0 - B V+ (the spring-damper drive at the step's midpoint, the external wrench, gravity
m g at the COM); its PMI block  A_i V_i+ = b_i  with the Coriolis matrix at the contact-free
midpoint (``pmi.coriolis_point``, ``pmi.system``).  A body another system holds (the arm's)
has no drive (``driven`` false): that system adds its own coupling (``systems.base``).
``blocks_numpy`` is the same arithmetic one body at a time in NumPy, the reference the
kernel is tested against.  ``KERNELS`` (by ``Model.rigid_kernel``): "general" (``_blocks``,
a 6x6 LAPACK solve a Coriolis pass; the recorded scenarios' bits) and "structured"
(``_blocks_structured``, the same system's block-diagonal closed form: the cable's many links).
"""
from __future__ import annotations

import math
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


# The structured kernel's Coriolis point: the same fixed point as ``pmi.coriolis_point`` (its
# tolerance, pass cap and give-up turn), with the 6x6 LAPACK solve replaced by the system's
# structure (below).
_CORIOLIS_TOL = pmi.CORIOLIS_TOL
_CORIOLIS_MAX_ITER = pmi.CORIOLIS_MAX_ITER


@njit(cache=True)
def _solve3(A, b, out):
    """out = A^-1 b (3x3, Cramer's rule on the cofactors)."""
    c00 = A[1, 1] * A[2, 2] - A[1, 2] * A[2, 1]
    c01 = A[1, 2] * A[2, 0] - A[1, 0] * A[2, 2]
    c02 = A[1, 0] * A[2, 1] - A[1, 1] * A[2, 0]
    det = A[0, 0] * c00 + A[0, 1] * c01 + A[0, 2] * c02
    c10 = A[0, 2] * A[2, 1] - A[0, 1] * A[2, 2]
    c11 = A[0, 0] * A[2, 2] - A[0, 2] * A[2, 0]
    c12 = A[0, 1] * A[2, 0] - A[0, 0] * A[2, 1]
    c20 = A[0, 1] * A[1, 2] - A[0, 2] * A[1, 1]
    c21 = A[0, 2] * A[1, 0] - A[0, 0] * A[1, 2]
    c22 = A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]
    out[0] = (c00 * b[0] + c10 * b[1] + c20 * b[2]) / det
    out[1] = (c01 * b[0] + c11 * b[1] + c21 * b[2]) / det
    out[2] = (c02 * b[0] + c12 * b[1] + c22 * b[2]) / det


@njit(cache=True)
def _rot_system(J, w, T, Fr, Br, wb, Ar, br, Jw):
    """The rotational rows of ``pmi.system`` at the Coriolis point wb: Ar = J/T - S(J wb)/2 +
    diag(Br), br = (J/T + S(J wb)/2) w + Fr (C = diag(0, -S(J wb)): no translational part)."""
    for p in range(3):
        Jw[p] = J[p, 0] * wb[0] + J[p, 1] * wb[1] + J[p, 2] * wb[2]
    for p in range(3):
        for q in range(3):
            Ar[p, q] = J[p, q] / T
        Ar[p, p] += Br[p]
    # -S(Jw)/2 on A, +S(Jw)/2 on b
    Ar[0, 1] += 0.5 * Jw[2]
    Ar[1, 0] -= 0.5 * Jw[2]
    Ar[0, 2] -= 0.5 * Jw[1]
    Ar[2, 0] += 0.5 * Jw[1]
    Ar[1, 2] += 0.5 * Jw[0]
    Ar[2, 1] -= 0.5 * Jw[0]
    for p in range(3):
        br[p] = Fr[p] + (J[p, 0] * w[0] + J[p, 1] * w[1] + J[p, 2] * w[2]) / T
    br[0] += 0.5 * (Jw[1] * w[2] - Jw[2] * w[1])
    br[1] += 0.5 * (Jw[2] * w[0] - Jw[0] * w[2])
    br[2] += 0.5 * (Jw[0] * w[1] - Jw[1] * w[0])


@njit(cache=True)
def _blocks_structured(mass, inertia, p, R, V, T, K, D, driven, p_set, R_set, v_set, w_set, f_ext, g):
    """``_blocks`` with the PMI system's structure used (``pmi.system``): B is diagonal and the
    Coriolis matrix touches only the rotational rows, so A = blockdiag(m/T I + B_t, J/T -
    S(J w_bar)/2 + B_r) -- the Coriolis point's passes solve a 3x3 system in closed form, not a
    6x6 by LAPACK, and nothing is allocated per body.  The same equations; the rounding differs
    from ``_blocks`` (~1e-16 relative), so the recorded scenarios keep ``_blocks``."""
    nb = p.shape[0]
    A = np.zeros((nb, 6, 6))
    b = np.empty((nb, 6))
    F0 = np.empty((nb, 6))
    Bd = np.zeros((nb, 6))
    pull = np.empty((nb, 6))
    e, Vs, bd, F = np.empty(6), np.empty(6), np.zeros(6), np.empty(6)
    Ar, br, Jw, wn = np.empty((3, 3)), np.empty(3), np.empty(3), np.empty(3)
    w, wb, W = np.empty(3), np.empty(3), np.empty((3, 3))
    for i in range(nb):
        if driven[i]:
            e[:3] = p_set[i] - p[i]
            for r in range(3):
                for c in range(3):
                    W[r, c] = R[i, 0, r] * R_set[i, 0, c] + R[i, 1, r] * R_set[i, 1, c] + R[i, 2, r] * R_set[i, 2, c]
            e[3:] = log_so3(W)
            Vs[:3] = v_set[i]
            for r in range(3):
                Vs[3 + r] = R[i, 0, r] * w_set[i, 0] + R[i, 1, r] * w_set[i, 1] + R[i, 2, r] * w_set[i, 2]
            for q in range(6):
                bd[q] = K[i, q] * T / 4 + D[i, q] / 2
                F[q] = K[i, q] * e[q] + (K[i, q] * T / 2 + D[i, q]) * Vs[q] - bd[q] * V[i, q] + f_ext[i, q]
            Bd[i] = bd
        else:
            bd[:] = 0.0
            F[:] = f_ext[i]
        for q in range(3):
            F[q] += mass[i] * g[q]
        F0[i] = F
        for q in range(6):
            pull[i, q] = F[q] - bd[q] * V[i, q]
        J = inertia[i]
        w[:] = V[i, 3:]
        # the Coriolis point (pmi.coriolis_point)
        wb[:] = w
        found = False
        for _ in range(_CORIOLIS_MAX_ITER):
            _rot_system(J, w, T, F[3:], bd[3:], wb, Ar, br, Jw)
            _solve3(Ar, br, wn)
            for q in range(3):
                wn[q] = 0.5 * (w[q] + wn[q])
            h = 0.5 * T * math.sqrt(wn[0] * wn[0] + wn[1] * wn[1] + wn[2] * wn[2])
            if h >= 1.5:
                break
            s = pmi.tan_ratio(h)
            dd = 0.0
            nn = 0.0
            for q in range(3):
                x = s * wn[q]
                dd += (x - wb[q]) * (x - wb[q])
                nn += x * x
                wb[q] = x
            if math.sqrt(dd) <= _CORIOLIS_TOL * math.sqrt(nn):
                found = True
                break
        if not found:
            wb[:] = w
        _rot_system(J, w, T, F[3:], bd[3:], wb, Ar, br, Jw)
        for q in range(3):
            A[i, q, q] = mass[i] / T + bd[q]
            b[i, q] = mass[i] / T * V[i, q] + F[q]
            b[i, 3 + q] = br[q]
            for c in range(3):
                A[i, 3 + q, 3 + c] = Ar[q, c]
    return A, b, F0, Bd, pull


# The kernels ``blocks`` runs, by ``Model.rigid_kernel``: "general" the per-body 6x6 LAPACK solve
# (the recorded scenarios' arithmetic, bitwise), "structured" the closed form (many-body worlds:
# the cable, ~10x cheaper a body).
KERNELS = {"general": _blocks, "structured": _blocks_structured}


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
    kernel = KERNELS[model.rigid_kernel]
    return Blocks(*kernel(m, J, state.p_w, state.R_wb, state.V, float(dt), model.drive.K, model.drive.D, dr,
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
    w, E = np.empty(3), np.empty((3, 3))
    for i in range(nb):
        pmi.advance_into(p[i], R[i], V[i], Vn[i], T, p1[i], R1[i], w, E)
    return p1, R1


def advance(state, V_next: np.ndarray, dt: float):
    """(p (B,3), R (B,3,3)) after the step: every body by its midpoint twist (``pmi.advance``)."""
    return _advance(state.p_w, state.R_wb, state.V, np.ascontiguousarray(V_next.reshape(-1, 6)), float(dt))
