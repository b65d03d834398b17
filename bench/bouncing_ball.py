"""Seed 001's bouncing ball report: Fig. 3 (the first contact at five restitutions), Fig. 4
(energy at restitution 1 against semi-implicit Euler) and requested vs measured restitution.

    python bench/bouncing_ball.py --out DIR [--contact-dt 2e-6] [--euler-dt 1e-5]
                                  [--dt-max 0.128] [--bounces 10]

tightsim's runs are `sim_core.scenarios.bouncing_ball.drop` (the seed's ball: m = 1 kg,
R = 0.1 m, centre dropped from 1.0 m, g = 9.81, K = 140e6 N/m, Kelvin-Voigt with the damping
of seed 001 eq. (10)).  Written to DIR:

  fig3_contact.png  the first contact for e = 0.2, 0.4, 0.6, 0.8, 1.0 (colours dark blue ->
                    red), four panels top to bottom: penetration delta(t), penetration
                    velocity d delta/dt(t), contact force F(t), and F against delta (the
                    hysteresis loop; seed Fig. 3a-d).  Time from touchdown; every panel's
                    horizontal line is zero.  The force is the law evaluated on the run's
                    samples, F = D d delta/dt + K delta (eq. (1)), clamped at 0 with --clamped.
                    The run steps at most --contact-dt, so the contact has hundreds of samples.
  fig4_energy.png   total energy (kinetic + m g z + K delta^2 / 2) minus its initial value,
                    over --bounces bounces at e = 1, relative to the impact energy m g (z0 - R):
                    tightsim at steps up to --dt-max (black) and a semi-implicit Euler
                    integration of the same law at the fixed step --euler-dt (red), seed Fig. 4
                    and Sec. 4.2 (which reports a 12 % loss for integration).
  restitution.md    requested e; measured with the force allowed to pull at separation (the
                    reading of eq. (10) that makes it exact) and with the force clamped at 0.

Measured restitution: the ground-level speed before and after the first contact, each from the
flight sample nearest the contact, sqrt(vz^2 + 2 g (z - R)) (exact for ballistic flight), so
the value does not depend on where the steps fall.

`semi_implicit_euler` is the comparison of seed 001 Sec. 3.4 eq. (14): v += dt a(p, v);
p += dt v, with a the same Kelvin-Voigt force switched on while delta > 0 -- written here, not
tightsim's step, as the integrator the seed compares against.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):                     # run as a script: the checkout on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.peers import GRAVITY, MASS, RADIUS, STIFFNESS, Z0  # noqa: E402
from sim_core.contact import compliant  # noqa: E402

RESTITUTIONS = (0.2, 0.4, 0.6, 0.8, 1.0)
COLOURS = ((30, 40, 160), (40, 130, 200), (40, 160, 60), (230, 150, 20), (210, 30, 30))
EULER_STEPS = (1e-6, 3e-5, 1e-4)   # s: the Euler comparison at other steps, printed only
BOUNCE_PERIOD = 2.0 * np.sqrt(2.0 * (Z0 - RADIUS) / GRAVITY)   # s, flight between bounces at e = 1


def damping(e: float) -> float:
    """D (N s/m) of the ball's linear Kelvin-Voigt contact with restitution e: seed 001 eq. (10)
    with the sign the print drops (``contact.compliant.damping``)."""
    return compliant.damping(STIFFNESS, MASS, e)


def _euler(z0: float, dt: float, n: int, k: float, d: float, m: float, g: float, r: float,
           clamped: bool):
    z = np.empty(n + 1)                          # m, centre height after each step
    v = np.empty(n + 1)                          # m/s, vertical velocity
    z[0], v[0] = z0, 0.0
    for i in range(n):
        pen = r - z[i]
        f = k * pen - d * v[i] if pen > 0.0 else 0.0          # N, d delta/dt = -vz
        if clamped and f < 0.0:
            f = 0.0
        v[i + 1] = v[i] + dt * (f / m - g)                    # eq. (14): velocity first,
        z[i + 1] = z[i] + dt * v[i + 1]                       # then position with the new one
    return z, v


def semi_implicit_euler(e: float, dt: float, duration: float, *, clamped: bool = False) -> dict:
    """The ball under gravity and the Kelvin-Voigt contact force at the fixed step dt (s), seed
    001 eq. (14): arrays "t", "z", "vz", "energy" (J: kinetic + m g z + K delta^2 / 2), "pen"."""
    n = int(np.ceil(duration / dt - 1e-9))
    z, v = _euler(Z0, dt, n, STIFFNESS, damping(e), MASS, GRAVITY, RADIUS, clamped)
    pen = np.maximum(RADIUS - z, 0.0)
    energy = 0.5 * MASS * v ** 2 + MASS * GRAVITY * z + 0.5 * STIFFNESS * pen ** 2
    return {"t": np.arange(n + 1) * dt, "z": z, "vz": v, "energy": energy, "pen": pen}


def tightsim_drop(e: float, dt_max: float, duration: float, clamped: bool = False) -> dict:
    from sim_core.scenarios.bouncing_ball import drop
    return drop(e, dt_max=dt_max, law="compliant", duration=duration, clamped=clamped, variable=True)


def first_contact(run: dict) -> slice:
    """Samples of the first contact, with one flight sample on either side."""
    pen = np.asarray(run["pen"], float)
    inside = np.flatnonzero(pen > 0.0)
    if inside.size == 0:
        raise ValueError("bouncing_ball: the ball never touched the ground")
    a = inside[0]
    gaps = np.flatnonzero(np.diff(inside) > 1)
    b = inside[gaps[0]] if gaps.size else inside[-1]
    return slice(max(a - 1, 0), min(b + 2, pen.size))


def measured_restitution(run: dict) -> float:
    """Ground-level speed out / in of the first contact, from the flight samples beside it."""
    s = first_contact(run)
    z, vz = np.asarray(run["z"], float), np.asarray(run["vz"], float)
    i, j = s.start, s.stop - 1
    speed = lambda k: np.sqrt(vz[k] ** 2 + 2.0 * GRAVITY * max(z[k] - RADIUS, 0.0))  # noqa: E731
    return float(speed(j) / speed(i))


def contact_force(run: dict, e: float, clamped: bool) -> np.ndarray:
    """F = D d delta/dt + K delta on the samples in contact (N), 0 outside, seed 001 eq. (1)."""
    pen = np.asarray(run["pen"], float)
    f = np.where(pen > 0.0, damping(e) * -np.asarray(run["vz"], float) + STIFFNESS * pen, 0.0)
    return np.maximum(f, 0.0) if clamped else f


# ---- a few raster plots (sim_core.io.png; no plotting library) -----------------------------

def _line(img, xs, ys, colour) -> None:
    h, w, _ = img.shape
    for a in range(len(xs) - 1):
        n = int(max(abs(xs[a + 1] - xs[a]), abs(ys[a + 1] - ys[a]), 1)) + 1
        for u in np.linspace(0.0, 1.0, n):
            x = int(round(xs[a] + u * (xs[a + 1] - xs[a])))
            y = int(round(ys[a] + u * (ys[a + 1] - ys[a])))
            if 0 <= x < w and 0 <= y < h:
                img[max(y - 1, 0):y + 1, x] = colour


def _panel(img, box, series) -> None:
    """Draw [(x, y, colour)] autoscaled into box = (x0, y0, x1, y1) px, with a frame and the
    zero line of y where it is in range."""
    x0, y0, x1, y1 = box
    xs = np.concatenate([np.asarray(s[0], float) for s in series])
    ys = np.concatenate([np.asarray(s[1], float) for s in series])
    xlo, xhi = float(xs.min()), float(xs.max())
    ylo, yhi = min(float(ys.min()), 0.0), max(float(ys.max()), 0.0)
    xhi, yhi = max(xhi, xlo + 1e-30), max(yhi, ylo + 1e-30)
    px = lambda x: x0 + (np.asarray(x, float) - xlo) / (xhi - xlo) * (x1 - x0)  # noqa: E731
    py = lambda y: y1 - (np.asarray(y, float) - ylo) / (yhi - ylo) * (y1 - y0)  # noqa: E731
    img[y0, x0:x1 + 1] = img[y1, x0:x1 + 1] = 0
    img[y0:y1 + 1, x0] = img[y0:y1 + 1, x1] = 0
    img[int(round(float(py(0.0)))), x0:x1 + 1] = 160
    for x, y, colour in series:
        _line(img, px(x), py(y), colour)


def plot(path, panels, size=(900, 900)) -> None:
    from sim_core.io.png import write_png
    w, h = size
    img = np.full((h, w, 3), 255, np.uint8)
    ph, pad = h // len(panels), 20
    for j, series in enumerate(panels):
        _panel(img, (pad, j * ph + pad, w - pad, (j + 1) * ph - pad), series)
    write_png(path, img)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the PNGs and restitution.md")
    ap.add_argument("--contact-dt", type=float, default=2e-6, help="s: largest step, Fig. 3 runs")
    ap.add_argument("--dt-max", type=float, default=0.128, help="s: largest step, Fig. 4 run")
    ap.add_argument("--euler-dt", type=float, default=1e-5, help="s: the Euler comparison's step")
    ap.add_argument("--bounces", type=int, default=10)
    ap.add_argument("--clamped", action="store_true", help="Fig. 3 with the force clamped at 0")
    a = ap.parse_args(argv)
    if min(a.contact_dt, a.dt_max, a.euler_dt) <= 0 or a.bounces < 1:
        ap.error("steps must be > 0 and --bounces >= 1")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    first = np.sqrt(2.0 * (Z0 - RADIUS) / GRAVITY)           # s, to the first touchdown

    # Fig. 3 and the restitution table: the first contact only
    panels = [[], [], [], []]
    rows = []
    for e, colour in zip(RESTITUTIONS, COLOURS):
        runs = {c: tightsim_drop(e, a.contact_dt, first + 0.01, clamped=c) for c in (False, True)}
        rows.append((e, measured_restitution(runs[False]), measured_restitution(runs[True])))
        run = runs[a.clamped]
        s = first_contact(run)
        t = np.asarray(run["t"], float)[s] - np.asarray(run["t"], float)[s][1]
        pen = np.asarray(run["pen"], float)[s]
        f = contact_force(run, e, a.clamped)[s]
        panels[0].append((t, pen, colour))
        panels[1].append((t, -np.asarray(run["vz"], float)[s], colour))
        panels[2].append((t, f, colour))
        panels[3].append((pen, f, colour))
    plot(out / "fig3_contact.png", panels)

    lines = ["| requested e | measured, force may pull | error | measured, clamped at 0 |",
             "|---|---|---|---|"]
    lines += [f"| {e:g} | {m:.9f} | {m - e:.2e} | {c:.6f} |" for e, m, c in rows]
    table = "\n".join(lines) + "\n"
    (out / "restitution.md").write_text(table)
    print(f"Restitution of the first contact (--contact-dt {a.contact_dt:g} s)\n" + table)

    # Fig. 4: energy over `bounces` bounces at e = 1
    duration = first + a.bounces * BOUNCE_PERIOD
    impact = MASS * GRAVITY * (Z0 - RADIUS)                  # J, energy the contact takes in
    ts = tightsim_drop(1.0, a.dt_max, duration)
    eu = semi_implicit_euler(1.0, a.euler_dt, duration)
    rel = {k: (np.asarray(r["energy"], float) - r["energy"][0]) / impact
           for k, r in (("tightsim", ts), ("euler", eu))}
    plot(out / "fig4_energy.png", [[(ts["t"], rel["tightsim"], (0, 0, 0)),
                                    (eu["t"], rel["euler"], (210, 30, 30))]], size=(900, 400))
    print(f"Energy at e = 1 over {a.bounces} bounces ({duration:.3g} s), relative to m g (z0 - R):")
    for k, label in (("tightsim", f"tightsim, analytic in-contact step, dt <= {a.dt_max:g} s"),
                     ("euler", f"semi-implicit Euler, fixed dt = {a.euler_dt:g} s")):
        r = rel[k]
        print(f"  {label:55s} final {r[-1]:+.3e}, largest |drift| {np.abs(r).max():.3e}")
    for h in EULER_STEPS:
        r = semi_implicit_euler(1.0, h, duration)
        rr = (r["energy"] - r["energy"][0]) / impact
        print(f"  {'semi-implicit Euler, fixed dt = ' + format(h, 'g') + ' s':55s} "
              f"final {rr[-1]:+.3e}, largest |drift| {np.abs(rr).max():.3e}")
    print("  (the seed reports a 12 % loss for integration, Sec. 4.2)")
    print(f"written: {out / 'fig3_contact.png'}, {out / 'fig4_energy.png'}, {out / 'restitution.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
