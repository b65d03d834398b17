"""Collision (stages 1-2): per contact pair, the broad phase and the detector of the pair's two
shape kinds, from the table ``DETECTORS``.

A detector takes (shape a, shape b, contact parameters, the pose of a's body, the pose of b's
body, T, the step's stage timer) -- a world shape's "body" is the world, at rest -- and returns
a ``Detected``: the contacts (points, normals pushing a's body, signed distances, keys) and the
signed distances of every candidate (for the penetration figures).  ``detect`` looks a pair up
by its kinds in either order: given as (b, a) it runs the (a, b) detector and flips the
normals.  The kinds (``shapes``):

* ``("nodes", "sdf")`` -- a body's contact nodes (its mesh vertices) against a signed distance
  (exact or neural), fixed to the world or on another moving body: the broad phase keeps the
  nodes inside the shape's bounding cylinder grown by the speculative reach (``broadphase``),
  detection queries the SDF (``detection.detect``), and a closing gap near an edge is
  linearized where the node will be (``detection.predict``).  The only detector whose
  contacts are clustered (``clustering``); the others' are a manifold already.

* ``("pins", "holes")`` -- a plate's capsule pins against a block's capsule holes: seed 004's
  analytic contact manifold (``collision.pins``), exact, no mesh; its keys (pin, case) are
  the contacts' ``idx`` (the warm start follows them).

* ``("sphere", "plane")``, ``("sphere", "sphere")``, ``("sphere", "capsule")``,
  ``("sphere", "cylinder")``, ``("capsule", "plane")``, ``("capsule", "capsule")``,
  ``("capsule", "cylinder")`` -- the primitives' closed forms (``collision.analytic``, which
  says exactly what each detects).

* ``("sphere", "workpiece")`` -- a ball (the grinder's tip) against seed 001's grinding
  workpiece, the union of two cylinders (``geometry.grinding``): the ball against each
  cylinder by ``analytic.sphere_cylinder``'s closed form, one contact each (key 0: the bar,
  key 1: the bead), so the crease where the bead meets the bar holds the ball by both.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sim_core.collision import analytic, broadphase, detection, pins
from sim_core.shapes import (
    SDF,
    Capsule,
    Cylinder,
    Holes,
    Nodes,
    Pins,
    Plane,
    Shape,
    Sphere,
    Workpiece,
    frame_w,
    placed,
)
from sim_core.types import BodyPose, ContactParams, Contacts


@dataclass(frozen=True)
class Detected:
    nodes: Contacts                # the contacts found (d < band), normals pushing a's body
    d_all: np.ndarray              # (k,) m, signed distance of every candidate
    n_candidates: int              # candidates after the broad phase
    manifold: bool = False         # the contacts are a manifold already (no clustering)


def nodes_sdf(a: Nodes, b: SDF, params: ContactParams, pose: BodyPose, pose_b: BodyPose, dt: float,
              laps=None) -> Detected:
    reach = detection.reach(a, params, pose, dt, b, pose_b)
    shape = placed(b, pose_b)
    idx, x_s = broadphase.candidates(a, shape, pose, params.broadphase_margin, reach)
    if laps is not None:
        laps.lap("broadphase")
    nodes, d_all = detection.detect(shape, x_s, reach, idx)
    nodes = detection.predict(a, b, params, pose, dt, nodes, pose_b)
    return Detected(nodes, d_all, int(idx.shape[0]))


def pins_holes(a: Pins, b: Holes, params: ContactParams, pose: BodyPose, pose_b: BodyPose, dt: float,
               laps=None) -> Detected:
    """Every pin against its nearest hole; ``d_all`` are the contacts' own (exact) gaps."""
    plate, block = a.plate, b.block
    seg = a.segments_b
    reach = detection.reach(a, params, pose, dt, b, pose_b)
    R_ws, p_ws = frame_w(b, pose_b)
    if laps is not None:
        laps.lap("broadphase")
    cap = pins.MAX_PER_PIN * seg.shape[0]
    x, n = np.empty((cap, 3)), np.empty((cap, 3))
    d, key = np.empty(cap), np.empty(cap, np.int64)
    half = block.half
    m = pins.detect_pins(seg, plate.radius, pose.R_wb, pose.p_w, R_ws, p_ws, block.holes_xy,
                         block.radius, block.depth, half[0], half[1], reach, x, n, d, key)
    nodes = Contacts(x[:m], n[:m], d[:m], key[:m])
    return Detected(nodes, d[:m].copy(), int(seg.shape[0]), True)


# --- the primitives (collision.analytic) ------------------------------------------------------
def _ends(s: Capsule, at: BodyPose) -> tuple[np.ndarray, np.ndarray]:
    """A capsule's segment ends (3,) m, world."""
    R, p = frame_w(s, at)
    h = s.half_length * R[:, 2]
    return p - h, p + h


def _run(kernel, args, a: Shape, b: Shape, params, pose, pose_b, dt, laps) -> Detected:
    reach = detection.reach(a, params, pose, dt, b, pose_b)
    if laps is not None:
        laps.lap("broadphase")
    k = analytic.MAX_CONTACTS
    x, n, d, key = np.empty((k, 3)), np.empty((k, 3)), np.empty(k), np.empty(k, np.int64)
    m = kernel(*args, reach, x, n, d, key)
    return Detected(Contacts(x[:m], n[:m], d[:m], key[:m]), d[:m].copy(), 1, True)


def sphere_plane(a: Sphere, b: Plane, params, pose, pose_b, dt, laps=None) -> Detected:
    c = frame_w(a, pose)[1]
    R, o = frame_w(b, pose_b)
    return _run(analytic.sphere_plane, (c, a.radius, o, np.ascontiguousarray(R[:, 2])), a, b, params, pose, pose_b,
                dt, laps)


def sphere_sphere(a: Sphere, b: Sphere, params, pose, pose_b, dt, laps=None) -> Detected:
    return _run(analytic.sphere_sphere, (frame_w(a, pose)[1], a.radius, frame_w(b, pose_b)[1], b.radius),
                a, b, params, pose, pose_b, dt, laps)


def sphere_capsule(a: Sphere, b: Capsule, params, pose, pose_b, dt, laps=None) -> Detected:
    return _run(analytic.sphere_capsule, (frame_w(a, pose)[1], a.radius, *_ends(b, pose_b), b.radius),
                a, b, params, pose, pose_b, dt, laps)


def sphere_cylinder(a: Sphere, b: Cylinder, params, pose, pose_b, dt, laps=None) -> Detected:
    R, p = frame_w(b, pose_b)
    return _run(analytic.sphere_cylinder, (frame_w(a, pose)[1], a.radius, R, p, b.radius, b.half_length),
                a, b, params, pose, pose_b, dt, laps)


def capsule_plane(a: Capsule, b: Plane, params, pose, pose_b, dt, laps=None) -> Detected:
    R, o = frame_w(b, pose_b)
    return _run(analytic.capsule_plane, (*_ends(a, pose), a.radius, o, np.ascontiguousarray(R[:, 2])),
                a, b, params, pose, pose_b, dt, laps)


def capsule_capsule(a: Capsule, b: Capsule, params, pose, pose_b, dt, laps=None) -> Detected:
    return _run(analytic.capsule_capsule, (*_ends(a, pose), a.radius, *_ends(b, pose_b), b.radius),
                a, b, params, pose, pose_b, dt, laps)


def capsule_cylinder(a: Capsule, b: Cylinder, params, pose, pose_b, dt, laps=None) -> Detected:
    R, p = frame_w(b, pose_b)
    return _run(analytic.capsule_cylinder, (*_ends(a, pose), a.radius, np.ascontiguousarray(R), p, b.radius,
                                            b.half_length), a, b, params, pose, pose_b, dt, laps)


# the cylinder frame (its z) of a workpiece cylinder (along the workpiece's x): Ry(+90 deg)
_X_TO_Z = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])


def sphere_workpiece(a: Sphere, b: Workpiece, params, pose, pose_b, dt, laps=None) -> Detected:
    """The ball against the bar (key 0) and against the bead (key 1), each exact."""
    c = frame_w(a, pose)[1]
    R, p = frame_w(b, pose_b)
    reach = detection.reach(a, params, pose, dt, b, pose_b)
    if laps is not None:
        laps.lap("broadphase")
    Rc = np.ascontiguousarray(R @ _X_TO_Z)
    x, n, d, key = np.empty((2, 3)), np.empty((2, 3)), np.empty(2), np.empty(2, np.int64)
    xk, nk, dk, kk = np.empty((1, 3)), np.empty((1, 3)), np.empty(1), np.empty(1, np.int64)
    m = 0
    half = 0.5 * b.workpiece.length
    for k, (zc, r) in enumerate(b.workpiece.cylinders()):
        if analytic.sphere_cylinder(c, a.radius, Rc, p + zc * R[:, 2], r, half, reach, xk, nk, dk, kk):
            x[m], n[m], d[m], key[m] = xk[0], nk[0], dk[0], k
            m += 1
    return Detected(Contacts(x[:m], n[:m], d[:m], key[:m]), d[:m].copy(), 1, True)


DETECTORS = {
    ("nodes", "sdf"): nodes_sdf,
    ("pins", "holes"): pins_holes,
    ("sphere", "plane"): sphere_plane,
    ("sphere", "sphere"): sphere_sphere,
    ("sphere", "capsule"): sphere_capsule,
    ("sphere", "cylinder"): sphere_cylinder,
    ("capsule", "plane"): capsule_plane,
    ("capsule", "capsule"): capsule_capsule,
    ("capsule", "cylinder"): capsule_cylinder,
    ("sphere", "workpiece"): sphere_workpiece,
}


def detector_of(a: Shape, b: Shape):
    """(detector, swapped): the detector of the kinds (a, b), or of (b, a) with swapped = True;
    a KeyError naming the kinds when there is none."""
    f = DETECTORS.get((a.kind, b.kind))
    if f is not None:
        return f, False
    f = DETECTORS.get((b.kind, a.kind))
    if f is None:
        have = ", ".join(f"{k[0]}-{k[1]}" for k in DETECTORS)
        raise KeyError(f"no detector for shapes {a.name!r} ({a.kind}) and {b.name!r} ({b.kind}); "
                       f"collision.DETECTORS has: {have}")
    return f, True


def detect(a: Shape, b: Shape, params: ContactParams, pose: BodyPose, pose_b: BodyPose, dt: float,
           laps=None) -> Detected:
    """The contacts of shapes a and b (their bodies at `pose`, `pose_b`), normals pushing a's body."""
    f, swapped = detector_of(a, b)
    if not swapped:
        return f(a, b, params, pose, pose_b, dt, laps)
    det = f(b, a, params, pose_b, pose, dt, laps)
    return replace(det, nodes=replace(det.nodes, n_w=-det.nodes.n_w))
