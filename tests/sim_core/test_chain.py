"""The solve on blocks: a chain of rigid links joined by PMI spring-dampers (one coupled
island), the couplings' and rigid bodies' kernels against their NumPy references, the generic
fold, and islands joined by couplings."""
from __future__ import annotations

import numpy as np
import pytest

from sim_core import step as step_mod
from sim_core.contact import frames, materials
from sim_core.contact.solvers import SOLVERS
from sim_core.dynamics import couplings, pmi
from sim_core.math.so3 import exp_so3
from sim_core.scenarios import chain
from sim_core.systems import rigid
from sim_core.types import WORLD, Contacts, Inputs

KERNEL_TOL = 1e-12     # relative: the kernels and their references differ in summation order only
ENERGY_EXACT = 1e-9    # relative: linear springs conserve the discrete energy to rounding (couplings docstring)
DENSE_TOL = 1e-9       # m, m/s: the sparse contact-space solve and the dense reference, same equations
LINEAR = chain.LinkSpec(anchors="com", K=(2.0e3,) * 3 + (0.0,) * 3)   # zero-length springs between the COMs


def _rest_inputs(n):
    return Inputs(np.zeros((n, 3)), np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 3)), np.zeros((n, 3)))


def _shaken(model, state, seed=0):
    """A state with every body moved, turned and moving (random, reproducible)."""
    rng = np.random.default_rng(seed)
    n = model.n_bodies
    R = np.array([exp_so3(rng.normal(size=3) * 0.3) for _ in range(n)])
    return state.__class__(0.0, state.p_w + rng.normal(size=(n, 3)) * 1e-3, R, rng.normal(size=(n, 6)) * 0.1)


def test_coupling_kernel_matches_its_numpy_reference():
    model, st = chain.build(6)
    st = _shaken(model, st)
    A1, b1 = np.zeros((6, 6, 6)), np.zeros((6, 6))
    A2, b2 = A1.copy(), b1.copy()
    ab1, e1 = couplings.apply(model.couplings, st.p_w, st.R_wb, st.V, 0.01, A1, b1)
    ab2, e2 = couplings.coupling_terms_numpy(model.couplings, st.p_w, st.R_wb, st.V, 0.01, A2, b2)
    for x, y in ((A1, A2), (b1, b2), (ab1, ab2), (e1, e2)):
        assert np.abs(x - y).max() <= KERNEL_TOL * max(1.0, np.abs(y).max())


def test_rigid_kernel_matches_its_numpy_reference():
    model, st = chain.build(4)
    st = _shaken(model, st)
    rng = np.random.default_rng(1)
    from dataclasses import replace

    from sim_core.types import Drive
    model = replace(model, drive=Drive(rng.uniform(0, 100, (4, 6)), rng.uniform(0, 1, (4, 6))))
    inp = Inputs(rng.normal(size=(4, 3)) * 1e-3, np.array([exp_so3(rng.normal(size=3) * 0.1) for _ in range(4)]),
                 rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 6)))
    a, b = rigid.blocks(model, st, inp, 0.01), rigid.blocks_numpy(model, st, inp, 0.01)
    for f in ("A", "b", "F0", "Bd", "pull"):
        x, y = getattr(a, f), getattr(b, f)
        assert np.abs(x - y).max() <= KERNEL_TOL * max(1.0, np.abs(y).max()), f


def test_fold_equals_the_coupled_solve():
    """Folding block a into p (Schur complement, a's coordinate 1 held) and recovering gives
    the solution of the whole coupled system."""
    rng = np.random.default_rng(2)
    na, n_p = 4, 6
    M = rng.normal(size=(na + n_p, na + n_p))
    A = M @ M.T + (na + n_p) * np.eye(na + n_p)
    rhs = rng.normal(size=na + n_p)
    fixed = np.array([False, True, False, False])
    v_fix = np.array([0.0, 0.7, 0.0, 0.0])
    A_eff, b_eff, fd = couplings.fold(A[na:, na:], rhs[na:], A[:na, :na], rhs[:na], A[:na, na:], fixed, v_fix)
    Vp = np.linalg.solve(A_eff, b_eff)
    qa = couplings.recover(fd, Vp)
    # the reference: the whole system with coordinate 1 eliminated as known
    keep = np.r_[[0, 2, 3], np.arange(na, na + n_p)]
    x = np.linalg.solve(A[np.ix_(keep, keep)], rhs[keep] - A[keep, 1] * 0.7)
    assert np.allclose(np.r_[qa[[0, 2, 3]], Vp], x, rtol=0, atol=1e-12) and qa[1] == 0.7


def test_islands_join_bodies_through_couplings():
    on, other = np.array([0, 3]), np.array([WORLD, WORLD])
    groups = sorted(sorted(g.tolist()) for g in step_mod.islands(5, on, other, np.array([WORLD, 1]), np.array([0, 2])))
    assert groups == [[0], [1, 2], [3], [4]]


def test_linear_chain_keeps_its_energy_exactly():
    """Zero-length springs between the COMs under gravity, no damping: kinetic + spring +
    gravity energy constant to rounding over 1e4 steps (couplings docstring: e linear in the
    poses makes the midpoint force's work equal the potential's change)."""
    model, st = chain.build(10, LINEAR)
    inp = _rest_inputs(10)
    E0 = chain.energy(model, st)
    worst = 0.0
    for _ in range(10_000):
        st, _ = step_mod.step(model, st, inp)
        worst = max(worst, abs(chain.energy(model, st) - E0))
    assert worst <= ENERGY_EXACT * abs(E0), worst / abs(E0)
    # it fell: the stiff zero-length springs stretch by sum m g / K ~ 0.1 mm (measured 0.13 mm)
    assert st.p_w[:, 2].min() < -5e-5


def _dense_step(model, st, inp, dt):
    """The same equations in plain dense NumPy: blocks one by one, couplings one by one, the
    60 x 60 system solved directly."""
    n = model.n_bodies
    blk = rigid.blocks_numpy(model, st, inp, dt)
    Ad, bd = blk.A.copy(), blk.b.copy()
    Aab, _ = couplings.coupling_terms_numpy(model.couplings, st.p_w, st.R_wb, st.V, dt, Ad, bd)
    A = np.zeros((6 * n, 6 * n))
    for i in range(n):
        A[6 * i:6 * i + 6, 6 * i:6 * i + 6] = Ad[i]
    cp = model.couplings
    for k in range(len(cp)):
        a, b = int(cp.a[k]), int(cp.b[k])
        if a >= 0:
            A[6 * a:6 * a + 6, 6 * b:6 * b + 6] += Aab[k]
            A[6 * b:6 * b + 6, 6 * a:6 * a + 6] += Aab[k].T
    return A, bd.ravel()


def test_chain_of_ten_matches_the_dense_reference():
    model, st = chain.build(10, dt=1e-3)
    inp = _rest_inputs(10)
    ref = st
    for _ in range(200):
        st, _ = step_mod.step(model, st, inp, 1e-3)
        A, b = _dense_step(model, ref, inp, 1e-3)
        V = np.linalg.solve(A, b).reshape(10, 6)
        p = np.empty((10, 3))
        R = np.empty((10, 3, 3))
        for i in range(10):
            p[i], R[i] = pmi.advance(ref.p_w[i], ref.R_wb[i], ref.V[i], V[i], 1e-3)
        ref = ref.__class__(ref.t + 1e-3, p, R, V)
    assert np.abs(st.p_w - ref.p_w).max() <= DENSE_TOL and np.abs(st.V - ref.V).max() <= DENSE_TOL
    assert st.p_w[:, 2].min() < -1e-3          # it moved


def test_contact_space_solve_matches_the_dense_velocity_space_solve():
    """Contacts on a coupled island -- three links on a floor (with friction) and a link-link
    contact -- solved through the sparse LU in contact space equal the same solver on the
    dense 60 x 60 system with the dense Jacobian."""
    model, st = chain.build(10, dt=1e-3)
    inp = _rest_inputs(10)
    for _ in range(30):
        st, _ = step_mod.step(model, st, inp, 1e-3)
    r = chain.LinkSpec().radius
    body = np.array([3, 4, 5, 6], np.int64)
    other = np.array([WORLD, WORLD, WORLD, 7], np.int64)
    x = st.p_w[body] - np.array([0.0, 0.0, r])
    x[3] = 0.5 * (st.p_w[6] + st.p_w[7])
    n_w = np.tile([0.0, 0.0, 1.0], (4, 1))
    n_w[3] = (st.p_w[6] - st.p_w[7]) / np.linalg.norm(st.p_w[6] - st.p_w[7])
    c = Contacts(x, n_w, np.array([-2e-5, -1e-5, 0.0, -1e-5]), None, body, other)
    blk = rigid.blocks(model, st, inp, 1e-3)
    A_ab, _ = couplings.apply(model.couplings, st.p_w, st.R_wb, st.V, 1e-3, blk.A, blk.b)
    sol = step_mod.solve(model, st, c, body, blk, A_ab, None, 1e-3)
    A, b = _dense_step(model, st, inp, 1e-3)
    G, Cf = frames.world_jacobians(x, n_w, body, other, st.p_w, st.R_wb)
    mu, beta = materials.uniform(model.contact.material, len(c))
    ref = SOLVERS[model.contact.solver](model.contact, c, G, Cf, A, b, st.V.ravel(), 1e-3, None, mu=mu, beta=beta)
    assert np.abs(ref.lam).max() > 1e-6                       # the contacts pushed
    assert np.abs(sol.V - ref.V).max() <= DENSE_TOL * max(1.0, np.abs(ref.V).max())
    assert np.abs(sol.lam - ref.lam).max() <= 1e-6 * np.abs(ref.lam).max()
    assert np.allclose(sol.generalized, ref.generalized, rtol=0, atol=1e-9 * np.abs(ref.generalized).max())


# ---- the draped chain: links on a fixed drum with friction, in one island with their contacts ----

DRAPED_N = 10
ENERGY_STEPS = 10_000
ENERGY_GAIN = 1e-6     # relative to the energy scale: issue 24's bound on any gain over 1e4 steps
CONTACT_WORK = 1e-9    # relative: the contacts' net work may not be positive beyond rounding
DRUM_PENETRATION = 5e-4   # m, deepest link-drum overlap: half the link radius (measured: draped 2e-5, belt 3.3e-4)


def _scale(model):
    """J: the energy scale of a chain world, M g N L (the chain's weight over its length)."""
    M = sum(b.mass for b in model.bodies)
    return M * float(np.linalg.norm(model.gravity)) * model.n_bodies * chain.LinkSpec().length


def _energy_run(model, st, steps):
    """Steps the world, returning its energy E (steps+1,) J, the contacts' cumulative work W
    (steps+1,) J and the deepest penetration (m).  A contact wrench [f world; tau body] acts on
    the twist [v_w; w_b] and PMI moves each pose by the step's midpoint twist, so the contacts'
    work over a step is T F . (V_k + V_k+1) / 2 (the belt test checks this account to rounding:
    its springs are exact, so E - E0 - W stays at rounding)."""
    n, T = model.n_bodies, model.dt
    inp = _rest_inputs(n)
    E, W = np.empty(steps + 1), np.zeros(steps + 1)
    E[0], pen = chain.energy(model, st), 0.0
    for k in range(steps):
        nxt, info = step_mod.step(model, st, inp)
        W[k + 1] = W[k] + T * float(np.sum(info.contact_wrench * 0.5 * (st.V + nxt.V)))
        st = nxt
        E[k + 1] = chain.energy(model, st)
        pen = max(pen, info.max_penetration)
    return E, W, pen, st


def test_draped_chain_is_one_island_with_its_contacts():
    """The chain falls onto the drum: its links' contacts (each with the drum's material) and
    its couplings make one island of all its links (``step.islands``), which ``step.solve``
    solves in contact space with the couplings."""
    model, st = chain.draped(DRAPED_N, self_contact=True)
    assert len(model.pairs) == 2 * DRAPED_N - 2 and model.shapes[DRAPED_N].kind == "cylinder"
    inp = _rest_inputs(DRAPED_N)
    for _ in range(300):
        st, info = step_mod.step(model, st, inp)
    c = info.contacts
    assert len(c) >= 3                                         # several links rest on the drum
    drum = c.pairs() < DRAPED_N
    assert drum.any() and np.all(c.others()[drum] == WORLD)
    mu, _ = materials.per_contact(model, c)
    assert np.all(mu[drum] == chain.Drum().friction)
    cp = model.couplings
    groups = step_mod.islands(model.n_bodies, c.bodies(), c.others(), cp.a, cp.b)
    assert len(groups) == 1 and sorted(groups[0].tolist()) == list(range(DRAPED_N))
    # it drapes: the links beyond the drum hang down its far side
    centre = model.shapes[DRAPED_N].p_ws
    assert st.p_w[-1, 2] < centre[2] and np.isfinite(st.V).all()


@pytest.fixture(scope="module")
def damped_drape():
    """The draped world of ``chain.DRAPE`` (ball joints, a light bending damper), 1e4 steps."""
    model, st = chain.draped(DRAPED_N)
    return model, *_energy_run(model, st, ENERGY_STEPS)


@pytest.mark.slow
def test_draped_chain_contacts_do_no_net_positive_work_and_hold_the_chain(damped_drape):
    model, E, W, pen, st = damped_drape
    s = _scale(model)
    assert W.max() <= CONTACT_WORK * s, W.max() / s
    assert W[-1] < -1e-3 * s                     # the impacts and the friction dissipated
    assert pen <= DRUM_PENETRATION, pen
    # the damped chain's energy never rises above its start either (the damper only dissipates)
    assert E.max() - E[0] <= ENERGY_GAIN * s, (E.max() - E[0]) / s


@pytest.mark.slow
@pytest.mark.xfail(strict=False, reason="needs h6's energy-exact couplings: undamped, the ball-joint chain "
                   "(offset anchors, O(T^3) per step) gains 0.14 M g N L by 2 s on the drum and its PMI "
                   "solve goes singular before 1e4 steps (measured)")
def test_undamped_draped_chain_never_gains_energy():
    """Issue 24: without damping the draped chain's energy never grows beyond 1e-6 relative
    over 1e4 steps -- the couplings conservative, the contacts dissipative."""
    model, st = chain.draped(DRAPED_N, chain.BALL)
    E, W, pen, st = _energy_run(model, st, ENERGY_STEPS)
    s = _scale(model)
    assert np.isfinite(E).all() and E.max() - E[0] <= ENERGY_GAIN * s, (E.max() - E[0]) / s
    assert np.abs(E - E[0] - W).max() <= ENERGY_GAIN * s      # all that changes it is the contacts' work
    assert W.max() <= CONTACT_WORK * s


@pytest.mark.slow
def test_belt_over_the_drum_keeps_its_energy_exactly_but_for_the_contacts():
    """A string of links (zero-length springs between the centres of mass: exact discrete
    energy) laid over the drum, both ends anchored: over 1e4 steps kinetic + spring + gravity
    energy changes by the contacts' work alone, to rounding; that work is never net positive,
    so the energy never grows."""
    model, st = chain.belt(DRAPED_N)
    E, W, pen, st = _energy_run(model, st, ENERGY_STEPS)
    s = abs(E[0])                                  # the springs' tension energy
    assert np.abs(E - E[0] - W).max() <= ENERGY_EXACT * s, np.abs(E - E[0] - W).max() / s
    assert W.max() <= CONTACT_WORK * s, W.max() / s
    assert E.max() - E[0] <= ENERGY_EXACT * s
    assert W[-1] < 0.0 and pen <= DRUM_PENETRATION, (W[-1] / s, pen)
