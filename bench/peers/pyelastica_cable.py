"""Seed 002's free cable in PyElastica (issue 26 deliverable 6: a peer for speed and shape).

    python -m bench.peers.pyelastica_cable [--elements 40] [--dt 2e-5]

The case of `bench.baselines.free_cable` (radius 2 mm, L = 0.4 m, E = 4.462 MPa, G = E / 2(1 +
nu), rho = 1250 kg/m^3, g = 9.81 along -y): a `CosseratRod.straight_rod` of n elements from the
origin along +x, `OneEndFixedBC` on node 0's position and element 0's directors (the clamp),
`GravityForces`, stepped by `PositionVerlet` (PyElastica's symplectic explicit integrator) at a
fixed step.  PyElastica's rod has its own shear factor 27/28 on GA (the reference uses 1: 2.4e-6
m in the tip) and its clamp fixes the whole first element straight (an O(1/n) stiffening near
the clamp, visible as the error that halves per doubling of n).

Static sag: PyElastica's `AnalyticalLinearDamper` with `uniform_damping_constant` c (v and w
scaled by exp(-c dt) each step, the same c as the XPBD runs).  The fall: no damper.

Stable step: PyElastica is explicit, so the step is bounded by the rod's fastest mode --
shear against the element's rotary inertia, omega ~ 2 sqrt(G/rho) / r = 3.4e4 rad/s for r = 2 mm,
independent of n -- and the axial wave sqrt(E/rho) / dx at fine n.  `largest_stable_step`
halves down a sweep until the undamped fall stays bounded; `bench/cable_peers.py` prints it.
The package is optional (the `[peers]` extra): without it `installed()` is False and the runner
prints one line saying what to install.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):                     # run as a script: the checkout on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from bench.baselines.free_cable import SEED_CABLE, Cable  # noqa: E402

INSTALL = "not installed (pip install -e .[peers], or pip install pyelastica)"
SETTLE_DAMPING = 10.0        # 1/s, as bench.baselines.xpbd_cable.SETTLE_DAMPING
SETTLE_TIME = 4.0            # s of damped motion for the static sag
STEP_SWEEP = (1e-4, 8e-5, 6e-5, 5e-5, 4e-5, 3e-5, 2e-5, 1e-5)   # s, largest first
STABLE_REACH = 1.05          # a run is unstable once any node leaves 1.05 L of the clamp


def installed() -> bool:
    return importlib.util.find_spec("elastica") is not None


class ElasticaCable:
    """One PyElastica simulator holding the cable (n elements), stepped by `advance`."""

    def __init__(self, n: int, dt: float, cable: Cable = SEED_CABLE, damping: float = 0.0):
        import elastica as ea

        class _Sim(ea.BaseSystemCollection, ea.Constraints, ea.Forcing, ea.Damping):
            pass

        c = cable
        self.n, self.dt, self.cable = n, float(dt), c
        self.sim = _Sim()
        self.rod = ea.CosseratRod.straight_rod(
            n, np.zeros(3), np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0]),
            c.length, c.radius, c.density, youngs_modulus=c.E, shear_modulus=c.G)
        self.sim.append(self.rod)
        self.sim.constrain(self.rod).using(ea.OneEndFixedBC, constrained_position_idx=(0,),
                                           constrained_director_idx=(0,))
        self.sim.add_forcing_to(self.rod).using(ea.GravityForces,
                                                acc_gravity=np.array([0.0, -c.gravity, 0.0]))
        if damping > 0.0:
            self.sim.dampen(self.rod).using(ea.AnalyticalLinearDamper,
                                            uniform_damping_constant=damping, time_step=self.dt)
        self.sim.finalize()
        self.stepper = ea.PositionVerlet()
        self.time = np.float64(0.0)

    def advance(self, nsteps: int) -> bool:
        """nsteps steps of dt; False (and stop) once the state is not finite or leaves the reach."""
        dt = np.float64(self.dt)
        for _ in range(nsteps):
            self.time = self.stepper.step(self.sim, self.time, dt)
        pos = self.rod.position_collection
        return bool(np.all(np.isfinite(pos))
                    and np.max(np.linalg.norm(pos, axis=0)) < STABLE_REACH * self.cable.length)

    def centreline(self) -> tuple[np.ndarray, np.ndarray]:
        """(s (n+1,) m material coordinates of the nodes, xy (2, n+1) m)."""
        s = np.linspace(0.0, self.cable.length, self.n + 1)
        return s, self.rod.position_collection[:2].copy()

    def tip(self) -> np.ndarray:
        return self.rod.position_collection[:2, -1].copy()


def static_sag(n: int, dt: float, cable: Cable = SEED_CABLE, settle: float = SETTLE_TIME,
               damping: float = SETTLE_DAMPING) -> tuple[ElasticaCable, float]:
    """Damped release: (the cable, the tip's movement in m over the last 10 % of the run)."""
    c = ElasticaCable(n, dt, cable, damping)
    k = max(1, int(round(settle / dt)))
    c.advance(k - k // 10)
    before = c.tip()
    c.advance(k // 10)
    return c, float(np.linalg.norm(c.tip() - before))


def fall(n: int, dt: float, duration: float = 0.5, cable: Cable = SEED_CABLE,
         every: float = 0.01) -> tuple[np.ndarray, np.ndarray, float, bool]:
    """Undamped fall: (t (k,) s, tip (k, 2) m every `every` s, wall s, stayed stable)."""
    c = ElasticaCable(n, dt, cable)
    per = max(1, int(round(every / dt)))
    k = int(round(duration / (dt * per)))
    t, tips, ok = [0.0], [c.tip()], True
    t0 = time.perf_counter()
    for i in range(k):
        ok = c.advance(per)
        t.append(float(c.time))
        tips.append(c.tip())
        if not ok:
            break
        del i
    return np.array(t), np.array(tips), time.perf_counter() - t0, ok


def largest_stable_step(n: int, duration: float = 0.5, cable: Cable = SEED_CABLE,
                        sweep=STEP_SWEEP) -> float:
    """The largest step of `sweep` (largest first) whose undamped fall of `duration` s stays
    finite and within STABLE_REACH L of the clamp, every smaller one being assumed stable."""
    for dt in sweep:
        if fall(n, dt, duration, cable)[3]:
            return float(dt)
    raise RuntimeError(f"pyelastica: no step of {sweep} is stable at n = {n}")


def main(argv=None) -> int:
    from bench.baselines.free_cable import elastica, shape_error
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--elements", type=int, default=40)
    ap.add_argument("--dt", type=float, default=None, help="s; default: the largest stable")
    a = ap.parse_args(argv)
    if not installed():
        print(f"pyelastica: {INSTALL}")
        return 0
    dt = a.dt or largest_stable_step(a.elements)
    ref = elastica()
    t0 = time.perf_counter()
    c, moved = static_sag(a.elements, dt)
    wall = time.perf_counter() - t0
    s, xy = c.centreline()
    print(f"PyElastica n={a.elements} dt={dt:g}: tip deflection {-xy[1, -1]:.6f} m (reference "
          f"{ref.tip_deflection:.6f}), shape error {shape_error(ref, s, xy):.3e} m, last-10% tip "
          f"motion {moved:.1e} m, {wall:.1f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
