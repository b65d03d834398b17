"""The compliant law in the step (``contact.compliant_stage``): friction with the normal force
held, the ball at rest, and the step length the policy picks (``dynamics.variable_step``)."""
import math

import numpy as np
import pytest

from sim_core import step as step_mod
from sim_core.contact import compliant
from sim_core.dynamics import variable_step
from sim_core.scenarios import bouncing_ball as bb
from sim_core.types import State

MU = 0.3
T = 0.01                   # s
REST = bb.MASS * bb.GRAVITY / bb.STIFFNESS   # m, the static penetration under gravity
SLIP_TOL = 1e-12           # m/s: the sliding ball's loss mu g T is exact (rounding only)


def resting(vx: float, mat):
    model, _ = bb.world(mat, T)
    V = np.zeros((1, 6))
    V[0, 0] = vx
    return model, State(0.0, np.array([[0.0, 0.0, bb.RADIUS - REST]]), np.eye(3)[None].copy(), V)


def test_sliding_ball_loses_mu_g_T():
    """A ball resting at its static penetration and sliding at 1 m/s: Coulomb friction with the
    normal force m g held takes mu g T of its speed per step, and spins it up by mu m g r T / I."""
    model, st = resting(1.0, bb.compliant_material(0.5, friction=MU))
    nxt, info = step_mod.step(model, st, bb._still(), T)
    assert nxt.V[0, 0] == pytest.approx(1.0 - MU * bb.GRAVITY * T, abs=SLIP_TOL)
    lever = bb.RADIUS - REST / 2                    # the contact point: midway through the overlap
    assert abs(nxt.V[0, 4]) == pytest.approx(MU * bb.MASS * bb.GRAVITY * lever * T / bb.INERTIA, rel=1e-9)
    assert nxt.p_w[0, 2] == pytest.approx(st.p_w[0, 2], abs=1e-15)   # still at rest vertically
    assert info.forces_w[0, 2] == pytest.approx(bb.MASS * bb.GRAVITY, rel=1e-9)


def test_ball_at_rest_stays():
    model, st = resting(0.0, bb.compliant_material(0.5))
    for _ in range(5):
        st, _ = step_mod.step(model, st, bb._still(), 0.128)
    assert st.p_w[0, 2] == pytest.approx(bb.RADIUS - REST, abs=1e-15)
    assert abs(st.V[0, 2]) < 1e-12


def test_policy_lands_on_touchdown_and_leaves_at_separation():
    """Free fall at dt_max, the step cut where the gap reaches zero (CCD, Fig. 2a), then to the
    deepest point and to the analytic separation time (Fig. 2b)."""
    e = 0.6
    model, st = bb.world(bb.compliant_material(e, band=bb.compliant_band(0.128)), 0.128)
    inp = bb._still()
    v_td = math.sqrt(2 * bb.GRAVITY * (bb.HEIGHT - bb.RADIUS))
    t_td = v_td / bb.GRAVITY
    t = 0.0
    while t < t_td - 0.128:
        assert variable_step.next_dt(model, st, inp, 0.128) == 0.128
        st, _ = step_mod.step(model, st, inp, 0.128)
        t += 0.128
    dt = variable_step.next_dt(model, st, inp, 0.128)
    assert st.t + dt == pytest.approx(t_td, rel=1e-12)
    st, _ = step_mod.step(model, st, inp, dt)
    kv = compliant.kelvin_voigt(bb.MASS, bb.STIFFNESS, e, bb.MASS * bb.GRAVITY, 0.0, -st.V[0, 2])
    dt1 = variable_step.next_dt(model, st, inp, 0.128)
    assert dt1 == pytest.approx(kv.max_penetration()[0], rel=1e-9)
    dt2 = variable_step.next_dt(model, step_mod.step(model, st, inp, dt1)[0], inp, 0.128)
    assert dt1 + dt2 == pytest.approx(kv.separation_time(), rel=1e-9)
    assert variable_step.next_dt(model, st, inp, 0.128, split=False) == pytest.approx(kv.separation_time(), rel=1e-12)


def test_two_contacts_hold_a_ball_in_a_groove():
    """Two compliant planes at +-30 deg: the Gauss-Seidel passes give each m g / (2 cos 30 deg)
    and the ball comes to rest at its static depth."""
    from sim_core.math.so3 import rot_axis_angle
    from sim_core.shapes import Plane, Sphere
    from sim_core.types import WORLD, ContactPair, Drive, Model, RigidBody
    c30 = math.cos(math.radians(30))
    mat = bb.compliant_material(0.5)
    shapes = (Plane(name="g1", body=WORLD, R_bs=rot_axis_angle([1, 0, 0], math.radians(30))),
              Plane(name="g2", body=WORLD, R_bs=rot_axis_angle([1, 0, 0], -math.radians(30))),
              Sphere(name="ball", body=0, radius=bb.RADIUS))
    model = Model(bodies=(RigidBody("ball", bb.MASS, bb.INERTIA * np.eye(3), np.zeros(3)),), shapes=shapes,
                  pairs=(ContactPair(2, 0, material=mat), ContactPair(2, 1, material=mat)),
                  contact=bb.ball_contact(), drive=Drive(np.zeros((1, 6)), np.zeros((1, 6))), dt=T,
                  gravity=np.array([0.0, 0.0, -bb.GRAVITY]))
    st = step_mod.start(model, State(0.0, np.array([[0.0, 0.0, bb.RADIUS / c30 + 0.01]]), np.eye(3)[None].copy(),
                                     np.zeros((1, 6))))
    for _ in range(100):
        st, info = step_mod.step(model, st, bb._still(), T)
    N = bb.MASS * bb.GRAVITY / (2 * c30)
    assert np.linalg.norm(info.forces_w, axis=1) == pytest.approx([N, N], rel=1e-9)
    assert st.p_w[0, 2] == pytest.approx((bb.RADIUS - N / bb.STIFFNESS) / c30, abs=1e-12)
    assert np.abs(st.V[0]).max() < 1e-9


def test_two_laws_in_one_world_each_as_alone():
    """A compliant ball and a rigid ball side by side over one ground: each moves as in its own
    world (the compliant stage takes its contacts, the configured solver the other's)."""
    from sim_core.shapes import Plane, Sphere
    from sim_core.types import WORLD, ContactPair, Drive, Material, Model, RigidBody
    soft, hard = bb.compliant_material(0.6), Material(0.0, 0.2, bb.BAND, "complementarity")
    body = RigidBody("ball", bb.MASS, bb.INERTIA * np.eye(3), np.zeros(3))
    shapes = (Plane(name="ground", body=WORLD), Sphere(name="a", body=0, radius=bb.RADIUS),
              Sphere(name="b", body=1, radius=bb.RADIUS))
    g = np.array([0.0, 0.0, -bb.GRAVITY])
    both = Model(bodies=(body, body), shapes=shapes, pairs=(ContactPair(1, 0, material=soft),
                                                            ContactPair(2, 0, material=hard)),
                 contact=bb.ball_contact(), drive=Drive(np.zeros((2, 6)), np.zeros((2, 6))), dt=T, gravity=g)
    p0 = np.array([[0.0, 0.0, 0.3], [1.0, 0.0, 0.3]])
    st2 = step_mod.start(both, State(0.0, p0, np.tile(np.eye(3), (2, 1, 1)), np.zeros((2, 6))))
    alone = []
    for mat in (soft, hard):
        m1, _ = bb.world(mat, T)
        alone.append((m1, State(0.0, np.array([[0.0, 0.0, 0.3]]), np.eye(3)[None].copy(), np.zeros((1, 6)))))
    inp2 = bb._still(2)
    for _ in range(40):
        st2, _ = step_mod.step(both, st2, inp2, T)
        alone = [(m, step_mod.step(m, s, bb._still(), T)[0]) for m, s in alone]
    assert alone[0][1].V[0, 2] != alone[1][1].V[0, 2]        # both landed, each by its own law
    for k, (_, s) in enumerate(alone):
        assert st2.p_w[k, 2] == pytest.approx(s.p_w[0, 2], abs=1e-12)
        assert st2.V[k, 2] == pytest.approx(s.V[0, 2], abs=1e-12)
