"""Accuracy of the shipped neural SDFs against the exact SDF, per static part (issue 4 item 4)
and per snap fit plug (issue 27: ``plug_snap_fit``, ...).

    python bench/sdf_accuracy.py [--points 100000] [--parts hole bolt_M48x5 ...]

For each part: 100,000 fresh points within 1 mm of the surface (a seed no training run
uses), the distance error's RMS, 99th percentile and maximum (um), and the angle between
the network's normal and the exact one (median, 99th percentile, deg), next to the targets
(hole, plugs: RMS <= 3, max <= 10 um; bolts: RMS <= 10, max <= 30 um; normal p99 <= 2 deg), and
the network's inference cost per point on those points.
"""
from __future__ import annotations

import argparse
import time


def main(argv=None) -> int:
    from sim_core.collision import neural_sdf
    from sim_core.geometry.sdf import exact_sdf
    from sim_core.learning import train_sdf
    from sim_core.paths import assets_dir

    parts = train_sdf.known_parts()
    static = sorted(train_sdf.sdf_parts(parts))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=100_000)
    ap.add_argument("--parts", nargs="+", default=static)
    a = ap.parse_args(argv)
    print(f"{'part':16s} {'kind':8s} | {'RMS um':>7s} {'p99':>7s} {'max':>7s} | {'target':>9s} | "
          f"{'normal med':>10s} {'p99 deg':>8s} | {'met':>3s} | {'us/point':>8s}")
    for name in a.parts:
        spec = parts[name]
        net = neural_sdf.load(assets_dir() / "sdf" / f"{name}.npz", spec=spec, part=name)
        acc = train_sdf.accuracy(net, exact_sdf(spec), n=a.points)
        p, _, _ = train_sdf.eval_points(exact_sdf(spec), min(a.points, 20_000))
        t0 = time.perf_counter()
        net.query(p)
        us = (time.perf_counter() - t0) / len(p) * 1e6
        rms_t, max_t = train_sdf.TARGETS[net.kind]
        met = (acc["rms_um"] <= rms_t and acc["max_um"] <= max_t
               and acc["normal_p99_deg"] <= train_sdf.NORMAL_P99_TARGET)
        print(f"{name:16s} {net.kind:8s} | {acc['rms_um']:7.2f} {acc['p99_um']:7.2f} {acc['max_um']:7.2f} | "
              f"{rms_t:>3g} / {max_t:>3g} | {acc['normal_median_deg']:10.3f} {acc['normal_p99_deg']:8.2f} | "
              f"{'yes' if met else 'no':>3s} | {us:8.3f}")
    print(f"({a.points} fresh points within {train_sdf.EVAL_BAND * 1e3:g} mm of each surface; "
          f"normal p99 target {train_sdf.NORMAL_P99_TARGET:g} deg)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
