"""Where the data folders are.

``assets/`` (generated meshes, later trained weights) and ``config/`` (scenario TOML files)
live at the top of the source tree.  An editable install (``pip install -e .``) finds them
next to the packages.  A non-editable install does not ship them: point ``TIGHTSIM_HOME``
at a checkout (the folder that holds ``assets/`` and ``config/``).  The parts in ``assets/``
can always be regenerated with ``tightsim assets build``.
"""
from __future__ import annotations

import os
from pathlib import Path

_SOURCE_ROOT = Path(__file__).resolve().parent.parent


def home() -> Path:
    """The folder holding assets/ and config/ (TIGHTSIM_HOME, else the source checkout)."""
    env = os.environ.get("TIGHTSIM_HOME")
    root = Path(env).expanduser() if env else _SOURCE_ROOT
    if not (root / "config").is_dir():
        where = f"TIGHTSIM_HOME={env}" if env else f"the source tree {root}"
        raise FileNotFoundError(
            f"tightsim data folders not found: expected config/ and assets/ under {where}; "
            "install editable from a checkout (pip install -e .) or set TIGHTSIM_HOME to one")
    return root


def assets_dir() -> Path:
    return home() / "assets"


def config_dir() -> Path:
    return home() / "config"


def scenario_path(name_or_path: str) -> Path:
    """A scenario given by name (``bolting``) or by path to a TOML file."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists():
        return p
    return config_dir() / f"{name_or_path}.toml"


# --- numba's compiled-kernel cache ----------------------------------------------------------
# numba's ``cache=True`` keys a function's cache on its own source file's timestamp: a callee
# compiled into it from another file (``coupling_kernel`` inside ``haptics.batch._run``) can
# change and the caller still loads the old machine code (it happened here: a test ran
# yesterday's passivity controller).  So the cache lives in a folder named by a digest of
# every source file of the packages: any edit, or an update, compiles afresh; an unchanged
# tree loads.  NUMBA_CACHE_DIR set by the user wins.
_PACKAGES = ("sim_core", "haptics", "devices", "app")
NUMBA_CACHES_KEPT = 3          # the newest source trees' caches kept (~30-60 MB each)


def source_digest(root: Path = _SOURCE_ROOT) -> str:
    """A digest of the packages' Python sources under `root` (names and contents)."""
    import hashlib
    h = hashlib.sha256()
    for pkg in _PACKAGES:
        for f in sorted((root / pkg).rglob("*.py")):
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def numba_cache_dir(root: Path = _SOURCE_ROOT) -> Path:
    """Where this source tree's kernels are cached: $XDG_CACHE_HOME (or ~/.cache)/tightsim/numba/DIGEST."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tightsim" / "numba" / source_digest(root)


def use_numba_cache() -> None:
    """Point numba's cache at ``numba_cache_dir()`` (unless NUMBA_CACHE_DIR is set), for this
    process and the ones it starts; prune all but the newest ``NUMBA_CACHES_KEPT``."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    try:
        d = numba_cache_dir()
        d.mkdir(parents=True, exist_ok=True)
        os.utime(d)
    except OSError:            # a read-only home: numba's default (next to the sources)
        return
    os.environ["NUMBA_CACHE_DIR"] = str(d)
    import sys
    if "numba" in sys.modules:  # imported before us: numba read its environment already
        sys.modules["numba"].config.CACHE_DIR = str(d)
    try:
        old = sorted((p for p in d.parent.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
        import shutil
        for p in old[:-NUMBA_CACHES_KEPT]:
            shutil.rmtree(p, ignore_errors=True)
    except OSError:
        pass


# --- a damaged kernel cache is discarded, not fatal ------------------------------------------
# numba reads its cache files (an index ``*.nbi`` and data ``*.nbc`` per kernel, both pickles)
# without any guard: a file with random bytes or cut in half (a full disk, a killed process on
# a file system without atomic renames, a bad copy) raised an unpickling error out of every
# run.  The guard wraps numba's per-kernel cache: a load that fails drops that kernel's index
# (so the kernel is compiled again and its files rewritten) with one note on stderr.  It is
# installed when numba's caching module is first imported, so importing sim_core alone does
# not import numba.
DAMAGE_NOTE_S = 60.0           # one note per this many seconds for all the processes of a session


def _note_damage(folder: str, err: BaseException) -> None:
    """One line on stderr, once per process and (by a marker file in the cache folder) once
    per ``DAMAGE_NOTE_S`` for all the processes of a session."""
    import sys
    import time
    if _GUARD["noted"]:
        return
    _GUARD["noted"] = True
    marker = Path(folder) / ".tightsim-damage-noted"
    try:
        if marker.exists() and time.time() - marker.stat().st_mtime < DAMAGE_NOTE_S:
            return
        marker.touch()
    except OSError:
        pass
    sys.stderr.write(f"tightsim: the numba kernel cache in {folder} had a damaged file "
                     f"({type(err).__name__}); discarded: its kernels are compiled again\n")


def _discard(cache, err: BaseException) -> None:
    try:
        os.unlink(cache._cache_file._index_path)
    except OSError:
        pass
    # the note names (and marks) the cache's top folder, the one all processes share
    _note_damage(os.environ.get("NUMBA_CACHE_DIR") or cache._cache_path, err)


def _index_damaged(cache) -> bool:
    try:
        cache._cache_file._load_index()
    except FileNotFoundError:
        return False
    except Exception:  # noqa: BLE001 - whatever the unpickler raises on garbage
        return True
    return False


def guard_kernel_cache(caching) -> None:
    """Wrap ``numba.core.caching.Cache``'s load and save (see above); idempotent."""
    Cache = caching.Cache
    if getattr(Cache, "_tightsim_guarded", False):
        return
    load, save = Cache.load_overload, Cache.save_overload

    def load_overload(self, sig, target_context):
        try:
            return load(self, sig, target_context)
        except Exception as e:  # noqa: BLE001 - a damaged file fails anywhere in unpickling or rebuilding
            _discard(self, e)
            return None         # a cache miss: numba compiles and saves afresh

    def save_overload(self, sig, data):
        try:
            return save(self, sig, data)
        except Exception as e:  # noqa: BLE001
            if not _index_damaged(self):
                raise
            _discard(self, e)
            return save(self, sig, data)

    Cache.load_overload, Cache.save_overload = load_overload, save_overload
    Cache._tightsim_guarded = True


_GUARD = {"noted": False}
_CACHING = "numba.core.caching"


class _AfterImport:
    """A meta-path finder that runs ``guard_kernel_cache`` right after numba's caching module
    is executed (then takes itself off the path)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _CACHING:
            return None
        import importlib.util
        import sys
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            guard_kernel_cache(module)
        spec.loader.exec_module = exec_module
        return spec


def use_kernel_cache_guard() -> None:
    """Guard numba's kernel cache in this process: now if numba's caching module is loaded,
    else when it is."""
    import sys
    if _CACHING in sys.modules:
        guard_kernel_cache(sys.modules[_CACHING])
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())
