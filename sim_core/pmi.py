"""Passive midpoint integration (PMI) of one rigid body -- seed 000 eq. (1).

    M (V_{k+1} - V_k) / T + C_k (V_{k+1} + V_k) / 2 = F_k,
    M = diag(m I, J),   C_k = diag(0, -S(J w_k)),

with the twist V = [v; w]: v the velocity of the centre of mass in world axes, w the angular
velocity in body axes.  (Eq. (1) has no Coriolis term in the linear block, which is exact
only when v is measured along fixed axes; w is in body axes so that J is constant.)
The generalized force F = [f; tau] pairs with V: f in world axes, tau in body axes.

C_k is skew-symmetric, so multiplying eq. (1) by the midpoint twist gives the discrete
energy balance  E_{k+1} - E_k = T F_k^T (V_{k+1} + V_k) / 2  exactly (seed 000 Sec. III.C):
with no wrench the kinetic energy is conserved to rounding.  The pose follows the midpoint
twist:  p_{k+1} = p_k + T v_mid,  R_{k+1} = R_k exp(T S(w_mid)).

Everything that is linear in V_{k+1} (a spring-damper drive evaluated at the midpoint, the
contact impulses) is folded into one 6x6 system  A V_{k+1} = b:  ``system`` builds the
free part, the contact solver adds J^T f, ``advance`` moves the pose.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .math3d import exp_so3, skew


@njit(cache=True)
def mass_matrix(m, J):
    """M = diag(m I, J) (6x6)."""
    M = np.zeros((6, 6))
    for i in range(3):
        M[i, i] = m
    M[3:, 3:] = J
    return M


@njit(cache=True)
def coriolis(J, w):
    """C_k = diag(0, -S(J w_k)) (6x6), skew-symmetric."""
    C = np.zeros((6, 6))
    C[3:, 3:] = -skew(J @ w)
    return C


@njit(cache=True)
def system(m, J, V, T, F, B):
    """PMI system for V_{k+1}:  A V_{k+1} = b  with a wrench  F - B V_{k+1}  (F, B given).

    From  M (V+ - V)/T + C (V+ + V)/2 = F - B V+:
        A = M/T + C/2 + B,   b = (M/T - C/2) V + F.
    """
    M = mass_matrix(m, J)
    C = coriolis(J, V[3:])
    A = M / T + 0.5 * C + B
    b = (M / T - 0.5 * C) @ V + F
    return A, b


@njit(cache=True)
def advance(p, R, V, V_next, T):
    """Pose update driven by the midpoint twist (world COM position, body rotation)."""
    Vm = 0.5 * (V + V_next)
    p_next = p + T * Vm[:3]
    R_next = R @ exp_so3(T * Vm[3:])
    return p_next, R_next


def kinetic_energy(m, J, V) -> float:
    """E = V^T M V / 2."""
    V = np.asarray(V)
    return 0.5 * m * float(V[:3] @ V[:3]) + 0.5 * float(V[3:] @ J @ V[3:])


def step_free(m, J, p, R, V, T, F=None):
    """One PMI step of a free body under wrench F = [f_w; tau_b] (held over the step)."""
    F = np.zeros(6) if F is None else np.asarray(F, dtype=np.float64)
    A, b = system(m, J, V, T, F, np.zeros((6, 6)))
    V_next = np.linalg.solve(A, b)
    p_next, R_next = advance(p, R, V, V_next, T)
    return p_next, R_next, V_next
