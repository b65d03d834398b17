"""Step cost of seed 002's cable (``sim_core.scenarios.cable``) at T = 10 ms, stage by stage, at
40, 80 and 160 links, in two worlds:

* ``free``  -- the free cable (no clamp, contact or damping, no gravity) bent by 0.3 rad and
  spinning (the energy test's state, ``tests/sim_core/dynamics/test_cable_model.py``): one
  coupled island, the turns' Newton solve (``couplings.turns``) and the bodies' blocks;
* ``drum``  -- the cable clamped at the origin under gravity, falling onto a fixed drum
  (radius 2.5 cm, axis along y, under the cable's middle, mu 0.3) and draping over it: the
  capsule-cylinder detection (``collision.batch``) and the contact solve on top.  It is first
  run ``--settle`` steps so the timed steps have the drum's contacts.

    python bench/cable_step.py [--world free|drum|both] [--sizes 40 80 160] [--steps 200]
                               [--settle 60]

Prints per world and size the median and p99 (ms) of the whole step and of each stage
(``step.Laps``: systems, detection, cspace, solving, integration), and of the two parts of
"systems": blocks (``rigid.blocks``, the bodies' PMI blocks) and turns (``couplings.turns``:
the turns' Newton solve and the couplings' terms), and the contacts handed to the solver.  The
solve of a coupled island is h15's (``step.solve``): its share is printed, not tuned here.
Timings on the shared 2-core VM are indicative only (run it on an idle machine for figures).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # the checkout: its tests' states

import sim_core  # noqa: F401 - first: it sets the BLAS thread count the physics runs with
from sim_core import step as step_mod  # noqa: E402
from sim_core.dynamics import couplings  # noqa: E402
from sim_core.scenarios import cable, chain  # noqa: E402
from sim_core.shapes import Cylinder  # noqa: E402
from sim_core.systems import rigid  # noqa: E402
from sim_core.types import ContactPair, Inputs, Material  # noqa: E402

DT = 0.01
SPEC = cable.CableSpec()
DRUM_RADIUS = 0.025      # m
DRUM_GAP = 5e-4          # m, the drum's top below the straight cable's underside
DRUM_MAT = Material(0.3, 0.2, 2e-4)


def bent_moving(n: int, bend: float = 0.3):
    """The free cable bent in the xz plane by `bend` rad (curvature ~ sin(pi s / L)) and spinning
    at (0.3, 0, 1) rad/s with a drift of 1 cm/s, no gravity: the energy test's state
    (``tests/sim_core/dynamics/test_cable_model.py``), at T = 10 ms."""
    from tests.sim_core.dynamics.test_cable_model import bent_moving as state
    return state(n, bend)


def over_drum(n: int):
    """The clamped cable under gravity over a fixed drum (shape n) under its middle; pairs
    0 .. n-1 join link i to the drum."""
    centre = np.array([0.5 * SPEC.length, 0.0, -(SPEC.radius + DRUM_GAP + DRUM_RADIUS)])
    drum = Cylinder(name="drum", R_bs=chain.DRUM_R_WS.copy(), p_bs=centre, radius=DRUM_RADIUS, half_length=0.02)
    pairs = tuple(ContactPair(i, n, material=DRUM_MAT) for i in range(n))
    return cable.build(n, SPEC, DT, shapes=(drum,), pairs=pairs, anchor="clamp")


WORLDS = {"free": bent_moving, "drum": over_drum}
SETTLE = {"free": 5, "drum": 60}


def rest_inputs(n: int) -> Inputs:
    return Inputs(np.zeros((n, 3)), np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 3)), np.zeros((n, 3)))


class Timed:
    """Wraps a module function, adding each call's wall time to ``self.spent`` (s): the parts of
    the "systems" stage (``rigid.blocks``, ``couplings.turns``: the turns' Newton solve)."""

    def __init__(self, module, name: str):
        self.module, self.name, self.fn, self.spent = module, name, getattr(module, name), 0.0

    def __call__(self, *a, **kw):
        t = time.perf_counter()
        try:
            return self.fn(*a, **kw)
        finally:
            self.spent += time.perf_counter() - t

    def __enter__(self):
        setattr(self.module, self.name, self)
        return self

    def __exit__(self, *exc):
        setattr(self.module, self.name, self.fn)


def run(world: str, n: int, steps: int, settle: int | None = None) -> dict:
    model, st = WORLDS[world](n)
    inp = rest_inputs(n)
    for _ in range(SETTLE[world] if settle is None else settle):   # kernels loaded, contacts formed
        st, _ = step_mod.step(model, st, inp)
    total, stages, contacts = [], {}, []
    with Timed(rigid, "blocks") as tb, Timed(couplings, "turns") as tc:
        for _ in range(steps):
            tb.spent = tc.spent = 0.0
            t = time.perf_counter()
            st, info = step_mod.step(model, st, inp)
            total.append(time.perf_counter() - t)
            contacts.append(info.n_clusters)
            stages.setdefault("blocks", []).append(tb.spent)
            stages.setdefault("turns", []).append(tc.spent)
            for k, v in info.times.items():
                stages.setdefault(k, []).append(v)
    return {"total": np.array(total), "stages": {k: np.array(v) for k, v in stages.items()},
            "contacts": np.array(contacts), "finite": bool(np.isfinite(st.V).all())}


def fmt(x: np.ndarray) -> str:
    return f"{1e3 * np.median(x):7.3f} / {1e3 * np.percentile(x, 99):7.3f}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world", choices=("free", "drum", "both"), default="both")
    ap.add_argument("--sizes", type=int, nargs="+", default=[40, 80, 160])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--settle", type=int, default=None)
    ap.add_argument("--parallel", type=int, default=couplings.PARALLEL_MIN_COUPLINGS, metavar="C",
                    help="couplings.PARALLEL_MIN_COUPLINGS: the anchor-frame kernels in parallel from C couplings "
                         "(0: serial; default: the step's)")
    a = ap.parse_args(argv)
    couplings.PARALLEL_MIN_COUPLINGS = a.parallel or None
    worlds = ("free", "drum") if a.world == "both" else (a.world,)
    print(f"cable step at T = {1e3 * DT:g} ms, median / p99 in ms ({a.steps} steps)")
    for w in worlds:
        for n in a.sizes:
            r = run(w, n, a.steps, a.settle)
            parts = "  ".join(f"{k} {fmt(v)}" for k, v in r["stages"].items())
            print(f"{w:5s} {n:4d} links  step {fmt(r['total'])}  |  {parts}  |  contacts "
                  f"{int(np.median(r['contacts']))}  finite {r['finite']}")


if __name__ == "__main__":
    main()
