"""Step time of a chain of N rigid links joined by PMI spring-dampers, hanging under gravity
(``sim_core.scenarios.chain``: one coupled island of 6 N coordinates, factorized on its blocks
along the chain, ``dynamics.blocktree``), at N = 10, 40, 160.

    python bench/chain.py [--steps 300] [--sizes 10 40 160]

Prints per N the median and p99 of the whole step and of each stage, the fitted exponent of
the step's cost from 40 to 160 links (log(t160 / t40) / log 4; the target is <= 1.2: the cost
per link must not grow) and whether 160 links step in under 10 ms.  Timings on the shared
2-core VM are indicative only.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np  # noqa: E402

import sim_core  # noqa: F401 - first: it sets the BLAS thread count the physics runs with
from sim_core import step as step_mod  # noqa: E402
from sim_core.scenarios import chain  # noqa: E402
from sim_core.types import Inputs  # noqa: E402


def run(n: int, steps: int) -> dict:
    model, st = chain.build(n)
    inp = Inputs(np.zeros((n, 3)), np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 3)), np.zeros((n, 3)))
    for _ in range(5):                                   # compile / load the kernels, warm the caches
        st, _ = step_mod.step(model, st, inp)
    total, stages = [], {}
    for _ in range(steps):
        t = time.perf_counter()
        st, info = step_mod.step(model, st, inp)
        total.append(time.perf_counter() - t)
        for k, v in info.times.items():
            stages.setdefault(k, []).append(v)
    return {"total": np.array(total), "stages": {k: np.array(v) for k, v in stages.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 40, 160])
    args = ap.parse_args()
    med = {}
    for n in args.sizes:
        r = run(n, args.steps)
        t = r["total"]
        med[n] = float(np.median(t))
        print(f"N = {n:4d}: step median {np.median(t) * 1e3:7.3f} ms, p99 {np.percentile(t, 99) * 1e3:7.3f} ms")
        for k, v in r["stages"].items():
            print(f"    {k:12s} median {np.median(v) * 1e3:7.3f} ms, p99 {np.percentile(v, 99) * 1e3:7.3f} ms")
    if 40 in med and 160 in med:
        k = math.log(med[160] / med[40]) / math.log(4.0)
        print(f"fitted exponent of the step's cost, 40 -> 160 links: {k:.2f} (target <= 1.2: "
              f"{'met' if k <= 1.2 else 'not met'})")
        print(f"160 links step in {med[160] * 1e3:.2f} ms median (target < 10 ms: "
              f"{'met' if med[160] < 0.010 else 'not met'})")


if __name__ == "__main__":
    main()
