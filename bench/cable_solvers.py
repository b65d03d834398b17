"""Seed 002's three island solvers on one scene (``contact.island_solvers``): Solver 1 sparse
(``direct``: the island factorized on its blocks) and dense (``direct_dense``: the seed's dense
A^-1), Solver 2 (``subsystems``: Algorithm 1, the subsystems' PGS sweeps in parallel, numba
prange) and Solver 3 (``subsystems_regulated``: with the post-regulation of eq. (16)).

The scene: ``chain.draped`` with stiff links (``LinkSpec``'s bending springs, so every cut
coupling has H > 0, and a light bending damper), N links over the drum, T = 1 ms (a 1 cm link
turns too far in 10 ms for the couplings' turns, ``bench/chain.py``), contacts solved by PGS
(the subsystem solvers' kernel).  Settled ``--settle`` steps with Solver 1, then each solver
runs ``--steps`` steps from that state (its own trajectory).  Printed per N and solver: median
and p99 of the step and of its solving stage (ms), average and maximum iterations and how often
the cap (``island_iterations``) was hit, the first step's largest velocity difference to Solver
1's (relative), and for Solvers 2 and 3 the solving stage with 1 and with 2 numba threads and
their ratio (the parallel part's speed-up; the shared 2-core VM makes it indicative only).

    python bench/cable_solvers.py [--sizes 40 80 160] [--subsystems 8] [--steps 200] [--settle 150]
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numba
import numpy as np

import sim_core  # noqa: F401 - first: it sets the BLAS thread count the physics runs with
from sim_core import step as step_mod
from sim_core.scenarios import chain
from sim_core.types import Inputs

SOLVERS = ("direct", "direct_dense", "subsystems", "subsystems_regulated")
LINK = chain.LinkSpec(D=(0.0,) * 3 + (1e-5,) * 3)
T = 1e-3


def _inputs(n):
    return Inputs(np.zeros((n, 3)), np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 3)), np.zeros((n, 3)))


def run(model, st, inp, steps):
    wall, solve, its, caps = [], [], [], 0
    for _ in range(steps):
        t0 = time.perf_counter()
        st, info = step_mod.step(model, st, inp, T)
        wall.append(time.perf_counter() - t0)
        solve.append(info.times.get("solving", 0.0))
        its.append(info.sweeps)
        caps += info.capped
    return np.array(wall) * 1e3, np.array(solve) * 1e3, np.array(its), caps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[40, 80, 160])
    ap.add_argument("--subsystems", type=int, default=8)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--settle", type=int, default=150)
    ap.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=SOLVERS)
    a = ap.parse_args(argv)
    threads = numba.get_num_threads()
    for n in a.sizes:
        model, st = chain.draped(n, spec=LINK, dt=T)
        model = replace(model, contact=replace(model.contact, solver="pgs", subsystems=a.subsystems))
        inp = _inputs(n)
        for _ in range(a.settle):
            st, info = step_mod.step(model, st, inp, T)
        ref, _ = step_mod.step(model, st, inp, T)
        print(f"\nN = {n} links, n_s = {a.subsystems}, {len(info.contacts)} contacts at the start, T = {T * 1e3:g} ms")
        print(f"{'solver':22s} {'step med':>9s} {'p99':>7s} {'solve med':>10s} {'p99':>7s} {'avg it':>7s} "
              f"{'max it':>7s} {'caps':>9s} {'dV/|V|':>9s} {'1 thr':>7s} {'2 thr':>7s} {'1/2':>5s}")
        for name in a.solvers:
            m = replace(model, contact=replace(model.contact, island_solver=name))
            first, _ = step_mod.step(m, st, inp, T)          # compile / load, and the first step's agreement
            dv = np.abs(first.V - ref.V).max() / np.abs(ref.V).max()
            steps = a.steps if name != "direct_dense" else max(5, a.steps // 10)
            wall, solve, its, caps = run(m, st, inp, steps)
            par = ""
            if name.startswith("subsystems"):
                med = []
                for k in (1, min(2, threads)):
                    numba.set_num_threads(k)
                    med.append(float(np.median(run(m, st, inp, steps)[1])))
                numba.set_num_threads(threads)
                par = f"{med[0]:7.2f} {med[1]:7.2f} {med[0] / med[1]:5.2f}"
            print(f"{name:22s} {np.median(wall):9.2f} {np.percentile(wall, 99):7.2f} {np.median(solve):10.2f} "
                  f"{np.percentile(solve, 99):7.2f} {its.mean():7.1f} {its.max():7d} {caps:4d}/{steps:<4d} "
                  f"{dv:9.1e} {par}", flush=True)


if __name__ == "__main__":
    main()
