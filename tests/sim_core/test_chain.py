"""The solve on blocks: a chain of rigid links joined by PMI spring-dampers (one coupled
island), the couplings' and rigid bodies' kernels against their NumPy references, the generic
fold, and islands joined by couplings."""
from __future__ import annotations

import numpy as np

from sim_core import step as step_mod
from sim_core.contact import frames, materials
from sim_core.contact.solvers import SOLVERS
from sim_core.dynamics import blocktree, couplings, pmi
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
    mu, beta = materials.per_contact(model, c)
    ref = SOLVERS[model.contact.solver](model.contact, c, G, Cf, A, b, st.V.ravel(), 1e-3, None, mu=mu, beta=beta)
    assert np.abs(ref.lam).max() > 1e-6                       # the contacts pushed
    assert np.abs(sol.V - ref.V).max() <= DENSE_TOL * max(1.0, np.abs(ref.V).max())
    assert np.abs(sol.lam - ref.lam).max() <= 1e-6 * np.abs(ref.lam).max()
    assert np.allclose(sol.generalized, ref.generalized, rtol=0, atol=1e-9 * np.abs(ref.generalized).max())


def _rewired(a, b, n=6):
    """A world of n links (the chain's) whose couplings join bodies a[e] and b[e] instead,
    started from the chain's shaken state (every coupling stretched and moving)."""
    from dataclasses import replace
    model, st = chain.build(n, dt=1e-3)
    cp, c = model.couplings, len(a)
    half = np.array([chain.LinkSpec().length / 2, 0.0, 0.0])
    cp = couplings.Couplings(np.array(a, np.int64), np.array(b, np.int64), np.tile(half, (c, 1)),
                             np.tile(np.eye(3), (c, 1, 1)), np.tile(-half, (c, 1)), np.tile(np.eye(3), (c, 1, 1)),
                             np.tile(cp.K[0], (c, 1)), np.tile(cp.D[0] + 1e-3, (c, 1)))
    model = replace(model, couplings=cp)
    return model, _shaken(model, st, seed=3)


# a branching tree (factorized on its blocks; couplings 2 and 4 point from child to parent)
# and the same with a closed loop and a doubled coupling (a cycle: the sparse LU)
TREE = ([WORLD, 0, 2, 0, 4, 3], [0, 1, 1, 3, 3, 5])
LOOP = ([WORLD, 0, 2, 0, 4, 3, 2, 4], [0, 1, 1, 3, 3, 5, 4, 5])


def test_block_tree_orders_children_first_and_finds_cycles():
    a, b = np.array(TREE[0][1:]), np.array(TREE[1][1:])
    ok, order, parent, edge = blocktree.tree(6, a, b)
    assert ok and parent[0] == -1 and sorted(order.tolist()) == list(range(6))
    pos = np.argsort(order)
    for i in range(1, 6):
        assert pos[i] < pos[parent[i]] and {a[edge[i]], b[edge[i]]} == {i, parent[i]}
    assert not blocktree.tree(6, np.array(LOOP[0][1:]), np.array(LOOP[1][1:]))[0]
    assert not blocktree.tree(3, np.array([0, 0]), np.array([1, 1]))[0]       # the same pair twice


def test_tree_and_loop_islands_match_the_dense_solve():
    """Without contacts and with three (one link-link), the block-tree factorization (a tree)
    and the sparse LU (a loop) give the dense solve of the same coupled system."""
    for a, b in (TREE, LOOP):
        model, st = _rewired(a, b)
        inp = _rest_inputs(6)
        blk = rigid.blocks(model, st, inp, 1e-3)
        A_ab, _ = couplings.apply(model.couplings, st.p_w, st.R_wb, st.V, 1e-3, blk.A, blk.b)
        A, rhs = _dense_step(model, st, inp, 1e-3)
        free = step_mod.solve(model, st, Contacts.empty(), np.zeros(0, np.int64), blk, A_ab, None, 1e-3)
        ref = np.linalg.solve(A, rhs)
        assert np.abs(free.V - ref).max() <= DENSE_TOL * np.abs(ref).max()
        body, other = np.array([1, 4, 2], np.int64), np.array([WORLD, WORLD, 5], np.int64)
        x = st.p_w[body] + np.array([0.0, 0.0, -1e-3])
        n_w = np.tile([0.0, 0.0, 1.0], (3, 1))
        c = Contacts(x, n_w, np.array([-2e-5, -1e-5, -1e-5]), None, body, other)
        sol = step_mod.solve(model, st, c, body, blk, A_ab, None, 1e-3)
        G, Cf = frames.world_jacobians(x, n_w, body, other, st.p_w, st.R_wb)
        mu, beta = materials.per_contact(model, c)
        ref = SOLVERS[model.contact.solver](model.contact, c, G, Cf, A, rhs, st.V.ravel(), 1e-3, None, mu=mu, beta=beta)
        assert np.abs(ref.lam).max() > 1e-6
        assert np.abs(sol.V - ref.V).max() <= DENSE_TOL * max(1.0, np.abs(ref.V).max())
        assert np.abs(sol.lam - ref.lam).max() <= 1e-6 * np.abs(ref.lam).max()
