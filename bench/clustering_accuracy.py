"""Contact-wrench accuracy of the clustering (seed 000 Fig. 9): learned clustering against
K-means, on the held-out 30 % of each task's wrench data.

    python bench/clustering_accuracy.py [--data DIR] [--samples 2000] [--png bench/clustering_accuracy.png]

For every held-out sample in contact (up to --samples, evenly spread), the simulator computes
the contact wrench from the logged state -- detection at the logged pose, clustering to
M_c = 12, one solver step with the logged external wrench -- and compares it with the data:
  (a) learned clustering (assets/clustering/TASK.npz) + the seed's solver,
  (b) K-means + PGS (the baseline),
  (c) K-means + the seed's solver.
Prints the RMSE of force (N) and torque (N m) per method, the ratio (a)/(b) and (a) against
the RMS reference force; the clustering stage's median / p99 time at the deepest engagement
in the set; and draws the force error over the samples (PNG, like Fig. 9).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import sim_core  # noqa: F401 - first: it sets the BLAS thread count the physics runs with
import numpy as np  # noqa: E402

from sim_core import clustering, clustering_in, solver_pgs, train_clustering as TC, wrench_data  # noqa: E402
from sim_core.paths import assets_dir  # noqa: E402


def pgs_wrench(model, sample, reps):
    st, f_ext, _, _ = sample
    return solver_pgs.solve(model, st, reps, f_ext, np.zeros((6, 6)))[1]


def evaluate(task: str, data_path: Path, n: int):
    data = wrench_data.load(data_path)
    _, test = data.split(0.7)
    idx = np.flatnonzero(np.isin(data.episode, np.unique(test.episode)))
    model = TC.model_for(data)
    samples = TC.prepare(model, data, idx[:: max(1, len(idx) // (3 * n))])[:n]
    net = clustering_in.load(assets_dir() / "clustering" / f"{task}.npz", task=task)
    c = model.contact
    out = {k: [] for k in ("learned", "kmeans_pgs", "kmeans_sor")}
    times = []
    for s in samples:
        t0 = time.perf_counter()
        reps_l = clustering_in.cluster(net, s[2], s[0], s[1], model)
        times.append((len(s[2]), time.perf_counter() - t0))
        reps_k = clustering.kmeans(s[2], c.clusters, c.normal_scale)
        out["learned"].append(TC.simulated_wrench(model, s, reps_l) - s[3])
        out["kmeans_pgs"].append(pgs_wrench(model, s, reps_k) - s[3])
        out["kmeans_sor"].append(TC.simulated_wrench(model, s, reps_k) - s[3])
    ref = np.array([s[3] for s in samples])
    return {k: np.array(v) for k, v in out.items()}, ref, np.array(times)


def rmse(e, sl):
    return float(np.sqrt(np.mean(np.sum(e[:, sl] ** 2, axis=1))))


def plot(series: dict, path: str, size=(900, 520)) -> None:
    from app.view_png import write_png
    W, H = size
    img = np.full((H, W, 3), 255, np.uint8)
    ph = H // len(series)
    pad = 24
    colours = {"learned": (210, 30, 30), "kmeans_pgs": (0, 0, 0), "kmeans_sor": (40, 90, 200)}
    for j, (task, errs) in enumerate(series.items()):
        y0, y1 = j * ph + pad, (j + 1) * ph - pad
        top = max(float(np.linalg.norm(e[:, :3], axis=1).max()) for e in errs.values()) or 1.0
        img[y1, pad:W - pad] = 0
        for k, e in errs.items():
            v = np.linalg.norm(e[:, :3], axis=1)
            xs = (pad + np.arange(len(v)) * (W - 2 * pad - 1) / max(len(v) - 1, 1)).astype(int)
            ys = (y1 - v / top * (y1 - y0)).astype(int)
            img[np.clip(ys, 0, H - 1), xs] = colours[k]
    write_png(path, img)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="data", help="folder with TASK_reference.mcap")
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--tasks", nargs="+", default=["peg_in_hole", "bolting"])
    ap.add_argument("--png", default="bench/clustering_accuracy.png")
    a = ap.parse_args(argv)
    series = {}
    for task in a.tasks:
        errs, ref, times = evaluate(task, Path(a.data) / f"{task}_reference.mcap", a.samples)
        series[task] = errs
        f_rms = float(np.sqrt(np.mean(np.sum(ref[:, :3] ** 2, axis=1))))
        print(f"\n{task}: {len(ref)} held-out samples in contact; RMS reference contact force {f_rms:.3f} N")
        print(f"  {'method':28s} {'force RMSE N':>13s} {'torque RMSE N m':>16s}")
        for k, label in (("learned", "learned + seed solver"), ("kmeans_pgs", "K-means + PGS (baseline)"),
                         ("kmeans_sor", "K-means + seed solver")):
            print(f"  {label:28s} {rmse(errs[k], slice(0, 3)):13.3f} {rmse(errs[k], slice(3, 6)):16.4f}")
        ratio = rmse(errs["learned"], slice(0, 3)) / max(rmse(errs["kmeans_pgs"], slice(0, 3)), 1e-12)
        print(f"  learned / baseline force RMSE: {ratio:.3f} (target <= 0.2); learned / RMS reference "
              f"force: {rmse(errs['learned'], slice(0, 3)) / f_rms:.3f} (target <= 0.10)")
        deep = times[times[:, 0] >= np.percentile(times[:, 0], 90)]
        print(f"  clustering time at the deepest 10 % of engagement ({int(deep[:, 0].min())}-{int(deep[:, 0].max())} "
              f"nodes): median {np.median(deep[:, 1]) * 1e3:.3f} ms, p99 {np.percentile(deep[:, 1], 99) * 1e3:.3f} ms")
    plot(series, a.png)
    print(f"\nplot: {a.png} (force error per held-out sample; red learned, black K-means + PGS, "
          "blue K-means + seed solver)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
