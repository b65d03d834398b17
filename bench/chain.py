"""Step time of a chain of N rigid links joined by PMI spring-dampers, at N = 10, 40, 160, in
two worlds (``sim_core.scenarios.chain``; a coupled island factorized on its blocks along the
chain, ``dynamics.blocktree``):

* ``hanging`` -- hanging under gravity from a world anchor (``chain.build``: one coupled
  island of 6 N coordinates, no contacts; the default link with bending springs);
* ``draped`` -- falling onto a fixed drum and draped over it, every link against the drum with
  friction mu = 0.3 (``chain.draped``: N capsule-cylinder pairs, the links and their contacts
  one island; ball joints with a light bending damper, ``chain.DRAPE``; T = 1 ms).  It is
  first run ``--settle`` steps so the timed steps have the drum's contacts.

    python bench/chain.py [--world hanging|draped|both] [--steps 300] [--settle 300] [--sizes 10 40 160]
                          [--dt 0.001]

Both run at T = 1 ms by default: a 1 cm link turns too far in 10 ms for the couplings' turns
to resolve (``dynamics.couplings``: the Newton passes run to their cap and a ball-joint chain's
energy grows), so a 10 ms run (``--dt 0.01``) would time a chain that whips, not one that hangs.
Prints per world and N the median and p99 of the whole step and of each stage, the contacts
handed to the solver, the change of the chain's energy over the run relative to the energy
its fall releases (near rounding for the hanging chain; the draped chain's contacts and
damper dissipate), the fitted exponent of the step's cost from 40 to 160 links
(log(t160 / t40) / log 4; the target is <= 1.2: the cost per link must not grow) and whether
160 links step in under 10 ms.  Timings on the shared 2-core VM are indicative only.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np  # noqa: E402

import sim_core  # noqa: F401 - first: it sets the BLAS thread count the physics runs with
from sim_core import step as step_mod  # noqa: E402
from sim_core.scenarios import chain  # noqa: E402
from sim_core.types import Inputs  # noqa: E402

WORLDS = {"hanging": lambda n, dt: chain.build(n, dt=dt), "draped": lambda n, dt: chain.draped(n, dt=dt)}
SETTLE = {"hanging": 0, "draped": 300}    # default steps run before timing (the drum's contacts formed)


def run(world: str, n: int, steps: int, settle: int, dt: float) -> dict:
    model, st = WORLDS[world](n, dt)
    inp = Inputs(np.zeros((n, 3)), np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 3)), np.zeros((n, 3)))
    E0 = chain.energy(model, st)
    scale = sum(b.mass * float(np.linalg.norm(model.gravity)) * (i + 0.5) * b_len(model)
                for i, b in enumerate(model.bodies))
    for _ in range(max(5, settle)):                      # compile / load the kernels, warm the caches
        st, _ = step_mod.step(model, st, inp)
    total, stages, clusters = [], {}, []
    for _ in range(steps):
        t = time.perf_counter()
        st, info = step_mod.step(model, st, inp)
        total.append(time.perf_counter() - t)
        clusters.append(info.n_clusters)
        for k, v in info.times.items():
            stages.setdefault(k, []).append(v)
    return {"total": np.array(total), "stages": {k: np.array(v) for k, v in stages.items()},
            "clusters": np.array(clusters), "finite": bool(np.isfinite(st.V).all()),
            "energy": (chain.energy(model, st) - E0) / scale}


def b_len(model) -> float:
    """m, a link's length (its capsule's segment)."""
    return 2.0 * model.shapes[0].half_length


def report(world: str, sizes: list[int], steps: int, settle: int | None, dt: float) -> None:
    settle = SETTLE[world] if settle is None else settle
    print(f"-- {world} chain ({steps} steps of {dt * 1e3:g} ms timed after {settle} settling steps)")
    med = {}
    for n in sizes:
        r = run(world, n, steps, settle, dt)
        t = r["total"]
        med[n] = float(np.median(t))
        print(f"N = {n:4d}: step median {np.median(t) * 1e3:7.3f} ms, p99 {np.percentile(t, 99) * 1e3:7.3f} ms"
              f"  (contacts median {int(np.median(r['clusters']))}, max {int(r['clusters'].max())}"
              f"{'' if r['finite'] else ', NOT FINITE'}); energy change {r['energy']:.1e} of the fall's")
        for k, v in r["stages"].items():
            print(f"    {k:12s} median {np.median(v) * 1e3:7.3f} ms, p99 {np.percentile(v, 99) * 1e3:7.3f} ms")
    if 40 in med and 160 in med:
        k = math.log(med[160] / med[40]) / math.log(4.0)
        print(f"fitted exponent of the step's cost, 40 -> 160 links: {k:.2f} (target <= 1.2: "
              f"{'met' if k <= 1.2 else 'not met'})")
    if 160 in med:
        print(f"160 links < 10 ms: {'yes' if med[160] < 0.010 else 'no'} ({med[160] * 1e3:.2f} ms median)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world", choices=("hanging", "draped", "both"), default="both")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--settle", type=int, default=None, help="steps before timing (default: hanging 0, draped 300)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 40, 160])
    ap.add_argument("--dt", type=float, default=0.001, help="s, the step (default 1 ms: module docstring)")
    args = ap.parse_args()
    for world in (("hanging", "draped") if args.world == "both" else (args.world,)):
        report(world, args.sizes, args.steps, args.settle, args.dt)


if __name__ == "__main__":
    main()
