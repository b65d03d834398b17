"""Grinding (seed 001 Sec. 4.3): the normal force along the tool path, as a PNG and figures.

    python bench/grinding.py --out DIR [--config config/grinding.toml]

Runs the shipped scenario headless (``scenario.simulate``: the Panda, the PI force loop, the
pair's material of the config) and writes DIR/grinding_force.png -- the measured normal force
(black) against the distance the tip's set point travelled along the path (mm), the set force
(blue) and its +-5 % band (light blue), the step-overs between passes shaded grey, the steps
before contact and after the last pass left out -- and DIR/grinding.json with the figures (the
RMS normal-force error once in contact, % of the set force; min, max, mean).  No matplotlib:
the plot is drawn into an array and written by ``sim_core.io.png``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim_core import config  # noqa: E402
from sim_core.scenarios import grinding, scenario  # noqa: E402


def run(cfg: dict) -> tuple[dict, dict]:
    """(figures, series): the run's force figures and the series the plot draws."""
    model, st = scenario.build(cfg)
    res = scenario.simulate(model, scenario.record(cfg), st)
    loop = res.control
    fig = grinding.force_figures(loop)
    fig["law"] = model.pairs[0].material.law if model.pairs[0].material else model.contact.law
    t = np.array(loop.t)
    path = loop.spec.path
    set_pts = np.array([path.tip(x)[0] for x in t])
    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(set_pts, axis=0), axis=1))])
    # a step-over: the set point's x does not move (passes run along x)
    pass_ = np.concatenate([[False], np.abs(np.diff(set_pts[:, 0])) > 1e-9])
    keep = np.array(loop.on, bool)
    if fig["contact_from_s"] is not None:
        keep &= t >= fig["contact_from_s"] - 1e-12
    return fig, {"s_mm": 1e3 * s[keep], "F": np.array(loop.force)[keep], "pass": pass_[keep],
                 "F_set": loop.spec.force}


def _line(img, xs, ys, col, w=1):
    for a in range(len(xs) - 1):
        n = int(max(abs(xs[a + 1] - xs[a]), abs(ys[a + 1] - ys[a]), 1)) + 1
        for u in np.linspace(0, 1, n):
            x = int(round(xs[a] + u * (xs[a + 1] - xs[a])))
            y = int(round(ys[a] + u * (ys[a + 1] - ys[a])))
            img[max(y - w, 0):y + w, max(x - w + 1, 0):x + w] = col


def plot_png(series: dict, path: Path, size=(1000, 420)) -> None:
    from sim_core.io.png import write_png
    W, H = size
    pad = 30
    img = np.full((H, W, 3), 255, np.uint8)
    s, F, F_set = series["s_mm"], series["F"], series["F_set"]
    lo, hi = 0.0, max(2.0 * F_set, float(F.max()) * 1.05)

    def X(v):
        return pad + (v - s[0]) / max(s[-1] - s[0], 1e-9) * (W - 2 * pad - 1)

    def Y(v):
        return H - pad - (v - lo) / (hi - lo) * (H - 2 * pad)
    for k in np.flatnonzero(~series["pass"]):          # step-overs, grey
        img[pad:H - pad, int(X(s[max(k - 1, 0)])):int(X(s[k])) + 1] = (225, 225, 225)
    img[int(Y(1.05 * F_set)):int(Y(0.95 * F_set)) + 1, pad:W - pad] = (200, 220, 255)
    _line(img, [pad, W - pad], [Y(F_set)] * 2, (40, 80, 220))
    for f in range(0, int(hi) + 1):                     # 1 N ticks
        img[int(Y(f)), pad - 6:pad] = 0
    img[H - pad, pad:W - pad] = 0
    img[pad:H - pad, pad] = 0
    _line(img, X(s), Y(F), (0, 0, 0))
    write_png(path, img)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, metavar="DIR", help="folder for grinding_force.png and grinding.json")
    ap.add_argument("--config", default=str(Path(__file__).resolve().parents[1] / "config" / "grinding.toml"))
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = config.load(a.config)
    fig, series = run(cfg)
    plot_png(series, out / "grinding_force.png")
    (out / "grinding.json").write_text(json.dumps(fig, indent=2) + "\n")
    print(f"grinding ({fig['law']}): normal force RMS error {fig['normal_force_rms_error_pct']:.2f} % of "
          f"{fig['normal_force_set_N']:g} N once in contact (from t = {fig['contact_from_s']:.2f} s, "
          f"{fig['measured_steps']} steps), min {fig['normal_force_min_N']:.3f} N, max "
          f"{fig['normal_force_max_N']:.3f} N, mean {fig['normal_force_mean_N']:.4f} N")
    print(f"wrote {out / 'grinding_force.png'} and {out / 'grinding.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
