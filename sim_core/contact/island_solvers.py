"""A coupled island's solve (``step.solve``): the table ``ISLAND_SOLVERS`` of the ways to solve
one island -- bodies joined by couplings (a chain, a cable) with its contacts -- selected by
``[contact] island_solver``.  Each takes the island (its bodies ``g``, their blocks ``blk.A[g]``
with every coupling's diagonal terms in, the couplings' off-diagonal blocks ``A_ab`` between
local bodies ``a``, ``b``, their indices ``kc`` in ``Model.couplings``, the turns ``theta`` the
step took them at), its contacts ``sub`` (bodies renumbered from 0) and the configured contact
solver kernel, and returns (Solution, V+ (6k,), G^T lambda (6k,)).

* ``direct`` -- seed 002's Solver 1 (eqs. (6)-(7)) built the best way: A factorized on its
  blocks (``dynamics.blocktree``, linear in the bodies), the Delassus operator of all the
  contacts from their sparse rows, the configured kernel (sor / pgs).  The default.
* ``direct_dense`` -- Solver 1 as the seed describes it: the dense A (6k x 6k) inverted, the
  dense Delassus operator J A^-1 J^T, the configured kernel -- for the seed's comparison only.
* ``subsystems`` -- Solver 2, seed 002 Algorithm 1 (``subsystems``, derivation there and in
  docs/cable.md "The solvers").
* ``subsystems_regulated`` -- Solver 3: Solver 2 with the post-regulation of eq. (16).
Solvers 2 and 3 sweep their own PGS (the seed's), whatever the kernel; with the kernel
``pgs_subspace`` they also end as it does, on the island's normal forces solved at once
(``_coupled_normals``: what holds a cable wound under tension, where the sweeps let it sink
millimetres into the drum).
"""
from __future__ import annotations

from dataclasses import fields
from typing import NamedTuple

import numba
import numpy as np
from numba import njit, prange

from sim_core.contact import frames, materials, solver_pgs, solver_sor
from sim_core.contact.solvers import Solution
from sim_core.dynamics import blocktree, couplings
from sim_core.types import Contacts


def factorized(A_blocks, a, b, A_ab):
    """inv(rhs (k,6,r)) -> A^-1 rhs (in place where it can) for the block system of A_blocks
    (k,6,6) and couplings (a, b, A_ab) between local bodies: on its blocks where the couplings
    form a tree (``blocktree``), else by a sparse LU (SuperLU)."""
    k = A_blocks.shape[0]
    A_ba = np.ascontiguousarray(A_ab.transpose(0, 2, 1))    # A is symmetric in its couplings
    ok, order, parent, edge = blocktree.tree(k, a, b)
    if ok:
        fac = blocktree.factor(A_blocks, order, parent, edge, a, A_ab, A_ba)

        def inv(rhs):                              # rhs (k,6,r) -> A^-1 rhs, in place
            blocktree.solve(*fac, order, parent, edge, a, A_ab, A_ba, rhs)
            return rhs
        return inv
    from scipy.sparse.linalg import splu
    lu = splu(blocktree.matrix(A_blocks, a, b, A_ab, A_ba))

    def inv(rhs):
        return np.ascontiguousarray(lu.solve(rhs.reshape(6 * k, -1))).reshape(rhs.shape)
    return inv


def direct(model, state, solver, sub: Contacts, g, blk, a, b, A_ab, V_prev, dt, warm, kc=None, theta=None):
    """A coupled (or large) island: A factorized once -- on its blocks where the couplings form
    a tree (``dynamics.blocktree``: a chain, a branching cable; no fill, linear in the bodies),
    else by a sparse LU (SuperLU, COLAMD order: an FEM mesh or a closed loop) -- V_free = A^-1 b,
    and with the contacts' sparse rows G (a contact touches at most two bodies)
    X = A^-1 G^T (one multi-right-hand-side solve), the Delassus operator W = G X (3m x 3m,
    from the sparse rows: O(m^2), not O(k m^2)).  The solver kernels then run unchanged on the
    contact-space problem: G' the identity rows, A^-1' = W, V_free' = G V_free,
    V_prev' = G V_prev; and V+ = V_free + X lambda.  Couplings are linear in V+ (PMI potential
    action), so they are solved with the contacts exactly, through the factorization.
    Seed 002's Solver 1 built the best way we can (``kc``, ``theta`` unused)."""
    k, m = g.size, len(sub)
    inv = factorized(blk.A[g], a, b, A_ab)
    V_free = inv(blk.b[g].reshape(k, 6, 1).copy()).reshape(6 * k)
    if m == 0:
        keep = None if warm is None else warm.budget
        return Solution(V_free, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(6 * k), 0, budget=keep), \
            V_free, np.zeros(6 * k)
    Gb, Go, Cf = frames.contact_rows(sub.x_w, sub.n_w, sub.body, sub.other, state.p_w[g], state.R_wb[g])
    Gt = blocktree.scatter(Gb, Go, sub.body, sub.other, k)       # G^T (k,6,3m)
    X = inv(Gt.copy())
    W = blocktree.gather(Gb, Go, sub.body, sub.other, X)
    eye = np.zeros((m, 3, 3 * m))
    eye[np.arange(m)[:, None], np.arange(3)[None, :], 3 * np.arange(m)[:, None] + np.arange(3)[None, :]] = 1.0
    mu, beta = materials.per_contact(model, sub)
    Gt, X = Gt.reshape(6 * k, 3 * m), X.reshape(6 * k, 3 * m)
    s = solver(model.contact, sub, eye, Cf, None, None, Gt.T @ V_prev, dt, warm, None,
               free=(W, Gt.T @ V_free), n_bodies=k, mu=mu, beta=beta, nexp=materials.exponents(model, sub))
    lam = s.lam.ravel()
    return s, V_free + X @ lam, Gt @ lam



def direct_dense(model, state, solver, sub: Contacts, g, blk, a, b, A_ab, V_prev, dt, warm, kc=None, theta=None):
    """Seed 002's Solver 1 as printed: the island's dense A (6k x 6k, its blocks and the
    couplings' off-diagonal blocks), the dense Jacobian J (m,3,6k), and the configured kernel
    on them -- which inverts A densely and forms J A^-1 J^T (``solvers._free``, O(k^3)).  The
    same problem as ``direct``; only the linear algebra differs (round-off)."""
    A_ba = np.ascontiguousarray(A_ab.transpose(0, 2, 1))
    A = blocktree.matrix(blk.A[g], a, b, A_ab, A_ba).toarray()
    G, Cf = frames.world_jacobians(sub.x_w, sub.n_w, sub.body, sub.other, state.p_w[g], state.R_wb[g])
    mu, beta = materials.per_contact(model, sub)
    s = solver(model.contact, sub, G, Cf, A, blk.b[g].ravel(), V_prev, dt, warm, None, mu=mu, beta=beta,
               nexp=materials.exponents(model, sub))
    return s, s.V, s.generalized


# ---- Solvers 2 and 3: subsystems in parallel (seed 002 Sec. IV, Algorithm 1) ---------------------

def subset(cp, rows):
    """The couplings `rows` of `cp` as a ``Couplings`` of their own: every per-coupling field
    sliced (so a field a model adds is carried too)."""
    c = len(cp)
    kw = {}
    for f in fields(cp):
        v = getattr(cp, f.name)
        kw[f.name] = v[rows] if isinstance(v, np.ndarray) and v.ndim and v.shape[0] == c else v
    return type(cp)(**kw)


# The cost of a body in a subsystem, in contacts (``partition``, split "balanced"): a link's block
# against its contacts' rows.  Measured on the 160-link winding (8 subsystems, Solver 3, 100
# steps): 0.25 -> 78 iterations a step (the free cable's one run hit the cap); 1 -> 38, solve
# 4.3 ms; 3 -> 33, 4.4 ms; equal links (the seed's runs) -> 48, 5.8 ms.
LINK_WEIGHT = 1.0
SPLITS = ("balanced", "links")


def partition(k: int, n_s: int, body, other, split: str = "links") -> np.ndarray:
    """(k,) the subsystem of each local body: n_s runs of consecutive bodies, runs joined by a
    contact between two of their bodies merged into one (seed 002 Sec. IV-D.2, the adaptive
    binding: a self-contact across subsystems would couple them outside the cut couplings),
    numbered from 0.  `split` "links": runs as even as np.array_split makes them (the seed's);
    "balanced": runs of about the same LINK_WEIGHT per body + contacts on it (a sweep costs
    (3 m_s)^2 and the winding's contacts sit on half of the cable: with equal runs, four of
    eight subsystems held all 241 contacts), at least one body each."""
    n_s = max(1, min(int(n_s), k))
    if split == "balanced":
        w = LINK_WEIGHT + np.bincount(body, minlength=k)[:k] + np.bincount(other[other >= 0], minlength=k)[:k]
        mid = np.cumsum(w) - 0.5 * w               # each body's weight centre, in (0, total)
        run = np.minimum((mid * n_s / mid[-1] if k > 1 else np.zeros(k)).astype(np.int64), n_s - 1)
        run = np.unique(run, return_inverse=True)[1].reshape(k)   # no empty runs
        n_s = int(run.max()) + 1
    elif split == "links":
        run = _even_runs(k, n_s)
    else:
        raise ValueError(f"subsystem split {split!r}: expected one of {', '.join(SPLITS)}")
    return _merged(run, n_s, body, other)


@njit(cache=True)
def _even_runs(k, n_s):
    """(k,) np.array_split's runs of k bodies into n_s: the first k % n_s one longer."""
    run = np.empty(k, np.int64)
    big, i = k % n_s, 0
    for j in range(n_s):
        for _ in range(k // n_s + (1 if j < big else 0)):
            run[i] = j
            i += 1
    return run


@njit(cache=True)
def _merged(run, n_s, body, other):
    """``partition``'s runs with those a contact between two of their bodies spans merged into
    one, numbered from 0: runs j and j+1 stay apart where no contact's [lo, hi) covers j."""
    over = np.zeros(n_s + 1, np.int64)             # contacts starting at j less those ending there
    for i in range(body.shape[0]):
        if other[i] >= 0:
            lo, hi = min(run[body[i]], run[other[i]]), max(run[body[i]], run[other[i]])
            over[lo] += 1
            over[hi] -= 1
    label = np.empty(n_s, np.int64)
    label[0] = 0
    span = 0
    for j in range(n_s - 1):
        span += over[j]
        label[j + 1] = label[j] + (1 if span == 0 else 0)
    out = np.empty(run.shape[0], np.int64)
    for i in range(run.shape[0]):
        out[i] = label[run[i]]
    return out


@njit(cache=True)
def _residual(s, c_off, w_off, Wt, ufree, e_off, end_off, end_cut, E, lam, F, u):
    """u_s = u_free,s + W_s lambda_s - E_s F_ends: subsystem s's contact velocities (eq. (15))
    with the cut forces F held, into its slice of u (3m,).  W_s lambda_s as a sum of W_s's
    columns (the rows of Wt_s, ``_transpose``): the loop over a column vectorizes, where a row's
    dot product is one chain of dependent additions (~0.1 ms a step at 160 links)."""
    c0, ms = c_off[s], c_off[s + 1] - c_off[s]
    n3 = 3 * ms
    e0, ne = end_off[s], end_off[s + 1] - end_off[s]
    Wts = Wt[w_off[s]:w_off[s] + n3 * n3].reshape((n3, n3))
    Es = E[e_off[s]:e_off[s] + n3 * 6 * ne].reshape((n3, 6 * ne))
    us = u[3 * c0:3 * c0 + n3]
    for r in range(n3):
        us[r] = ufree[3 * c0 + r]
    for q in range(ms):
        for j in range(3):
            f = lam[c0 + q, j]
            if f != 0.0:
                col = Wts[3 * q + j]
                for r in range(n3):
                    us[r] += col[r] * f
    for r in range(n3):
        acc = 0.0
        for e in range(ne):
            for j in range(6):
                acc += Es[r, 6 * e + j] * F[end_cut[e0 + e], j]
        us[r] -= acc


@njit(cache=True)
def _shift(s, c_off, e_off, end_off, end_cut, E, dF, u):
    """u_s -= E_s dF_ends: the cut forces moved by dF (nc,6) since u_s was formed."""
    c0, ms = c_off[s], c_off[s + 1] - c_off[s]
    n3 = 3 * ms
    e0, ne = end_off[s], end_off[s + 1] - end_off[s]
    Es = E[e_off[s]:e_off[s] + n3 * 6 * ne].reshape((n3, 6 * ne))
    for r in range(n3):
        acc = 0.0
        for e in range(ne):
            for j in range(6):
                acc += Es[r, 6 * e + j] * dF[end_cut[e0 + e], j]
        u[3 * c0 + r] -= acc


@njit(cache=True)
def _sweep(s, c_off, w_off, W, Wt, bn, mu, nexp, lam, u):
    """One projected Gauss-Seidel sweep over subsystem s's contacts (eq. (15)) with the cut
    forces held: each contact's normal row, then its tangential 2x2 block projected onto the
    disk of ``solver_pgs.friction_limit``.  u (its slice, ``_residual``) follows every change
    of lambda, so a sweep costs one pass over W_s, not two; it reads W_s's columns as the
    rows of Wt_s (``_transpose``: W_s is not symmetric -- A is not -- and a column of a
    row-major 180 x 180 block is a cache miss per entry)."""
    c0, ms = c_off[s], c_off[s + 1] - c_off[s]
    n3 = 3 * ms
    Ws = W[w_off[s]:w_off[s] + n3 * n3].reshape((n3, n3))
    Wts = Wt[w_off[s]:w_off[s] + n3 * n3].reshape((n3, n3))
    us = u[3 * c0:3 * c0 + n3]                     # views: the update loop below vectorizes on them
    for i in range(ms):
        ci = c0 + i
        r0 = 3 * i
        l0, l1, l2 = lam[ci, 0], lam[ci, 1], lam[ci, 2]
        ln = max(0.0, l0 - (us[r0] - bn[ci]) / Ws[r0, r0])
        dn = ln - l0
        u1 = us[r0 + 1] + Ws[r0 + 1, r0] * dn
        u2 = us[r0 + 2] + Ws[r0 + 2, r0] * dn
        a, bb, c, e = Ws[r0 + 1, r0 + 1], Ws[r0 + 1, r0 + 2], Ws[r0 + 2, r0 + 1], Ws[r0 + 2, r0 + 2]
        det = a * e - bb * c
        t1 = l1 - (e * u1 - bb * u2) / det
        t2 = l2 - (-c * u1 + a * u2) / det
        lim = solver_pgs.friction_limit(mu[ci], nexp[ci], ln)
        nt = np.sqrt(t1 * t1 + t2 * t2)
        if nt > lim:
            sc = lim / nt if nt > 0.0 else 0.0
            t1 *= sc
            t2 *= sc
        lam[ci, 0], lam[ci, 1], lam[ci, 2] = ln, t1, t2
        d0, d1, d2 = ln - l0, t1 - l1, t2 - l2
        if d0 != 0.0 or d1 != 0.0 or d2 != 0.0:
            w0, w1, w2 = Wts[r0], Wts[r0 + 1], Wts[r0 + 2]
            for r in range(n3):
                us[r] += w0[r] * d0 + w1[r] * d1 + w2[r] * d2


@njit(cache=True)
def _transpose(s, c_off, w_off, W, Wt):
    """Wt_s = W_s^T, subsystem s's block of the same layout."""
    n3 = 3 * (c_off[s + 1] - c_off[s])
    Ws = W[w_off[s]:w_off[s] + n3 * n3].reshape((n3, n3))
    Wts = Wt[w_off[s]:w_off[s] + n3 * n3].reshape((n3, n3))
    for r in range(n3):
        for q in range(n3):
            Wts[q, r] = Ws[r, q]


@njit(cache=True)
def _ends(s, c_off, end_off, e_off, R, lam, y):
    """y[e] = R_s lambda_s for subsystem s's cut ends e: its contacts' pull on each cut (C lambda)."""
    c0, ms = c_off[s], c_off[s + 1] - c_off[s]
    e0, ne = end_off[s], end_off[s + 1] - end_off[s]
    n3 = 3 * ms
    Rs = R[e_off[s]:e_off[s] + n3 * 6 * ne].reshape((6 * ne, n3))
    for e in range(ne):
        for r in range(6):
            acc = 0.0
            for q in range(ms):
                for j in range(3):
                    acc += Rs[6 * e + r, 3 * q + j] * lam[c0 + q, j]
            y[e0 + e, r] = acc


@njit(cache=True)
def thread_bins(cost, threads):
    """(threads, L) the subsystems each thread takes (-1 pads), dealt largest first to the
    least loaded thread; `cost` (ns,) what each costs (a contact sweep: ``sweep_cost``).
    The contacts sit where the cable touches: on the winding, 4 of 8 equal runs of links held
    them all, and numba's static split of ``prange(ns)`` gave one thread all four (2 threads
    ran 0.92x as fast as 1).  No result depends on the bins: the subsystems' work is
    independent."""
    return _deal(np.argsort(-cost, kind="mergesort"), cost, max(1, min(threads, cost.shape[0])))


@njit(cache=True)
def sweep_cost(c_off):
    """(ns,) a subsystem's contact sweep, ~(3 m_s)^2 (``thread_bins``)."""
    ns = c_off.shape[0] - 1
    cost = np.empty(ns)
    for s in range(ns):
        cost[s] = (3.0 * (c_off[s + 1] - c_off[s])) ** 2 + 1.0
    return cost


@njit(cache=True)
def _deal(order, cost, threads):
    """``thread_bins``' dealing: each subsystem of `order` to the least loaded thread (the
    first of equals), in that order."""
    load = np.zeros(threads)
    got = np.full((threads, order.shape[0]), -1, np.int64)
    n = np.zeros(threads, np.int64)
    for s in order:
        t = np.argmin(load)
        got[t, n[t]] = s
        n[t] += 1
        load[t] += cost[s]
    return got[:, :max(1, n.max())].copy()


@njit(cache=True)
def _copy1(src, dst):
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(cache=True)
def _copy2(src, dst):
    for i in range(src.shape[0]):
        for j in range(src.shape[1]):
            dst[i, j] = src[i, j]


@njit(cache=True, parallel=True)
def iterate(c_off, w_off, W, Wt, ufree, e_off, E, R, end_off, end_cut, bn, mu, nexp, lam0, S, S_inv, U, F0,
            iterations, tol, regulated, xi, alpha, bins, freeze=True, have_wt=False):
    """Algorithm 1's contact loop (lines 11-22): per iteration l, one PGS sweep per subsystem
    in parallel (``_sweep``, eq. (15); the threads take the subsystems of ``thread_bins``),
    the post-regulation (eq. (16), `regulated`), one block Gauss-Seidel sweep on the cut
    forces (eq. (13)); until no cut force and no contact force changes by more than `tol` (N)
    or `iterations` passes.  The contact velocities u are kept, not re-formed: each sweep
    updates them with its lambda, and each subsystem's thread first shifts them by the last
    cut force update (``_shift``).  `freeze`: skip the sweeps eq. (16) would undo (below;
    False: sweep every pass, the print's loop, for the tests).  Returns
    (lambda (m,3), F (nc,6), passes, capped, the passes whose sweeps were skipped).  Wt (W's
    size): W's subsystem blocks transposed, written here (``_coupled_normals`` reads them), or
    read where `have_wt` (a second call of the step's)."""
    nc = S_inv.shape[0]
    n_end = end_cut.shape[0]
    # No array expressions below: numba makes each one a parallel region of its own, with a
    # barrier (4 a pass, as costly as the sweeps they surrounded); plain loops stay serial.
    lam = lam0.copy()
    F = F0.copy()
    lam_old = lam.copy()
    y = np.empty((n_end, 6))
    y_old = np.empty((n_end, 6))
    u = np.empty(ufree.shape[0])
    dC = np.empty((nc, 6))
    for t in prange(bins.shape[0]):
        for j in range(bins.shape[1]):
            s = bins[t, j]
            if s < 0:
                break
            if not have_wt:
                _transpose(s, c_off, w_off, W, Wt)
            _ends(s, c_off, end_off, e_off, R, lam, y_old)
            _residual(s, c_off, w_off, Wt, ufree, e_off, end_off, end_cut, E, lam, F, u)
    u_old = u.copy()
    dFk = np.empty((nc, 6))
    for k in range(nc):
        for r in range(6):
            dFk[k, r] = 0.0
    rhs = np.empty((nc, 6))
    rk = np.empty(6)
    passes = 0
    # eq. (16)'s threshold xi alpha^l only falls: once it undoes sweeps pass after pass, it undoes
    # the rest too (measured on the 160-link winding: every pass from the first undone one on,
    # ~half of them), which then only cost time.  So after FREEZE_AFTER undone passes in a row the
    # sweeps stop (`frozen`) while the cut forces converge with lambda held, and resume if the
    # sweep made at that convergence passes the next pass's threshold (``_check``; the cut
    # forces' change since the freeze, `pend`, shifted into u first); else it is undone and the
    # solve ends, as the undone sweeps would have ended it.  (A single undone pass is often
    # followed by kept ones: the first sweep from a cold start, measured on the drape.)
    frozen = False
    run = 0
    skipped = 0
    pend = np.zeros((nc, 6))
    for it in range(iterations):
        passes = it + 1
        if not frozen:
            _copy2(lam, lam_old)
            if regulated:
                _copy1(u, u_old)
            for t in prange(bins.shape[0]):        # Algorithm 1 lines 14-16: in parallel
                for j in range(bins.shape[1]):
                    s = bins[t, j]
                    if s < 0:
                        break
                    if it > 0:                     # the contacts see the last iteration's cut forces
                        _shift(s, c_off, e_off, end_off, end_cut, E, dFk, u)
                    _sweep(s, c_off, w_off, W, Wt, bn, mu, nexp, lam, u)
                    _ends(s, c_off, end_off, e_off, R, lam, y)
            if regulated and _cut_change(end_cut, y, y_old, S_inv, dC) >= xi * alpha ** passes:
                _undo(c_off, e_off, end_off, end_cut, E, dFk, lam_old, lam, y_old, y, u_old, u)
                run += 1
                frozen = freeze and run >= FREEZE_AFTER
            else:
                run = 0
        else:
            skipped += 1
        _pulled(U, end_cut, y, rhs)
        dF = 0.0
        for k in range(nc):                        # eq. (13): block Gauss-Seidel, S_kk F_k = r_k - sum S_kj F_j
            for p in range(6):
                rk[p] = rhs[k, p]
            for j in range(nc):
                if j != k:
                    for p in range(6):
                        for q in range(6):
                            rk[p] -= S[6 * k + p, 6 * j + q] * F[j, q]
            for p in range(6):
                v = 0.0
                for q in range(6):
                    v += S_inv[k, p, q] * rk[q]
                dFk[k, p] = v - F[k, p]
                dF = max(dF, abs(v - F[k, p]))
                F[k, p] = v
        dl = 0.0
        if frozen:
            for k in range(nc):
                for p in range(6):
                    pend[k, p] += dFk[k, p]
        else:
            for i in range(lam.shape[0]):
                for j in range(3):
                    dl = max(dl, abs(lam[i, j] - lam_old[i, j]))
        _copy2(y, y_old)
        if dF < tol and dl < tol:
            if not frozen:
                return lam, F, passes, False, skipped
            if not _check(c_off, w_off, W, Wt, bn, mu, nexp, e_off, end_off, end_cut, E, R, S_inv, dC, pend, lam,
                          lam_old, y, y_old, u, u_old, xi * alpha ** (passes + 1)):
                return lam, F, passes, False, skipped
            frozen = False                          # the sweep passed: go on from it
            run = 0
            for k in range(nc):
                for p in range(6):
                    pend[k, p] = 0.0
                    dFk[k, p] = 0.0                 # (shifted in already)
            _copy2(y, y_old)
    return lam, F, passes, True, skipped


@njit(cache=True)
def _pulled(U, end_cut, y, out):
    """out (nc,6) = U + C lambda, eq. (12)'s right-hand side: each cut end's pull y (``_ends``)
    added to its coupling's row of U."""
    for k in range(U.shape[0]):
        for r in range(6):
            out[k, r] = U[k, r]
    for e in range(end_cut.shape[0]):
        for r in range(6):
            out[end_cut[e], r] += y[e, r]


@njit(cache=True)
def _cut_change(end_cut, y, y_old, S_inv, dC):
    """eq. (16)'s measure, in force units: max_k |S_kk^-1 (C (lambda^l - lambda^l-1))_k| from the
    ends' pulls y, y_old (``_ends``)."""
    nc = S_inv.shape[0]
    for k in range(nc):
        for r in range(6):
            dC[k, r] = 0.0
    for e in range(end_cut.shape[0]):
        for r in range(6):
            dC[end_cut[e], r] += y[e, r] - y_old[e, r]
    big = 0.0
    for k in range(nc):
        for p in range(6):
            v = 0.0
            for q in range(6):
                v += S_inv[k, p, q] * dC[k, q]
            big = max(big, abs(v))
    return big


@njit(cache=True)
def _restore(lam_old, lam, y_old, y, u_old, u):
    """lambda, the ends' pulls and u back to their copies from before a sweep."""
    _copy2(lam_old, lam)
    _copy2(y_old, y)
    _copy1(u_old, u)


@njit(cache=True)
def _undo(c_off, e_off, end_off, end_cut, E, dFk, lam_old, lam, y_old, y, u_old, u):
    """eq. (16)'s undo (``_restore``); u_old was formed before the sweeps' shift by dFk, so it
    is shifted again."""
    _restore(lam_old, lam, y_old, y, u_old, u)
    for s in range(c_off.shape[0] - 1):
        _shift(s, c_off, e_off, end_off, end_cut, E, dFk, u)


@njit(cache=True)
def _check(c_off, w_off, W, Wt, bn, mu, nexp, e_off, end_off, end_cut, E, R, S_inv, dC, pend, lam, lam_old, y,
           y_old, u, u_old, threshold):
    """``iterate``'s frozen sweeps' check, at the cut forces' convergence: u shifted by `pend`,
    one sweep of every subsystem (serial: once a solve); True (kept) if eq. (16) passes it at
    `threshold`, else undone (u left shifted) and False."""
    ns = c_off.shape[0] - 1
    for s in range(ns):
        _shift(s, c_off, e_off, end_off, end_cut, E, pend, u)
    _copy2(lam, lam_old)
    _copy1(u, u_old)
    for s in range(ns):
        _sweep(s, c_off, w_off, W, Wt, bn, mu, nexp, lam, u)
        _ends(s, c_off, end_off, e_off, R, lam, y)
    if _cut_change(end_cut, y, y_old, S_inv, dC) < threshold:
        return True
    _restore(lam_old, lam, y_old, y, u_old, u)
    return False


# ``_coupled_normals``: principal pivots at most, per contact of the island
PIVOTS_PER_CONTACT = 3
# a normal row counts as met within this many m/s per (1 + the largest target): the subspace
# steps' own tolerance (``solver_sor.LH_TOL``), relative
NORMALS_TOL = solver_sor.LH_TOL
# ``_coupled_normals``: rounds at most (a round that scaled a friction force into its disk is
# followed by another with that friction held)
NORMALS_ROUNDS = 8


@njit(cache=True)
def _normals_solve(inP, dirty, cache, c_off, w_off, W, e_off, E, R, end_off, end_cut, r, S, Up, x, F):
    """``_coupled_normals``' solve on the set inP (m,): x (m,) the set's normal forces (others
    0) and F (nc,6) with every normal row of the set at its target, the friction held:
        W_PP x_P - E_P F = r_P  (each subsystem's rows),   S F - R_P x_P = Up,
    by block elimination: per subsystem W_PP^-1 and X_E = W_PP^-1 E_P, then the cut forces from
    (S - sum R_P X_E) F = Up + sum R_P W_PP^-1 r_P (6 nc unknowns), then x_P = W_PP^-1 r_P + X_E F.
    `cache` (sets, W_PP^-1, X_E per subsystem): kept between solves, rounds and both calls of a
    step, formed again only where dirty[s] and the subsystem's set changed (dirty then
    cleared): a round after a friction scaling, and the call after the settle passes, mostly
    keep every set.  Returns False where a block or that system is singular, or the solution
    is not finite."""
    Ps, Minvs, XEs = cache
    nc = F.shape[0]
    K = S.copy()
    k = Up.ravel().copy()
    for i in range(x.shape[0]):
        x[i] = 0.0
    for s in range(c_off.shape[0] - 1):
        c0, ms = c_off[s], c_off[s + 1] - c_off[s]
        e0, ne = end_off[s], end_off[s + 1] - end_off[s]
        n3 = 3 * ms
        Rs = R[e_off[s]:e_off[s] + n3 * 6 * ne].reshape((6 * ne, n3))
        if dirty[s]:
            dirty[s] = False
            P = np.empty(ms, np.int64)
            q = 0
            for i in range(ms):
                if inP[c0 + i]:
                    P[q] = i
                    q += 1
            same = q == Ps[s].shape[0]
            if same:
                for a in range(q):
                    same = same and P[a] == Ps[s][a]
            if not same:
                Ws = W[w_off[s]:w_off[s] + n3 * n3].reshape((n3, n3))
                Es = E[e_off[s]:e_off[s] + n3 * 6 * ne].reshape((n3, 6 * ne))
                M = np.empty((q, q))
                EP = np.empty((q, 6 * ne))
                for a in range(q):
                    for b in range(q):
                        M[a, b] = Ws[3 * P[a], 3 * P[b]]
                    for j in range(6 * ne):
                        EP[a, j] = Es[3 * P[a], j]
                Ps[s] = P[:q].copy()
                if q:
                    try:                           # dependent rows (a singular block): no solve
                        Minvs[s] = np.ascontiguousarray(np.linalg.inv(M))
                    except Exception:  # noqa: BLE001 - numba raises its LinAlgError as Exception
                        Ps[s] = np.full(1, -1, np.int64)       # (no set matches it: formed again)
                        return False
                    XEs[s] = Minvs[s] @ EP
                else:
                    Minvs[s] = M
                    XEs[s] = EP
        P, Minv, XE = Ps[s], Minvs[s], XEs[s]
        q = P.shape[0]
        Xr = np.zeros(q)
        for a in range(q):
            for b in range(q):
                Xr[a] += Minv[a, b] * r[c0 + P[b]]
        for e in range(ne):
            j = end_cut[e0 + e]
            for p in range(6):
                acc = 0.0
                for a in range(q):
                    acc += Rs[6 * e + p, 3 * P[a]] * Xr[a]
                k[6 * j + p] += acc
                for f in range(ne):
                    i2 = end_cut[e0 + f]
                    for t in range(6):
                        acc = 0.0
                        for a in range(q):
                            acc += Rs[6 * e + p, 3 * P[a]] * XE[a, 6 * f + t]
                        K[6 * j + p, 6 * i2 + t] -= acc
        for a in range(q):
            x[c0 + P[a]] = Xr[a]                   # the X_E F part below, once F is known
    if nc:
        try:
            Fn = np.linalg.solve(K, k)
        except Exception:  # noqa: BLE001
            return False
        for j in range(nc):
            for p in range(6):
                F[j, p] = Fn[6 * j + p]
    for s in range(c_off.shape[0] - 1):
        P, XE = Ps[s], XEs[s]
        c0 = c_off[s]
        e0, ne = end_off[s], end_off[s + 1] - end_off[s]
        for a in range(P.shape[0]):
            v = 0.0
            for e in range(ne):
                for t in range(6):
                    v += XE[a, 6 * e + t] * F[end_cut[e0 + e], t]
            x[c0 + P[a]] += v
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return False
    return True


@njit(cache=True)
def _coupled_normals(c_off, w_off, W, Wt, ufree, e_off, E, R, end_off, end_cut, bn, mu, nexp, lam, U, S, F,
                     cache):
    """``_normals_round`` until a round scales no friction force into its disk (its friction held
    was then the solution's), at most NORMALS_ROUNDS: (rounds, pivots, met).  `cache`:
    ``_normals_solve``'s (``_normals_cache``)."""
    pivots = 0
    for k in range(NORMALS_ROUNDS):
        got, ok, scaled = _normals_round(c_off, w_off, W, Wt, ufree, e_off, E, R, end_off, end_cut, bn, mu, nexp,
                                         lam, U, S, F, cache)
        pivots += got
        if not ok:
            return k + 1, pivots, False
        if not scaled:
            return k + 1, pivots, True
    return NORMALS_ROUNDS, pivots, False


@njit(cache=True)
def _normals_cache(ns):
    """``_normals_solve``'s cache for ns subsystems, empty: (sets, W_PP^-1, X_E)."""
    return ([np.full(1, -1, np.int64) for _ in range(ns)], [np.zeros((0, 0)) for _ in range(ns)],
            [np.zeros((0, 0)) for _ in range(ns)])


@njit(cache=True)
def _end_on_normals(c_off, w_off, W, Wt, ufree, e_off, E, R, end_off, end_cut, bn, mu, nexp, lam, S, S_inv, U, F,
                    settle, tol, regulated, xi, alpha, bins, freeze):
    """``subsystems``' end with the pgs_subspace kernel: the coupled normal solve
    (``_coupled_normals``), `settle` more passes of ``iterate`` (the friction answers the new
    normal forces), the coupled normal solve again -- sharing one cache.  lam, F in place;
    returns (the passes, (rounds, pivots, met) of the last solve)."""
    cache = _normals_cache(c_off.shape[0] - 1)
    _coupled_normals(c_off, w_off, W, Wt, ufree, e_off, E, R, end_off, end_cut, bn, mu, nexp, lam, U, S, F, cache)
    lam2, F2, passes, _, _ = iterate(c_off, w_off, W, Wt, ufree, e_off, E, R, end_off, end_cut, bn, mu, nexp, lam, S,
                                     S_inv, U, F, settle, tol, regulated, xi, alpha, bins, freeze, True)
    lam[:, :] = lam2
    F[:, :] = F2
    last = _coupled_normals(c_off, w_off, W, Wt, ufree, e_off, E, R, end_off, end_cut, bn, mu, nexp, lam, U, S, F,
                            cache)
    return passes, last
# ``subsystems`` with the pgs_subspace kernel: the passes between its two coupled normal solves,
# in which the friction answers the new normal forces.  One solve at the end of the sweeps held
# the 80- and 160-link windings (20-60 um over 7 s) but threw the 40-link coil within 0.25 s
# (the friction it held was the unconverged sweeps', 0.6 of V off on a captured step); a second
# solve after 5 / 10 / 15 more passes held it at 0.28 / 0.13 / 0.12 mm, +0.3 / +0.5 / +0.6 ms a
# step at 160 links (docs/cable.md "Solvers 2 and 3 holding the coil")
SETTLE_PASSES = 10


@njit(cache=True)
def _normals_round(c_off, w_off, W, Wt, ufree, e_off, E, R, end_off, end_cut, bn, mu, nexp, lam, U, S, F, cache):
    """The subsystem solvers' end with the ``pgs_subspace`` kernel (``solver_pgs.pgs_subspace``
    ends its solve the same way, and that step is what holds a stiff chain): every contact's
    normal force at once, across the subsystems, with the cut forces eliminated and the
    friction held -- the LCP  0 <= x _|_ D x - c >= 0  of the island's normal rows,
    D = W_nn - E_n S^-1 R_n (the subsystems' Delassus blocks and the cut couplings' low-rank
    term, eqs. (11)-(12)), never formed: each set's solve is ``_normals_solve``'s block
    elimination.  Block principal pivoting (Judice and Pires): the set starts as the contacts
    with a normal force; every infeasible index (a force < 0 in the set, a row approaching
    faster than its target outside it) flips while their count falls (three tries more once
    it does not), then the largest alone (Murty's rule, finite).  Why not the subsystems'
    own subspace steps with the cut forces held, alternating with the cut forces: the wound
    coil's hoop mode crosses the cuts, and on the 160-link winding the alternation gained ~1 %
    a round.  On success lam's normal forces are the solution's, each friction force scaled into
    its disk where its normal force shrank, and F solves S F = U + C lambda for the final lambda
    (the cut couplings exact); returns (pivots, True, whether a friction force was scaled:
    then the friction held was not the solution's, ``_coupled_normals`` goes round again).
    Otherwise lam and F are left alone: (pivots, False, False)."""
    m = bn.shape[0]
    nc = F.shape[0]
    ns = c_off.shape[0] - 1
    lf = lam.copy()                          # the friction alone: the normal forces are the unknowns
    for i in range(m):
        lf[i, 0] = 0.0
    a = np.empty(3 * m)                      # u with the friction alone and no cut force
    zero = np.zeros((nc, 6))
    n_end = end_cut.shape[0]
    y = np.empty((n_end, 6))
    for s in range(ns):
        _residual(s, c_off, w_off, Wt, ufree, e_off, end_off, end_cut, E, lf, zero, a)
        _ends(s, c_off, end_off, e_off, R, lf, y)
    Up = np.empty((nc, 6))
    _pulled(U, end_cut, y, Up)
    r = np.empty(m)
    scale = 1.0
    for i in range(m):
        r[i] = bn[i] - a[3 * i]
        scale = max(scale, 1.0 + abs(bn[i]))
    tol = NORMALS_TOL * scale
    inP = np.empty(m, np.bool_)
    for i in range(m):
        inP[i] = lam[i, 0] > 0.0
    x = np.zeros(m)
    Fx = np.empty((nc, 6))
    un = np.empty(m)
    flip = np.empty(m, np.bool_)
    sub = np.empty(m, np.int64)              # each contact's subsystem
    for s in range(ns):
        for i in range(c_off[s], c_off[s + 1]):
            sub[i] = s
    dirty = np.ones(ns, np.bool_)
    best, tries = m + 1, 3
    pivots = 0
    ok = False
    for _ in range(PIVOTS_PER_CONTACT * m + 1):
        if not _normals_solve(inP, dirty, cache, c_off, w_off, W, e_off, E, R, end_off, end_cut, r, S, Up, x, Fx):
            return pivots, False, False
        _normal_rows(c_off, w_off, W, e_off, E, end_off, end_cut, a, x, Fx, un)
        bad = 0
        last = -1
        for i in range(m):             # infeasible: a force < 0 in the set, a row violated outside it
            flip[i] = (inP[i] and x[i] < 0.0) or (not inP[i] and bn[i] - un[i] > tol)
            if flip[i]:
                bad += 1
                last = i
        if bad == 0:
            ok = True
            break
        pivots += 1
        if bad < best:
            best, tries = bad, 3
        elif tries > 0:
            tries -= 1
        else:
            inP[last] = not inP[last]
            dirty[sub[last]] = True
            continue
        for i in range(m):
            if flip[i]:
                inP[i] = not inP[i]
                dirty[sub[i]] = True
    if not ok:
        return pivots, False, False
    scaled = False
    for i in range(m):
        lam[i, 0] = x[i] if inP[i] else 0.0
        nt = np.sqrt(lam[i, 1] ** 2 + lam[i, 2] ** 2)
        lim = solver_pgs.friction_limit(mu[i], nexp[i], lam[i, 0])
        if nt > lim:
            sc = lim / nt if nt > 0.0 else 0.0
            lam[i, 1] *= sc
            lam[i, 2] *= sc
            scaled = True
    for s in range(ns):                      # the cut forces for the final lambda (eq. (12))
        _ends(s, c_off, end_off, e_off, R, lam, y)
    if nc:
        rhs = np.empty((nc, 6))
        _pulled(U, end_cut, y, rhs)
        Fn = np.linalg.solve(S, rhs.ravel())
        for j in range(nc):
            for p in range(6):
                F[j, p] = Fn[6 * j + p]
    return pivots, True, scaled


@njit(cache=True)
def _normal_rows(c_off, w_off, W, e_off, E, end_off, end_cut, a, x, F, un):
    """un (m,) = the normal rows of a + W x - E F (x normal forces only)."""
    for s in range(c_off.shape[0] - 1):
        c0, ms = c_off[s], c_off[s + 1] - c_off[s]
        e0, ne = end_off[s], end_off[s + 1] - end_off[s]
        n3 = 3 * ms
        Ws = W[w_off[s]:w_off[s] + n3 * n3].reshape((n3, n3))
        Es = E[e_off[s]:e_off[s] + n3 * 6 * ne].reshape((n3, 6 * ne))
        for i in range(ms):
            v = a[3 * (c0 + i)]
            for j in range(ms):
                if x[c0 + j] != 0.0:
                    v += Ws[3 * i, 3 * j] * x[c0 + j]
            for e in range(ne):
                for t in range(6):
                    v -= Es[3 * i, 6 * e + t] * F[end_cut[e0 + e], t]
            un[c0 + i] = v


# ``iterate``'s `freeze`: once eq. (16) has undone FREEZE_AFTER passes' sweeps in a row, the
# sweeps are skipped while the cut forces converge (the same numbers where the undone sweeps
# would have run on to the end, as on the winding: bit for bit over 100 steps at 160 links, 47
# passes a step, ~22 of them skipped; ``iterate``)
FREEZE_UNDONE = True
FREEZE_AFTER = 2


def subsystems(model, state, solver, sub: Contacts, g, blk, a, b, A_ab, V_prev, dt, warm, kc, theta,
               regulated: bool = False):
    """Solver 2 (seed 002 Algorithm 1; with `regulated`, Solver 3).  The island's bodies are cut
    into n_s runs of consecutive bodies (``partition``); a coupling between two runs is *cut*.

    A cut coupling k (body a in one subsystem, b in another) as the step has it: the diagonal
    terms A_aa, A_bb, the off-diagonal A_ab and the right-hand sides r_a, r_b
    (``couplings.apply`` on the one coupling, into zero blocks, at the step's turns).  Any such
    midpoint spring-damper is the coupling  F = F0 + H (G_a V_a - G_b V_b)  with b getting
    G_b^T F and a getting -G_a^T F (``couplings`` module docstring); the same terms come from
    G_a = I, H = A_aa, G_b = -A_aa^-1 A_ab, F0 = -r_a (A_aa = G_a^T H G_a, A_ab = -G_a^T H G_b,
    A_bb = G_b^T H G_b = A_ab^T A_aa^-1 A_ab, r_b = G_b^T F0 all check), which needs H = A_aa
    positive definite: stiffness or damping in all six rows (a ball joint cannot be cut).
    With P_k V = G_a V_a - G_b V_b (P_k: I at a, -G_b at b), the subsystems' matrix A0 (the
    island's blocks WITHOUT the cut couplings' terms, block diagonal over the subsystems) and
    right-hand side B0:
        A0 V = B0 + J^T lambda - sum_k P_k^T F_k,     H_k^-1 (F_k - F0_k) = P_k V,
    so, eliminating V (eqs. (10)-(12) in our form):
        S F = U + C lambda,   S = diag(H_k^-1) + P A0^-1 P^T,   U = H^-1 F0 + P A0^-1 B0,
        C = P A0^-1 J^T,
    S block tridiagonal on a chain (S_k,k+1 = -G_b,k (A0^-1)_{b_k a_k+1} I^T through the shared
    subsystem).  The print's S_ii = 2/T K^-1 + ...: its unknown is the midpoint velocity and
    its H = K T/2 (no damping); ours is V+, where H = (K T/2 + D)/2 (``couplings``), so the
    first term is H^-1 = 4/(K T) undamped -- the same physics.  Its S_i^j has the wrong
    subsystem index and sign: the shared subsystem's A^-1 enters, with -G_b.  And per
    subsystem i, the contacts (eq. (15)):  u_i = J_i A_i^-1 B_i + W_i lambda_i - J_i A_i^-1 P_i^T F.

    Per step (Algorithm 1): each subsystem factorized on its blocks (``factorized``) with its
    Delassus operator W_i, E_i = J_i A_i^-1 P_i^T, R_i = P_i A_i^-1 J_i^T, and its share of S
    and U; then ``iterate``.  Warm start: the cut forces of the previous step
    (``types.Warm.cut``) and the contact forces (``solver_sor.warm_start``).  Without contacts
    F = S^-1 U directly (the seed's remark after eq. (12)).  Stops where no cut force and no
    contact force changes by more than ``island_tolerance``: the print stops on lambda_cp only,
    which with one subsystem (no cut) would stop after one sweep.  The contacts' normal targets
    are ``solver_pgs.normal_targets`` (PGS's capped ones; no push-out budget), so the
    converged solution is the one ``direct`` finds with solver "pgs"."""
    p = model.contact
    name = "subsystems_regulated" if regulated else "subsystems"
    if theta is None:
        raise ValueError(f"island solver {name!r}: needs the step's turns (step.solve(..., theta))")
    k, m = g.size, len(sub)
    body, other = sub.bodies(), sub.others()
    label = partition(k, p.subsystems, body, other, p.subsystem_split)
    ns = int(label.max()) + 1
    cut = np.flatnonzero(label[a] != label[b])
    nc = cut.size
    cp = model.couplings
    gk = kc[cut]
    # the cut couplings' terms, each into zero blocks of its own (bodies 2j, 2j+1)
    A_loc, b_loc = blk.A[g].copy(), blk.b[g].copy()
    H_inv, Gb_eq, F0 = np.zeros((nc, 6, 6)), np.zeros((nc, 6, 6)), np.zeros((nc, 6))
    if nc:
        glob = np.empty(2 * nc, np.int64)
        glob[0::2], glob[1::2] = cp.a[gk], cp.b[gk]
        one = _cut_alone(cp, gk)
        Az, rz = np.zeros((2 * nc, 6, 6)), np.zeros((2 * nc, 6))
        Aab_c, _ = couplings.apply(one, state.p_w[glob], state.R_wb[glob], state.V[glob], dt, Az, rz, theta[glob])
        bad = _cut_split(Az, rz, Aab_c, A_ab[cut], a[cut], b[cut], A_loc, b_loc, H_inv, Gb_eq, F0)
        if bad == -2:
            raise ValueError(f"island solver {name!r}: a cut coupling's terms differ from the step's "
                             "(theta is not the step's turns)")
        if bad >= 0:
            raise ValueError(f"island solver {name!r}: cut coupling {int(gk[bad])} has no stiffness or damping "
                             "in some row (H = A_aa not positive definite): a ball joint cannot be cut; "
                             "use island_solver 'direct' or stiffen the coupling")
    inner = np.ones(len(kc), bool)
    inner[cut] = False
    if m:
        Gb, Go, Cf = frames.contact_rows(sub.x_w, sub.n_w, body, other, state.p_w[g], state.R_wb[g])
    else:
        Gb, Go, Cf = np.zeros((0, 3, 6)), np.zeros((0, 3, 6)), np.zeros((0, 3, 3))
    # the contacts subsystem by subsystem (by, c_off); each cut coupling's two ends subsystem by
    # subsystem (end_off): its index, body and block of P^T there (I at a, -G_b^T at b)
    plan = Plan(*_plan(label, ns, a, b, inner, body, other, cut, Gb_eq, numba.get_num_threads()))
    by, c_off, end_cut, end_body, end_M, end_off = plan[:6]
    S, U = np.zeros((6 * nc, 6 * nc)), np.ascontiguousarray((H_inv @ F0[:, :, None])[:, :, 0])
    if _is_tree(k, a, b):                          # a chain, a tree: Algorithm 1 lines 2-10 in parallel
        prep = _prepare_parallel(plan, A_loc, b_loc, A_ab, Gb, Go)
    else:                                          # a loop in the couplings: each subsystem by a sparse LU
        prep = _prepare_serial(label, ns, A_loc, b_loc, a, b, inner, A_ab, Gb, Go, body, other, by, c_off,
                               end_cut, end_body, end_M, end_off)
    W_all, E_all, R_all, ufree, Q, q, recover = prep
    S_inv = np.empty((nc, 6, 6))                   # S's diagonal blocks inverted (eq. (13)'s sweep)
    _assemble(end_off, end_cut, Q, plan.q_off, q, H_inv, S, U, S_inv)
    lam = np.zeros((m, 3))
    passes, capped = 0, False
    F = np.zeros((nc, 6))
    if state.warm is not None and state.warm.cut is not None and len(state.warm.cut) == len(cp):
        F = state.warm.cut[gk].copy()
    if m == 0:
        F = np.linalg.solve(S, U.ravel()).reshape(nc, 6) if nc else F
    else:
        mu, beta = materials.per_contact(model, sub)
        nexp = materials.exponents(model, sub)
        nexp = np.ones(m) if nexp is None else nexp
        u_prev = blocktree.gather(Gb, Go, body, other, V_prev.reshape(k, 6, 1))[0::3, 0]
        d = sub.d
        bn = np.where(d >= 0.0, np.minimum(0.0, -2.0 * d / dt - u_prev),       # solver_pgs.normal_targets
                      np.minimum(-beta * d / dt, -u_prev))
        lam0 = solver_sor.warm_start(sub, Cf, warm)[0]
        bn_s, mu_s, nexp_s = bn[by], mu[by], nexp[by]
        Wt = np.empty(W_all.shape[0])
        lam_s, F, passes, capped, _ = iterate(
            c_off, plan.w_off, W_all, Wt, ufree, plan.e_off, E_all, R_all, end_off, end_cut,
            bn_s, mu_s, nexp_s, lam0[by], S, S_inv, U.reshape(nc, 6), F,
            p.island_iterations, p.island_tolerance, regulated, p.regulation_xi, p.regulation_alpha,
            plan.sweep_bins, FREEZE_UNDONE)
        if p.solver == "pgs_subspace":              # the kernel that holds a stiff chain: end on its step
            more, _ = _end_on_normals(
                c_off, plan.w_off, W_all, Wt, ufree, plan.e_off, E_all, R_all, end_off, end_cut, bn_s, mu_s, nexp_s,
                lam_s, S, S_inv, U.reshape(nc, 6), F, min(SETTLE_PASSES, p.island_iterations), p.island_tolerance,
                regulated, p.regulation_xi, p.regulation_alpha, plan.sweep_bins, FREEZE_UNDONE)
            passes += more
        lam[by] = lam_s
    V = recover(lam[by], F)
    gen = np.zeros(6 * k)
    if m:
        gen = blocktree.spread(Gb, Go, body, other, lam, k).ravel()
    forces = np.einsum("mij,mj->mi", Cf, lam)
    sol = Solution(V.ravel(), lam, forces, gen, int(passes), capped=bool(capped), cut=F_by_coupling(len(kc), cut, F))
    return sol, V.ravel(), gen


def _is_tree(k: int, a, b) -> bool:
    """Whether the island's couplings between its k bodies (a, b) form a forest: then every
    subsystem is set up on its blocks in parallel (``_prepare_parallel``), else by a sparse LU
    one at a time (``_prepare_serial``)."""
    return bool(blocktree.tree(k, a, b)[0])


def _cut_alone(cp, gk) -> couplings.Couplings:
    """The cut couplings gk of cp, each between bodies 2j, 2j+1 of its own (``subsystems``' zero
    blocks), kept on cp for the next step while the cut is the same: a Couplings is constant,
    and the kernels' caches on it (``couplings._kinds``) then persist too."""
    got = cp.__dict__.get("_cut_cache")
    if got is not None and np.array_equal(got[0], gk):
        return got[1]
    one = subset(cp, gk)
    nc = gk.size
    one = type(one)(**{**{f.name: getattr(one, f.name) for f in fields(one)},
                       "a": np.arange(0, 2 * nc, 2, dtype=np.int64), "b": np.arange(1, 2 * nc, 2, dtype=np.int64)})
    object.__setattr__(cp, "_cut_cache", (gk.copy(), one))
    return one


@njit(cache=True)
def _assemble(end_off, end_cut, Q, q_off, q, H_inv, S, U, S_inv):
    """S += each subsystem's share P_s A_s^-1 P_s^T (Q, at q_off), then H^-1 on its diagonal;
    U += P_s A_s^-1 B_s (q), in place, subsystem by subsystem; S_inv (nc,6,6): S's diagonal
    blocks inverted."""
    for s in range(end_off.shape[0] - 1):
        e0, ne = end_off[s], end_off[s + 1] - end_off[s]
        Qs = Q[q_off[s]:q_off[s] + 36 * ne * ne].reshape((6 * ne, 6 * ne))
        for e in range(ne):
            j = end_cut[e0 + e]
            for p in range(6):
                U[j, p] += q[e0 + e, p]
            for f in range(ne):
                i = end_cut[e0 + f]
                for p in range(6):
                    for r in range(6):
                        S[6 * j + p, 6 * i + r] += Qs[6 * e + p, 6 * f + r]
    for j in range(H_inv.shape[0]):
        for p in range(6):
            for r in range(6):
                S[6 * j + p, 6 * j + r] += H_inv[j, p, r]
        S_inv[j] = np.linalg.inv(S[6 * j:6 * j + 6, 6 * j:6 * j + 6].copy())


@njit(cache=True)
def _stable_order(key, n):
    """(order, off): np.argsort(key, kind="stable") of keys 0..n-1 (a counting sort) and where
    each key's run starts in it (n+1,)."""
    off = np.zeros(n + 1, np.int64)
    for i in range(key.shape[0]):
        off[key[i] + 1] += 1
    for j in range(n):
        off[j + 1] += off[j]
    pos = off[:n].copy()
    order = np.empty(key.shape[0], np.int64)
    for i in range(key.shape[0]):
        order[pos[key[i]]] = i
        pos[key[i]] += 1
    return order, off


@njit(cache=True)
def _offsets(sizes):
    out = np.zeros(sizes.shape[0] + 1, np.int64)
    for j in range(sizes.shape[0]):
        out[j + 1] = out[j] + sizes[j]
    return out


@njit(cache=True)
def _cut_split(Az, rz, Aab_c, Aab, ca, cb, A_loc, b_loc, H_inv, Gb_eq, F0):
    """``subsystems``' cut couplings, each as F = F0 + H (G_a V_a - G_b V_b): from its terms alone
    (A_aa, A_bb at Az[2j], Az[2j+1], rz likewise, A_ab = Aab_c) H = A_aa (symmetrized), H_inv,
    G_b's equivalent -H^-1 A_ab and F0 = -r_a into the outputs; its terms taken out of the
    island's blocks A_loc, b_loc (every a-end, then every b-end).  Returns -1; -2 where Aab_c is
    not the step's Aab (beyond 1e-9 of the largest: other turns); j where H_j is not positive
    definite (its least eigenvalue <= 1e-12 of its largest)."""
    nc = Aab.shape[0]
    big, diff = 1.0, 0.0
    for j in range(nc):
        for p in range(6):
            for q in range(6):
                big = max(big, abs(Aab[j, p, q]))
                diff = max(diff, abs(Aab_c[j, p, q] - Aab[j, p, q]))
    if diff > 1e-9 * big:
        return -2
    H = np.empty((6, 6))
    for j in range(nc):
        for p in range(6):
            for q in range(6):
                H[p, q] = 0.5 * (Az[2 * j, p, q] + Az[2 * j, q, p])
        w = np.linalg.eigvalsh(H)
        if w[0] <= 1e-12 * max(w[5], 1e-300):
            return j
        Hi = np.linalg.inv(H)
        for p in range(6):
            F0[j, p] = -rz[2 * j, p]
            for q in range(6):
                H_inv[j, p, q] = Hi[p, q]
                v = 0.0
                for r in range(6):
                    v += Hi[p, r] * Aab[j, r, q]
                Gb_eq[j, p, q] = -v
    for end in range(2):
        for j in range(nc):
            body = ca[j] if end == 0 else cb[j]
            for p in range(6):
                b_loc[body, p] -= rz[2 * j + end, p]
                for q in range(6):
                    A_loc[body, p, q] -= Az[2 * j + end, p, q]
    return -1


class Plan(NamedTuple):
    """``_plan``'s layout of the subsystems (the kernels return a plain tuple): int64 arrays
    unless said; offsets (ns+1,) into the flat outputs."""
    by: np.ndarray          # (m,) the contacts subsystem by subsystem
    c_off: np.ndarray       # (ns+1,) each subsystem's first contact in `by`'s order
    end_cut: np.ndarray     # (2nc,) the cut ends subsystem by subsystem: the cut coupling of each
    end_body: np.ndarray    # (2nc,) its body (island numbering)
    end_M: np.ndarray       # (2nc,6,6) float, its block of P^T (I at a, -G_b^T at b)
    end_off: np.ndarray     # (ns+1,) each subsystem's first end
    b_off: np.ndarray       # (ns+1,) the body runs
    idx: np.ndarray         # (c_in,) the inner couplings (rows of A_ab) subsystem by subsystem
    i_off: np.ndarray       # (ns+1,) each subsystem's first inner coupling
    ia: np.ndarray          # (c_in,) their bodies, local to the subsystem
    ib: np.ndarray
    cb: np.ndarray          # (m,) the contacts' bodies local to their subsystem
    co: np.ndarray          # (m,) their other bodies, local, -1 the world
    w_off: np.ndarray       # W_s (3m_s x 3m_s)
    e_off: np.ndarray       # E_s (3m_s x 6n_e), R_s
    q_off: np.ndarray       # Q_s (6n_e x 6n_e)
    x_off: np.ndarray       # X_s (k_s x 6 x r_s)
    end_local: np.ndarray   # (2nc,) the ends' bodies, local
    setup_bins: np.ndarray  # (threads, L) the subsystems dealt by their setup's cost (``thread_bins``)
    back_bins: np.ndarray   # ... by their recovery's
    sweep_bins: np.ndarray  # ... by their contact sweep's


@njit(cache=True)
def _plan(label, ns, a, b, inner, body, other, cut, Gb_eq, threads):
    """``subsystems``' index arrays (the kernels' layout), every subsystem's in one pass: the
    fields of ``Plan``, in its order; the subsystems dealt to the `threads`."""
    m, nc = body.shape[0], cut.shape[0]
    key = np.empty(m, np.int64)
    for i in range(m):
        key[i] = label[body[i]]
    by, c_off = _stable_order(key, ns)
    ekey = np.empty(2 * nc, np.int64)
    for j in range(nc):
        ekey[j] = label[a[cut[j]]]
        ekey[nc + j] = label[b[cut[j]]]
    order, end_off = _stable_order(ekey, ns)
    end_cut, end_body = np.empty(2 * nc, np.int64), np.empty(2 * nc, np.int64)
    end_M = np.zeros((2 * nc, 6, 6))
    for e in range(2 * nc):
        i = order[e]
        j = i if i < nc else i - nc
        end_cut[e] = j
        if i < nc:
            end_body[e] = a[cut[j]]
            for p in range(6):
                end_M[e, p, p] = 1.0
        else:
            end_body[e] = b[cut[j]]
            for p in range(6):
                for q in range(6):
                    end_M[e, p, q] = -Gb_eq[j, q, p]
    b_off = _stable_order(label, ns)[1]            # the runs: label is sorted
    n_in = 0
    for c in range(a.shape[0]):
        n_in += inner[c]
    idx0, ikey = np.empty(n_in, np.int64), np.empty(n_in, np.int64)
    n_in = 0
    for c in range(a.shape[0]):
        if inner[c]:
            idx0[n_in] = c
            ikey[n_in] = label[a[c]]
            n_in += 1
    io, i_off = _stable_order(ikey, ns)
    idx = idx0[io]
    ia, ib = np.empty(n_in, np.int64), np.empty(n_in, np.int64)
    for i in range(n_in):
        ia[i] = a[idx[i]] - b_off[label[a[idx[i]]]]
        ib[i] = b[idx[i]] - b_off[label[b[idx[i]]]]
    cb, co = np.empty(m, np.int64), np.empty(m, np.int64)
    for i in range(m):
        cb[i] = body[by[i]] - b_off[label[body[by[i]]]]
        ob = other[by[i]]
        co[i] = ob - b_off[label[ob]] if ob >= 0 else -1
    end_local = np.empty(2 * nc, np.int64)
    for e in range(2 * nc):
        end_local[e] = end_body[e] - b_off[label[end_body[e]]]
    sw, se, sq, sx = np.empty(ns, np.int64), np.empty(ns, np.int64), np.empty(ns, np.int64), np.empty(ns, np.int64)
    setup, back = np.empty(ns), np.empty(ns)
    for s in range(ns):
        ms, ne, ks = c_off[s + 1] - c_off[s], end_off[s + 1] - end_off[s], b_off[s + 1] - b_off[s]
        r = 1 + 3 * ms + 6 * ne                     # X's columns: B, J^T, P^T
        sw[s], se[s], sq[s], sx[s] = 9 * ms * ms, 18 * ms * ne, 36 * ne * ne, 6 * ks * r
        setup[s], back[s] = ks * r + 3 * ms * r, ks * r
    return (by, c_off, end_cut, end_body, end_M, end_off, b_off, idx, i_off, ia, ib, cb, co,
            _offsets(sw), _offsets(se), _offsets(sq), _offsets(sx), end_local,
            thread_bins(setup, threads), thread_bins(back, threads), thread_bins(sweep_cost(c_off), threads))


@njit(cache=True)
def _prepare_one(s, b_off, A_loc, b_loc, i_off, ia, ib, Aab, Aba, c_off, Gb, Go, cb, co, end_off, end_body, end_M,
                 w_off, e_off, q_off, x_off, W, E, R, ufree, Q, q, X):
    """Subsystem s's factorization (``blocktree``) and X = A_s^-1 [B_s | J_s^T | P_s^T], then its
    W_s = J_s X_ct, E_s = J_s X_cp, R_s = P_s X_ct, u_free = J_s X_B, its share of S (Q_s = P_s X_cp)
    and of U (q = P_s X_B), into the flat outputs at its offsets."""
    k0, ks = b_off[s], b_off[s + 1] - b_off[s]
    c0, ms = c_off[s], c_off[s + 1] - c_off[s]
    e0, ne = end_off[s], end_off[s + 1] - end_off[s]
    i0, i1 = i_off[s], i_off[s + 1]
    a_s, b_s = ia[i0:i1].copy(), ib[i0:i1].copy()
    Aab_s, Aba_s = Aab[i0:i1].copy(), Aba[i0:i1].copy()
    _, order, parent, edge = blocktree.tree(ks, a_s, b_s)
    LU, piv, Y = blocktree.factor(A_loc[k0:k0 + ks].copy(), order, parent, edge, a_s, Aab_s, Aba_s)
    r = 1 + 3 * ms + 6 * ne
    # the right-hand sides are solved where X keeps them; the products go straight into W, E,
    # u_free (no (k,6,3m), (3m,r) arrays of their own: ~1 MB less to write a step at 160 links)
    rhs = X[x_off[s]:x_off[s + 1]].reshape((ks, 6, r))
    rhs[:, :, :] = 0.0
    for i in range(ks):
        for j in range(6):
            rhs[i, j, 0] = b_loc[k0 + i, j]
    Gb_s, Go_s, cb_s, co_s = Gb[c0:c0 + ms].copy(), Go[c0:c0 + ms].copy(), cb[c0:c0 + ms].copy(), co[c0:c0 + ms].copy()
    if ms:
        blocktree.scatter_into(Gb_s, Go_s, cb_s, co_s, rhs, 1)
    for e in range(ne):
        rhs[end_body[e0 + e], :, 1 + 3 * ms + 6 * e:1 + 3 * ms + 6 * e + 6] = end_M[e0 + e]
    blocktree.solve(LU, piv, Y, order, parent, edge, a_s, Aab_s, Aba_s, rhs)
    Pt = np.zeros((6 * ne, r))                     # P_s X: the end's block of P is end_M^T
    for e in range(ne):
        Pt[6 * e:6 * e + 6] = end_M[e0 + e].T @ rhs[end_body[e0 + e]]
    if ms:
        for out, col0 in ((ufree[3 * c0:3 * c0 + 3 * ms].reshape((3 * ms, 1)), 0),
                          (W[w_off[s]:w_off[s + 1]].reshape((3 * ms, 3 * ms)), 1),
                          (E[e_off[s]:e_off[s + 1]].reshape((3 * ms, 6 * ne)), 1 + 3 * ms)):
            out[:, :] = 0.0
            blocktree.gather_into(Gb_s, Go_s, cb_s, co_s, rhs, col0, out)
        R[e_off[s]:e_off[s + 1]].reshape((6 * ne, 3 * ms))[:, :] = Pt[:, 1:1 + 3 * ms]
    Q[q_off[s]:q_off[s + 1]].reshape((6 * ne, 6 * ne))[:, :] = Pt[:, 1 + 3 * ms:]
    for e in range(ne):
        for j in range(6):
            q[e0 + e, j] = Pt[6 * e + j, 0]


@njit(cache=True, parallel=True)
def _prepare_all(bins, b_off, A_loc, b_loc, i_off, ia, ib, Aab, Aba, c_off, Gb, Go, cb, co, end_off, end_body, end_M,
                 w_off, e_off, q_off, x_off, W, E, R, ufree, Q, q, X):
    for t in prange(bins.shape[0]):                # Algorithm 1 lines 2-10: in parallel
        for j in range(bins.shape[1]):
            s = bins[t, j]
            if s < 0:
                break
            _prepare_one(s, b_off, A_loc, b_loc, i_off, ia, ib, Aab, Aba, c_off, Gb, Go, cb, co, end_off, end_body,
                         end_M, w_off, e_off, q_off, x_off, W, E, R, ufree, Q, q, X)


@njit(cache=True, parallel=True)
def _recover(bins, b_off, c_off, end_off, end_cut, x_off, X, lam, F, V):
    """Algorithm 1 line 23, in parallel: V_s = X_B + X_ct lambda_s - X_cp F_ends per subsystem."""
    for t in prange(bins.shape[0]):
        for j in range(bins.shape[1]):
            s = bins[t, j]
            if s < 0:
                break
            _recover_one(s, b_off, c_off, end_off, end_cut, x_off, X, lam, F, V)


@njit(cache=True)
def _recover_one(s, b_off, c_off, end_off, end_cut, x_off, X, lam, F, V):
    """``_recover``'s subsystem s."""
    k0, ks = b_off[s], b_off[s + 1] - b_off[s]
    c0, ms = c_off[s], c_off[s + 1] - c_off[s]
    e0, ne = end_off[s], end_off[s + 1] - end_off[s]
    r = 1 + 3 * ms + 6 * ne
    Xs = X[x_off[s]:x_off[s + 1]].reshape((ks, 6, r))
    for i in range(ks):
        for j in range(6):
            v = Xs[i, j, 0]
            for c in range(ms):
                for t in range(3):
                    v += Xs[i, j, 1 + 3 * c + t] * lam[c0 + c, t]
            for e in range(ne):
                for t in range(6):
                    v -= Xs[i, j, 1 + 3 * ms + 6 * e + t] * F[end_cut[e0 + e], t]
            V[k0 + i, j] = v


def _prepare_parallel(plan: Plan, A_loc, b_loc, A_ab, Gb, Go):
    """Every subsystem's setup in one parallel kernel (``_prepare_all``) on ``_plan``'s layout;
    returns (W, E, R, u_free, Q, q, recover(lambda sorted, F) -> V (k,6)), at the plan's offsets."""
    P = plan
    Aab = np.ascontiguousarray(A_ab[P.idx])
    Aba = np.ascontiguousarray(Aab.transpose(0, 2, 1))
    # every entry is written by its subsystem's _prepare_one
    W, E, R = np.empty(P.w_off[-1]), np.empty(P.e_off[-1]), np.empty(P.e_off[-1])
    ufree, Q, X = np.empty(3 * P.by.size), np.empty(P.q_off[-1]), np.empty(P.x_off[-1])
    q = np.empty((P.end_cut.size, 6))
    _prepare_all(P.setup_bins, P.b_off, np.ascontiguousarray(A_loc), np.ascontiguousarray(b_loc), P.i_off, P.ia, P.ib,
                 Aab, Aba, P.c_off, np.ascontiguousarray(Gb[P.by]), np.ascontiguousarray(Go[P.by]), P.cb, P.co,
                 P.end_off, P.end_local, P.end_M, P.w_off, P.e_off, P.q_off, P.x_off, W, E, R, ufree, Q, q, X)

    def recover(lam_sorted, F):
        V = np.empty((A_loc.shape[0], 6))
        _recover(P.back_bins, P.b_off, P.c_off, P.end_off, P.end_cut, P.x_off, X, lam_sorted, F, V)
        return V
    return W, E, R, ufree, Q, q, recover


def _prepare_serial(label, ns, A_loc, b_loc, a, b, inner, A_ab, Gb, Go, body, other, by, c_off,
                    end_cut, end_body, end_M, end_off):
    """``_prepare_parallel`` one subsystem at a time, each factorized by ``factorized`` (a sparse LU
    where its couplings close a loop); W, E, R, Q concatenated subsystem by subsystem, at
    ``Plan``'s offsets."""
    k, m = A_loc.shape[0], by.size
    pos = np.empty(k, np.int64)
    W_parts, E_parts, R_parts, Q_parts, ufree = [], [], [], [], np.zeros(3 * m)
    q = np.zeros((end_cut.size, 6))
    keep = []
    for s in range(ns):
        bs = np.flatnonzero(label == s)
        pos[bs] = np.arange(bs.size)
        own = inner & (label[a] == s)
        inv = factorized(np.ascontiguousarray(A_loc[bs]), pos[a[own]], pos[b[own]], np.ascontiguousarray(A_ab[own]))
        rows = by[c_off[s]:c_off[s + 1]]
        ms = rows.size
        e0, ne = end_off[s], end_off[s + 1] - end_off[s]
        rhs = np.zeros((bs.size, 6, 1 + 3 * ms + 6 * ne))
        rhs[:, :, 0] = b_loc[bs]
        ob = np.where(other[rows] >= 0, pos[np.maximum(other[rows], 0)], -1)
        if ms:
            rhs[:, :, 1:1 + 3 * ms] = blocktree.scatter(Gb[rows], Go[rows], pos[body[rows]], ob, bs.size)
        for e in range(ne):
            rhs[pos[end_body[e0 + e]], :, 1 + 3 * ms + 6 * e:1 + 3 * ms + 6 * e + 6] = end_M[e0 + e]
        X = inv(rhs)
        Pt = np.zeros((6 * ne, X.shape[2]))
        for e in range(ne):
            Pt[6 * e:6 * e + 6] = end_M[e0 + e].T @ X[pos[end_body[e0 + e]]]
        if ms:
            JX = blocktree.gather(Gb[rows], Go[rows], pos[body[rows]], ob, X)
            ufree[3 * c_off[s]:3 * c_off[s + 1]] = JX[:, 0]
            W_parts.append(JX[:, 1:1 + 3 * ms].ravel())
            E_parts.append(JX[:, 1 + 3 * ms:].ravel())
            R_parts.append(Pt[:, 1:1 + 3 * ms].ravel())
        Q_parts.append(Pt[:, 1 + 3 * ms:].ravel())
        q[e0:e0 + ne] = Pt[:, 0].reshape(ne, 6)
        keep.append((bs, ms, e0, ne, X))

    def recover(lam_sorted, F):
        V = np.empty((k, 6))
        for s, (bs, ms, e0, ne, X) in enumerate(keep):
            c0 = c_off[s]
            coef = np.concatenate([[1.0], lam_sorted[c0:c0 + ms].ravel(), -F[end_cut[e0:e0 + ne]].ravel()])
            V[bs] = np.einsum("ijr,r->ij", X, coef)
        return V
    return _cat(W_parts), _cat(E_parts), _cat(R_parts), ufree, _cat(Q_parts), q, recover


def _cat(parts: list) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0)


def F_by_coupling(n: int, cut: np.ndarray, F: np.ndarray) -> np.ndarray:
    """(n,6): the cut couplings' forces at their rows among the island's n couplings, zero elsewhere."""
    out = np.zeros((n, 6))
    out[cut] = F
    return out


def subsystems_regulated(model, state, solver, sub, g, blk, a, b, A_ab, V_prev, dt, warm, kc, theta):
    """Solver 3: ``subsystems`` with the post-regulation of seed 002 eq. (16)."""
    return subsystems(model, state, solver, sub, g, blk, a, b, A_ab, V_prev, dt, warm, kc, theta, regulated=True)


ISLAND_SOLVERS = {"direct": direct, "direct_dense": direct_dense, "subsystems": subsystems,
                  "subsystems_regulated": subsystems_regulated}
NEEDS_TURNS = ("subsystems", "subsystems_regulated")    # the solvers that take cut couplings' terms out
