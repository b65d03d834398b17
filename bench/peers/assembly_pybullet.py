"""PyBullet on the project's bolting, peg-in-hole and docking (issue 28; ``bench/peers/compare.py``).

    python -c "from bench.peers.assembly_pybullet import run; print(run('peg_in_hole', 0.002).t[-1])"

The task as ``bench.peers.assembly`` sets it for every engine: the part meshes of
``assets/parts`` (docking's from ``geometry.docking_mesh``), tightsim's mass and inertia (its
principal axes as the inertial frame), the config's friction coefficient on both parts, no
gravity, the waypoints, and tightsim's drive as an external force and torque at the centre of
mass each step.

What Bullet can express, and what is chosen:
  * geometry.  A moving body collides only through convex shapes (a compound of them at most);
    a concave triangle mesh (``GEOM_FORCE_CONCAVE_TRIMESH``) only as a static body.  Chosen:
    every static part (bolt, holed cylinder, hole block) as its concave mesh; the nut as the
    project's helical convex decomposition (``bench.peers.nut_pieces``: 448 pieces, the thread
    groove kept, at most 45 um of extra play; PyBullet's own V-HACD fills the groove and most
    of the bore at any setting tried: docs/peers.md), loaded as one multi-object OBJ -- which
    PyBullet turns into a compound of convex hulls -- written under
    $XDG_CACHE_HOME/tightsim/peers/pybullet; the peg as its mesh's
    convex hull (exact: the peg is convex); docking's plate as a box and four capsules;
  * contact.  Rigid velocity-level constraints solved by sequential impulses (projected
    Gauss-Seidel, ``numSolverIterations`` 50, Bullet's default), penetration removed by
    Baumgarte (contactERP 0.2, default); contact points made within the contact-breaking
    threshold (default 2 cm) and the shapes' collision margins.  Chosen: Bullet's defaults but
    the collision margin, ``COLLISION_MARGIN`` = 0.05 mm on both parts: with Bullet's own the
    nut never enters the thread (measured at 2 and 10 ms: it rests on the bolt's end), and at
    2 ms the advance per turn was 4.97 mm at 0, 4.99 at 0.05 mm, 4.38 at 0.1 mm, and the nut
    never engaged at 0.3 mm -- the margin pads every convex piece, and the thread's radial play
    is 0.2 mm.  Friction mu on both parts as sqrt(mu) each (Bullet multiplies the two), no
    rolling or spinning friction, no damping.  Its pyramid friction is Coulomb's cone only
    along the two tangent axes;
  * what it cannot: a concave moving part, a node-versus-exact-distance contact.
"""
from __future__ import annotations

import hashlib
import math
import os
import time
from pathlib import Path

import numpy as np

from bench.peers.assembly import Setup, Trajectory, run_loop

SOLVER_ITERATIONS = 50        # Bullet's default numSolverIterations
COLLISION_MARGIN = 5e-5       # m on both parts: the best of 0, 0.05, 0.1, 0.3 mm and the default (docstring)


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tightsim" / "peers" / "pybullet"


def obj_text(pieces: list[np.ndarray]) -> str:
    """A multi-object OBJ of convex pieces (each its hull's triangles, outward)."""
    from scipy.spatial import ConvexHull
    lines, base = [], 1
    for i, P in enumerate(pieces):
        hull = ConvexHull(P)
        lines.append(f"o piece{i}")
        lines += [f"v {x:.9g} {y:.9g} {z:.9g}" for x, y, z in P]
        for (a, b, c), eq in zip(hull.simplices, hull.equations):
            if np.dot(np.cross(P[b] - P[a], P[c] - P[a]), eq[:3]) < 0:
                b, c = c, b
            lines.append(f"f {a + base} {b + base} {c + base}")
        base += len(P)
    return "\n".join(lines) + "\n"


def nut_obj(setup: Setup) -> Path:
    """The nut's convex pieces as an OBJ in the cache (nut frame at its centre of mass)."""
    from bench.peers.nut_pieces import SECTORS, nut_pieces
    from sim_core.geometry import profiles
    spec = profiles.all_parts()[setup.cfg["parts"]["moving"]]
    key = hashlib.sha256(repr((spec, SECTORS, setup.com.tolist())).encode()).hexdigest()[:16]
    path = cache_dir() / f"nut-{key}.obj"
    if not path.exists():
        pieces = [P - setup.com for P in nut_pieces(spec)]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(obj_text(pieces))
        tmp.replace(path)
    return path


def _moving_shape(pb, setup: Setup, meshes: dict, c: int) -> int:
    com = setup.com
    if setup.task == "bolting":
        return pb.createCollisionShape(pb.GEOM_MESH, fileName=str(nut_obj(setup)), physicsClientId=c)
    if setup.task == "peg_in_hole":
        return pb.createCollisionShape(pb.GEOM_MESH, vertices=(meshes["moving"].vertices - com).tolist(),
                                       physicsClientId=c)
    plate = setup.model.shapes[1].plate
    a, b, t = plate.plate
    n = len(plate.pins_xy)
    cyl = plate.length + t / 2                                      # capsule's cylinder: tip centre to mid-plate
    types = [pb.GEOM_BOX] + [pb.GEOM_CAPSULE] * n
    pos = [[-com[0], -com[1], t / 2 - com[2]]]
    pos += [[x - com[0], y - com[1], -plate.length + cyl / 2 - com[2]] for x, y in plate.pins_xy]
    return pb.createCollisionShapeArray(shapeTypes=types, radii=[0.0] + [plate.radius] * n,
                                        halfExtents=[[a / 2, b / 2, t / 2]] + [[0.0, 0.0, 0.0]] * n,
                                        lengths=[0.0] + [cyl] * n, collisionFramePositions=pos,
                                        physicsClientId=c)


def run(task: str, dt: float, duration: float | None = None, setup: Setup | None = None) -> Trajectory:
    """Run the task in PyBullet at the fixed step dt (s) for `duration` (default the config's)."""
    import pybullet as pb
    setup = setup or Setup(task)
    meshes = setup.meshes()
    c = pb.connect(pb.DIRECT)
    try:
        pb.setGravity(0.0, 0.0, 0.0, physicsClientId=c)
        pb.setPhysicsEngineParameter(fixedTimeStep=dt, numSubSteps=0, numSolverIterations=SOLVER_ITERATIONS,
                                     physicsClientId=c)
        st = meshes["static"]
        static = pb.createMultiBody(0.0, pb.createCollisionShape(
            pb.GEOM_MESH, vertices=st.vertices.tolist(), indices=st.faces.ravel().tolist(),
            flags=pb.GEOM_FORCE_CONCAVE_TRIMESH, physicsClientId=c), physicsClientId=c)
        evals, Q = np.linalg.eigh(setup.inertia)                   # principal axes: the inertial frame
        if np.linalg.det(Q) < 0:
            Q[:, 0] = -Q[:, 0]
        q_in = _quat_xyzw(Q)
        p0, R0 = setup.start_pose()
        part = pb.createMultiBody(setup.mass, _moving_shape(pb, setup, meshes, c), basePosition=p0.tolist(),
                                  baseOrientation=_quat_xyzw(R0 @ Q), baseInertialFrameOrientation=q_in,
                                  physicsClientId=c)
        pb.changeDynamics(part, -1, localInertiaDiagonal=evals.tolist(), linearDamping=0.0, angularDamping=0.0,
                          physicsClientId=c)
        mu = math.sqrt(setup.friction)                              # Bullet's combined friction: the product
        for body in (static, part):
            pb.changeDynamics(body, -1, lateralFriction=mu, rollingFriction=0.0, spinningFriction=0.0,
                              physicsClientId=c)
            if COLLISION_MARGIN is not None:
                pb.changeDynamics(body, -1, collisionMargin=COLLISION_MARGIN, physicsClientId=c)

        def pose():
            p, q = pb.getBasePositionAndOrientation(part, physicsClientId=c)
            R = np.array(pb.getMatrixFromQuaternion(q)).reshape(3, 3) @ Q.T      # inertial frame -> part axes
            return np.array(p), R

        def step(t):
            p, R = pose()
            v, w = pb.getBaseVelocity(part, physicsClientId=c)
            f, tau = setup.drive.wrench(dt, p, R, np.array(v), np.array(w), *setup.inputs(t))
            pb.applyExternalForce(part, -1, f.tolist(), p.tolist(), pb.WORLD_FRAME, physicsClientId=c)
            pb.applyExternalTorque(part, -1, tau.tolist(), pb.WORLD_FRAME, physicsClientId=c)
            pb.stepSimulation(physicsClientId=c)
            return pose()

        return run_loop(setup, dt, setup.duration if duration is None else duration, step, time.perf_counter)
    finally:
        pb.disconnect(physicsClientId=c)


def _quat_xyzw(R: np.ndarray) -> list:
    from sim_core.math.so3 import matrix_to_quat
    w, x, y, z = matrix_to_quat(R)
    return [float(x), float(y), float(z), float(w)]
