"""Passive midpoint integration (PMI) of one rigid body -- seed 000 eq. (1), with its Coriolis
term at the step's midpoint:

    M (V_{k+1} - V_k) / T + C(w_bar) (V_{k+1} + V_k) / 2 = F_k,
    M = diag(m I, J),   C(w_bar) = diag(0, -S(J w_bar)),   w_bar = s w_m,
    w_m = (w_k + w_{k+1}) / 2,   s = tan(h) / h,   h = T |w_m| / 2   (s = 1 + O(T^2)),

with the twist V = [v; w]: v the velocity of the centre of mass in world axes, w the angular
velocity in body axes.  (Eq. (1) has no Coriolis term in the linear block, which is exact
only when v is measured along fixed axes; w is in body axes so that J is constant.)
The generalized force F = [f; tau] pairs with V: f in world axes, tau in body axes.  The pose
follows the midpoint twist:  p_{k+1} = p_k + T v_mid,  R_{k+1} = R_k exp(T S(w_m)).

Energy.  C(w_bar) is skew-symmetric for ANY w_bar, so multiplying the equation by the midpoint
twist gives the discrete energy balance  E_{k+1} - E_k = T F_k^T (V_{k+1} + V_k) / 2  exactly
(seed 000 Sec. III.C): with no wrench the kinetic energy is conserved to rounding, whatever
w_bar the caller passes.

Where this differs from eq. (1) as printed, and why.  The seed evaluates the Coriolis matrix
at the start of the step, C_k = C(w_k); with the rotation update above a torque-free body then
loses its world angular momentum: |J w| grows by about T^2 |(J w_k) x w_mid|^2 per step
(measured on J = diag(1, 2, 3) kg m^2 spinning near its intermediate axis, T = 10 ms: |L_world|
drifts 22 % over 1e5 steps and the flip period is 78 % off).  Derivation of the fix: write
Pi = J w, so J w_m = (Pi + Pi+)/2.  With the Coriolis point w_bar = c w_m the torque-free
angular rows read  Pi+ - Pi = -T c w_m x (Pi + Pi+)/2, i.e.
    Pi+ = (I + T c/2 S(w_m))^-1 (I - T c/2 S(w_m)) Pi = cay(-T c w_m) Pi,
cay(a) = (I - S(a)/2)^-1 (I + S(a)/2) the Cayley map (an exact rotation, ``so3.cayley``).
For c = 1 (the midpoint Euler equation  J (w+ - w)/T + w_m x (J w_m) = tau)  the rotation
update R+ = R cay(T w_m) would conserve the world momentum:  R+ Pi+ = R cay(T w_m) cay(-T w_m)
Pi = R Pi.  Since exp(S(a)) = cay(tan(|a|/2) / (|a|/2) a), the choice c = s makes cay(T s w_m) =
exp(T S(w_m)) and the seed's exponential pose update conserves it exactly instead:
R+ Pi+ = R exp(T S(w_m)) exp(-T S(w_m)) Pi = R Pi.  Keeping exp (rather than a Cayley pose
update) keeps a spin about a principal axis, where the Coriolis term vanishes, exact: under a
constant torque its angle is the closed form tau t^2 / (2 J) (tested in ``haptics``), while a
Cayley update would lag by (T |w|)^2 / 12 relative per step; the price is a relative error
(T |w_m|)^2 / 12 in the speed of the body-axis motion (measured: flip period 1e-5 off at
T |w| = 0.01).  |Pi| and the energy are the two quadratic invariants of the body-axis equation
and both are kept, so the discrete body stays on its exact polhode.  w_bar depends on
V_{k+1}, so the step is the fixed point A(w_bar) V+ = b(w_bar), w_bar <- s (w_k + w+)/2, which
converges to rounding in a few 6x6 solves at the simulator's steps (``coriolis_point``);
``step_free`` uses it.

Everything that is linear in V_{k+1} (a spring-damper drive evaluated at the midpoint, the
contact impulses) is folded into one 6x6 system  A V_{k+1} = b:  ``system`` builds the free
part, the contact solver adds J^T f, ``advance`` moves the pose.  Under contact the bodies'
blocks (``systems.rigid.blocks``) take the Coriolis point of the contact-free system: the
energy balance stays exact at any point, and a contact with the world changes the momentum
anyway.  Between two bodies the total momentum is kept exactly (``contact.body_body``): the
contact's lever is taken from p_k + T v_k / 2, its body torque mapped by
(I - T/2 S(w_bar)) R_k^T, and w_bar moved to the Coriolis point of the motion with the
contacts (a fixed point over the island's solve).  Callers with nothing better (``w_bar``
omitted) get the seed's start-of-step C(w_k).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from sim_core.math.so3 import exp_so3_into, skew

# Stop the Coriolis-point iteration when w_bar changes by less than this, relative to |w_bar|.
# The iteration contracts by about T |w| / 2 per pass (measured 5e-3 at T = 10 ms, |w| = 1 rad/s),
# so the remaining error is far below the last change; the world momentum error per step is
# about T |w| times that error, i.e. < 1e-15 relative here, over 1e5 steps well under 1e-10.
# 1e-13 is still a few hundred ulp above the rounding floor of the 6x6 solves, so it is reached.
CORIOLIS_TOL = 1e-13
# Passes allowed before giving up.  Measured on J = diag(1,2,3), diag(1,1,10), diag(0.1,1,1):
# CORIOLIS_TOL is reached in 6 passes at T |w| = 0.01, 10-11 at 0.1, 16 at 0.3 (17 deg per
# step), 42 to 81 at T |w| = 1 (so some bodies hit the cap there); at T |w| = 3 it diverges.
# Past the cap the seed's start-of-step point w_k is used (the energy balance holds either way).
CORIOLIS_MAX_ITER = 50


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
    """C(w) = diag(0, -S(J w)) (6x6), skew-symmetric for every w."""
    C = np.zeros((6, 6))
    C[3:, 3:] = -skew(J @ w)
    return C


@njit(cache=True)
def system(m, J, V, T, F, B, w_bar=None):
    """PMI system for V_{k+1}:  A V_{k+1} = b  with a wrench  F - B V_{k+1}  (F, B given).

    From  M (V+ - V)/T + C(w_bar) (V+ + V)/2 = F - B V+:
        A = M/T + C/2 + B,   b = (M/T - C/2) V + F.
    w_bar: the body-axis angular velocity the Coriolis matrix is evaluated at.  The scaled
    midpoint of ``coriolis_point`` conserves the world angular momentum of a free body;
    None gives the seed's start-of-step C(w_k), for callers with nothing better.  The energy
    balance is exact for any w_bar (C is skew)."""
    M = mass_matrix(m, J)
    if w_bar is None:
        C = coriolis(J, V[3:])
    else:
        C = coriolis(J, w_bar)
    A = M / T + 0.5 * C + B
    b = (M / T - 0.5 * C) @ V + F
    return A, b


@njit(cache=True)
def tan_ratio(h):
    """tan(h) / h (-> 1 as h -> 0): the Coriolis scale that makes exp match the Cayley map,
    exp(S(a)) = cay(tan(|a|/2) / (|a|/2) a)."""
    if h < 1e-8:
        return 1.0          # the series 1 + h^2/3 + ... is 1 to rounding here
    return math.tan(h) / h


@njit(cache=True)
def coriolis_point(m, J, V, T, F, B, tol=CORIOLIS_TOL, max_iter=CORIOLIS_MAX_ITER):
    """The Coriolis point w_bar = s w_m of the contact-free system A(w_bar) V+ = b(w_bar) (wrench
    F - B V+), w_m = (w_k + w_{k+1})/2 and s = tan(T |w_m| / 2) / (T |w_m| / 2) = 1 + O(T^2)
    (module docstring): fixed-point iteration from w_bar = w_k, stopped when w_bar changes by
    less than `tol` relative.  If it has not converged in `max_iter` passes (only at steps far
    beyond T |w| ~ 0.3), returns w_k: the seed's start-of-step point."""
    w = V[3:].copy()
    w_bar = w.copy()
    for _ in range(max_iter):
        A, b = system(m, J, V, T, F, B, w_bar)
        Vn = np.linalg.solve(A, b)
        wm = 0.5 * (w + Vn[3:])
        h = 0.5 * T * math.sqrt(wm @ wm)
        if h >= 1.5:            # > 170 deg per step: no midpoint worth predicting
            return w
        new = tan_ratio(h) * wm
        d = new - w_bar
        w_bar = new
        if math.sqrt(d @ d) <= tol * math.sqrt(new @ new):
            return w_bar
    return w


@njit(cache=True)
def advance(p, R, V, V_next, T):
    """Pose update driven by the midpoint twist: p + T v_mid (world COM position) and
    R exp(T S(w_mid)) (body rotation; with the Coriolis point of ``coriolis_point`` it keeps a
    free body's world momentum, module docstring)."""
    p_next, R_next = np.empty(3), np.empty((3, 3))
    advance_into(p, R, V, V_next, T, p_next, R_next, np.empty(3), np.empty((3, 3)))
    return p_next, R_next


@njit(cache=True, inline="always")
def advance_into(p, R, V, V_next, T, p_next, R_next, w, E):
    """``advance`` into p_next (3,), R_next (3,3), nothing allocated: w (3,), E (3,3) work
    arrays (``rigid.advance``'s loop over the bodies: 0.7 -> 0.04 us a body)."""
    for q in range(3):
        p_next[q] = p[q] + T * (0.5 * (V[q] + V_next[q]))
        w[q] = T * (0.5 * (V[3 + q] + V_next[3 + q]))
    exp_so3_into(w, E)
    for r in range(3):
        for c in range(3):
            R_next[r, c] = R[r, 0] * E[0, c] + R[r, 1] * E[1, c] + R[r, 2] * E[2, c]


def kinetic_energy(m, J, V) -> float:
    """E = V^T M V / 2."""
    V = np.asarray(V)
    return 0.5 * m * float(V[:3] @ V[:3]) + 0.5 * float(V[3:] @ J @ V[3:])


@njit(cache=True)
def _step_free(m, J, p, R, V, T, F):
    B = np.zeros((6, 6))
    w_bar = coriolis_point(m, J, V, T, F, B)
    A, b = system(m, J, V, T, F, B, w_bar)
    V_next = np.linalg.solve(A, b)
    p_next, R_next = advance(p, R, V, V_next, T)
    return p_next, R_next, V_next


def step_free(m, J, p, R, V, T, F=None):
    """One PMI step of a free body under wrench F = [f_w; tau_b] (held over the step), with the
    Coriolis term at the midpoint: energy balance exact, torque-free world momentum conserved."""
    F = np.zeros(6) if F is None else np.asarray(F, dtype=np.float64)
    return _step_free(float(m), np.asarray(J, dtype=np.float64), np.asarray(p, dtype=np.float64),
                      np.asarray(R, dtype=np.float64), np.asarray(V, dtype=np.float64), float(T), F)


@njit(cache=True)
def free_rollout(m, J, p, R, V, T, F, n):
    """n ``step_free`` steps under a constant wrench F, in one kernel: returns (p_n, R_n,
    twists (n+1, 6), world angular momenta R J w (n+1, 3)), index 0 the start."""
    Vs = np.empty((n + 1, 6))
    Ls = np.empty((n + 1, 3))
    Vs[0] = V
    Ls[0] = R @ (J @ V[3:])
    for k in range(n):
        p, R, V = _step_free(m, J, p, R, V, T, F)
        Vs[k + 1] = V
        Ls[k + 1] = R @ (J @ V[3:])
    return p, R, Vs, Ls
