"""Scenario ``grinding`` (seed 001 Sec. 4.3): the timed path on the offset surface, the PI force
loop, the config's errors and material, and the run holding 5 N within 5 % RMS once in contact."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from sim_core import config
from sim_core.geometry import grinding as geo
from sim_core.paths import scenario_path
from sim_core.scenarios import grinding, scenario
from sim_core.types import State

CFG = config.load(scenario_path("grinding"))
ROUNDING = 1e-12      # m
TARGET = 0.05         # the figure: 5 N within 5 % RMS once in contact


def _cfg(**grinding_keys) -> dict:
    c = copy.deepcopy(CFG)
    c["grinding"].update(grinding_keys)
    return c


def test_the_path_rides_the_offset_surface_and_turns_at_the_crease_about_the_tip():
    wp = grinding.workpiece(CFG)
    p = grinding.make_path(CFG, wp)
    R_ws, p_ws = grinding.frame(wp)
    r = CFG["grinding"]["tip_radius"]
    on = p.lift == 0.0
    c_s = (p.centre - p_ws) @ R_ws
    d, _ = geo.signed_distance(wp, c_s[on])
    assert np.abs(d - r).max() < ROUNDING                       # every knot touches, none cuts in
    # the crease knots: the same centre twice, the normal turning between the faces
    same = np.flatnonzero(np.all(np.abs(np.diff(p.centre, axis=0)) < ROUNDING, axis=1) & on[1:] & on[:-1])
    assert len(same) == 2                                       # the two creases, one each side of the bead
    tc, pc = grinding.crease_angles(wp, r)
    for k in same:
        assert {round(abs(p.phi[k]), 12), round(abs(p.phi[k + 1]), 12)} == {round(tc, 12), round(pc, 12)}
    # the tool never turns faster than turn_rate, the centre never faster than the feed
    dt = np.diff(p.t)
    assert np.all(np.abs(np.diff(p.phi)) <= CFG["grinding"]["turn_rate"] * dt + 1e-12)
    travel = np.linalg.norm(np.diff(p.centre, axis=0), axis=1)
    assert np.all(travel[1:-1] <= CFG["grinding"]["speed"] * dt[1:-1] + 1e-12)
    # the shipped run covers the whole path
    assert CFG["scenario"]["duration"] >= grinding.path_duration(CFG) - 1e-9


def test_the_set_pose_puts_the_tool_axis_on_the_normal_and_the_com_above_the_tip():
    model, st = scenario.build(CFG)
    loop = scenario.record(CFG).control.start()
    for t in (0.0, 0.7, 3.3, 9.0):
        s = State(t, st.p_w, st.R_wb, st.V, st.systems)
        inp = loop.inputs(model, s, model.dt)
        c, n = loop.spec.path.tip(t)
        assert np.allclose(inp.R_set_w[0][:, 2], n, atol=1e-12)
        L = CFG["grinding"]["tool_length"]
        delta = loop.offset(0.0, loop.spec.path.on_surface(t))     # dt 0: the integral unchanged
        assert np.allclose(inp.p_set_w[0], c + (L - delta) * n, atol=1e-12)


def test_force_loop_feed_forward_integral_and_anti_windup():
    spec = scenario.record(CFG).control
    loop = spec.start()
    K = CFG["drive"]["stiffness_linear"][2]
    loop.n = np.array([0.0, 0.0, 1.0])
    loop.fn = spec.force                          # no error: the spring's compression for F_set
    assert loop.offset(0.01, True) == pytest.approx(spec.force / K, rel=1e-15)
    loop.fn = 0.0                                 # off the surface: the integral is frozen
    for _ in range(1000):
        loop.offset(0.01, False)
    assert loop.integral == 0.0
    for _ in range(100000):                       # on it, pressing on nothing: clamped
        d = loop.offset(0.01, True)
    assert loop.integral == spec.max_offset and d == spec.max_offset


@pytest.mark.parametrize("key, value, says", [
    ("bead_height", 0.004, "grinding.bead_height"),
    ("bead_radius", 0.2, "grinding.bead_radius"),
    ("x_range", (-0.2, 0.0), "grinding.x_range"),
])
def test_bad_geometry_is_a_one_line_error_naming_file_and_key(key, value, says):
    with pytest.raises(config.ConfigError) as e:
        scenario.build(_cfg(**{key: value}), "config/grinding.toml")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("config/grinding.toml: ") and says in msg


def test_bad_values_in_the_file_name_the_key(tmp_path):
    text = scenario_path("grinding").read_text().replace("normal_force = 5.0", "normal_force = -5.0")
    f = tmp_path / "g.toml"
    f.write_text(text)
    with pytest.raises(config.ConfigError, match=r"g.toml: grinding.normal_force: must be > 0"):
        config.load(f)


def test_the_pair_takes_its_material_by_name():
    model, _ = scenario.build(CFG)
    mat = model.pairs[0].material
    assert scenario.pair_name(model, 0) == "grinder/workpiece"
    assert mat is not None and mat.law == CFG["materials"]["aluminium"]["law"] and mat.friction == 0.3


def _run(duration: float, on_step=None):
    model, st = scenario.build(CFG)
    return scenario.simulate(model, scenario.record(CFG), st, duration, on_step=on_step)


def test_the_first_pass_presses_with_the_set_force_and_slides_on_the_friction_cone():
    """Approach and a second of the first pass: 5 N within 5 % RMS once in contact, every
    contact on the surface (the tip never cuts past the penetration the solver allows), and
    the tip sliding along the bar at constant feed with friction = mu x normal force
    (Coulomb, maximum dissipation; measured 0.3000000)."""
    wrench = []
    res = _run(1.6, on_step=lambda prev, inp, after, info: wrench.append(info.contact_wrench[0, :3].copy()))
    fig = grinding.force_figures(res.control)
    assert fig["contact_from_s"] is not None and fig["contact_from_s"] < 0.6
    assert fig["normal_force_rms_error_pct"] < 100 * TARGET
    assert max(res.max_pen) < 2e-4                                  # m
    t, n = np.array(res.control.t), res.control.n
    F = np.array(wrench)[(t > 1.0)]
    Fn = F @ n
    Ft = np.linalg.norm(F - np.outer(Fn, n), axis=1)
    assert abs(Ft.sum() / Fn.sum() - CFG["materials"]["aluminium"]["friction"]) < 1e-3


def test_the_whole_path_holds_five_newtons_within_five_percent():
    res = _run(CFG["scenario"]["duration"])
    fig = scenario.task_figures(res)
    assert fig["task_target_met"], fig
    assert fig["normal_force_rms_error_pct"] < 100 * TARGET
    assert 0.5 * 5.0 < fig["normal_force_min_N"] and fig["normal_force_max_N"] < 2.0 * 5.0
    assert abs(fig["normal_force_mean_N"] - 5.0) < 0.05
    assert np.all(np.isfinite(res.final.p_w))


def test_the_law_is_a_config_value_and_an_unknown_one_names_its_key(tmp_path):
    """The pair's law comes from [materials.aluminium] (shipped: "compliant", Hertz with
    Hunt-Crossley damping): a law not in the table is a one-line error naming the file and the
    key."""
    text = scenario_path("grinding").read_text().replace('law = "compliant"', 'law = "no_such_law"')
    assert "no_such_law" in text
    f = tmp_path / "g.toml"
    f.write_text(text)
    with pytest.raises(config.ConfigError) as e:
        config.load(f)
    assert "\n" not in str(e.value) and "g.toml: materials.aluminium.law: unknown contact law" in str(e.value)
