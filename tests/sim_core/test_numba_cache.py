"""numba's kernel cache is keyed on the whole source tree (``paths.use_numba_cache``): an
edit to any source file -- a callee compiled into a caller in another file included --
gives a fresh cache; an unchanged tree reuses it; the user's NUMBA_CACHE_DIR wins; a damaged
cache file is discarded and rebuilt (``paths.guard_kernel_cache``)."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

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


KERNEL = '''import sim_core  # noqa: F401  (tightsim's cache guard)
from numba import njit


@njit(cache=True)
def f(x):
    return 2 * x + 1


print(f(3), sum(f.stats.cache_hits.values()))
'''


def _run_kernel(folder: Path, cache: Path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=os.pathsep.join([str(ROOT), str(folder)]))
    return subprocess.run([sys.executable, str(folder / "kern.py")], capture_output=True, text=True, env=env,
                          cwd=folder, timeout=120)


@pytest.mark.parametrize("kind", ["nbi", "nbc"])
@pytest.mark.parametrize("damage", ["random bytes", "cut in half"])
def test_a_damaged_kernel_cache_is_discarded_and_rebuilt_with_one_note(tmp_path, kind, damage):
    """A cache file (numba's index *.nbi or data *.nbc) overwritten with random bytes or cut
    in half: the run gives the right result with one note on stderr (it used to end with an
    unpickling traceback), the kernel is compiled and cached again, and the next run loads
    it silently."""
    (tmp_path / "kern.py").write_text(KERNEL)
    cache = tmp_path / "cache"
    r = _run_kernel(tmp_path, cache)
    assert r.returncode == 0 and r.stdout.split() == ["7", "0"], r.stderr       # compiled, cached
    files = sorted(cache.rglob(f"*.{kind}"))
    assert len(files) == 1
    data = files[0].read_bytes()
    rng = np.random.default_rng(23)
    files[0].write_bytes(rng.integers(0, 256, len(data), dtype=np.uint8).tobytes() if damage == "random bytes"
                         else data[: len(data) // 2])
    r = _run_kernel(tmp_path, cache)
    assert r.returncode == 0 and r.stdout.split() == ["7", "0"], r.stderr       # compiled again
    note = r.stderr.strip().splitlines()
    assert len(note) == 1 and "damaged" in note[0] and "Traceback" not in r.stderr, r.stderr
    r = _run_kernel(tmp_path, cache)
    assert r.returncode == 0 and r.stdout.split() == ["7", "1"] and not r.stderr.strip(), r.stderr   # loaded
