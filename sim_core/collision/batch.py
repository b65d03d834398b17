"""Many primitive pairs in one call (stage 2): a cable's links against a drum or a floor.

``step.collide`` walks the pairs one by one, each through ``detectors.detect`` -- a few tens of
microseconds of Python per pair, so 160 link-drum pairs cost ~3-4 ms a step, most of a 10 ms
step's budget and all of seed 002's 4.68 ms.  Pairs of the same kinds against the same world
shape are alike but for the capsule's body and frame: ``plan`` groups them once per model
(``GROUPED``: capsule against a world cylinder or plane), and ``detect`` runs one numba loop
per group over all its capsules, with the very kernels ``collision.analytic`` the per-pair
detectors call, on the same inputs (the capsule's segment ends, its radius, the reach
band + T (|v| + |w| extent) of ``detection.reach``), so each pair's contacts are the ones its
detector gives (the test compares them).  The contacts come back labelled with their body, the
world and their pair, in pair order within the group; ``step.collide`` puts every pair's
contacts back in the model's pair order.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from sim_core.collision import analytic
from sim_core.contact import materials
from sim_core.shapes import Capsule, Cylinder, Plane
from sim_core.types import WORLD, Contacts, Model, State


@dataclass(frozen=True)
class Group:
    """Pairs (capsule on a body, world shape ``other`` of kind ``kind``), the capsule named first."""
    kind: str                      # "cylinder" | "plane": the world shape's kind
    other: int                     # the world shape's index in Model.shapes
    pairs: np.ndarray              # (g,) int64, the pairs' indices in Model.pairs
    body: np.ndarray               # (g,) int64, each capsule's body
    R_bs: np.ndarray               # (g,3,3) each capsule's frame in its body's
    p_bs: np.ndarray               # (g,3) m
    half: np.ndarray               # (g,) m, half lengths
    radius: np.ndarray             # (g,) m
    extent: np.ndarray             # (g,) m, the capsules' Shape.extent
    band: np.ndarray               # (g,) m, each pair's detection band (its material's)


_PLANS: dict = {}


def plan(model: Model) -> tuple[tuple[Group, ...], np.ndarray]:
    """(the groups, bool (P,) the pairs they hold): built once per model's pairs."""
    key = id(model.pairs)
    hit = _PLANS.get(key)
    if hit is not None and hit[0] is model.pairs and hit[1] is model.shapes and hit[2] is model.contact:
        return hit[3], hit[4]
    found: dict = {}
    for k, pair in enumerate(model.pairs):
        a, b = model.shapes[pair.a], model.shapes[pair.b]
        if not (isinstance(a, Capsule) and a.body != WORLD and isinstance(b, (Cylinder, Plane)) and b.body == WORLD):
            continue
        band = materials.pair_params(model.contact, pair).band
        found.setdefault((b.kind, pair.b), []).append((k, a, band))
    groups = []
    held = np.zeros(len(model.pairs), bool)
    for (kind, other), rows in found.items():
        if len(rows) < 2:          # one pair: the per-pair detector is as quick
            continue
        k = np.array([r[0] for r in rows], np.int64)
        held[k] = True
        caps = [r[1] for r in rows]
        groups.append(Group(kind, other, k, np.array([c.body for c in caps], np.int64),
                            np.array([c.R_bs for c in caps], float), np.array([c.p_bs for c in caps], float),
                            np.array([c.half_length for c in caps]), np.array([c.radius for c in caps]),
                            np.array([c.extent() for c in caps]), np.array([r[2] for r in rows], float)))
    out = (tuple(groups), held)
    _PLANS.clear()                 # one model at a time is what a run uses
    _PLANS[key] = (model.pairs, model.shapes, model.contact, *out)
    return out


@njit(cache=True)
def _ends_reach(R_wb, p_w, V, body, R_bs, p_bs, half, extent, band, dt, E0, E1, reach):
    """Each capsule's world segment ends and its reach (``detectors._ends``, ``detection.reach``)."""
    for i in range(body.shape[0]):
        j = body[i]
        R = R_wb[j] @ R_bs[i]
        p = p_w[j] + R_wb[j] @ p_bs[i]
        for c in range(3):
            h = half[i] * R[c, 2]
            E0[i, c] = p[c] - h
            E1[i, c] = p[c] + h
        v = np.sqrt(V[j, 0] ** 2 + V[j, 1] ** 2 + V[j, 2] ** 2)
        w = np.sqrt(V[j, 3] ** 2 + V[j, 4] ** 2 + V[j, 5] ** 2)
        reach[i] = band[i] + dt * (v + w * extent[i])


@njit(cache=True)
def _cylinders(E0, E1, r, Rc, pc, R, H, reach, x, n, d, key, count):
    """analytic.capsule_cylinder for every capsule into its MAX_CONTACTS slots."""
    k = analytic.MAX_CONTACTS
    for i in range(E0.shape[0]):
        count[i] = analytic.capsule_cylinder(E0[i], E1[i], r[i], Rc, pc, R, H, reach[i], x[i * k:(i + 1) * k],
                                             n[i * k:(i + 1) * k], d[i * k:(i + 1) * k], key[i * k:(i + 1) * k])


@njit(cache=True)
def _planes(E0, E1, r, o, nz, reach, x, n, d, key, count):
    """analytic.capsule_plane for every capsule into its MAX_CONTACTS slots."""
    k = analytic.MAX_CONTACTS
    for i in range(E0.shape[0]):
        count[i] = analytic.capsule_plane(E0[i], E1[i], r[i], o, nz, reach[i], x[i * k:(i + 1) * k],
                                          n[i * k:(i + 1) * k], d[i * k:(i + 1) * k], key[i * k:(i + 1) * k])


def detect(model: Model, state: State, g: Group, dt: float) -> Contacts:
    """The group's contacts (normals pushing the capsules' bodies), labelled body / WORLD / pair."""
    m = g.body.shape[0]
    E0, E1, reach = np.empty((m, 3)), np.empty((m, 3)), np.empty(m)
    _ends_reach(state.R_wb, state.p_w, state.V, g.body, g.R_bs, g.p_bs, g.half, g.extent, g.band, float(dt),
                E0, E1, reach)
    k = analytic.MAX_CONTACTS
    x, n, d = np.empty((m * k, 3)), np.empty((m * k, 3)), np.empty(m * k)
    key, count = np.empty(m * k, np.int64), np.zeros(m, np.int64)
    s = model.shapes[g.other]
    if g.kind == "cylinder":
        _cylinders(E0, E1, g.radius, np.ascontiguousarray(s.R_bs), s.p_bs, s.radius, s.half_length, reach,
                   x, n, d, key, count)
    else:
        _planes(E0, E1, g.radius, s.p_bs, np.ascontiguousarray(s.R_bs[:, 2]), reach, x, n, d, key, count)
    keep = (np.arange(k)[None, :] < count[:, None]).ravel()
    rows = np.repeat(np.arange(m), count)
    return Contacts(x[keep], n[keep], d[keep], key[keep], g.body[rows], np.full(rows.size, WORLD, np.int64),
                    g.pairs[rows])
