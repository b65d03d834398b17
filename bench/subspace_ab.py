"""Block SOR with and without its subspace steps (``solver_sor`` docstring), side by side.

    python bench/subspace_ab.py [--runs 5] [--tasks peg_in_hole bolting docking]

Per task the default scenario (as ``bench/complete_step.py`` builds it) runs `--runs` times
with each solver, interleaved in one process so both meet the same machine load; printed:
per solver the median over runs of the step-time median and p99 (ms) and the solves at the
sweep cap.  Plain block SOR is ``sor_with(..., every=0)``.
"""
from __future__ import annotations

import argparse

import sim_core  # noqa: F401 - first: it sets the BLAS thread count the physics runs with

# isort: split
import numpy as np  # noqa: E402

from sim_core import config  # noqa: E402
from sim_core.contact import solver_sor  # noqa: E402
from sim_core.paths import scenario_path  # noqa: E402
from sim_core.scenarios import scenario  # noqa: E402

SUBSPACE = solver_sor.sor


def plain(*args):
    return solver_sor.sor_with(*args, 0)[:6]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tasks", nargs="+", default=["peg_in_hole", "bolting", "docking"])
    a = ap.parse_args(argv)
    for task in a.tasks:
        cfg = config.load(scenario_path(task))
        rows = {"plain": [], "subspace": []}
        for _ in range(a.runs):
            for name, f in (("plain", plain), ("subspace", SUBSPACE)):
                caps = []

                def counted(*args, f=f, caps=caps):
                    out = f(*args)
                    caps.append(out[3] >= args[6])
                    return out
                solver_sor.sor = counted
                try:
                    model, state = scenario.build(cfg, task)
                    scen = scenario.record(cfg)
                    scenario.simulate(model, scen, state, 3 * model.dt)      # compile / warm caches
                    caps.clear()
                    res = scenario.simulate(model, scen, state)
                finally:
                    solver_sor.sor = SUBSPACE
                st = np.array(res.step_times) * 1e3
                rows[name].append((np.median(st), np.percentile(st, 99), sum(caps), len(caps)))
        for name, r in rows.items():
            r = np.array(r)
            print(f"{task:12s} {name:8s}  step median {np.median(r[:, 0]):.2f} ms  p99 {np.median(r[:, 1]):.2f} ms  "
                  f"at the sweep cap {int(r[-1, 2])} of {int(r[-1, 3])} solves")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
