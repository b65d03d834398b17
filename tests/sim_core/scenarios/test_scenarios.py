"""Both scenarios headless: short smoke runs, determinism, and the issue's task figures."""
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sim_core.scenarios import scenario

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())   # the checkout
PITCH = 5e-3
ADVANCE_TOL = 0.05           # the issue: 5 mm per revolution within +-5 %
MIN_INSERTION = 30e-3        # the issue: the peg reaches >= 30 mm
# Sanity bound only (the figures are reported, not targets): a baseline that lets a node
# sink a full millimetre into a part with 32.5 um clearance is broken.
PENETRATION_SANITY = 1e-3


DETECTORS = ["neural", "exact"]       # the default, and the one that stays selectable


def load(name, detector="neural"):
    cfg = scenario.config_mod.load(scenario.scenario_path(name))
    cfg["contact"]["detector"] = detector
    model, state = scenario.build(cfg, src=f"{name} ({detector} detector)")
    return model, state, cfg


@pytest.fixture(scope="module", params=DETECTORS)
def full_runs(request):
    out = {}
    for name in ("peg_in_hole", "bolting"):
        model, state, cfg = load(name, request.param)
        res = scenario.simulate(model, scenario.record(cfg), state)
        out[name] = (res, scenario.summarize(res, state))
    return out


def _true_penetration(s):
    """The deepest penetration by the exact geometry (a neural run also reports its own)."""
    return s.get("max_penetration_exact_sdf_m", s["max_penetration_m"])


@pytest.mark.parametrize("name", ["peg_in_hole", "bolting"])
def test_scenario_smoke(name):
    model, state, cfg = scenario.load(name)
    res = scenario.simulate(model, scenario.record(cfg), state, 0.2)
    s = scenario.summarize(res, state)
    assert s["steps"] == 20
    assert all(np.isfinite(s["final_position_m"]))
    assert s["max_penetration_m"] >= 0.0


@pytest.mark.parametrize("name", ["peg_in_hole", "bolting"])
@pytest.mark.parametrize("detector", DETECTORS)
def test_runs_repeat_exactly(name, detector):
    model, state, cfg = load(name, detector)
    a = scenario.simulate(model, scenario.record(cfg), state, 0.3)
    b = scenario.simulate(model, scenario.record(cfg), state, 0.3)
    assert np.array_equal(np.array(a.p_w), np.array(b.p_w))


def test_bolting_advances_one_pitch_per_revolution(full_runs):
    res, s = full_runs["bolting"]
    assert s["engaged_at_s"] is not None, "the nut never engaged the thread"
    assert s["revolutions_measured"] >= 3.0 - 1e-9
    assert s["advance_per_rev_m"] == pytest.approx(PITCH, rel=ADVANCE_TOL)
    assert s["rotation_about_axis_rev"] < -3.0            # clockwise (fastening) turns
    assert 0.0 <= _true_penetration(s) < PENETRATION_SANITY
    assert s["task_target_met"] and s["task_target"] == "5 mm/rev +-5 %"


def test_bolting_nut_does_not_advance_without_turning(full_runs):
    """Before the turning starts (t < 0.6 s) the pushed nut must rest on the thread, not
    slide down it: the advance comes from the screw motion only."""
    res, _ = full_runs["bolting"]
    t = np.array(res.t)
    z = np.array(res.p_w)[:, 2]
    rest = z[(t > 0.45) & (t <= 0.6)]
    assert rest.max() - rest.min() < 0.2e-3


def test_peg_is_inserted(full_runs):
    res, s = full_runs["peg_in_hole"]
    assert s["insertion_depth_m"] >= MIN_INSERTION
    assert s["task_target_met"] and s["task_target"] == ">= 30 mm"
    assert 0.0 <= _true_penetration(s) < PENETRATION_SANITY
    # the contact corrected the offset: the peg's axis is inside the bore's clearance
    assert math.hypot(*s["final_position_m"][:2]) < 0.1e-3


def test_cli_headless_summary_and_json(tmp_path):
    out = tmp_path / "s.json"
    log = tmp_path / "run.mcap"
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", "peg_in_hole", "--headless",
                        "--duration", "0.1", "--summary-json", str(out), "--log", str(log)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    for words in ("steps", "real-time factor", "penetration", "final pose", "axial advance",
                  "rotation about axis", "insertion depth", "clustering          none: every detected node"):
        assert words in r.stdout
    s = json.loads(out.read_text())
    assert s["steps"] == 10 and "step_ms_p99" in s and "max_penetration_m" in s
    # the task figure is set against its target (0.1 s: the peg has not gone in yet)
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("insertion depth"))
    assert line.endswith("(target >= 30 mm: NOT met)") and s["task_target_met"] is False
    from mcap.reader import make_reader  # the standard reader opens it too
    with open(log, "rb") as f:
        topics = [ch.topic for _, ch, _ in make_reader(f).iter_messages()]
    assert topics.count("/part_state") == 11 and topics.count("/config") == 1


@pytest.mark.parametrize("name", ["peg_in_hole", "bolting"])
def test_the_summary_takes_its_task_figure_and_target_from_task_figures(name):
    """The batch summary and the session summary (app.session) both take the task figure and
    its verdict from ``scenario.task_figures``; ``task_line`` prints them."""
    model, state, cfg = scenario.load(name)
    res = scenario.simulate(model, scenario.record(cfg), state, 0.2)
    s, fig = scenario.summarize(res, state), scenario.task_figures(res)
    assert {k: s[k] for k in fig} == fig and isinstance(fig["task_target_met"], bool)
    assert scenario.task_line(s).endswith(f"(target {fig['task_target']}: NOT met)")   # 0.2 s: not yet


def test_step_time_and_real_time_factor_leave_out_the_steps_that_compiled():
    """Real-time factor = simulated time / summed step time, over the steps that did not
    compile numba kernels (a first run's); those are counted apart."""
    model, state, cfg = scenario.load("peg_in_hole")
    res = scenario.simulate(model, scenario.record(cfg), state, 0.1)
    res.compile_times = [0.0] * res.steps
    res.step_times[0], res.compile_times[0] = 30.0, 29.0          # as a first run's first step
    s = scenario.summarize(res, state)
    rest = np.array(res.step_times[1:])
    assert s["compile_steps"] == 1 and s["compile_s"] == 30.0
    assert s["step_ms_mean"] == pytest.approx(rest.mean() * 1e3) and s["step_ms_p99"] < 30e3
    assert s["real_time_factor"] == pytest.approx((res.steps - 1) * model.dt / rest.sum())
    assert s["wall_s"] == res.wall


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_default_clustering_holds_the_thread_from_perturbed_starts(seed):
    """The default (patch clustering with its safety net) keeps the nut in the thread whatever
    its phase and offset at landing (``scenario.perturbed``): advance per turn within the
    issue's 5 % of the pitch, and no node a full millimetre in.  Measured: the learned
    networks alone skip the thread from some of these starts (bench/closed_loop_clustering.py)."""
    cfg = scenario.perturbed(scenario.config_mod.load(scenario.scenario_path("bolting")), seed)
    model, state = scenario.build(cfg, f"bolting (perturbed start {seed})")
    assert model.contact.clustering == "patches"
    res = scenario.simulate(model, scenario.record(cfg), state)
    s = scenario.summarize(res, state)
    assert s["advance_per_rev_m"] == pytest.approx(PITCH, rel=ADVANCE_TOL)
    assert 0.0 <= _true_penetration(s) < PENETRATION_SANITY
    assert s["learned_fallback_steps"] < 0.1 * s["clustered_steps"]    # the patches did the work


def test_perturbed_starts_are_seeded_and_leave_the_config_alone():
    cfg = scenario.config_mod.load(scenario.scenario_path("bolting"))
    before = json.dumps(cfg, sort_keys=True, default=str)
    a, b = scenario.perturbed(cfg, 4), scenario.perturbed(cfg, 4)
    assert json.dumps(cfg, sort_keys=True, default=str) == before
    assert a == b and a != cfg and scenario.perturbed(cfg, 0) == cfg
    turn = [w["yaw_deg"] - w0["yaw_deg"] for w, w0 in zip(a["waypoints"], cfg["waypoints"])]
    assert np.allclose(turn, turn[0], rtol=0, atol=1e-9) and 0.0 <= turn[0] < 360.0   # one shift of the phase
