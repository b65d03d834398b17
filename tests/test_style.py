"""House rules CI checks: ruff (configured in pyproject.toml) reports nothing."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())   # the checkout


def test_ruff_reports_nothing():
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff not installed (it comes with the [test] extra)")
    r = subprocess.run([ruff, "check", "."], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-3000:]
