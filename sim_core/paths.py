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
