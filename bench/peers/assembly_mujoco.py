"""MuJoCo on the project's bolting, peg-in-hole and docking (issue 28; ``bench/peers/compare.py``).

    python -c "from bench.peers.assembly_mujoco import run; print(run('peg_in_hole', 0.002).t[-1])"

The task as ``bench.peers.assembly`` sets it for every engine: the part meshes of
``assets/parts`` (docking's from ``geometry.docking_mesh``), tightsim's mass, centre of mass and
inertia (``fullinertia``, body frame at the centre of mass, axes the part's), the config's
friction coefficient, no gravity, the waypoints, and tightsim's drive as an applied wrench
(``xfrc_applied``) each step.

What MuJoCo can express, and what is chosen:
  * geometry.  A mesh geom collides as its convex hull -- no thread, no bore.  MuJoCo 3.3.5 and
    later compute a signed distance field of a mesh natively (``mjsMesh.needsdf``: a sparse
    octree to ``octree_maxdepth`` levels) and collide ``sdf`` geoms by gradient descent on the
    two fields (``sdf_initpoints`` starts, ``sdf_iterations`` steps).  Chosen: every static part
    (bolt, holed cylinder, hole block) and the non-convex moving part (the nut) as mesh SDFs at
    the task's ``OCTREE_DEPTH``; the peg, which is convex, as its mesh (its hull is exact)
    against the hole's SDF; docking's plate as MuJoCo's own box and four capsules (exact primitives), as the
    issue asks, against the block's SDF.  The octree is the expensive part to build (bolting,
    depth 9: 132 s and a 1.9 GB model here), so the compiled model is cached
    (``cached_model``: MuJoCo's binary model file under $XDG_CACHE_HOME/tightsim/peers, keyed by
    a digest of the meshes, the parameters and the MuJoCo version);
  * contact.  A soft constraint with reference time constant and damping ratio (``solref``)
    and impedance (``solimp``).  Chosen: solref = (2 dt, 1) -- critically damped at the stiffest
    time constant MuJoCo accepts at a step dt (it raises smaller ones to 2 dt) -- and MuJoCo's
    default solimp; condim 3 (sliding friction, the config's mu; no torsional or rolling
    friction: tightsim has none), elliptic friction cones, the Newton solver, the implicitfast
    integrator.  MuJoCo has no exact Coulomb cone or hard non-penetration: the contact is a
    spring with the time constant above, so its penetration is the constraint's softness;
  * what it cannot: a contact from a mesh vertex against an exact distance (tightsim's
    node-versus-SDF), and a hard constraint.
"""
from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import numpy as np

from bench.peers.assembly import Setup, Trajectory, run_loop

# octree levels of each task's mesh SDFs.  Bolting 9: cells of 0.2 mm on the bolt's 110 mm, the
# thread's radial play (the setting; the model file is 1.9 GB).  Peg and docking 8: every
# step of the sweep succeeds at 8 as at 9, the penetration within 0.07 mm (peg at 10 ms: 0.45 mm at
# 9, 0.39 at 8; at 2 ms 0.27 at both), at a fraction of the build time and file (0.2-0.3 GB
# instead of 0.7-1 GB).
OCTREE_DEPTH = {"bolting": 9, "peg_in_hole": 8, "docking": 8}
SDF_INITPOINTS = 40       # MuJoCo's default starts of the SDF-SDF gradient descent
SDF_ITERATIONS = 10       # and its default iterations
DAMPRATIO = 1.0           # solref's damping ratio: critically damped
SOLREF_STEPS = 2.0        # solref's time constant in steps: MuJoCo's smallest (refsafe raises less)


def cache_dir() -> Path:
    """$XDG_CACHE_HOME (or ~/.cache)/tightsim/peers/mujoco (as ``sim_core.paths``' numba cache)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tightsim" / "peers" / "mujoco"


def _spec(setup: Setup):
    """The MjSpec of a task (time step set later: the cached model serves every step)."""
    import mujoco
    meshes = setup.meshes()
    spec = mujoco.MjSpec()
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    opt = spec.option
    opt.gravity = [0.0, 0.0, 0.0]
    opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    opt.sdf_initpoints, opt.sdf_iterations = SDF_INITPOINTS, SDF_ITERATIONS
    friction = [setup.friction, 0.0, 0.0]

    def add_mesh(name, mesh, offset, sdf):
        m = spec.add_mesh(name=name)
        m.uservert = (mesh.vertices - offset).ravel().tolist()
        m.userface = mesh.faces.ravel().tolist()
        if sdf:
            m.needsdf = 1
            m.octree_maxdepth = OCTREE_DEPTH[setup.task]
        return m

    add_mesh("static", meshes["static"], np.zeros(3), True)
    spec.worldbody.add_geom(name="static", type=mujoco.mjtGeom.mjGEOM_SDF, meshname="static",
                            friction=friction, condim=3)
    J = setup.inertia
    body = spec.worldbody.add_body(name="part", pos=setup.start.p_w[0].tolist(),
                                   mass=setup.mass, ipos=[0.0, 0.0, 0.0],
                                   fullinertia=[J[0, 0], J[1, 1], J[2, 2], J[0, 1], J[0, 2], J[1, 2]],
                                   explicitinertial=True)
    body.add_freejoint()
    com = setup.com
    if setup.task == "docking":
        plate = setup.model.shapes[1].plate
        a, b, t = plate.plate
        body.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[a / 2, b / 2, t / 2],
                      pos=(np.array([0.0, 0.0, t / 2]) - com).tolist(), friction=friction, condim=3)
        for x, y in plate.pins_xy:            # capsule from the tip centre up into the plate
            body.add_geom(type=mujoco.mjtGeom.mjGEOM_CAPSULE, size=[plate.radius, 0.0, 0.0],
                          fromto=[x - com[0], y - com[1], -plate.length - com[2],
                                  x - com[0], y - com[1], t / 2 - com[2]], friction=friction, condim=3)
    else:
        sdf = setup.task == "bolting"         # the nut is not convex; the peg is
        add_mesh("moving", meshes["moving"], com, sdf)
        body.add_geom(type=mujoco.mjtGeom.mjGEOM_SDF if sdf else mujoco.mjtGeom.mjGEOM_MESH,
                      meshname="moving", friction=friction, condim=3)
    return spec, meshes


def model_key(setup: Setup) -> str:
    """A digest of what the compiled model depends on: the meshes, the parameters, MuJoCo."""
    import mujoco
    h = hashlib.sha256()
    for mesh in setup.meshes().values():
        h.update(np.ascontiguousarray(mesh.vertices, np.float64).tobytes())
        h.update(np.ascontiguousarray(mesh.faces, np.int64).tobytes())
    h.update(repr((setup.task, mujoco.__version__, OCTREE_DEPTH[setup.task], SDF_INITPOINTS, SDF_ITERATIONS,
                   setup.friction, setup.mass, setup.com.tolist(), setup.inertia.tolist(),
                   setup.start.p_w[0].tolist())).encode())
    return h.hexdigest()[:16]


def _say(line: str) -> None:
    print(line, flush=True)


def cached_model(setup: Setup, log=_say):
    """The task's compiled MjModel, from the cache when there (``cache_dir``)."""
    import mujoco
    path = cache_dir() / f"{setup.task}-{model_key(setup)}.mjb"
    if path.exists():
        try:
            return mujoco.MjModel.from_binary_path(str(path))
        except Exception:                   # a truncated or foreign file: build afresh
            path.unlink(missing_ok=True)
    spec, _ = _spec(setup)
    t0 = time.perf_counter()
    model = spec.compile()
    log(f"mujoco: {setup.task}: compiled the mesh SDFs (octree depth {OCTREE_DEPTH[setup.task]}) in "
        f"{time.perf_counter() - t0:.0f} s; cached at {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in path.parent.glob(f"{setup.task}-*.mjb"):     # one model a task: the files are large
        old.unlink(missing_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    mujoco.mj_saveModel(model, str(tmp), None)
    tmp.replace(path)
    return model


def run(task: str, dt: float, duration: float | None = None, setup: Setup | None = None,
        model=None) -> Trajectory:
    """Run the task in MuJoCo at the fixed step dt (s) for `duration` (default the config's)."""
    import mujoco
    setup = setup or Setup(task)
    m = model if model is not None else cached_model(setup)
    m.opt.timestep = dt
    m.geom_solref[:] = (SOLREF_STEPS * dt, DAMPRATIO)
    d = mujoco.MjData(m)
    p0, R0 = setup.start_pose()
    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, R0.ravel())
    d.qpos[:3], d.qpos[3:7] = p0, q
    d.qvel[:] = 0.0
    mujoco.mj_forward(m, d)
    bid = m.body("part").id

    def step(t):
        p, R = d.xpos[bid].copy(), d.xmat[bid].reshape(3, 3).copy()
        v_w, w_w = d.qvel[:3].copy(), R @ d.qvel[3:6]
        f, tau = setup.drive.wrench(dt, p, R, v_w, w_w, *setup.inputs(t))
        d.xfrc_applied[bid, :3], d.xfrc_applied[bid, 3:] = f, tau
        mujoco.mj_step(m, d)
        return d.xpos[bid], d.xmat[bid].reshape(3, 3)

    return run_loop(setup, dt, setup.duration if duration is None else duration, step, time.perf_counter)
