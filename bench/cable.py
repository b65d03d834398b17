"""Seed 002 Table I on the winding scene, in one run: the three island solvers at 80 and 160
links, the scaling from 40 to 160 links, Solver 3 with 1 and 2 threads, and the peers.

The scene is ``config/cable_winding.toml`` (the seed's cable, the Panda winding it round the
drum at T = 10 ms), its links and solver set per row.  Each row runs the same ``--steps``
steps of the winding from the start (the part of the run where the cable is on the drum and
the arm pulls), and prints for the whole step and for its solving stage the median, p99 and
mean (ms), the solve's average and largest iteration count and how often it reached the cap
(``[contact] island_iterations``; the direct solvers report the contact solver's sweeps, capped
when its last sweep still changed a force by more than ``pgs_tolerance``), the tip force and the
deepest penetration (what a solver's speed bought or cost), and
Solver 3's speed-up over the dense and the sparse Solver 1 (the seed's Table I ratios: 14.9x
at 80 links, 40.6x at 160).  A row is one trajectory of its own; the ratios compare medians
of the same scene and number of steps, side by side in one run.

    python bench/cable.py [--steps 200] [--sizes 80 160] [--scaling 40 80 120 160] [--no-peers] [--rounds 3]

Rows that are not the seed's: "3 balanced" (``[contact] subsystem_split = "balanced"``), "3 serial
turns" (the couplings' turn kernels serial, ``couplings.PARALLEL_MIN_COUPLINGS = None``; the step
runs them in parallel from 64 couplings: at 80 and 160 links), and "1 sparse sub." / "3 subspace"
(the contact kernel pgs_subspace, the shipped scene's: the sweeps end on the island's normal
forces solved at once, which holds the coil the seed's PGS lets sink).

``--no-peers`` leaves out the XPBD / PyElastica comparison (``bench/cable_peers.py``, which
needs the ``[peers]`` extra for PyElastica).
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim_core import config as config_mod  # noqa: E402
from sim_core import step as step_mod  # noqa: E402
from sim_core.dynamics import couplings  # noqa: E402
from sim_core.paths import scenario_path  # noqa: E402
from sim_core.scenarios import scenario  # noqa: E402

SOLVERS = {"1 dense": "direct_dense", "1 sparse": "direct", "2": "subsystems", "3": "subsystems_regulated",
           "3 balanced": "subsystems_regulated", "3 serial turns": "subsystems_regulated",
           "1 sparse sub.": "direct", "3 subspace": "subsystems_regulated"}
# the rows whose contact kernel is the shipped scene's pgs_subspace, not the seed's PGS: the sweeps
# end on the normal forces solved at once, what holds the coil (docs/cable.md "Solvers 2 and 3
# holding the coil"); Solver 1 sparse and Solver 3 compared on it
KERNELS = {"1 sparse sub.": "pgs_subspace", "3 subspace": "pgs_subspace"}
# the runs' split of each row ([contact] subsystem_split): the seed's even runs of links, and
# the runs balanced by links + contacts (faster; not in the seed's table)
SPLIT = {"3 balanced": "balanced"}
# "3 serial turns": Solver 3 with the couplings' turn kernels serial (couplings.PARALLEL_MIN_COUPLINGS
# None; the other rows keep the step's, docs/cable.md "Step cost")
PARALLEL_TURNS = {"3 serial turns": None}
_STEPS_OWN = object()      # run(): keep couplings.PARALLEL_MIN_COUPLINGS as the step has it
SEED_RATIO = {80: 14.9, 160: 40.6}      # seed 002 Table I: Solver 1 / Solver 3 average step time
# The contact kernel of the direct rows: the seed's PGS, as its Solver 1 has it (Solvers 2 and 3
# sweep their own PGS).  The shipped scene uses "pgs_subspace", which holds the coil where PGS
# lets it sink (docs/cable.md) at the cost of its subspace steps: the table compares the seed's
# solvers as the seed builds them, and prints what each one's contacts let through.
KERNEL = "pgs"


def world(links: int, solver: str, subsystems: int | None = None, split: str = "links", kernel: str = KERNEL):
    path = scenario_path("cable_winding")
    cfg = copy.deepcopy(config_mod.load(path))
    cfg["cable"]["links"] = links
    cfg["contact"]["island_solver"] = solver
    cfg["contact"]["solver"] = kernel
    cfg["contact"]["subsystem_split"] = split
    # the seed's solvers as it builds them: the couplings taken at the turns predicted without the
    # contacts (Solvers 2 and 3 cut couplings at those turns; the scene's turn_passes is Solver 1's only)
    cfg["contact"]["turn_passes"] = 0
    if subsystems is not None:
        cfg["contact"]["subsystems"] = subsystems
    model, state = scenario.build(cfg, str(path))
    return model, state, scenario.record(cfg, str(path))


def run(links: int, solver: str, steps: int, subsystems: int | None = None, split: str = "links",
        parallel_turns=_STEPS_OWN, kernel: str = KERNEL) -> dict:
    kept = couplings.PARALLEL_MIN_COUPLINGS
    if parallel_turns is not _STEPS_OWN:
        couplings.PARALLEL_MIN_COUPLINGS = parallel_turns
    try:
        return _run(links, solver, steps, subsystems, split, kernel)
    finally:
        couplings.PARALLEL_MIN_COUPLINGS = kept


def _run(links: int, solver: str, steps: int, subsystems: int | None, split: str, kernel: str) -> dict:
    model, state, scen = world(links, solver, subsystems, split, kernel)
    loop = scen.control.start()
    wall, solve, its, caps, pen = [], [], [], 0, 0.0
    for k in range(steps + 2):
        inp = loop.inputs(model, state, model.dt)
        t0 = time.perf_counter()
        state, info = step_mod.step(model, state, inp)
        dt = time.perf_counter() - t0
        loop.measure(state, info)
        pen = max(pen, info.max_penetration)
        if k < 2:                  # the first steps load the kernels
            continue
        wall.append(dt)
        solve.append(info.times.get("solving", 0.0))
        its.append(info.sweeps)
        caps += int(getattr(info, "capped", 0))
    w, s = np.array(wall) * 1e3, np.array(solve) * 1e3
    return {"median": float(np.median(w)), "p99": float(np.percentile(w, 99)), "mean": float(w.mean()),
            "solve_median": float(np.median(s)), "solve_p99": float(np.percentile(s, 99)),
            "iter_mean": float(np.mean(its)), "iter_max": int(np.max(its)), "caps": caps, "steps": len(w),
            "tip": float(np.linalg.norm(loop.tip_force[-1])), "pen": pen}


def _median_of(name: str, rounds: list) -> dict:
    """A row's figures over the rounds: each timing the median of the rounds' (the same trajectory
    each round: the physics columns are the same)."""
    rs = [r[name] for r in rounds]
    out = dict(rs[0])
    for key in ("median", "p99", "mean", "solve_median", "solve_p99"):
        out[key] = float(np.median([r[key] for r in rs]))
    return out


def line(name: str, r: dict) -> str:
    return (f"  Solver {name:10s} step median {r['median']:8.3f}  p99 {r['p99']:8.3f}  mean {r['mean']:8.3f} ms | "
            f"solve median {r['solve_median']:8.3f}  p99 {r['solve_p99']:8.3f} ms | iterations mean "
            f"{r['iter_mean']:6.1f} max {r['iter_max']:4d}, at the cap {r['caps']}/{r['steps']} | tip "
            f"{r['tip']:.3f} N, penetration max {r['pen'] * 1e6:.0f} um")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--sizes", type=int, nargs="+", default=[80, 160])
    ap.add_argument("--scaling", type=int, nargs="+", default=[40, 80, 120, 160])
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run a size's rows this many times round-robin; timings: the rounds' median")
    a = ap.parse_args(argv)
    print(f"seed 002 Table I on cable_winding, T = 10 ms, {a.steps} steps a row, numba threads "
          f"{numba.get_num_threads()}")
    for n in a.sizes:
        print(f"{n} links:")
        rounds = []
        for k in range(a.rounds):          # the rows round-robin: a drift of the VM's speed hits them all
            got = {}
            for name, key in SOLVERS.items():
                got[name] = run(n, key, a.steps, split=SPLIT.get(name, "links"),
                                parallel_turns=PARALLEL_TURNS.get(name, _STEPS_OWN), kernel=KERNELS.get(name, KERNEL))
                if a.rounds > 1:
                    print(f"  round {k + 1}:" + line(name, got[name])[1:], flush=True)
            rounds.append(got)
        rows = {name: _median_of(name, rounds) for name in SOLVERS}
        for name in SOLVERS:
            print(line(name, rows[name]), flush=True)
        if a.rounds > 1:
            per = [r["1 dense"]["mean"] / r["3"]["mean"] for r in rounds]
            print(f"  Solver 3 / dense Solver 1 (mean) by round: {', '.join(f'{x:.1f}x' for x in per)}")
        s3 = rows["3"]["mean"]
        print(f"  Solver 3 faster than dense Solver 1 by {rows['1 dense']['mean'] / s3:.1f}x (mean; seed: "
              f"{SEED_RATIO.get(n, float('nan')):g}x), median {rows['1 dense']['median'] / rows['3']['median']:.1f}x; "
              f"than sparse Solver 1 by {rows['1 sparse']['mean'] / s3:.2f}x (mean), "
              f"{rows['1 sparse']['median'] / rows['3']['median']:.2f}x (median); balanced runs: "
              f"{rows['1 dense']['mean'] / rows['3 balanced']['mean']:.1f}x dense, "
              f"{rows['1 sparse']['mean'] / rows['3 balanced']['mean']:.2f}x sparse (mean); serial turns: "
              f"{rows['1 dense']['mean'] / rows['3 serial turns']['mean']:.1f}x dense (mean), "
              f"{rows['1 dense']['median'] / rows['3 serial turns']['median']:.1f}x (median)")
        sub = rows["3 subspace"]
        print(f"  with pgs_subspace (the coil held): Solver 3 faster than sparse Solver 1 by "
              f"{rows['1 sparse sub.']['mean'] / sub['mean']:.1f}x (mean), "
              f"{rows['1 sparse sub.']['median'] / sub['median']:.1f}x (median); Solver 3's median "
              f"{sub['median']:.2f} ms against the seed's kernel {rows['3']['median']:.2f} ms")
    print("Solver 3 with 1 and 2 numba threads (160 links):")
    both = {}
    for t in (1, 2):
        numba.set_num_threads(t)
        both[t] = run(160, "subsystems_regulated", a.steps)
        print(f"  {t} thread{'s' if t > 1 else ' '}: " + line("3", both[t]).strip(), flush=True)
    numba.set_num_threads(2)
    print(f"  solve stage 1 / 2 threads: {both[1]['solve_median'] / both[2]['solve_median']:.2f}x (median)")
    print("scaling, Solver 3 and sparse Solver 1:")
    for n in a.scaling:
        r3, r1 = run(n, "subsystems_regulated", a.steps), run(n, "direct", a.steps)
        print(f"  {n:4d} links: Solver 3 median {r3['median']:7.3f} ms, sparse Solver 1 {r1['median']:7.3f} ms",
              flush=True)
    if not a.no_peers:
        print("the free cable against XPBD and PyElastica (bench/cable_peers.py):", flush=True)
        import cable_peers
        cable_peers.main([])


if __name__ == "__main__":
    main()
