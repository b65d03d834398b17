"""The snap fit (issue 27, seed 003): the scripted insertion on the coarse prongs, undamped --
the click (force peak, drop, prongs back near rest, the seat), no penetration, the floor's
reaction against the plug's force, and the contacts doing no positive work."""
import functools

import numpy as np
import pytest

from sim_core.systems.fem import prong as prong_mod
from sim_core.systems.fem import snap

P0 = (0.0, 0.0, 12.5e-3)     # m: the plug's head 0.5 mm above the prongs' tips
SPEED = 20e-3                # m/s: the set point's descent
Z_END = 3e-3                 # m: 4 mm below the seat -- the admittance presses 8 N once seated
DURATION = 0.8               # s: the click comes at ~0.47 s
# geometric interference per prong: head half-width - the hook tip's rest x
INTERFERENCE = 3.1e-3 - 2.5e-3
# m: deepest penetration allowed: the seat's plastic stop leaves the plug at most SEAT_TOUCH in;
# at the hooks measured 0.4-1.8 um (the surface points and 16 representatives per prong; 8 let
# a prong twist past an unconstrained twin point, 93 um)
PENETRATION_BOUND = snap.SEAT_TOUCH
# the prongs back near rest: their mean deflection over the last 0.2 s, against the interference
# (measured mean < 1e-4 of it).  Undamped, a hook let go from its full deflection rings about rest
# with whatever the release leaves it: measured 0.05-0.13 mm (a round-off change of the solve
# moves it that much; the hook slides off the head's return face, and that contact dissipates);
# never above half the interference (it would ring at the full 0.6 mm were the release clean)
REST_MEAN = 0.02
REST_AMPLITUDE = 0.5
# the largest rise of the energy in one step, relative to it: the block SOR stops at its cap
# (200 sweeps) on the hook's face contacts (16 near-dependent points a prong: the Delassus
# operator's common mode ~1 m/s/N against ~1e-4 local) with a residual up to 5e-3 N, and the
# unconverged forces do a little positive work; a
# converged solve does none (2000 sweeps on 4 points: 5e-9).  Over the hold the net is a loss.
SOLVE_ENERGY_REL = 5e-3          # measured 1.7e-3


@functools.cache
def model() -> snap.SnapModel:
    return snap.build(prong_mod.build(level="coarse"))


@functools.cache
def insertion() -> dict:
    _, tr = snap.run(model(), P0, snap.descent(P0, SPEED, Z_END), DURATION)
    return tr.arrays()


def _click(a) -> int:
    """The step the plug drops through: its first fall of more than 50 um in one step."""
    return int(np.argmax(np.diff(a["z"]) < -50e-6))


def test_the_snap_clicks_seats_and_the_prongs_come_back_to_rest():
    a = insertion()
    Fz, z, defl = a["plug_force"][:, 2], a["z"], a["deflection"]
    k = _click(a)
    assert k > 0, "no click"
    before = Fz[:k].max()
    assert before > 5.0                                        # the prongs resisted (measured 14.4 N)
    assert defl[:k + 5].max() > 0.9 * INTERFERENCE             # bent out over the head
    # the drop: within 5 ms of the click the plug is through and the hooks let go
    assert np.abs(Fz[k + 5:k + 20]).min() < 0.2 * before
    assert z[-1] == pytest.approx(model().seat_z, abs=snap.SEAT_TOUCH)   # seated (its plastic stop)
    tail = defl[-200:]
    assert np.abs(tail.mean(axis=0)).max() < REST_MEAN * INTERFERENCE
    assert np.abs(tail).max() < REST_AMPLITUDE * INTERFERENCE
    assert a["penetration"].max() < PENETRATION_BOUND


def test_seated_the_floor_carries_the_plug_force():
    """Eq. (29) corrected: at rest the floor's force on the socket equals the plug's push on it,
    the admittance's spring K (z - z_set): 8 N = 2000 N/m over the 4 mm its set point lies below
    the seat, less K times the depth the seat's plastic stop left the plug in (at most
    SEAT_TOUCH: up to 0.02 N; measured 3-7 um, 0.006-0.013 N)."""
    a = insertion()
    F_floor, F_plug = a["floor_force"][-100:].mean(axis=0), a["plug_force"][-100:].mean(axis=0)
    K = model().admittance.K[2]
    assert F_plug[2] == pytest.approx(K * (a["z"][-1] - Z_END), rel=1e-9)    # at rest: the spring alone
    assert F_plug[2] == pytest.approx(8.0, abs=K * snap.SEAT_TOUCH)
    assert np.allclose(F_floor, F_plug, atol=0.02)


def test_contacts_do_no_positive_work_undamped():
    """With the set point held still, the prongs (undamped) plus the plug's admittance energy
    never rise: every contact force works against the midpoint motion (snap's module text),
    and the admittance damper only dissipates."""
    m = model()
    a = m.admittance
    state = snap.start(m, P0)
    p_set = np.array([0.0, 0.0, 9.6e-3])                        # on the hooks' land: held, bent out
    energies = []
    for _ in range(300):
        state, info = snap.step(m, state, p_set)
        e = snap.prong_energy(m, state) + 0.5 * a.mass * state.V @ state.V \
            + 0.5 * np.sum(a.K * (state.p - p_set) ** 2)
        energies.append(e)
    e = np.array(energies)
    assert info.n_contacts > 0 and snap.prong_energy(m, state) > 1e-5
    assert (np.diff(e) / e[1:]).max() < SOLVE_ENERGY_REL
    assert e[-1] < e[50]


def test_modal_prongs_pass_eq6_under_the_snap_forces():
    """The prongs' modal energy changes by exactly the contact forces' midpoint work (eq. (6))."""
    m = model()
    state = snap.start(m, P0)
    work, peak = 0.0, 0.0
    path = snap.descent(P0, SPEED, Z_END)
    for _ in range(520):
        q0, qd0 = state.q.copy(), state.qd.copy()
        state, info = snap.step(m, state, path(state.t + m.T))
        # each prong's generalized contact force from its step, against its midpoint rate
        qh = (state.q - q0) / m.T
        phi = m.modal.mhat * (qh - np.stack([m.modal.free_rate(q0[s], qd0[s]) for s in (0, 1)]))
        work += m.T * float(np.sum(phi * qh))
        peak = max(peak, snap.prong_energy(m, state))
    assert peak > 5e-4                                           # the hooks were bent (~1 mJ), and let go
    assert abs(snap.prong_energy(m, state) - work) < 1e-9 * peak


def test_the_detection_kernel_is_the_numpy_sdf_bit_for_bit():
    """``connector.union_sdf`` (the step's kernel) against ``plug_sdf`` on random points and on
    the outline's vertices and edge midpoints (where the normal comes from the edge)."""
    from sim_core.geometry.connector import PlugSpec, packed_polygons, plug_sdf, union_sdf
    spec = PlugSpec()
    P = np.random.default_rng(0).uniform([-5e-3, -2e-3], [5e-3, 10e-3], size=(5000, 2))
    for poly in spec.polygons():
        P = np.vstack([P, poly, 0.5 * (poly + np.roll(poly, -1, axis=0))])
    d0, g0 = plug_sdf(spec, P)
    d1, g1 = np.empty(len(P)), np.empty((len(P), 2))
    union_sdf(P, *packed_polygons(spec), d1, g1)
    assert np.array_equal(d0, d1) and np.array_equal(g0, g1)
    assert np.allclose(np.linalg.norm(g1, axis=1), 1.0)


def test_the_deepest_member_per_cluster_is_argmin_per_label():
    """``snap._deepest`` (the representatives' pick, a numba loop) against the plain form it
    replaced: per label present, in label order, the member with the smallest gap, the first on
    a tie (ties are made on purpose)."""
    rng = np.random.default_rng(4)
    for _ in range(50):
        k = int(rng.integers(1, 17))
        labels = rng.integers(0, k, int(rng.integers(1, 120))).astype(np.int64)
        d = np.round(rng.normal(0.0, 1e-4, labels.size), 5)     # rounded: ties
        ref = np.array([np.flatnonzero(labels == c)[np.argmin(d[labels == c])] for c in np.unique(labels)])
        assert np.array_equal(snap._deepest(labels, d, k), ref)


# relative to the largest entry: the gathered Delassus operator and the Jacobian's product sum the
# same modal terms in another order (measured 1.9e-15 on the fine mesh)
DELASSUS_SAME = 1e-12


def test_the_gathered_delassus_operator_is_the_jacobians_product():
    """``snap._delassus`` (stage 4 from the points' precomputed midpoint admittance
    ``SnapModel.gram``) and ``snap._modal_loads`` against the contact Jacobian's products they
    replace (``snap.delassus_numpy``): both prongs touching (the left one mirrored), the seat, a
    full 3 x 3 plug admittance (the core's, with the arm folded in, need not be diagonal)."""
    m = model()
    rng = np.random.default_rng(3)
    state = snap.start(m, P0)
    state.q[:] = rng.normal(0.0, 1e-6, state.q.shape)
    state.qd[:] = rng.normal(0.0, 1e-4, state.qd.shape)
    side, node, _, nrm = snap._detect(m, snap.SnapState(0.0, state.q, state.qd, np.array([0.0, 0.0, 8.0e-3]),
                                                        np.zeros(3)))
    assert set(side) == {0, 1}                        # the head between the hooks: both touch
    C = snap.contact_frames(np.vstack([nrm, [[0.0, 0.0, -1.0]]]))
    qh = snap.free_rates(m, state)
    A_inv = rng.normal(0.0, 1e-3, (3, 3)) + np.eye(3) * 5e-3
    Vh = rng.normal(0.0, 1e-2, 3)
    W, u = snap._delassus(m.gram, m.Ps, node, side, np.array(snap.SIDES)[side], C, qh, 0.5 * A_inv, Vh)
    W0, u0, Jc = snap.delassus_numpy(m, side, node, C, qh, A_inv, Vh)
    assert np.abs(W - W0).max() <= DELASSUS_SAME * np.abs(W0).max()
    assert np.abs(u - u0).max() <= DELASSUS_SAME * np.abs(u0).max()
    lam = rng.normal(0.0, 1.0, (len(C), 3))
    phi = snap._modal_loads(m.Ps, node, side, np.array(snap.SIDES)[side], (C @ lam[:, :, None])[:, :, 0],
                            m.Ps.shape[2])
    phi0 = (Jc.T @ lam.ravel()).reshape(2, -1)
    assert np.abs(phi - phi0).max() <= DELASSUS_SAME * np.abs(phi0).max()


def test_the_box_prefilter_keeps_every_point_within_reach():
    """``snap._relative``'s points near the plug's box are a superset of those whose exact
    distance (``union_sdf`` on every point) is below reach, and its coordinates are the plain
    NumPy ones bit for bit -- on plug positions along the insertion and beside it."""
    from sim_core.geometry.connector import union_sdf
    m = model()
    rng = np.random.default_rng(8)
    k = len(m.X_contact)
    left_out = []
    for z in np.linspace(6.5e-3, 13e-3, 14):
        q = rng.normal(0.0, 2e-6, (2, m.PsT.shape[0]))
        p = np.array([rng.normal(0.0, 2e-4), rng.normal(0.0, 1e-3), z])
        reach = m.band + rng.uniform(0.0, 5e-4)
        u = (q @ m.PsT).reshape(2, k, 3)
        rel, rel_xz = np.empty((2 * k, 3)), np.empty((2 * k, 2))
        near = snap._relative(u, m.X_contact, m.spacing, p, *m.plug_polygons, reach, rel, rel_xz)
        X = m.X_contact[None] + u
        ref_x = (np.array(snap.SIDES)[:, None] * (m.spacing + X[..., 0]) - p[0]).ravel()
        assert np.array_equal(rel[:, 0], ref_x) and np.array_equal(rel_xz[:, 0], ref_x)
        assert np.array_equal(rel[:, 1], (X[..., 1] - p[1]).ravel())
        assert np.array_equal(rel[:, 2], (X[..., 2] - p[2]).ravel()) and np.array_equal(rel_xz[:, 1], rel[:, 2])
        d, g = np.empty(2 * k), np.empty((2 * k, 2))
        union_sdf(rel_xz, *m.plug_polygons, d, g)
        within = np.flatnonzero(d < reach)
        assert np.isin(within, near).all()
        left_out.append(1.0 - len(near) / (2 * k))
    assert max(left_out) > 0.5                            # it does leave points out


def test_the_stage_laps_cover_the_step_and_change_nothing():
    """``snap.step`` with laps (``bench/snap.py``'s per-stage table) lands on the same state bit for
    bit as without, laps only ``snap.STAGES``, and through the click every stage is lapped."""
    from sim_core.step import Laps
    m = model()
    path = snap.descent(P0, SPEED, Z_END)
    plain = timed = snap.start(m, P0)
    seen = set()
    for _ in range(int(round(0.5 / m.T))):               # past the click (~0.47 s)
        p_set = path(plain.t + m.T)
        plain, _ = snap.step(m, plain, p_set)
        laps = Laps()
        timed, _ = snap.step(m, timed, p_set, laps)
        assert set(laps.times) <= set(snap.STAGES) and min(laps.times.values()) >= 0.0
        seen |= set(laps.times)
    assert seen == set(snap.STAGES)
    for f in ("q", "qd", "p", "V", "speed"):
        assert np.array_equal(getattr(plain, f), getattr(timed, f)), f


# relative to the largest displacement of the run: the carried surface (u + T u_hat a step)
# against the product at q, over the insertion and its hold (800 steps, the click's ringing
# included): round-off that barely grows (measured 4e-18 m of 0.83 mm, 5e-15; 2e-17 m after 10 s)
CARRIED_SURFACE_SAME = 1e-12


def test_the_carried_surface_is_the_modes_product_to_round_off():
    """``SnapState.u`` -- the surface points' displacements carried step to step instead of the
    product with the modes at every detection -- stays the product at the step's q."""
    m = model()
    diff, size = [], []

    def check(state, info):
        ref = snap.surface_u(m, state.q)
        diff.append(float(np.abs(state.u - ref).max()))
        size.append(float(np.abs(ref).max()))
    snap.run(m, P0, snap.descent(P0, SPEED, Z_END), DURATION, on_step=check)
    assert max(size) > 0.5 * INTERFERENCE                   # the hooks bent over the head
    assert max(diff) <= CARRIED_SURFACE_SAME * max(size), (max(diff), max(size))


# the "nodal" Model 1 (seed 003's form: node coordinates, products with the precalculated
# M_hat^-1) against the whole model in its modes, through first contact and 150 steps of the
# hooks bending (the stick-slip amplifies round-off after ~300 steps): the surface points
# relative to their largest displacement (measured 2.7e-7), the plug in m (measured 1.2e-11),
# the contact force in N (measured 2.2e-6): the dense inverse's rounding, carried through
# solves that stop at their 200-sweep cap with residuals up to 1e-3 N
NODAL_SURFACE_SAME = 1e-5
NODAL_PLUG_SAME = 1e-9
NODAL_FORCE_SAME = 1e-4


def test_the_nodal_model_1_snaps_as_the_modal_one():
    """``snap.build(model="nodal")`` -- the prongs in node coordinates with M_hat^-1 precalculated
    (``pmi.LinearPmi``), what the bench's "Model 1 nodal" times -- steps the insertion as the
    whole model in its modes does, and gathers the same Delassus operator."""
    pm = prong_mod.build(level="coarse")
    mw, mn = snap.build(pm, model="whole"), snap.build(pm, model="nodal")
    assert mn.modal.size == pm.whole.dof and np.allclose(mn.gram, mw.gram, rtol=0.0,
                                                         atol=1e-9 * np.abs(mw.gram).max())
    path = snap.descent(P0, SPEED, Z_END)
    sw, sn = snap.start(mw, P0), snap.start(mn, P0)
    touched, peak = 0, 0.0
    for _ in range(250):
        p_set = path(sw.t + mw.T)
        sw, iw = snap.step(mw, sw, p_set)
        sn, i_n = snap.step(mn, sn, p_set)
        touched += iw.n_contacts > 0
        peak = max(peak, float(iw.plug_force[2]))
        assert np.abs(sw.u - sn.u).max() <= NODAL_SURFACE_SAME * max(np.abs(sw.u).max(), 1e-12)
        assert np.abs(sw.p - sn.p).max() <= NODAL_PLUG_SAME
        assert np.abs(iw.plug_force - i_n.plug_force).max() <= NODAL_FORCE_SAME
    assert touched > 100 and peak > 2.0                   # well into the hooks
