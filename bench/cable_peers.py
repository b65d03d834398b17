"""Seed 002's free cable in every engine against the heavy-elastica reference (issue 26
deliverable 6; seed 002 Sec. V-C's XPBD comparison and PyElastica as a peer), in one run.

    python bench/cable_peers.py [--links 40 80 160] [--repeats 3] [--out FILE.md]

The case (`bench/baselines/free_cable.py`): radius 2 mm, L = 0.4 m, E = 4.462 MPa, G = E / 2(1 +
nu), rho = 1250 kg/m^3, clamped horizontally at one end, g = 9.81, released straight at rest.

For each n and engine, one row:
  * tip deflection (m, downward) of the static sag after damping out (c = 10 /s: XPBD 6 s,
    PyElastica 4 s of damped motion), and its shape error: the largest distance between the
    engine's centreline points and the reference's at the same material coordinate;
  * the fall (no damping, 0.5 s): the tip at 0.5 s and the largest tip distance over the fall
    to the DYNAMIC reference, PyElastica at 160 elements at half its stable step (the finest
    resolved continuum run here -- a peer, not an exact solution; '-' without PyElastica);
  * stretch: the centreline polyline's length over its material length, minus 1 (XPBD's droop
    at the seed's setting is mostly this: unconverged stretch constraints);
  * the step used, and the wall time per simulated second of the fall (median of --repeats).
Engines: `xpbd-seed` (T = 10 ms, 100 iterations, 1 substep: seed 002's XPBD setting),
`xpbd-h0.1ms` (T = 10 ms in 100 substeps of 1 iteration: XPBD's small-steps setting; --substeps
1000 adds `xpbd-h0.01ms`, about 2 minutes more at 160 links),
`pyelastica` (PositionVerlet at its largest stable step of the sweep), and `tightsim` (the
adapter `tightsim_cable` below, filled in at merge with sim_core/scenarios/cable.py).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):                     # run as a script: the checkout on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.baselines import xpbd_cable  # noqa: E402
from bench.baselines.free_cable import SEED_CABLE, elastica, shape_error  # noqa: E402
from bench.peers import pyelastica_cable  # noqa: E402

FALL = 0.5          # s of the undamped fall
SAMPLE = 0.01       # s between the tip samples of the fall


# s: tightsim's step for the fall.  At seed 002's 10 ms the undamped fall does not stay bounded
# (the turns' Newton solve stops converging once links turn ~0.2 rad a step: docs/cable.md,
# "The winding task"); at 1 ms it follows the fall.
TIGHTSIM_FALL_DT = 1e-3
# the static sag: the fall damped out (joint damping D = TIGHTSIM_SAG_DAMPING K, s) over
# TIGHTSIM_SAG_TIME at the fall's step.  (``cable.statics``' Gauss-Newton, without the load's
# geometric stiffness, does not converge at this cable's qL^3/EI = 176, even with the weight
# raised in 40 steps.)
TIGHTSIM_SAG_DAMPING = 0.01
TIGHTSIM_SAG_TIME = 3.0


def tightsim_cable(n: int):
    """tightsim's cable (``sim_core.scenarios.cable``) on the common case: clamped at the
    origin along +x, gravity along -y, shear factor that of the reference (SEED_CABLE.kappa_s).
    "static": the fall damped out (``TIGHTSIM_SAG_DAMPING``, ``TIGHTSIM_SAG_TIME``); "fall":
    the undamped fall from straight; both at ``TIGHTSIM_FALL_DT``."""
    from sim_core import step as step_mod
    from sim_core.scenarios import cable
    from sim_core.types import Inputs
    c = SEED_CABLE
    g = np.array([0.0, -c.gravity, 0.0])

    def points(st):
        L = c.length / n
        tip = st.p_w[-1] + st.R_wb[-1] @ np.array([L / 2, 0.0, 0.0])
        s = np.append((np.arange(n) + 0.5) * L, c.length)
        xy = np.vstack([st.p_w[:, :2], tip[:2]]).T
        return s, xy

    def run(damping, duration, every):
        sp = cable.CableSpec(radius=c.radius, length=c.length, density=c.density, E=c.E, nu=c.nu,
                             shear_factor=c.kappa_s, damping=damping)
        model, st = cable.build(n, sp, TIGHTSIM_FALL_DT, anchor="clamp", gravity=g)
        st = step_mod.start(model, st)
        inp = Inputs(st.p_w.copy(), st.R_wb.copy(), np.zeros((n, 3)), np.zeros((n, 3)))
        k = int(round(duration / TIGHTSIM_FALL_DT))
        per = max(1, int(round(every / TIGHTSIM_FALL_DT)))
        t, tip = [], []
        w0 = time.perf_counter()
        for i in range(1, k + 1):
            st, _ = step_mod.step(model, st, inp)
            if i % per == 0:
                t.append(st.t)
                tip.append(points(st)[1][:, -1])
        return st, np.array(t), np.array(tip), time.perf_counter() - w0

    def static():
        return points(run(TIGHTSIM_SAG_DAMPING, TIGHTSIM_SAG_TIME, TIGHTSIM_SAG_TIME)[0])

    def fall(duration, every):
        return run(0.0, duration, every)[1:]

    return {"static": static, "fall": fall, "dt": TIGHTSIM_FALL_DT}


def _median_fall(fn, repeats: int):
    walls, out = [], None
    for _ in range(repeats):
        out = fn()
        walls.append(out[2])
    return out, float(np.median(walls))


def _tip_gap(t, tip, ref_fall) -> float | str:
    """Largest tip distance (m) to the dynamic reference at the reference's sample times."""
    if ref_fall is None:
        return "-"
    rt, rtip = ref_fall
    k = min(len(t), len(rt))
    if not np.allclose(t[:k], rt[:k], atol=1e-9):
        x = np.interp(rt, t, tip[:, 0]), np.interp(rt, t, tip[:, 1])
        return float(np.max(np.hypot(x[0] - rtip[:, 0], x[1] - rtip[:, 1])))
    return float(np.max(np.linalg.norm(tip[:k] - rtip[:k], axis=1)))


def stretch(s, xy) -> float:
    """Length of the polyline through the centreline points over the material length it spans,
    minus 1 (the reference's axial strain is at most 1.1e-3; a chord undercuts the arc)."""
    return float(np.sum(np.linalg.norm(np.diff(xy, axis=1), axis=0)) / (s[-1] - s[0]) - 1.0)


def rows_for(n: int, ref, ref_fall, repeats: int, stable: dict, substeps=(100,)) -> list[tuple]:
    rows = []
    settings = [("xpbd-seed", xpbd_cable.SEED_DT, xpbd_cable.SEED_ITERS, 1)]
    settings += [(f"xpbd-h{xpbd_cable.SEED_DT / k * 1e3:g}ms", xpbd_cable.SEED_DT, 1, k) for k in substeps]
    for name, dt, iters, sub in settings:
        c, moved = xpbd_cable.static_sag(n, dt, iters, sub)
        s, xy = c.centreline()
        (t, tip, _), wall = _median_fall(lambda dt=dt, iters=iters, sub=sub:
                                         xpbd_cable.fall(n, dt, iters, sub, FALL, every=SAMPLE), repeats)
        rows.append((n, name, -xy[1, -1], shape_error(ref, s, xy), stretch(s, xy), tip[-1],
                     _tip_gap(t, tip, ref_fall), f"{dt * 1e3:g} ms x{sub}, {iters} it", wall / FALL, moved))
    if pyelastica_cable.installed():
        dt = stable[n]
        c, moved = pyelastica_cable.static_sag(n, dt)
        s, xy = c.centreline()
        (t, tip, _, _), wall = _median_fall(lambda: pyelastica_cable.fall(n, dt, FALL, every=SAMPLE),
                                            repeats)
        rows.append((n, "pyelastica", -xy[1, -1], shape_error(ref, s, xy), stretch(s, xy), tip[-1],
                     _tip_gap(t, tip, ref_fall), f"{dt * 1e6:g} us", wall / FALL, moved))
    else:
        rows.append((n, "pyelastica", pyelastica_cable.INSTALL))
    ts = tightsim_cable(n)
    if ts is None:
        rows.append((n, "tightsim", "adapter not filled in (bench/cable_peers.py tightsim_cable)"))
    else:
        s, xy = ts["static"]()
        (t, tip, _), wall = _median_fall(lambda: ts["fall"](FALL, SAMPLE), repeats)
        rows.append((n, "tightsim", -xy[1, -1], shape_error(ref, s, xy), stretch(s, xy), tip[-1],
                     _tip_gap(t, tip, ref_fall),
                     f"{ts['dt'] * 1e3:g} ms", wall / FALL, float("nan")))
    return rows


def table(rows, ref) -> str:
    out = [f"reference (heavy elastica, extensible + shear, solve_bvp tol 1e-10): tip deflection "
           f"{ref.tip_deflection:.6f} m, tip x {ref.tip[0]:.6f} m",
           "",
           "| n | engine | tip deflection (m) | shape error (m) | stretch | tip at 0.5 s (x, y) m | max tip "
           "gap in fall (m) | step | wall s / sim s | settled to (m) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if len(r) == 3:
            out.append(f"| {r[0]} | {r[1]} | {r[2]} | | | | | | | |")
            continue
        n, name, tipd, err, st, tip, gap, step, wps, moved = r
        gap = gap if isinstance(gap, str) else f"{gap:.2e}"
        out.append(f"| {n} | {name} | {tipd:.5f} | {err:.2e} | {st:.1e} | ({tip[0]:.4f}, {tip[1]:.4f}) | {gap} | "
                   f"{step} | {wps:.3f} | {moved:.0e} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--links", type=int, nargs="+", default=[40, 80, 160])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--substeps", type=int, nargs="+", default=[100],
                    help="XPBD small-steps rows: substeps of T = 10 ms, 1 iteration each")
    ap.add_argument("--out", type=Path, default=None, help="also write the table to this .md file")
    a = ap.parse_args(argv)
    t_start = time.perf_counter()
    ref = elastica()
    stable, ref_fall = {}, None
    if pyelastica_cable.installed():
        for n in sorted(set(a.links) | {160}):
            stable[n] = pyelastica_cable.largest_stable_step(n)
            print(f"pyelastica n={n}: largest stable step of the sweep {stable[n] * 1e6:g} us", flush=True)
        t, tip, _, ok = pyelastica_cable.fall(160, stable[160] / 2, FALL, every=SAMPLE)
        ref_fall = (t, tip) if ok else None
    rows = []
    for n in a.links:
        rows += rows_for(n, ref, ref_fall, a.repeats, stable, tuple(a.substeps))
        print(f"n = {n} done ({time.perf_counter() - t_start:.0f} s)", flush=True)
    text = table(rows, ref)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
