"""Transparency of the virtual coupling: four-channel vs two-channel.

    python bench/transparency.py [--duration S] [--c2 C2] [--c3 C3]

Two scripted tasks with the nut-sized proxy (0.97 kg, the M48 nut's inertia) at 1 kHz, each
run with the two-channel coupling (c2 = c3 = 0), the contact feed-forward alone (c3 = 0)
and the four-channel coupling; the passivity controller is on, as in a session.

* **press**: a scripted hand (a 400 N/m, 8 N s/m impedance to a hand set point, on a
  0.12 kg device handle simulated at 10 kHz, device force held over each 1 ms tick and
  velocity read as a backward difference, like a driver) brings the nut down onto a stiff
  plane, presses with a slowly varying 2.5-5.5 N load and slides a little sideways (mu = 0.2).
  Figures: the device force against the proxy's contact force (world), RMS and max of the
  error over the contact phase and over the sustained press (0.3 s after the first touch),
  and the proxy's contact force against the hand's force (the other way of transparency).
* **drag**: in free space the device is moved (kinematically) back and forth at 0.1 m/s
  with 50 ms speed reversals; figure: the device force magnitude, median and max.

Figures only (no assertions).  Compile time is printed separately, and the per-tick cost
of ``Coupling.step`` + ``Proxy.step`` measured during the runs.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from haptics.coupling import Coupling, CouplingGains, DeviceLimits
from haptics.local_contact import LocalContact
from haptics.proxy import Proxy

T = 1e-3
MASS = 0.97                                     # kg, the M48 x 5 nut
INERTIA = np.diag([6.2e-4, 6.2e-4, 1.01e-3])    # kg m^2
HALF_H = 0.019                                  # m, COM to the nut's bottom face
RING = 0.03                                     # m, radius of the bearing ring
Q_ID = np.array([1.0, 0.0, 0.0, 0.0])
# scripted hand and device handle
K_HAND, B_HAND, M_DEV, SUBSTEPS = 400.0, 8.0, 0.12, 10


def plane_contact(mu: float) -> LocalContact:
    """Six points of the nut's bottom ring on the plane z = 0 (the plane's gaps are exact)."""
    a = np.arange(6) * np.pi / 3
    r_b = np.stack([RING * np.cos(a), RING * np.sin(a), np.full(6, -HALF_H)], 1)
    return LocalContact(0.0, [0, 0, HALF_H], np.eye(3), r_b, np.tile([0.0, 0.0, 1.0], (6, 1)), np.zeros(6), mu)


def hand_setpoint(t: float) -> np.ndarray:
    """Approach from 4 mm above, press 2-7 N with a slow wobble, small sideways strokes."""
    z = 0.004 - 0.01 * min(1.0, t / 0.5) - 0.008 * np.sin(2 * np.pi * 0.7 * t) ** 2
    x = 0.003 * np.sin(2 * np.pi * 0.4 * t) if t > 0.8 else 0.0
    return np.array([x, 0.0, z])


TICK_TIMES: dict = {}    # task -> [(coupling.step s, proxy.step s)] of the last run


def press(gains: CouplingGains, duration: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Over the ticks with contact: (device force (N,3), proxy contact force (N,3), the hand's
    force on the handle (N,3), all world, and the time since the first touch (N,) s)."""
    times = TICK_TIMES.setdefault("press (6 contacts)", [])
    times.clear()
    cp = Coupling(gains, DeviceLimits(), startup_ramp=0.0)
    lc = plane_contact(0.2)
    proxy = Proxy(MASS, INERTIA, [0.0, 0.0, HALF_H + 0.004], np.eye(3))
    x = np.array([0.0, 0.0, 0.004])            # device handle (device frame = world, scale 1)
    v = np.zeros(3)
    x_prev = x.copy()
    rows, t_touch = [], None
    for k in range(int(duration / T)):
        v_meas = (x - x_prev) / T
        t0 = time.perf_counter()
        f, F, B = cp.step(x, Q_ID, v_meas, np.zeros(3), proxy, proxy.contact_wrench, T)
        t1 = time.perf_counter()
        proxy.step(F, B, lc, T)
        times.append((t1 - t0, time.perf_counter() - t1))
        # the hand and the device handle over the tick, device force held (ZOH)
        x_prev = x.copy()
        hs = hand_setpoint(k * T)
        h = T / SUBSTEPS
        f_hand = np.zeros(3)
        for _ in range(SUBSTEPS):
            fh = K_HAND * (hs - x) - B_HAND * v
            v = v + h * (f[:3] + fh) / M_DEV
            x = x + h * v
            f_hand += fh / SUBSTEPS
        if proxy.contact_wrench[2] > 0.05:
            t_touch = k * T if t_touch is None else t_touch
            rows.append((f[:3].copy(), proxy.contact_wrench[:3].copy(), f_hand, k * T - t_touch))
    return tuple(np.array([r[i] for r in rows]) for i in range(4))


def drag(gains: CouplingGains, duration: float) -> np.ndarray:
    """|device force| (N,) while the device goes back and forth at 0.1 m/s in free space."""
    times = TICK_TIMES.setdefault("drag (free space)", [])
    times.clear()
    cp = Coupling(gains, DeviceLimits(), startup_ramp=0.0)
    proxy = Proxy(MASS, INERTIA, np.zeros(3), np.eye(3))
    n = int(duration / T)
    t = np.arange(n) * T
    period, ramp = 0.5, 0.05
    phase = np.mod(t, 2 * period)
    speed = 0.1 * np.clip(np.minimum(phase, 2 * period - phase) / ramp, 0, 1) * np.sign(period - phase)
    speed[t < period] = 0.1 * np.clip(t[t < period] / ramp, 0, 1)
    pos = np.cumsum(speed) * T
    out = np.empty(n)
    for k in range(n):
        vx = (pos[k] - pos[k - 1]) / T if k else 0.0
        t0 = time.perf_counter()
        f, F, B = cp.step([pos[k], 0.0, 0.0], Q_ID, [vx, 0.0, 0.0], np.zeros(3), proxy, proxy.contact_wrench, T)
        t1 = time.perf_counter()
        proxy.step(F, B, None, T)
        times.append((t1 - t0, time.perf_counter() - t1))
        out[k] = np.linalg.norm(f[:3])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=4.0, help="seconds per task")
    d = CouplingGains()
    ap.add_argument("--c2", type=float, default=d.c2)
    ap.add_argument("--c3", type=float, default=0.3, help="c3 of the four-channel row")
    a = ap.parse_args()
    t0 = time.perf_counter()
    press(d, 0.01)
    drag(d, 0.01)
    print(f"compile / warm-up {time.perf_counter() - t0:.2f} s")
    lim = DeviceLimits()
    print(f"proxy {MASS} kg; spring-damper K = {d.k_lin:g} N/m, {d.k_rot:g} N m/rad, B = {d.b_lin:g} N s/m, "
          f"{d.b_rot:g} N m s/rad; limits {lim.max_force:g} N, {lim.max_torque:g} N m, "
          f"{lim.max_stiffness:g} N/m; passivity controller on")
    print(f"\n{'':28s} {'press: device vs contact force':^35s}  {'contact vs hand':^15s}  {'free-space drag':^17s}")
    print(f"{'coupling':28s} {'RMS N':>8s} {'max N':>8s} {'RMS>0.3s N':>11s} {'max>0.3s':>8s}  {'RMS>0.3s N':>15s}  "
          f"{'median N':>8s} {'max N':>8s}")
    for name, g in (("two-channel (c2=0, c3=0)", CouplingGains.two_channel()),
                    (f"C2 only (c2={a.c2:g}, c3=0)", CouplingGains(c2=a.c2, c3=0.0)),
                    (f"four-channel (c2={a.c2:g}, c3={a.c3:g})", CouplingGains(c2=a.c2, c3=a.c3))):
        fd, fe, fh, since = press(g, a.duration)
        err = np.linalg.norm(fd - fe, axis=1)
        late = since > 0.3
        err_h = np.linalg.norm(fe + fh, axis=1)[late]
        dr = drag(g, a.duration)
        print(f"{name:28s} {np.sqrt(np.mean(err ** 2)):8.4f} {err.max():8.3f} {np.sqrt(np.mean(err[late] ** 2)):11.4f} "
              f"{err[late].max():8.4f}  {np.sqrt(np.mean(err_h ** 2)):15.4f}  {np.median(dr):8.4f} {dr.max():8.3f}")
    print("\nRMS/max over all contact ticks include the touch-down impulse (one-tick contact forces of"
          "\ntens of N that no device renders); '>0.3s' is the sustained press after the first touch.")
    print("\nper-tick cost of the classes (last row's runs), microseconds:")
    print(f"  {'task':20s} {'coupling med':>12s} {'proxy med':>10s} {'tick med':>9s} {'tick p99':>9s} {'tick max':>9s}")
    for task, tt in TICK_TIMES.items():
        c, p = (np.array(x) * 1e6 for x in zip(*tt))
        print(f"  {task:20s} {np.median(c):12.1f} {np.median(p):10.1f} {np.median(c + p):9.1f} "
              f"{np.percentile(c + p, 99):9.1f} {(c + p).max():9.1f}")


if __name__ == "__main__":
    main()
