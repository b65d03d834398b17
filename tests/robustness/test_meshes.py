"""Attack tests on the files a scenario reads besides its TOML: the part meshes
(assets/parts/NAME.ply, which a user may replace) and the arm's description
(assets/robots/*.urdf).  Each bad file ends ``tightsim run`` with one line naming the file and
the field, exit code 2, no traceback and no warning -- never a run that goes on."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sim_core.geometry import profiles
from sim_core.geometry.assets import check_part_mesh, load_mesh, write_ply
from sim_core.geometry.mesh import TriMesh

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())   # the checkout


def _home(tmp_path: Path) -> Path:
    """A TIGHTSIM_HOME to spoil: the checkout's config and assets linked, parts/ and robots/ copied."""
    home = tmp_path / "home"
    (home / "assets").mkdir(parents=True)
    (home / "config").symlink_to(ROOT / "config")
    for d in (ROOT / "assets").iterdir():
        if d.name in ("parts", "robots"):
            shutil.copytree(d, home / "assets" / d.name)
        else:
            (home / "assets" / d.name).symlink_to(d)
    return home


def _run(home: Path, scenario: str):
    env = {**os.environ, "TIGHTSIM_HOME": str(home)}
    env.pop("TIGHTSIM_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "app.cli", "run", scenario, "--headless"], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=300)


def _one_line(r, *words):
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    err = [ln for ln in r.stderr.strip().splitlines() if ln]
    assert len(err) == 1 and "Traceback" not in r.stderr and "Warning" not in r.stderr, r.stderr
    for w in words:
        assert w in err[0], err[0]


def _with(v=None, f=None):
    """A spoiler: the mesh with its vertices / faces replaced by functions of them."""
    return lambda m: TriMesh(m.vertices if v is None else v(m.vertices.copy()), m.faces if f is None else f(m.faces))


def _stray(x):
    def v(p):
        p[0] = (x, 0.0, 0.0)
        return p
    return v


# (what, the spoiler, the words the line must hold besides the file's name)
MESHES = [
    ("a vertex at 1e30 m", _with(v=_stray(1e30)), ["vertex 0", "(1e+30, 0, 0)"]),
    ("a vertex at 1e300 m", _with(v=_stray(1e300)), ["vertex 0"]),         # overflowed in the mass properties
    ("collapsed to a point", _with(v=lambda p: 0.0 * p), ["vertices", "one point"]),
    ("flattened", _with(v=lambda p: p * [1.0, 1.0, 0.0]), ["vertices", "collapsed to a plane", "zero volume"]),
    ("inside out", _with(f=lambda f: f[:, ::-1]), ["faces", "volume"]),
    ("millimetres", _with(v=lambda p: 1000.0 * p), ["vertices", "looks like millimetres"]),
]
PARTS = [("peg_in_hole", "moving", "peg"), ("bolting", "moving", "nut_M48x5"), ("bolting", "static", "bolt_M48x5")]


@pytest.mark.parametrize("scenario,role,part", PARTS, ids=[f"{s}:{p}" for s, _, p in PARTS])
@pytest.mark.parametrize("what,spoil,words", MESHES, ids=[c[0] for c in MESHES])
def test_a_bad_part_mesh_is_one_line_naming_file_and_field(tmp_path, what, spoil, words, scenario, role, part):
    home = _home(tmp_path)
    ply = home / "assets" / "parts" / f"{part}.ply"
    write_ply(ply, spoil(load_mesh(ply)))
    _one_line(_run(home, scenario), f"{part}.ply", f"parts.{role} = '{part}'", *words)


def test_every_shipped_mesh_passes_the_part_check():
    for name, spec in profiles.all_parts().items():
        check_part_mesh(load_mesh(ROOT / "assets" / "parts" / f"{name}.ply"), spec, name)


def _first(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# (what, the URDF text's spoiler, the words the line must hold besides the file's name)
URDFS = [
    ("NaN mass", lambda t: _first(t, '<mass value="4.970684"/>', '<mass value="nan"/>'),
     ["link 'link1' inertial mass", "nan"]),                   # was: parser lines on stderr, then exit 0
    ("truncated", lambda t: t[:len(t) // 2], ["not well-formed XML", "line"]),   # was: 3 lines of parser output
    ("negative mass", lambda t: _first(t, '<mass value="4.970684"/>', '<mass value="-1.0"/>'),
     ["link 'link1' inertial mass", "> 0"]),
    ("inf inertia", lambda t: _first(t, 'izz="0.009117"', 'izz="inf"'), ["link 'link1' inertial inertia izz"]),
    ("impossible inertia", lambda t: _first(t, 'izz="0.009117"', 'izz="5.0"'),
     ["link 'link1' inertial inertia", "triangle inequality"]),
    ("NaN joint origin", lambda t: _first(t, 'xyz="0.0 -0.0 0.333"', 'xyz="0.0 nan 0.333"'),
     ["joint 'joint1' origin xyz"]),
    ("a joint's parent missing", lambda t: _first(t, '<parent link="link3"/>', '<parent link="nolink"/>'),
     ["not a readable URDF", "nolink"]),                        # the parser's own error, captured
]


@pytest.mark.parametrize("what,spoil,words", URDFS, ids=[c[0] for c in URDFS])
def test_a_bad_robot_description_is_one_line_naming_file_and_field(tmp_path, what, spoil, words):
    home = _home(tmp_path)
    urdf = home / "assets" / "robots" / "panda.urdf"
    urdf.write_text(spoil(urdf.read_text()))
    _one_line(_run(home, "peg_in_hole"), "panda.urdf", *words)


def test_training_clustering_imports_cma_without_its_matplotlib_warning():
    """cma warns at import when matplotlib (its plots only) is missing; training imports it quietly."""
    pytest.importorskip("cma")
    r = subprocess.run([sys.executable, "-W", "default", "-c",
                        "from sim_core.learning.train_clustering import import_cma; import_cma()"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and "Warning" not in r.stderr, r.stderr
