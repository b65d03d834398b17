"""Seed 001's bouncing ball through the step and the variable step's policy
(``scenarios.bouncing_ball``, ``dynamics.variable_step``, ``contact.compliant_stage``)."""
import numpy as np
import pytest

from sim_core.contact import compliant
from sim_core.scenarios import bouncing_ball as bb

DT_MAX = 0.128             # s: seed 001 Table 1's largest step for its engine
RESTITUTIONS = (0.2, 0.4, 0.6, 0.8, 1.0)
ENERGY_TOL = 1e-9          # relative, the bound (measured ~1e-14)
RESTITUTION_TOL = 1e-3     # the bound on the first bounce (measured <= 2.2e-4: gravity acts
                           # during the contact, so the speed ratio is not e exactly)
EVENT_TOL = 1e-6           # relative, the bound on duration and depth (measured ~1e-13)


def first_contact(run):
    """(touchdown speed m/s, contact start s, end s) of the first contact of a drop."""
    i = int(np.argmax(run["contact"]))
    j = i
    while run["contact"][j + 1]:
        j += 1
    return -run["vz"][i - 1], run["t"][i - 1], run["t"][j]


def test_energy_at_restitution_one_over_ten_bounces():
    run = bb.drop(1.0, DT_MAX, duration=8.6)
    b = bb.bounces(run)
    assert len(b["contacts_s"]) >= 10
    E = run["energy"]
    assert np.max(np.abs(E - E[0])) <= ENERGY_TOL * E[0]
    assert run["dt"].max() == pytest.approx(DT_MAX)            # free flight at dt_max


@pytest.mark.parametrize("e", RESTITUTIONS)
def test_restitution_depth_and_duration(e):
    run = bb.drop(e, DT_MAX, duration=1.5)
    b = bb.bounces(run)
    assert b["restitution"][0] == pytest.approx(e, abs=RESTITUTION_TOL)
    v_in, t0, t1 = first_contact(run)
    kv = compliant.kelvin_voigt(bb.MASS, bb.STIFFNESS, e, bb.MASS * bb.GRAVITY, 0.0, v_in)
    assert t1 - t0 == pytest.approx(kv.separation_time(), rel=EVENT_TOL)
    i = int(np.argmax(run["contact"]))
    assert run["pen"][i:].max() == pytest.approx(kv.max_penetration()[1], rel=EVENT_TOL)


def test_clamped_reading_reports_its_own_restitution():
    """Reading (b): the ball leaves where the force reaches zero, faster than e; the drop's
    restitution is the closed form's (not e)."""
    e = 0.4
    run = bb.drop(e, DT_MAX, duration=1.5, clamped=True)
    got = bb.bounces(run)["restitution"][0]
    v_in = first_contact(run)[0]
    expect = compliant.restitution_clamped(e, bb.STIFFNESS, bb.MASS, v_in)
    assert got == pytest.approx(expect, abs=RESTITUTION_TOL)
    assert got > e + 0.05


@pytest.mark.parametrize("model", (compliant.HUNT_CROSSLEY, compliant.HUNT_CROSSLEY_HERTZ))
def test_hunt_crossley_through_the_step(model):
    """Hunt-Crossley (n = 1, 1.5): c from the touchdown speed, the bounce's ratio e (gravity
    during the contact aside) and its energy never grows."""
    run = bb.drop(0.6, DT_MAX, duration=1.5, model=model)
    assert bb.bounces(run)["restitution"][0] == pytest.approx(0.6, abs=RESTITUTION_TOL)
    assert np.all(np.diff(run["energy"]) <= 1e-9 * run["energy"][0])


def test_fixed_long_step_is_exact_too():
    """Without the policy the step still lands, bounces and leaves inside one 128 ms step."""
    run = bb.drop(1.0, DT_MAX, duration=3.0, variable=False)
    E = run["energy"]
    assert np.max(np.abs(E - E[0])) <= ENERGY_TOL * E[0]
    assert bb.bounces(run)["apex_m"].size >= 2


def test_rigid_law_drops_too():
    """The same drop with today's rigid law (fixed step): it lands and does not pass through
    (measured at 10 ms: 14 mm deepest, pushed out at the penetration gain's rate)."""
    run = bb.drop(1.0, 0.01, law="complementarity", duration=0.6)
    assert run["z"].min() > 0.5 * bb.RADIUS
    assert run["z"][-1] > bb.RADIUS - 1e-3


def test_tightsim_run_bouncing_ball_headless(tmp_path):
    """`tightsim run bouncing_ball --headless --summary-json F`: apexes, restitution, depth."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
    out = tmp_path / "summary.json"
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", "bouncing_ball", "--headless", "--duration", "1.5",
                        "--summary-json", str(out)], capture_output=True, text=True, cwd=root,
                       env={**os.environ, "PYTHONPATH": str(root)})
    assert r.returncode == 0, r.stderr
    s = json.loads(out.read_text())
    assert s["restitution_measured"] == pytest.approx(0.8, abs=1e-2) and s["task_target_met"]
    assert len(s["bounce_apexes_m"]) >= 2 and s["bounce_apexes_m"][0] == 1.0
    assert "ball_max_penetration_m" in s


@pytest.mark.parametrize("kw", [dict(restitution=0.0, dt_max=0.1), dict(restitution=1.2, dt_max=0.1),
                                dict(restitution=0.5, dt_max=0.0), dict(restitution=0.5, dt_max=-0.1)])
def test_bad_values_say_so(kw):
    with pytest.raises(ValueError, match="restitution|dt_max"):
        bb.drop(**kw)
