"""The impact refinement (``contact.impacts``): a step in which a rigid contact arrives fast
is taken again as halves, so the impact's overshoot shrinks with the step that meets it.

The closed form: the solvers stop a contact that reaches the surface inside the step
(gap d, normal speed u, d < T u / 2) with end velocity 0, and PMI moves it by T u / 2 over
the step, so it ends T u / 2 - d deep.  Bisecting L levels meets the impact with a step of
T / 2^L: at most T u / 2^(L+1) deep.  The test drops the peg, free (no arm, no drive, no
gravity: the scenario's world has none), flat onto the hole's top face at 0.1 m/s from
0.1 mm above it: one 10 ms step ends 0.4 mm deep, three levels at most 62.5 um.
"""
import dataclasses

import numpy as np
import pytest

from sim_core import config
from sim_core import step as step_mod
from sim_core.paths import scenario_path
from sim_core.scenarios import scenario

SPEED = 0.1                # m/s, straight down
GAP = 1e-4                 # m, the peg's lower face over the hole's top face at the start
CLOSED_FORM_REL = 0.05     # the unsplit step's depth against T u / 2 - d (the face's nodes are
                           # on one plane; what is left is the contact solve's tolerance)
STEPS = 5


def drop(splits: int):
    """(deepest penetration m, kinetic energy J before and after, contact work J, substeps
    of each step, the final state) of the peg dropped onto the face (module docstring)."""
    cfg = config.load(scenario_path("peg_in_hole"))
    cfg["arm"]["robot"] = "off"
    for k in ("stiffness_linear", "damping_linear", "stiffness_angular", "damping_angular"):
        cfg["drive"][k] = [0.0, 0.0, 0.0]
    cfg["start"]["position"] = [0.045, 0.0, 0.040 + GAP]       # over the face (bore radius 25 mm)
    cfg["start"]["tilt_deg"] = [0.0, 0.0]
    cfg["contact"]["impact_splits"] = splits
    model, st = scenario.build(cfg)
    st = dataclasses.replace(st, V=np.array([[0.0, 0.0, -SPEED, 0.0, 0.0, 0.0]]))
    body = model.bodies[0]

    def ke(s):
        V = s.V[0]
        return 0.5 * body.mass * V[:3] @ V[:3] + 0.5 * V[3:] @ body.inertia_b @ V[3:]

    scen = scenario.record(cfg)
    e0, work, subs, deepest = ke(st), 0.0, [], 0.0
    for _ in range(STEPS):
        st, info = step_mod.step(model, st, scenario.inputs_at(scen, st.t))   # the drive is off
        work += info.contact_work
        subs.append(info.substeps)
        deepest = max(deepest, 0.040 - st.p_w[0, 2])      # the lower face below the top face
    return deepest, e0, ke(st), work, subs, st


def test_an_unsplit_step_overshoots_by_the_closed_form():
    T = 0.01
    deepest, e0, e1, work, subs, _ = drop(0)
    assert subs == [1] * STEPS
    assert deepest == pytest.approx(T * SPEED / 2 - GAP, rel=CLOSED_FORM_REL)
    assert work <= 0.0 and e1 <= e0                      # stopped, not bounced: no energy given


@pytest.mark.parametrize("levels", [1, 2, 3])
def test_halving_meets_the_impact_with_a_step_of_T_over_2_to_the_L(levels):
    T = 0.01
    deepest, e0, e1, work, subs, st = drop(levels)
    assert subs[0] > 1                                   # the step that meets the face split
    assert deepest <= T * SPEED / 2 ** (levels + 1) * (1 + CLOSED_FORM_REL)
    assert work <= 0.0 and e1 <= e0
    assert st.t == pytest.approx(STEPS * T, abs=1e-15)   # the split steps end on the step's grid


def test_a_split_run_repeats_bitwise():
    a, b = drop(3)[-1], drop(3)[-1]
    assert np.array_equal(a.p_w, b.p_w) and np.array_equal(a.V, b.V) and np.array_equal(a.R_wb, b.R_wb)
