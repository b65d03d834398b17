"""Seed 001's compliant law (``contact.compliant``): each closed form against a fine numerical
solution of the same ODE (solve_ivp DOP853, rtol 1e-12), the restitution of eq. (10)'s reading
(a), the clamped reading's, and the Hunt-Crossley relation."""
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from sim_core.contact import compliant

K, M = 140e6, 1.0              # the seed's ball: N/m, kg
V0 = math.sqrt(2 * 9.81 * 0.9)  # m/s, the touchdown speed of a drop from 1.0 m with R = 0.1 m
RESTITUTIONS = (0.2, 0.4, 0.6, 0.8, 1.0)
ODE_RTOL = 1e-12
CLOSED_TOL = 1e-9              # relative: the closed form against the ODE at rtol 1e-12 (measured ~1e-11)
EVENT_TOL = 1e-6               # relative: contact duration and maximum penetration (the bound)
RESTITUTION_TOL = 1e-3         # the bound
HC_TOL = 1e-8                  # the Hunt-Crossley rebound ratio through DOP853 (measured ~1e-12)


def reference(kv: compliant.KV, T: float, clamped_end: bool = False):
    """solve_ivp of m d'' + D d' + K d = F, with events at d = 0 and F_N = 0 going out."""
    def rhs(t, y):
        return (y[1], (kv.F - kv.D * y[1] - kv.K * y[0]) / kv.m)

    def out(t, y):
        return kv.D * y[1] + kv.K * y[0] if clamped_end else y[0]
    out.terminal, out.direction = True, -1.0

    def top(t, y):
        return y[1]
    top.direction = -1.0
    scale = max(abs(kv.v0), 1e-3)
    return solve_ivp(rhs, (0.0, T), (kv.d0, kv.v0), method="DOP853", rtol=ODE_RTOL, atol=1e-14 * scale / 1e3,
                     events=(out, top), dense_output=True)


CASES = [  # (D N s/m, F N, d0 m, v0 m/s): under-, critically and over-damped, pressed, pulled, mid-contact
    (0.0, 0.0, 0.0, V0),
    (compliant.damping(K, M, 0.4), 9.81, 0.0, V0),
    (compliant.damping(K, M, 0.4), 9.81, 5e-5, -0.5),
    (2 * math.sqrt(K * M), 9.81, 0.0, V0),
    (2 * math.sqrt(K * M) * (1 + 1e-7), 9.81, 0.0, V0),   # near critical: the series branch
    (4 * math.sqrt(K * M), -200.0, 1e-6, 0.3),
    (1e4, 5e4, 0.0, 0.0),                                    # pressed from rest (grinding-like)
]


@pytest.mark.parametrize("D,F,d0,v0", CASES)
def test_closed_form_matches_the_ode(D, F, d0, v0):
    kv = compliant.KV(M, K, D, F, d0, v0)
    T = 8e-4
    ref = reference(kv, T)
    ts = np.linspace(0.0, float(ref.t[-1]), 41)
    d_ref, v_ref = ref.sol(ts)
    got = np.array([kv.at(t) for t in ts])
    assert np.max(np.abs(got[:, 0] - d_ref)) <= CLOSED_TOL * np.max(np.abs(d_ref))
    assert np.max(np.abs(got[:, 1] - v_ref)) <= CLOSED_TOL * np.max(np.abs(v_ref))
    if ref.t_events[0].size:                      # the contact ended: the same time
        assert kv.separation_time() == pytest.approx(ref.t_events[0][0], rel=EVENT_TOL)
    else:
        assert kv.separation_time() > ref.t[-1]
    if v0 > 0 and ref.t_events[1].size:
        t, d = kv.max_penetration()
        assert t == pytest.approx(ref.t_events[1][0], rel=EVENT_TOL)
        assert d == pytest.approx(ref.sol(ref.t_events[1][0])[0], rel=EVENT_TOL)


def test_print_eq4_sine_term_is_wrong():
    """The print's + r F / K in eq. (4)'s sine term gives delta'(0) = v0 + 2 r F / K, not v0."""
    kv = compliant.KV(M, K, compliant.damping(K, M, 0.4), 1e4, 0.0, V0)
    r, wd, s = kv.r, math.sqrt(kv.q), kv.F / kv.K
    h = 1e-10
    printed = math.exp(-r * h) * ((V0 + r * s) / wd * math.sin(wd * h) - s * math.cos(wd * h)) + s
    assert printed / h == pytest.approx(V0 + 2 * r * s, rel=1e-4)
    assert kv.at(h)[0] / h == pytest.approx(V0, rel=1e-4)


@pytest.mark.parametrize("e", RESTITUTIONS)
def test_reading_a_gives_e(e):
    kv = compliant.kelvin_voigt(M, K, e, 0.0, 0.0, V0)
    t = kv.separation_time()
    assert -kv.at(t)[1] / V0 == pytest.approx(e, abs=RESTITUTION_TOL)
    ref = reference(kv, 1e-3)
    assert t == pytest.approx(ref.t_events[0][0], rel=EVENT_TOL)
    assert t == pytest.approx(math.pi / math.sqrt(kv.q), rel=1e-12)   # not eq. (6)'s pi sqrt(m/K) unless e = 1


@pytest.mark.parametrize("e", RESTITUTIONS[:-1])
def test_reading_b_gives_more_than_e(e):
    """The clamped force ends the contact early: the ball leaves faster than e (reported)."""
    got = compliant.restitution_clamped(e, K, M, V0)
    kv = compliant.kelvin_voigt(M, K, e, 0.0, 0.0, V0, clamped=True)
    ref = reference(kv, 1e-3, clamped_end=True)
    assert got == pytest.approx(-ref.y_events[0][0][1] / V0, rel=EVENT_TOL)
    assert got > e + 5 * RESTITUTION_TOL


def test_impulse_over_a_step_longer_than_the_contact():
    """J = F t_end - m (delta'(t_end) - v0): with F = 0 and e the rebound, J = m v0 (1 + e)."""
    kv = compliant.kelvin_voigt(M, K, 0.6, 0.0, 0.0, V0)
    J, t, d, v = kv.impulse(0.128)
    assert t == pytest.approx(kv.separation_time(), rel=1e-15)
    assert J == pytest.approx(M * V0 * 1.6, rel=1e-12)
    ref = reference(kv, 1e-4)                      # a step ending inside the contact
    J2, t2, d2, v2 = kv.impulse(1e-4)
    ss = np.linspace(0.0, 1e-4, 20001)
    d, v = ref.sol(ss)
    f = kv.D * v + kv.K * d
    quad = float(np.sum(0.5 * (f[1:] + f[:-1]) * np.diff(ss)))
    assert J2 == pytest.approx(quad, rel=1e-6)


@pytest.mark.parametrize("e", (0.2, 0.5, 0.9, 1.0))
@pytest.mark.parametrize("n", (1.0, 1.5))
def test_hunt_crossley_restitution_and_depth(e, n):
    c = compliant.hunt_crossley_alpha(e) / V0
    Kn = K if n == 1.0 else 1e10
    J, t, d, v, sol = compliant.hc_motion(M, Kn, c, n, 0.0, 0.0, V0, 1.0, dense=True)
    assert -v / V0 == pytest.approx(e, rel=HC_TOL)
    assert J == pytest.approx(M * V0 * (1 + e), rel=HC_TOL)
    ts = np.linspace(0.0, t, 20001)
    deepest = sol.sol(ts)[0].max()
    assert deepest == pytest.approx(compliant.hunt_crossley_max_penetration(M, Kn, c, V0, n), rel=1e-6)


def test_bad_restitution():
    for e in (0.0, -0.1, 1.2):
        with pytest.raises(ValueError):
            compliant.damping_ratio(e)


# relative: the step's Hunt-Crossley kernel (Dormand-Prince 5(4), rtol 1e-11 per step) against
# the DOP853 reference at rtol 1e-12; a contact's ~100-2000 steps accumulate to ~1e-10
HC_KERNEL_REL = 1e-8


@pytest.mark.parametrize("n, K, e, F, d0, v0, T", [
    (1.0, 140e6, 0.5, 0.0, 0.0, 4.43, 1.0),          # the ball: one whole contact
    (1.5, 5.53e9, 0.5, 5.0, 1.1e-6, 1e-4, 0.01),      # the grinding tip pressed at 5 N, 10 ms
    (1.5, 5.53e9, 0.8, 5.0, 0.0, 0.01, 0.01),         # a touch that ends inside the step
    (1.5, 5.53e9, 0.8, 0.0, 2e-6, -1e-3, 0.01),       # starting in, moving out
])
def test_the_steps_hunt_crossley_kernel_matches_the_reference(n, K, e, F, d0, v0, T):
    m = 2.0
    c = compliant.hunt_crossley_alpha(e) / max(abs(v0), 1e-3)
    J, t, d, v, _ = compliant.hc_motion(m, K, c, n, F, d0, v0, T)
    Jf, tf, df, vf = compliant.hc_motion_fast(m, K, c, n, F, d0, v0, T)
    scale_v = max(abs(v0), abs(v), 1e-6)
    assert abs(tf - t) <= HC_KERNEL_REL * max(t, 1e-6)
    assert abs(Jf - J) <= HC_KERNEL_REL * max(abs(J), m * scale_v)
    assert abs(vf - v) <= HC_KERNEL_REL * scale_v
    assert abs(df - d) <= HC_KERNEL_REL * max(abs(d), abs(d0), 1e-9)
