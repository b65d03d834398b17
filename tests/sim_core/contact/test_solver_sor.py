"""The seed's contact solver against laws: Coulomb sticking and sliding on an incline, the
Coulomb deceleration of a spinning contact, maximum dissipation against a brute-force search
over the cone boundary, and residuals / cone membership on random multi-contact problems."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sim_core.contact import solver_pgs
from sim_core.contact import solver_sor as S
from sim_core.dynamics import pmi
from sim_core.math.so3 import rot_axis_angle

G_ACC = 9.81
LAW_REL = 0.01          # the bound: sliding acceleration / deceleration within 1 %
STICK_SPEED = 1e-9      # m/s after 1 s: "sticks" means the solver holds it to rounding
BRUTE_ANGLES = 200_000  # cone-boundary samples of the brute-force dissipation search
BRUTE_REL = 1e-7        # relative gap allowed to the brute-force optimum (grid spacing 3e-5 rad
                        # costs ~1e-9 relative at a smooth minimum; 1e-7 leaves margin)
RES_SIG = 1e-9          # m/s, Signorini violation after convergence (velocities ~ 0.1 m/s)
RES_COMP = 2e-9         # W, |lambda_n (u_n - b_n)| (forces ~ 10 N, velocities ~ 0.1 m/s; a penetration's
                        # target is capped at the approach speed, up to ~0.1 m/s here: 1.07e-9 W measured)
RES_FORCE = 1e-7        # N, cone violation / natural residual (forces ~ 10 N, tol 1e-9 N)
CONE_ROUND = 1e-12      # relative rounding allowed on ||lambda_t|| <= mu lambda_n
SLOPE_FD_REL = 1e-6     # central differences at h = 1e-6 rad: truncation ~h^2 |g'''| / 6, rounding ~1e-16 / h
HINT_SAME = 1e-9        # relative to lambda_n: both roots are closed to ROOT_TOL = 1e-13 rad in the angle


def box(m=2.0, a=0.1, b=0.06, c=0.04):
    """Mass, inertia and the four bottom corners (body axes, from the COM) of a box."""
    J = m / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    corners = np.array([[sx * a / 2, sy * b / 2, -c / 2] for sx in (-1, 1) for sy in (-1, 1)])
    return m, J, corners


def run_on_plane(m, J, nodes_b, g_w, V0, T, steps, mu, alpha=1.0):
    """A body resting with `nodes_b` on the plane z = 0 under gravity g_w, PMI + SOR; returns
    the twists (steps+1, 6)."""
    p = np.array([0.0, 0.0, -nodes_b[:, 2].min()])
    R = np.eye(3)
    V = np.array(V0, float)
    out = [V.copy()]
    lam = np.zeros((len(nodes_b), 3))
    for _ in range(steps):
        x_w = nodes_b @ R.T + p
        n_w = np.tile([0.0, 0.0, 1.0], (len(nodes_b), 1))
        A, b = pmi.system(m, J, V, T, np.concatenate([m * g_w, np.zeros(3)]), np.zeros((6, 6)))
        A_inv = np.linalg.inv(A)
        G, _ = solver_pgs.contact_jacobians(x_w, n_w, p, R)
        bn = solver_pgs.normal_targets(G, V, x_w[:, 2], T, np.full(len(x_w), 0.2))
        lam, _, V_next, _, res, _ = S.sor(G, A_inv, A_inv @ b, bn, np.full(len(x_w), mu), alpha, 500, 1e-12, lam,
                                          np.zeros(6), 0.0, 0.0)
        p, R = pmi.advance(p, R, V, V_next, T)
        V = V_next
        out.append(V.copy())
    return np.array(out)


@pytest.mark.parametrize("theta_deg", [5.0, 8.0, 8.5])
def test_block_on_incline_sticks_below_the_friction_angle(theta_deg):
    mu = 0.15                                   # friction angle 8.53 deg
    th = math.radians(theta_deg)
    assert math.tan(th) < mu
    m, J, corners = box()
    g_w = G_ACC * np.array([-math.sin(th), 0.0, -math.cos(th)])   # incline: tilt gravity
    Vs = run_on_plane(m, J, corners, g_w, np.zeros(6), 1e-3, 1000, mu)
    assert np.abs(Vs[-1]).max() < STICK_SPEED


@pytest.mark.parametrize("theta_deg,alpha", [(9.0, 1.0), (15.0, 1.0), (30.0, 1.0), (20.0, 0.7)])
def test_block_on_incline_slides_with_the_coulomb_acceleration(theta_deg, alpha):
    mu = 0.15
    th = math.radians(theta_deg)
    m, J, corners = box()
    g_w = G_ACC * np.array([-math.sin(th), 0.0, -math.cos(th)])
    T, steps = 1e-3, 500
    Vs = run_on_plane(m, J, corners, g_w, np.zeros(6), T, steps, mu, alpha)
    a_expected = G_ACC * (math.sin(th) - mu * math.cos(th))
    a = -Vs[-1, 0] / (steps * T)
    assert abs(a - a_expected) <= LAW_REL * a_expected, (a, a_expected)
    assert abs(Vs[-1, 1]) < 1e-9 and abs(Vs[-1, 2]) < 1e-9      # straight down the slope
    assert np.abs(Vs[-1, 3:]).max() < 1e-6                      # no tipping or turning


def test_spinning_ring_decelerates_at_the_coulomb_rate_then_sticks():
    """A ring of radius r spinning on a plane on eight contacts: friction torque mu m g r, so
    omega falls linearly at mu m g r / J_zz until it stops, then it stays stopped."""
    mu, m, r, n = 0.2, 1.5, 0.05, 8
    J = np.diag([0.5 * m * r * r, 0.5 * m * r * r, m * r * r])
    ang = 2 * np.pi * np.arange(n) / n
    nodes = np.stack([r * np.cos(ang), r * np.sin(ang), np.full(n, -0.01)], 1)
    w0, T = 4.0, 1e-3
    rate = mu * m * G_ACC * r / J[2, 2]
    t_stop = w0 / rate
    steps = int(1.5 * t_stop / T)
    Vs = run_on_plane(m, J, nodes, np.array([0.0, 0.0, -G_ACC]), [0, 0, 0, 0, 0, w0], T, steps, mu)
    k = int(0.5 * t_stop / T)
    measured = (w0 - Vs[k, 5]) / (k * T)
    assert abs(measured - rate) <= LAW_REL * rate, (measured, rate)
    assert abs(Vs[-1, 5]) < 1e-9
    assert np.abs(Vs[:, :3]).max() < 1e-9      # pure spin: no force imbalance, no drift


def _random_block(rng):
    Gm = rng.standard_normal((3, 6))
    A_inv = np.diag(rng.uniform(0.2, 3.0, 6))
    return Gm @ A_inv @ Gm.T


def _brute_force(W, uf, bn, mu):
    """Over BRUTE_ANGLES friction directions on the cone boundary (u_n = b_n): the friction's
    power P(phi) = lambda_t . u_t(phi) and whether the direction opposes the sliding velocity
    u_t(phi) it produces (to within the grid: the sign of d x (-u_t) changes between
    neighbours while d . u_t < 0).  Returns (P, consistent mask)."""
    phi = np.linspace(0, 2 * np.pi, BRUTE_ANGLES, endpoint=False)
    d = np.stack([np.cos(phi), np.sin(phi)], 1)
    den = W[0, 0] + mu * d @ W[0, 1:]
    ln = np.where(den > 0, (bn - uf[0]) / np.where(den > 0, den, 1.0), np.nan)
    lt = mu * ln[:, None] * d
    ut = ln[:, None] * W[1:, 0] + lt @ W[1:, 1:].T + uf[1:]
    P = np.sum(lt * ut, 1)
    g = -(d[:, 0] * ut[:, 1] - d[:, 1] * ut[:, 0])
    cross = (g >= 0) & (np.roll(g, -1) < 0) & (np.sum(d * ut, 1) < 0) & (den > 0)
    return P, cross


def test_every_slip_solution_maximizes_dissipation_against_brute_force():
    """Seed 000 eq. (7): at the sliding velocity u_t the contact is left with, the friction is
    the force on the disk of radius mu lambda_n that does the least (most negative) work.
    Checked two ways by brute force over the cone boundary: no boundary force does less work
    at the solution's velocity, and among all the directions consistent with the velocity
    they produce, the solver's is the most dissipative."""
    rng = np.random.default_rng(7)
    slips = sticks = opens = 0
    ring = np.linspace(0, 2 * np.pi, BRUTE_ANGLES, endpoint=False)
    while slips < 200:
        W = _random_block(rng)
        uf = rng.standard_normal(3)
        bn, mu = rng.uniform(-0.2, 0.2), rng.uniform(0.05, 1.0)
        lam, mode = S.single_contact(W, uf, bn, mu)
        u = W @ lam + uf
        nt = math.hypot(lam[1], lam[2])
        if mode == S.OPEN:
            opens += 1
            assert uf[0] >= bn and not lam.any()
            continue
        assert abs(u[0] - bn) < 1e-10                          # Signorini active
        assert nt <= mu * lam[0] * (1 + CONE_ROUND) and lam[0] > 0
        if mode == S.STICK:
            sticks += 1
            assert abs(u[1]) < 1e-10 and abs(u[2]) < 1e-10
            continue
        slips += 1
        assert abs(nt - mu * lam[0]) <= 1e-12 * lam[0]            # on the boundary
        work = lam[1:] @ u[1:]
        # (1) at this velocity no force on the disk boundary does less work
        others = mu * lam[0] * (np.cos(ring) * u[1] + np.sin(ring) * u[2])
        assert work <= others.min() + BRUTE_REL * abs(others.min()), (work, others.min())
        # (2) the most dissipative of the self-consistent directions
        P, cross = _brute_force(W, uf, bn, mu)
        assert cross.any()
        Pb = P[cross].min()
        near_best = ring[cross][P[cross] <= Pb + 1e-3 * abs(Pb)]     # ties within the grid
        phi = math.atan2(lam[2], lam[1]) % (2 * np.pi)
        gap = np.abs((near_best - phi + np.pi) % (2 * np.pi) - np.pi).min()
        assert gap <= 3 * 2 * np.pi / BRUTE_ANGLES, (gap, work, Pb)
    assert sticks > 20 and opens > 20


def test_slip_angle_slope_is_the_derivative_of_the_consistency_function():
    """``_slip_slope``'s closed-form dg/dphi (Newton's step in a sweep) against central
    differences of ``_slip_terms``' g = d x (-u_t) on random blocks and angles."""
    rng = np.random.default_rng(11)
    h = 1e-6
    checked = 0
    for _ in range(200):
        W, uf = _random_block(rng), rng.standard_normal(3)
        s, mu, phi = rng.uniform(0.01, 1.0), rng.uniform(0.05, 1.0), rng.uniform(-np.pi, np.pi)
        g, dg, ok = S._slip_slope(W, uf, s, mu, phi)
        if not ok:
            continue
        checked += 1
        assert g == pytest.approx(S._slip_terms(W, uf, s, mu, phi)[4], rel=1e-12, abs=1e-15)
        fd = (S._slip_terms(W, uf, s, mu, phi + h)[4] - S._slip_terms(W, uf, s, mu, phi - h)[4]) / (2 * h)
        assert dg == pytest.approx(fd, rel=SLOPE_FD_REL, abs=SLOPE_FD_REL * (abs(g) + 1.0))
    assert checked > 100


def test_a_sweeps_hint_finds_the_same_slip_force():
    """Block SOR hands ``_single`` the angle a contact slipped at in the last sweep: Newton from
    there must land on the same consistent force as the windows around the stick force (the
    single-contact solution, ``single_contact``), whether the hint is near (1e-6 .. 3e-2 rad)
    or too far for Newton (1 rad: the windows take over)."""
    rng = np.random.default_rng(5)
    slips = 0
    lam = np.zeros(3)
    while slips < 300:
        W, uf = _random_block(rng), rng.standard_normal(3)
        bn, mu = rng.uniform(-0.2, 0.2), rng.uniform(0.05, 1.0)
        ref, mode = S.single_contact(W, uf, bn, mu)
        if mode != S.SLIP:
            continue
        slips += 1
        phi = math.atan2(ref[2], ref[1])
        for off in (1e-6, 3e-4, 3e-2, 1.0):
            hint = phi + off * rng.choice((-1.0, 1.0))
            got = S._single(W, uf, bn, mu, lam, hint)
            assert got == S.SLIP
            assert np.allclose(lam, ref, rtol=0.0, atol=HINT_SAME * ref[0]), (off, lam, ref)
            if off <= 3e-2:                       # near: Newton's own answer, not the windows'
                assert S._root_newton(W, uf, bn - uf[0], mu, hint, lam)
                assert np.allclose(lam, ref, rtol=0.0, atol=HINT_SAME * ref[0]), (off, lam, ref)


def test_slip_friction_opposes_the_sliding_velocity_in_the_isotropic_case():
    """With W_tt = w I and W_nt = 0 the friction is exactly opposite to the free sliding
    velocity, and the contact slides on at |uf_t| - w mu lambda_n."""
    W = np.diag([1.0, 0.5, 0.5])
    uf = np.array([-1.0, 2.0, -1.0])
    lam, mode = S.single_contact(W, uf, 0.0, 0.3)
    assert mode == S.SLIP
    assert np.allclose(lam, [1.0, -0.3 * 2 / math.sqrt(5), 0.3 / math.sqrt(5)], atol=1e-12)
    u = W @ lam + uf
    assert abs(np.linalg.norm(u[1:]) - (math.sqrt(5) - 0.5 * 0.3)) < 1e-12


def _random_problem(rng, m=12):
    """A body of a part's size (0.5-3 kg, 3 cm lever arms) touching on m random contacts whose
    normals lie in the upper half-space -- a body pushed against supports, like the nut on the
    thread flanks or the peg on the hole's wall and chamfer -- under a random wrench."""
    mass = rng.uniform(0.5, 3.0)
    Jb = np.diag(rng.uniform(2e-4, 2e-3, 3))
    T = 0.01
    V_prev = np.concatenate([rng.normal(0, 0.05, 3), rng.normal(0, 1.0, 3)])
    F = np.concatenate([rng.normal(0, 20.0, 3), rng.normal(0, 0.6, 3)])
    A, b = pmi.system(mass, Jb, V_prev, T, F, np.zeros((6, 6)))
    A_inv = np.linalg.inv(A)
    R = rot_axis_angle(rng.standard_normal(3), rng.uniform(0, np.pi))
    p = rng.normal(0, 0.01, 3)
    x_w = p + rng.normal(0, 0.03, (m, 3))
    n_w = rng.standard_normal((m, 3))
    n_w[:, 2] = np.abs(n_w[:, 2]) + 0.3
    n_w /= np.linalg.norm(n_w, axis=1, keepdims=True)
    G, _ = solver_pgs.contact_jacobians(x_w, n_w, p, R)
    d = rng.uniform(-5e-5, 5e-5, m)
    bn = solver_pgs.normal_targets(G, V_prev, d, T, np.full(m, 0.2))
    return G, A_inv, A_inv @ b, V_prev, bn


@pytest.mark.parametrize("alpha", [1.0, 0.8])
def test_random_multi_contact_problems_converge_with_small_residuals(alpha):
    rng = np.random.default_rng(3)
    for _ in range(40):
        G, A_inv, V_free, V_prev, bn = _random_problem(rng)
        mu = np.full(len(bn), rng.uniform(0.1, 0.6))
        lam, _, V, its, res, _ = S.sor(G, A_inv, V_free, bn, mu, alpha, 50_000, 1e-9,
                                       np.zeros((len(bn), 3)), np.zeros(6), 0.0, 0.0)
        assert res < 1e-9, (its, res)
        sig, comp, cone, neg, diss = S.residuals(G, A_inv, V, bn, mu, lam)
        assert sig < RES_SIG and comp < RES_COMP and diss < RES_FORCE and neg == 0.0
        assert cone <= CONE_ROUND * np.abs(lam).max()


def test_solver_never_returns_a_force_outside_the_cone():
    """Whatever the iteration budget, relaxation or warm start (even one outside the cone)."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        G, A_inv, V_free, V_prev, bn = _random_problem(rng)
        mu = np.full(len(bn), rng.uniform(0.0, 1.0))
        lam0 = rng.normal(0, 5.0, (len(bn), 3))
        lam, _, _, _, _, _ = S.sor(G, A_inv, V_free, bn, mu, rng.uniform(0.3, 1.0),
                                   int(rng.integers(1, 6)), 1e-12, lam0, np.zeros(6), 0.0, 0.0)
        nt = np.hypot(lam[:, 1], lam[:, 2])
        assert (lam[:, 0] >= 0).all()
        assert (nt <= mu * lam[:, 0] * (1 + CONE_ROUND) + 1e-300).all()


def test_frictionless_velocity_agrees_with_pgs():
    """Without friction the post-step twist is the unique minimizer of a strictly convex QP,
    so both solvers must land on it."""
    rng = np.random.default_rng(5)
    T, beta = 0.01, 0.2
    for _ in range(20):
        G, A_inv, V_free, V_prev, _ = _random_problem(rng, m=8)
        d = rng.uniform(-5e-5, 5e-5, 8)
        bn = solver_pgs.normal_targets(G, V_prev, d, T, np.full(8, beta))
        _, _, V_sor, _, _, _ = S.sor(G, A_inv, V_free, bn, np.zeros(8), 1.0, 20000, 1e-12,
                                     np.zeros((8, 3)), np.zeros(6), 0.0, 0.0)
        _, V_pgs, _ = solver_pgs.pgs(G, A_inv, V_free, V_prev, d, T, np.zeros(8), np.full(8, beta), 20000, 1e-12,
                                     np.zeros((8, 3)))
        assert np.allclose(V_sor, V_pgs, atol=1e-8), (V_sor, V_pgs)


def test_cspace_constraint_stops_motion_into_the_obstacle():
    """Algorithm 1 lines 7-13: with N^C set, v^C = N^C . V+ >= b^C and lambda^C >= 0, and a
    body already moving out is left alone (lambda^C = 0)."""
    rng = np.random.default_rng(2)
    G, A_inv, V_free, V_prev, bn = _random_problem(rng, m=0)
    NC = rng.standard_normal(6)
    NC /= np.linalg.norm(NC)
    for bC in (0.0, 0.01):
        for sign in (1.0, -1.0):
            Vf = V_free + sign * 0.1 * (A_inv @ NC)      # moving into (-) or out of (+) it
            lam, lamC, V, _, _, _ = S.sor(G, A_inv, Vf, bn, np.full(len(bn), 0.3), 1.0, 100, 1e-12,
                                          np.zeros((0, 3)), NC, bC, 0.0)
            if NC @ Vf >= bC:
                assert lamC == 0.0 and np.allclose(V, Vf)
            else:
                assert lamC > 0 and abs(NC @ V - bC) < 1e-12


WEDGE_DEG = 1.0         # a pin wedged in a hole of its own diameter: forces ~ 1 / (2 sin 1 deg) = 29 x the push
                        # on each side
SHIPPED_SWEEPS = 100    # config `contact.sor_iterations`
SHIPPED_TOL = 1e-6      # N, config `contact.sor_tolerance`


def _wedge_problem(mu):
    """A 2 kg pin pushed down with 20 N between two rows of rim contacts whose normals lean
    1 deg off horizontal toward each other (plus open contacts below): nearly opposite normals,
    a nearly singular Delassus operator."""
    m, J = 2.0, np.diag([2e-3, 2e-3, 5e-4])
    T, a = 0.01, math.radians(WEDGE_DEG)
    x_w, n_w = [], []
    for s in (1.0, -1.0):
        for y in (-4e-3, 0.0, 4e-3):
            x_w.append([s * 8e-3, y, -0.02])
            n_w.append([-s * math.cos(a), 0.0, math.sin(a)])
    for x in (-5e-3, 5e-3):
        x_w.append([x, 0.0, -0.03])
        n_w.append([0.0, 0.0, 1.0])
    x_w, n_w = np.array(x_w), np.array(n_w)
    A, b = pmi.system(m, J, np.zeros(6), T, np.array([0.0, 0.0, -20.0, 0.0, 0.0, 0.0]), np.zeros((6, 6)))
    A_inv = np.linalg.inv(A)
    G, _ = solver_pgs.contact_jacobians(x_w, n_w, np.zeros(3), np.eye(3))
    bn = np.zeros(len(x_w))
    bn[-2:] = -0.5                        # 5 mm below: open
    return G, A_inv, A_inv @ b, bn


@pytest.mark.parametrize("mu", [0.0, 0.3])
def test_a_wedge_converges_within_the_shipped_sweeps(mu):
    """Subspace steps (``solver_sor`` docstring) solve the wedge's normal rows at once: within
    the shipped sweeps the solve meets the shipped tolerance with every law's residual small;
    plain block SOR (no subspace steps) stays far from it at the sweep cap."""
    G, A_inv, V_free, bn = _wedge_problem(mu)
    mu = np.full(len(bn), mu)
    args = (G, A_inv, V_free, bn, mu, 1.0, SHIPPED_SWEEPS, SHIPPED_TOL, np.zeros((len(bn), 3)), np.zeros(6), 0.0, 0.0)
    lam, _, V, its, res, _ = S.sor(*args)
    assert its < SHIPPED_SWEEPS and res < SHIPPED_TOL, (its, res)
    sig, comp, cone, neg, diss = S.residuals(G, A_inv, V, bn, mu, lam)
    # forces ~ 300 N here, not ~ 10 N: complementarity to the Signorini bound times the force;
    # the natural residual (maximum dissipation) to the shipped tolerance the solve stopped at
    assert sig < RES_SIG and comp < RES_SIG * lam[:, 0].max() and diss < SHIPPED_TOL and neg == 0.0
    assert cone <= CONE_ROUND * np.abs(lam).max()
    assert lam[:6, 0].sum() * math.sin(math.radians(WEDGE_DEG)) > 0.5 * 20.0   # the wedge carries the push
    plain = S.sor_with(*args, 0)          # the test can fail: 0.46 / 0.095 N from the solution
    assert plain[3] == SHIPPED_SWEEPS and plain[4] > 1e4 * SHIPPED_TOL, plain[3:5]


def test_node_warm_start_kernel_matches_the_numpy_form():
    """``_same_nodes`` (numba) against the sort / search / einsum form it replaced, bitwise,
    on keys with misses, another body's nodes and a reordered previous step."""
    rng = np.random.default_rng(7)
    prev_nodes = rng.choice(5000, 900, replace=False)
    prev_body = rng.integers(0, 3, 900)
    key_prev = prev_body * S.NODE_KEY + prev_nodes
    now = np.concatenate([rng.permutation(key_prev)[:700], S.NODE_KEY * 3 + rng.integers(0, 50, 150)])
    m = now.size
    Cf = rng.normal(size=(m, 3, 3))
    f_w = rng.normal(size=(900, 3))
    got = np.zeros((m, 3))
    S._same_nodes(key_prev, now, Cf, f_w, got)
    want = np.zeros((m, 3))
    order = np.argsort(key_prev, kind="stable")
    j = order[np.minimum(np.searchsorted(key_prev[order], now), len(order) - 1)]
    near = key_prev[j] == now
    want[near] = np.einsum("mji,mj->mi", Cf[near], f_w[j[near]])
    want[:, 0] = np.maximum(want[:, 0], 0.0)
    assert near.sum() == 700
    assert np.array_equal(got, want)


def test_identity_rows_are_read_bit_for_bit_as_the_general_sums():
    """Where G is the identity's rows (a contact-space problem: the snap's, the direct island
    solver's) the sweep reads V's rows instead of summing the row (``identity_rows``); the same
    problem with one zero column more (not the identity's rows: the general sums) gives the same
    forces and velocities bit for bit, converged or stopped at the sweep cap."""
    rng = np.random.default_rng(5)
    for k in range(20):
        G, A_inv, V_free, _, bn = _random_problem(rng, m=int(rng.integers(3, 16)))
        m = len(bn)
        W = np.einsum("iak,kl,jbl->iajb", G, A_inv, G).reshape(3 * m, 3 * m)     # contact space
        u = np.einsum("iak,k->ia", G, V_free).ravel()
        ident = np.eye(3 * m).reshape(m, 3, 3 * m)
        padded = np.concatenate([ident, np.zeros((m, 3, 1))], axis=2)
        W_pad = np.zeros((3 * m + 1, 3 * m + 1))
        W_pad[:3 * m, :3 * m], W_pad[-1, -1] = W, 1.0
        assert S.identity_rows(ident) and not S.identity_rows(padded)
        mu = np.full(m, rng.uniform(0.1, 0.6))
        sweeps = 10_000 if k % 2 else int(rng.integers(2, 30))
        a = S.sor(ident, W, u, bn, mu, 1.0, sweeps, 1e-10, np.zeros((m, 3)), np.zeros(3 * m), 0.0, 0.0)
        b = S.sor(padded, W_pad, np.append(u, 0.0), bn, mu, 1.0, sweeps, 1e-10, np.zeros((m, 3)),
                  np.zeros(3 * m + 1), 0.0, 0.0)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[2], b[2][:3 * m]) and a[3] == b[3]
