"""Docking (seed 004): from which start offsets and tilts the plate seats, and where it jams,
against the friction -- the shipped scenario (4 pins, 0.1 mm of radial play, the Panda's
admittance, no gravity) with its start moved, its set path straight down keeping the offset
and tilt (only the contacts can centre it).

    python bench/docking_seating.py [--pins 4] [--quick]

Prints one table per friction: rows the lateral offset (mm, along x+y), columns the tilt
(deg, about x), each cell S (seated), J (jammed: stopped short with the pins in the holes),
M (missed: a pin stands on the top face) with the height still to go.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim_core import config  # noqa: E402
from sim_core.paths import scenario_path  # noqa: E402
from sim_core.scenarios import docking, scenario  # noqa: E402


def run(cfg: dict, offset: float, tilt: float, mu: float) -> dict:
    c = docking.with_pins(cfg, cfg["docking"]["pins"])
    c["contact"]["friction"] = mu
    d = offset / math.sqrt(2.0)
    for tab in [c["start"], *c["waypoints"]]:
        tab["position"] = (d, d, tab["position"][2])
        tab["tilt_deg"] = (tilt, 0.0)
    model, st = scenario.build(c)
    res = scenario.simulate(model, scenario.record(c), st)
    return scenario.summarize(res, st)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pins", type=int, default=4)
    ap.add_argument("--quick", action="store_true", help="a 3 x 3 grid at one friction")
    a = ap.parse_args()
    cfg = docking.with_pins(config.load(scenario_path("docking")), a.pins)
    offsets = [0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0] if not a.quick else [0.0, 10.0, 25.0]
    tilts = [0.0, 1.0, 2.0, 4.0, 8.0] if not a.quick else [0.0, 2.0, 8.0]
    frictions = [0.1, 0.3, 0.6] if not a.quick else [0.3]
    r, rho = 0.5 * cfg["docking"]["hole_diameter"], 0.5 * cfg["docking"]["pin_diameter"]
    print(f"docking seating: {a.pins} pins, pin {2e3 * rho:g} mm in hole {2e3 * r:g} mm, "
          f"offset along x+y, tilt about x, set path straight down keeping both")
    t0 = time.perf_counter()
    for mu in frictions:
        print(f"\nfriction {mu:g}   (S seated / J jammed in the holes / M missed, a pin on the top face; mm to go)")
        print("offset mm | " + " | ".join(f"tilt {t:g} deg".rjust(14) for t in tilts))
        for off in offsets:
            cells = []
            for tilt in tilts:
                s = run(cfg, off * 1e-3, tilt, mu)
                if s["seated"]:
                    cells.append("S".rjust(14))
                else:
                    kind = "M" if s["height_to_seat_m"] > cfg["docking"]["hole_depth"] else "J"
                    cells.append(f"{kind} {s['height_to_seat_m'] * 1e3:5.1f}".rjust(14))
            print(f"{off:9g} | " + " | ".join(cells))
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
