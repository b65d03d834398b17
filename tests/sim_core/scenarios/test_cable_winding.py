"""The cable_winding scenario (seed 002 Sec. V-B, ``scenarios.cable_winding``) with its shipped
config: the settle holds the pre-wound coil on the drum at the tension the stretch asks for,
and the whole winding (slow) lays one more turn at the set pitch with the tension kept."""
import math
from dataclasses import replace

import numpy as np
import pytest

from sim_core import step as step_mod
from sim_core.scenarios import cable_winding, scenario

# m: in the settle (the first 0.3 s, the arm holding still) the start's kick presses the coil
# 88 um into the drum at the fourth step (measured); from the tenth step on it sits at 24 um
SETTLE_PENETRATION = 0.15e-3
SETTLED_PENETRATION = 40e-6
# relative: at the settle's end the tip force is the stretch's E A eps within this (measured 0.48
# .. 0.52 N of 0.558 while the tension loop closes the start's 0.34 N gap, time constant ~0.1 s)
SETTLE_TENSION = 0.2
# rad/s: after the start's first steps no link turns faster than this (measured ~6 rad/s at
# 0.2 s; the start, the free span relaxed to statics with the coil held, kicks the departing
# link to 33 rad/s in the first step)
SETTLE_RATE = 20.0
# the whole winding (measured, 40 links: pitch 7.78 mm of 8, tip force 0.56 N of 0.558, max
# penetration 102 um over 1100 steps)
RUN_TENSION = 0.1          # relative, the tip force at the end against E A eps
RUN_PENETRATION = 0.2e-3   # m, the largest penetration of the run
# m: Solver 3 (turns not solved with the contacts) in the settle, from its tenth step on.  With
# the pgs_subspace kernel it ends on the island's normal forces solved at once and holds the coil
# (measured 0.13 mm: the start's kick presses it 0.60 mm in at the third step, and the subsystem
# solvers have no push-out budget); sweeping alone it sinks on (measured 2.9 -> 3.4 mm)
SOLVER_3_HELD = 0.2e-3
SOLVER_3_SUNK = 1.0e-3


def _loaded():
    model, state, cfg = scenario.load("cable_winding")
    return model, state, cfg, scenario.record(cfg)


def test_the_settle_holds_the_coil_at_its_tension():
    model, state, cfg, scen = _loaded()
    loop = scen.control.start()
    pen, rate = [], []
    for k in range(int(round(cfg["winding"]["settle"] / model.dt))):
        state, info = step_mod.step(model, state, loop.inputs(model, state, model.dt))
        loop.measure(state, info)
        pen.append(info.max_penetration)
        if k >= 10:
            rate.append(float(np.abs(state.V[:, 3:]).max()))
    assert max(pen) <= SETTLE_PENETRATION and max(pen[10:]) <= SETTLED_PENETRATION, pen
    assert max(rate) <= SETTLE_RATE
    tip = float(np.linalg.norm(loop.tip_force[-1]))
    assert abs(tip - loop.spec.tension) <= SETTLE_TENSION * loop.spec.tension, (tip, loop.spec.tension)
    assert cable_winding.wound(loop.spec.w, state.p_w).sum() >= 20       # 1.5 turns of 1 cm links


def _settle_with(island_solver: str, kernel: str):
    model, state, cfg, scen = _loaded()
    model = replace(model, contact=replace(model.contact, island_solver=island_solver, solver=kernel, turn_passes=0))
    loop = scen.control.start()
    pen = []
    for _ in range(int(round(cfg["winding"]["settle"] / model.dt))):
        state, info = step_mod.step(model, state, loop.inputs(model, state, model.dt))
        loop.measure(state, info)
        pen.append(info.max_penetration)
    return pen, float(np.linalg.norm(loop.tip_force[-1])), loop.spec.tension


def test_solver_3_holds_the_coil_with_the_subspace_kernel():
    """Solver 3 sweeping its subsystems lets the wound coil sink into the drum step after step
    (its post-regulation freezes the forces, and no sweep count holds a coil under tension:
    docs/cable.md); with the kernel pgs_subspace it ends on the island's normal forces solved at
    once, across the cuts (``island_solvers._coupled_normals``), and holds it at its tension."""
    pen, tip, tension = _settle_with("subsystems_regulated", "pgs_subspace")
    assert max(pen[10:]) <= SOLVER_3_HELD, pen
    assert abs(tip - tension) <= SETTLE_TENSION * tension, (tip, tension)
    sunk, _, _ = _settle_with("subsystems_regulated", "pgs")
    assert sunk[-1] >= SOLVER_3_SUNK, sunk


def test_the_tension_the_stretch_asks_for_is_e_a_eps():
    _, _, cfg, scen = _loaded()
    c, w = cfg["cable"], cfg["winding"]
    E_A = c["E"] * math.pi * c["radius"] ** 2
    assert scen.control.tension == pytest.approx(E_A * w["stretch"], rel=1e-12)


@pytest.mark.slow
def test_the_winding_lays_a_turn_at_the_pitch_with_the_tension_kept():
    """The shipped run (11 s, ~40 s here): the task figure, the tension, the penetration."""
    model, state, cfg, scen = _loaded()
    res = scenario.simulate(model, scen, state)
    fig = scenario.task_figures(res)
    assert fig["task_target_met"], fig
    assert fig["wrap_turns"] == pytest.approx(2.5)
    assert abs(fig["tip_force_N"] - res.control.spec.tension) <= RUN_TENSION * res.control.spec.tension, fig
    assert max(res.max_pen) <= RUN_PENETRATION
