"""Couplings: potentials between blocks, in the PMI potential-action form, and the one routine
that folds a coupled block into another (Schur complement + recovery).

**A spring-damper between two anchor frames** (``Couplings``).  Body a carries the anchor
(R_a, r_a) in its frame, body b the anchor (R_b, r_b); a = ``types.WORLD`` fixes a's anchor in
the world.  The pose error, world axes, is  e = [x_a - x_b; R_gb log(R_gb^T R_ga)]  (x the
anchor points, R_g the anchor frames in world), and G_i (6,6) maps body i's twist [v_w; w_b]
to its anchor frame's [v; w] (world):  G = [[I, -R S(r)], [0, R]]  (``anchor_map``), so
e_dot = G_a V_a - G_b V_b.  The potential psi = 1/2 e^T K e acts at the step's midpoint (seed
002 eq. (2), PMI's potential action) and a damper D rides along:
    F = K e_k + H (e_dot_k + e_dot_k+1),   H = (K T/2 + D) / 2,
i.e.  F = K (e_k + T/2 e_dot_mid) + D e_dot_mid.  F pulls b toward a: b gets G_b^T F, a gets
-G_a^T F.  Linear in V+: with F0 = K e_k + H e_dot_k,
    A_bb += G_b^T H G_b,  A_aa += G_a^T H G_a,  A_ab = A_ba^T -= G_a^T H G_b,
    b_b += G_b^T F0,      b_a -= G_a^T F0         (``potential_terms``).

Energy.  Where e is linear in the poses -- the translational rows with both anchors at the
centres of mass (r = 0), so x = p and e_k+1 - e_k = T (v_a,mid - v_b,mid) = T e_dot_mid exactly,
since PMI moves p by T v_mid -- the spring's force with D = 0 is F = K (e_k + e_k+1)/2 = K e_mid,
and its work on the bodies over the step, -T F^T e_dot_mid = -K e_mid^T (e_k+1 - e_k), is
exactly -(psi_k+1 - psi_k).  PMI's energy balance of each body (``pmi``) then makes
kinetic + spring (+ the constant gravity's) energy a constant of the discrete motion: to
rounding, at any stiffness and step.  With offset anchors or a rotational spring e is
nonlinear in the poses; the balance holds to O(T^3) per step (midpoint rule) and does not
drift (the chain test: no gain beyond 1e-6 over 1e4 steps).  D > 0 only dissipates:
its work is -T e_dot_mid^T D e_dot_mid <= 0.

**The fold** (``fold``).  A block a (S qa+ = r + C^T ... ) coupled to a block p by the
off-diagonal C = A_ap (S (na,na), C (na,np)), some of a's coordinates held at known
velocities (``fixed``, ``v_fix``: the arm's joint stops), is eliminated:
    (A_pp - C_f^T S_ff^-1 C_f) V_p+ = b_p - C_F^T v_F - C_f^T S_ff^-1 (r_f - S_fF v_F),
and recovered after the solve:  qa_f+ = S_ff^-1 (r_f - S_fF v_F - C_f V_p+)  (``recover``).
The arm's grasp is folded into the held body this way (``systems.arm.system``); a coupling
that is not folded stays in the island's matrix and is solved with the contacts
(``step.solve``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from sim_core.math.so3 import log_so3
from sim_core.types import WORLD


@dataclass(frozen=True)
class Couplings:
    """Spring-dampers between two bodies' anchor frames (or a body and a world frame); c of them."""
    a: np.ndarray                  # (c,) int64, body a (or types.WORLD: the anchor is fixed in the world)
    b: np.ndarray                  # (c,) int64, body b (a body)
    r_a: np.ndarray                # (c,3) m, anchor point on a from its COM, a's axes (world point if a is WORLD)
    R_a: np.ndarray                # (c,3,3) anchor frame in a's frame (in the world if a is WORLD)
    r_b: np.ndarray                # (c,3) m, anchor point on b from its COM, b's axes
    R_b: np.ndarray                # (c,3,3) anchor frame in b's frame
    K: np.ndarray                  # (c,6) [N/m x3, N m/rad x3], world axes
    D: np.ndarray                  # (c,6) [N s/m x3, N m s/rad x3]

    def __len__(self) -> int:
        return int(self.b.shape[0])


def anchor_map(R_wb, r_b) -> np.ndarray:
    """G (6,6): a body's twist [v_w; w_b] -> its anchor frame's twist [v; w] (world)."""
    G = np.zeros((6, 6))
    G[:3, :3] = np.eye(3)
    G[:3, 3:] = -R_wb @ np.array([[0.0, -r_b[2], r_b[1]], [r_b[2], 0.0, -r_b[0]], [-r_b[1], r_b[0], 0.0]])
    G[3:, 3:] = R_wb
    return G


def potential_terms(Ga, Gb, H, F0):
    """What a midpoint potential with F = F0 + H e_dot_k+1 (e_dot = Ga Va - Gb Vb) adds to the
    blocks (module docstring): (A_aa, A_bb, A_ab, b_a, b_b) increments.  H (6,6)."""
    return Ga.T @ H @ Ga, Gb.T @ H @ Gb, -(Ga.T @ H @ Gb), -(Ga.T @ F0), Gb.T @ F0


# ---- many couplings: one kernel -----------------------------------------------------------------

@njit(cache=True)
def _map(R, r, G):
    """anchor_map into G (6,6), scalar arithmetic."""
    for i in range(6):
        for j in range(6):
            G[i, j] = 0.0
    for i in range(3):
        G[i, i] = 1.0
        # -R S(r): column j of S(r) is r x e_j
        G[i, 3] = -(R[i, 1] * r[2] - R[i, 2] * r[1])
        G[i, 4] = -(R[i, 2] * r[0] - R[i, 0] * r[2])
        G[i, 5] = -(R[i, 0] * r[1] - R[i, 1] * r[0])
        for j in range(3):
            G[3 + i, 3 + j] = R[i, j]


@njit(cache=True)
def coupling_terms(a, b, r_a, R_a, r_b, R_b, K, D, p_w, R_wb, V, T, A, rhs):
    """Every coupling's midpoint spring-damper (module docstring): adds the diagonal terms to
    the bodies' blocks A (B,6,6) and right-hand sides rhs (B,6) in place and returns the
    off-diagonal blocks A_ab (c,6,6) (zero where a is the world) and the pose errors e (c,6)."""
    c = b.shape[0]
    Aab = np.zeros((c, 6, 6))
    err = np.zeros((c, 6))
    Ga = np.zeros((6, 6))
    Gb = np.zeros((6, 6))
    for k in range(c):
        j = b[k]
        Rgb = R_wb[j] @ R_b[k]
        xb = p_w[j] + R_wb[j] @ r_b[k]
        _map(R_wb[j], r_b[k], Gb)
        ed = -(Gb @ V[j])
        i = a[k]
        if i >= 0:
            Rga = R_wb[i] @ R_a[k]
            xa = p_w[i] + R_wb[i] @ r_a[k]
            _map(R_wb[i], r_a[k], Ga)
            ed += Ga @ V[i]
        else:
            Rga = R_a[k].copy()
            xa = r_a[k].copy()
        e = np.empty(6)
        e[:3] = xa - xb
        e[3:] = Rgb @ log_so3(Rgb.T @ Rga)
        err[k] = e
        h = 0.5 * (K[k] * T / 2 + D[k])
        F0 = K[k] * e + h * ed
        HGb = h[:, None] * Gb
        A[j] += Gb.T @ HGb
        rhs[j] += Gb.T @ F0
        if i >= 0:
            HGa = h[:, None] * Ga
            A[i] += Ga.T @ HGa
            rhs[i] -= Ga.T @ F0
            Aab[k] = -(Ga.T @ HGb)
    return Aab, err


def coupling_terms_numpy(cp: Couplings, p_w, R_wb, V, T, A, rhs):
    """``coupling_terms`` in plain NumPy, one coupling at a time (the reference the kernel is
    tested against)."""
    Aab, err = np.zeros((len(cp), 6, 6)), np.zeros((len(cp), 6))
    for k in range(len(cp)):
        i, j = int(cp.a[k]), int(cp.b[k])
        Gb = anchor_map(R_wb[j], cp.r_b[k])
        Rgb, xb = R_wb[j] @ cp.R_b[k], p_w[j] + R_wb[j] @ cp.r_b[k]
        if i == WORLD:
            Ga, Rga, xa, Va = np.zeros((6, 6)), cp.R_a[k], cp.r_a[k], np.zeros(6)
        else:
            Ga, Rga, xa, Va = anchor_map(R_wb[i], cp.r_a[k]), R_wb[i] @ cp.R_a[k], p_w[i] + R_wb[i] @ cp.r_a[k], V[i]
        e = np.concatenate([xa - xb, Rgb @ log_so3(Rgb.T @ Rga)])
        H = np.diag(0.5 * (cp.K[k] * T / 2 + cp.D[k]))
        F0 = cp.K[k] * e + H @ (Ga @ Va - Gb @ V[j])
        Aaa, Abb, Aab_k, ba, bb = potential_terms(Ga, Gb, H, F0)
        A[j] += Abb
        rhs[j] += bb
        if i != WORLD:
            A[i] += Aaa
            rhs[i] += ba
            Aab[k] = Aab_k
        err[k] = e
    return Aab, err


def apply(cp: Couplings | None, p_w, R_wb, V, T: float, A, rhs):
    """The couplings' terms (kernel): (A_ab (c,6,6), e (c,6)); nothing when there are none."""
    if cp is None or len(cp) == 0:
        return np.zeros((0, 6, 6)), np.zeros((0, 6))
    return coupling_terms(cp.a, cp.b, cp.r_a, cp.R_a, cp.r_b, cp.R_b, cp.K, cp.D, p_w, R_wb, V, float(T), A, rhs)


def energy(cp: Couplings | None, p_w, R_wb) -> float:
    """The couplings' potential energy sum 1/2 e^T K e (J)."""
    if cp is None or len(cp) == 0:
        return 0.0
    A, rhs = np.zeros((len(p_w), 6, 6)), np.zeros((len(p_w), 6))
    _, e = apply(cp, p_w, R_wb, np.zeros((len(p_w), 6)), 1.0, A, rhs)
    return 0.5 * float(np.sum(cp.K * e * e))


# ---- the fold -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Folded:
    """What recovers a folded block's velocities once the block it was folded into is known."""
    X: np.ndarray                  # (nf, np + 1): S_ff^-1 [-C_f | r_f - S_fF v_F]
    free: np.ndarray               # (na,) bool
    v_fix: np.ndarray              # (na,) the held coordinates' velocities


def fold(A_p, b_p, S, r, C, fixed=None, v_fix=None):
    """(A_eff, b_eff, Folded): block a (S, r), coupled to block p by C = A_ap, eliminated into
    p (module docstring); coordinates ``fixed`` of a held at ``v_fix``."""
    na = S.shape[0]
    fixed = np.zeros(na, bool) if fixed is None else fixed
    v_fix = np.zeros(na) if v_fix is None else v_fix
    f, F = ~fixed, fixed
    S_ff = S[np.ix_(f, f)]
    r_f = r[f] - S[np.ix_(f, F)] @ v_fix[F]
    nC = -C
    nC_f = nC[f]
    X = np.linalg.solve(S_ff, np.column_stack([nC_f, r_f]))
    A_eff = A_p - nC_f.T @ X[:, :-1]
    b_eff = b_p + nC[F].T @ v_fix[F] + nC_f.T @ X[:, -1]
    return A_eff, b_eff, Folded(X, f, v_fix)


def recover(fd: Folded, V_p: np.ndarray) -> np.ndarray:
    """The folded block's velocities after the solve, from the velocities V_p of the block it
    was folded into."""
    qa = fd.v_fix.copy()
    qa[fd.free] = fd.X[:, -1] + fd.X[:, :-1] @ V_p
    return qa
