"""One world of bodies and contact pairs: two pegs in two holes side by side, stepped
together, each follow their single-pair runs (the core has no notion of "the" part), also
when the two pairs are of different materials."""
from __future__ import annotations

import numpy as np
import pytest

from sim_core import config as config_mod
from sim_core import step as step_mod
from sim_core.paths import scenario_path
from sim_core.scenarios import scenario

TRAJ_TOL = 1e-9      # m: the bound; the pairs do not touch, each island is solved alone
STEPS = 150          # 1.5 s at 10 ms: both pegs land on their chamfers and enter their bores
OFFSET = np.array([0.2, 0.05, 0.0])   # m: the second hole's origin (the holes are 100 mm wide)
MU_APART = 1e-6      # m: how far the frictionless and the mu = 0.3 single runs must part at least
                     # (the same start: only the material differs; measured ~1e-4 m)


def _cfg(seed: int) -> dict:
    cfg = scenario.perturbed(config_mod.load(scenario_path("peg_in_hole")), seed)
    cfg["arm"]["robot"] = "off"
    # the property is the fixed step's: the impact refinement (contact.impacts) halves the whole
    # world's step, so a peg whose neighbour meets an impact is stepped finer than alone
    cfg["contact"]["impact_splits"] = 0
    return cfg


def _single(cfg: dict) -> np.ndarray:
    model, state = scenario.build(cfg)
    scen = scenario.record(cfg)
    out = []
    for _ in range(STEPS):
        state, _ = step_mod.step(model, state, scenario.inputs_at(scen, state.t))
        out.append(state.p_w[0].copy())
    return np.array(out)


def _scene_run(cfgs: list[dict]):
    sc = scenario.scene(cfgs, [np.zeros(3), OFFSET])
    st, both, contacts = sc.start, [], []
    for _ in range(STEPS):
        st, info = step_mod.step(sc.model, st, scenario.scene_inputs(sc, st.t))
        both.append(st.p_w.copy())
        contacts.append(np.bincount(info.contacts.bodies(), minlength=2))
    return np.array(both), [_single(c) for c in cfgs], np.array(contacts), sc


@pytest.fixture(scope="module")
def runs():
    return _scene_run([_cfg(0), _cfg(2)])          # two different starts: offset, tilt


def _frictionless(cfg: dict) -> dict:
    """The config with its pair made frictionless the way a scenario file does it: a
    [materials.NAME] table and a [pairs] entry (the other keys from [contact])."""
    return config_mod.validate({**cfg, "materials": {"frictionless": {"friction": 0.0}},
                                "pairs": {"peg/hole": "frictionless"}}, "<test>")


def test_two_materials_in_one_world_follow_their_single_runs():
    """The issue's must-show: two pegs in two holes, one pair with mu = 0 (a [materials]
    table) and one with mu = 0.3 (its [contact]), from the same start: each follows its
    single run (a world of that peg and that material) to 1e-9, and the two runs part
    (the materials reached the solve, each its own pair's)."""
    rough = _cfg(2)
    rough["contact"]["friction"] = 0.3
    both, singles, contacts, sc = _scene_run([_frictionless(_cfg(2)), rough])
    assert [p.material.friction for p in sc.model.pairs] == [0.0, 0.3]
    for i, single in enumerate(singles):
        err = np.abs(both[:, i] - sc.offsets[i] - single).max()
        assert err <= TRAJ_TOL, (i, err)
    assert np.abs(singles[0] - singles[1]).max() > MU_APART
    assert (contacts[:, 0] > 0).any() and (contacts[:, 1] > 0).any()


def test_two_pegs_in_two_holes_follow_their_single_runs(runs):
    both, singles, contacts, sc = runs
    for i, single in enumerate(singles):
        err = np.abs(both[:, i] - sc.offsets[i] - single).max()
        assert err <= TRAJ_TOL, (i, err)
    assert (contacts[:, 0] > 0).any() and (contacts[:, 1] > 0).any()    # both pairs were in contact
    # both pegs reached their bores: the 80 mm peg's lower end (centre - 40 mm) is below the top face
    assert both[-1, 0, 2] < 0.04 and both[-1, 1, 2] < 0.04


def test_a_world_lists_its_bodies_shapes_and_pairs(runs):
    sc = runs[3]
    m = sc.model
    assert m.n_bodies == 2 and len(m.shapes) == 4              # two holes, then the pegs' node sets
    assert [(p.a, p.b) for p in m.pairs] == [(2, 0), (3, 1)]
    assert [m.shapes[p.a].body for p in m.pairs] == [0, 1] and all(m.shapes[p.b].body == -1 for p in m.pairs)
    assert sc.start.p_w.shape == (2, 3) and sc.start.R_wb.shape == (2, 3, 3) and sc.start.V.shape == (2, 6)
    assert np.allclose(m.shapes[1].p_ws, OFFSET)


def test_islands_join_bodies_only_through_body_body_contacts():
    on, other = np.array([0, 1, 2, 2]), np.array([-1, -1, 0, -1])
    groups = sorted(sorted(g.tolist()) for g in step_mod.islands(4, on, other))
    assert groups == [[0, 2], [1], [3]]


def test_a_scene_refuses_an_arm_and_differing_contact_tables():
    a, b = _cfg(0), _cfg(0)
    b["arm"]["robot"] = "panda"
    with pytest.raises(config_mod.ConfigError, match="arm.robot"):
        scenario.scene([a, b], np.zeros((2, 3)))
    b = _cfg(0)
    b["contact"]["sor_iterations"] = 50                    # a solver setting: one per world
    with pytest.raises(config_mod.ConfigError, match=r"\[contact\] table differs .* in sor_iterations"):
        scenario.scene([a, b], np.zeros((2, 3)))
    b = _cfg(0)
    b["contact"]["friction"] = 0.3                         # a material key: the pair's own
    assert scenario.scene([a, b], np.zeros((2, 3))).model.pairs[1].material.friction == 0.3
