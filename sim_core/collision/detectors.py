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

Next kinds (the issues after this one) add rows: capsule pins against capsule holes (seed 004),
spheres against surfaces, cable links against cylinders.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim_core.collision import broadphase, detection
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


DETECTORS = {"nodes_sdf": nodes_sdf}
