"""Collision (stages 1-2): per contact pair, the broad phase and the detector of the pair's
shape kinds, from the table ``DETECTORS``.

A detector takes (body, shape, contact parameters, the body's pose, T, the step's stage timer) and returns a
``Detected``: the contact nodes (points, normals, signed distances, the body they push) and the
signed distances of every candidate (for the penetration figures).  Today's kind:

* ``nodes_sdf`` -- a moving body's contact nodes (its mesh vertices) against a static shape's
  signed distance (exact or neural): the broad phase keeps the nodes inside the shape's
  bounding cylinder grown by the speculative reach (``broadphase``), detection queries the SDF
  (``detection.detect``), and a closing gap near an edge is linearized where the node will be
  (``detection.predict``).

* ``pins`` -- a plate's capsule pins against a block's capsule holes: seed 004's analytic
  contact manifold (``collision.pins``), exact, no mesh; its keys (pin, case) are the
  contacts' ``idx`` (the warm start follows them).

Next kinds add rows: spheres against surfaces, cable links against cylinders.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim_core.collision import broadphase, detection, pins
from sim_core.types import BodyPose, ContactParams, Contacts, RigidBody, StaticShape


@dataclass(frozen=True)
class Detected:
    nodes: Contacts                # the contacts found (d < band), on the pair's body
    d_all: np.ndarray              # (k,) m, signed distance of every candidate
    n_candidates: int              # candidates after the broad phase


def nodes_sdf(body: RigidBody, shape: StaticShape, params: ContactParams, pose: BodyPose, dt: float,
              laps=None) -> Detected:
    reach = detection.reach(body, params, pose, dt)
    idx, x_s = broadphase.candidates(body, shape, pose, params.broadphase_margin, reach)
    if laps is not None:
        laps.lap("broadphase")
    nodes, d_all = detection.detect(shape, x_s, reach, idx)
    nodes = detection.predict(body, shape, params, pose, dt, nodes)
    return Detected(nodes, d_all, int(idx.shape[0]))


def pins_analytic(body: RigidBody, shape: StaticShape, params: ContactParams, pose: BodyPose, dt: float,
                  laps=None) -> Detected:
    """Every pin against its nearest hole; ``d_all`` are the contacts' own (exact) gaps."""
    plate, block = body.pins, shape.block
    seg = body.pin_segments_b
    reach = detection.reach(body, params, pose, dt)
    if laps is not None:
        laps.lap("broadphase")
    cap = pins.MAX_PER_PIN * seg.shape[0]
    x, n = np.empty((cap, 3)), np.empty((cap, 3))
    d, key = np.empty(cap), np.empty(cap, np.int64)
    half = block.half
    m = pins.detect_pins(seg, plate.radius, pose.R_wb, pose.p_w, shape.R_ws, shape.p_ws, block.holes_xy,
                         block.radius, block.depth, half[0], half[1], reach, x, n, d, key)
    nodes = Contacts(x[:m], n[:m], d[:m], key[:m])
    return Detected(nodes, d[:m].copy(), int(seg.shape[0]))


DETECTORS = {"nodes_sdf": nodes_sdf, "pins": pins_analytic}
