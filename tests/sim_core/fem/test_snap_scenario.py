"""Scenario ``snap_fit`` from the command line (issue 27): the summary, the plot's pixels, and bad
values as one-line errors naming the file and the key."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sim_core.io.png import read_png

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
SHIPPED = (ROOT / "config" / "snap_fit.toml").read_text()


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_snap_fit_runs_headless_with_its_summary_and_plot(tmp_path):
    png, js = tmp_path / "snap.png", tmp_path / "snap.json"
    r = _cli("run", "snap_fit", "--headless", "--plot", str(png), "--summary-json", str(js))
    assert r.returncode == 0, r.stderr
    assert "click at" in r.stdout and "seated" in r.stdout
    s = json.loads(js.read_text())
    assert s["clicked"] and s["seated"] and s["peak_insertion_force_N"] > 5.0
    img = read_png(png).astype(int)
    blue = (img[..., 2] > 180) & (img[..., 0] < 80)               # the plug's force
    red = (img[..., 0] > 180) & (img[..., 2] < 80)                # the floor's reaction
    assert blue.sum() > 200 and red.sum() > 200
    # the force rises to its peak before the click: the curve reaches the top of the plot
    assert np.flatnonzero((blue | red).any(axis=1)).min() < 20


@pytest.mark.parametrize("edit, key", [
    (("nu = 0.35", "nu = 0.5"), "socket.nu"),
    (("E = 1.6476e8", "E = 0.0"), "socket.E"),
    (('mesh = "coarse"', 'mesh = "coarse"\norder_contact = 10000'), "socket.order_contact"),
])
def test_bad_snap_values_are_one_line_naming_file_and_key(tmp_path, edit, key):
    cfg = tmp_path / "snap.toml"
    assert edit[0] in SHIPPED
    cfg.write_text(SHIPPED.replace(edit[0], edit[1], 1))
    r = _cli("run", str(cfg), "--headless")
    assert r.returncode != 0
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert str(cfg) in lines[0] and key in lines[0], lines[0]
