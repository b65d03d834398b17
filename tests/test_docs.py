"""The documentation stays true: every file a doc names exists, every test it names is
defined, and the counts it states are the counts in the code.

Docs: README.md, CHANGELOG.md, docs/*.md and the comments of config/*.toml.  A "path" is a
token with a file extension (``sim_core/step.py``, ``S.mcap`` excepted below) or one that
starts with a top-level folder of the checkout (``tests/``, ``bench/``, ...).  Paths may be
written relative to a package (``dynamics/blocks.py`` for ``sim_core/dynamics/blocks.py``):
a file of the checkout must end with it.  Placeholders (``assets/sdf/PART.npz``,
``data/TASK_reference.mcap``), and paths outside the checkout (``~/.cache/...``,
``/dev/ttyACM0``, ``../shared/seeds/``) are not checked.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOP = ("tests", "docs", "config", "assets", "bench", "sim_core", "app", "haptics", "devices")
EXT = ("py", "md", "toml", "npz", "mcap", "ply", "json", "cfg", "urdf", "sh", "txt")
PATH = re.compile(
    r"(?<![\w/.~$-])((?:[\w.-]+/)*[\w-]+\.(?:" + "|".join(EXT) + r")(?:::[\w\[\]\-.,]+)?"
    r"|(?:" + "|".join(TOP) + r")/[\w./-]*)")
TEST_NAME = re.compile(r"`(test_\w+)(?:\[[^\]`]*\])?`")
PLACEHOLDER = re.compile(r"[A-Z]{3,}|\bS\.mcap$")       # TASK, PART, LOG, STATIC__MOVING; a log named S


def _docs() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md")),
            *sorted((ROOT / "config").glob("*.toml"))]


def _lines(doc: Path):
    """(line number, text) of a doc; a TOML file's comments only."""
    for i, line in enumerate(doc.read_text().splitlines(), 1):
        if doc.suffix == ".toml":
            if "#" not in line:
                continue
            line = line[line.index("#"):]
        yield i, line


def _files() -> list[str]:
    skip = {".git", "__pycache__", ".pytest_cache", ".ruff_cache", "build", "dist"}
    out = []
    for p in ROOT.rglob("*"):
        rel = p.relative_to(ROOT)
        if skip.intersection(rel.parts) or any(part.endswith(".egg-info") for part in rel.parts):
            continue
        out.append(rel.as_posix() + ("/" if p.is_dir() else ""))
    return out


FILES = _files()


def _find(path: str) -> list[str]:
    path = path.rstrip("/")
    return [f for f in FILES if f.rstrip("/") == path or f.rstrip("/").endswith("/" + path)]


def _defined_tests() -> set[str]:
    names = set()
    for f in (ROOT / "tests").rglob("test_*.py"):
        names.update(re.findall(r"^\s*def (test_\w+)", f.read_text(), re.M))
    return names


def test_every_path_a_doc_names_exists():
    missing = []
    for doc in _docs():
        for i, line in _lines(doc):
            for m in PATH.finditer(line):
                token = m.group(1).rstrip(".,);:")
                path, _, test = token.partition("::")
                if PLACEHOLDER.search(path) or "*" in path:
                    continue
                hits = _find(path)
                where = f"{doc.relative_to(ROOT)}:{i}: {token}"
                if not hits:
                    missing.append(where)
                elif test:
                    name = test.split("[")[0]
                    if not any(re.search(rf"^\s*def {re.escape(name)}\b", (ROOT / h).read_text(), re.M)
                               for h in hits if h.endswith(".py")):
                        missing.append(where + " (no such test)")
    assert not missing, "named in the docs but not in the checkout:\n" + "\n".join(missing)


def test_every_test_a_doc_names_is_defined():
    defined = _defined_tests()
    missing = [f"{doc.relative_to(ROOT)}:{i}: {name}" for doc in _docs() for i, line in _lines(doc)
               for name in TEST_NAME.findall(line) if name not in defined]
    assert not missing, "tests named in the docs that no test file defines:\n" + "\n".join(missing)


def _parametrized(fn: ast.FunctionDef) -> int:
    """How many tests a function collects as: the product of its parametrize lists' lengths."""
    n = 1
    for d in fn.decorator_list:
        if (isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "parametrize"
                and len(d.args) >= 2 and isinstance(d.args[1], (ast.List, ast.Tuple))):
            n *= len(d.args[1].elts)
    return n


def window_tests() -> int:
    """The tests of tests/app/view/test_view.py that need a display: those that take the
    `display` fixture or a fixture built on it (gl, window, frame, ...)."""
    tree = ast.parse((ROOT / "tests/app/view/test_view.py").read_text())
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    fixtures = {f.name: {a.arg for a in f.args.args} for f in fns if not f.name.startswith("test_")}
    needs = {"display"}
    while True:
        more = {name for name, args in fixtures.items() if args & needs} - needs
        if not more:
            break
        needs |= more
    return sum(_parametrized(f) for f in fns if f.name.startswith("test_") and {a.arg for a in f.args.args} & needs)


def test_the_number_of_window_tests_the_docs_state_is_the_count():
    n = window_tests()
    stated = [(doc.name, int(k)) for doc in _docs() if doc.suffix == ".md"
              for k in re.findall(r"\b(\d+)\s+window\s+tests\b", doc.read_text())]
    assert any(name == "README.md" for name, _ in stated), "the README states how many window tests there are"
    assert all(k == n for _, k in stated), f"{n} window tests in test_view.py; the docs say {stated}"


def test_the_readme_lists_every_scenario_in_config():
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Scenarios"):]
    table = table[:table.index("\n## ", 4)]
    listed = set(re.findall(r"^\| `(\w+)` \|", table, re.M))
    shipped = {p.stem for p in (ROOT / "config").glob("*.toml")}
    assert listed == shipped


@pytest.mark.parametrize("doc", [p.name for p in _docs() if p.suffix == ".md"])
def test_no_doc_speaks_of_two_scenarios(doc):
    """There are three (bolting, peg_in_hole, docking): "both scenarios" went stale with the third."""
    text = next(p for p in _docs() if p.name == doc).read_text()
    assert not re.search(r"\bboth scenarios\b|\btwo scenarios\b", text, re.I)
