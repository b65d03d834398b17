"""Contact detection: our broad phase + neural SDF against python-fcl, on the same poses
(seed 000 Table I).

    python bench/detection_vs_fcl.py [--min-poses 1000] [--repeat 1]

Poses: every physics step of headless batch runs of each task (the configured run plus
variants with another start yaw / offset, until --min-poses), so approach, first contact
and deep engagement are all in the set.  Per pose, side by side in one run:

  (a) python-fcl: mesh-mesh ``collide`` of the moving part's mesh against the static part's
      mesh, BVHs built once, all contacts requested -- twice: with the shipped static mesh
      (5,000 triangles, drawn by the view), and with a static mesh refined until it is as
      accurate as the network (its RMS deviation from the true surface no larger than the
      network's RMS error; the shipped meshes deviate by more than the clearances);
  (b) ours: the broad phase (bounding-cylinder filter of the moving part's nodes) plus the
      neural SDF of the static part on the candidates, normals for those inside the band;
      the exact SDF on the same candidates is timed too, for reference.

Prints the average / p99 / max ms per task for all, the speed ratios of the averages, and
how the two contact sets agree: of the moving part's nodes that FCL's colliding triangles
carry and that are truly inside the static part (exact SDF), the fraction we report as
contacts; and of the nodes we report as penetrating, the fraction the exact SDF places
more than 10 um outside (false positives).  Needs the trained weights in assets/sdf/.
"""
from __future__ import annotations

import argparse
import copy
import time

import sim_core  # noqa: F401 - first: it sets the BLAS thread count the physics runs with

# isort: split
import numpy as np  # noqa: E402

FP_SLACK_M = 1e-5       # a reported penetration is false only if the exact SDF says > 10 um out


def record_poses(task: str, min_poses: int) -> tuple[list, object]:
    """(R_wb, p_w) of every step of headless runs of `task` and variants; and the model."""
    from sim_core.scenarios import scenario
    model, state, cfg = scenario.load(task)
    poses = []
    variants = [(0.0, 0.0), (37.0, 1.5e-4), (-71.0, -1.5e-4), (113.0, 3e-4), (151.0, -3e-4)]
    for yaw, dx in variants:
        c = copy.deepcopy(cfg)
        c["start"]["yaw_deg"] = c["start"].get("yaw_deg", 0.0) + yaw
        pos = list(c["start"]["position"])
        pos[0] += dx
        c["start"]["position"] = pos
        m, s = scenario.build(c, src=f"{task} (yaw {yaw:+g} deg, x {dx * 1e3:+g} mm)")
        scenario.simulate(m, scenario.record(c), s,
                          on_step=lambda prev, inp, nxt, info: poses.append((nxt.R_wb[0].copy(), nxt.p_w[0].copy())))
        if len(poses) >= min_poses:
            break
    return poses, model


_BARY = np.array([[1 / 3, 1 / 3, 1 / 3], [.5, .5, 0], [0, .5, .5], [.5, 0, .5],
                  [.7, .15, .15], [.15, .7, .15], [.15, .15, .7]])


def mesh_deviation(mesh, exact) -> tuple[float, float]:
    """(max, RMS) distance of a mesh from the true surface (m): |exact SDF| at seven
    barycentric points per triangle."""
    V, F = mesh.vertices, mesh.faces
    d = np.concatenate([np.abs(exact.query(b[0] * V[F[:, 0]] + b[1] * V[F[:, 1]] + b[2] * V[F[:, 2]])[0])
                        for b in _BARY])
    return float(d.max()), float(np.sqrt(np.mean(d * d)))


def equal_accuracy_mesh(spec, exact, rms_target: float):
    """The coarsest static mesh, doubling from 5,000 triangles, whose RMS deviation from the
    surface is no larger than `rms_target` (the network's RMS error)."""
    from sim_core.geometry.mesh import mesh_part
    tri = 5000
    while True:
        mesh = mesh_part(spec, tri)
        dev = mesh_deviation(mesh, exact)
        if dev[1] <= rms_target or tri >= 640_000:
            return mesh, dev
        tri *= 2


def _bvh(vertices, faces):
    import fcl
    m = fcl.BVHModel()
    m.beginModel(len(vertices), len(faces))
    m.addSubModel(np.asarray(vertices, float), np.asarray(faces, np.int64))
    m.endModel()
    return m


def fcl_objects(model, static_mesh, moving_name: str):
    import fcl

    from sim_core.geometry.assets import load_mesh
    from sim_core.paths import assets_dir
    mv = load_mesh(assets_dir() / "parts" / f"{moving_name}.ply")
    o_static = fcl.CollisionObject(_bvh(static_mesh.vertices, static_mesh.faces),
                                   fcl.Transform(model.shapes[0].R_ws, model.shapes[0].p_ws))
    o_moving = fcl.CollisionObject(_bvh(mv.vertices - model.bodies[0].com_part, mv.faces), fcl.Transform())
    return o_static, o_moving, np.asarray(mv.faces)


def time_fcl(o_moving, o_static, R, p, repeat: int):
    """Best of `repeat` timings (s) of one all-contacts collide, and its result."""
    import fcl
    req = fcl.CollisionRequest(num_max_contacts=1_000_000, enable_contact=True)
    o_moving.setTransform(fcl.Transform(R, p))
    best = np.inf
    for _ in range(repeat):
        res = fcl.CollisionResult()
        t0 = time.perf_counter()
        fcl.collide(o_moving, o_static, req, res)
        best = min(best, time.perf_counter() - t0)
    return best, res


def run_task(task: str, min_poses: int, repeat: int) -> dict:
    import json

    from sim_core.collision import broadphase, detection, neural_sdf
    from sim_core.geometry import profiles
    from sim_core.geometry.assets import load_mesh
    from sim_core.paths import assets_dir
    from sim_core.scenarios import scenario
    from sim_core.types import BodyPose

    poses, model = record_poses(task, min_poses)
    _, _, cfg = scenario.load(task)
    static_name, moving_name = cfg["parts"]["static"], cfg["parts"]["moving"]
    spec = profiles.all_parts()[static_name]
    net = neural_sdf.load(assets_dir() / "sdf" / f"{static_name}.npz", spec=spec, part=static_name)
    net_rms = json.loads((assets_dir() / "sdf" / f"{static_name}.json").read_text())["rms_um"] * 1e-6
    from sim_core.shapes import nodes_of
    body, shape = nodes_of(model, 0), model.shapes[0]
    exact = shape.sdf_exact                  # the geometry itself: ground truth
    shipped = load_mesh(assets_dir() / "parts" / f"{static_name}.ply")
    fine, fine_dev = equal_accuracy_mesh(spec, exact, net_rms)
    o_static, o_moving, faces = fcl_objects(model, shipped, moving_name)
    o_fine, o_moving_f, _ = fcl_objects(model, fine, moving_name)
    band = model.contact.band
    t_fcl, t_fine, t_ours, t_exact, found, truth, fp, ours_pen = [], [], [], [], 0, 0, 0, 0
    n_fcl_contacts, n_ours = [], []
    for R, p in poses:
        state = BodyPose(0.0, p, R, np.zeros(6))
        t, res = time_fcl(o_moving, o_static, R, p, repeat)
        t_fcl.append(t)
        t_fine.append(time_fcl(o_moving_f, o_fine, R, p, repeat)[0])
        best = np.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            idx, x_s = broadphase.candidates(body, shape, state, model.contact.broadphase_margin,
                                             detection.reach(body, model.contact, state, model.dt))
            d, g = net.query(x_s, band=band)
            best = min(best, time.perf_counter() - t0)
        t_ours.append(best)
        t0 = time.perf_counter()                 # the exact SDF on the same candidates
        idx_e, x_e = broadphase.candidates(body, shape, state, model.contact.broadphase_margin,
                                           detection.reach(body, model.contact, state, model.dt))
        exact.query(x_e)
        t_exact.append(time.perf_counter() - t0)
        n_fcl_contacts.append(len(res.contacts))
        n_ours.append(int((d < band).sum()))
        # agreement with the shipped-mesh FCL run, on the moving part's nodes (mesh vertices)
        tri = np.array([c.b1 for c in res.contacts], dtype=np.int64)
        fcl_nodes = np.unique(faces[tri].ravel()) if tri.size else np.zeros(0, np.int64)
        if fcl_nodes.size:
            xs = (body.nodes_b[fcl_nodes] @ R.T + p - shape.p_ws) @ shape.R_ws
            inside = fcl_nodes[exact.query(xs)[0] < 0.0]
            truth += inside.size
            ours_contact = set(idx[d < band].tolist())
            found += sum(1 for i in inside.tolist() if i in ours_contact)
        pen = d < 0.0
        if pen.any():
            ours_pen += int(pen.sum())
            fp += int((exact.query(x_s[pen])[0] > FP_SLACK_M).sum())
    ms = lambda ts: np.array(ts) * 1e3  # noqa: E731
    return {"task": task, "poses": len(poses), "fcl": ms(t_fcl), "fcl_fine": ms(t_fine), "ours": ms(t_ours),
            "exact": ms(t_exact), "shipped": (shipped.n_faces, mesh_deviation(shipped, exact)),
            "fine": (fine.n_faces, fine_dev), "net_rms": net_rms,
            "recall": found / truth if truth else float("nan"), "truth_nodes": truth,
            "false_pos": fp / ours_pen if ours_pen else 0.0, "ours_pen": ours_pen,
            "fcl_contacts_max": int(max(n_fcl_contacts)), "ours_contacts_max": int(max(n_ours))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min-poses", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=1, help="time each pose this many times, keep the best")
    ap.add_argument("--tasks", nargs="+", default=["peg_in_hole", "bolting"])
    a = ap.parse_args(argv)
    rows = [run_task(t, a.min_poses, a.repeat) for t in a.tasks]
    import os
    print("\nContact detection per pose (ms), same poses, this machine (seed 000 Table I layout); "
          f"{os.cpu_count()} CPUs, BLAS threads: {os.environ.get('OPENBLAS_NUM_THREADS', 'default')}; "
          "FCL is single-threaded")
    print(f"{'task':12s} {'poses':>6s} | {'FCL avg':>8s} {'p99':>7s} {'max':>7s} | "
          f"{'ours avg':>8s} {'p99':>7s} {'max':>7s} | {'ratio':>6s}")

    def line(r, f, label):
        o = r["ours"]
        print(f"{r['task']:12s} {r['poses']:6d} | {f.mean():8.3f} {np.percentile(f, 99):7.3f} {f.max():7.3f} | "
              f"{o.mean():8.3f} {np.percentile(o, 99):7.3f} {o.max():7.3f} | {f.mean() / o.mean():5.1f}x  {label}")
    for r in rows:
        n, (dmax, drms) = r["shipped"]
        line(r, r["fcl"], f"FCL on the shipped static mesh: {n} triangles, {drms * 1e6:.1f} um RMS / "
                          f"{dmax * 1e6:.0f} um max from the surface")
        n, (dmax, drms) = r["fine"]
        line(r, r["fcl_fine"], f"FCL at equal accuracy: {n} triangles, {drms * 1e6:.1f} um RMS / "
                               f"{dmax * 1e6:.0f} um max (network: {r['net_rms'] * 1e6:.1f} um RMS)")
    print("  (the exact SDF on the same candidates, for reference: " + ", ".join(
        f"{r['task']} avg {r['exact'].mean():.3f} / max {r['exact'].max():.3f} ms" for r in rows) + ")")
    print("  (median: " + ", ".join(f"{r['task']} FCL {np.median(r['fcl']):.3f} / equal-accuracy "
                                     f"FCL {np.median(r['fcl_fine']):.3f} / ours "
                                     f"{np.median(r['ours']):.3f} ms" for r in rows) + ")")
    print("\nAgreement of the contact sets (FCL on the shipped meshes)")
    for r in rows:
        print(f"  {r['task']:12s} FCL-penetrating nodes we report: {100 * r['recall']:6.2f} % of "
              f"{r['truth_nodes']}; our penetrating nodes the exact SDF puts > 10 um outside: "
              f"{100 * r['false_pos']:5.2f} % of {r['ours_pen']}; most contacts in one pose: FCL "
              f"{r['fcl_contacts_max']} triangle pairs, ours {r['ours_contacts_max']} nodes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
