"""Per-stage timing of the baseline pipeline on both scenarios.

    python bench/stages.py [--duration S]

Runs each scenario headless once (after a short warm-up run that triggers numba
compilation, whose time is printed separately) and prints median and p99 per stage and for
the whole step, in milliseconds, plus the real-time factor (simulated time / summed step
time, as the README defines it).  Figures, not assertions.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from sim_core import step as step_mod
from sim_core.scenarios import scenario


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=None, help="simulated seconds per scenario")
    ap.add_argument("scenarios", nargs="*", default=["peg_in_hole", "bolting"])
    a = ap.parse_args()
    for name in a.scenarios:
        model, state, cfg = scenario.load(name)
        scen = scenario.record(cfg)
        t0 = time.perf_counter()
        scenario.simulate(model, scen, state, 2 * model.dt)          # compile / warm caches
        warm = time.perf_counter() - t0
        dur = a.duration if a.duration is not None else cfg["scenario"]["duration"]
        res = scenario.simulate(model, scen, state, dur)
        print(f"\n{name}: {res.steps} steps of {model.dt * 1e3:g} ms, warm-up (compile) {warm:.2f} s, "
              f"real-time factor {res.steps * model.dt / sum(res.step_times):.2f} (simulated / summed step time), "
              f"wall {res.wall:.2f} s")
        print(f"  {'stage':12s} {'median ms':>10s} {'p99 ms':>10s} {'mean ms':>10s}")
        rows = [(s, np.array(res.stage_times[s]) * 1e3) for s in step_mod.STAGES]
        rows.append(("step", np.array(res.step_times) * 1e3))
        for s, v in rows:
            print(f"  {s:12s} {np.median(v):10.3f} {np.percentile(v, 99):10.3f} {v.mean():10.3f}")


if __name__ == "__main__":
    main()
