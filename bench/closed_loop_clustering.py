"""Closed-loop robustness of the contact clustering: the two scenarios (complete simulation,
the scenario's detector) from seeded perturbed starts (``scenario.perturbed``: the
nut's thread phase and offset, the peg's offset and tilt), per clustering:

* ``none``             -- every detected node its own contact (the peg's default);
* ``patches``          -- body patches split by normal direction, with its safety
                          net (deep groups add their deepest member; k-means beyond 0.5 mm);
* ``patches, no net``  -- patches alone (fallback depth 1 m);
* ``learned``          -- the trained networks, with the k-means safety net for steps deeper
                          than ``contact.fallback_depth``;
* ``learned, no net``  -- the networks on every step (fallback depth 1 m);
* ``kmeans``           -- k-means with each cluster's deepest member.

Per run: the deepest penetration by the exact SDF, the task figure (advance per engaged
revolution; insertion depth), and how many clustered steps fell back.  Per clustering: the
median and p99 of the clustering stage's time at the deepest 10 % of the steps in contact (the
node counts a run really reaches), and the step time.

    python bench/closed_loop_clustering.py [--runs 6] [--tasks bolting peg_in_hole]
"""
from __future__ import annotations

import argparse

import sim_core  # noqa: F401 - first: it sets the BLAS thread count the physics runs with

# isort: split
import numpy as np  # noqa: E402

from sim_core import config as config_mod  # noqa: E402
from sim_core.paths import scenario_path  # noqa: E402
from sim_core.scenarios import scenario

MODES = {"none": ("none", None), "patches": ("patches", None), "patches, no net": ("patches", 1.0),
         "learned": ("learned", None), "learned, no net": ("learned", 1.0), "kmeans": ("kmeans", None)}
PITCH_TOL = 0.02        # a run holds the thread when its advance per turn is within 2 % of the pitch
MIN_INSERTION = 0.040   # m: the peg run is complete when it is 40 of the 45 mm in


def run(task: str, mode: str, seed: int) -> dict:
    how, depth = MODES[mode]
    cfg = scenario.perturbed(config_mod.load(scenario_path(task)), seed)
    cfg["contact"]["clustering"] = how
    if depth is not None:
        cfg["contact"]["fallback_depth"] = depth
    model, state = scenario.build(cfg, f"{task} ({mode}, seed {seed})")
    scen = scenario.record(cfg)
    res = scenario.simulate(model, scen, state)
    s = scenario.summarize(res, state)
    n = np.array(res.n_contacts)
    t = np.array(res.stage_times["clustering"])
    deep = n >= np.percentile(n[n > 0], 90)
    if task == "bolting":
        ok = s["advance_per_rev_m"] is not None and abs(s["advance_per_rev_m"] / scen.static_dims["p"] - 1) <= PITCH_TOL
        fig = f"{s['advance_per_rev_m'] * 1e3:.3f} mm/rev" if s["advance_per_rev_m"] else "not engaged"
    else:
        ok = s["insertion_depth_m"] >= MIN_INSERTION
        fig = f"{s['insertion_depth_m'] * 1e3:.2f} mm in"
    return {"pen": s.get("max_penetration_exact_sdf_m", s["max_penetration_m"]), "ok": ok, "fig": fig,
            "fallback": s.get("learned_fallback_steps", 0), "clustered": s.get("clustered_steps", 0),
            "deep_t": t[deep], "deep_n": n[deep], "step": np.array(res.step_times)[n > 0]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=6, help="perturbed starts per task (seed 0: the scenario itself)")
    ap.add_argument("--tasks", nargs="+", default=["bolting", "peg_in_hole"])
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    a = ap.parse_args(argv)
    for task in a.tasks:
        detector = scenario.load(task)[2]["contact"]["detector"]
        print(f"\n{task}: {a.runs} runs (seeds 0-{a.runs - 1}), {detector} detector (the scenario's),"
              " complete simulation")
        print(f"  {'clustering':16s} {'holds':>6s} {'max pen. median / worst um':>27s} {'fallback steps':>15s}"
              f" {'clustering at deep 10 %: nodes, median / p99 ms':>49s} {'step median ms':>15s}")
        for mode in a.modes:
            rs = [run(task, mode, s) for s in range(a.runs)]
            pen = np.array([r["pen"] for r in rs]) * 1e6
            dt = np.concatenate([r["deep_t"] for r in rs]) * 1e3
            dn = np.concatenate([r["deep_n"] for r in rs])
            fb = sum(r["fallback"] for r in rs), sum(r["clustered"] for r in rs)
            print(f"  {mode:16s} {sum(r['ok'] for r in rs):3d}/{len(rs):<2d} {np.median(pen):13.0f}"
                  f" / {pen.max():<11.0f}"
                  f" {(f'{fb[0]} of {fb[1]}' if mode in ('learned', 'patches') else '-'):>15s}"
                  f" {f'{dn.min()}-{dn.max()}':>20s} {np.median(dt):12.3f} / {np.percentile(dt, 99):<13.3f}"
                  f" {np.median(np.concatenate([r['step'] for r in rs])) * 1e3:12.2f}")
            print("      per run: " + "; ".join(f"{r['fig']}, {r['pen'] * 1e6:.0f} um" for r in rs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
