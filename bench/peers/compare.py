"""MuJoCo and PyBullet against tightsim on the project's own bolting, peg-in-hole and docking,
by one command (issue 28):

    python bench/peers/compare.py [--tasks bolting peg_in_hole docking] [--steps 1 2 5 10]
                                  [--engines tightsim mujoco pybullet] [--out DIR] [--quick]

For each task, engine and step of the sweep (ms), one run of the task's config (its waypoints,
friction, density and drive gains; the Panda off and no gravity for everyone:
``bench.peers.assembly``) and one row: the task figure and whether it is met, the deepest
penetration by the project's yardstick (the exact SDF, or docking's analytic manifold), and the
real-time factor.  tightsim's rows are measured in the same run, by the same yardstick.  Then
the summary: for every task and engine the largest step of the sweep at which it succeeds, its
real-time factor and penetration there, beside tightsim's at 10 ms and their ratios.

Written to DIR (default ``peers-out``): ``peers.md`` (the summary, then every row) and
``peers.png`` (penetration and real-time factor against the step, one line per engine, a
filled marker where the task succeeded; matplotlib when installed, else the project's own PNG
writer).  --quick: the 10 ms step and a tenth of each task's duration (the tests' smoke run).

MuJoCo and PyBullet come with the optional extra: without it the command says in one line what
to install.  MuJoCo's first run builds its mesh SDFs (about a minute per task at octree depth 9)
and caches the compiled model (``assembly_mujoco.cached_model``).
"""
from __future__ import annotations

import argparse
import datetime
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

if __package__ in (None, ""):                     # run as a script: the checkout on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from bench.peers.assembly import STEPS_MS, TASK_NAMES, Row, Setup, Trajectory, UnknownTask, check_task, judge  # noqa: E402

ENGINES = ("tightsim", "mujoco", "pybullet")
PEER_MODULES = {"mujoco": "mujoco", "pybullet": "pybullet"}     # engine -> the package it needs
INSTALL = 'pip install -e ".[peers]"'
QUICK_FRACTION = 0.1          # --quick: this fraction of each task's duration, at the 10 ms step only
REFERENCE_MS = 10.0           # tightsim's step in the summary: the configs' own


def missing_extra(engines) -> str | None:
    """One line naming what to install when a requested peer's package cannot be imported."""
    import importlib
    missing = []
    for e in engines:
        mod = PEER_MODULES.get(e)
        if mod is None:
            continue
        try:
            importlib.import_module(mod)
        except ImportError:
            missing.append(mod)
    if not missing:
        return None
    return (f"compare.py: {' and '.join(missing)} not installed (the optional peers): {INSTALL}, "
            f"or --engines tightsim")


def run_tightsim(setup: Setup, dt: float, duration: float) -> tuple[Trajectory, float]:
    """tightsim on the same task (arm off) at the step dt: its trajectory and the simulated
    seconds of the steps that compiled nothing (the real-time factor's numerator, as
    ``scenario.summarize``)."""
    from sim_core.scenarios import scenario
    model = replace(setup.model, dt=dt)
    Rs = []
    res = scenario.simulate(model, setup.scen, setup.start, duration=duration, dt=dt,
                            on_step=lambda prev, inp, st, info: Rs.append(st.R_wb[0].copy()))
    counted = np.array(res.compile_times) == 0.0
    traj = Trajectory(dt=dt, t=list(res.t), p=[np.array(p) for p in res.p_w], R=Rs,
                      step_s=float(np.array(res.step_times)[counted].sum()))
    return traj, float(counted.sum() * dt)


def run_cell(engine: str, setup: Setup, dt: float, duration: float, mujoco_model=None) -> Row:
    """One row: `engine` on the task at the step dt (s)."""
    try:
        if engine == "tightsim":
            traj, simulated = run_tightsim(setup, dt, duration)
            return judge(setup, engine, traj, simulated)
        if engine == "mujoco":
            from bench.peers import assembly_mujoco
            return judge(setup, engine, assembly_mujoco.run(setup.task, dt, duration, setup, mujoco_model))
        from bench.peers import assembly_pybullet
        return judge(setup, engine, assembly_pybullet.run(setup.task, dt, duration, setup))
    except FloatingPointError as e:
        return Row(engine=engine, task=setup.task, dt=dt, figure="diverged", note=str(e))


# ---- the table -------------------------------------------------------------------------------

def _mm(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x * 1e3:.3g}"


def _rtf(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.3g}"


def best(rows: list[Row], task: str, engine: str) -> Row | None:
    """The row at the largest step at which `engine` met `task`'s target, None if it never did."""
    ok = [r for r in rows if r.task == task and r.engine == engine and r.met]
    return max(ok, key=lambda r: r.dt) if ok else None


def table(rows: list[Row], header: str = "") -> str:
    """peers.md: the summary per task and engine, then every row of the sweep."""
    tasks = list(dict.fromkeys(r.task for r in rows))
    engines = list(dict.fromkeys(r.engine for r in rows))
    out = [header] if header else []
    out += ["| task | engine | largest step that succeeds (ms) | succeeds at (ms) | task figure there "
            "| penetration there (mm) | real-time factor there | tightsim at 10 ms: penetration (mm) / RTF "
            "| RTF ratio (engine / tightsim) | penetration ratio (engine / tightsim) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for task in tasks:
        ref = [r for r in rows if r.task == task and r.engine == "tightsim" and abs(r.dt * 1e3 - REFERENCE_MS) < 1e-9]
        ref = ref[0] if ref else None
        for e in engines:
            b = best(rows, task, e)
            ref_txt = f"{_mm(ref.penetration_m)} / {_rtf(ref.rtf)}" if ref else "-"
            ok = ", ".join(f"{r.dt * 1e3:g}" for r in sorted(rows, key=lambda r: r.dt)
                           if r.task == task and r.engine == e and r.met) or "none"
            if b is None:
                out.append(f"| {task} | {e} | none | {ok} | | | | {ref_txt} | | |")
                continue
            ratio_rtf = b.rtf / ref.rtf if ref and ref.rtf > 0 else math.nan
            ratio_pen = b.penetration_m / ref.penetration_m if ref and ref.penetration_m > 0 else math.nan
            out.append(f"| {task} | {e} | {b.dt * 1e3:g} | {ok} | {b.figure} | {_mm(b.penetration_m)} | "
                       f"{_rtf(b.rtf)} | {ref_txt} | {_rtf(ratio_rtf)} | {_rtf(ratio_pen)} |")
    out += ["", "Every run of the sweep:", "",
            "| task | engine | step (ms) | task figure | target met | deepest penetration (mm) "
            "| real-time factor | note |",
            "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r.task} | {r.engine} | {r.dt * 1e3:g} | {r.figure} | {'yes' if r.met else 'no'} | "
                   f"{_mm(r.penetration_m)} | {_rtf(r.rtf)} | {r.note} |")
    return "\n".join(out) + "\n"


# ---- the figure ------------------------------------------------------------------------------

PEN_FLOOR_MM = 1e-4           # mm: a run with no penetration is drawn here on the log axis
COLOURS = {"tightsim": (0, 0, 0), "mujoco": (30, 90, 200), "pybullet": (210, 60, 30)}


def plot(rows: list[Row], path: Path) -> str:
    """peers.png: per task a column, penetration (top) and real-time factor (bottom) against the
    step, log scales, one line per engine.  Returns which writer drew it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return _plot_raw(rows, path)
    tasks = list(dict.fromkeys(r.task for r in rows))
    fig, axes = plt.subplots(2, len(tasks), figsize=(4.2 * len(tasks), 6.5), squeeze=False)
    for j, task in enumerate(tasks):
        for e in dict.fromkeys(r.engine for r in rows):
            rs = sorted((r for r in rows if r.task == task and r.engine == e), key=lambda r: r.dt)
            if not rs:
                continue
            c = np.array(COLOURS.get(e, (100, 100, 100))) / 255
            x = [r.dt * 1e3 for r in rs]
            pen = [max(r.penetration_m * 1e3, PEN_FLOOR_MM) for r in rs]
            for ax, y in ((axes[0, j], pen), (axes[1, j], [r.rtf for r in rs])):
                ax.plot(x, y, "-", color=c, label=e)
                for xi, yi, r in zip(x, y, rs):
                    ax.plot(xi, yi, "o", color=c, markerfacecolor=c if r.met else "white")
        axes[0, j].set_title(task)
        axes[0, j].set_ylabel("deepest penetration (mm)")
        axes[1, j].set_ylabel("real-time factor")
        for ax in axes[:, j]:
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("step (ms)")
            ax.grid(True, which="both", alpha=0.3)
    axes[0, 0].legend(title="filled: task met")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return "matplotlib"


def _plot_raw(rows: list[Row], path: Path) -> str:
    """The same figure without matplotlib (``sim_core.io.png``): log10 of each quantity,
    autoscaled panels, no labels (peers.md carries the numbers)."""
    from sim_core.io.png import write_png
    tasks = list(dict.fromkeys(r.task for r in rows))
    w, h, pad = 300 * len(tasks), 600, 20
    img = np.full((h, w, 3), 255, np.uint8)
    for j, task in enumerate(tasks):
        for i, key in enumerate(("penetration_m", "rtf")):
            x0, y0, x1, y1 = j * 300 + pad, i * 300 + pad, (j + 1) * 300 - pad, (i + 1) * 300 - pad
            img[y0, x0:x1 + 1] = img[y1, x0:x1 + 1] = 0
            img[y0:y1 + 1, x0] = img[y0:y1 + 1, x1] = 0
            rs = [r for r in rows if r.task == task and math.isfinite(getattr(r, key)) and getattr(r, key) > 0]
            if not rs:
                continue
            lx = np.log10([r.dt for r in rs])
            ly = np.log10([getattr(r, key) for r in rs])
            xlo, xhi = lx.min() - 0.1, lx.max() + 0.1
            ylo, yhi = ly.min() - 0.1, ly.max() + 0.1
            for e in dict.fromkeys(r.engine for r in rs):
                pts = sorted((a, b) for a, b, r in zip(lx, ly, rs) if r.engine == e)
                px = [x0 + (a - xlo) / (xhi - xlo) * (x1 - x0) for a, _ in pts]
                py = [y1 - (b - ylo) / (yhi - ylo) * (y1 - y0) for _, b in pts]
                for k in range(len(px)):
                    xa, ya = int(px[k]), int(py[k])
                    img[max(ya - 3, 0):ya + 4, max(xa - 3, 0):xa + 4] = COLOURS.get(e, (100, 100, 100))
                    if k:
                        for u in np.linspace(0, 1, 200):
                            xx = int(px[k - 1] + u * (px[k] - px[k - 1]))
                            yy = int(py[k - 1] + u * (py[k] - py[k - 1]))
                            img[yy, xx] = COLOURS.get(e, (100, 100, 100))
    write_png(path, img)
    return "sim_core.io.png"


# ---- the command -------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", nargs="+", default=list(TASK_NAMES), metavar="TASK",
                    help=f"tasks to run (default: {' '.join(TASK_NAMES)})")
    ap.add_argument("--steps", nargs="+", type=float, default=list(STEPS_MS), metavar="MS",
                    help="fixed steps of the sweep, ms (default: 1 2 5 10)")
    ap.add_argument("--engines", nargs="+", default=list(ENGINES), metavar="ENGINE",
                    help=f"engines (default: {' '.join(ENGINES)})")
    ap.add_argument("--out", default="peers-out", metavar="DIR", help="folder for peers.md and peers.png")
    ap.add_argument("--quick", action="store_true",
                    help=f"10 ms only, {QUICK_FRACTION:g} of each task's duration (a smoke run)")
    a = ap.parse_args(argv)
    try:
        tasks = [check_task(t) for t in a.tasks]
    except UnknownTask as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2
    bad = [e for e in a.engines if e not in ENGINES]
    if bad:
        print(f"compare.py: unknown engine {bad[0]!r} (one of: {', '.join(ENGINES)})", file=sys.stderr)
        return 2
    if any(s <= 0 for s in a.steps):
        print("compare.py: --steps must be > 0 ms", file=sys.stderr)
        return 2
    line = missing_extra(a.engines)
    if line:
        print(line, file=sys.stderr)
        return 1
    steps = [REFERENCE_MS] if a.quick else sorted(a.steps)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    import sim_core  # noqa: F401 - it sets the BLAS thread count the physics runs with
    t_all = time.perf_counter()
    rows = []
    for task in tasks:
        setup = Setup(task)
        duration = setup.duration * (QUICK_FRACTION if a.quick else 1.0)
        mj = None
        if "mujoco" in a.engines:
            from bench.peers import assembly_mujoco
            mj = assembly_mujoco.cached_model(setup)
        for e in a.engines:
            for ms in steps:
                t0 = time.perf_counter()
                r = run_cell(e, setup, ms * 1e-3, duration, mj)
                rows.append(r)
                print(f"{task:12s} {e:9s} {ms:5g} ms  {r.figure:32s} {'met' if r.met else 'not met':8s} "
                      f"pen {_mm(r.penetration_m):>7s} mm  RTF {_rtf(r.rtf):>7s}  ({time.perf_counter() - t0:.0f} s) "
                      f"{r.note}", flush=True)
    versions = _versions(a.engines)
    header = (f"Measured {datetime.date.today().isoformat()} by `python bench/peers/compare.py "
              f"{' '.join(argv if argv is not None else sys.argv[1:])}` ({versions}; "
              f"{time.perf_counter() - t_all:.0f} s in all).\n")
    (out / "peers.md").write_text(table(rows, header))
    how = plot(rows, out / "peers.png")
    print(table(rows, header))
    print(f"written: {out / 'peers.md'}, {out / 'peers.png'} ({how})")
    return 0


def _versions(engines) -> str:
    parts = []
    for e in engines:
        if e == "mujoco":
            import mujoco
            parts.append(f"mujoco {mujoco.__version__}")
        elif e == "pybullet":
            from importlib.metadata import version
            parts.append(f"pybullet {version('pybullet')}")
    return ", ".join(parts) if parts else "tightsim only"


if __name__ == "__main__":
    raise SystemExit(main())
