"""PMI (seed 000 eq. (1)) against laws: energy conservation, momentum, energy balance."""
import math

import numpy as np
import pytest

from sim_core.math3d import exp_so3
from sim_core.pmi import advance, kinetic_energy, step_free, system

# Rounding of ~1e-16 per step random-walks to ~1e-13 over 1e5 steps; 1e-9 is the bound.
ENERGY_TOL = 1e-9
# PMI conserves the world angular momentum to second order per step; its direction wobbles
# with the polhode by ~1.5 deg at T = 10 ms for this body, never drifting away.
PMI_DIRECTION_TOL_DEG = 3.0
# Semi-implicit Euler is not passive: with the same body and step it blows up or drifts far.
SEI_MIN_ENERGY_DRIFT = 1e-2

J_ASYM = np.diag([1e-3, 2e-3, 3e-3])       # asymmetric body, kg m^2 (nut-sized)
W0 = np.array([0.5, 0.3, 3.0])             # rad/s, tumbling about a stable axis
T = 0.01
STEPS = 100_000


def _tumble(method: str):
    """Integrate the torque-free Euler equations; return (rel. energy error, max angle of L_w)."""
    Jinv = np.linalg.inv(J_ASYM)
    w = W0.copy()
    R = np.eye(3)
    E0 = 0.5 * w @ J_ASYM @ w
    L0 = J_ASYM @ w
    max_angle = 0.0
    V = np.concatenate([np.zeros(3), w])
    p = np.zeros(3)
    for k in range(STEPS):
        if method == "pmi":
            p, R, V = step_free(1.0, J_ASYM, p, R, V, T)
            w = V[3:]
        else:  # semi-implicit (symplectic) Euler: new velocity, then pose with it
            w = w + T * Jinv @ np.cross(J_ASYM @ w, w)
            R = R @ exp_so3(T * w)
            if not np.all(np.isfinite(w)) or np.linalg.norm(w) > 1e6:
                return math.inf, 180.0
        if k % 50 == 0:
            L = R @ J_ASYM @ w
            c = L @ L0 / (np.linalg.norm(L) * np.linalg.norm(L0))
            max_angle = max(max_angle, math.degrees(math.acos(min(1.0, max(-1.0, c)))))
    E = 0.5 * w @ J_ASYM @ w
    return abs(E - E0) / E0, max_angle


def test_torque_free_tumbling_100k_steps_pmi_vs_semi_implicit_euler():
    """100,000 steps at T = 10 ms: PMI keeps energy and the momentum direction, SEI does not."""
    e_pmi, ang_pmi = _tumble("pmi")
    e_sei, ang_sei = _tumble("sei")
    assert e_pmi <= ENERGY_TOL
    assert ang_pmi <= PMI_DIRECTION_TOL_DEG
    assert e_sei >= SEI_MIN_ENERGY_DRIFT      # the comparison integrator drifts
    assert ang_sei > ang_pmi


def test_discrete_energy_balance_under_random_wrench():
    """E_{k+1} - E_k = T F^T (V_{k+1} + V_k)/2 holds step by step (seed 000 Sec. III.C)."""
    rng = np.random.default_rng(0)
    m = 0.9
    A = rng.normal(size=(3, 3))
    J = A @ A.T * 1e-3 + np.eye(3) * 1e-3      # full (non-diagonal) inertia
    p, R = np.zeros(3), np.eye(3)
    V = rng.normal(size=6)
    worst = 0.0
    for _ in range(2000):
        F = rng.normal(size=6) * 5.0
        E0 = kinetic_energy(m, J, V)
        p, R, Vn = step_free(m, J, p, R, V, T, F)
        work = T * F @ (0.5 * (V + Vn))
        worst = max(worst, abs(kinetic_energy(m, J, Vn) - E0 - work) / max(1.0, abs(work)))
        V = Vn
    assert worst < 1e-12
    assert np.allclose(R.T @ R, np.eye(3), atol=1e-12)


def test_free_flight_straight_line_while_spinning():
    """A spinning body with no wrench moves its COM in a straight line at constant speed."""
    J = np.diag([1e-3, 2e-3, 3e-3])
    p, R = np.zeros(3), np.eye(3)
    V = np.array([0.1, -0.2, 0.05, 3.0, 1.0, -2.0])
    for _ in range(1000):
        p, R, V = step_free(1.0, J, p, R, V, T)
    assert np.allclose(p, 1000 * T * np.array([0.1, -0.2, 0.05]), atol=1e-12)


def test_constant_force_closed_form():
    """Uniform force on a non-rotating body: p(t) = f t^2 / (2m) exactly (midpoint rule)."""
    m = 2.0
    f = np.array([0.0, 0.0, -9.81 * m])
    p, R, V = np.zeros(3), np.eye(3), np.zeros(6)
    n = 100
    for _ in range(n):
        p, R, V = step_free(m, np.eye(3), p, R, V, T, np.concatenate([f, np.zeros(3)]))
    t = n * T
    assert np.allclose(p, f * t * t / (2 * m), atol=1e-12)


def test_system_with_damping_matches_solve():
    """A, b of `system` reproduce eq. (1) with a velocity-linear wrench F - B V+."""
    rng = np.random.default_rng(1)
    m, J = 1.3, np.diag([0.01, 0.02, 0.015])
    V = rng.normal(size=6)
    F = rng.normal(size=6)
    B = np.diag(rng.uniform(0, 3, size=6))
    A, b = system(m, J, V, T, F, B)
    Vn = np.linalg.solve(A, b)
    M = np.diag([m, m, m, 0.01, 0.02, 0.015])
    S = lambda a: np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    C = np.zeros((6, 6))
    C[3:, 3:] = -S(J @ V[3:])
    resid = M @ (Vn - V) / T + C @ (Vn + V) / 2 - (F - B @ Vn)
    assert np.abs(resid).max() < 1e-10
    p2, R2 = advance(np.zeros(3), np.eye(3), V, Vn, T)
    assert np.allclose(p2, T * 0.5 * (V[:3] + Vn[:3]))
