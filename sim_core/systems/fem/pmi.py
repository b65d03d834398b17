"""PMI of a linear structure, whole or segmented and reduced (seed 003 eqs. (3)-(4), (10)-(18)).

**One model** (eqs. (3)-(4)).  M (v+ - v)/T + D v_hat + K x_hat = f with v_hat = (v + v+)/2 and
x_hat = (x + x+)/2 = x + T v_hat / 2.  Substituting v+ = 2 v_hat - v:

    M_hat v_hat = f + (2/T) M v - K x,     M_hat = 2M/T + D + (T/2) K,

which is eq. (4) as printed (v_f = M_hat^-1 ((2/T) M v - K x)).  Multiplying by v_hat gives the
discrete balance E+ - E = T v_hat^T f - T v_hat^T D v_hat exactly (E = 1/2 v^T M v + 1/2 x^T K x),
eq. (6): passive at any T, M, K.  M_hat depends on T: ``LinearPmi`` holds M_hat^-1 for one step
size (dense: the seed's "precalculated inverse", an n^2 product a step); a different ``dt`` is a
new ``LinearPmi`` (one O(n^3) factorization), never a silently stale one.

**Two segments joined by a stiff spring, the coupling eliminated** (eqs. (10)-(14)).  Segment 1
holds the contact nodes, segment 2 the rest; coupling nodes are duplicated, one copy in each,
and H_i picks them.  The coupling force on segment 1 is lambda = -d_c v_e_hat - k_c x_e_hat
(eq. (12)) with x_e = H_1 x_1 - H_2 x_2; at the midpoint x_e_hat = e + (T/2) v_e_hat, so
lambda = -c v_e_hat - k_c e with c = d_c + k_c T/2, e = the error at the step's start.  Each
segment may be reduced, x_i = Q_i z_i (Q_i = I unreduced; eq. (15)), and the equations are
then projected on Q_i (Galerkin): with G_i = H_i Q_i and Mh_i = Q_i^T M_hat_i Q_i,

    [Mh_1 + c G_1^T G_1,   -c G_1^T G_2       ] [w_1]   [b_1 - k_c G_1^T e + Q_1^T f_1]
    [-c G_2^T G_1,          Mh_2 + c G_2^T G_2] [w_2] = [b_2 + k_c G_2^T e            ]

(w_i = z_i's midpoint rate, b_i = Q_i^T ((2/T) M_i v_i - K_i x_i)).  Eliminating segment 2
(its Schur complement) gives segment 1's block Mh_1 + c G_1^T G_1 - c^2 G_1^T G_2 S_2^-1 G_2^T G_1,
S_2 = Mh_2 + c G_2^T G_2 -- written so, the last two terms cancel to a few digits for a stiff
coupling (c / Mh ~ 1e8 at the shipped k_c: measured, the step then missed Prop. 1's balance by
2.5e-3).  By Woodbury the same block is Mh_1 + G_1^T Y G_1 with

    Y = (I / c + W_2)^-1,   W_2 = G_2 Mh_2^-1 G_2^T,

the coupling spring in series with segment 2's compliance at the cut: no cancellation.  So
w_1 = A_z (Q_1^T f_1 + b_1' + G_1^T Y G_2 u_2) with A_z = (Mh_1 + G_1^T Y G_1)^-1 constant and u_2 =
Mh_2^-1 b_2' segment 2's free rate (b' the right sides above), and w_2 = u_2 + Mh_2^-1 G_2^T Y
(G_1 w_1 - G_2 u_2) (eq. (17); the push-through identity c G_2 S_2^-1 = Y G_2 Mh_2^-1).  Segment
1's nodal velocity is v_1_hat = Q_1 A_z Q_1^T f_1 + v_1f: eq. (14)'s A = Q_1 A_z Q_1^T (eq. (18)'s
B_2 for a reduced segment), affine in the contact force.  The printed
eq. (16) gives the velocity error from positions (H_1 Q_1 z_1 in both rows); the rate is
meant.  Prop. 1: multiplying the system by (w_1, w_2) gives, with D_i = 0 and d_c = 0,
E+ - E = T w_1^T Q_1^T f_1 exactly, E the segments' energies plus 1/2 k_c |e|^2 (tested to
1e-9 over 1e4 steps); the projection keeps it because it is a congruence.

**In modes** (``ModalPmi``).  PMI's energy balance is exact in exact arithmetic; in floating point
each step's solve errs by about eps x cond(M_hat), and cond(M_hat) ~ (w_max T)^2 / 4 reaches 2e7
on the quadratic prong (w_max T ~ 9e3: its stiffest element modes).  Measured over 1e4 steps:
the balance off by 1.2e-8 (whole model) and 1.7e-8 (segmented, reduced) relative to the energy.
With M-orthonormal modes (K Phi = M Phi W^2, Phi^T M Phi = I) and proportional damping the step
splits into one scalar PMI per mode,

    qd_hat_i = (phi_i^T f + (2/T) qd_i - w_i^2 q_i) / (2/T + a + b w_i^2 + w_i^2 T/2),

each exact to rounding whatever w_i T, so the balance holds to ~1e-15 a step.  The same map,
only better conditioned: ``CoupledPmi.modal`` diagonalizes the coupled, reduced model (the
segments and the cut's spring together, a few hundred coordinates) and the scenario steps that.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp


def _dense(A) -> np.ndarray:
    return A.toarray() if sp.issparse(A) else np.asarray(A, float)


def _spd_inverse(A: np.ndarray, what: str) -> np.ndarray:
    try:
        c = sla.cho_factor(A)
    except np.linalg.LinAlgError as e:
        raise ValueError(f"{what}: not positive definite ({e})") from None
    inv = sla.cho_solve(c, np.eye(len(A)))
    return 0.5 * (inv + inv.T)


@dataclass(frozen=True)
class LinearPmi:
    """PMI of one linear model M, D, K at step T (constant).  Coordinates as the model's.  With
    ``P`` it serves where a ``ModalPmi`` does (``snap``'s "nodal" prongs: seed 003's Model 1 in
    the form the seed ran it, products with the precalculated M_hat^-1 in node coordinates)."""
    M: np.ndarray
    D: np.ndarray
    K: np.ndarray
    T: float
    Mhat_inv: np.ndarray          # (N, N) M_hat^-1
    P: np.ndarray | None = None   # (N', N) the coordinates forces act on, x' = P x (``ModalPmi.P``'s role)

    @classmethod
    def build(cls, M, D, K, T: float, P=None) -> LinearPmi:
        if not T > 0.0:
            raise ValueError(f"dt: must be > 0, got {T!r}")
        # sparse M, D, K stay sparse (CSR): their products a step are the mesh's nnz, not n^2;
        # M_hat^-1 is dense (the precalculated inverse)
        M, D, K = (sp.csr_matrix(A) if sp.issparse(A) else np.asarray(A, float) for A in (M, D, K))
        Mhat = _dense(2.0 * M / T + D + 0.5 * T * K)
        return cls(M, D, K, float(T), _spd_inverse(Mhat, "M_hat = 2M/T + D + T K/2"),
                   None if P is None else np.asarray(P, float))

    @property
    def size(self) -> int:
        """The coordinates' count."""
        return self.M.shape[0]

    def admit(self, f: np.ndarray) -> np.ndarray:
        """(..., N): the midpoint velocity a force f (..., N) adds over the step, M_hat^-1 f (row-wise;
        M_hat^-1 is symmetric)."""
        return f @ self.Mhat_inv

    def free_rate(self, x, v) -> np.ndarray:
        """v_f: the midpoint velocity with no force (eq. (4))."""
        return self.Mhat_inv @ ((2.0 / self.T) * (self.M @ v) - self.K @ x)

    def step(self, x, v, f) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(x+, v+, v_hat) under the nodal force f over the step."""
        v_hat = self.Mhat_inv @ f + self.free_rate(x, v)
        return x + self.T * v_hat, 2.0 * v_hat - v, v_hat

    def energy(self, x, v) -> float:
        return 0.5 * float(v @ (self.M @ v)) + 0.5 * float(x @ (self.K @ x))


@dataclass(frozen=True)
class Segment:
    """One segment's model as the coupled step sees it.  ``Q`` (3n_i, r_i) its basis (identity
    when unreduced), ``H`` (3 n_c, 3 n_i) its coupling-node selection; M, D, K (3n_i, 3n_i)."""
    M: np.ndarray
    D: np.ndarray
    K: np.ndarray
    H: np.ndarray
    Q: np.ndarray


@dataclass(frozen=True)
class CoupledPmi:
    """Two segments, segment 2's coordinates and the coupling eliminated (the module's text).
    States are the reduced coordinates (z_i, zdot_i) of each segment; ``nodal`` maps back."""
    seg: tuple[Segment, Segment]
    k_c: float                     # N/m, the coupling spring per node and axis
    d_c: float                     # N s/m, its damper
    T: float
    Mr: tuple[np.ndarray, np.ndarray]     # Q^T M Q
    Kr: tuple[np.ndarray, np.ndarray]     # Q^T K Q
    Mh: tuple[np.ndarray, np.ndarray]     # Q^T M_hat Q
    G: tuple[np.ndarray, np.ndarray]      # H Q
    Mh2_inv: np.ndarray                   # (r_2, r_2)
    Y: np.ndarray                         # (3n_c, 3n_c) (I/c + G_2 Mh_2^-1 G_2^T)^-1
    A_z: np.ndarray                       # (r_1, r_1)  w_1 = A_z (Q_1^T f_1 + r_1)
    A: np.ndarray                         # (3n_1, 3n_1) Q_1 A_z Q_1^T, eq. (14)

    @classmethod
    def build(cls, s1: Segment, s2: Segment, k_c: float, d_c: float, T: float) -> CoupledPmi:
        if not T > 0.0:
            raise ValueError(f"dt: must be > 0, got {T!r}")
        if not k_c > 0.0 or d_c < 0.0:
            raise ValueError(f"coupling: needs k_c > 0 and d_c >= 0, got {k_c!r}, {d_c!r}")
        c = d_c + 0.5 * k_c * T
        Mr, Kr, Mh, G = [], [], [], []
        for s in (s1, s2):
            Q = s.Q
            Mr.append(Q.T @ s.M @ Q)
            Kr.append(Q.T @ s.K @ Q)
            Mh.append(Q.T @ (2.0 * s.M / T + s.D + 0.5 * T * s.K) @ Q)
            G.append(s.H @ Q)
        Mh2_inv = _spd_inverse(Mh[1], "segment 2's M_hat")
        W2 = G[1] @ Mh2_inv @ G[1].T
        Y = _spd_inverse(np.eye(len(W2)) / c + W2, "the cut's compliance I/c + W_2")
        A_z = _spd_inverse(Mh[0] + G[0].T @ Y @ G[0], "segment 1's Schur complement")
        return cls((s1, s2), float(k_c), float(d_c), float(T), tuple(Mr), tuple(Kr), tuple(Mh), tuple(G),
                   Mh2_inv, Y, A_z, s1.Q @ A_z @ s1.Q.T)

    @property
    def c(self) -> float:
        return self.d_c + 0.5 * self.k_c * self.T

    def error(self, z1, z2) -> np.ndarray:
        """(3 n_c,) m, the coupling nodes' position error x_e = H_1 x_1 - H_2 x_2."""
        return self.G[0] @ z1 - self.G[1] @ z2

    def _rhs(self, z, w):
        e = self.error(z[0], z[1])
        b = [(2.0 / self.T) * (self.Mr[i] @ w[i]) - self.Kr[i] @ z[i] for i in (0, 1)]
        return b[0] - self.k_c * (self.G[0].T @ e), b[1] + self.k_c * (self.G[1].T @ e)

    def free_rate(self, z, w) -> tuple[np.ndarray, np.ndarray]:
        """(r_1, u_2): w_1 = A_z (Q_1^T f_1 + r_1) for any contact force; u_2 segment 2's free rate."""
        b1, b2 = self._rhs(z, w)
        u2 = self.Mh2_inv @ b2
        return b1 + self.G[0].T @ (self.Y @ (self.G[1] @ u2)), u2

    def step(self, z, w, f1) -> tuple[tuple, tuple, tuple]:
        """One step under segment 1's nodal force f1 (3n_1,): ((z1+, z2+), (w1+, w2+), (w1_hat, w2_hat))."""
        r1, u2 = self.free_rate(z, w)
        w1 = self.A_z @ (self.seg[0].Q.T @ f1 + r1)
        w2 = u2 + self.Mh2_inv @ (self.G[1].T @ (self.Y @ (self.G[0] @ w1 - self.G[1] @ u2)))
        wh = (w1, w2)
        return (tuple(z[i] + self.T * wh[i] for i in (0, 1)), tuple(2.0 * wh[i] - w[i] for i in (0, 1)), wh)

    def energy(self, z, w) -> float:
        """J: the segments' kinetic and elastic energies and the coupling spring's."""
        e = self.error(z[0], z[1])
        return sum(0.5 * float(w[i] @ self.Mr[i] @ w[i]) + 0.5 * float(z[i] @ self.Kr[i] @ z[i])
                   for i in (0, 1)) + 0.5 * self.k_c * float(e @ e)

    def modal(self) -> tuple[ModalPmi, np.ndarray]:
        """The same step in the coupled model's modes (undamped segments, d_c = 0: the shipped
        case), and R (r_1 + r_2, r) mapping modal coordinates to the stacked (z_1, z_2).  Its
        ``P`` maps to segment 1's nodes."""
        if self.d_c != 0.0 or any(np.any(s.D) for s in self.seg):
            raise ValueError("modal: only an undamped coupled model (D = 0, d_c = 0) is diagonal in its modes")
        G = np.hstack([self.G[0], -self.G[1]])
        r1 = len(self.Mr[0])
        M = sla.block_diag(self.Mr[0], self.Mr[1])
        K = sla.block_diag(self.Kr[0], self.Kr[1]) + self.k_c * (G.T @ G)
        mp = ModalPmi.build(M, K, self.T)
        R = mp.P                                          # stacked z per mode
        P1 = self.seg[0].Q @ R[:r1]
        return ModalPmi(P1, mp.w2, mp.mhat, mp.T), R

    def nodal(self, z) -> tuple[np.ndarray, np.ndarray]:
        """The segments' nodal vectors from reduced ones."""
        return self.seg[0].Q @ z[0], self.seg[1].Q @ z[1]

    def static(self, f1) -> tuple[np.ndarray, np.ndarray]:
        """The segments' static nodal displacements under f1 (the stiffness with the coupling)."""
        G1, G2 = self.G
        Kc = np.block([[self.Kr[0] + self.k_c * G1.T @ G1, -self.k_c * G1.T @ G2],
                       [-self.k_c * G2.T @ G1, self.Kr[1] + self.k_c * G2.T @ G2]])
        r1 = len(self.Kr[0])
        z = np.linalg.solve(Kc, np.concatenate([self.seg[0].Q.T @ f1, np.zeros(len(self.Kr[1]))]))
        return self.nodal((z[:r1], z[r1:]))


@dataclass(frozen=True)
class ModalPmi:
    """PMI in M-orthonormal modes of M x'' + (a M + b K) x' + K x = P^T-mapped forces (the
    module's text).  State (q, qd): modal coordinates and rates; x = P q in the coordinates the
    forces act on (``P`` (N, r): nodal, or a segment's nodes for a coupled model)."""
    P: np.ndarray                 # (N, r) x = P q; a force f on x acts as P^T f
    w2: np.ndarray                # (r,) 1/s^2, the modes' squared frequencies
    mhat: np.ndarray              # (r,) 1/s, 2/T + a + b w^2 + w^2 T/2
    T: float

    @classmethod
    def build(cls, M, K, T: float, alpha: float = 0.0, beta: float = 0.0, P=None) -> ModalPmi:
        """`M`, `K` (r, r) the model's matrices in the coordinates y = Phi q; `P` (N, r) maps y to
        the force coordinates (identity if None)."""
        if not T > 0.0:
            raise ValueError(f"dt: must be > 0, got {T!r}")
        M, K = _dense(M), _dense(K)
        w2, Phi = sla.eigh(0.5 * (K + K.T), 0.5 * (M + M.T))
        w2 = np.clip(w2, 0.0, None)                      # rigid modes: rounding below zero
        P = Phi if P is None else np.asarray(P, float) @ Phi
        return cls(P, w2, 2.0 / T + alpha + beta * w2 + 0.5 * T * w2, float(T))

    @property
    def size(self) -> int:
        """The modal coordinates' count."""
        return len(self.w2)

    def admit(self, f: np.ndarray) -> np.ndarray:
        """(..., r): the midpoint rates a modal load f (..., r) adds over the step, f / mhat."""
        return f / self.mhat

    def free_rate(self, q, qd) -> np.ndarray:
        return ((2.0 / self.T) * qd - self.w2 * q) / self.mhat

    def step(self, q, qd, f) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q+, qd+, qd_hat) under the force f (in ``P``'s row coordinates) over the step."""
        qh = (self.P.T @ f) / self.mhat + self.free_rate(q, qd)
        return q + self.T * qh, 2.0 * qh - qd, qh

    def energy(self, q, qd) -> float:
        return 0.5 * float(qd @ qd) + 0.5 * float(self.w2 @ (q * q))

    def admittance(self, rows) -> np.ndarray:
        """(k, k): the midpoint velocity of coordinates `rows` per unit force on them (eq. (14)'s
        A restricted to them: the contact's Delassus block)."""
        Pr = self.P[rows]
        return (Pr / self.mhat) @ Pr.T
