"""Long steps: ``dt`` up to 1 s (``config.MAX_DT``; seed 001's Table 1 steps at 128 ms and
more) is accepted by the config and stepped by the one ``step``.

The law: a free body under gravity g from p0 with velocity v0.  PMI's midpoint rule
(seed 000 eq. (1)) with a constant force gives v+ = v + T g and p+ = p + T (v + v+)/2, which
is the closed form p(t) = p0 + v0 t + g t^2/2 exactly, whatever T; torque-free, the body keeps
its world angular momentum R J w and its rotational energy (seed 000 eq. (1) with the
Coriolis point, ``dynamics/pmi.py``).
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from sim_core import config as config_mod
from sim_core import step as step_mod
from sim_core.paths import scenario_path
from sim_core.scenarios import scenario
from sim_core.types import Drive, Inputs, Model, RigidBody, State

# The closed form holds to rounding: positions of ~500 m after 10 steps of 1 s carry ~1e-13 m
# of rounding each step; 1e-12 relative to the travelled distance leaves room for that.
FALL_REL_TOL = 1e-12
# World angular momentum and rotational energy: the Coriolis point is iterated to 1e-13
# relative (pmi.CORIOLIS_TOL); over 100 steps 1e-12 relative is that with margin.
SPIN_REL_TOL = 1e-12
G = np.array([0.0, 0.0, -9.81])        # m/s^2
STEPS = (0.128, 1.0)                   # s: seed 001's Table 1 step, and the config's largest


def _free_body_world(dt: float) -> Model:
    c = scenario.contact_params(config_mod.load(scenario_path("peg_in_hole"))["contact"])
    body = RigidBody(name="free", mass=2.0, inertia_b=np.diag([0.01, 0.02, 0.03]),
                     com_part=np.zeros(3))
    return Model(bodies=(body,), shapes=(), pairs=(), contact=c, drive=Drive(np.zeros((1, 6)), np.zeros((1, 6))),
                 dt=dt, gravity=G)


def _rest() -> Inputs:
    return Inputs(np.zeros((1, 3)), np.eye(3)[None], np.zeros((1, 3)), np.zeros((1, 3)))


@pytest.mark.parametrize("dt", STEPS)
def test_a_long_step_follows_the_free_fall_closed_form(dt):
    model = _free_body_world(dt)
    v0 = np.array([0.1, -0.2, 0.5])
    # spin: T |w| = 0.22 at 1 s, where the Coriolis point converges (dynamics/pmi.py)
    V0 = np.concatenate([v0, [0.03, 0.1, -0.2]])[None]
    st = step_mod.start(model, State(0.0, np.zeros((1, 3)), np.eye(3)[None], V0))
    J = model.bodies[0].inertia_b
    L0, E0 = st.R_wb[0] @ J @ st.V[0, 3:], 0.5 * st.V[0, 3:] @ J @ st.V[0, 3:]
    for _ in range(10):
        st, _ = step_mod.step(model, st, _rest())          # the model's dt: no argument needed
    t = 10 * dt
    assert st.t == pytest.approx(t, rel=1e-15)
    want = v0 * t + 0.5 * G * t * t
    assert np.abs(st.p_w[0] - want).max() <= FALL_REL_TOL * np.linalg.norm(want), (st.p_w[0], want)
    assert np.abs(st.V[0, :3] - (v0 + G * t)).max() <= FALL_REL_TOL * np.linalg.norm(v0 + G * t)
    for _ in range(90):
        st, _ = step_mod.step(model, st, _rest(), dt)
    L, E = st.R_wb[0] @ J @ st.V[0, 3:], 0.5 * st.V[0, 3:] @ J @ st.V[0, 3:]
    assert np.abs(L - L0).max() <= SPIN_REL_TOL * np.linalg.norm(L0)
    assert abs(E - E0) <= SPIN_REL_TOL * E0


@pytest.mark.parametrize("dt, ok", [(0.128, True), (config_mod.MAX_DT, True), (1.5, False)])
def test_the_config_takes_a_step_up_to_one_second(tmp_path, dt, ok):
    text = scenario_path("peg_in_hole").read_text()
    p = tmp_path / "long.toml"
    p.write_text(re.sub(r"(?m)^dt = .*$", f"dt = {dt!r}", text, count=1))
    if ok:
        assert config_mod.load(p)["scenario"]["dt"] == dt
    else:
        with pytest.raises(config_mod.ConfigError, match="scenario.dt"):
            config_mod.load(p)
