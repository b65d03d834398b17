"""Scenario ``snap_fit`` from the command line (issue 27): the summary, the plot's pixels, and bad
values as one-line errors naming the file and the key."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sim_core.io.png import read_png

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
SHIPPED = (ROOT / "config" / "snap_fit.toml").read_text()


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_snap_fit_runs_headless_with_its_summary_and_plot(tmp_path):
    png, js = tmp_path / "snap.png", tmp_path / "snap.json"
    r = _cli("run", "snap_fit", "--headless", "--plot", str(png), "--summary-json", str(js))
    assert r.returncode == 0, r.stderr
    assert "click at" in r.stdout and "seated" in r.stdout
    s = json.loads(js.read_text())
    assert s["clicked"] and s["seated"] and s["peak_insertion_force_N"] > 5.0
    img = read_png(png).astype(int)
    blue = (img[..., 2] > 180) & (img[..., 0] < 80)               # the plug's force
    red = (img[..., 0] > 180) & (img[..., 2] < 80)                # the floor's reaction
    assert blue.sum() > 200 and red.sum() > 200
    # the force rises to its peak before the click: the curve reaches the top of the plot
    assert np.flatnonzero((blue | red).any(axis=1)).min() < 20


@pytest.mark.parametrize("edit, key", [
    (("nu = 0.35", "nu = 0.5"), "socket.nu"),
    (("E = 1.6476e8", "E = 0.0"), "socket.E"),
    (('mesh = "coarse"', 'mesh = "coarse"\norder_contact = 10000'), "socket.order_contact"),
])
def test_bad_snap_values_are_one_line_naming_file_and_key(tmp_path, edit, key):
    cfg = tmp_path / "snap.toml"
    assert edit[0] in SHIPPED
    cfg.write_text(SHIPPED.replace(edit[0], edit[1], 1))
    r = _cli("run", str(cfg), "--headless")
    assert r.returncode != 0
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert str(cfg) in lines[0] and key in lines[0], lines[0]


@pytest.mark.parametrize("name", ["snap_fit", "snap_fit_lan", "snap_fit_cap"])
def test_each_connector_clicks_and_seats_undamped(name):
    """The shipped connector and seed 003 Sec. V-D's two others (E = 50 MPa, nu = 0.35, a shelf
    that never lets go; E = 100 MPa, nu = 0.1, a 45 deg return): no damping anywhere in the
    prongs, the hooks let go (``snap_fit.click_step``), the plug seats and the floor carries its
    push, with no penetration beyond the seat's plastic stop."""
    from sim_core import config as config_mod
    from sim_core.scenarios import scenario, snap_fit, snap_run
    from sim_core.systems.fem import snap
    cfg = config_mod.load(ROOT / "config" / f"{name}.toml")
    res, tr, wall = snap_run.simulate(cfg)                         # the core's step, the prongs its system
    m = snap_fit.socket_of(res.model).snap
    assert not np.any(m.prong.split.parts[0].D.toarray())          # undamped
    s = snap_fit.summarize(m, tr, wall)
    assert s["clicked"] and s["seated"], s
    assert scenario.task_figures(res)["task_target_met"]           # caught under the hooks, seated
    a = tr.arrays()
    assert a["penetration"].max() <= snap.SEAT_TOUCH
    assert np.abs(a["floor_force"][-200:, 2].mean() - a["plug_force"][-1, 2]) < 0.02 * a["plug_force"][-1, 2]
    assert np.abs(a["deflection"][-200:].mean(axis=0)).max() < 0.05 * s["max_hook_deflection_m"]


FAST_DESCENTS = (0.03, 0.02, 0.01)   # s for the shipped waypoints' 9.5 mm: set points at 317-950 mm/s


@pytest.mark.parametrize("descent", FAST_DESCENTS)
def test_a_fast_insertion_stays_out_of_the_plug(descent):
    """A hand that slams the plug in (the shipped descent is 0.475 s; a session whose physics runs
    behind the wall clock sees its set point jump the same way): the plug rebounds off the seat
    and strikes the hooks from below, the released hooks spring in within a step, and the prongs
    ring -- a point of them travels up to ~1 mm a step.  No point may end up deeper in the plug
    than the seat's plastic stop: each point's reach covers its own last travel, and a point the
    detection left out that the solved step carries inside is added and the step solved again
    (``snap._missed``).  Before: 447 um at 20 ms, and 24 um with the travel alone."""
    from sim_core import config as config_mod
    from sim_core.scenarios import snap_run
    from sim_core.systems.fem import snap
    cfg = config_mod.load(ROOT / "config" / "snap_fit.toml")
    cfg["waypoints"][1]["t"] = descent
    _, tr, _ = snap_run.simulate(cfg, duration=descent + 0.25)
    a = tr.arrays()
    assert a["penetration"].max() <= snap.SEAT_TOUCH, a["penetration"].max()
    assert abs(a["z"][-1] - cfg["socket"]["seat"]) < snap.SEAT_TOUCH      # through the hooks, seated


# the Panda holding the plug: the floor's reaction against the plug's push once seated (measured
# 1.3 %: the plug wanders sideways on the frictionless seat, the hooks' light touches come and go);
# the arm's joints travel at least this far (rad; measured 0.02 rad): it carried the plug in
PANDA_FLOOR_REL = 0.05
PANDA_JOINT_TRAVEL = 5e-3


def test_the_panda_pushes_the_plug_in():
    """``[arm] robot = "panda"``: the Panda holds the plug (folded into its block before the socket
    solves against it) and renders the [drive] admittance at its tool -- the hooks let go, the
    plug is caught and seated, nothing deeper than the seat's stop, the floor carries the push,
    and the arm moved."""
    from sim_core import config as config_mod
    from sim_core.scenarios import scenario, snap_fit, snap_run
    from sim_core.systems.arm.system import ArmSystem
    from sim_core.systems.fem import snap
    cfg = config_mod.load(ROOT / "config" / "snap_fit.toml")
    cfg["arm"]["robot"] = "panda"
    res, tr, wall = snap_run.simulate(cfg)
    assert isinstance(res.model.systems[0], ArmSystem) and res.model.systems[0].body == 0
    s = snap_fit.summarize(snap_fit.socket_of(res.model).snap, tr, wall)
    assert s["clicked"] and s["seated"], s
    assert scenario.task_figures(res)["task_target_met"]
    a = tr.arrays()
    assert a["penetration"].max() <= snap.SEAT_TOUCH
    assert abs(a["floor_force"][-100:, 2].mean() - a["plug_force"][-1, 2]) < PANDA_FLOOR_REL * a["plug_force"][-1, 2]
    q = np.array(res.arm_q)
    assert np.abs(q - q[0]).max() > PANDA_JOINT_TRAVEL
