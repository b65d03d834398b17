"""Seed 003 Fig. 5's ladder on the snap fit (issue 27): the same scripted insertion (the plug's set
point down at 20 mm/s, 0.8 s at T = 1 ms) on each prong model and mesh, in one run.

    python bench/snap.py [--mesh coarse fine] [--duration 0.8]

Rows, the seed's ladder (each adds one stage to the one before): Model 1 -- the whole FEM (in its
modes) with the plug's exact signed distance (its profile, a numba kernel; the seed's Model 1
detects against the plug's mesh); Model 2 -- Model 1 with the plug's trained network
(assets/sdf/plug_snap_fit.npz, ``tightsim train sdf``); Model 3 -- segmented, both segments full,
the cut's spring; Model 4 -- segmented and reduced; "Model 4 exact SDF" -- Model 4 with Model 1's
detection (what the network costs or saves at the top of the ladder); "Model 1 nodal" -- Model 1 in
the form seed 003 ran it (node coordinates, products with the precalculated M_hat^-1, ``pmi.LinearPmi``;
the same motion as Model 1's modes) -- and the Model 4 rows' ratios to it; Model 4 in the core -- as the
shipped scenario runs it: the core's one step with the prongs as its system (``snap_socket``; the
core's overhead shows), with the config's detector. Per row: coordinates, step
median and p99 (wall clock, every step after a warm-up run), the rate in kHz, the ratio to Model
1's median, and the physics each gives (the click's time, the peak insertion force, the deepest
penetration) so a faster row that changed the answer shows it. Timings vary ~1.6x between runs of
this VM: compare rows of one run.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim_core.scenarios import snap_fit  # noqa: E402
from sim_core.step import Laps  # noqa: E402
from sim_core.systems.fem import prong as prong_mod  # noqa: E402
from sim_core.systems.fem import snap  # noqa: E402

P0, SPEED, Z_END = (0.0, 0.0, 12.5e-3), 20e-3, 3e-3
# (label, prong model, detection) in the ladder's order
LADDER = (("Model 1 whole", "whole", "exact"), ("Model 2 neural", "whole", "neural"),
          ("Model 3 segmented", "segmented", "neural"), ("Model 4 reduced", "reduced", "neural"),
          ("Model 4 exact SDF", "reduced", "exact"), ("Model 1 nodal", "nodal", "exact"))


def plug_network():
    """The shipped snap fit's plug network (the bench's plug is the default ``PlugSpec``, its plug)."""
    from sim_core import config as config_mod
    from sim_core.paths import scenario_path
    cfg = config_mod.load(scenario_path("snap_fit"))
    cfg["contact"]["detector"] = "neural"
    return snap_fit.plug_sdf(cfg)


def stage_times(m, path, duration: float) -> np.ndarray:
    """(steps, stages) s: each step's wall time per stage (``snap.STAGES``; 0 where a step has no
    such stage, e.g. no contact to solve), the same insertion as the row's timed run, laps on."""
    state, out = snap.start(m, P0), []
    for _ in range(int(round(duration / m.T))):
        laps = Laps()
        state, _ = snap.step(m, state, path(state.t + m.T), laps)
        out.append([laps.times.get(s, 0.0) for s in snap.STAGES])
    return np.array(out)


def row(pm, model: str, duration: float, sdf=None) -> dict:
    m = snap.build(pm, model=model, sdf=sdf)
    path = snap.descent(P0, SPEED, Z_END)
    snap.run(m, P0, path, 0.05)                             # warm-up: kernels loaded, caches hot
    _, tr = snap.run(m, P0, path, duration)
    a = tr.arrays()
    dt = np.diff(a["wall"])
    k = snap_fit.click_step(a)                             # the hooks let go
    return {"coords": m.modal.size, "median": float(np.median(dt)), "p99": float(np.percentile(dt, 99)),
            "click": float(a["t"][k]) if k > 0 else float("nan"),
            "peak": float(a["plug_force"][:k if k > 0 else None, 2].max()),
            "pen": float(a["penetration"].max()), "stages": stage_times(m, path, duration)}


def print_stages(rows: list) -> None:
    """Per model, each stage's median / p99 ms a step, and two bounds the stages set on a smaller
    model's ratio to Model 1.  A step costs at least its stages that do not grow with the
    coordinates (the complement of ``snap.STAGES_IN_R``: the k-means and the contact solve, the
    same problem in every model), so even with every other stage free its median step is no
    shorter than their per-step sum's median.  And per step on average, a model's time is S + R
    -- S those shared stages, R the ones that grow with the coordinates -- so with S the same in
    both (the same insertion) the ratio of means (S + R1) / (S + R4) lies between 1 and R1 / R4
    whatever the shared stages cost: R1 / R4 is the most any speed-up of the k-means or the
    solve can bring the ladder to."""
    print("\nper stage, median / p99 ms a step (laps on; stages marked * grow with the coordinates)")
    print(f"{'model':20s} " + " ".join(f"{s + ('*' if s in snap.STAGES_IN_R else ''):>15s}" for s in snap.STAGES))
    for label, r in rows:
        st = r["stages"] * 1e3
        print(f"{label:20s} " + " ".join(f"{np.median(c):7.3f}/{np.percentile(c, 99):7.3f}" for c in st.T))
    in_r = np.array([s in snap.STAGES_IN_R for s in snap.STAGES])
    m1 = rows[0][1]
    R1 = float(m1["stages"][:, in_r].sum(axis=1).mean())
    for label, r in rows[1:]:
        if r["coords"] < m1["coords"]:
            floor_ms = float(np.median(r["stages"][:, ~in_r].sum(axis=1)))
            R = float(r["stages"][:, in_r].sum(axis=1).mean())
            ratio = float(m1["stages"].sum(axis=1).mean() / r["stages"].sum(axis=1).mean())
            print(f"{label}: its k-means and solve alone {floor_ms * 1e3:.3f} ms median a step, so at most "
                  f"{m1['median'] / floor_ms:.2f}x Model 1's median ({m1['median'] * 1e3:.3f} ms) were every "
                  f"other stage free; the stages that grow with the coordinates {R * 1e3:.3f} ms a step on "
                  f"average against Model 1's {R1 * 1e3:.3f}: {R1 / R:.2f}x, the ceiling of the ratio of means "
                  f"(now {ratio:.2f}x) at any cost of the shared stages; the coordinates' ratio "
                  f"{m1['coords'] / r['coords']:.2f}x")


def core_row(mesh: str, duration: float) -> dict:
    """Model 4 as the scenario runs it: the core's one step with the prongs as its system
    (``snap_socket.SnapSocket``), the same set point (held velocity zero, as ``snap.step`` has it)."""
    from sim_core import config as config_mod
    from sim_core import step as step_mod
    from sim_core.paths import scenario_path
    from sim_core.types import Inputs
    cfg = config_mod.load(scenario_path("snap_fit"))
    cfg["socket"]["mesh"] = mesh
    model, start = snap_fit.world(cfg)
    path = snap.descent(P0, SPEED, Z_END)
    sock = snap_fit.socket_of(model)
    start = step_mod.start(model, type(start)(0.0, np.array([P0]), start.R_wb, start.V, systems=start.systems))

    def run(seconds):
        st, walls, z, Fz, pen = start, [], [], [], []
        for _ in range(int(round(seconds / model.dt))):
            p_set = path(st.t + model.dt)
            inp = Inputs(p_set[None], st.R_wb.copy(), np.zeros((1, 3)), np.zeros((1, 3)))
            st, info = step_mod.step(model, st, inp)
            walls.append(time.perf_counter())
            z.append(st.systems[0].deflection.copy())
            Fz.append(info.contact_wrench[0, 2])
            pen.append(info.max_penetration)
        return np.array(walls), np.array(z), np.array(Fz), np.array(pen)
    run(0.05)
    walls, defl, Fz, pen = run(duration)
    dt = np.diff(walls)
    k = snap_fit.click_step({"deflection": defl})
    return {"coords": sock.snap.modal.size, "median": float(np.median(dt)), "p99": float(np.percentile(dt, 99)),
            "click": (k + 1) * model.dt if k > 0 else float("nan"), "peak": float(Fz[:k if k > 0 else None].max()),
            "pen": float(pen.max())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mesh", nargs="+", default=["coarse", "fine"], choices=["coarse", "fine"])
    ap.add_argument("--duration", type=float, default=0.8, help="simulated seconds per row (default 0.8)")
    a = ap.parse_args(argv)
    for mesh in a.mesh:
        pm = prong_mod.build(level=mesh)
        print(f"\n{mesh} mesh: whole {pm.whole.dof} coordinates; segments "
              f"{pm.split.parts[0].dof} + {pm.split.parts[1].dof}; reduced {pm.bases[0].order} + {pm.bases[1].order}")
        print(f"{'model':20s} {'coords':>6s} {'median ms':>9s} {'p99 ms':>7s} {'kHz':>6s} {'vs M1':>6s} "
              f"{'click s':>8s} {'peak N':>7s} {'pen um':>7s}")
        base, net, rows = None, plug_network(), []
        for label, model, detect in LADDER:
            r = row(pm, model, a.duration, net if detect == "neural" else None)
            rows.append((label, r))
            base = base or r["median"]
            print(f"{label:20s} {r['coords']:6d} {r['median'] * 1e3:9.3f} {r['p99'] * 1e3:7.3f} "
                  f"{1e-3 / r['median']:6.2f} {base / r['median']:5.2f}x {r['click']:8.3f} {r['peak']:7.2f} "
                  f"{r['pen'] * 1e6:7.2f}", flush=True)
        nodal = dict(rows)["Model 1 nodal"]["median"]
        print("against Model 1 nodal (the seed's form): " + ", ".join(
            f"{label} {nodal / r['median']:.2f}x" for label, r in rows if label.startswith("Model 4")))
        r = core_row(mesh, a.duration)
        print(f"{'Model 4 in the core':20s} {r['coords']:6d} {r['median'] * 1e3:9.3f} {r['p99'] * 1e3:7.3f} "
              f"{1e-3 / r['median']:6.2f} {base / r['median']:5.2f}x {r['click']:8.3f} {r['peak']:7.2f} "
              f"{r['pen'] * 1e6:7.2f}", flush=True)
        print_stages(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
