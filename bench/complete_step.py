"""The complete simulation's step, stage by stage (seed 000 Fig. 11), and its real-time factor.

    python bench/complete_step.py [--tasks peg_in_hole bolting]

Per task, the default scenario (the Panda holding the part, neural detection, patch
clustering (12 body patches), block SOR, PMI for arm and part, T = 10 ms) runs headless once after a short
warm-up (numba compilation).  Printed: median and p99 ms of every stage and of the whole
step, and the real-time factor = simulated time / the summed step times of the same run
(the exact-SDF penetration check that the summary adds runs outside the steps).  Then the
task figure and the maximum penetration (exact SDF) next to the baseline pipeline's (exact
SDF detection, k-means with deepest members, PGS, same arm).  The C-space stage is timed with the row on, in a
third run, since it is off by default; a fourth run uses k-means clustering (deepest members)
instead of the default patch clustering and prints its stage time, task figure and
penetration.
"""
from __future__ import annotations

import argparse
import copy

import sim_core  # noqa: F401 - first: it sets the BLAS thread count the physics runs with

# isort: split
import numpy as np  # noqa: E402

from sim_core import step as step_mod  # noqa: E402
from sim_core.scenarios import scenario  # noqa: E402


def run(cfg: dict, label: str):
    model, state = scenario.build(cfg, label)
    scen = scenario.record(cfg)
    scenario.simulate(model, scen, state, 3 * model.dt)                  # compile / warm caches
    res = scenario.simulate(model, scen, state)
    return model, state, res


def figure(res, state) -> str:
    s = scenario.summarize(res, state)
    if "advance_per_rev_m" in s:
        return f"{3 * s['advance_per_rev_m'] * 1e3:.3f} mm in three turns ({s['advance_per_rev_m'] * 1e3:.4f} mm/rev)"
    return f"insertion {s['insertion_depth_m'] * 1e3:.2f} mm"


def max_pen(res) -> float:
    return max(res.exact_max_pen) if res.exact_max_pen else max(res.max_pen)


def variant(cfg: dict, **contact) -> dict:
    """A copy of the scenario config with some contact keys changed."""
    c = copy.deepcopy(cfg)
    c["contact"].update(contact)
    return c


def stage_and_step(res, stage: str) -> str:
    v = np.array(res.stage_times[stage]) * 1e3
    st = np.array(res.step_times) * 1e3
    return (f"{stage} stage {np.median(v):.3f} / {np.percentile(v, 99):.3f} ms, "
            f"step {np.median(st):.3f} / {np.percentile(st, 99):.3f} ms")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", nargs="+", default=["peg_in_hole", "bolting"])
    a = ap.parse_args(argv)
    for task in a.tasks:
        _, _, cfg = scenario.load(task)
        model, state, res = run(copy.deepcopy(cfg), task)
        steps = np.array(res.step_times) * 1e3
        print(f"\n{task}: {res.steps} steps of {model.dt * 1e3:g} ms, arm with {model.systems[0].arm.nv} joints, "
              f"real-time factor {res.steps * model.dt / (steps.sum() / 1e3):.2f} (simulated / step time)")
        print(f"  {'stage':12s} {'median ms':>10s} {'p99 ms':>10s}")
        for s in step_mod.STAGES:
            v = np.array(res.stage_times[s]) * 1e3
            print(f"  {s:12s} {np.median(v):10.3f} {np.percentile(v, 99):10.3f}")
        print(f"  {'step':12s} {np.median(steps):10.3f} {np.percentile(steps, 99):10.3f}   "
              f"(targets: median <= 5, p99 <= 10)")
        _, _, res_c = run(variant(cfg, cspace="on"), task + " with C-space")
        print(f"  with the C-space row on: {stage_and_step(res_c, 'cspace')} (median / p99)")
        _, state_g, res_g = run(variant(cfg, clustering="kmeans"), task + " with k-means clustering")
        print(f"  with k-means clustering: {stage_and_step(res_g, 'clustering')}; {figure(res_g, state_g)}, "
              f"max penetration {max_pen(res_g) * 1e6:.1f} um")
        _, state_b, res_b = run(variant(cfg, detector="exact", solver="pgs", clustering="kmeans"), task + " baseline")
        print(f"  complete pipeline: {figure(res, state)}, max penetration {max_pen(res) * 1e6:.1f} um (exact SDF)")
        print(f"  baseline pipeline (exact SDF, PGS, same arm): {figure(res_b, state_b)}, "
              f"max penetration {max_pen(res_b) * 1e6:.1f} um")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
