"""Attack tests: bad or absurd scenario files and options end with one line naming the file
and the key (or the option), exit code 2, no traceback -- never a run that does not end."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sim_core import config

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())   # the checkout
PEG = (ROOT / "config" / "peg_in_hole.toml").read_text()

# (what, the TOML line replaced, its replacement, the key the error must name)
CASES = [
    ("tiny step", "dt = 0.01 ", "dt = 1e-300 ", "scenario.dt"),
    ("endless run", "duration = 3.5 ", "duration = 1e12 ", "scenario.duration"),
    ("too many steps", "duration = 3.5 ", "duration = 3600.0 \ndt_line", "scenario.duration / scenario.dt"),
    ("endless solver", "sor_iterations = 100", "sor_iterations = 1000000000000", "contact.sor_iterations"),
    ("absurd density", "density = 2700.0", "density = 1e300", "parts.density"),
    ("millimetres for metres", "position = [0.0006, 0.0, 0.045]", "position = [0.6, 0.0, 45.0]", "start.position"),
    ("arm a kilometre away", "base_position = [-0.45, 0.0, -0.2]", "base_position = [-1000.0, 0.0, -0.2]",
     "arm.base_position"),
    ("huge grasp offset", "grasp_offset = 0.03 ", "grasp_offset = 1e6 ", "arm.grasp_offset"),
    ("huge drive stiffness", "stiffness_linear = [2000.0, 2000.0, 2000.0]",
     "stiffness_linear = [1e12, 2000.0, 2000.0]", "drive.stiffness_linear"),
    ("absurd tilt", "tilt_deg = [0.0, 0.5]\n", "tilt_deg = [0.0, 1e300]\n", "start.tilt_deg"),
    ("negative friction", "friction = 0.15", "friction = -0.1", "contact.friction"),
]


def _run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def _one_line(r, *words):
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    err = [ln for ln in r.stderr.strip().splitlines() if ln]
    assert len(err) == 1 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in err[0], err[0]


@pytest.mark.parametrize("what,old,new,key", CASES, ids=[c[0] for c in CASES])
def test_absurd_values_are_one_line_naming_file_and_key(tmp_path, what, old, new, key):
    assert old in PEG, old
    p = tmp_path / "bad.toml"
    text = PEG.replace(old, new, 1)
    if "dt_line" in text:                 # a second change: the smallest step with the longest run
        text = text.replace("\ndt_line", "").replace("dt = 0.01 ", "dt = 0.0001 ", 1)
    p.write_text(text)
    with pytest.raises(config.ConfigError, match=key.replace(".", r"\.").replace("/", "/")):
        config.load(p)
    _one_line(_run("run", str(p), "--headless"), "bad.toml", key)


def test_a_binary_file_as_the_scenario_is_one_line(tmp_path):
    p = tmp_path / "bin.toml"
    p.write_bytes(bytes(range(256)) * 4)
    _one_line(_run("run", str(p), "--headless"), "bin.toml")


@pytest.mark.parametrize("value", ["inf", "nan", "1e15", "-1", "0", "soon"])
def test_a_duration_that_is_not_a_run_is_an_option_error(value):
    r = _run("run", "peg_in_hole", "--headless", "--duration", value)
    assert r.returncode == 2 and "--duration" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("how", ["last layer x1e30", "negated output"])
def test_finite_but_wrong_sdf_weights_are_refused_against_the_geometry(tmp_path, how):
    """Weights that pass every format check but disagree with the part they claim: the probe
    check at load (exact distance at seeded points near the surface) refuses them."""
    from sim_core.collision import neural_sdf
    from sim_core.geometry import profiles
    from sim_core.io.weights import WeightsError
    from sim_core.paths import assets_dir
    src = dict(np.load(assets_dir() / "sdf" / "hole.npz"))
    if how == "last layer x1e30":
        src["W3"] = src["W3"] * 1e30
    else:
        src["scale"] = -src["scale"]
    p = tmp_path / "hole.npz"
    np.savez(p, **src)
    spec = profiles.all_parts()["hole"]
    neural_sdf.load(p, spec=spec, part="hole")                       # the format is fine ...
    with pytest.raises(WeightsError, match="disagrees with the geometry"):
        neural_sdf.load(p, spec=spec, part="hole", probe=True)       # ... the distances are not


@pytest.mark.parametrize("args,words", [
    (["train", "sdf", "--part", "hole", "--steps", "-1"], "--steps"),
    (["data", "reference", "--task", "bolting", "--steps", "-5"], "--steps"),
    (["train", "sdf", "--part", "hole", "--steps", "5"], "shipped"),          # would overwrite assets/sdf
    (["run", "peg_in_hole", "--headless", "--log", "/"], "--log"),
], ids=["untrained sdf", "negative samples", "overwrite shipped", "log into a folder"])
def test_options_that_would_do_harm_are_refused(args, words):
    r = _run(*args)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_assets_build_into_a_file_is_refused(tmp_path):
    f = tmp_path / "a_file"
    f.write_text("x")
    r = _run("assets", "build", "--out", str(f))
    assert r.returncode == 2 and "is a file" in r.stderr and "Traceback" not in r.stderr


def test_version():
    r = _run("--version")
    assert r.returncode == 0 and r.stdout.startswith("tightsim ")


def test_clustering_weights_that_overflow_are_refused_at_load(tmp_path):
    """Clustering weights x1e30 pass the format checks; they used to divide by zero mid-run."""
    from sim_core.contact import interaction_networks
    from sim_core.io.weights import WeightsError
    from sim_core.paths import assets_dir
    src = dict(np.load(assets_dir() / "clustering" / "bolting.npz"))
    src["theta"] = src["theta"] * 1e30
    p = tmp_path / "bolting.npz"
    np.savez(p, **src)
    with pytest.raises(WeightsError, match="probe contact set"):
        interaction_networks.load(p, task="bolting")
