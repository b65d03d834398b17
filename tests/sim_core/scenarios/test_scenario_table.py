"""The scenario builders come from one table (``tasks.TASKS``) and the scenarios package has
no import cycle: each module imports alone in a fresh interpreter, and the graph of the
package's imports -- those inside functions included, which is where the old
``docking`` <-> ``scenario`` cycle hid -- has no cycle."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from sim_core import config as config_mod
from sim_core.scenarios import tasks

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
PKG = ROOT / "sim_core" / "scenarios"
NAME = "sim_core.scenarios"
MODULES = sorted(p.stem for p in PKG.glob("*.py") if p.stem != "__init__")


def _imports(path: Path) -> set[str]:
    """The modules of the scenarios package that `path` imports, anywhere in it."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for n in names:
            if n.startswith(NAME + ".") and n[len(NAME) + 1:].split(".")[0] in MODULES:
                out.add(n[len(NAME) + 1:].split(".")[0])
    return out


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of `graph` (as the list of its nodes, first repeated at the end), or None."""
    state: dict[str, int] = {}          # 1: on the path, 2: done

    def visit(n, path):
        state[n] = 1
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return path[path.index(m):] + [m]
            if m not in state:
                found = visit(m, path + [m])
                if found:
                    return found
        state[n] = 2
        return None
    for n in sorted(graph):
        if n not in state:
            found = visit(n, [n])
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    # the old graph: docking.build imported scenario, scenario.build imported docking
    assert cycle({"docking": {"scenario"}, "scenario": {"docking"}, "fidelity": {"scenario"}}) == \
        ["docking", "scenario", "docking"]
    assert cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_scenarios_package_has_no_import_cycle():
    graph = {m: _imports(PKG / f"{m}.py") - {m} for m in MODULES}
    assert graph["scenario"] >= {"tasks"} and graph["tasks"] >= {"docking", "mesh_parts"}   # it sees them
    assert cycle(graph) is None, f"import cycle in {NAME}: {' -> '.join(cycle(graph))}"


@pytest.mark.parametrize("module", MODULES)
def test_each_scenario_module_imports_alone(module):
    r = subprocess.run([sys.executable, "-c", f"import {NAME}.{module}"], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


def test_the_table_has_every_task_the_config_allows():
    allowed = set(config_mod.SCHEMA["scenario"]["task"].choices)
    assert set(tasks.TASKS) == allowed
    for name, t in tasks.TASKS.items():
        assert callable(t.build) and callable(t.dims) and callable(t.figures), name


@pytest.mark.parametrize("path", sorted((ROOT / "config").glob("*.toml")), ids=lambda p: p.stem)
def test_every_shipped_scenario_has_a_builder_and_its_dimensions(path):
    cfg = config_mod.load(path)
    t = tasks.task(cfg)
    static, moving = t.dims(cfg, str(path))
    assert static and moving
    assert tasks.set_point_offset(cfg, str(path)).shape == (3,)
