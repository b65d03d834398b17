"""The island's matrix factorized on its blocks when its couplings form a tree (a chain, a
branching cable): block elimination from the leaves to the root, no fill, linear in the
number of bodies.  A coupling graph with a cycle (an FEM mesh, a closed loop) is factorized by
a sparse LU instead (``contact.island_solvers.direct``).

The island's A (6k x 6k) has the bodies' blocks D_i on its diagonal and, per coupling e
between a[e] and b[e], A_ab[e] at (a, b) and A_ba[e] at (b, a) (``dynamics.couplings``: the
step's A_ba is A_ab's transpose; the couplings' Newton tangent is not symmetric).  ``matrix``
is the same system as a sparse matrix, for the LU of a graph with a cycle.
With the tree rooted at its lowest body and the bodies ordered children first (``tree``),
eliminating a leaf i with parent p from  D_i x_i + A_ip x_p = r_i  gives
    x_i = D_i^-1 r_i - Y_i x_p,   Y_i = D_i^-1 A_ip,
    D_p <- D_p - A_pi Y_i,        r_p <- r_p - A_pi D_i^-1 r_i,
so one pass children-first (``factor``: the updated D_i, LU with partial pivoting, and Y_i)
and, per right-hand side, one pass down and one back up (``solve``) -- 6 x 6 work per body,
no 6k x 6k matrix, no fill.  Without pivoting between blocks this is the block Cholesky of the
symmetric part with a small skew part (the Coriolis terms): the blocks are mass plus coupling
stiffness, positive definite, and their Schur complements stay so.

``scatter`` / ``gather``: the contacts' sparse Jacobian rows (a contact touches at most two
bodies, ``frames.contact_rows``) as block right-hand sides G^T, and G applied to block vectors:
the Delassus operator W = G X (3m x 3m) from X = A^-1 G^T in O(m^2), not the O(k m^2) of a
dense G^T X.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _find(par, i):
    while par[i] != i:
        par[i] = par[par[i]]
        i = par[i]
    return i


@njit(cache=True)
def components(n, a, b):
    """(label (n,), count): the connected components of the graph with edges (a[e], b[e]),
    numbered in the order of their first body."""
    par = np.arange(n)
    for e in range(a.shape[0]):
        x, y = _find(par, a[e]), _find(par, b[e])
        par[x] = y
    label = np.full(n, -1, np.int64)
    of_root = np.full(n, -1, np.int64)
    count = 0
    for i in range(n):
        r = _find(par, i)
        if of_root[r] < 0:
            of_root[r] = count
            count += 1
        label[i] = of_root[r]
    return label, count


@njit(cache=True)
def tree(k, a, b):
    """(ok, order (k,), parent (k,), edge (k,)) of the coupling graph on k bodies (couplings
    e join local bodies a[e], b[e], both >= 0): ok False where it has a cycle (two couplings
    between the same two bodies make one); else each tree rooted at its lowest body,
    ``order`` children before parents, ``parent`` -1 at a root, ``edge`` the coupling to the
    parent."""
    order = np.empty(k, np.int64)
    parent = np.full(k, -1, np.int64)
    edge = np.full(k, -1, np.int64)
    par = np.arange(k)
    c = a.shape[0]
    for e in range(c):
        x, y = _find(par, a[e]), _find(par, b[e])
        if x == y:
            return False, order, parent, edge
        par[x] = y
    start = np.zeros(k + 1, np.int64)            # adjacency, CSR
    for e in range(c):
        start[a[e] + 1] += 1
        start[b[e] + 1] += 1
    for i in range(k):
        start[i + 1] += start[i]
    fill = start[:-1].copy()
    nb = np.empty(2 * c, np.int64)
    ne = np.empty(2 * c, np.int64)
    for e in range(c):
        nb[fill[a[e]]], ne[fill[a[e]]] = b[e], e
        fill[a[e]] += 1
        nb[fill[b[e]]], ne[fill[b[e]]] = a[e], e
        fill[b[e]] += 1
    seen = np.zeros(k, np.bool_)
    bfs = np.empty(k, np.int64)
    n = 0
    for r in range(k):
        if seen[r]:
            continue
        seen[r] = True
        bfs[n] = r
        head, n = n, n + 1
        while head < n:
            i = bfs[head]
            head += 1
            for s in range(start[i], start[i + 1]):
                j = nb[s]
                if not seen[j]:
                    seen[j] = True
                    parent[j], edge[j] = i, ne[s]
                    bfs[n] = j
                    n += 1
    for t in range(k):
        order[t] = bfs[k - 1 - t]
    return True, order, parent, edge


@njit(cache=True)
def _lu6(M, piv):
    """M (6,6) in place: its LU with partial pivoting (piv: the row swapped in at each step)."""
    for j in range(6):
        p = j
        big = abs(M[j, j])
        for i in range(j + 1, 6):
            if abs(M[i, j]) > big:
                big, p = abs(M[i, j]), i
        piv[j] = p
        if p != j:
            for c in range(6):
                M[j, c], M[p, c] = M[p, c], M[j, c]
        inv = 1.0 / M[j, j]
        for i in range(j + 1, 6):
            M[i, j] *= inv
            f = M[i, j]
            for c in range(j + 1, 6):
                M[i, c] -= f * M[j, c]


@njit(cache=True)
def _lu6_solve(M, piv, X):
    """X (6,r) in place: M^-1 X from ``_lu6``'s factors."""
    r = X.shape[1]
    for j in range(6):
        p = piv[j]
        if p != j:
            for c in range(r):
                X[j, c], X[p, c] = X[p, c], X[j, c]
    for i in range(1, 6):
        xi = X[i]                                 # row views: the loops over c vectorize on them
        for j in range(i):
            f = M[i, j]
            xj = X[j]
            for c in range(r):
                xi[c] -= f * xj[c]
    for i in range(5, -1, -1):
        xi = X[i]
        for j in range(i + 1, 6):
            f = M[i, j]
            xj = X[j]
            for c in range(r):
                xi[c] -= f * xj[c]
        inv = 1.0 / M[i, i]
        for c in range(r):
            xi[c] *= inv


@njit(cache=True)
def _off(i, e, a, A_ab, A_ba, out, for_parent):
    """The block of coupling e in row i (for_parent False: A_ip) or in the parent's row
    (True: A_pi), into out (6,6)."""
    first = a[e] == i                             # A_ab[e] sits at (a, b): A_ip = A_ab if i is a
    if for_parent:
        first = not first
    for r in range(6):
        for c in range(6):
            out[r, c] = A_ab[e, r, c] if first else A_ba[e, r, c]


@njit(cache=True)
def factor(D, order, parent, edge, a, A_ab, A_ba):
    """(LU (k,6,6), piv (k,6), Y (k,6,6)): the updated diagonal blocks' LU factors and
    Y_i = D_i^-1 A_ip (module docstring); D (k,6,6) is not changed."""
    k = D.shape[0]
    LU = D.copy()
    piv = np.zeros((k, 6), np.int64)
    Y = np.zeros((k, 6, 6))
    B = np.empty((6, 6))
    for t in range(k):
        i = order[t]
        _lu6(LU[i], piv[i])
        p = parent[i]
        if p < 0:
            continue
        e = edge[i]
        _off(i, e, a, A_ab, A_ba, Y[i], False)
        _lu6_solve(LU[i], piv[i], Y[i])
        _off(i, e, a, A_ab, A_ba, B, True)         # A_pi
        for r in range(6):
            for c in range(6):
                s = 0.0
                for q in range(6):
                    s += B[r, q] * Y[i, q, c]
                LU[p, r, c] -= s
    return LU, piv, Y


@njit(cache=True)
def solve(LU, piv, Y, order, parent, edge, a, A_ab, A_ba, rhs):
    """rhs (k,6,r) in place: A^-1 rhs from ``factor``'s factors."""
    k, r = rhs.shape[0], rhs.shape[2]
    B = np.empty((6, 6))
    for t in range(k):                            # down: children first
        i = order[t]
        _lu6_solve(LU[i], piv[i], rhs[i])
        p = parent[i]
        if p < 0:
            continue
        _off(i, edge[i], a, A_ab, A_ba, B, True)   # r_p -= A_pi D_i^-1 r_i
        for q in range(6):
            out = rhs[p, q]                       # row views, as in _lu6_solve
            for j in range(6):
                f = B[q, j]
                src = rhs[i, j]
                for c in range(r):
                    out[c] -= f * src[c]
    for t in range(k - 1, -1, -1):                # up: parents first
        i = order[t]
        p = parent[i]
        if p < 0:
            continue
        for q in range(6):
            out = rhs[i, q]
            for j in range(6):
                f = Y[i, q, j]
                src = rhs[p, j]
                for c in range(r):
                    out[c] -= f * src[c]


def matrix(A_blocks, a, b, A_ab, A_ba):
    """The block system as a sparse CSC matrix (6k x 6k): A_blocks (k,6,6) on the diagonal,
    A_ab[e] at (a[e], b[e]) and A_ba[e] at (b[e], a[e]); couplings to the world (a < 0) add
    none."""
    from scipy import sparse
    k = A_blocks.shape[0]
    w = a >= 0
    a, b, A_ab, A_ba = a[w], b[w], A_ab[w], A_ba[w]
    ii, jj = np.meshgrid(np.arange(6), np.arange(6), indexing="ij")
    r = [(6 * np.arange(k)[:, None, None] + ii).ravel(), (6 * a[:, None, None] + ii).ravel(),
         (6 * b[:, None, None] + ii).ravel()]
    cl = [(6 * np.arange(k)[:, None, None] + jj).ravel(), (6 * b[:, None, None] + jj).ravel(),
          (6 * a[:, None, None] + jj).ravel()]
    v = [A_blocks.ravel(), A_ab.ravel(), A_ba.ravel()]
    return sparse.csc_matrix((np.concatenate(v), (np.concatenate(r), np.concatenate(cl))), shape=(6 * k, 6 * k))


# ---- the contacts' sparse rows on block vectors ------------------------------------------------

@njit(cache=True)
def scatter(Gb, Go, body, other, k):
    """G^T (k,6,3m): the contacts' rows as right-hand sides, column 3c+i the transpose of
    contact c's row i (on body[c], and other[c] where it is a body)."""
    out = np.zeros((k, 6, 3 * Gb.shape[0]))
    scatter_into(Gb, Go, body, other, out, 0)
    return out


@njit(cache=True)
def scatter_into(Gb, Go, body, other, out, col0):
    """``scatter``'s G^T added into out (k,6,r) at columns col0 .. col0 + 3m (in place: a
    subsystem's right-hand sides, without a (k,6,3m) array of their own)."""
    for c in range(Gb.shape[0]):
        for i in range(3):
            for j in range(6):
                out[body[c], j, col0 + 3 * c + i] += Gb[c, i, j]
                if other[c] >= 0:
                    out[other[c], j, col0 + 3 * c + i] += Go[c, i, j]


@njit(cache=True)
def spread(Gb, Go, body, other, lam, k):
    """G^T lambda (k,6): the contacts' forces lambda (m,3) as generalized forces on the blocks
    (``scatter``'s columns summed with their weights, without forming the (k,6,3m) array)."""
    out = np.zeros((k, 6))
    for c in range(Gb.shape[0]):
        for i in range(3):
            f = lam[c, i]
            for j in range(6):
                out[body[c], j] += Gb[c, i, j] * f
                if other[c] >= 0:
                    out[other[c], j] += Go[c, i, j] * f
    return out


@njit(cache=True)
def gather(Gb, Go, body, other, X):
    """G X (3m, r) for block vectors X (k,6,r)."""
    out = np.zeros((3 * Gb.shape[0], X.shape[2]))
    gather_into(Gb, Go, body, other, X, 0, out)
    return out


@njit(cache=True)
def gather_into(Gb, Go, body, other, X, col0, out):
    """(G X)'s columns col0 .. col0 + w added into out (3m, w) (in place: a subsystem's W, E and
    u_free each into its own output, without the whole (3m, r) product)."""
    w = out.shape[1]
    for c in range(Gb.shape[0]):
        for i in range(3):
            o = out[3 * c + i]                    # row views: the loops over q vectorize on them
            for j in range(6):
                f = Gb[c, i, j]
                x = X[body[c], j, col0:col0 + w]
                for q in range(w):
                    o[q] += f * x[q]
            if other[c] >= 0:
                for j in range(6):
                    f = Go[c, i, j]
                    x = X[other[c], j, col0:col0 + w]
                    for q in range(w):
                        o[q] += f * x[q]
