"""Contact clustering (stage 3): the table ``CLUSTERINGS`` of ways to reduce a pair's detected
nodes to representatives, and its baseline, k-means to M_c representatives (seed 000 Sec. V.C).

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
from dataclasses import dataclass

import numpy as np
from numba import njit

from sim_core.shapes import SDF, Nodes
from sim_core.types import BodyPose, ContactPair, ContactParams, Contacts

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
# normal's elevation n_z in five classes -- down-facing (< -0.95, within 18 deg of the axis),
# lower flank (-0.95 .. -0.5), radial (-0.5 .. 0.5), upper flank, up-facing -- so a 60 deg
# thread's flank normals (30 deg off the axis, n_z = -+0.87), its crests and roots (n_z = 0)
# and 45 deg chamfers (0.71) sit well inside one class; and for the three middle classes the
# direction of the normal's horizontal part against the node's radial direction (outward,
# inward, either tangent: 90 deg classes).  A thread's two flanks, its crest and a bore's
# opposite sides never share a representative; a patch's gently turning normals stay in one
# bin.  (The first version binned to the 26 directions of a cube: sectors straddled bin edges,
# and the nut had 51 representatives a step, median, 87 at most.)
ELEVATION_EDGES = (-0.95, -0.5, 0.5, 0.95)
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
def _patch_representatives(x_s, nrm_s, d, patch, n_patches, scale):
    """Groups = (patch, normal bin) pairs present; per group, in the static part's frame:
    the members' depth-weighted mean in cylindrical coordinates (radius, azimuth by the
    circular mean, height) and their mean normal in the local cylindrical basis, turned to
    that azimuth; weights exp(-(d_i - d_min) / scale), d_min the group's deepest member's
    signed distance, which the representative takes.  Returns (x_s, n_s, d) of the groups and
    the row of each group's deepest member."""
    nb = N_NORMAL_BINS
    slot = np.full(n_patches * nb, -1, dtype=np.int64)
    m = 0
    gid = np.empty(x_s.shape[0], dtype=np.int64)
    for i in range(x_s.shape[0]):
        key = patch[i] * nb + normal_bin(x_s[i], nrm_s[i])
        if slot[key] < 0:
            slot[key] = m
            m += 1
        gid[i] = slot[key]
    dm = np.full(m, np.inf)
    deepest = np.zeros(m, dtype=np.int64)
    for i in range(x_s.shape[0]):
        if d[i] < dm[gid[i]]:
            dm[gid[i]] = d[i]
            deepest[gid[i]] = i
    acc = np.zeros((m, 8))      # w, w r, w cos, w sin, w z, w n_r, w n_t, w n_z
    for i in range(x_s.shape[0]):
        g = gid[i]
        w = math.exp(-(d[i] - dm[g]) / scale)
        r = math.sqrt(x_s[i, 0] * x_s[i, 0] + x_s[i, 1] * x_s[i, 1])
        c, sn = (x_s[i, 0] / r, x_s[i, 1] / r) if r > 0.0 else (1.0, 0.0)
        acc[g, 0] += w
        acc[g, 1] += w * r
        acc[g, 2] += w * c
        acc[g, 3] += w * sn
        acc[g, 4] += w * x_s[i, 2]
        acc[g, 5] += w * (nrm_s[i, 0] * c + nrm_s[i, 1] * sn)
        acc[g, 6] += w * (-nrm_s[i, 0] * sn + nrm_s[i, 1] * c)
        acc[g, 7] += w * nrm_s[i, 2]
    xo = np.empty((m, 3))
    no = np.empty((m, 3))
    for g in range(m):
        a = math.atan2(acc[g, 3], acc[g, 2])
        c, sn = math.cos(a), math.sin(a)
        r = acc[g, 1] / acc[g, 0]
        xo[g, 0], xo[g, 1], xo[g, 2] = r * c, r * sn, acc[g, 4] / acc[g, 0]
        nr, nt, nz = acc[g, 5], acc[g, 6], acc[g, 7]
        ln = max(math.sqrt(nr * nr + nt * nt + nz * nz), 1e-300)
        no[g, 0] = (nr * c - nt * sn) / ln
        no[g, 1] = (nr * sn + nt * c) / ln
        no[g, 2] = nz / ln
    return xo, no, dm, deepest


def patches(contacts: Contacts, node_patch: np.ndarray, n_patches: int, R_ws: np.ndarray,
            p_ws: np.ndarray, deep: float = math.inf, scale: float = PATCH_DEPTH_SCALE) -> Contacts:
    """One representative per (body patch, normal bin) group of the detected nodes: the
    members' depth-weighted mean position and normal (``PATCH_DEPTH_SCALE``), taken in the
    static part's cylindrical frame, and the deepest member's depth.

    Why not k-means' deepest member (measured, ``fidelity``): on a thread flank the deepest
    node sits at the crest corner, at a smaller radius than the flank's load, and which node
    is deepest changes every step, so the 12 representatives jumped, the capped solver never
    converged and a nut loaded with 100-300 N rocked off its thread.  Patches fixed in the
    body keep each representative where its region carries load; the normal bins
    (``normal_bin``) keep the two flanks apart; the deepest depth pushes the patch out as
    fast as its worst node.  Why cylindrical means: the Cartesian centroid of a sector of a
    helical flank lies inside the chord, at a smaller radius than its members, so under the
    screw motion the flank allows (every member sliding along it, u_n = 0) the centroid
    approached its averaged normal; the nut running down a frictionless thread lost 8-13 %
    of its acceleration to those representatives (every node: 0.0 %).  The cylindrical mean
    of a surface of revolution's or a helicoid's points moves along it under rotation or
    screw motion about the axis, as its members do.

    ``deep`` (m): a group whose deepest member is deeper than this also gets that member as a
    contact of its own (its position and normal), so a deep landing is pushed out where it
    is deepest without leaving the patches (``contact.fallback_depth``).  Switching
    the whole step to k-means instead held the landings too, but under 1 kN the switch
    threw the nut off its thread (40 rad/s of rocking the step after it)."""
    if len(contacts) == 0 or contacts.idx is None:
        return contacts
    nrm_s = np.ascontiguousarray(contacts.n_w @ R_ws)
    x_s = np.ascontiguousarray((contacts.x_w - p_ws) @ R_ws)
    xr, nr, d, low = _patch_representatives(x_s, nrm_s, contacts.d, node_patch[contacts.idx], n_patches, scale)
    x_w, n_w = xr @ R_ws.T + p_ws, nr @ R_ws.T
    extra = low[d < -deep]
    if extra.size:
        x_w = np.vstack([x_w, contacts.x_w[extra]])
        n_w = np.vstack([n_w, contacts.n_w[extra]])
        d = np.concatenate([d, contacts.d[extra]])
    return Contacts(x_w, n_w, d)


# --- the table ------------------------------------------------------------------------------
# The patch clustering's last resort: a step deeper than this many times
# contact.fallback_depth (0.5 mm) is clustered by k-means (deepest members) instead.
# Measured (bench/closed_loop_clustering.py, bench/fidelity.py): one of six perturbed bolting
# landings (seed 3) jams the nut's crest into the thread's start with patches alone (5.3 mm,
# skipped); k-means from 0.1 or 0.3 mm holds it, but under a 1 kN load the switch's jump
# (36 representatives to 12, warm start lost) threw the nut off its thread; from 0.5 mm both
# hold (seed 3 lands 1.4 mm deep and recovers).
PATCH_KMEANS_FACTOR = 5.0


@dataclass(frozen=True)
class Clustered:
    contacts: Contacts             # the representatives (world axes)
    fallback: bool = False         # the safety net acted on this set


def _kmeans_of(params: ContactParams, nodes: Contacts, representative: str = "deepest") -> Contacts:
    return kmeans(nodes, params.clusters, params.normal_scale, representative)


def _none(body, shape, pair, params, nodes, pose, f_ext) -> Clustered:
    return Clustered(nodes)


def _patches(body: Nodes, shape: SDF, pair: ContactPair, params: ContactParams,
             nodes: Contacts, pose: BodyPose, f_ext: np.ndarray) -> Clustered:
    """``patches`` with its safety net: a group deeper than ``params.fallback_depth`` adds its
    deepest member, and a set deeper than ``PATCH_KMEANS_FACTOR`` times that is k-means'."""
    deepest = -float(nodes.d.min(initial=0.0))
    net = len(nodes) > 0 and deepest > params.fallback_depth
    if body.node_patch is None or deepest > PATCH_KMEANS_FACTOR * params.fallback_depth:
        return Clustered(_kmeans_of(params, nodes), net)
    return Clustered(patches(nodes, body.node_patch, params.clusters, shape.R_ws, shape.p_ws,
                             params.fallback_depth), net)


def _learned(body: Nodes, shape: SDF, pair: ContactPair, params: ContactParams,
             nodes: Contacts, pose: BodyPose, f_ext: np.ndarray) -> Clustered:
    """The seed's interaction networks (``clustering_in``); a set deeper than
    ``params.fallback_depth`` (with more nodes than representatives) is k-means' instead
    (measured, docs/clustering.md: from a few such states the networks alone let the nut sink through
    the thread in closed loop)."""
    from sim_core.contact import interaction_networks as clustering_in
    net = pair.clustering_net
    deepest = -float(nodes.d.min(initial=0.0))
    falls = net is not None and len(nodes) > clustering_in.M_C and deepest > params.fallback_depth
    if net is None or falls:
        return Clustered(_kmeans_of(params, nodes), falls)
    return Clustered(clustering_in.cluster(net, nodes, pose, f_ext, shape, body.node_nb))


# Each entry: (body, shape, pair, params, nodes, pose, f_ext) -> Clustered, with `body` the
# pair's node set (``shapes.Nodes``: node_patch, node_nb), `shape` its signed distance placed
# in the world at the step's start (``shapes.placed``: R_ws, p_ws), `pose` the nodes' body's.
CLUSTERINGS = {
    "patches": _patches,
    "none": _none,
    "learned": _learned,
    "kmeans": lambda body, shape, pair, params, nodes, pose, f_ext: Clustered(_kmeans_of(params, nodes)),
    "kmeans_centroid": lambda body, shape, pair, params, nodes, pose, f_ext: Clustered(
        _kmeans_of(params, nodes, "centroid")),
}
