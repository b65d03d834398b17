"""Fidelity under load: each law's error for every contact node + exact SDF (the reference),
k-means + exact SDF, and the shipped defaults, side by side in one run, with the step time.

    python bench/fidelity.py [--full] [--variants every+exact kmeans+exact defaults] [--only wall]

Laws (``sim_core.fidelity``, closed forms in its docstring): the power-screw torque raising
and lowering (mu 0.1 / 0.2 / 0.3; 100 N and 300 N, and 1 kN reported) and the advance per
turn against the lead; a nut under a pure axial load above the self-locking limit (descent
in 5 s) and below it (runs down); a peg pressed on the bore wall with N = 20 N and pushed
with 0.9 and 0.95 mu N (creep velocity) and 1.05, 1.1 and 1.3 mu N (acceleration against
(F - mu N) / m); a frictionless peg pressed on the wall (axial force).  The torque-free body's energy and
momentum are PMI's (tests/test_pmi.py).  Step times are medians of each protocol's steps
(arm off, part alone).  Without --full: mu 0.2 raising and mu 0.3 lowering at each load.
"""
from __future__ import annotations

import argparse
import math

import sim_core  # noqa: F401 - first: it sets the BLAS thread count the physics runs with

# isort: split
from sim_core.geometry.profiles import ThreadSpec
from sim_core.scenarios import fidelity as F

THREAD = ThreadSpec()          # the bolting scenario's M48x5 (d2, lead) for the closed forms

MU_N, WALL_N = 0.2, 20.0


def _screw_rows(variants, full):
    cases = [(mu, load, up) for load in (100.0, 300.0, 1000.0) for mu in (0.1, 0.2, 0.3) for up in (True, False)]
    if not full:
        cases = [c for c in cases if (c[0], c[2]) in ((0.2, True), (0.3, False))]
    print("\npower screw: torque error vs the relation (lead error), median step ms")
    print(f"{'mu':>4} {'load N':>7} {'turn':>6} {'law N m':>8} | " + " | ".join(f"{v:^30}" for v in variants))
    for mu, load, up in cases:
        cells = []
        for v in variants:
            try:
                r = F.power_screw(v, mu, load, up)
                off = " LEFT THREAD" if r.left_thread else ""
                cells.append(f"{r.torque_error:+7.1%} ({r.lead_error:+6.2%}) {r.step_ms:5.1f}ms{off}")
            except FloatingPointError:
                cells.append("diverged")
        law = F.screw_torque(load, mu, up, THREAD.d2, THREAD.p)
        print(f"{mu:4.1f} {load:7.0f} {'raise' if up else 'lower':>6} {law:8.3f} | "
              + " | ".join(f"{c:^30}" for c in cells))


def _hold_rows(variants):
    print("\nnut under a pure axial load: descent (mm) in the span; below the limit: fitted accel vs the law")
    for mu, load, sec in ((0.1, 100.0, 5.0), (0.05, 50.0, 5.0), (0.01, 100.0, 0.5), (0.0, 100.0, 0.5)):
        cells = []
        for v in variants:
            h = F.axial_hold(v, mu, load, seconds=sec)
            if mu > h.locking_mu:
                cells.append(f"{h.descent * 1e3:9.4f} mm {h.step_ms:5.1f}ms")
            else:
                cells.append(f"{h.descent * 1e3:6.2f} mm a {h.accel:.4f}/{h.accel_law:.4f} {h.step_ms:4.1f}ms")
        print(f"mu {mu:4.2f} F {load:5.0f} N {sec:3.1f} s | " + " | ".join(f"{c:^36}" for c in cells))


# push / mu N and the seconds of each wall case: a slide at 2.8 m/s^2 leaves the bore after 0.1 s
WALL_CASES = ((0.9, 1.0), (0.95, 1.0), (1.05, 0.2), (1.1, 0.2), (1.3, 0.1))


def _wall_rows(variants):
    print(f"\npeg on the bore wall, N = {WALL_N:g} N, mu = {MU_N}")
    for ratio, seconds in WALL_CASES:
        cells = []
        for v in variants:
            r = F.peg_on_wall(v, MU_N, WALL_N, ratio * MU_N * WALL_N, seconds=seconds)
            if ratio < 1:
                cells.append(f"creep {r.velocity * 1e6:8.3f} um/s {r.step_ms:5.2f}ms")
            else:
                err = r.accel / r.accel_law - 1.0
                cells.append(f"accel {r.accel:6.3f}/{r.accel_law:.3f} ({err:+.1%}) {r.step_ms:5.2f}ms")
        print(f"F = {ratio:4.2f} mu N | " + " | ".join(f"{c:^36}" for c in cells))
    cells = []
    for v in variants:
        r = F.peg_on_wall(v, 0.0, WALL_N, 0.0)
        cells.append(f"axial force {r.axial_force:+.4f} N {r.step_ms:5.2f}ms")
    print("frictionless      | " + " | ".join(f"{c:^36}" for c in cells))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true", help="every mu and direction of the power screw")
    ap.add_argument("--variants", nargs="+", default=list(F.VARIANTS), choices=list(F.VARIANTS))
    ap.add_argument("--only", choices=("screw", "hold", "wall"), help="one group of laws")
    a = ap.parse_args(argv)
    F.power_screw("defaults", 0.2, 100.0, True, turns=0.05)      # numba compilation, outside the figures
    print("variants: " + ", ".join(a.variants))
    print(f"self-locking limit of the M48x5 thread: mu = {F.self_locking_mu(THREAD.d2, THREAD.p):.4f} "
          f"(lead angle {math.degrees(math.atan(THREAD.p / (math.pi * THREAD.d2))):.2f} deg)")
    groups = {"screw": lambda: _screw_rows(a.variants, a.full), "hold": lambda: _hold_rows(a.variants),
              "wall": lambda: _wall_rows(a.variants)}
    for name, run in groups.items():
        if a.only in (None, name):
            run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
