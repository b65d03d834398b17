"""Every module a docstring or comment names exists: the code's own text stays true.

Under sim_core/, app/, haptics/ and devices/, each docstring and comment is read for
  * dotted module paths -- ``sim_core.io.shm.SeqSlot``, plain or in double backticks: the
    longest prefix that is a package or module must exist, and the next name must be defined
    at the top level of that module (a def, a class, an assignment, an import) or be one of
    its submodules;
  * double-backticked names relative to a module -- ``records.SNAPSHOT``, ``dynamics.blocks``
    (a config key, ``contact.friction``, is a config key):
    when the first name is an import alias of that file (``dynamics`` in step.py), a module's
    or package's own name anywhere in the four packages, it is resolved the same way (against
    each module of that name: one must define the next name); when it is neither, nor a name
    the file binds (a variable, an argument, an attribute), nor an importable module
    (``numpy``), nor in ``NOT_MODULES`` below, it names a module that does not exist
    (``robot.arm.Arm`` after ``robot`` moved to ``systems/arm``);
  * file paths ending in ``.py`` (``dynamics/pmi.py``, ``tests/sim_core/test_one_world.py``):
    a file of the checkout must end with the path.
Attributes past the first name after a module are not checked (``Model.pairs``).
"""
from __future__ import annotations

import ast
import importlib.util
import io
import re
import tokenize
from pathlib import Path

import pytest

from sim_core import config

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sim_core", "app", "haptics", "devices")
SOURCES = [p for d in PACKAGES for p in sorted((ROOT / d).rglob("*.py"))]
ALL_PY = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py")
          if not {".git", "build", "__pycache__"} & set(p.relative_to(ROOT).parts)]

# First names of backticked dotted words that are no module of this project and are bound
# nowhere in the file that writes them, each with why it is not a stale module path.
NOT_MODULES = {
    "tightsim": "the logger names of app/events.py (tightsim.haptic, ...), not a module",
    "w": "progress.py's usage example binds it in the docstring (with CompileWatch() as w)",
}

CONFIG_KEYS = {sec: set(fields) for sec, fields in config.SCHEMA.items()} | {"waypoints": set(config._WAYPOINT)}
DOTTED = re.compile(r"(?<![\w.])((?:sim_core|app|haptics|devices)(?:\.\w+)+)")
TICKED = re.compile(r"``([A-Za-z_]\w*(?:\.\w+)+)")
PY_FILE = re.compile(r"(?<![\w/.])((?:[\w.-]+/)*[\w-]+\.py)\b")


def _module_name(p: Path) -> str:
    name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


MODULES = {_module_name(p): p for p in SOURCES}
BY_SHORT: dict[str, list[str]] = {}
for _m in MODULES:
    BY_SHORT.setdefault(_m.split(".")[-1], []).append(_m)
_TOP: dict[str, set[str]] = {}


def top_names(module: str) -> set[str]:
    """Names defined at the top level of a module (with its submodules, for a package)."""
    if module not in _TOP:
        tree = ast.parse(MODULES[module].read_text())
        names = {m.split(".")[-1] for m in MODULES if m.rpartition(".")[0] == module}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.If, ast.Try)):       # guarded definitions
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
                        names.add(sub.name)
                    elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                        names.add(sub.id)
                    elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                        names.update((a.asname or a.name).split(".")[0] for a in sub.names)
        _TOP[module] = names
    return _TOP[module]


def resolves(module: str, rest: list[str], loose: bool = False) -> bool:
    """`rest` names something in `module`: submodules descended, then one top-level name (of
    a package: or of one of its modules, as the code's aliases use them: ``dynamics.assemble``
    for ``sim_core.dynamics.blocks.assemble``; only when `loose`: for relative names, never for
    absolute paths)."""
    while rest and f"{module}.{rest[0]}" in MODULES:
        module, rest = f"{module}.{rest[0]}", rest[1:]
    if not rest or rest[0] in top_names(module):
        return True
    if not loose:
        return False
    subs = [m for m in MODULES if m.rpartition(".")[0] == module and MODULES[m].name != "__init__.py"]
    return any(rest[0] in top_names(m) for m in subs)


def check_absolute(name: str) -> bool:
    parts = name.split(".")
    if parts[0] not in MODULES:
        return False
    return resolves(parts[0], parts[1:])


def aliases(tree: ast.Module, module: str) -> dict[str, str]:
    """Import aliases of a file that point at project modules: {local name: module}."""
    out = {}
    pkg = module.rpartition(".")[0] if not MODULES[module].name == "__init__.py" else module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in MODULES:
                    out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")
                base = ".".join(up[:len(up) - node.level + 1] + ([base] if base else []))
            for a in node.names:
                if f"{base}.{a.name}" in MODULES:
                    out[a.asname or a.name] = f"{base}.{a.name}"
    return out


def bound(tree: ast.Module) -> set[str]:
    """Every name a file binds or reads as an attribute: variables, arguments, attributes."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
    return out


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def texts(path: Path):
    """(line, text) of each comment and string literal of a file."""
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if tok.type in (tokenize.COMMENT, tokenize.STRING):
            yield tok.start[0], tok.string


def stale(path: Path) -> list[str]:
    module = _module_name(path)
    tree = ast.parse(path.read_text())
    alias, names = aliases(tree, module), None
    out = []
    for line, text in texts(path):
        where = f"{path.relative_to(ROOT)}:{line}"
        for m in DOTTED.finditer(text):
            if not check_absolute(m.group(1).rstrip(".")):
                out.append(f"{where}: {m.group(1)}")
        for m in TICKED.finditer(text):
            first, *rest = m.group(1).split(".")
            if rest[-1] in ("py", "md", "toml", "npz", "json", "urdf", "ply", "mcap"):
                continue                                  # a file name: checked below
            if first in PACKAGES:
                continue                                  # absolute: checked above
            if rest[0] in CONFIG_KEYS.get(first, ()):
                continue                                  # a config key: ``contact.friction``
            if first in alias:
                ok = resolves(alias[first], rest, loose=True)
            elif first in BY_SHORT:
                ok = any(resolves(mod, rest, loose=True) for mod in BY_SHORT[first])
            else:
                names = bound(tree) if names is None else names
                ok = first in names or first in NOT_MODULES or not first[0].islower() or _importable(first)
            if not ok:
                out.append(f"{where}: ``{m.group(1)}``")
        for m in PY_FILE.finditer(text):
            f = m.group(1)
            if not any(a == f or a.endswith("/" + f) for a in ALL_PY):
                out.append(f"{where}: {f}")
    return out


def test_the_checker_finds_stale_references(tmp_path, monkeypatch):
    """The checker can fail: a module that does not exist, a name a module does not define,
    a file that is not there."""
    assert not check_absolute("sim_core.robot.visual")
    assert not check_absolute("sim_core.io.shm.NoSuchSlot")
    assert check_absolute("sim_core.io.shm.SeqSlot") and check_absolute("sim_core.scenarios.tasks")
    src = ROOT / "sim_core" / "zz_stale_probe.py"
    text = ('"""Uses ``robot.arm.Arm``, ``records.NO_SUCH``, ``math3d.cayley``, sim_core.drive and\n'
            'tests/test_nothing.py; fine: ``records.SNAPSHOT``, ``np.zeros``, sim_core.step.step."""\n'
            'import numpy as np\n')
    try:
        src.write_text(text)
        MODULES[_module_name(src)] = src
        found = stale(src)
    finally:
        src.unlink()
        MODULES.pop(_module_name(src), None)
    assert [f.split(": ", 1)[1] for f in found] == [
        "sim_core.drive", "``robot.arm.Arm``", "``records.NO_SUCH``", "``math3d.cayley``", "tests/test_nothing.py"]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_module_a_docstring_or_comment_names_exists(package):
    found = [s for p in SOURCES if p.relative_to(ROOT).parts[0] == package for s in stale(p)]
    assert not found, "docstrings and comments name what does not exist:\n" + "\n".join(found)
