"""N-space contact detection (stage 2): depth and normal of every candidate node.

A signed-distance shape's distance in its frame -- exact (``geometry.sdf``) or neural
(``neural_sdf``, config ``contact.detector``); the normal is its gradient, which points out
of the shape's material, i.e. the direction the contact force pushes the nodes' body.
Normals are needed, and the neural SDF computes them, only for nodes inside the band.  The
shape may be fixed to the world (the static parts) or on a moving body (a body-body pair:
``shapes.placed`` puts it in the world at the step's start, and ``predict`` moves both).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from sim_core.dynamics import pmi
from sim_core.shapes import SDF, Nodes, Shape
from sim_core.types import WORLD, BodyPose, ContactParams, Contacts

# m: the most overlap a predicted contact may start with.  A contact pressed with the loads of
# the scenarios and the law protocols sits 1-36 um deep (fidelity, max_pen); a node gliding
# along that wall towards it predicts about that much and must be let through.
PREDICTED_OVERLAP = 5e-5
# cosine of the turn of the normal, between the node and its predicted point, from which the
# prediction is taken: an edge lies between them.  On a smooth face the present linearization
# is as good and the step stays as it was (the bore's normal turns 4.6 deg under 2 mm of
# travel round it; a thread's corners and the chamfer's edges turn 30-45 deg).  Predicting on
# the nut's helical flanks too moved its run-down near the self-locking limit by 14 %.
EDGE_COS = math.cos(math.radians(10.0))
# steps of approach at the present velocity within which a gap counts as closing (predict)
CLOSING_STEPS = 2.0


def reach(a: Shape, params: ContactParams, pose: BodyPose, dt: float, b: Shape | None = None,
          pose_b: BodyPose | None = None) -> float:
    """Speculative contact distance (m): the configured band plus how far any point of shape
    `a` (its body at `pose`) can move in one step -- and, when the other shape `b` is on a
    moving body (at `pose_b`), how far any point of `b` can, towards it -- so a fast approach
    cannot jump from "no contact" to a deep penetration.  A point's speed is bounded by
    |v| + |w| r with r the shape's ``extent``."""
    v, w = pose.V[:3], pose.V[3:]
    out = params.band + dt * (float(np.linalg.norm(v)) + float(np.linalg.norm(w)) * a.extent())
    if b is not None and b.body != WORLD:
        vb, wb = pose_b.V[:3], pose_b.V[3:]
        out += dt * (float(np.linalg.norm(vb)) + float(np.linalg.norm(wb)) * b.extent())
    return out


def detect(shape: SDF, x_s: np.ndarray, band: float,
           idx: np.ndarray | None = None) -> tuple[Contacts, np.ndarray]:
    """Signed distance of candidate nodes; returns (contacts with d < band, all distances).

    x_s: (n,3) candidate node positions in the shape's frame (from the broad phase); idx: their
    rows in the body's nodes_b, carried on the contacts (the learned clustering's neighbour
    table).
    """
    if x_s.shape[0] == 0:
        return Contacts.empty(), np.zeros(0)
    d, g_s = shape.sdf.query(x_s, band)
    sel = d < band
    x_w = x_s[sel] @ shape.R_ws.T + shape.p_ws
    n_w = g_s[sel] @ shape.R_ws.T
    return Contacts(x_w, n_w, d[sel], None if idx is None else idx[sel]), d


def predict(body: Nodes, shape: SDF, params: ContactParams, pose: BodyPose, dt: float,
            nodes: Contacts, pose_b: BodyPose | None = None) -> Contacts:
    """Speculative contacts linearized at the end of the step (``contact.speculative``).

    The solver keeps a gap d >= 0 open to first order, d + T n.(u_k + u_k+1)/2 >= 0 with n the
    normal where the node is now (``solver_pgs.normal_targets``).  Near a convex edge that plane
    reaches past the edge: a node sliding down the bore wall towards the entry chamfer sees the
    chamfer's plane under it and may only close the gap to the edge, so it stops there (a ghost
    contact; measured, the peg could not slide down the bore at 1.3 mu N).  Linearized instead
    about x_p, where the node is after a step at the present twist (exact rigid motion), with
    d_p and n_p the distance and normal there,
        d(x_k+1) ~ d_p + n_p.(x_k+1 - x_p) = d_p + T n_p.(u_k+1 - u_k)/2      (u = node velocity),
    which is the solver's form with normal n_p and gap  d_eff = d_p - T n_p.u_k.  Only nodes
    that would close their gap within ``CLOSING_STEPS`` steps at the present velocity,
    d + 2 T n.u_k < 0, are predicted: the others' constraint binds only if their approach
    triples within the step (a node at rest starts moving under the present one and is
    predicted from the next step), and a part at rest costs no second query.
    On a plane both give the same constraint (d_eff = d, the distance to the face's plane); a
    prediction inside the material near a second face gives the distance to that face's
    plane.  The prediction is taken where the normal turns by less than 90 deg (not through
    to the far side of a thin wall) and d_eff >= -``PREDICTED_OVERLAP``: a node sliding down a
    wall it is pressed into by a few microns predicts that overlap, and is held touching
    (d_eff raised to 0: a node not yet in contact is never pushed out); a deeper d_eff would
    stop a node that is not touching, and it keeps its present depth and normal.  Penetrating
    nodes (d < 0) are unchanged.

    `body` is the node set (its body at `pose`); `shape` the signed distance, fixed to the world
    or on a moving body at `pose_b` (a body-body pair: ``_predict_moving``)."""
    if params.speculative != "predicted" or nodes.idx is None or len(nodes) == 0:
        return nodes
    gap = np.flatnonzero(nodes.d > 0.0)
    if gap.size == 0:
        return nodes
    if shape.body != WORLD:
        return _predict_moving(body, shape, dt, nodes, gap, pose, pose_b)
    r_b = body.nodes_b[nodes.idx[gap]]
    v, w = pose.V[:3], pose.V[3:]
    T = dt
    u_k = v + np.cross(w, r_b) @ pose.R_wb.T                        # w x r in body axes, to world
    closing = nodes.d[gap] + CLOSING_STEPS * T * np.einsum("ij,ij->i", nodes.n_w[gap], u_k) < 0.0
    if not closing.any():
        return nodes
    rows, r_b, u_k = gap[closing], r_b[closing], u_k[closing]
    p_p, R_p = pmi.advance(pose.p_w, pose.R_wb, pose.V, pose.V, T)   # the pose after a step at V
    x_p = p_p + r_b @ R_p.T
    d_p, g_s = shape.sdf.query((x_p - shape.p_ws) @ shape.R_ws, None)
    n_p = g_s @ shape.R_ws.T
    return _take_predicted(nodes, rows, n_p, d_p - T * np.einsum("ij,ij->i", n_p, u_k))


def _predict_moving(body: Nodes, shape: SDF, dt: float, nodes: Contacts, gap: np.ndarray, pose: BodyPose,
                    pose_b: BodyPose) -> Contacts:
    """``predict`` against a signed distance on a moving body B.  The gap's rate is now the
    normal's share of the velocity of the node relative to B's material point where the node
    is, u_rel = u_node - u_B(x) (the solver's body-body row, ``solver_pgs``); both bodies are
    advanced a step at their present twists (exact rigid motion), the node's predicted point
    queried in B's predicted frame, and the same linearization gives d_eff = d_p - T n_p.u_rel,k.
    (First order: the turn of B's normal within the step is the prediction's own.)"""
    T = dt
    r_b = body.nodes_b[nodes.idx[gap]]
    x = nodes.x_w[gap]
    u_a = pose.V[:3] + np.cross(pose.V[3:], r_b) @ pose.R_wb.T
    r_B = (x - pose_b.p_w) @ pose_b.R_wb                               # from B's COM, B's axes
    u_b = pose_b.V[:3] + np.cross(pose_b.V[3:], r_B) @ pose_b.R_wb.T
    u_k = u_a - u_b
    closing = nodes.d[gap] + CLOSING_STEPS * T * np.einsum("ij,ij->i", nodes.n_w[gap], u_k) < 0.0
    if not closing.any():
        return nodes
    rows, r_b, u_k = gap[closing], r_b[closing], u_k[closing]
    p_p, R_p = pmi.advance(pose.p_w, pose.R_wb, pose.V, pose.V, T)
    pB, RB = pmi.advance(pose_b.p_w, pose_b.R_wb, pose_b.V, pose_b.V, T)
    R_ws, p_ws = RB @ shape.R_bs, pB + RB @ shape.p_bs
    x_p = p_p + r_b @ R_p.T
    d_p, g_s = shape.sdf.query((x_p - p_ws) @ R_ws, None)
    n_p = g_s @ R_ws.T
    return _take_predicted(nodes, rows, n_p, d_p - T * np.einsum("ij,ij->i", n_p, u_k))


def _take_predicted(nodes: Contacts, rows: np.ndarray, n_p: np.ndarray, d_eff: np.ndarray) -> Contacts:
    """The closing nodes `rows` whose predicted normal n_p turned by less than the edge angle
    (and not past 90 deg) take it, with the linearized gap d_eff (touching at most: no push-out)."""
    turn = np.einsum("ij,ij->i", n_p, nodes.n_w[rows])
    ok = (turn > 0.0) & (turn < EDGE_COS) & (d_eff >= -PREDICTED_OVERLAP) & np.isfinite(d_eff)
    if not ok.any():
        return nodes
    rows = rows[ok]
    n_w, d = nodes.n_w.copy(), nodes.d.copy()
    n_w[rows], d[rows] = n_p[ok], np.maximum(d_eff[ok], 0.0)
    return replace(nodes, n_w=n_w, d=d)
