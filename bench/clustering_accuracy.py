"""Contact-wrench accuracy of the clustering (seed 000 Fig. 9 and Fig. 14): learned clustering
against K-means, on the held-out 30 % of each task's wrench data, then on the ten Table II
pairs with the bolting networks not retrained.

    python bench/clustering_accuracy.py [--data DIR] [--table2 DIR] [--samples 1000]

For every held-out sample in contact (up to --samples, evenly spread), the simulator computes
the contact wrench from the logged state -- detection at the logged pose with the shipped
neural SDF, clustering to M_c = 12, one solver step of the simulator's T = 10 ms with the
logged external wrench -- and compares it with the data's mean contact wrench over the same
10 ms (the reference runs at 1 ms):
  (a) learned clustering (assets/clustering/TASK.npz) + the seed's solver,
  (b) K-means + PGS: the seed's baseline -- k-means centroids with the members' mean normal
      and mean depth, projected Gauss-Seidel,
  (c) K-means + the seed's solver (the same centroids),
and, for context, the simulator's k-means (each cluster's deepest member) with PGS and
with the seed's solver, and every detected node with the seed's solver (no clustering).
Prints the force / torque RMSE per method, the ratio (a)/(b) (target <= 0.2) and (a) against
the RMS reference force (target <= 0.10); the clustering stage's median / p99 time at the
deepest 10 % of engagement, one call per sample on the nodes of the pose's broad phase and
detection run just before, as in a simulation step (and after the previous sample's other
methods' solves); per Table II pair (data from ``tightsim data reference --task
table2``) the force RMSE of (a) and (b).  PNGs: the force error per held-out sample (Fig. 9)
and the Table II RMSE bars (Fig. 14).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import sim_core  # noqa: F401 - first: it sets the BLAS thread count the physics runs with

# isort: split
from dataclasses import replace  # noqa: E402

import numpy as np  # noqa: E402

from sim_core.contact import clustering
from sim_core.contact import interaction_networks as clustering_in
from sim_core.contact import solvers as contact_solve
from sim_core.learning import train_clustering as TC
from sim_core.learning import wrench_data
from sim_core.paths import assets_dir  # noqa: E402
from sim_core.shapes import nodes_of  # noqa: E402

METHODS = {  # key -> (label, clustering, solver)
    "learned": ("(a) learned + seed solver", "learned", "sor"),
    "kmeans_pgs": ("(b) K-means + PGS (seed baseline)", "centroid", "pgs"),
    "kmeans_sor": ("(c) K-means + seed solver", "centroid", "sor"),
    "deepest_pgs": ("    k-means deepest + PGS", "deepest", "pgs"),
    "deepest_sor": ("    k-means deepest + seed solver", "deepest", "sor"),
    "all_sor": ("    every node + seed solver", "all", "sor"),
}
COLOURS = {"learned": (210, 30, 30), "kmeans_pgs": (0, 0, 0), "kmeans_sor": (40, 90, 200),
           "deepest_pgs": (150, 150, 150), "deepest_sor": (90, 170, 90), "all_sor": (230, 160, 0)}


def wrench(model, sample, reps, solver: str) -> np.ndarray:
    st, f_ext, _, _ = sample
    params = replace(model.contact, solver=solver)
    return contact_solve.solve_body(params, reps, model.bodies[0], st, f_ext, np.zeros((6, 6)), model.dt).generalized


def evaluate(data_path: Path, n: int, net, methods=tuple(METHODS), held_out: bool = True):
    """Errors (n, 6) per method, the reference wrenches, (node count, clustering seconds)."""
    data = wrench_data.load(data_path)
    if held_out:
        _, test = data.split(0.7)
        idx = np.flatnonzero(np.isin(data.episode, np.unique(test.episode)))
    else:
        idx = np.arange(len(data))
    model = TC.model_for(data)
    samples = TC.spread(TC.prepare(model, data, idx[:: max(1, len(idx) // (3 * n))]), n)
    c = model.contact
    out = {k: [] for k in methods}
    times = []
    for s in samples:
        reps = {}
        for k in methods:
            _, how, solver = METHODS[k]
            if how not in reps:
                if how == "learned":
                    nodes = redetect(model, s[0])          # as in a step: detection just before
                    t0 = time.perf_counter()
                    reps[how] = clustering_in.cluster(net, nodes, s[0], s[1], model.shapes[0],
                                                      nodes_of(model, 0).node_nb)
                    times.append((len(nodes), time.perf_counter() - t0))
                elif how == "all":
                    reps[how] = s[2]
                else:
                    reps[how] = clustering.kmeans(s[2], c.clusters, c.normal_scale, how)
            out[k].append(wrench(model, s, reps[how], solver) - s[3])
    ref = np.array([s[3] for s in samples])
    return {k: np.array(v) for k, v in out.items()}, ref, np.array(times)


def redetect(model, st):
    """The pose's contact nodes, detected again (what precedes the clustering in a step; the
    same nodes as the sample's cached set, in new arrays)."""
    return TC.detected(model, st)


def rmse(e, sl=slice(0, 3)) -> float:
    return float(np.sqrt(np.mean(np.sum(e[:, sl] ** 2, axis=1))))


def plot_errors(series: dict, path: str, size=(900, 520)) -> None:
    """Fig. 9-like: |force error| per held-out sample, one panel per task."""
    from sim_core.io.png import write_png
    W, H = size
    img = np.full((H, W, 3), 255, np.uint8)
    ph = H // len(series)
    pad = 24
    for j, (_task, errs) in enumerate(series.items()):
        y0, y1 = j * ph + pad, (j + 1) * ph - pad
        shown = {k: e for k, e in errs.items() if k in ("learned", "kmeans_pgs", "kmeans_sor")}
        top = max(float(np.linalg.norm(e[:, :3], axis=1).max()) for e in shown.values()) or 1.0
        img[y1, pad:W - pad] = 0
        for k, e in shown.items():
            v = np.linalg.norm(e[:, :3], axis=1)
            xs = (pad + np.arange(len(v)) * (W - 2 * pad - 1) / max(len(v) - 1, 1)).astype(int)
            ys = (y1 - v / top * (y1 - y0)).astype(int)
            img[np.clip(ys, 0, H - 1), xs] = COLOURS[k]
    write_png(path, img)


def plot_bars(rows: list, path: str, size=(900, 360)) -> None:
    """Fig. 14-like: force RMSE per Table II pair, learned (red) beside K-means + PGS (black)."""
    from sim_core.io.png import write_png
    W, H = size
    img = np.full((H, W, 3), 255, np.uint8)
    pad = 20
    top = max(max(r[1], r[2]) for r in rows) or 1.0
    slot = (W - 2 * pad) // len(rows)
    img[H - pad, pad:W - pad] = 0
    for j, (_, learned, base) in enumerate(rows):
        x0 = pad + j * slot + slot // 6
        bw = slot // 3
        for k, (v, col) in enumerate(((learned, COLOURS["learned"]), (base, COLOURS["kmeans_pgs"]))):
            h = int(v / top * (H - 2 * pad))
            img[H - pad - h:H - pad, x0 + k * bw:x0 + (k + 1) * bw - 2] = col
    write_png(path, img)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="data", help="folder with TASK_reference.mcap")
    ap.add_argument("--table2", default=None, help="folder with bolting_PAIR_reference.mcap (default: --data)")
    ap.add_argument("--samples", type=int, default=1000, help="held-out samples per task")
    ap.add_argument("--table2-samples", type=int, default=300, help="samples per Table II pair")
    ap.add_argument("--tasks", nargs="+", default=["peg_in_hole", "bolting"])
    ap.add_argument("--png", default="bench/clustering_accuracy.png")
    ap.add_argument("--png-table2", default="bench/clustering_table2.png")
    a = ap.parse_args(argv)
    series = {}
    nets = {t: clustering_in.load(assets_dir() / "clustering" / f"{t}.npz", task=t) for t in a.tasks}
    for task in a.tasks:
        errs, ref, times = evaluate(Path(a.data) / f"{task}_reference.mcap", a.samples, nets[task])
        series[task] = errs
        f_rms = float(np.sqrt(np.mean(np.sum(ref[:, :3] ** 2, axis=1))))
        print(f"\n{task}: {len(ref)} held-out samples in contact, replayed at T = 10 ms; "
              f"RMS reference contact force {f_rms:.3f} N")
        print(f"  {'method':36s} {'force RMSE N':>13s} {'torque RMSE N m':>16s}")
        for k, (label, _, _) in METHODS.items():
            print(f"  {label:36s} {rmse(errs[k]):13.3f} {rmse(errs[k], slice(3, 6)):16.4f}")
        la, base = rmse(errs["learned"]), rmse(errs["kmeans_pgs"])
        print(f"  learned / K-means + PGS force RMSE: {la / max(base, 1e-12):.3f} (target <= 0.2); "
              f"learned / RMS reference force: {la / f_rms:.3f} (target <= 0.10)")
        deep = times[times[:, 0] >= np.percentile(times[:, 0], 90)]
        print(f"  clustering (learned) at the deepest 10 % of engagement ({int(deep[:, 0].min())}-"
              f"{int(deep[:, 0].max())} nodes), right after the pose's detection as in a step: median "
              f"{np.median(deep[:, 1]) * 1e3:.3f} ms, p99 {np.percentile(deep[:, 1], 99) * 1e3:.3f} ms "
              f"(target: median <= 0.5 ms)")
    plot_errors(series, a.png)
    print(f"\nplot: {a.png} (|force error| per held-out sample; red learned, black K-means + PGS, "
          "blue K-means + seed solver)")
    t2 = Path(a.table2 or a.data)
    files = sorted(t2.glob("bolting_*_reference.mcap"))
    if "bolting" in nets and files:
        rows = []
        print(f"\nTable II pairs (bolting networks not retrained; {a.table2_samples} samples each):")
        print(f"  {'pair':16s} {'learned N':>10s} {'K-means+PGS N':>14s} {'ratio':>7s} {'RMS ref N':>10s}")
        for f in files:
            errs, ref, _ = evaluate(f, a.table2_samples, nets["bolting"], ("learned", "kmeans_pgs"), held_out=False)
            la, base = rmse(errs["learned"]), rmse(errs["kmeans_pgs"])
            f_rms = float(np.sqrt(np.mean(np.sum(ref[:, :3] ** 2, axis=1))))
            pair = f.name[len("bolting_"):-len("_reference.mcap")]
            rows.append((pair, la, base))
            print(f"  {pair:16s} {la:10.3f} {base:14.3f} {la / max(base, 1e-12):7.3f} {f_rms:10.3f}")
        wins = sum(r[1] < r[2] for r in rows)
        print(f"  learned beats K-means + PGS on {wins} of {len(rows)} pairs (target: all)")
        plot_bars(rows, a.png_table2)
        print(f"plot: {a.png_table2} (force RMSE per pair; red learned, black K-means + PGS)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
