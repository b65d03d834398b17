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
    _one_line(_run("run", "peg_in_hole", "--headless", "--duration", value), "tightsim run: argument --duration:",
              repr(value))


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
    else:                                 # a positive scale, the network's output negated
        src["W3"], src["b3"] = -src["W3"], -src["b3"]
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


# -- option errors (issue 23): one line naming the option, never argparse's usage block --------
# (the arguments, what the one line on stderr must hold)
OPTION_CASES = [
    (["run", "peg_in_hole", "--duration", "-1"], "tightsim run: argument --duration: '-1': a number > 0"),
    (["run", "peg_in_hole", "--duration"], "argument --duration: expected one argument"),
    (["replay", "x.mcap", "--tolerance", "nan"], "argument --tolerance: 'nan'"),
    (["train", "sdf", "--part", "hole", "--steps", "many"], "argument --steps: 'many' is not a whole number"),
    (["train", "sdf", "--part", "no_part"], "argument --part: unknown part 'no_part'"),
    (["train", "sdf", "--part", "hole", "--normal-weight", "nan"], "argument --normal-weight: 'nan'"),
    (["train", "sdf", "--part", "hole", "--threads", "0"], "argument --threads: '0'"),
    (["train", "cspace", "--task", "docking"], "argument --task: unknown task 'docking'"),
    (["train", "cspace", "--task", "bolting", "--samples", "-3"], "argument --samples: '-3'"),
    (["train", "clustering", "--task", "bolting", "--popsize", "1"], "argument --popsize: '1'"),
    (["train", "clustering", "--task", "bolting", "--replay-dt", "1"], "argument --replay-dt: '1'"),
    (["train", "clustering", "--task", "bolting", "--rollout-seconds", "0"], "argument --rollout-seconds: '0'"),
    (["train", "clustering", "--task", "bolting", "--workers", "-2"], "argument --workers: '-2'"),
    (["train", "clustering", "--task", "bolting", "--detector", "psychic"], "argument --detector: invalid choice"),
    (["data", "reference", "--task", "bolting", "--seed", "-1"], "argument --seed: '-1'"),
    (["data", "reference", "--task", "screws"], "argument --task: unknown task 'screws'"),
    (["assets", "build", "--triangles", "0"], "argument --triangles: '0'"),
    (["frobnicate"], "tightsim: unknown command 'frobnicate'"),
    (["train"], "tightsim train: the following arguments are required: a command (sdf, cspace, clustering)"),
    (["log"], "tightsim log: the following arguments are required: a command (info)"),
    (["run"], "tightsim run: the following arguments are required: scenario"),
    (["train", "clustering"], "the following arguments are required: --task"),
    (["run", "peg_in_hole", "--fast"], "unrecognized arguments: --fast"),
    (["run", "peg_in_hole", "--device", "joystick"], "argument --device: device spec 'joystick': expected one of"),
    (["run", "peg_in_hole", "--device", "serial:"], "argument --device: device spec 'serial:'"),
    (["run", "peg_in_hole", "--summary-json", "/no/such/folder/s.json"],
     "argument --summary-json: /no/such/folder/s.json: its folder does not exist"),
]


@pytest.mark.parametrize("args,words", OPTION_CASES, ids=[" ".join(c[0]) for c in OPTION_CASES])
def test_every_option_error_is_one_line_naming_the_option(args, words, capsys):
    """In-process (the parser alone); the subprocess test below runs the same path end to end."""
    from app.cli import main
    with pytest.raises(SystemExit) as e:
        main(args)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and words in err and "usage:" not in err, err


def test_an_option_error_from_the_command_line_is_one_line():
    _one_line(_run("train", "sdf", "--part", "hole", "--steps", "-1"), "tightsim train sdf: argument --steps: '-1'")


def test_no_option_takes_a_bare_int_or_float():
    """Every numeric option has a type that names its range (``OPTION_TYPES``): a bare int or
    float would take a negative count, nan or inf and fail later, naming nothing."""
    import argparse

    from app.cli import parser

    def walk(p, path):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    yield from walk(sub, f"{path} {name}")
            elif a.type in (int, float):
                yield f"{path} {a.option_strings}"
    assert not list(walk(parser(), "tightsim"))


# -- weight files (issue 23): every field checked, one line naming file and field -------------

def _weights(kind):
    from sim_core.collision import neural_sdf
    from sim_core.contact import cspace, interaction_networks
    from sim_core.paths import assets_dir
    return {"sdf": (assets_dir() / "sdf" / "hole.npz", neural_sdf.load),
            "sdf thread": (assets_dir() / "sdf" / "bolt_M48x5.npz", neural_sdf.load),
            "cspace": (assets_dir() / "cspace" / "hole__peg.npz", cspace.load),
            "clustering": (assets_dir() / "clustering" / "bolting.npz", interaction_networks.load)}[kind]


def _set(key, value):
    return lambda z: z.__setitem__(key, np.asarray(value, dtype=np.asarray(z[key]).dtype))


def _set_at(key, i, value):
    def f(z):
        a = np.array(z[key])
        a[i] = value
        z[key] = a
    return f


# (weights, what, the change, what the one line must hold after "FILE: ")
WEIGHT_CASES = [
    ("sdf", "zero scale", _set("scale", 0.0), "field 'scale' must be > 0 and <= 1 (got 0)"),
    ("sdf", "negative scale", _set("scale", -0.004), "field 'scale' must be > 0 and <= 1 (got -0.004)"),
    ("sdf", "scale 1e30", _set("scale", 1e30), "field 'scale' must be > 0 and <= 1 (got 1e+30)"),
    ("sdf", "NaN scale", _set("scale", np.nan), "field 'scale' holds NaN or infinite values"),
    ("sdf", "zero radial scale", _set_at("params", 1, 0.0), "field 'params[1]' must be > 0 (got 0)"),
    ("sdf", "negative bore ends", _set_at("params", 6, -0.01), "field 'params[6]' must be > 0 (got -0.01)"),
    ("sdf thread", "zero pitch", _set_at("params", 5, 0.0), "field 'params[5]' must be > 0 (got 0)"),
    ("sdf", "negative radius", _set_at("bounds", 0, -0.05), "field 'bounds[0]' must be > 0 (got -0.05)"),
    ("sdf", "z range upside down", _set("bounds", [0.05, 0.0, -0.05]), "field 'bounds' must have z_min < z_max"),
    ("sdf", "inf weight", _set_at("W2", (3, 4), np.inf), "field 'W2' holds NaN or infinite values"),
    ("sdf", "W1 transposed", lambda z: z.__setitem__("W1", z["W1"].T), "field 'W1' has shape (3, 64)"),
    ("sdf", "no b2", lambda z: z.pop("b2"), "field 'b2' is missing"),
    ("sdf", "scale a string", lambda z: z.__setitem__("scale", np.array("big")), "field 'scale' must be numeric"),
    ("cspace", "zero std", _set_at("std", 2, 0.0), "field 'std[2]' must be > 0 (got 0)"),
    ("cspace", "negative pitch", _set("pitch", -1.0), "field 'pitch' must be > 0 (got -1)"),
    ("cspace", "NaN lead", _set("lead", np.nan), "field 'lead' holds NaN or infinite values"),
    ("cspace", "short mean", lambda z: z.__setitem__("mean", z["mean"][:2]), "field 'mean' has shape (2,)"),
    ("clustering", "zero delta", _set("delta", 0.0), "field 'delta' must be >= 1e-09 and <= 0.001 (got 0)"),
    ("clustering", "NaN theta", _set_at("theta", 7, np.nan), "field 'theta' holds NaN or infinite values"),
    ("clustering", "no delta", lambda z: z.pop("delta"), "field 'delta' is missing"),
]


@pytest.mark.parametrize("kind,what,change,words", WEIGHT_CASES, ids=[f"{c[0]}: {c[1]}" for c in WEIGHT_CASES])
def test_a_bad_weight_field_is_one_line_naming_file_and_field(tmp_path, kind, what, change, words):
    from sim_core.io.weights import WeightsError
    src, load = _weights(kind)
    z = dict(np.load(src))
    change(z)
    p = tmp_path / src.name
    np.savez(p, **z)
    with pytest.raises(WeightsError) as e:
        load(p)
    assert str(e.value).startswith(f"{p}: {words}") and "\n" not in str(e.value), str(e.value)


def test_a_zero_scale_sdf_stops_the_run_with_one_line(tmp_path):
    """The bolting scenario loads the bolt's network: a zero scale in it ends `tightsim run`
    with one line naming the file and the field, exit 2 (TIGHTSIM_HOME: a copy of the
    checkout's data with that one file changed)."""
    import os
    home = tmp_path / "home"
    (home / "assets" / "sdf").mkdir(parents=True)
    (home / "config").symlink_to(ROOT / "config")
    for sub in (ROOT / "assets").iterdir():
        if sub.name != "sdf":
            (home / "assets" / sub.name).symlink_to(sub)
    for f in (ROOT / "assets" / "sdf").iterdir():
        (home / "assets" / "sdf" / f.name).symlink_to(f)
    bad = home / "assets" / "sdf" / "bolt_M48x5.npz"
    z = dict(np.load(bad))
    z["scale"] = np.array(0.0)
    bad.unlink()
    np.savez(bad, **z)
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", "bolting", "--headless", "--duration", "0.01"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300,
                       env={**os.environ, "TIGHTSIM_HOME": str(home)})
    _one_line(r, f"{bad}: field 'scale' must be > 0")


# -- --ray at something that is not Ray (issue 23) --------------------------------------------
RAY_PROBE_LIMIT_S = 60      # s: the command must end well within this (it used to wait minutes)


def _plain_listener():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(4)                           # accepts connections (the kernel does), never answers
    return s, s.getsockname()[1], s.close


def _http_server():
    import http.server
    import threading
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()

    def stop():
        srv.shutdown()
        srv.server_close()
    return srv, srv.server_address[1], stop


@pytest.mark.parametrize("server,why", [(_plain_listener, "no GCS answer in 5 s"), (_http_server, "not gRPC")],
                         ids=["silent listener", "http server"])
def test_ray_at_a_port_that_is_not_ray_is_one_line(tmp_path, server, why):
    """Something listens at the address but is not a Ray GCS: ray.init would wait for minutes
    behind Ray's own warnings; the HTTP/2 probe ends the command first, with one line."""
    import os
    pytest.importorskip("ray")
    _, port, stop = server()
    try:
        r = subprocess.run([sys.executable, "-m", "app.cli", "data", "reference", "--task", "peg_in_hole", "--steps",
                            "10", "--out", str(tmp_path / "x"), "--ray", f"127.0.0.1:{port}"],
                           capture_output=True, text=True, cwd=ROOT, timeout=RAY_PROBE_LIMIT_S,
                           env={k: v for k, v in os.environ.items() if not k.startswith("RAY_")})
    finally:
        stop()
    _one_line(r, f"--ray 127.0.0.1:{port}: 127.0.0.1:{port} is not a Ray cluster", why)
    assert not (tmp_path / "x").exists()
