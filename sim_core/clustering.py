"""Contact clustering (stage 3), baseline: k-means to M_c representatives (seed 000 Sec. V.C).

Features are [x, s n] so that nodes on opposite thread flanks, which are close in space but
have opposite normals, fall into different clusters (averaging them would cancel the normal).
Initialisation is deterministic farthest-point sampling from the deepest node, so runs repeat
without a random seed.  Each cluster is represented by its *deepest member* (position,
normal, signed distance).  Centroids were tried first: in the tilted peg the clusters are
angular sectors spanning the whole engaged length, so centroids pulled the contacts at the
peg's end and at the hole's rim toward mid-depth, weakened the restoring couple, and let
nodes sink 136 um (55 um with deepest members, same run).

Small hand-written Lloyd iterations in numba rather than scipy's kmeans2: this runs every
10 ms on a few hundred points, where Python-call overhead dominates and a deterministic
initialisation is required.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .model import Contacts

MAX_LLOYD_ITERATIONS = 25


@njit(cache=True)
def kmeans_labels(F, k, first, max_iter):
    """Lloyd's k-means on feature rows F (n, f) with farthest-point init from row `first`."""
    n, nf = F.shape
    centers = np.empty((k, nf))
    centers[0] = F[first]
    dmin = np.full(n, np.inf)
    for c in range(1, k):
        best, arg = -1.0, 0
        for i in range(n):
            s = 0.0
            for j in range(nf):
                t = F[i, j] - centers[c - 1, j]
                s += t * t
            dmin[i] = min(dmin[i], s)
            if dmin[i] > best:
                best, arg = dmin[i], i
        centers[c] = F[arg]
    labels = np.full(n, -1, dtype=np.int64)
    for _ in range(max_iter):
        changed = False
        for i in range(n):
            best, arg = np.inf, 0
            for c in range(k):
                s = 0.0
                for j in range(nf):
                    t = F[i, j] - centers[c, j]
                    s += t * t
                if s < best:
                    best, arg = s, c
            if labels[i] != arg:
                labels[i] = arg
                changed = True
        if not changed:
            break
        sums = np.zeros((k, nf))
        counts = np.zeros(k)
        for i in range(n):
            sums[labels[i]] += F[i]
            counts[labels[i]] += 1.0
        for c in range(k):
            if counts[c] > 0:
                centers[c] = sums[c] / counts[c]
    return labels


@njit(cache=True)
def _representatives(x, nrm, d, labels, k):
    """Per cluster: the deepest member (position, normal, signed distance)."""
    best = np.full(k, -1, dtype=np.int64)
    for i in range(x.shape[0]):
        c = labels[i]
        if best[c] < 0 or d[i] < d[best[c]]:
            best[c] = i
    sel = best[best >= 0]
    return x[sel], nrm[sel], d[sel]


@njit(cache=True)
def _centroids(x, nrm, d, labels, k):
    """Per cluster: the members' mean position, normalized mean normal and mean signed
    distance (the textbook representative the seed's baseline uses)."""
    sx = np.zeros((k, 3))
    sn = np.zeros((k, 3))
    sd = np.zeros(k)
    cnt = np.zeros(k)
    for i in range(x.shape[0]):
        c = labels[i]
        sx[c] += x[i]
        sn[c] += nrm[i]
        sd[c] += d[i]
        cnt[c] += 1.0
    keep = cnt > 0
    sx, sn, sd, cnt = sx[keep], sn[keep], sd[keep], cnt[keep]
    for c in range(sx.shape[0]):
        sx[c] /= cnt[c]
        sd[c] /= cnt[c]
        sn[c] /= max(np.sqrt(np.sum(sn[c] ** 2)), 1e-12)
    return sx, sn, sd


def kmeans(contacts: Contacts, k: int, normal_scale: float, representative: str = "deepest") -> Contacts:
    """Reduce a contact set to at most k representatives: per k-means cluster its deepest
    member (``"deepest"``, the simulator's k-means), or the members' centroid with their
    mean normal and mean depth (``"centroid"``, the seed's K-means baseline, seed 000
    Sec. V.C)."""
    n = len(contacts)
    if n <= k:
        return contacts
    F = np.hstack([contacts.x_w, normal_scale * contacts.n_w])
    labels = kmeans_labels(F, k, int(np.argmin(contacts.d)), MAX_LLOYD_ITERATIONS)
    pick = _centroids if representative == "centroid" else _representatives
    x, nrm, d = pick(contacts.x_w, contacts.n_w, contacts.d, labels, k)
    return Contacts(x, nrm, d)


# --- patches: fixed regions of the moving part, split by the contact normal -------------------
# Normal bins in the static part's cylindrical frame (its axis is z, ARCHITECTURE sec. 5): the
# normal's elevation n_z in five classes (down-facing, lower flank, radial, upper flank,
# up-facing; edges at +-0.25 and +-0.75, so a 60 deg thread's flanks, n_z = -+0.5, sit mid-
# class and its crests, n_z = 0, too), and for the three middle classes the direction of its
# horizontal part against the node's radial direction (outward, inward, either tangent: 90 deg
# classes).  The two flanks of a thread, its crest and a bore's opposite sides never share a
# representative, and a patch's gently turning normals (a 30 deg sector of a flank) stay in
# one bin.  (The first version binned to the 26 directions of a cube: sectors straddled bin
# edges and the nut had 51 representatives a step, median, 87 at most.)
ELEVATION_EDGES = (-0.75, -0.25, 0.25, 0.75)
N_NORMAL_BINS = 2 + 3 * 4
# m: depth scale of a patch's weights exp(-(d_i - d_min) / scale).  Measured (closed loop,
# ``fidelity`` and the scenarios): uniform weights (the plain centroid) moved the wedged
# peg's contacts from its end and the rim toward mid-patch and jammed it at 6.4 mm; the
# deepest member alone sat at the thread's crest corner (nut torque 5-8 % low, rocking);
# 20 um keeps a loaded flank's lever arm (its depths differ by microns) and a wedge's edge.
PATCH_DEPTH_SCALE = 2e-5


def patch_labels(nodes_b: np.ndarray, n_patches: int) -> np.ndarray:
    """(N,) int64: each node of the moving part in one of `n_patches` regions of its body
    frame (k-means of the node positions, farthest-point start from node 0), made once per
    model.  Fixed in the body, the regions move with the part, so the representatives they
    give change smoothly from step to step instead of jumping with the deepest node."""
    n = nodes_b.shape[0]
    if n <= n_patches:
        return np.arange(n, dtype=np.int64)
    return kmeans_labels(np.ascontiguousarray(nodes_b, dtype=np.float64), n_patches, 0, 100)


@njit(cache=True)
def normal_bin(x_s, n_s):
    """The bin (0 .. N_NORMAL_BINS - 1) of a normal n_s at the point x_s, both static frame."""
    nz = n_s[2]
    if nz < ELEVATION_EDGES[0]:
        return 0
    if nz > ELEVATION_EDGES[3]:
        return 1
    e = 0 if nz < ELEVATION_EDGES[1] else (1 if nz <= ELEVATION_EDGES[2] else 2)
    r = math.sqrt(x_s[0] * x_s[0] + x_s[1] * x_s[1])
    h = math.sqrt(n_s[0] * n_s[0] + n_s[1] * n_s[1])
    q = 0
    if r > 0.0 and h > 0.0:
        c = (n_s[0] * x_s[0] + n_s[1] * x_s[1]) / (r * h)        # cos of normal vs radial
        t = (n_s[1] * x_s[0] - n_s[0] * x_s[1]) / (r * h)        # sin
        if c >= abs(t):
            q = 0
        elif -c >= abs(t):
            q = 1
        elif t > 0.0:
            q = 2
        else:
            q = 3
    return 2 + 4 * e + q


@njit(cache=True)
def _patch_representatives(x, x_s, nrm_s, nrm, d, patch, n_patches, scale):
    """Groups = (patch, normal bin) pairs present; per group the members' depth-weighted
    centroid and mean normal (weights exp(-(d_i - d_min) / scale), d_min the group's deepest
    member) and the deepest member's signed distance."""
    nb = N_NORMAL_BINS
    slot = np.full(n_patches * nb, -1, dtype=np.int64)
    m = 0
    gid = np.empty(x.shape[0], dtype=np.int64)
    for i in range(x.shape[0]):
        key = patch[i] * nb + normal_bin(x_s[i], nrm_s[i])
        if slot[key] < 0:
            slot[key] = m
            m += 1
        gid[i] = slot[key]
    dm = np.full(m, np.inf)
    for i in range(x.shape[0]):
        dm[gid[i]] = min(dm[gid[i]], d[i])
    sx = np.zeros((m, 3))
    sn = np.zeros((m, 3))
    sw = np.zeros(m)
    for i in range(x.shape[0]):
        g = gid[i]
        w = math.exp(-(d[i] - dm[g]) / scale)
        for a in range(3):
            sx[g, a] += w * x[i, a]
            sn[g, a] += w * nrm[i, a]
        sw[g] += w
    for g in range(m):
        ln = 0.0
        for a in range(3):
            sx[g, a] /= sw[g]
            ln += sn[g, a] * sn[g, a]
        ln = max(math.sqrt(ln), 1e-12)
        for a in range(3):
            sn[g, a] /= ln
    return sx, sn, dm


def patches(contacts: Contacts, node_patch: np.ndarray, n_patches: int, R_ws: np.ndarray,
            p_ws: np.ndarray, scale: float = PATCH_DEPTH_SCALE) -> Contacts:
    """One representative per (body patch, normal bin) group of the detected nodes: the
    members' depth-weighted centroid and mean normal (``PATCH_DEPTH_SCALE``), and the deepest
    member's depth.

    Why not k-means' deepest member (measured, ``fidelity``): on a thread flank the deepest
    node sits at the crest corner, at a smaller radius than the flank's load, and which node
    is deepest changes every step, so the 12 representatives jumped, the capped solver never
    converged and a nut loaded with 100-300 N rocked off its thread.  Patches fixed in the
    body keep each representative where its region carries load, the normal bins
    (``normal_bin``) keep the two flanks apart, and the deepest depth pushes the patch out as fast as its worst node."""
    if len(contacts) == 0 or contacts.idx is None:
        return contacts
    nrm_s = np.ascontiguousarray(contacts.n_w @ R_ws)
    x_s = np.ascontiguousarray((contacts.x_w - p_ws) @ R_ws)
    x, nrm, d = _patch_representatives(contacts.x_w, x_s, nrm_s, contacts.n_w, contacts.d,
                                       node_patch[contacts.idx], n_patches, scale)
    return Contacts(x, nrm, d)
