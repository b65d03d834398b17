"""Second-order balanced model reduction of a segment (seed 003 Sec. II-C, eqs. (7)-(9), (15)).

**What is balanced.**  The segment M x'' + D x' + K x = B u with inputs u the forces at its input
nodes (contact nodes and coupling nodes, Sec. III-B) and, as output, the positions at the same
nodes, y = B^T x (collocated: the contact and the coupling only ever see those).  Following the
second-order balancing the seed cites (Meyer and Srinivasan), the position controllability
gramian W_c,x and the position observability gramian W_o,x are balanced against each other
(eq. (8): R^T R = W_c,x, U Lambda^2 U^T = R W_o,x R^T, x = R^T U Lambda^-1/2 z) and the
states with the largest of those singular values are kept (eq. (9)).

**Gramians in closed form per mode pair.**  With K phi = omega^2 M phi (M-normalized modes) and
modal damping zeta, mode i's first-order state [q_i'; q_i] has A_i = [[-2 zeta w_i, -w_i^2],
[1, 0]] and input row B_i = [phi_i^T B; 0].  The gramian's (i, j) block solves the 2x2
Sylvester equation A_i P_ij + P_ij A_j^T + B_i B_j^T = 0, and B_i B_j^T = (phi_i^T B B^T
phi_j) E_11, so P_ij = (phi_i^T B B^T phi_j) X(w_i, w_j) with X from one 4x4 solve per pair
(vectorized), likewise the observability blocks with E_22.  Exact, and O(n^2) small solves
instead of an O((2n)^3) Lyapunov solve of the first-order form (a 2,000-state Bartels-Stewart
takes minutes here).

**An undamped model has no gramians** (its poles lie on the imaginary axis: the integrals
diverge; libraries fail or, as one did while this issue was prepared, silently return the full
order).  The simulation runs undamped (PMI needs no damping, Prop. 1), so the basis is computed
for the same model with an auxiliary modal damping ``ZETA_BASIS`` on every mode, used for the
basis only: the reduced model is the Galerkin projection of the *undamped* (or configured)
matrices on that basis, so it stays passive and undamped.  The basis changes little with the
auxiliary damping (docs/snap.md measures it).  A floating segment (the contact segment, held only
by the coupling) has rigid modes, w = 0, whose gramians are infinite too: its basis is computed
on K + k_c H^T H, the segment as the coupling holds it (the foot segment, fixed at its foot,
on its own K: grounding its cut too would make its cut nodes' inputs near-rigid springs).

**Static compliance kept.**  Plain balanced truncation lost one input node's own compliance by
75 % at order 6 while this issue was prepared (the modes it drops still carry static
deflection).  A singular-perturbation variant keeps the static response but is not a Galerkin
projection of the second-order form (no longer a mass-spring system: Prop. 1's proof does not
apply).  Here the basis is instead the span of the static deflections K^-1 B (each input's
static shape) and the leading balanced states, M-orthonormalized: a Galerkin projection whose
span holds K^-1 B reproduces B^T K^-1 B exactly (the reduced static solution is the full one),
for every input at once, and for the coupled segments too (each segment's static shape under
the contact and coupling forces lies in its span).  The static set is kept whole: compressing
it by its singular values drops the coupling nodes' shapes first (a segment held by a stiff
coupling spring barely moves under a force at the cut, yet those shapes are how it follows the
other segment) -- measured: one coupling node's compliance lost entirely at a relative cut of
1e-4.  The order is therefore at least 3 x the input nodes; the balanced states come on top.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

ZETA_BASIS = 0.02     # auxiliary modal damping for the gramians only (the module's text)
# a column whose part outside the earlier ones is below this fraction of its M-norm is dependent
ORTHO_RTOL = 1e-10


@dataclass(frozen=True)
class Basis:
    """``Q`` (N, r): x = Q z, M-orthonormal (Q^T M Q = I).  ``hsv`` the balanced singular values
    (descending, all of them), ``n_static`` the static shapes at the front of Q."""
    Q: np.ndarray
    hsv: np.ndarray
    n_static: int

    @property
    def order(self) -> int:
        return self.Q.shape[1]


def _pair_gramians(w: np.ndarray, zeta: float) -> tuple[np.ndarray, np.ndarray]:
    """(Xc, Xo): (n, n) the position entries of the unit-input controllability and unit-output
    observability Sylvester solutions for every mode pair (the module's text)."""
    wi, wj = np.meshgrid(w, w, indexing="ij")

    def a(x):                                      # (.., 2, 2) [[-2 zeta w, -w^2], [1, 0]]
        return np.stack([np.stack([-2 * zeta * x, -x * x], -1), np.stack([np.ones_like(x), 0 * x], -1)], -2)

    Ai, Aj = a(wi), a(wj)
    tr = (0, 1, 3, 2)
    Xc = _pair_sylvester(Ai, Aj, 0)                   # A_i X + X A_j^T + E_11 = 0
    Xo = _pair_sylvester(Ai.transpose(tr), Aj.transpose(tr), 3)   # A_i^T Y + Y A_j + E_22 = 0
    return Xc, Xo


def _pair_sylvester(Ai: np.ndarray, Aj: np.ndarray, k: int) -> np.ndarray:
    """(n, n): entry (1, 1) of X solving A_i X + X A_j^T + E = 0 for every pair, E the unit
    matrix at column-major vec index k (0: E_11, 3: E_22)."""
    n = Ai.shape[0]
    I2 = np.eye(2)
    # vec(A_i X + X A_j^T) = (I (x) A_i + A_j (x) I) vec(X), column-major vec: row 2 col + row
    L = (np.einsum("...ac,bd->...badc", Ai, I2) + np.einsum("...bd,ac->...badc", Aj, I2)).reshape(n, n, 4, 4)
    rhs = np.zeros((n, n, 4, 1))
    rhs[..., k, 0] = -1.0
    return np.linalg.solve(L, rhs)[..., 3, 0]        # the (q, q) entry: vec index 3 = (1, 1)


def _psd_sqrt(P: np.ndarray) -> np.ndarray:
    """L with L L^T = P for a symmetric positive semidefinite P (eigen: P may be singular)."""
    lam, V = np.linalg.eigh(0.5 * (P + P.T))
    return V * np.sqrt(np.clip(lam, 0.0, None))


def _m_orthonormal(V: np.ndarray, M: np.ndarray, rtol: float, want: int) -> np.ndarray:
    """Up to `want` M-orthonormal columns spanning V's leading columns, in order; a column whose
    part outside the earlier ones is below `rtol` of its M-norm is dependent and skipped."""
    Q = np.zeros((len(M), 0))
    for v in V.T:
        if Q.shape[1] == want:
            break
        u = v.copy()
        for _ in range(2):                           # Gram-Schmidt twice is enough (Kahan)
            u -= Q @ (Q.T @ (M @ u))
        nv = np.sqrt(max(u @ M @ u, 0.0))
        if nv > rtol * np.sqrt(max(v @ M @ v, 1e-300)):
            Q = np.hstack([Q, (u / nv)[:, None]])
    return Q


def balanced_basis(M, K, B, order: int, zeta: float = ZETA_BASIS) -> Basis:
    """The reduced basis of a segment: its static shapes K^-1 B, then balanced states, ``order``
    columns in all (M-orthonormal).  ``M``, ``K`` (N, N) dense SPD (a floating segment's K with
    its coupling springs), ``B`` (N, m) the input columns."""
    M, K, B = (np.asarray(a, float) for a in (M, K, B))
    N = len(M)
    if not 1 <= order <= N:
        raise ValueError(f"reduced order: must be in [1, {N}] (the segment's coordinates), got {order!r}")
    w2, Phi = sla.eigh(K, M)
    if w2[0] <= 0.0:
        raise ValueError("reduction: K is not positive definite (a floating segment needs its coupling springs)")
    w = np.sqrt(w2)
    g = Phi.T @ B                                   # (n, m) modal input rows
    b = g @ g.T
    Xc, Xo = _pair_gramians(w, zeta)
    Lc, Lo = _psd_sqrt(b * Xc), _psd_sqrt(b * Xo)
    U, s, Vt = np.linalg.svd(Lo.T @ Lc)
    keep = s > s[0] * 1e-14
    Tq = Lc @ Vt[keep].T / np.sqrt(s[keep])          # modal positions q = Tq z (balancing)
    Vbal = Phi @ Tq
    Vst = _m_orthonormal(np.linalg.solve(K, B), M, ORTHO_RTOL, B.shape[1])   # the static shapes
    n_st = Vst.shape[1]
    if n_st > order:
        raise ValueError(f"reduced order: {order} cannot hold the segment's {n_st} static shapes "
                         f"(3 x its input nodes); raise the order")
    Q = _m_orthonormal(np.hstack([Vst, Vbal]), M, ORTHO_RTOL, order)
    return Basis(Q, s, n_st)


def compliance(K, B, Q=None) -> np.ndarray:
    """(m, m) B^T K^-1 B, or with a basis Q the reduced model's B^T Q (Q^T K Q)^-1 Q^T B."""
    K, B = np.asarray(K, float), np.asarray(B, float)
    if Q is None:
        return B.T @ np.linalg.solve(K, B)
    BQ = B.T @ Q
    return BQ @ np.linalg.solve(Q.T @ K @ Q, BQ.T)
