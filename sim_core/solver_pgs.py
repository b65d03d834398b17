"""Contact solving (stage 4), baseline: projected Gauss-Seidel (seed 000 Sec. V.C, PGS [41]).

Unknowns: per contact i the force lambda_i = [lambda_n; lambda_t1; lambda_t2] in its contact
frame C_i = [n t1 t2] (world axes).  With the PMI system A V+ = b + sum G_i^T lambda_i
(``pmi.system``), G_i = C_i^T J_i and J_i = [I, -R S(r_i)] (node velocity in world axes from
the twist [v_w; w_b], r_i the node's body-axis offset from the COM), the contact velocity is
u_i = G_i V+.  Conditions, velocity level on V_{k+1} (seed 000 eqs. (2), (3)):
  * Signorini with penetration correction: 0 <= lambda_n  _|_  u_n - b_n >= 0, where for a
    gap d >= 0, b_n = min(0, -2d/T - u_n,k) (the pose moves with the midpoint velocity, so
    this closes the gap exactly by the end of the step without asking for a rebound), and
    for a penetration d < 0, b_n = -beta d / T (a fraction beta pushed out per step);
  * Coulomb cone ||lambda_t|| <= mu lambda_n (the exact disk, not a pyramid).
Each sweep solves contact i's normal row with the others fixed, then its tangential 2x2 block
and projects onto the disk -- the classic PGS that the seed solver will be compared with.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import pmi
from .math3d import skew


@njit(cache=True)
def contact_frames(n_w):
    """(m,3,3) frames [n t1 t2] as columns, t1 from the least-aligned world axis."""
    m = n_w.shape[0]
    Cf = np.empty((m, 3, 3))
    for i in range(m):
        n = n_w[i]
        a = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.6 else np.array([0.0, 1.0, 0.0])
        t1 = a - (a @ n) * n
        t1 /= np.sqrt(t1 @ t1)
        t2 = np.cross(n, t1)
        Cf[i, :, 0] = n
        Cf[i, :, 1] = t1
        Cf[i, :, 2] = t2
    return Cf


@njit(cache=True)
def contact_jacobians(x_w, n_w, p_w, R_wb):
    """G_i = C_i^T J_i, (m,3,6), and the frames (m,3,3)."""
    m = x_w.shape[0]
    Cf = contact_frames(n_w)
    G = np.empty((m, 3, 6))
    for i in range(m):
        r_b = R_wb.T @ (x_w[i] - p_w)
        J = np.zeros((3, 6))
        J[:, :3] = np.eye(3)
        J[:, 3:] = -R_wb @ skew(r_b)
        G[i] = Cf[i].T @ J
    return G, Cf


@njit(cache=True)
def normal_targets(G, V_prev, d, T, beta):
    """Signorini targets b_n per contact (velocity level): for a gap d >= 0 the pose moves
    with the midpoint velocity, so allow the approach that closes the gap by the end of the
    step, T (u_k + u_k+1)/2 = -d, and never demand a rebound (cap at 0); a penetration is
    pushed out by the fraction beta per step."""
    m = G.shape[0]
    b = np.empty(m)
    for i in range(m):
        if d[i] >= 0.0:
            b[i] = min(0.0, -2.0 * d[i] / T - G[i, 0] @ V_prev)
        else:
            b[i] = -beta * d[i] / T
    return b


@njit(cache=True)
def pgs(G, A_inv, V_free, V_prev, d, T, mu, beta, iterations, tol, lam0):
    """Projected Gauss-Seidel; returns (lambda (m,3), V+ (6,), sweeps used)."""
    m = G.shape[0]
    lam = lam0.copy()
    # Delassus diagonal blocks and the velocity map of each contact's force
    AG = np.empty((m, 6, 3))
    W = np.empty((m, 3, 3))
    for i in range(m):
        AG[i] = A_inv @ G[i].T
        W[i] = G[i] @ AG[i]
    V = V_free.copy()
    for i in range(m):
        V += AG[i] @ lam[i]
    b = normal_targets(G, V_prev, d, T, beta)
    sweeps = 0
    for it in range(iterations):
        sweeps = it + 1
        dmax = 0.0
        for i in range(m):
            u = G[i] @ V
            old = lam[i].copy()
            # normal row
            ln = max(0.0, lam[i, 0] - (u[0] - b[i]) / W[i, 0, 0])
            dn = ln - lam[i, 0]
            u = u + W[i, :, 0] * dn
            lam[i, 0] = ln
            # tangential 2x2 block, then the disk of radius mu * ln
            a, bb, c, e = W[i, 1, 1], W[i, 1, 2], W[i, 2, 1], W[i, 2, 2]
            det = a * e - bb * c
            t1 = lam[i, 1] - (e * u[1] - bb * u[2]) / det
            t2 = lam[i, 2] - (-c * u[1] + a * u[2]) / det
            lim = mu * ln
            nt = np.sqrt(t1 * t1 + t2 * t2)
            if nt > lim:
                s = lim / nt if nt > 0.0 else 0.0
                t1 *= s
                t2 *= s
            lam[i, 1] = t1
            lam[i, 2] = t2
            delta = lam[i] - old
            V += AG[i] @ delta
            for j in range(3):
                if abs(delta[j]) > dmax:
                    dmax = abs(delta[j])
        if dmax < tol:
            break
    return lam, V, sweeps


def solve(model, state, reps, F0: np.ndarray, B: np.ndarray):
    """The solving stage: PMI system with the drive wrench F0 - B V+ and the contacts.

    Returns (V_{k+1} (6,), contact wrench [f world; tau body] (6,), sweeps used, force at each
    contact in world axes (m,3))."""
    A, b = pmi.system(model.mass, model.inertia_b, state.V, model.dt, F0, B)
    return solve_system(model, state, reps, A, b)


def solve_system(model, state, reps, A: np.ndarray, b: np.ndarray):
    """``solve`` for a given linear system  A V+ = b + contact terms  of the part."""
    A_inv = np.linalg.inv(A)
    V_free = A_inv @ b
    if len(reps) == 0:
        return V_free, np.zeros(6), 0, np.zeros((0, 3))
    G, Cf = contact_jacobians(reps.x_w, reps.n_w, state.p_w, state.R_wb)
    c = model.contact
    lam, V_next, sweeps = pgs(G, A_inv, V_free, state.V, reps.d, model.dt, c.mu, c.beta,
                              c.pgs_iterations, c.pgs_tolerance, np.zeros((len(reps), 3)))
    return V_next, contact_wrench(G, lam), sweeps, np.einsum("mij,mj->mi", Cf, lam)


def contact_wrench(G: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Total contact wrench on the body, [f world; tau body], (6,)."""
    if lam.shape[0] == 0:
        return np.zeros(6)
    return np.einsum("mij,mi->j", G, lam)
