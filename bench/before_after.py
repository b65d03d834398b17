"""The complete step of this tree against an earlier one, side by side in one run.

    git worktree add /tmp/before <commit>
    python bench/before_after.py --before /tmp/before [--rounds 3] [--tasks peg_in_hole bolting]

Each round runs every task headless (``tightsim run TASK --headless --summary-json``) once
with each tree, alternating, in fresh processes (each compiles or loads its own numba cache
first: a warm-up run per tree precedes the rounds).  Printed per task and tree: the median
over the rounds of the run's median and p99 step time, the task figure and the maximum
penetration (exact SDF), and the ratio after / before of the medians -- what a refactor that
must not slow the step is checked by.  Timings on a shared 2-core VM drift by up to 1.6x
between runs; alternating the trees within one run is what makes the ratio meaningful.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]


def run(tree: Path, task: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "s.json"
        subprocess.run([sys.executable, "-m", "app.cli", "run", task, "--headless", "--summary-json", str(out)],
                       cwd=tree, check=True, capture_output=True, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin",
                                                                       "OPENBLAS_NUM_THREADS": "1"})
        return json.loads(out.read_text())


def figure(s: dict) -> str:
    if s.get("advance_per_rev_m"):
        return f"{s['advance_per_rev_m'] * 1e3:.4f} mm/rev"
    return f"{s['insertion_depth_m'] * 1e3:.2f} mm in"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, type=Path, help="a checkout of the earlier commit")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tasks", nargs="+", default=["peg_in_hole", "bolting"])
    a = ap.parse_args(argv)
    trees = {"before": a.before.resolve(), "after": HERE}
    for task in a.tasks:
        for t in trees.values():
            run(t, task)                                   # warm-up: numba compilation
        got = {k: [] for k in trees}
        for _ in range(a.rounds):
            for k, t in trees.items():
                got[k].append(run(t, task))
        print(f"\n{task}: {a.rounds} alternating rounds, step ms (median of the runs' medians / p99)")
        med = {}
        for k, runs in got.items():
            med[k] = float(np.median([r["step_ms_median"] for r in runs]))
            p99 = float(np.median([r["step_ms_p99"] for r in runs]))
            s = runs[-1]
            pen = s.get("max_penetration_exact_sdf_m", s["max_penetration_m"])
            print(f"  {k:7s} {med[k]:7.3f} / {p99:7.3f}   {figure(s)}, max penetration {pen * 1e6:.1f} um")
        print(f"  ratio after / before (median): {med['after'] / med['before']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
