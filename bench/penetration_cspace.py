"""Validation of the C-space contact model (seed 000 Sec. V.C, Fig. 8): the mean penetration
depth of all the moving part's contact nodes under random disturbance wrenches while engaged,
with the N-space contact model only and with N-space + C-space.

    python bench/penetration_cspace.py [--duration 3] [--seed 0] [--png bench/penetration_cspace.png]

Per task: the headless scenario runs until the part is engaged (peg 20 mm into the hole, nut
two turns down the thread); from that state the drive holds the pose it had, and a random
wrench (seeded; force N(0, 5 N) per axis, torque N(0, 0.1 N m), a new one every 50 ms) is
added.  The same disturbances drive both models.  At every step, over the original contact
nodes (the moving part's nodes within the contact band of the exact SDF), the mean of their
penetration depth max(0, -d), d from the exact SDF -- not the network the detector uses.
Prints the time-averaged mean and the largest depth for both models and their ratio, and
draws both time series per task (PNG).
"""
from __future__ import annotations

import argparse
import copy

import sim_core  # noqa: F401 - first: it sets the BLAS thread count the physics runs with

# isort: split
import numpy as np  # noqa: E402

from sim_core import step as step_mod  # noqa: E402
from sim_core.collision import broadphase  # noqa: E402
from sim_core.scenarios import scenario
from sim_core.shapes import nodes_of  # noqa: E402
from sim_core.types import Inputs  # noqa: E402

FORCE_SD, TORQUE_SD, HOLD = 5.0, 0.1, 0.05     # N, N m, s per disturbance


def engaged_state(task: str):
    """The scenario's state once engaged, and its config (k-means clustering, as these figures
    were first measured: the bench compares the solver with and without the C-space row)."""
    _, _, cfg = scenario.load(task)
    cfg = copy.deepcopy(cfg)
    cfg["contact"]["clustering"] = "kmeans"
    model, state = scenario.build(cfg)
    scen = scenario.record(cfg)
    target = {"peg_in_hole": 1.0, "bolting": 0.75}[task]    # fraction of the run: engaged, settled
    n = int(round(target * cfg["scenario"]["duration"] / model.dt))
    for _ in range(n):
        state, _ = step_mod.step(model, state, scenario.inputs_at(scen, state.t))
    return state, cfg


def node_penetration(model, state) -> tuple[float, float]:
    """(mean max(0, -d), max) over the nodes within the band, d from the exact SDF (m)."""
    shape = model.shapes[0]
    _, x_s = broadphase.candidates(nodes_of(model, 0), shape, state.body(0), model.contact.broadphase_margin, 0.0)
    if x_s.shape[0] == 0:
        return 0.0, 0.0
    d = shape.sdf_exact.query(x_s)[0]
    d = d[d < model.contact.band]
    if d.size == 0:
        return 0.0, 0.0
    pen = np.maximum(-d, 0.0)
    return float(pen.mean()), float(pen.max())


def disturbed_run(task: str, cspace: str, start, cfg, duration: float, seed: int):
    c = copy.deepcopy(cfg)
    c["contact"]["cspace"] = cspace
    model, _ = scenario.build(c)
    state = start
    rng = np.random.default_rng(seed)
    steps = int(round(duration / model.dt))
    per = max(1, int(round(HOLD / model.dt)))
    means, maxes = [], []
    f = np.zeros(6)
    for k in range(steps):
        if k % per == 0:
            f = np.concatenate([rng.normal(0, FORCE_SD, 3), rng.normal(0, TORQUE_SD, 3)])
        inp = Inputs(start.p_w, start.R_wb, np.zeros(3), np.zeros(3), f_ext=f)
        state, _ = step_mod.step(model, state, inp)
        m, x = node_penetration(model, state)
        means.append(m)
        maxes.append(x)
    return np.array(means), np.array(maxes)


def plot_png(series: dict, path: str, size=(900, 520)) -> None:
    """Time series of the mean penetration, one panel per task: N-space only (black) and
    N-space + C-space (red), like seed 000 Fig. 8."""
    from sim_core.io.png import write_png
    W, H = size
    img = np.full((H, W, 3), 255, np.uint8)
    panels = list(series.items())
    ph = H // len(panels)
    pad = 24
    for j, (_task, (off, on)) in enumerate(panels):
        y0, y1 = j * ph + pad, (j + 1) * ph - pad
        top = max(float(off.max()), float(on.max()), 1e-9)
        img[y1, pad:W - pad] = 0
        img[y0:y1, pad] = 0
        for s, col in ((off, (0, 0, 0)), (on, (210, 30, 30))):
            xs = pad + np.arange(len(s)) * (W - 2 * pad - 1) / max(len(s) - 1, 1)
            ys = y1 - s / top * (y1 - y0)
            for a in range(len(s) - 1):
                n = int(max(abs(xs[a + 1] - xs[a]), abs(ys[a + 1] - ys[a]), 1)) + 1
                for t in np.linspace(0, 1, n):
                    x = int(round(xs[a] + t * (xs[a + 1] - xs[a])))
                    y = int(round(ys[a] + t * (ys[a + 1] - ys[a])))
                    img[max(y - 1, 0):y + 1, x] = col
    write_png(path, img)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=3.0, help="disturbed seconds per run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tasks", nargs="+", default=["peg_in_hole", "bolting"])
    ap.add_argument("--png", default="bench/penetration_cspace.png")
    a = ap.parse_args(argv)
    series, rows = {}, []
    for task in a.tasks:
        start, cfg = engaged_state(task)
        off, off_max = disturbed_run(task, "off", start, cfg, a.duration, a.seed)
        on, on_max = disturbed_run(task, "on", start, cfg, a.duration, a.seed)
        series[task] = (off * 1e6, on * 1e6)
        rows.append((task, off.mean() * 1e6, on.mean() * 1e6, off_max.max() * 1e6, on_max.max() * 1e6))
    print("\nMean penetration of the original contact nodes under random disturbance wrenches "
          f"(exact SDF; {a.duration:g} s, seed {a.seed}; force sd {FORCE_SD:g} N, torque sd {TORQUE_SD:g} N m)")
    print(f"{'task':12s} | {'N-space only':>13s} | {'N + C-space':>12s} | {'reduction':>9s} | "
          f"{'max, N only':>11s} | {'max, N + C':>10s}")
    for task, off, on, offx, onx in rows:
        print(f"{task:12s} | {off:10.3f} um | {on:9.3f} um | {off / max(on, 1e-12):8.1f}x | "
              f"{offx:8.1f} um | {onx:7.1f} um")
    plot_png(series, a.png)
    print(f"plot: {a.png} (black: N-space only, red: N-space + C-space)")
    print("reproduce: python bench/penetration_cspace.py" + (f" --seed {a.seed}" if a.seed else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
