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
