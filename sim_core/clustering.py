"""Contact clustering (stage 3), baseline: k-means to M_c representatives (seed 000 Sec. V.C).

Features are [x, s n] so that nodes on opposite thread flanks, which are close in space but
have opposite normals, fall into different clusters (averaging them would cancel the normal).
Initialisation is deterministic farthest-point sampling from the deepest node, so runs repeat
without a random seed.  A representative sits at the mean position of its members with the
normalised mean normal and the *deepest* member's signed distance, so the penetration
correction sees the worst node of each cluster.

Small hand-written Lloyd iterations in numba rather than scipy's kmeans2: this runs every
10 ms on a few hundred points, where Python-call overhead dominates and a deterministic
initialisation is required.
"""
from __future__ import annotations

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
            if s < dmin[i]:
                dmin[i] = s
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
    xs = np.zeros((k, 3))
    ns = np.zeros((k, 3))
    ds = np.full(k, np.inf)
    cnt = np.zeros(k)
    for i in range(x.shape[0]):
        c = labels[i]
        xs[c] += x[i]
        ns[c] += nrm[i]
        cnt[c] += 1.0
        if d[i] < ds[c]:
            ds[c] = d[i]
    m = 0
    for c in range(k):
        if cnt[c] > 0:
            nn = np.sqrt(ns[c, 0] ** 2 + ns[c, 1] ** 2 + ns[c, 2] ** 2)
            if nn > 1e-12:
                xs[m] = xs[c] / cnt[c]
                ns[m] = ns[c] / nn
                ds[m] = ds[c]
                m += 1
    return xs[:m], ns[:m], ds[:m]


def kmeans(contacts: Contacts, k: int, normal_scale: float) -> Contacts:
    """Reduce a contact set to at most k representatives."""
    n = len(contacts)
    if n <= k:
        return contacts
    F = np.hstack([contacts.x_w, normal_scale * contacts.n_w])
    labels = kmeans_labels(F, k, int(np.argmin(contacts.d)), MAX_LLOYD_ITERATIONS)
    x, nrm, d = _representatives(contacts.x_w, contacts.n_w, contacts.d, labels, k)
    return Contacts(x, nrm, d)
