"""Body-body pairs through ``step.step``: two free bodies (no gravity, no drive, no arm) that
collide keep their total linear and angular momentum (``contact.body_body``: its derivation is
checked line by line on one body here), their contacts do no positive work, and a body's
contact nodes meet a signed distance carried by another moving body as they would meet it
fixed where that body is."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sim_core import config as config_mod
from sim_core import shapes
from sim_core import step as step_mod
from sim_core.collision import detectors as collision
from sim_core.contact import body_body, frames
from sim_core.dynamics import pmi
from sim_core.math.so3 import rot_axis_angle
from sim_core.paths import scenario_path
from sim_core.scenarios import scenario
from sim_core.shapes import SDF, Capsule, Nodes, Sphere
from sim_core.types import WORLD, BodyPose, ContactPair, Drive, Inputs, Model, RigidBody, State

MOMENTUM_TOL = 1e-9     # relative: the bound (contact impulses are equal and opposite at one point)
ROUNDING_TOL = 1e-13    # relative: one step's identities in double precision (measured <= 2e-14 over 60 steps)
ENERGY_TOL = 1e-14      # J: PMI's energy balance per step at ~1 J (measured <= 9e-16)
WORK_SLACK = 1e-12      # J: the contacts' summed work may exceed zero by rounding only (solvers.PUSH_OUT_SLACK)
DETECT_TOL = 1e-12      # m: the same contacts seen from a rigidly moved frame (rounding of ~0.1 m coordinates)
T = 0.01                # s, the scenarios' step
STEPS = 60              # 0.6 s: approach, contact, separation


def _params(**kw):
    c = dict(config_mod.load(scenario_path("peg_in_hole"))["contact"])   # the shipped [contact] defaults
    c["clustering"] = "none"
    return replace(scenario.contact_params(c), **kw)


def _free_model(bodies, shape_list, pairs, **kw) -> Model:
    B = len(bodies)
    return Model(bodies=tuple(bodies), shapes=tuple(shape_list), pairs=tuple(pairs), contact=_params(**kw),
                 drive=Drive(np.zeros((B, 6)), np.zeros((B, 6))), dt=T)          # K = D = 0: free


def _still(st: State) -> Inputs:
    B = st.p_w.shape[0]
    return Inputs(st.p_w, st.R_wb, np.zeros((B, 3)), np.zeros((B, 3)))          # ignored: K = D = 0


def _momentum(model: Model, st: State) -> tuple[np.ndarray, np.ndarray]:
    """Total linear momentum (kg m/s) and angular momentum about the world origin (kg m^2/s)."""
    P, L = np.zeros(3), np.zeros(3)
    for i, b in enumerate(model.bodies):
        P += b.mass * st.V[i, :3]
        L += np.cross(st.p_w[i], b.mass * st.V[i, :3]) + st.R_wb[i] @ (b.inertia_b @ st.V[i, 3:])
    return P, L


def _run(model: Model, st: State):
    """(momenta before, after, contact steps, final state)."""
    before = _momentum(model, st)
    touching = 0
    for _ in range(STEPS):
        st, info = step_mod.step(model, st, _still(st), T)
        touching += len(info.contacts) > 0
        if len(info.contacts):
            assert set(info.contacts.bodies()) | set(info.contacts.others()) <= {0, 1}
    return before, _momentum(model, st), touching, st


def _ball_and_link(spin: float = 0.0, **kw):
    """A 1 kg ball thrown spinning at a 2.5 kg capsule link, 4 cm off its centre line; the pair
    given as (link, ball): the detector table has (sphere, capsule), so it is swapped.  `spin`
    rad/s: the link spins that much faster about its body x and half that about z (T |w| ~ 0.2
    at 20); `kw`: contact settings (friction)."""
    m1, r1 = 1.0, 0.05
    m2, r2, h2 = 2.5, 0.03, 0.08
    J1 = 0.4 * m1 * r1 ** 2 * np.eye(3)
    J2 = np.diag([m2 * (3 * r2 ** 2 + 4 * h2 ** 2) / 12] * 2 + [0.5 * m2 * r2 ** 2])
    bodies = [RigidBody("ball", m1, J1, np.zeros(3)), RigidBody("link", m2, J2, np.zeros(3))]
    link = Capsule(name="link", body=1, radius=r2, half_length=h2, R_bs=rot_axis_angle([1.0, 0.0, 0.0], 0.4))
    model = _free_model(bodies, [Sphere(name="ball", body=0, radius=r1), link], [ContactPair(a=1, b=0)], **kw)
    p = np.array([[-0.3, 0.04, 0.01], [0.1, 0.0, 0.0]])
    V = np.array([[1.0, 0.0, 0.0, 0.3, -0.2, 0.5], [-0.2, 0.05, 0.0, spin, 0.1, 0.5 * spin]])
    return model, State(0.0, p, np.stack([np.eye(3)] * 2), V)


def test_two_free_bodies_keep_their_linear_momentum_through_the_contact():
    model, st = _ball_and_link()
    (P0, _), (P1, _), touching, end = _run(model, st)
    assert touching >= 1
    assert np.abs(end.V[0, :3] - st.V[0, :3]).max() > 0.1          # the contact turned the ball
    assert np.linalg.norm(P1 - P0) <= MOMENTUM_TOL * np.linalg.norm(P0), (P0, P1)


@pytest.mark.parametrize("spin", [0.0, 20.0])
def test_two_free_bodies_keep_their_angular_momentum_through_the_contact(spin):
    """Measured before ``contact.body_body``: 1.7e-2 relative (the lever from the start-of-step
    COM); with it 5e-16 (spin 0) and 2e-14 (spin 20)."""
    model, st = _ball_and_link(spin)
    (P0, L0), (P1, L1), touching, end = _run(model, st)
    assert touching >= 1
    assert np.abs(end.V[1, 3:] - st.V[1, 3:]).max() > 0.1          # the off-centre hit turned the link
    assert np.linalg.norm(L1 - L0) <= MOMENTUM_TOL * np.linalg.norm(L0), (L0, L1)
    assert np.linalg.norm(P1 - P0) <= MOMENTUM_TOL * np.linalg.norm(P0), (P0, P1)


def _energy(model: Model, st: State) -> float:
    return sum(pmi.kinetic_energy(b.mass, b.inertia_b, st.V[i]) for i, b in enumerate(model.bodies))


@pytest.mark.parametrize("friction", [0.0, 0.3])
def test_the_momentum_keeping_rows_keep_the_energy_balance(friction):
    """PMI's balance E+ - E = T lambda^T G (V + V+)/2 holds step by step with the rows the
    solve used (the contact wrench G^T lambda the step reports), and the contacts' work summed
    from the start never exceeds zero: they take energy, never give it (``solvers.push_out``)."""
    model, st = _ball_and_link(20.0, friction=friction)
    E0, work, worst = _energy(model, st), 0.0, 0.0
    for _ in range(STEPS):
        nxt, info = step_mod.step(model, st, _still(st), T)
        W = info.contact_work          # 0.5 T sum(contact_wrench (V + V+)), per half when the step split
        worst = max(worst, abs(_energy(model, nxt) - _energy(model, st) - W))
        work += W
        assert work <= WORK_SLACK, work
        st = nxt
    assert worst <= ENERGY_TOL, worst
    assert _energy(model, st) < E0 - 0.1                           # the collision took energy (inelastic)


def test_the_coriolis_point_is_a_converged_fixed_point(monkeypatch):
    """``body_body.solve`` ends each contact step at the Coriolis point of its own solution: the
    held-force passes contract by about T |w| / 2 and end below ``FIXED_POINT_TOL``.  Stopped
    after the first solve (w_bar of the contact-free motion, as ``systems.rigid.blocks`` has
    it), the same rows lose the momentum by far more than the bound."""
    traces, solve = [], body_body.solve

    def spy(*a, **kw):
        traces.append([])
        return solve(*a, trace=traces[-1], **kw)
    monkeypatch.setattr(body_body, "solve", spy)
    model, st = _ball_and_link(20.0)
    w_max = np.linalg.norm(st.V[:, 3:], axis=1).max()
    (_, L0), (_, L1), _, _ = _run(model, st)
    held = [[c for phase, c in tr if phase == "hold"] for tr in traces]
    held = [h for h in held if len(h) >= 2]
    assert held                                                    # the solve's answer moved w_bar
    for h in held:
        assert h[-1] <= body_body.FIXED_POINT_TOL, h
        assert (h[-1] / h[0]) ** (1.0 / (len(h) - 1)) <= T * w_max, h   # ~T |w| / 2 per pass
    assert np.linalg.norm(L1 - L0) <= MOMENTUM_TOL * np.linalg.norm(L0)
    monkeypatch.setattr(body_body, "RESOLVE_MAX", 1)
    monkeypatch.setattr(body_body, "FIXED_POINT_MAX", 0)
    (_, L0), (_, L1), _, _ = _run(model, st)
    assert np.linalg.norm(L1 - L0) > 1e3 * MOMENTUM_TOL * np.linalg.norm(L0)


def test_the_lever_rows_are_the_ordinary_rows_at_a_zero_step():
    """``frames.lever_rows`` with T = 0 (p~ = p, no Coriolis correction) are
    ``frames.contact_rows``: the same frames, the same lever, the same body torque map."""
    rng = np.random.default_rng(3)
    m = 7
    x, n = rng.normal(size=(m, 3)), rng.normal(size=(m, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    body, other = rng.integers(0, 3, m), np.array([1, 2, 0, -1, 2, -1, 0])
    other = np.where(other == body, -1, other)
    p = rng.normal(size=(3, 3))
    R = np.stack([rot_axis_angle(rng.normal(size=3), a) for a in (0.3, 1.2, 2.5)])
    want = frames.contact_rows(x, n, body, other, p, R)
    got = frames.lever_rows(x, n, body, other, p, R, rng.normal(size=(3, 3)), 0.0)
    for a, b in zip(got, want):
        assert np.abs(a - b).max() <= 1e-15


def test_one_body_gains_exactly_the_impulses_moment_about_the_origin():
    """The derivation of ``contact.body_body`` on one PMI body (lines 1-3): a force f at the
    world point x through the lever rows, at the Coriolis point of the resulting motion, changes
    its world momentum by exactly T f and its angular momentum about the origin by T x x f."""
    rng = np.random.default_rng(7)
    mass, J = 1.7, np.diag([0.02, 0.05, 0.06])
    p, R = rng.normal(size=3), rot_axis_angle([0.3, -1.0, 0.4], 0.9)
    V = np.concatenate([rng.normal(size=3), 8.0 * rng.normal(size=3)])   # T |w| ~ 0.1
    x, n, lam = p + 0.1 * rng.normal(size=3), rng.normal(size=3), np.array([30.0, -4.0, 7.0])
    n /= np.linalg.norm(n)
    none = np.full(1, -1)
    w_bar = V[3:].copy()
    for _ in range(60):
        A, b = pmi.system(mass, J, V, T, np.zeros(6), np.zeros((6, 6)), w_bar)
        Gb, _, Cf = frames.lever_rows(x[None], n[None], np.zeros(1, np.int64), none, (p + 0.5 * T * V[:3])[None],
                                      R[None], w_bar[None], T)
        Vn = np.linalg.solve(A, b + Gb[0].T @ lam)
        wm = 0.5 * (V[3:] + Vn[3:])
        w_bar = pmi.tan_ratio(0.5 * T * np.linalg.norm(wm)) * wm
    p1, R1 = pmi.advance(p, R, V, Vn, T)
    f = Cf[0] @ lam
    P = (mass * V[:3], mass * Vn[:3])
    L = (np.cross(p, mass * V[:3]) + R @ J @ V[3:], np.cross(p1, mass * Vn[:3]) + R1 @ J @ Vn[3:])
    assert np.linalg.norm(P[1] - P[0] - T * f) <= ROUNDING_TOL * np.linalg.norm(T * f)
    assert np.linalg.norm(L[1] - L[0] - T * np.cross(x, f)) <= ROUNDING_TOL * np.linalg.norm(L[0])


# --- a body's nodes against another moving body's signed distance -----------------------------
class _BallSDF:
    """A solid ball of radius R about the shape origin (signed distance, unit gradient)."""

    def __init__(self, R: float):
        self.R = R

    def query(self, p, band=None):
        r = np.linalg.norm(p, axis=1)
        return r - self.R, p / np.maximum(r, 1e-300)[:, None]


def _cube_nodes(a: float) -> np.ndarray:
    g = np.linspace(-a / 2, a / 2, 5)
    X = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    return X[np.abs(X).max(axis=1) >= a / 2 - 1e-15]            # the surface grid: 98 nodes


def _part_and_ball(R_ball: float = 0.05):
    part = Nodes(name="part", body=0, nodes_b=_cube_nodes(0.02))
    ball = SDF(name="ball", body=1, sdf=_BallSDF(R_ball), bounds_s=(R_ball, -R_ball, R_ball),
               R_bs=rot_axis_angle([0.0, 1.0, 1.0], 0.7), p_bs=np.array([0.002, -0.001, 0.003]))
    a = 0.02
    bodies = [RigidBody("part", 0.1, 0.1 * a * a / 6 * np.eye(3), np.zeros(3)),
              RigidBody("ball", 1.0, 0.4 * R_ball ** 2 * np.eye(3), np.zeros(3))]
    return _free_model(bodies, [part, ball], [ContactPair(a=0, b=1)]), part, ball


def _pose(R, p, V=None):
    return BodyPose(0.0, np.asarray(p, float), np.asarray(R, float), np.zeros(6) if V is None else V)


def test_nodes_against_a_moving_bodys_sdf_are_those_against_it_fixed_there():
    model, part, ball = _part_and_ball()
    Ra, pa = rot_axis_angle([1.0, 2.0, 0.5], 0.3), np.array([0.06, 0.01, 0.02])
    Rb, pb = rot_axis_angle([0.2, -1.0, 0.3], 1.1), np.array([0.004, -0.002, 0.001])
    P = model.contact
    det = collision.detect(part, ball, P, _pose(Ra, pa), _pose(Rb, pb), T).nodes
    assert len(det) > 0 and det.d.min() < 0.0                     # the part's corner is in the ball
    # the same ball fixed in the world where body 1 is: bitwise the same contacts
    fixed = replace(ball, body=WORLD, R_bs=Rb @ ball.R_bs, p_bs=pb + Rb @ ball.p_bs)
    same = collision.detect(part, fixed, P, _pose(Ra, pa), _pose(np.eye(3), np.zeros(3)), T).nodes
    for f in ("x_w", "n_w", "d", "idx"):
        assert np.array_equal(getattr(det, f), getattr(same, f)), f
    # the exact distances of the nodes to the ball
    c = pb + Rb @ ball.p_bs
    assert np.abs(det.d - (np.linalg.norm(det.x_w - c, axis=1) - 0.05)).max() <= DETECT_TOL
    # both bodies moved rigidly together: the same contacts, moved
    G, g = rot_axis_angle([0.3, 0.3, 1.0], 2.0), np.array([0.5, -1.0, 2.0])
    moved = collision.detect(part, ball, P, _pose(G @ Ra, G @ pa + g), _pose(G @ Rb, G @ pb + g), T).nodes
    assert np.array_equal(moved.idx, det.idx)
    assert np.abs(moved.d - det.d).max() <= DETECT_TOL
    assert np.abs(moved.x_w - (det.x_w @ G.T + g)).max() <= DETECT_TOL
    assert np.abs(moved.n_w - det.n_w @ G.T).max() <= DETECT_TOL


def test_a_gap_closes_only_by_the_relative_motion():
    """Both bodies flying together at 1 m/s: no node approaches the ball, nothing is predicted
    (the gaps stay the present ones), while the speculative reach grows with both speeds."""
    model, part, ball = _part_and_ball()
    P = replace(model.contact, band=0.02)
    Ra, pa = np.eye(3), np.array([0.068, 0.0, 0.0])                 # the part's face 8 mm off the ball
    v = np.array([-1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    together = collision.detect(part, ball, P, _pose(Ra, pa, v), _pose(np.eye(3), np.zeros(3), v), T).nodes
    assert len(together) > 0
    assert np.abs(together.d - (np.linalg.norm(together.x_w - ball.p_bs, axis=1) - 0.05)).max() <= DETECT_TOL
    rest = collision.detect(part, ball, P, _pose(Ra, pa), _pose(np.eye(3), np.zeros(3)), T).nodes
    assert len(together) > len(rest)                               # the reach counts both bodies' speeds


def test_a_part_thrown_at_a_free_ball_keeps_the_momentum_and_stays_out():
    model, part, ball = _part_and_ball()
    p = np.array([[0.12, 0.012, -0.006], [0.0, 0.0, 0.0]])
    V = np.array([[-1.5, 0.0, 0.1, 0.0, 2.0, 1.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    st = State(0.0, p, np.stack([np.eye(3)] * 2), V)
    (P0, _), (P1, _), touching, end = _run(model, st)
    assert touching >= 1 and end.V[1, 0] < -0.05                   # the ball was pushed
    assert np.linalg.norm(P1 - P0) <= MOMENTUM_TOL * np.linalg.norm(P0), (P0, P1)
    L0, L1 = _momentum(model, st)[1], _momentum(model, end)[1]     # 98 every-node contacts: the held
    assert np.linalg.norm(L1 - L0) <= MOMENTUM_TOL * np.linalg.norm(L0), (L0, L1)   # forces' fixed point
    # the nodes end outside the ball (no more than the contact band inside)
    x = end.p_w[0] + part.nodes_b @ end.R_wb[0].T
    c = end.p_w[1] + end.R_wb[1] @ ball.p_bs
    assert (np.linalg.norm(x - c, axis=1) - 0.05).min() > -model.contact.band


def test_a_pair_on_one_body_is_refused():
    model, part, ball = _part_and_ball()
    bad = replace(model, shapes=(part, replace(ball, body=0)))
    with pytest.raises(ValueError, match=r"pairs\[0\]: shapes 0 and 1 are both on body 0"):
        shapes.check(bad, "test")
