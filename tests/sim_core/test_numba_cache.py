"""numba's kernel cache is keyed on the whole source tree (``paths.use_numba_cache``): an
edit to any source file -- a callee compiled into a caller in another file included --
gives a fresh cache; an unchanged tree reuses it; the user's NUMBA_CACHE_DIR wins."""
import os
import subprocess
import sys
from pathlib import Path

from sim_core import paths

ROOT = Path(paths.__file__).resolve().parents[1]


def _tree(tmp: Path, body: str) -> Path:
    for pkg in paths._PACKAGES:
        (tmp / pkg).mkdir(parents=True, exist_ok=True)
        (tmp / pkg / "__init__.py").write_text("")
    (tmp / "haptics" / "callee.py").write_text(body)
    return tmp


def test_an_edit_in_any_source_file_changes_the_cache_folder(tmp_path):
    a = paths.numba_cache_dir(_tree(tmp_path / "a", "def f(x):\n    return x + 1\n"))
    b = paths.numba_cache_dir(_tree(tmp_path / "b", "def f(x):\n    return x + 2\n"))
    a2 = paths.numba_cache_dir(_tree(tmp_path / "c", "def f(x):\n    return x + 1\n"))
    assert a != b and a.name == a2.name


def _cache_of(env: dict) -> str:
    code = "import sim_core, os, numba; print(os.environ.get('NUMBA_CACHE_DIR')); print(numba.config.CACHE_DIR)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_a_process_caches_under_the_digest_unless_the_user_says_where(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    got = _cache_of(env)
    want = str(tmp_path / "cache" / "tightsim" / "numba" / paths.source_digest())
    assert got == [want, want] and Path(want).is_dir()
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")
    assert _cache_of(env) == [str(tmp_path / "mine")] * 2
