"""A coupled island's solvers (``contact.island_solvers``, seed 002 Sec. III-C and IV): the dense
Solver 1 equals the sparse one to round-off; Solvers 2 and 3 (subsystems in parallel, Algorithm 1,
with and without the post-regulation of eq. (16)) find Solver 1's solution of the same step;
without contacts Solver 2 is the direct solve; Solver 3 never hits its iteration cap."""
from dataclasses import replace

import numpy as np
import pytest

from sim_core import step as step_mod
from sim_core.contact import island_solvers
from sim_core.scenarios import chain, scenario
from sim_core.types import Inputs

N_LINKS, T = 40, 1e-3
# stiff links (LinkSpec's bending springs: every cut coupling has H > 0) with a light bending damper
LINK = chain.LinkSpec(D=(0.0,) * 3 + (1e-5,) * 3)
DENSE_TOL = 1e-9       # relative: sparse and dense Solver 1, the same equations, different round-off
# relative, V and the contact forces: Solvers 2 and 3 run to 1e-12 N against PGS run to 1e-13 N,
# both converged; measured 4e-10 (V) on this scene
CONVERGED_TOL = 1e-7
# relative, V: Solver 3 at its defaults (tolerance 1e-6 N, alpha 0.7, xi 1 N, 100 iterations)
# against converged Solver 1 on a resting step; measured 2e-7 to 8e-6 on steps 90-300 of the drape
DEFAULTS_TOL = 1e-4
NO_CONTACT_TOL = 1e-9  # relative: S F = U solved directly, then each subsystem's own solve
# relative, V, the contact and the cut forces: each subsystem set up by a sparse LU (``_prepare_serial``,
# an island whose couplings close a loop) against on its blocks (``_prepare_parallel``) -- two exact
# factorizations of the same blocks, then the same sweeps; measured 1e-15 (V; the forces bit for bit)
SETUP_PATHS_TOL = 1e-10
# the coupled normal solve (``_coupled_normals``): every normal row met and complementary to this
# many m/s per (1 + the largest target) -- measured 3e-14 on the winding; the cut couplings'
# equation S F = U + C lambda to this of its right-hand side (measured 5e-13)
NORMAL_ROWS_TOL = 1e-10
# relative, the normal forces against a plain NumPy solve of the same set with the island's
# Delassus operator formed densely (W - E S^-1 R): the same equations, other round-off
DENSE_NORMALS_TOL = 1e-8


def _inputs(n):
    return Inputs(np.zeros((n, 3)), np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 3)), np.zeros((n, 3)))


def _with(model, **kw):
    return replace(model, contact=replace(model.contact, **kw))


@pytest.fixture(scope="module")
def drape():
    """The draped chain of stiff links on the drum after 150 steps (Solver 1), and the model
    whose PGS runs to convergence (1e-13 N) on the step the solvers are compared on."""
    model, st = chain.draped(N_LINKS, spec=LINK, dt=T)
    model = _with(model, solver="pgs", pgs_iterations=500)
    inp = _inputs(N_LINKS)
    for _ in range(150):
        st, info = step_mod.step(model, st, inp, T)
    assert len(info.contacts) >= 2
    return _with(model, pgs_iterations=20_000, pgs_tolerance=1e-13), st, inp


def _rel(x, ref):
    return np.abs(x - ref).max() / np.abs(ref).max()


def test_dense_solver_1_equals_the_sparse_one(drape):
    model, st, inp = drape
    a, ia = step_mod.step(model, st, inp, T)
    b, ib = step_mod.step(_with(model, island_solver="direct_dense"), st, inp, T)
    assert np.abs(ia.forces_w).max() > 1e-3                   # the contacts push
    assert _rel(b.V, a.V) <= DENSE_TOL and _rel(ib.forces_w, ia.forces_w) <= DENSE_TOL


@pytest.mark.parametrize("split", island_solvers.SPLITS)
@pytest.mark.parametrize("n_s", [4, 8])
@pytest.mark.parametrize("name", ["subsystems", "subsystems_regulated"])
def test_subsystem_solvers_find_solver_1s_solution(drape, name, n_s, split):
    model, st, inp = drape
    ref, iref = step_mod.step(model, st, inp, T)
    tight = _with(model, island_solver=name, subsystems=n_s, island_iterations=20_000, island_tolerance=1e-12,
                  regulation_alpha=0.99, subsystem_split=split)
    got, info = step_mod.step(tight, st, inp, T)
    assert not info.capped and info.sweeps > 1
    assert _rel(got.V, ref.V) <= CONVERGED_TOL and _rel(info.forces_w, iref.forces_w) <= CONVERGED_TOL
    # the cut couplings' forces are kept for the next step's warm start
    assert got.warm.cut is not None and np.count_nonzero(np.abs(got.warm.cut).sum(1)) == n_s - 1


def test_solver_3_at_its_defaults_is_close_to_solver_1(drape):
    model, st, inp = drape
    ref, _ = step_mod.step(model, st, inp, T)
    got, info = step_mod.step(_with(model, island_solver="subsystems_regulated"), st, inp, T)
    assert not info.capped and _rel(got.V, ref.V) <= DEFAULTS_TOL


def test_without_contacts_solver_2_is_the_direct_solve():
    model, st = chain.build(20, chain.LinkSpec(), dt=T)
    rng = np.random.default_rng(1)
    st = replace(st, V=rng.normal(size=st.V.shape) * 0.1)
    inp = _inputs(20)
    ref, _ = step_mod.step(model, st, inp, T)
    for n_s in (1, 3, 7):
        got, info = step_mod.step(_with(model, island_solver="subsystems", subsystems=n_s), st, inp, T)
        assert _rel(got.V, ref.V) <= NO_CONTACT_TOL and info.sweeps == 0


@pytest.mark.parametrize("name", ["subsystems", "subsystems_regulated"])
def test_the_sparse_lu_setup_finds_the_block_setups_solution(drape, monkeypatch, name):
    """The subsystems' setup for an island whose couplings close a loop (a sparse LU per subsystem,
    ``_prepare_serial``) forced on the drape's chain, against its blocks' setup: the same step."""
    model, st, inp = drape
    m = _with(model, island_solver=name, subsystems=4, island_iterations=20_000, island_tolerance=1e-12,
              regulation_alpha=0.99)
    ref, iref = step_mod.step(m, st, inp, T)
    calls = []
    serial = island_solvers._prepare_serial
    monkeypatch.setattr(island_solvers, "_is_tree", lambda k, a, b: False)
    monkeypatch.setattr(island_solvers, "_prepare_serial", lambda *args: calls.append(1) or serial(*args))
    got, info = step_mod.step(m, st, inp, T)
    assert calls and not info.capped and np.abs(iref.forces_w).max() > 1e-3
    for x, x_ref in ((got.V, ref.V), (info.forces_w, iref.forces_w), (got.warm.cut, ref.warm.cut)):
        assert _rel(x, x_ref) <= SETUP_PATHS_TOL


def _dense(c_off, w_off, W, e_off, E, R, end_off, end_cut, nc):
    """The subsystems' flat blocks as dense matrices: W (3m,3m) block diagonal, E (3m,6nc), R (6nc,3m)."""
    n = 3 * c_off[-1]
    Wd, Ed, Rd = np.zeros((n, n)), np.zeros((n, 6 * nc)), np.zeros((6 * nc, n))
    for s in range(len(c_off) - 1):
        r0, n3 = 3 * c_off[s], 3 * (c_off[s + 1] - c_off[s])
        e0, ne = end_off[s], end_off[s + 1] - end_off[s]
        Wd[r0:r0 + n3, r0:r0 + n3] = W[w_off[s]:w_off[s] + n3 * n3].reshape(n3, n3)
        Es = E[e_off[s]:e_off[s] + n3 * 6 * ne].reshape(n3, 6 * ne)
        Rs = R[e_off[s]:e_off[s] + n3 * 6 * ne].reshape(6 * ne, n3)
        for e in range(ne):
            j = end_cut[e0 + e]
            Ed[r0:r0 + n3, 6 * j:6 * j + 6] += Es[:, 6 * e:6 * e + 6]
            Rd[6 * j:6 * j + 6, r0:r0 + n3] += Rs[6 * e:6 * e + 6]
    return Wd, Ed, Rd


@pytest.mark.parametrize("name", ["subsystems", "subsystems_regulated"])
def test_the_coupled_normal_solve_meets_every_normal_row(monkeypatch, name):
    """With the pgs_subspace kernel Solvers 2 and 3 end on the island's normal forces solved at
    once across the cuts, the friction held (``island_solvers._end_on_normals``):
    Signorini on every normal row (met, complementary), the cut couplings exact for the final
    forces (eq. (12)), the friction in its disk, and the normal forces those of a plain NumPy
    solve of the same set with the island's Delassus operator W - E S^-1 R formed densely."""
    model, st, cfg = scenario.load("cable_winding")          # 40 links: the coil on 4 of 8 subsystems
    m = _with(model, island_solver=name, solver="pgs_subspace", turn_passes=0)
    loop = scenario.record(cfg).control.start()
    for _ in range(5):                                        # into the settle, past the start's kick
        st, info = step_mod.step(m, st, loop.inputs(m, st, m.dt))
        loop.measure(st, info)
    inp = loop.inputs(m, st, m.dt)
    seen, solve = [], island_solvers._end_on_normals

    def capturing(*args):
        held = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
        out = solve(*args)
        seen.append((held, args[13].copy(), args[17].copy(), out[1]))
        return out
    monkeypatch.setattr(island_solvers, "_end_on_normals", capturing)
    step_mod.step(m, st, inp)
    assert len(seen) == 1
    for held, lam, F, (_, _, met) in seen:
        c_off, w_off, W, _, ufree, e_off, E, R, end_off, end_cut, bn, mu, nexp, _, S, _, U, _ = held[:18]
        nc = F.shape[0]
        assert met and nc >= 1 and np.count_nonzero(np.diff(c_off)) >= 2      # contacts on both sides of a cut
        Wd, Ed, Rd = _dense(c_off, w_off, W, e_off, E, R, end_off, end_cut, nc)
        u = ufree + Wd @ lam.ravel() - Ed @ F.ravel()
        tol = NORMAL_ROWS_TOL * (1.0 + np.abs(bn).max())
        ln, un = lam[:, 0], u[0::3]
        assert ln.min() >= 0.0 and ln.max() > 0.0
        assert (bn - un).max() <= tol and np.abs(ln * (un - bn)).max() <= tol * ln.max()
        rhs = U.ravel() + Rd @ lam.ravel()
        assert np.abs(S @ F.ravel() - rhs).max() <= NORMAL_ROWS_TOL * np.abs(rhs).max()
        assert np.all(np.hypot(lam[:, 1], lam[:, 2]) <= mu * ln ** nexp * (1.0 + 1e-12))   # eq. (8)'s disk
        # the reference: the friction held, the normal forces of the set from the dense operator
        lf = lam.copy()
        lf[:, 0] = 0.0
        Sinv = np.linalg.inv(S)
        a = ufree + Wd @ lf.ravel() - Ed @ Sinv @ (U.ravel() + Rd @ lf.ravel())
        D = (Wd - Ed @ Sinv @ Rd)[0::3, 0::3]
        P = ln > 0.0
        x = np.linalg.solve(D[np.ix_(P, P)], (bn - a[0::3])[P])
        assert _rel(ln[P], x) <= DENSE_NORMALS_TOL


def test_a_ball_joint_cannot_be_cut():
    model, st = chain.draped(12, spec=chain.BALL, dt=T)      # no rotational stiffness nor damping: H singular
    with pytest.raises(ValueError, match="island solver 'subsystems': cut coupling .* a ball joint cannot be cut"):
        step_mod.step(_with(model, island_solver="subsystems", subsystems=3), st, _inputs(12), T)


def test_partition_binds_runs_joined_by_a_contact():
    body, other = np.array([1, 4]), np.array([-1, 7])       # a link-link contact between runs 1 and 2
    assert island_solvers.partition(10, 4, body, other).tolist() == [0, 0, 0, 1, 1, 1, 1, 1, 2, 2]
    assert island_solvers.partition(10, 4, body[:1], other[:1]).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 3, 3]
    assert island_solvers.partition(3, 8, body[:0], other[:0]).tolist() == [0, 1, 2]


def _plan_numpy(label, ns, a, b, inner, body, other, cut, Gb_eq):
    """``island_solvers._plan``'s layout by plain NumPy (stable sorts, searchsorted): the reference."""
    nc = cut.size
    by = np.argsort(label[body], kind="stable")
    c_off = np.searchsorted(label[body][by], np.arange(ns + 1))
    end_sub = np.concatenate([label[a[cut]], label[b[cut]]])
    order = np.argsort(end_sub, kind="stable")
    end_cut = np.concatenate([np.arange(nc), np.arange(nc)])[order]
    end_body = np.concatenate([a[cut], b[cut]])[order]
    end_M = np.concatenate([np.tile(np.eye(6), (nc, 1, 1)), -Gb_eq.transpose(0, 2, 1)])[order]
    end_off = np.searchsorted(end_sub[order], np.arange(ns + 1))
    b_off = np.searchsorted(label, np.arange(ns + 1))
    idx = np.flatnonzero(inner)
    idx = idx[np.argsort(label[a[idx]], kind="stable")]
    i_off = np.searchsorted(label[a[idx]], np.arange(ns + 1))
    first = b_off[label]
    ob = other[by]
    co = np.where(ob >= 0, ob - first[np.maximum(ob, 0)], -1)
    ms, ne, ks = np.diff(c_off), np.diff(end_off), np.diff(b_off)

    def off(x):
        return np.concatenate([[0], np.cumsum(x)])
    return (by, c_off, end_cut, end_body, end_M, end_off, b_off, idx, i_off, a[idx] - first[a[idx]],
            b[idx] - first[b[idx]], body[by] - first[body[by]], co, off(9 * ms * ms), off(18 * ms * ne),
            off(36 * ne * ne), off(6 * ks * (1 + 3 * ms + 6 * ne)), end_body - first[end_body])


def test_the_subsystem_layout_matches_plain_numpy():
    """``_plan`` (one kernel: counting sorts) against ``_plan_numpy`` on random chains with
    link-world and link-link contacts, every array equal; the threads' bins hold each subsystem
    once."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        k, n_s, m = int(rng.integers(2, 30)), int(rng.integers(1, 9)), int(rng.integers(0, 12))
        a, b = np.arange(k - 1), np.arange(1, k)
        body = rng.integers(0, k, m)
        other = np.where(rng.random(m) < 0.8, -1, rng.integers(0, k, m))
        label = island_solvers.partition(k, n_s, body, other)
        ns = int(label.max()) + 1
        cut = np.flatnonzero(label[a] != label[b])
        inner = np.ones(k - 1, bool)
        inner[cut] = False
        Gb_eq = rng.normal(size=(cut.size, 6, 6))
        got = island_solvers._plan(label, ns, a, b, inner, body, other, cut, Gb_eq, 2)
        ref = _plan_numpy(label, ns, a, b, inner, body, other, cut, Gb_eq)
        for g, r in zip(got, ref):
            assert g.shape == r.shape and np.array_equal(g, r)
        for bins in got[-3:]:
            assert sorted(int(s) for s in bins.ravel() if s >= 0) == list(range(ns))


def test_balanced_partition_evens_links_plus_contacts():
    """"balanced": 40 links with 60 contacts on links 0-9 and none beyond: the runs carry about
    the same LINK_WEIGHT per link + contacts (the contacts' runs short, the free cable's long),
    consecutive, none empty; without contacts it is the even split; a self-contact still binds."""
    k, n_s = 40, 8
    body = np.repeat(np.arange(10), 6)
    other = np.full(body.size, -1)
    label = island_solvers.partition(k, n_s, body, other, "balanced")
    assert label[0] == 0 and np.all(np.diff(label) >= 0) and np.all(np.diff(label) <= 1)
    assert label.max() + 1 == n_s
    w = island_solvers.LINK_WEIGHT + np.bincount(body, minlength=k)
    load = np.bincount(label, weights=w)
    assert load.max() <= w.sum() / n_s + w.max()                 # no run more than one body over its share
    assert np.flatnonzero(label == label[0]).size < np.flatnonzero(label == label[-1]).size
    assert (island_solvers.partition(k, n_s, body[:0], other[:0], "balanced")
            == island_solvers.partition(k, n_s, body[:0], other[:0], "links")).all()
    tied = island_solvers.partition(k, n_s, np.array([0]), np.array([39]), "balanced")
    assert tied.max() == 0                                       # a contact between the two ends: one run
    with pytest.raises(ValueError, match="subsystem split 'even'"):
        island_solvers.partition(k, n_s, body, other, "even")


def test_subsystem_iteration_does_not_depend_on_the_threads(drape):
    """The threads take whole subsystems (``thread_bins``) and within an iteration the
    subsystems do not see each other: 1 or 2 threads, the same numbers bit for bit."""
    import numba
    model, st, inp = drape
    m = _with(model, island_solver="subsystems_regulated", subsystems=8)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one, i1 = step_mod.step(m, st, inp, T)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two, i2 = step_mod.step(m, st, inp, T)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(one.V, two.V) and np.array_equal(i1.forces_w, i2.forces_w) and i1.sweeps == i2.sweeps


def test_thread_bins_deal_the_largest_subsystems_first():
    c_off = np.array([0, 60, 120, 180, 236, 241, 241, 241, 241])     # the winding's contacts, equal runs
    cost = island_solvers.sweep_cost(c_off)
    assert np.array_equal(cost, (3.0 * np.diff(c_off)) ** 2 + 1.0)
    bins = island_solvers.thread_bins(cost, 2)
    assert sorted(int(s) for s in bins.ravel() if s >= 0) == list(range(8))
    loads = [cost[[s for s in row if s >= 0]].sum() for row in bins]
    assert max(loads) / min(loads) < 1.1                         # the static split gave one thread all four
    assert island_solvers.thread_bins(cost, 1).shape[0] == 1


@pytest.mark.slow
def test_solver_3_never_hits_its_cap_on_the_drape():
    """300 steps of the drape (the fall, the impacts on the drum, the rest) with Solver 3 at its
    defaults: no step at the cap (Solver 2 hits it at the impacts: measured 23 of 200 steps)."""
    model, st = chain.draped(N_LINKS, spec=LINK, dt=T)
    model = _with(model, solver="pgs", island_solver="subsystems_regulated")
    inp = _inputs(N_LINKS)
    caps, contacts, its = 0, 0, []
    for _ in range(300):
        st, info = step_mod.step(model, st, inp, T)
        caps += info.capped
        contacts = max(contacts, len(info.contacts))
        its.append(info.sweeps)
    assert contacts >= 3 and caps == 0 and max(its) < model.contact.island_iterations
    assert np.isfinite(st.V).all()


@pytest.mark.parametrize("xi", [1e-2, 1e-3])
def test_solver_3_skipping_the_undone_sweeps_changes_nothing(drape, monkeypatch, xi):
    """``iterate``'s `freeze` (after FREEZE_AFTER undone passes in a row, eq. (16)'s further sweeps
    are skipped while the cut forces converge) against the print's loop, which sweeps every
    pass: the same velocities, forces and pass counts, bit for bit, over 12 steps of the drape
    with Solver 3 and 8 subsystems.  At xi = 1e-3 N the regulation undoes the sweeps from the
    first passes on and sweeps are skipped (counted); at 1e-2 N it undoes only the first pass of
    the first step, then keeps the sweeps: nothing may be skipped there."""
    model, st0, inp = drape
    m = _with(model, island_solver="subsystems_regulated", subsystems=8, regulation_xi=xi)
    loop, skipped = island_solvers.iterate, []

    def counting(*args):
        out = loop(*args)
        skipped.append(out[4])
        return out
    monkeypatch.setattr(island_solvers, "iterate", counting)
    runs = {}
    for freeze in (True, False):
        monkeypatch.setattr(island_solvers, "FREEZE_UNDONE", freeze)
        st, got = st0, []
        for _ in range(12):
            st, info = step_mod.step(m, st, inp, T)
            got.append((st.V.copy(), info.forces_w.copy(), info.sweeps))
        runs[freeze] = got
    for (v1, f1, n1), (v2, f2, n2) in zip(runs[True], runs[False]):
        assert np.array_equal(v1, v2) and np.array_equal(f1, f2) and n1 == n2
    frozen = sum(skipped[:12])
    assert (frozen > 0) if xi < 5e-3 else (frozen == 0), skipped
    assert sum(skipped[12:]) == 0                                  # the print's loop skips nothing
