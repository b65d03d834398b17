"""Does penetration creep over long runs now that a held penetration is never pushed out?
(issue 23 (5): the penetration target is capped at -u_n,k, ``solver_pgs``).

Runs a scenario (the Panda holding the part, the shipped config) for its duration or a
longer one (the set pose is held after the last waypoint) and prints the deepest and mean
penetration per window of simulated time: a creep shows as a window maximum that keeps
growing while the set pose is held.  No wall-clock figures.

    python bench/penetration_creep.py bolting --duration 30 --window 2
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from sim_core import config as config_mod
from sim_core.paths import scenario_path
from sim_core.scenarios import scenario


def windows(res, window: float):
    """(t0, t1, max um, mean um over the penetrating steps, steps in contact) per window."""
    t = np.array(res.t)
    mx, mn = np.array(res.max_pen) * 1e6, np.array(res.mean_pen) * 1e6
    out = []
    for t0 in np.arange(0.0, t[-1] - 1e-9, window):
        sel = (t > t0) & (t <= t0 + window + 1e-9)
        pen = mn[sel][mn[sel] > 0]
        out.append((t0, t0 + window, float(mx[sel].max(initial=0.0)), float(pen.mean()) if len(pen) else 0.0,
                    int((np.array(res.n_contacts)[sel] > 0).sum())))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", help="bolting, peg_in_hole or docking")
    ap.add_argument("--duration", type=float, help="s (default: the scenario's)")
    ap.add_argument("--window", type=float, default=1.0, help="s per printed window")
    a = ap.parse_args(argv)
    cfg = config_mod.load(scenario_path(a.scenario))
    model, state = scenario.build(cfg, a.scenario)
    res = scenario.simulate(model, scenario.record(cfg), state, a.duration)
    s = scenario.summarize(res, state)
    print(f"{a.scenario}: {res.steps} steps; penetration max {s['max_penetration_m'] * 1e6:.1f} um, "
          f"mean {s['mean_penetration_m'] * 1e6:.2f} um; {scenario.task_line(s)}")
    if "max_penetration_exact_sdf_m" in s:
        print(f"  max penetration by the exact SDF (neural detection): {s['max_penetration_exact_sdf_m'] * 1e6:.1f} um")
    print("window s      max um   mean um  contact steps")
    for t0, t1, mx, mn, nc in windows(res, a.window):
        print(f"{t0:5.1f}-{t1:5.1f}  {mx:8.1f}  {mn:8.2f}  {nc:5d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
