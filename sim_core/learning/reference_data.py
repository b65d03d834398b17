"""Reference wrench data from high-fidelity simulation (issue 7, item 1).

Stands in for the seed's F/T experiments (seed 000 Sec. V.A): the moving part alone, driven
by the scenario's spring-damper drive toward human-like set-pose motions, simulated with
every contact node (no clustering), the exact SDF, T = 1 ms and a tight SOR tolerance.  Each
step writes a ``/wrench_sample`` (``sim_core.learning.wrench_data``): the part's pose and twist, the
drive's wrench as ``f_ext`` and the contact wrench the solver found as ``wrench``.

Motions, one per episode, seeded by (seed, episode):
* peg in hole -- *search*: from 1-3 mm above the entry, 0.2-1.5 mm off the axis and tilted
  up to 1 deg, the set point spirals toward the axis while pressing down lightly;
  *engage*: it descends into the chamfer and bore; *wiggle*: +-0.3 deg tilts and +-0.1 mm
  sideways at 1-3 Hz while it *inserts* 15-40 mm;
* bolting -- *search*: the nut lands 0.2-1 mm off the axis, tilted up to 1 deg, and the
  set point circles to the axis; *engage*: a quarter to half turn back (counter-clockwise)
  to find the thread's start, then forward; *wiggle*: small tilts; *fasten*: one to three
  clockwise turns at 0.5-1.5 rev/s with a 5-20 N push.
"""
from __future__ import annotations

import copy
import math
import os
import time
from pathlib import Path

import numpy as np

from sim_core import step as step_mod
from sim_core.dynamics import blocks as dynamics
from sim_core.learning.wrench_data import WrenchWriter
from sim_core.math.so3 import matrix_to_quat
from sim_core.scenarios import scenario

HIFI = {"detector": "exact", "clustering": "none", "solver": "sor", "cspace": "off",
        "sor_iterations": 200, "sor_tolerance": 1e-5}
DT = 1e-3


def _waypoints_peg(rng, L_half: float):
    off = rng.uniform(0.2e-3, 1.5e-3)
    ang = rng.uniform(0, 2 * math.pi)
    tilt = rng.uniform(0, 1.0, 2) * rng.choice([-1, 1], 2)
    z0 = L_half + rng.uniform(1e-3, 3e-3)
    depth = rng.uniform(15e-3, 40e-3)
    wps, t = [], 0.0
    wps.append((t, [off * math.cos(ang), off * math.sin(ang), z0], 0.0, list(tilt)))
    # search: spiral in over 0.6-1.2 s, pressing 1 mm below the entry
    ts = rng.uniform(0.6, 1.2)
    for k in range(1, 7):
        f = k / 6
        r = off * (1 - f)
        a = ang + 2 * math.pi * f * rng.uniform(0.5, 1.5)
        wps.append((t + ts * f, [r * math.cos(a), r * math.sin(a), L_half - 1e-3 * f], 0.0, list(tilt * (1 - 0.5 * f))))
    t += ts
    # engage + wiggle + insert
    tw = rng.uniform(1.0, 2.0)
    fw = rng.uniform(1.0, 3.0)
    n = 12
    for k in range(1, n + 1):
        f = k / n
        wig = 0.3 * math.sin(2 * math.pi * fw * tw * f)
        side = 1e-4 * math.sin(2 * math.pi * fw * tw * f + 1.0)
        wps.append((t + tw * f, [side, 0.0, L_half - 1e-3 - depth * f], 0.0,
                    [0.5 * tilt[0] * (1 - f) + wig, 0.5 * tilt[1] * (1 - f)]))
    return wps


def _waypoints_bolt(rng, z_land: float, pitch: float = 5e-3):
    off = rng.uniform(0.2e-3, 1.0e-3)
    ang = rng.uniform(0, 2 * math.pi)
    tilt = rng.uniform(0, 1.0, 2) * rng.choice([-1, 1], 2)
    push = rng.uniform(5.0, 20.0)
    wps, t = [], 0.0
    wps.append((t, [off * math.cos(ang), off * math.sin(ang), z_land + 3e-3], 0.0, list(tilt)))
    below = push / 400.0                  # the drive's 400 N/m axial spring: set point below the nut
    ts = rng.uniform(0.4, 0.8)
    wps.append((t + ts, [0.0, 0.0, z_land - below], 0.0, list(0.5 * tilt)))
    t += ts
    back = rng.uniform(90, 180)           # find the thread's start: turn back first
    tb = back / 360 / rng.uniform(0.3, 0.6)
    wps.append((t + tb, [0.0, 0.0, z_land - below], back, [0.0, 0.0]))
    t += tb
    turns = rng.uniform(1.0, 3.0)
    rate = rng.uniform(0.5, 1.5)
    n = 8
    for k in range(1, n + 1):
        f = k / n
        wig = 0.25 * math.sin(2 * math.pi * 2.0 * f * turns / rate)
        wps.append((t + turns / rate * f, [0.0, 0.0, z_land - below - pitch * turns * f],
                    back - 360 * turns * f, [wig, 0.0]))
    return wps


def table2_pairs() -> list[tuple[str, str]]:
    """(bolt, nut) asset names of seed 000's ten Table II pairs."""
    from sim_core.geometry.profiles import TABLE2_BROAD, TABLE2_NARROW, pair_name
    return [(f"bolt_{pair_name(d, p)}", f"nut_{pair_name(d, p)}") for d, p in TABLE2_NARROW + TABLE2_BROAD]


def episode_config(task: str, seed: int, episode: int, parts: tuple[str, str] | None = None) -> dict:
    """The validated config of one reference episode: the task's scenario with the high-
    fidelity contact settings, the drive on the part, T = 1 ms, and the episode's motion."""
    from sim_core import config as config_mod
    from sim_core.paths import scenario_path
    cfg = copy.deepcopy(config_mod.load(scenario_path(task)))
    cfg["contact"].update(HIFI)
    cfg["arm"]["robot"] = "off"
    cfg["scenario"]["dt"] = DT
    if parts is not None:
        cfg["parts"]["static"], cfg["parts"]["moving"] = parts
    rng = np.random.default_rng([seed, episode])
    if task == "peg_in_hole":
        wps = _waypoints_peg(rng, 0.04)
    else:                                # the nut lands on the bolt's end; one pitch per turn
        from sim_core.geometry.profiles import all_parts
        specs = all_parts()
        bolt, nut = specs[cfg["parts"]["static"]], specs[cfg["parts"]["moving"]]
        wps = _waypoints_bolt(rng, bolt.length + 0.5 * nut.height, bolt.thread.p)
    cfg["waypoints"] = [{"t": float(t), "position": tuple(float(x) for x in p), "yaw_deg": float(y),
                         "tilt_deg": (float(tl[0]), float(tl[1]))} for t, p, y, tl in wps]
    cfg["start"] = {"position": cfg["waypoints"][0]["position"], "yaw_deg": 0.0,
                    "tilt_deg": cfg["waypoints"][0]["tilt_deg"]}
    cfg["scenario"]["duration"] = float(wps[-1][0]) + 0.3
    return cfg


def plan(task: str, seed: int, steps: int, parts: tuple[str, str] | None = None) -> list[tuple[int, int]]:
    """(episode, samples) of the episodes that make `steps` samples, in order: each runs its
    motion's duration, the last is cut at the total.  Known before any of them runs (the
    motions are seeded by (seed, episode) alone), so they can run in parallel."""
    out, n = [], 0
    while n < steps:
        cfg = episode_config(task, seed, len(out), parts)
        k = min(int(round(cfg["scenario"]["duration"] / DT)), steps - n)
        out.append((len(out), k))
        n += k
    return out


def episode(task: str, seed: int, number: int, steps: int, parts: tuple[str, str] | None = None,
            progress=None) -> np.ndarray:
    """The first `steps` samples of episode `number`, (steps, 26) float64 rows: t (s), p_w [3],
    q_wb [4], v_w [3], w_b [3], f_ext [6] (the drive's wrench over the step), wrench [6] (the
    contact wrench), as ``WrenchWriter.sample`` takes them.  A pure function of its
    arguments: any process, local or on a Ray node, computes the same rows.  `progress(k)`
    is called every 200 samples."""
    cfg = episode_config(task, seed, number, parts)
    model, state = scenario.build(cfg, f"{task} reference episode {number}")
    scen = scenario.record(cfg)
    rows = np.empty((steps, 26))
    for k in range(steps):
        inp = scenario.inputs_at(scen, state.t)
        ld = dynamics.loads(model, state, inp, model.dt)
        nxt, info = step_mod.step(model, state, inp)
        f_drive = ld.F0[0] - ld.B[0] @ nxt.V[0]          # the drive's wrench over the step
        rows[k] = np.concatenate([[state.t], state.p_w[0], matrix_to_quat(state.R_wb[0]), state.V[0, :3],
                                  state.V[0, 3:], f_drive, info.contact_wrench[0]])
        state = nxt
        if progress is not None and (k + 1) % 200 == 0:
            progress(k + 1)
    return rows


def _episode_job(job) -> np.ndarray:
    return episode(*job)


def generate(task: str, out, steps: int, seed: int = 0, progress=None, parts: tuple[str, str] | None = None,
             workers: int = 1, ray: str | None = None) -> dict:
    """Write at least `steps` samples of reference data for `task` to `out` (.mcap);
    returns a summary.  The episodes (``plan``) run in this process (`workers` 1), in
    `workers` local processes (0: one per CPU), or on the Ray cluster at `ray`
    (``ray_cluster``); the file is the same byte for byte."""
    out = Path(out)
    t0 = time.perf_counter()
    jobs = [(task, seed, e, k, parts) for e, k in plan(task, seed, steps, parts)]
    cfg = episode_config(task, seed, 0, parts)
    done = [0]
    with WrenchWriter(out, task, cfg["parts"]["static"], cfg["parts"]["moving"], DT,
                      "reference simulation: every contact node, exact SDF, T = 1 ms, "
                      f"SOR tolerance {HIFI['sor_tolerance']} N",
                      seed=int(seed), generator="sim_core.learning.reference_data") as writer:

        def write(k, rows):               # in episode order, whichever finished first
            for r in rows:
                writer.sample(jobs[k][2], r[0], r[1:4], r[4:8], r[8:11], r[11:14], r[14:20], r[20:26])
            done[0] += len(rows)
            if progress is not None:
                progress(min(done[0], steps))
        workers = min(workers or os.cpu_count() or 1, len(jobs))
        if ray:
            from sim_core.learning import ray_cluster
            with ray_cluster.session(ray, workers) as r:
                ray_cluster.ordered(r, episode, jobs, write)
        elif workers > 1:                 # spawned: a fork after the exact SDF's OpenMP kernels is killed
            import multiprocessing as mp
            with mp.get_context("spawn").Pool(workers) as pool:
                for k, rows in enumerate(pool.imap(_episode_job, jobs)):
                    write(k, rows)
        else:
            for k, job in enumerate(jobs):
                write(k, episode(*job, progress=None if progress is None
                                 else lambda i, n0=done[0]: progress(min(n0 + i, steps))))
    return {"task": task, "samples": done[0], "episodes": len(jobs), "seconds": round(time.perf_counter() - t0, 1),
            "file": str(out)}
