"""The command line: help everywhere, assets build reproducibility, shipped assets current."""
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())   # the checkout


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, **kw)


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["assets", "--help"],
                                  ["assets", "build", "--help"]])
def test_help_everywhere(args):
    r = _cli(*args)
    assert r.returncode == 0 and "usage: tightsim" in r.stdout


def _hashes(folder: Path) -> dict:
    return {f"{sub}/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest()
            for sub in ("parts", "robots", "fem") for p in sorted((folder / sub).iterdir())}


def test_assets_build_twice_identical_and_matches_shipped(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert _cli("assets", "build", "--out", str(a)).returncode == 0
    assert _cli("assets", "build", "--out", str(b)).returncode == 0
    ha, hb = _hashes(a), _hashes(b)
    assert ha == hb and len(ha) == 33            # 24 parts + manifest + 2 arm URDFs + 6 prong meshes
    shipped = _hashes(ROOT / "assets")
    stale = sorted(k for k in ha if shipped.get(k) != ha[k])
    assert not stale, f"assets/ is out of date, run `tightsim assets build`: {stale}"


def test_unknown_scenario_one_line():
    r = _cli("run", "no_such_scenario", "--headless")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "no_such_scenario" in r.stderr


def test_corrupt_shipped_mesh_is_reported_with_its_file(tmp_path, monkeypatch):
    """A damaged moving-part mesh under TIGHTSIM_HOME stops the run with one line."""
    home = tmp_path / "home"
    (home / "assets" / "parts").mkdir(parents=True)
    (home / "config").symlink_to(ROOT / "config")
    bad = home / "assets" / "parts" / "peg.ply"
    bad.write_bytes(b"ply\nformat ascii 1.0\nend_header\n")
    r = _cli("run", "peg_in_hole", "--headless", "--duration", "0.02",
             env={**__import__("os").environ, "TIGHTSIM_HOME": str(home)})
    assert r.returncode == 2
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1 and "peg.ply" in line


def test_first_run_says_that_it_compiles_and_a_cached_run_does_not(tmp_path):
    """A cold numba cache (NUMBA_CACHE_DIR an empty folder, as on a fresh machine) compiles
    every kernel the run needs (0.05 s of peg in hole, no contact yet: both runs together take
    about 12 s here): the run says so at once and stage by stage, and leaves those steps out of
    the step time; the next run loads the cache and says nothing."""
    from sim_core.io.progress import COMPILE_NOTICE
    env = {**__import__("os").environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    args = ("run", "peg_in_hole", "--headless", "--duration", "0.05")
    cold = _cli(*args, env=env, timeout=600)
    assert cold.returncode == 0, cold.stderr
    err = cold.stderr.splitlines()
    assert err[0] == COMPILE_NOTICE
    assert any(ln.startswith("  loading the scenario: ") and "kernels compiled in" in ln for ln in err)
    assert any(ln.startswith("  step 1 (t = 0.01 s") for ln in err), cold.stderr
    assert "steps that compiled kernels: first run" in cold.stdout
    warm = _cli(*args, env=env, timeout=600)
    assert warm.returncode == 0 and "compiling" not in warm.stderr and "compiled" not in warm.stdout


@pytest.mark.parametrize("args", [["train", "sdf"], ["train", "cspace"], ["train", "clustering"],
                                  ["data", "reference"], ["replay"], ["log", "info"]])
def test_help_of_every_command_survives_the_one_line_parser(args):
    """Errors are one line (issue 23); help is still argparse's own, whole."""
    r = _cli(*args, "--help")
    assert r.returncode == 0 and r.stdout.startswith(f"usage: tightsim {' '.join(args)}") and not r.stderr


def test_an_unknown_command_is_one_line_naming_the_commands():
    r = _cli("runn", "bolting")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "unknown command 'runn'" in r.stderr
    assert "'run'" in r.stderr and not r.stdout
