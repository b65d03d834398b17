"""Couplings: potentials between blocks, in the PMI potential-action form, and the one routine
that folds a coupled block into another (Schur complement + recovery).

**A spring-damper between two anchor frames** (``Couplings``).  Body a carries the anchor
(R_a, r_a) in its frame, body b the anchor (R_b, r_b); a = ``types.WORLD`` fixes a's anchor in
the world.  The pose error, world axes, is  e = [x_a - x_b; R_gb log(R_gb^T R_ga)]  (x = p + R r
the anchor points, R_g the anchor frames in world), psi = 1/2 e^T K e (K diagonal), and a
damper D rides along.  G_i (6,6) maps body i's twist [v_w; w_b] to its anchor's [v; w]
(world): at the start of the step  G = [[I, -R S(r)], [0, R]]  (``anchor_map``).  The force
acts at the step's midpoint (seed 002 eq. (2), PMI's potential action):
    F = K (e_k + e_k+1)/2 + D e_dot_mid,   e_k+1 - e_k = T e_dot_mid = T (G_a V_a,mid - G_b V_b,mid),
i.e. with H = (K T/2 + D)/2 and F0 = K e_k + H e_dot_k (e_dot_k = G_a V_a - G_b V_b):
F = F0 + H e_dot_k+1.  F pulls b toward a: b gets G_b^T F, a gets -G_a^T F.  Linear in V+:
    A_bb += G_b^T H G_b,  A_aa += G_a^T H G_a,  A_ab = A_ba^T -= G_a^T H G_b,
    b_b += G_b^T F0,      b_a -= G_a^T F0         (``potential_terms``, ``coupling_terms``).

**Energy: the maps that make it exact.**  PMI makes a body's energy change exactly
T F_gen . V_mid (``pmi``), so with D = 0 the springs' work on the bodies is
-T F . (G_a V_a,mid - G_b V_b,mid), and this is -(psi_k+1 - psi_k) = -F . (e_k+1 - e_k)
exactly iff  e_k+1 - e_k = T (G_a V_a,mid - G_b V_b,mid)  for the e of the poses PMI actually
reaches.  Then kinetic + spring (+ the constant gravity's) energy is a constant of the discrete
motion, at any stiffness and step; D > 0 only dissipates (its work is -T e_dot^T D e_dot <= 0).
- Translational rows.  PMI moves p by T v_mid and R to R exp(S(theta)), theta = T w_mid (body
  axes), so an anchor moves by exactly  dx = T v_mid + R (exp(S(theta)) - I) r.  With
  exp(S) - I = J_l(theta) S(theta),  J_l = sum S^k/(k+1)! = I + (1-cos t)/t^2 S + (t-sin t)/t^3 S^2
  (``left_jacobian``), and S(theta) r = -S(r) theta:  dx = T [I, -R J_l(theta) S(r)] V_mid.  So
  G's translational-angular block is -R J_l(theta) S(r) (``_map``; theta = 0 gives
  ``anchor_map``, exact only when r = 0: the zero-length COM springs of the linear chain).
- Rotational rows.  e_rot is not linear in any twist, so its rows get a secant: with the exact
  change de (from the reached frames R exp(S(theta)) R_anchor) and its linear part
  R_a theta_a - R_b theta_b, c = de - (R_a theta_a - R_b theta_b) is spread over the turns,
  G_a,rot = R_a + c theta_a^T / s,  G_b,rot = R_b - c theta_b^T / s,  s = |theta_a|^2 + |theta_b|^2
  (``_secant``; c = O(|theta| (|theta| + |e_rot|)), so the correction is small and vanishes
  at rest).
Both need theta = T w_mid of the step's own solution, and the system is linear in V+ only
with theta held: ``turns`` solves the contact-free coupled system A(theta) V+ = b(theta),
theta = T (w_k + w+)/2, for theta -- one solve at theta = T w_k, then Newton's method
(``newton_terms``: the derivative through the exact anchor tangent R exp(S(theta)) S(r) J_r
and the turn stiffness of G^T F; the secant's derivative is left out), 2-4 passes at the
chain's steps; each pass solves the block system in O(B) when the couplings form a forest
(``block_solve``: on the blocks for a chain, a cable; a loop falls back to a sparse LU).  ``apply`` then adds the
terms at that theta, which the step solves with the contacts.  Exact: no contacts in the
coupled island (the chain test: |energy change| <= 1e-9 of the swing's energy over 1e4 steps,
measured ~1e-11, ball joints and bending springs); with contacts the solution's w_mid is not
the predicted one and the balance holds to O(the contacts' change of w_mid * theta) -- the
contacts do work of their own anyway.  With ``[contact] turn_passes`` the step solves the turns
and the contacts together (``step.turn_passes``: the couplings taken again at the solve's turns,
``residual_at``, ``contact_system``, until the coupled system holds with the contacts).  Not
converged (links turning ~1 rad a step: a ball-joint chain of 10 links, or the 160-link chain
with its bending springs, at T = 10 ms): the best iterate, the energy then not exact -- such a
chain gains energy and blows up, later and slower than with the start-of-step maps (measured,
160 links at 10 ms: exact for 1.5 s, then ~2e3 of the swing's energy at 2 s, where the old maps
reached 1e28).  The arm's grasp (``systems.arm.system``) keeps the start-of-step map
(``anchor_map``, ``potential_terms``): its arithmetic, and the scenarios' figures, are
unchanged.

**Frames** (``Couplings.frame``).  FRAME_WORLD (0, or frame None): K, D diagonal in world axes,
everything above, the kernels unchanged.  FRAME_ANCHOR (1): diagonal in a's anchor frame R_ga
(a Cosserat rod's strains in link j's frame, ``scenarios.cable``), the error
e_loc = [R_ga^T (x_a - x_b); log(R_gb^T R_ga)] -- the rotation vector is the same in a's and
b's anchor frames, so e_loc = blockdiag(R_ga^T) e.  The energy argument is the same (any maps
with e_k+1 - e_k = T (G_a V_a,mid - G_b V_b,mid) for the reached poses make it exact):
- Translational rows, exact: with d = x_a - x_b and R_ga1 = R_wa exp(S(th_a)) R_A the reached
  frame,  e1 - e0 = R_ga1^T (dx_a - dx_b) + (R_ga1 - R_ga)^T d,  and
  (R_ga1 - R_ga)^T d = R_A^T (exp(-S(th_a)) - I) R_wa^T d = R_A^T J_r(th_a) S(R_wa^T d) th_a
  (J_r(th) = J_l(-th)): linear in th_a = T w_a,mid.  So G_a,t = R_ga1^T [I, -R_wa J_l S(r_a)]
  + [0, R_A^T J_r(th_a) S(R_wa^T d)],  G_b,t = R_ga1^T [I, -R_wb J_l S(r_b)]  (``_local_static``, ``_local_turned``).
- Rotational rows: the secant above around the linear part [0, R_A^T], [0, R_ga^T R_wb].
- Newton (``local_newton_terms``): these maps move with the turns much more than the world
  rows' (a frame turning under a stiff strain), and the chord G^T H G left the passes at 7-20;
  the derivative of the generalized forces in the six turns a coupling sees is taken by
  forward differences (TURN_FD; the secant included), and the passes take an Armijo line
  search (``_line_search``): a link's twist is a soft direction of the stiff rod (inertia
  m r^2/2 against the bending moments it turns), where the full passes cycle.  Measured on the
  free 40-link seed cable at T = 10 ms: 3-5 passes a step, the energy exact (tests).  Where
  the step does not resolve the motion (a released 1 rad bend, links turning ~0.2 rad a step)
  a few steps in a thousand still reach TURN_MAX_ITER (docs/cable.md).

**The fold** (``fold``).  A block a (S qa+ = r + C^T ... ) coupled to a block p by the
off-diagonal C = A_ap (S (na,na), C (na,np)), some of a's coordinates held at known
velocities (``fixed``, ``v_fix``: the arm's joint stops), is eliminated:
    (A_pp - C_f^T S_ff^-1 C_f) V_p+ = b_p - C_F^T v_F - C_f^T S_ff^-1 (r_f - S_fF v_F),
and recovered after the solve:  qa_f+ = S_ff^-1 (r_f - S_fF v_F - C_f V_p+)  (``recover``).
The arm's grasp is folded into the held body this way (``systems.arm.system``); a coupling
that is not folded stays in the island's matrix and is solved with the contacts
(``step.solve``).  ``turns`` sees the bodies' blocks before any system is folded in (a body
held by the arm and coupled to others: its predicted turn misses the arm's pull).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import get_num_threads, njit, prange

from sim_core.dynamics import blocktree
from sim_core.math.so3 import log_so3
from sim_core.math.so3 import poly_into as _poly
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
    K: np.ndarray                  # (c,6) [N/m x3, N m/rad x3], diagonal in the axes `frame` names
    D: np.ndarray                  # (c,6) [N s/m x3, N m s/rad x3], the same axes
    # (c,) int64, the axes K and D are diagonal in: FRAME_WORLD (0) world axes, e as above;
    # FRAME_ANCHOR (1) a's anchor frame R_ga, e_loc = blockdiag(R_ga^T) e (a Cosserat rod's
    # strains, ``scenarios.cable``).  None: every coupling in world axes (today's arithmetic).
    frame: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.b.shape[0])


def subset(cp: Couplings, idx) -> Couplings:
    """The couplings `idx` (an index array or mask) of cp, every field sliced (frame included:
    a subset built from the positional fields alone would read anchor-frame gains as world)."""
    return Couplings(cp.a[idx], cp.b[idx], cp.r_a[idx], cp.R_a[idx], cp.r_b[idx], cp.R_b[idx], cp.K[idx], cp.D[idx],
                     None if cp.frame is None else cp.frame[idx])


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

# The rotational rows' secant correction is left out below this |theta|^2 (rad^2): there the
# rotation's second-order change is below rounding of the pose error itself.
SECANT_FLOOR = 1e-20


@njit(cache=True, inline="always")
def _coeffs(th):
    """(s, a, c) for t = |th|: exp(S(th)) = I + s K + a K^2 and J_l(th) = I + a K + c K^2
    (K = S(th)); s = sin t / t, a = (1 - cos t) / t^2, c = (t - sin t) / t^3."""
    t2 = th[0] * th[0] + th[1] * th[1] + th[2] * th[2]
    if t2 < 1e-6:
        # t < 1e-3: the series through t^4 (the next terms are below t^6 / 5040 < 1e-21)
        return 1.0 - t2 / 6.0 + t2 * t2 / 120.0, 0.5 - t2 / 24.0 + t2 * t2 / 720.0, \
            1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0
    t = math.sqrt(t2)
    h = math.sin(0.5 * t) / t
    return math.sin(t) / t, 2.0 * h * h, (t - math.sin(t)) / (t2 * t)


@njit(cache=True, inline="always")
def _mm(A, B, out):
    """out = A @ B (3x3)."""
    for i in range(3):
        for j in range(3):
            out[i, j] = A[i, 0] * B[0, j] + A[i, 1] * B[1, j] + A[i, 2] * B[2, j]


@njit(cache=True, inline="always")
def _mtm(A, B, out):
    """out = A^T @ B (3x3)."""
    for i in range(3):
        for j in range(3):
            out[i, j] = A[0, i] * B[0, j] + A[1, i] * B[1, j] + A[2, i] * B[2, j]


@njit(cache=True, inline="always")
def _mtv(A, x, out):
    """out = A^T @ x[:3] (3x3)."""
    for i in range(3):
        out[i] = A[0, i] * x[0] + A[1, i] * x[1] + A[2, i] * x[2]


@njit(cache=True, inline="always")
def _mv(A, x, out, sgn):
    """out += sgn A @ x (3x3, 3)."""
    for i in range(3):
        out[i] += sgn * (A[i, 0] * x[0] + A[i, 1] * x[1] + A[i, 2] * x[2])


@njit(cache=True)
def _rot_error(Rgb, Rga, W, out):
    """out = Rgb log(Rgb^T Rga) (3): the rotational pose error, world axes; W (3,3) work."""
    _mtm(Rgb, Rga, W)
    v = log_so3(W)
    out[:] = 0.0
    _mv(Rgb, v, out, 1.0)


@njit(cache=True, inline="always")
def _skew_into(r, out):
    out[0, 0] = out[1, 1] = out[2, 2] = 0.0
    out[0, 1], out[0, 2], out[1, 2] = -r[2], r[1], -r[0]
    out[1, 0], out[2, 0], out[2, 1] = r[2], -r[1], r[0]


@njit(cache=True)
def left_jacobian(th):
    """J_l(th) = sum_k S(th)^k / (k+1)! (3x3), so that exp(S(th)) - I = J_l(th) S(th):
    I + (1 - cos t)/t^2 S(th) + (t - sin t)/t^3 S(th)^2, t = |th|."""
    _, a, c = _coeffs(th)
    out = np.empty((3, 3))
    _poly(th, a, c, out)
    return out


@njit(cache=True, inline="always")
def _fill(R, M, G):
    """G (6,6) = [[I, -M], [0, R]]."""
    for i in range(6):
        for j in range(6):
            G[i, j] = 0.0
    for i in range(3):
        G[i, i] = 1.0
        for j in range(3):
            G[i, 3 + j] = -M[i, j]
            G[3 + i, 3 + j] = R[i, j]


@njit(cache=True, inline="always")
def _map(R, r, th, G, w1, w2, w3):
    """G (6,6) of a body turned by th (rad, body axes) over the step: anchor_map with its
    translational-angular block -R J_l(th) S(r) (module docstring); th = 0 gives anchor_map.
    w1..w3: (3,3) work arrays."""
    _, a, c = _coeffs(th)
    _poly(th, a, c, w1)
    _skew_into(r, w2)
    _mm(w1, w2, w3)
    _mm(R, w3, w1)
    _fill(R, w1, G)


@njit(cache=True, inline="always")
def _gthg(Gx, h, Gy, out, sgn):
    """out += sgn Gx^T diag(h) Gy (6x6)."""
    for p in range(6):
        for q in range(6):
            acc = 0.0
            for m in range(6):
                acc += Gx[m, p] * h[m] * Gy[m, q]
            out[p, q] += sgn * acc


@njit(cache=True, inline="always")
def _gthg_ut(Gx, h, Gy, out, sgn):
    """``_gthg`` for maps whose rotational rows have no translational part (Gx[3:, :3] =
    Gy[3:, :3] = 0, every map ``_fill`` and ``_combine`` make): the products with those zeros
    skipped, the rest summed in the same order (the same bits, but for the sign of a zero):
    135 multiply-adds, not 216 -- 2/3 of a coupling's arithmetic was its three G^T H G."""
    for p in range(6):
        for q in range(6):
            acc = 0.0
            for m in range(3):
                acc += Gx[m, p] * h[m] * Gy[m, q]
            if p >= 3 and q >= 3:
                for m in range(3, 6):
                    acc += Gx[m, p] * h[m] * Gy[m, q]
            out[p, q] += sgn * acc


@njit(cache=True, inline="always")
def _gtv(G, v, out, sgn):
    """out += sgn G^T v (6)."""
    for p in range(6):
        acc = 0.0
        for m in range(6):
            acc += G[m, p] * v[m]
        out[p] += sgn * acc


@njit(cache=True, inline="always")
def _gv(G, v, out, sgn):
    """out += sgn G v (6)."""
    for m in range(6):
        acc = 0.0
        for p in range(6):
            acc += G[m, p] * v[p]
        out[m] += sgn * acc


@njit(cache=True)
def _secant(Rwa, RA, tha, Rwb, RB, thb, has_a, e_rot, Ga, Gb):
    """The rotational rows' secant (module docstring): their exact change over the step less
    its linear part, c = de - (R_a th_a - R_b th_b), spread over the turns:
    G_a,rot += c th_a^T / s,  G_b,rot -= c th_b^T / s,  s = |th_a|^2 + |th_b|^2."""
    s = thb[0] * thb[0] + thb[1] * thb[1] + thb[2] * thb[2]
    if has_a:
        s += tha[0] * tha[0] + tha[1] * tha[1] + tha[2] * tha[2]
    if s <= SECANT_FLOOR:
        return
    E, W, Rgb1, Rga1 = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    cr = np.zeros(3)
    x, y, _ = _coeffs(thb)
    _poly(thb, x, y, E)
    _mm(Rwb, E, W)
    _mm(W, RB, Rgb1)
    _mv(Rwb, thb, cr, 1.0)                 # less the linear part  R_a th_a - R_b th_b
    if has_a:
        x, y, _ = _coeffs(tha)
        _poly(tha, x, y, E)
        _mm(Rwa, E, W)
        _mm(W, RA, Rga1)
        _mv(Rwa, tha, cr, -1.0)
    else:
        Rga1[:] = RA
    e1 = np.empty(3)
    _rot_error(Rgb1, Rga1, W, e1)
    for i in range(3):
        cr[i] = (cr[i] + e1[i] - e_rot[i]) / s
    for i in range(3):
        for j in range(3):
            Gb[3 + i, 3 + j] -= cr[i] * thb[j]
            if has_a:
                Ga[3 + i, 3 + j] += cr[i] * tha[j]


@njit(cache=True)
def coupling_terms(a, b, r_a, R_a, r_b, R_b, K, D, p_w, R_wb, V, theta, T, A, rhs):
    """Every coupling's midpoint spring-damper (module docstring) with the bodies' turns theta
    (B,3) over the step: adds the diagonal terms to the bodies' blocks A (B,6,6) and
    right-hand sides rhs (B,6) in place and returns the off-diagonal blocks A_ab (c,6,6) (zero
    where a is the world), the pose errors e (c,6) and F0 = K e + H e_dot_k (c,6)."""
    c = b.shape[0]
    Aab = np.zeros((c, 6, 6))
    err = np.zeros((c, 6))
    force = np.zeros((c, 6))
    Ga = np.zeros((6, 6))
    Gb = np.zeros((6, 6))
    w1, w2, w3 = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    Rgb, Rga = np.empty((3, 3)), np.empty((3, 3))
    zero3 = np.zeros(3)
    ed, h, F0 = np.empty(6), np.empty(6), np.empty(6)
    for k in range(c):
        j = b[k]
        i = a[k]
        e = err[k]
        _mm(R_wb[j], R_b[k], Rgb)
        _map(R_wb[j], r_b[k], theta[j], Gb, w1, w2, w3)
        for q in range(3):
            e[q] = -p_w[j, q]
        _mv(R_wb[j], r_b[k], e, -1.0)
        if i >= 0:
            _mm(R_wb[i], R_a[k], Rga)
            _map(R_wb[i], r_a[k], theta[i], Ga, w1, w2, w3)
            for q in range(3):
                e[q] += p_w[i, q]
            _mv(R_wb[i], r_a[k], e, 1.0)
        else:
            Rga[:] = R_a[k]
            for q in range(3):
                e[q] += r_a[k, q]
        _rot_error(Rgb, Rga, w1, e[3:])
        rot = False
        for q in range(3, 6):
            rot = rot or K[k, q] != 0.0 or D[k, q] != 0.0
        if rot:
            if i >= 0:
                _secant(R_wb[i], R_a[k], theta[i], R_wb[j], R_b[k], theta[j], True, e[3:], Ga, Gb)
            else:
                _secant(R_wb[j], R_a[k], zero3, R_wb[j], R_b[k], theta[j], False, e[3:], Ga, Gb)
        ed[:] = 0.0
        _gv(Gb, V[j], ed, -1.0)
        if i >= 0:
            _gv(Ga, V[i], ed, 1.0)
        for q in range(6):
            h[q] = 0.5 * (K[k, q] * T / 2 + D[k, q])
            F0[q] = K[k, q] * e[q] + h[q] * ed[q]
        force[k] = F0
        _gthg_ut(Gb, h, Gb, A[j], 1.0)
        _gtv(Gb, F0, rhs[j], 1.0)
        if i >= 0:
            _gthg_ut(Ga, h, Ga, A[i], 1.0)
            _gtv(Ga, F0, rhs[i], -1.0)
            _gthg_ut(Ga, h, Gb, Aab[k], -1.0)
    return Aab, err, force


# ---- couplings diagonal in a's anchor frame (FRAME_ANCHOR) --------------------------------------

FRAME_WORLD = 0    # K, D diagonal in world axes (the chain, the belt, the arm's grasp)
FRAME_ANCHOR = 1   # K, D diagonal in a's anchor frame R_ga (a Cosserat rod's strains)


@njit(cache=True, inline="always")
def _log_into(R, out):
    """out = ``so3.log_so3``(R), the same arithmetic without its two allocations (the cable's
    kernels take ~10 logs a coupling a step); near pi it calls log_so3 itself."""
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    c = min(1.0, max(-1.0, c))
    th = math.acos(c)
    if th < 1e-6:
        f = 0.5 * (1.0 + th * th / 6.0)
    elif math.pi - th < 1e-4:
        out[:] = log_so3(R)
        return
    else:
        f = th / (2.0 * math.sin(th))
    out[0] = f * (R[2, 1] - R[1, 2])
    out[1] = f * (R[0, 2] - R[2, 0])
    out[2] = f * (R[1, 0] - R[0, 1])


@njit(cache=True, inline="always")
def _local_static(has_a, pa, Rwa, RA, ra, pb, Rwb, RB, rb, e, W, vw):
    """A FRAME_ANCHOR coupling's turn-free part (``_local_turned`` has the rest): the error
    e (6) = [R_ga^T (x_a - x_b); log(R_gb^T R_ga)] and, in the work arrays, the
    anchor frames R_ga = W[3], R_gb = W[5], the rotational rows' linear part R_ga^T R_wb = W[7],
    d = x_a - x_b = vw[0] and R_wa^T d = vw[3] (``_local_turned`` reads them)."""
    w1, Rga, Rgb, Lb = W[0], W[3], W[5], W[7]
    d, u, ua = vw[0], vw[1], vw[3]
    d[:] = 0.0
    _mm(Rwb, RB, Rgb)
    for q in range(3):
        d[q] = -pb[q]
    _mv(Rwb, rb, d, -1.0)
    if has_a:
        _mm(Rwa, RA, Rga)
        for q in range(3):
            d[q] += pa[q]
        _mv(Rwa, ra, d, 1.0)
    else:
        Rga[:] = RA
        for q in range(3):
            d[q] += ra[q]
    _mtv(Rga, d, u)
    for q in range(3):
        e[q] = u[q]
    if has_a:
        _mtv(Rwa, d, ua)
    _mtm(Rgb, Rga, w1)
    _log_into(w1, u)
    for q in range(3):
        e[3 + q] = u[q]
    _mtm(Rga, Rwb, Lb)


@njit(cache=True, inline="always")
def _side(R, RX, r, th, Gw, R1, w1, w2, w3):
    """One body's part of ``_local_turned`` at its turn th: Gw = ``_map``(R, r, th) (the anchor's
    world rows) and R1 = R exp(S(th)) RX (the reached anchor frame); the coefficients once."""
    s, a, c = _coeffs(th)
    _poly(th, a, c, w1)            # J_l(th), as _map
    _skew_into(r, w2)
    _mm(w1, w2, w3)
    _mm(R, w3, w1)
    _fill(R, w1, Gw)
    _poly(th, s, a, w1)            # exp(S(th))
    _mm(R, w1, w2)
    _mm(w2, RX, R1)


@njit(cache=True, inline="always")
def _frame_turn(RA, tha, ua, out, w1, w2, w3):
    """out = R_A^T J_r(th_a) S(R_wa^T d) (3x3): the a frame's own turn in the translational rows."""
    _skew_into(ua, w2)
    _, x, y = _coeffs(tha)
    _poly(tha, -x, y, w1)              # J_r(th_a) = J_l(-th_a)
    _mm(w1, w2, w3)
    _mtm(RA, w3, out)


@njit(cache=True, inline="always")
def _combine(has_a, RA, tha, thb, rot, Gwa, Rga1, Jta, Gwb, Rgb1, Lb, Ga, Gb, e, w1, cr, v1):
    """Ga, Gb (6,6) from the sides (``_side``, ``_frame_turn``) and ``_local_static``'s e, Lb."""
    for p in range(6):
        for q in range(6):
            Ga[p, q] = 0.0
            Gb[p, q] = 0.0
    # translational rows: R_ga1^T times the world rows (the anchors' exact displacements) ...
    for q in range(3):
        for col in range(6):
            acc_b = 0.0
            acc_a = 0.0
            for m in range(3):
                acc_b += Rga1[m, q] * Gwb[m, col]
                acc_a += Rga1[m, q] * Gwa[m, col]
            Gb[q, col] = acc_b
            Ga[q, col] = acc_a
    # ... plus the frame's own turn: (R_ga1 - R_ga)^T d = R_A^T J_r(th_a) S(R_wa^T d) th_a
    if has_a:
        for q in range(3):
            for col in range(3):
                Ga[q, 3 + col] += Jta[q, col]
    # rotational rows: log(R_gb^T R_ga) (the same vector in a's and b's anchor frames);
    # linear part [0, R_A^T] and [0, R_ga^T R_wb]
    for q in range(3):
        for col in range(3):
            Gb[3 + q, 3 + col] = Lb[q, col]
            if has_a:
                Ga[3 + q, 3 + col] = RA[col, q]
    if not rot:
        return
    s = thb[0] * thb[0] + thb[1] * thb[1] + thb[2] * thb[2]
    if has_a:
        s += tha[0] * tha[0] + tha[1] * tha[1] + tha[2] * tha[2]
    if s <= SECANT_FLOOR:
        return
    _mtm(Rgb1, Rga1, w1)
    _log_into(w1, v1)
    for q in range(3):
        acc = v1[q] - e[3 + q]
        for col in range(3):
            acc += Gb[3 + q, 3 + col] * thb[col]
            if has_a:
                acc -= Ga[3 + q, 3 + col] * tha[col]
        cr[q] = acc / s
    for q in range(3):
        for col in range(3):
            Gb[3 + q, 3 + col] -= cr[q] * thb[col]
            if has_a:
                Ga[3 + q, 3 + col] += cr[q] * tha[col]


@njit(cache=True, inline="always")
def _local_turned(has_a, Rwa, RA, ra, tha, Rwb, RB, rb, thb, rot, Ga, Gb, e, W, Gw, vw):
    """A FRAME_ANCHOR coupling's maps Ga, Gb (6,6) at the turns (tha, thb), with
    e_k+1 - e_k = T (Ga V_a,mid - Gb V_b,mid) for the poses PMI reaches with those turns (module
    docstring, "Frames"): translational rows exact, rotational rows the secant (rot: the
    rotational rows carry a gain, else no secant); from what ``_local_static`` left in e, W and
    vw.  W (9,3,3), Gw (2,6,6), vw (5,3): work arrays (no allocation per call).  Split from
    the turn-free part so that Newton's differences in the turns, and the several ``terms``
    calls of a step (``local_statics``), redo only this.
    W[8] holds R_A^T J_r(th_a) S(R_wa^T d) (``_frame_turn``)."""
    w1, w2, w3, Rga1, Rgb1, Lb, Jta = W[0], W[1], W[2], W[4], W[6], W[7], W[8]
    Gwa, Gwb = Gw[0], Gw[1]
    cr, ua, v1 = vw[2], vw[3], vw[4]
    _side(Rwb, RB, rb, thb, Gwb, Rgb1, w1, w2, w3)
    if has_a:
        _side(Rwa, RA, ra, tha, Gwa, Rga1, w1, w2, w3)
        _frame_turn(RA, tha, ua, Jta, w1, w2, w3)
    else:
        Gwa[:] = 0.0
        Rga1[:] = RA
    _combine(has_a, RA, tha, thb, rot, Gwa, Rga1, Jta, Gwb, Rgb1, Lb, Ga, Gb, e, w1, cr, v1)


@njit(cache=True)
def _local_terms_range(lo, hi, a, b, r_a, R_a, r_b, R_b, K, D, frame, p_w, R_wb, V, theta, T, Aab, err, force, Da,
                       Db, ra_, rb_, st_e, st_L, st_u, cached):
    """``local_terms``' couplings lo .. hi-1, each into its own blocks Da, Db, ra_, rb_ (and Aab,
    err, force): the work of one thread of ``local_terms_parallel``, all of ``local_terms``.
    `cached`: the turn-free part is read from st_e, st_L, st_u (``_local_static_range``) instead
    of formed again."""
    Ga, Gb = np.zeros((6, 6)), np.zeros((6, 6))
    W, Gw, vw = np.empty((9, 3, 3)), np.zeros((2, 6, 6)), np.empty((5, 3))
    ed, h, F0 = np.zeros(6), np.empty(6), np.empty(6)
    pa, Rwa, tha = np.zeros(3), np.eye(3), np.zeros(3)      # body a's pose and turn (the world's: none)
    for k in range(lo, hi):
        if frame[k] != FRAME_ANCHOR:
            continue
        ed[:] = 0.0
        j = b[k]
        i = a[k]
        has_a = i >= 0
        rot = False
        for q in range(3, 6):
            rot = rot or K[k, q] != 0.0 or D[k, q] != 0.0
        e = err[k]
        if has_a:
            pa[:] = p_w[i]
            Rwa[:] = R_wb[i]
            tha[:] = theta[i]
        else:
            pa[:] = 0.0
            Rwa[:] = np.eye(3)
            tha[:] = 0.0
        # the turn-free part (cached or formed), then the maps at theta: one call site each, body a
        # or the world as data (numba inlines a helper at every site: with a site for each this
        # kernel compiled in 32 s from a cold cache, against 24 s, and ran ~7 % faster)
        if cached:
            e[:] = st_e[k]
            W[7] = st_L[k]
            vw[3] = st_u[k]
        else:
            _local_static(has_a, pa, Rwa, R_a[k], r_a[k], p_w[j], R_wb[j], R_b[k], r_b[k], e, W, vw)
        _local_turned(has_a, Rwa, R_a[k], r_a[k], tha, R_wb[j], R_b[k], r_b[k], theta[j], rot, Ga, Gb, e, W, Gw, vw)
        _gv(Gb, V[j], ed, -1.0)
        if has_a:
            _gv(Ga, V[i], ed, 1.0)
        for q in range(6):
            h[q] = 0.5 * (K[k, q] * T / 2 + D[k, q])
            F0[q] = K[k, q] * e[q] + h[q] * ed[q]
        force[k] = F0
        Aab[k] = 0.0
        _gthg_ut(Gb, h, Gb, Db[k], 1.0)
        _gtv(Gb, F0, rb_[k], 1.0)
        if i >= 0:
            _gthg_ut(Ga, h, Ga, Da[k], 1.0)
            _gtv(Ga, F0, ra_[k], -1.0)
            _gthg_ut(Ga, h, Gb, Aab[k], -1.0)


@njit(cache=True)
def local_terms(a, b, r_a, R_a, r_b, R_b, K, D, frame, p_w, R_wb, V, theta, T, A, rhs, Aab, err, force, st_e, st_L,
                st_u, cached):
    """``coupling_terms`` for the FRAME_ANCHOR couplings (frame[k] == 1; the others are left
    alone): their terms added to A (B,6,6), rhs (B,6), and written into Aab (c,6,6), err (c,6),
    force (c,6) in place: each coupling into its own blocks, then added up in order.  `cached`:
    the turn-free part from st_e, st_L, st_u (``local_statics``)."""
    c = b.shape[0]
    Da, Db = np.zeros((c, 6, 6)), np.zeros((c, 6, 6))
    ra_, rb_ = np.zeros((c, 6)), np.zeros((c, 6))
    # np.int64(0), not 0: a literal 0 is typed Literal[int](0), a second specialization of the
    # range kernel beside the parallel kernel's (int64, int64) -- one more cold compile (~20 s)
    _local_terms_range(np.int64(0), c, a, b, r_a, R_a, r_b, R_b, K, D, frame, p_w, R_wb, V, theta, T, Aab, err, force,
                       Da, Db, ra_, rb_, st_e, st_L, st_u, cached)
    _gather(a, b, frame, Da, Db, ra_, rb_, A, rhs)


@njit(cache=True)
def _local_static_range(a, b, r_a, R_a, r_b, R_b, frame, p_w, R_wb, st_e, st_L, st_u):
    """``_local_static`` of every FRAME_ANCHOR coupling into st_e (c,6), st_L (c,3,3), st_u (c,3):
    the error, the rotational rows' linear part R_ga^T R_wb and R_wa^T d -- all that
    ``_local_turned`` reads of it."""
    W, vw = np.empty((9, 3, 3)), np.empty((5, 3))
    e = np.empty(6)
    z3, eye = np.zeros(3), np.eye(3)
    for k in range(b.shape[0]):
        if frame[k] != FRAME_ANCHOR:
            continue
        i, j = a[k], b[k]
        if i >= 0:
            _local_static(True, p_w[i], R_wb[i], R_a[k], r_a[k], p_w[j], R_wb[j], R_b[k], r_b[k], e, W, vw)
        else:
            _local_static(False, z3, eye, R_a[k], r_a[k], p_w[j], R_wb[j], R_b[k], r_b[k], e, W, vw)
            vw[3] = 0.0
        st_e[k] = e
        st_L[k] = W[7]
        st_u[k] = vw[3]


def local_statics(cp: Couplings, p_w, R_wb):
    """(st_e (c,6), st_L (c,3,3), st_u (c,3)): the FRAME_ANCHOR couplings' turn-free part at the
    poses (p_w, R_wb), formed once for the several ``terms`` calls a step's ``turns`` makes at
    other turns (the same numbers, bit for bit).  None without FRAME_ANCHOR couplings."""
    kinds = _kinds(cp)
    if not kinds.framed:
        return None
    c = len(cp)
    st = np.zeros((c, 6)), np.zeros((c, 3, 3)), np.zeros((c, 3))
    _local_static_range(cp.a, cp.b, cp.r_a, cp.R_a, cp.r_b, cp.R_b, kinds.frame, p_w, R_wb, *st)
    return st


_NO_STATIC = (np.zeros((0, 6)), np.zeros((0, 3, 3)), np.zeros((0, 3)))


@njit(cache=True, parallel=True)
def _local_terms_chunks(a, b, r_a, R_a, r_b, R_b, K, D, frame, p_w, R_wb, V, theta, T, Aab, err, force, Da, Db, ra_,
                        rb_, st_e, st_L, st_u, cached, chunks):
    """``_local_terms_range`` over `chunks` contiguous runs of couplings, one per thread: the
    one parallel region (nothing else here, so numba adds no other)."""
    c = b.shape[0]
    for ch in prange(chunks):
        _local_terms_range(ch * c // chunks, (ch + 1) * c // chunks, a, b, r_a, R_a, r_b, R_b, K, D, frame, p_w,
                           R_wb, V, theta, T, Aab, err, force, Da, Db, ra_, rb_, st_e, st_L, st_u, cached)


@njit(cache=True)
def local_terms_parallel(a, b, r_a, R_a, r_b, R_b, K, D, frame, p_w, R_wb, V, theta, T, A, rhs, Aab, err, force,
                         st_e, st_L, st_u, cached, chunks):
    """``local_terms`` with the couplings split into `chunks` contiguous runs, one per thread
    (prange): each coupling's arithmetic and the ordered gather are the same, so the result is
    bit for bit ``local_terms``' (tests)."""
    c = b.shape[0]
    Da, Db = np.zeros((c, 6, 6)), np.zeros((c, 6, 6))
    ra_, rb_ = np.zeros((c, 6)), np.zeros((c, 6))
    _local_terms_chunks(a, b, r_a, R_a, r_b, R_b, K, D, frame, p_w, R_wb, V, theta, T, Aab, err, force, Da, Db, ra_,
                        rb_, st_e, st_L, st_u, cached, chunks)
    _gather(a, b, frame, Da, Db, ra_, rb_, A, rhs)


@njit(cache=True)
def _gather(a, b, frame, Da, Db, ra_, rb_, A, rhs):
    """A[b_k] += Db[k], A[a_k] += Da[k] (and rhs), the FRAME_ANCHOR couplings in order."""
    for k in range(b.shape[0]):
        if frame[k] != FRAME_ANCHOR:
            continue
        A[b[k]] += Db[k]
        rhs[b[k]] += rb_[k]
        if a[k] >= 0:
            A[a[k]] += Da[k]
            rhs[a[k]] += ra_[k]


# The turn step of the FRAME_ANCHOR couplings' finite-difference turn stiffness (rad), relative
# to the turn (at least TURN_FLOOR): forward differences (7 map evaluations a coupling, not
# central's 13), so the derivative is off by ~TURN_FD |theta| (the maps vary on a scale of a
# radian) and ~rounding / (TURN_FD TURN_FLOOR) = 1e-8: Newton then gains ~1e-5 a pass at the
# worst, its pass counts unchanged (measured 3-4 a step on the free seed cable)
TURN_FD = 1e-5


@njit(cache=True, inline="always")
def _forces(has_a, K, h, Vsa, Vsb, Ga, Gb, e, F, Qa, Qb):
    """F = K e + h (Ga Vsa - Gb Vsb), Qa = -Ga^T F, Qb = Gb^T F: a FRAME_ANCHOR coupling's
    generalized forces with the velocity sums Vs = V_k + V+ held, at the maps Ga, Gb."""
    F[:] = 0.0
    _gv(Gb, Vsb, F, -1.0)
    if has_a:
        _gv(Ga, Vsa, F, 1.0)
    for q in range(6):
        F[q] = K[q] * e[q] + h[q] * F[q]
    Qa[:] = 0.0
    Qb[:] = 0.0
    _gtv(Ga, F, Qa, -1.0)
    _gtv(Gb, F, Qb, 1.0)


@njit(cache=True)
def _local_newton_range(lo, hi, a, b, r_a, R_a, r_b, R_b, K, D, frame, p_w, R_wb, V, Vn, theta, T, Jab, Jba, Da,
                        Db):
    """``local_newton_terms``' couplings lo .. hi-1 into their own blocks Da, Db (and Jab, Jba):
    the work of one thread of ``local_newton_parallel``, all of ``local_newton_terms``."""
    Ga, Gb = np.zeros((6, 6)), np.zeros((6, 6))
    W, Gw, vw = np.empty((9, 3, 3)), np.zeros((2, 6, 6)), np.empty((5, 3))
    e, h, F = np.empty(6), np.empty(6), np.empty(6)
    Qa1, Qb1, Qa2, Qb2 = np.empty(6), np.empty(6), np.empty(6), np.empty(6)
    Vsa, Vsb = np.zeros(6), np.empty(6)
    tha, thb = np.zeros(3), np.empty(3)
    pa, Rwa = np.zeros(3), np.eye(3)
    G2, W2 = np.zeros((2, 6, 6)), np.empty((3, 3, 3))     # a nudged side: (Gwa, Gwb), (Rga1, Rgb1, Jta)
    w1, w2, w3 = W[0], W[1], W[2]
    for k in range(lo, hi):
        if frame[k] != FRAME_ANCHOR:
            continue
        j = b[k]
        i = a[k]
        has_a = i >= 0
        rot = False
        for q in range(3, 6):
            rot = rot or K[k, q] != 0.0 or D[k, q] != 0.0
        for q in range(6):
            h[q] = 0.5 * (K[k, q] * T / 2 + D[k, q])
            Vsb[q] = V[j, q] + Vn[j, q]
            if has_a:
                Vsa[q] = V[i, q] + Vn[i, q]
        if has_a:
            pa[:] = p_w[i]
            Rwa[:] = R_wb[i]
        else:
            pa[:] = 0.0
            Rwa[:] = np.eye(3)
            tha[:] = 0.0
            Vsa[:] = 0.0
        thb[:] = theta[j]
        if has_a:
            tha[:] = theta[i]
        # the error and frames once (``_local_static``); the maps at theta (cc = -2: b's side, -1:
        # a's, then their G^T H G), then with one turn nudged (cc = 0..2: b's, 3..5: a's): only
        # that body's side (``_side``) is redone.  One call site per helper: numba inlines a
        # helper at every site, and with the maps at theta inlined apart (``_local_turned``) this
        # kernel compiled in 32 s from a cold cache, against 13-15 s, and ran 10-20 % faster
        # (the serial kernel at 160 links, 2026-11-27: 460 against 570 us; the same numbers)
        _local_static(has_a, pa, Rwa, R_a[k], r_a[k], p_w[j], R_wb[j], R_b[k], r_b[k], e, W, vw)
        na = 6 if has_a else 3
        for cc in range(-2, na):
            nudge = cc >= 0
            body_b = cc == -2 or (nudge and cc < 3)
            th = thb if body_b else tha
            q0, t0, st = 0, 0.0, 1.0
            if nudge:
                q0 = cc % 3
                t0 = th[q0]
                st = TURN_FD * max(math.sqrt(th[0] * th[0] + th[1] * th[1] + th[2] * th[2]), TURN_FLOOR)
                th[q0] = t0 + st
            # this side's map and reached frame, into the arrays at theta or the nudged ones
            G_s, R1 = Gw[0], W[4]
            J_s = W[8]
            if body_b and nudge:
                G_s, R1 = G2[1], W2[1]
            elif body_b:
                G_s, R1 = Gw[1], W[6]
            elif nudge:
                G_s, R1, J_s = G2[0], W2[0], W2[2]
            R_s, RX, r_s = Rwa, R_a[k], r_a[k]
            if body_b:
                R_s, RX, r_s = R_wb[j], R_b[k], r_b[k]
            if body_b or has_a:
                _side(R_s, RX, r_s, th, G_s, R1, w1, w2, w3)
                if not body_b:
                    _frame_turn(R_a[k], tha, vw[3], J_s, w1, w2, w3)
            else:                          # no body a: its anchor frame is the world's
                Gw[0][:] = 0.0
                W[4][:] = R_a[k]
            if cc == -2:
                continue
            GA, RA1, JA, GB, RB1 = Gw[0], W[4], W[8], Gw[1], W[6]
            if nudge and body_b:
                GB, RB1 = G2[1], W2[1]
            elif nudge:
                GA, RA1, JA = G2[0], W2[0], W2[2]
            _combine(has_a, R_a[k], tha, thb, rot, GA, RA1, JA, GB, RB1, W[7], Ga, Gb, e, w1, vw[2], vw[4])
            Qa, Qb = Qa2, Qb2
            if nudge:
                Qa, Qb = Qa1, Qb1
            _forces(has_a, K[k], h, Vsa, Vsb, Ga, Gb, e, F, Qa, Qb)
            if not nudge:                  # the maps at theta
                _gthg_ut(Gb, h, Gb, Db[k], 1.0)
                if has_a:
                    _gthg_ut(Ga, h, Ga, Da[k], 1.0)
                    _gthg_ut(Ga, h, Gb, Jab[k], -1.0)
                    _gthg_ut(Gb, h, Ga, Jba[k], -1.0)
                continue
            th[q0] = t0
            f = 0.5 * T / st               # d th / d w+ = T/2; the residual takes -Q
            for p in range(6):
                if body_b:
                    Db[k, p, 3 + q0] -= f * (Qb1[p] - Qb2[p])
                    if has_a:
                        Jab[k, p, 3 + q0] -= f * (Qa1[p] - Qa2[p])
                else:
                    Da[k, p, 3 + q0] -= f * (Qa1[p] - Qa2[p])
                    Jba[k, p, 3 + q0] -= f * (Qb1[p] - Qb2[p])


@njit(cache=True)
def local_newton_terms(a, b, r_a, R_a, r_b, R_b, K, D, frame, p_w, R_wb, V, Vn, theta, T, A, Jab, Jba):
    """``newton_terms`` for the FRAME_ANCHOR couplings, in place: G^T H G at theta, and the
    generalized forces' change with the turns (theta = T (w_k + w+)/2 moves with V+) by
    forward differences in the six turns a coupling sees (TURN_FD): the maps' whole
    dependence, the rotational rows' secant included."""
    c = b.shape[0]
    Da, Db = np.zeros((c, 6, 6)), np.zeros((c, 6, 6))
    zc, zb = np.zeros((c, 6)), np.zeros((A.shape[0], 6))   # no right-hand sides here
    _local_newton_range(np.int64(0), c, a, b, r_a, R_a, r_b, R_b, K, D, frame, p_w, R_wb, V, Vn, theta, T, Jab, Jba,
                        Da, Db)                    # np.int64(0): one specialization (``local_terms``)
    _gather(a, b, frame, Da, Db, zc, zc, A, zb)


@njit(cache=True, parallel=True)
def _local_newton_chunks(a, b, r_a, R_a, r_b, R_b, K, D, frame, p_w, R_wb, V, Vn, theta, T, Jab, Jba, Da, Db, chunks):
    """``_local_newton_range`` over `chunks` runs of couplings, one per thread (one region)."""
    c = b.shape[0]
    for ch in prange(chunks):
        _local_newton_range(ch * c // chunks, (ch + 1) * c // chunks, a, b, r_a, R_a, r_b, R_b, K, D, frame, p_w,
                            R_wb, V, Vn, theta, T, Jab, Jba, Da, Db)


@njit(cache=True)
def local_newton_parallel(a, b, r_a, R_a, r_b, R_b, K, D, frame, p_w, R_wb, V, Vn, theta, T, A, Jab, Jba, chunks):
    """``local_newton_terms`` in `chunks` contiguous runs of couplings, one per thread (prange):
    bit for bit the serial kernel's (``local_terms_parallel``)."""
    c = b.shape[0]
    Da, Db = np.zeros((c, 6, 6)), np.zeros((c, 6, 6))
    zc, zb = np.zeros((c, 6)), np.zeros((A.shape[0], 6))
    _local_newton_chunks(a, b, r_a, R_a, r_b, R_b, K, D, frame, p_w, R_wb, V, Vn, theta, T, Jab, Jba, Da, Db, chunks)
    _gather(a, b, frame, Da, Db, zc, zc, A, zb)


# The FRAME_ANCHOR kernels' parallel form (``local_terms_parallel``, ``local_newton_parallel``:
# one run of couplings per numba thread, bit for bit the serial kernels') is taken from this
# many couplings (None: never).  64: the 80- and 160-link cables; the shipped 40-link winding
# stays serial.  Measured on this 2-core machine with nothing else running
# (``bench/cable.py``, 2026-11-27): the 160-link winding with Solver 3, 4.95 -> 4.42 ms a step
# median.  With other processes on the cores each call's barrier waits on the scheduler (an
# earlier measurement: 2-8x slower than serial, docs/cable.md "Step cost") -- as do the contact
# solve's parallel kernels (``contact.island_solvers``).
PARALLEL_MIN_COUPLINGS: int | None = 64


def _chunks(cp: Couplings) -> int:
    """How many runs of couplings the FRAME_ANCHOR kernels split into: numba's threads, or 1
    (serial) below PARALLEL_MIN_COUPLINGS couplings or with it off."""
    if PARALLEL_MIN_COUPLINGS is None or len(cp) < PARALLEL_MIN_COUPLINGS:
        return 1
    return int(min(get_num_threads(), len(cp)))


@dataclass(frozen=True)
class _Kinds:
    """What the kernels need to know of a set of couplings, found once (``_kinds``)."""
    framed: bool                   # any coupling FRAME_ANCHOR (else the world-axes kernels alone run)
    anchor_only: bool              # every coupling FRAME_ANCHOR (no world rows to add)
    frame: np.ndarray | None       # (c,) int64, cp.frame as the kernels take it
    inner: np.ndarray              # (c_in,) int64, the couplings between two bodies (a >= 0)


def _kinds(cp: Couplings) -> _Kinds:
    """``_Kinds`` of cp, cached on it (the turns' passes ask several times a step; a Couplings
    is constant)."""
    got = cp.__dict__.get("_kinds_cache")
    if got is None:
        framed = cp.frame is not None and bool(np.any(cp.frame == FRAME_ANCHOR))
        got = _Kinds(framed, framed and bool(np.all(cp.frame == FRAME_ANCHOR)),
                     None if cp.frame is None else cp.frame.astype(np.int64), np.flatnonzero(cp.a >= 0))
        object.__setattr__(cp, "_kinds_cache", got)
    return got


def _world_only(cp: Couplings):
    """K, D with the FRAME_ANCHOR rows zeroed: what the world-axes kernels see of a mixed set."""
    w = (cp.frame != FRAME_ANCHOR)[:, None]
    return cp.K * w, cp.D * w


def terms(cp: Couplings, p_w, R_wb, V, theta, T: float, A, rhs, static=None):
    """(A_ab (c,6,6), e (c,6), F0 (c,6)) of every coupling at the turns theta, the diagonal terms
    added to A, rhs in place: ``coupling_terms``, and ``local_terms`` for FRAME_ANCHOR rows.
    `static`: ``local_statics`` at these poses (None: formed here)."""
    kinds = _kinds(cp)
    if not kinds.framed:
        return coupling_terms(cp.a, cp.b, cp.r_a, cp.R_a, cp.r_b, cp.R_b, cp.K, cp.D, p_w, R_wb, V, theta, T, A, rhs)
    if kinds.anchor_only:                   # no world rows: nothing for the world kernel to add
        c = len(cp)
        Aab, e, F0 = np.zeros((c, 6, 6)), np.zeros((c, 6)), np.zeros((c, 6))
    else:
        K0, D0 = _world_only(cp)
        Aab, e, F0 = coupling_terms(cp.a, cp.b, cp.r_a, cp.R_a, cp.r_b, cp.R_b, K0, D0, p_w, R_wb, V, theta, T, A,
                                    rhs)
    chunks = _chunks(cp)
    st = _NO_STATIC if static is None else static
    if chunks > 1:
        local_terms_parallel(cp.a, cp.b, cp.r_a, cp.R_a, cp.r_b, cp.R_b, cp.K, cp.D, kinds.frame, p_w,
                             R_wb, V, theta, T, A, rhs, Aab, e, F0, *st, static is not None, chunks)
    else:
        local_terms(cp.a, cp.b, cp.r_a, cp.R_a, cp.r_b, cp.R_b, cp.K, cp.D, kinds.frame, p_w, R_wb, V,
                    theta, T, A, rhs, Aab, e, F0, *st, static is not None)
    return Aab, e, F0


def _newton(cp: Couplings, R_wb, p_w, e, V, Vn, theta, T, J):
    """``newton_terms`` (world axes) and ``local_newton_terms`` (FRAME_ANCHOR rows)."""
    kinds = _kinds(cp)
    if not kinds.framed:
        return newton_terms(cp.a, cp.b, cp.r_a, cp.r_b, cp.K, cp.D, R_wb, e, V, Vn, theta, T, J)
    if kinds.anchor_only:
        Jab, Jba = np.zeros((len(cp), 6, 6)), np.zeros((len(cp), 6, 6))
    else:
        K0, D0 = _world_only(cp)
        Jab, Jba = newton_terms(cp.a, cp.b, cp.r_a, cp.r_b, K0, D0, R_wb, e, V, Vn, theta, T, J)
    chunks = _chunks(cp)
    if chunks > 1:
        local_newton_parallel(cp.a, cp.b, cp.r_a, cp.R_a, cp.r_b, cp.R_b, cp.K, cp.D, kinds.frame, p_w,
                              R_wb, V, Vn, theta, T, J, Jab, Jba, chunks)
    else:
        local_newton_terms(cp.a, cp.b, cp.r_a, cp.R_a, cp.r_b, cp.R_b, cp.K, cp.D, kinds.frame, p_w,
                           R_wb, V, Vn, theta, T, J, Jab, Jba)
    return Jab, Jba


def left_jacobian_numpy(th) -> np.ndarray:
    """``left_jacobian`` in NumPy (the reference)."""
    t = float(np.linalg.norm(th))
    K = np.array([[0.0, -th[2], th[1]], [th[2], 0.0, -th[0]], [-th[1], th[0], 0.0]])
    if t < 1e-3:
        a, c = 0.5 - t ** 2 / 24 + t ** 4 / 720, 1 / 6 - t ** 2 / 120 + t ** 4 / 5040
    else:
        a, c = 2 * (np.sin(t / 2) / t) ** 2, (t - np.sin(t)) / t ** 3    # a = (1 - cos t) / t^2
    return np.eye(3) + a * K + c * K @ K


def turned_map(R_wb, r_b, th) -> np.ndarray:
    """``_map`` in NumPy: anchor_map of a body that turns by th (body axes) over the step."""
    G = anchor_map(R_wb, r_b)
    G[:3, 3:] = -R_wb @ left_jacobian_numpy(th) @ np.array([[0.0, -r_b[2], r_b[1]], [r_b[2], 0.0, -r_b[0]],
                                                            [-r_b[1], r_b[0], 0.0]])
    return G


def _local_maps_numpy(cp: Couplings, k, i, j, p_w, R_wb, theta):
    """``_local_static`` and ``_local_turned`` in NumPy, written from the module docstring's "Frames" directly: the
    translational rows from the reached anchor frame, the rotational rows' secant from the
    reached log."""
    from scipy.spatial.transform import Rotation

    def S(x):
        return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])

    def turn(th):
        return Rotation.from_rotvec(th).as_matrix()

    world = i == WORLD
    tha = np.zeros(3) if world else theta[i]
    Rwa = np.eye(3) if world else R_wb[i]
    xa = cp.r_a[k] if world else p_w[i] + R_wb[i] @ cp.r_a[k]
    Rga, Rga1 = Rwa @ cp.R_a[k], Rwa @ turn(tha) @ cp.R_a[k]
    Rgb, Rgb1 = R_wb[j] @ cp.R_b[k], R_wb[j] @ turn(theta[j]) @ cp.R_b[k]
    d = xa - (p_w[j] + R_wb[j] @ cp.r_b[k])
    Gb = np.zeros((6, 6))
    Gb[:3] = Rga1.T @ turned_map(R_wb[j], cp.r_b[k], theta[j])[:3]
    Gb[3:, 3:] = Rga.T @ R_wb[j]
    Ga = np.zeros((6, 6))
    if not world:
        Ga[:3] = Rga1.T @ turned_map(Rwa, cp.r_a[k], tha)[:3]
        Ga[:3, 3:] += cp.R_a[k].T @ left_jacobian_numpy(-tha) @ S(Rwa.T @ d)
        Ga[3:, 3:] = cp.R_a[k].T
    e = np.concatenate([Rga.T @ d, Rotation.from_matrix(Rgb.T @ Rga).as_rotvec()])
    s = theta[j] @ theta[j] + tha @ tha
    if (np.any(cp.K[k, 3:] != 0) or np.any(cp.D[k, 3:] != 0)) and s > SECANT_FLOOR:
        de = Rotation.from_matrix(Rgb1.T @ Rga1).as_rotvec() - e[3:]
        cr = (de - (Ga[3:, 3:] @ tha - Gb[3:, 3:] @ theta[j])) / s
        Gb[3:, 3:] -= np.outer(cr, theta[j])
        if not world:
            Ga[3:, 3:] += np.outer(cr, tha)
    return Ga, Gb, e


def coupling_terms_numpy(cp: Couplings, p_w, R_wb, V, theta, T, A, rhs):
    """``coupling_terms`` in plain NumPy, one coupling at a time (the reference the kernel is
    tested against)."""
    from scipy.spatial.transform import Rotation
    Aab, err, force = np.zeros((len(cp), 6, 6)), np.zeros((len(cp), 6)), np.zeros((len(cp), 6))
    for k in range(len(cp)):
        i, j = int(cp.a[k]), int(cp.b[k])
        Gb = turned_map(R_wb[j], cp.r_b[k], theta[j])
        Rgb, xb = R_wb[j] @ cp.R_b[k], p_w[j] + R_wb[j] @ cp.r_b[k]
        if i == WORLD:
            Ga, Rga, xa, Va, tha = np.zeros((6, 6)), cp.R_a[k], cp.r_a[k], np.zeros(6), np.zeros(3)
        else:
            Ga, Rga, xa, Va, tha = (turned_map(R_wb[i], cp.r_a[k], theta[i]), R_wb[i] @ cp.R_a[k],
                                    p_w[i] + R_wb[i] @ cp.r_a[k], V[i], theta[i])
        e = np.concatenate([xa - xb, Rgb @ Rotation.from_matrix(Rgb.T @ Rga).as_rotvec()])
        s = theta[j] @ theta[j] + tha @ tha
        if cp.frame is not None and cp.frame[k] == FRAME_ANCHOR:
            Ga, Gb, e = _local_maps_numpy(cp, k, i, j, p_w, R_wb, theta)
        elif (np.any(cp.K[k, 3:] != 0) or np.any(cp.D[k, 3:] != 0)) and s > SECANT_FLOOR:
            Rb1 = R_wb[j] @ Rotation.from_rotvec(theta[j]).as_matrix() @ cp.R_b[k]
            Ra1 = Rga if i == WORLD else R_wb[i] @ Rotation.from_rotvec(tha).as_matrix() @ cp.R_a[k]
            lin = (0.0 if i == WORLD else R_wb[i] @ tha) - R_wb[j] @ theta[j]
            cr = (Rb1 @ Rotation.from_matrix(Rb1.T @ Ra1).as_rotvec() - e[3:] - lin) / s
            Gb[3:, 3:] -= np.outer(cr, theta[j])
            if i != WORLD:
                Ga[3:, 3:] += np.outer(cr, tha)
        H = np.diag(0.5 * (cp.K[k] * T / 2 + cp.D[k]))
        F0 = cp.K[k] * e + H @ (Ga @ Va - Gb @ V[j])
        Aaa, Abb, Aab_k, ba, bb = potential_terms(Ga, Gb, H, F0)
        A[j] += Abb
        rhs[j] += bb
        if i != WORLD:
            A[i] += Aaa
            rhs[i] += ba
            Aab[k] = Aab_k
        err[k], force[k] = e, F0
    return Aab, err, force


# Stop the turn iteration when a Newton pass would change the turns by less than this,
# relative to the largest turn.  A turn error d leaves an energy error of about
# |F| |r| |theta| d per coupling and step (module docstring): some 1e-10 theta^2 of the spring's
# work, far below 1e-6 over 1e4 steps.  Not smaller: the rotational rows' secant divides by
# |theta|^2, so the passes stall at a rounding floor (measured 1e-14 rad at |theta| = 1.5e-3 to
# 2.5e-3, i.e. ~1e-11 relative, on the chain with its 0.05 N m/rad bending springs).
TURN_TOL = 1e-10
# Passes allowed: converging steps take 2-4 at T = 1 ms and up to ~15 where links turn ~1 rad a
# step (10 links, T = 10 ms); past that it is not converging (a chain the step does not resolve)
# and more passes only cost time.
TURN_MAX_ITER = 20
# Below this turn (rad) the tolerance is absolute, TURN_TOL * TURN_FLOOR: a body at rest is
# converged when its turn is zero to rounding.
TURN_FLOOR = 1e-3
# Newton forms a new matrix when a pass shrank by less than this factor on the pass before; a
# matrix that still gains 10x a pass is kept -- through the passes (chord passes), and into the
# next step (``turns``' `newton`, ``types.Warm.newton``).  Measured on the 160-link winding
# (200 steps, 2026-11-27): 2.2 -> 1.0 matrices a step (each ~0.5 ms, forward differences),
# 5.4 -> 5.0 passes, at most 7; at 0.3: 0.6 matrices but 6.5 passes, at most 10.  (Before, a
# matrix was formed afresh each step and refreshed while a pass changed the turns by more than
# 1e-2 of the largest: the first, at the contact-free prediction's start, gains only ~3x.)
NEWTON_CONTRACTION = 0.1
# The passes also stop once a pass would change the turns by less than this fraction of the last
# step's gap (``types.Warm.turn_gap``: how far that step's solve moved the turns from the
# prediction -- the contacts' doing, as the prediction leaves them out).  The couplings' terms
# are then taken at turns off by the gap anyway; refining the prediction far below it buys
# nothing.  On the wound coil the gap is about the turns themselves (0.15 rad at 160 links: the
# drum holds links the prediction lets turn), and the passes past the second (d 5e-4 of the
# largest turn, then 2e-5, 1e-7, ... 1e-12) are saved: 160-link winding, Solver 3, 5.4 -> 2
# passes a step, the step 4.9 -> 3.7 ms median (docs/cable.md "Step cost").  A free cable's gap
# is the block solve's rounding (~1e-15 rad): TURN_TOL holds and its energy stays exact.  A gap
# that closes (a link lifting off) tightens the stop the next step.
TURN_GAP_FRACTION = 1e-3
# The most a Newton pass may change a body's turn (rad): far from the solution (steps where a
# link turns ~1 rad) a full pass can overshoot; capped, it walks in (measured at T = 10 ms).
TURN_STEP = 0.3


@njit(cache=True)
def _residual(A, rhs, a, b, Aab, V):
    """rhs - A V over the coupled system (blocks A (B,6,6), off-diagonal Aab at (a, b))."""
    out = rhs.copy()
    for i in range(A.shape[0]):
        _gv(A[i], V[i], out[i], -1.0)
    for k in range(a.shape[0]):
        if a[k] >= 0:
            _gv(Aab[k], V[b[k]], out[a[k]], -1.0)
            _gtv(Aab[k], V[a[k]], out[b[k]], -1.0)
    return out


@njit(cache=True)
def _tangent(R, r, th, G, w1, w2, w3):
    """G (6,6): the exact derivative of a body's anchor displacement over the step
    (T v_mid + R (exp(S(th)) - I) r; rotations [0, R]) with respect to T V_mid, at th:
    [[I, -R exp(S(th)) S(r) J_r(th)], [0, R]],  J_r(th) = J_l(-th) = I - a S(th) + c S(th)^2."""
    s, a, c = _coeffs(th)
    _poly(th, s, a, w1)            # exp(S(th))
    _mm(R, w1, w3)
    _skew_into(r, w2)
    _mm(w3, w2, w1)                # R exp S(r)
    _poly(th, -a, c, w2)           # J_r
    _mm(w1, w2, w3)
    _fill(R, w3, G)


@njit(cache=True)
def _turn_stiffness(th, u, out):
    """out = d/dth [J_r(th) u] (3x3): J_r(th) u = u + a S(u) th + c (th th^T u - |th|^2 u),
    a = (1 - cos t)/t^2, c = (t - sin t)/t^3, t = |th|."""
    t2 = th[0] * th[0] + th[1] * th[1] + th[2] * th[2]
    if t2 < 1e-6:
        a, c, da, dc = 0.5 - t2 / 24.0, 1.0 / 6.0 - t2 / 120.0, -1.0 / 12.0, -1.0 / 60.0
    else:
        t = math.sqrt(t2)
        a, c = (1.0 - math.cos(t)) / t2, (t - math.sin(t)) / (t2 * t)
        da = (math.sin(t) / t2 - 2.0 * (1.0 - math.cos(t)) / (t2 * t)) / t                # a'(t) / t
        dc = ((1.0 - math.cos(t)) / (t2 * t) - 3.0 * (t - math.sin(t)) / (t2 * t2)) / t   # c'(t) / t
    tu = th[0] * u[0] + th[1] * u[1] + th[2] * u[2]
    g0 = u[1] * th[2] - u[2] * th[1]             # S(u) th = u x th
    g1 = u[2] * th[0] - u[0] * th[2]
    g2 = u[0] * th[1] - u[1] * th[0]
    g = (g0, g1, g2)
    _skew_into(u, out)
    for i in range(3):
        qi = tu * th[i] - t2 * u[i]
        for j in range(3):
            out[i, j] = a * out[i, j] + (da * g[i] + dc * qi) * th[j] + c * (th[i] * u[j] - 2.0 * u[i] * th[j])
        out[i, i] += c * tu


@njit(cache=True)
def newton_terms(a, b, r_a, r_b, K, D, R_wb, err, V, Vn, theta, T, A):
    """The derivative of the coupled residual A(theta) V+ - b(theta) - (couplings) with
    respect to V+, theta = T (w_k + w+)/2 moving with it, at the iterate Vn: the blocks A
    (B,6,6) gain G^T H Gt (Gt ``_tangent``) and the turn stiffness -+ T/2 S(r) d(J_r u)/dth
    (u = R^T F, the force at Vn); returns the off-diagonal (c,6,6) pairs (J_ab, J_ba).  The
    rotational rows' secant is left out (its derivative is small: the passes still converge)."""
    c = b.shape[0]
    Jab = np.zeros((c, 6, 6))
    Jba = np.zeros((c, 6, 6))
    Ga, Gb, Ta, Tb = np.zeros((6, 6)), np.zeros((6, 6)), np.zeros((6, 6)), np.zeros((6, 6))
    w1, w2, w3, S = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    h, ed, F, Vs, u = np.empty(6), np.empty(6), np.empty(6), np.empty(6), np.empty(3)
    for k in range(c):
        j = b[k]
        i = a[k]
        for q in range(6):
            h[q] = 0.5 * (K[k, q] * T / 2 + D[k, q])
        _map(R_wb[j], r_b[k], theta[j], Gb, w1, w2, w3)
        _tangent(R_wb[j], r_b[k], theta[j], Tb, w1, w2, w3)
        ed[:] = 0.0
        Vs[:] = V[j] + Vn[j]
        _gv(Gb, Vs, ed, -1.0)
        if i >= 0:
            _map(R_wb[i], r_a[k], theta[i], Ga, w1, w2, w3)
            _tangent(R_wb[i], r_a[k], theta[i], Ta, w1, w2, w3)
            Vs[:] = V[i] + Vn[i]
            _gv(Ga, Vs, ed, 1.0)
        for q in range(6):
            F[q] = K[k, q] * err[k, q] + h[q] * ed[q]
        _gthg(Gb, h, Tb, A[j], 1.0)
        _mtv(R_wb[j], F, u)
        _turn_stiffness(theta[j], u, w1)
        _skew_into(r_b[k], S)
        _mm(S, w1, w2)
        for p in range(3):
            for q in range(3):
                A[j, 3 + p, 3 + q] -= 0.5 * T * w2[p, q]
        if i >= 0:
            _gthg(Ga, h, Ta, A[i], 1.0)
            _mtv(R_wb[i], F, u)
            _turn_stiffness(theta[i], u, w1)
            _skew_into(r_a[k], S)
            _mm(S, w1, w2)
            for p in range(3):
                for q in range(3):
                    A[i, 3 + p, 3 + q] += 0.5 * T * w2[p, q]
            _gthg(Ga, h, Tb, Jab[k], -1.0)
            _gthg(Gb, h, Ta, Jba[k], -1.0)
    return Jab, Jba


def block_solve(cp: Couplings, A, Jab, Jba, rhs):
    """x (B,6) of the block system (A (B,6,6) diagonal, Jab / Jba (c,6,6) at (a, b) / (b, a)):
    on its blocks when the couplings between bodies form a forest (``blocktree``), else a
    sparse LU of ``blocktree.matrix``."""
    return block_solver(cp, A, Jab, Jba)(rhs)


def block_solver(cp: Couplings, A, Jab, Jba, fac=None):
    """``block_solve`` factorized once: a function rhs (B,6) -> x (B,6) (Newton's chord passes
    reuse a matrix, ``turns``), its factorization at ``.fac`` (None where sparse).  `fac`: that
    factorization of this same matrix, kept from before (not factorized again)."""
    w = _kinds(cp).inner
    a, b = cp.a[w], cp.b[w]
    ok, order, parent, edge = _tree(cp, A.shape[0], a, b)
    if ok:
        if fac is None:
            Jab, Jba = Jab[w], Jba[w]           # integer indexing: contiguous copies
            fac = (*blocktree.factor(A, order, parent, edge, a, Jab, Jba), Jab, Jba)
        LU, piv, Y, Jab, Jba = fac

        def solve(rhs):
            x = np.ascontiguousarray(rhs).reshape(-1, 6, 1).copy()
            blocktree.solve(LU, piv, Y, order, parent, edge, a, Jab, Jba, x)
            return x.reshape(-1, 6)
        solve.fac = fac
        return solve
    from scipy.sparse.linalg import spsolve
    M = blocktree.matrix(A, a, b, Jab[w], Jba[w])

    def solve_sparse(rhs):
        return spsolve(M, rhs.ravel()).reshape(-1, 6)
    solve_sparse.fac = None
    return solve_sparse


def _tree(cp: Couplings, nb: int, a, b):
    """``blocktree.tree`` of the couplings between bodies, cached on the couplings (``turns``
    solves several times a step)."""
    got = cp.__dict__.get("_tree_cache")
    if got is None or got[0] != nb:
        got = (nb, blocktree.tree(nb, a, b))
        object.__setattr__(cp, "_tree_cache", got)
    return got[1]


def turns(cp: Couplings, p_w, R_wb, V, T: float, A, rhs, tol=TURN_TOL, max_iter=TURN_MAX_ITER, newton=None,
          start=None, atol=0.0):
    """(theta (B,3), passes, (A, rhs, A_ab, e) at theta, newton): every body's turn T w_mid over
    the step (rad, body axes) in the contact-free coupled system A(theta) V+ = b(theta),
    theta = T (w_k + w+)/2 (module docstring): one solve with theta = T w_k, then Newton's
    method, each pass's change of theta capped at TURN_STEP.  A, rhs: the bodies' blocks
    without the couplings (not changed).  Not converged in `max_iter` passes: the iterate
    with the smallest Newton step (passes = max_iter; the energy is then not exact); not
    finite: theta = 0, the start-of-step map (passes = -1).

    ``newton`` (J (B,6,6), J_ab, J_ba (c,6,6), its factorization or None): a Newton matrix to
    start the passes with -- the one this returns, kept from the step before
    (``types.Warm.newton``), with its factorization (``block_solver``'s: not formed again, ~0.1
    ms a step at 160 links).  A matrix is formed afresh only when a pass contracted slower than
    NEWTON_CONTRACTION: the answer is the same to TURN_TOL, only the number of matrices differs
    (docs/cable.md "Step cost").

    ``start`` (B,3): the turns the first solve takes -- the last step's (``types.Warm.turns``),
    nearer this step's than T w_k where the links' rates ring from step to step (the wound
    cable: T w_k off by 1-2x the turns, the last step's by 4-9 %); None: T w_k.

    ``atol`` (rad): the passes also stop once a pass is below it -- TURN_GAP_FRACTION of the
    last step's gap between the predicted and the reached turns (``step.step``)."""
    T = float(T)
    framed = _kinds(cp).framed
    static = local_statics(cp, p_w, R_wb)      # the poses are the step's: every terms call shares it
    theta = T * V[:, 3:] if start is None or start.shape != V[:, 3:].shape else start
    A1, b1 = A.copy(), rhs.copy()
    Aab, e, _ = terms(cp, p_w, R_wb, V, theta, T, A1, b1, static)
    Vn = block_solve(cp, A1, Aab, Aab.transpose(0, 2, 1), b1)
    jac, d, d_last = None, np.inf, np.inf
    if newton is not None and newton[0].shape == A.shape and newton[1].shape[0] == len(cp):
        jac = block_solver(cp, *newton[:3], fac=newton[3])
    best = (np.inf, theta, (A1, b1, Aab, e))
    tried = None                # the line search's accepted trial: this pass's terms and residual already
    for it in range(max_iter):
        theta = 0.5 * T * (V[:, 3:] + Vn[:, 3:])
        if tried is not None:
            A1, b1, Aab, e, res = tried
        else:
            A1, b1 = A.copy(), rhs.copy()
            Aab, e, _ = terms(cp, p_w, R_wb, V, theta, T, A1, b1, static)
            res = None
        if jac is None or d > NEWTON_CONTRACTION * d_last:
            J = A.copy()
            Jab, Jba = _newton(cp, R_wb, p_w, e, V, Vn, theta, T, J)
            jac = block_solver(cp, J, Jab, Jba)        # factorized once, reused by the chord passes
            newton = (J, Jab, Jba, jac.fac)
        if res is None:
            res = _residual(A1, b1, cp.a, cp.b, Aab, Vn)
        dV = jac(res)
        d_last, d = d, 0.5 * T * np.abs(dV[:, 3:]).max()
        if not np.isfinite(d):
            theta = np.zeros_like(theta)
            A1, b1 = A.copy(), rhs.copy()
            Aab, e, _ = terms(cp, p_w, R_wb, V, theta, T, A1, b1, static)
            return theta, -1, (A1, b1, Aab, e), None
        if d <= max(tol * max(np.abs(theta).max(), TURN_FLOOR), atol):
            return theta, it + 1, (A1, b1, Aab, e), newton
        if d < best[0]:
            best = (d, theta, (A1, b1, Aab, e))
        s = min(1.0, TURN_STEP / d)
        if framed:
            s, tried = _line_search(cp, p_w, R_wb, V, T, A, rhs, Vn, dV, s, float(np.linalg.norm(res)), static)
        Vn = Vn + s * dV
        d *= s
    return best[1], max_iter, best[2], newton


# The FRAME_ANCHOR couplings' line search: a pass is halved while it does not lower the
# residual's norm by this fraction of the step (Armijo), at most LINE_HALVINGS times.  A stiff
# rod bent at T = 10 ms has soft directions (a link's twist: inertia m r^2/2 against the bending
# moments its twist turns) where the residual curves within a full pass: the plain passes then
# cycle (measured: the free 40-link cable, a pass of 4e-3 rad on one link's twist repeated
# for 20 passes, the energy off by 1e-4); halved, they converge in ~8.
LINE_ARMIJO = 1e-4
LINE_HALVINGS = 8


def _line_search(cp, p_w, R_wb, V, T, A, rhs, Vn, dV, s, f0, static=None):
    """(s, terms): the fraction s of the pass dV to take (module docstring, ``turns``) and the
    couplings' (A, rhs, A_ab, e) with the residual at Vn + s dV (None where the last halving was
    not tried)."""
    for _ in range(LINE_HALVINGS):
        Vt = Vn + s * dV
        A1, b1 = A.copy(), rhs.copy()
        Aab, e, _ = terms(cp, p_w, R_wb, V, 0.5 * T * (V[:, 3:] + Vt[:, 3:]), T, A1, b1, static)
        res = _residual(A1, b1, cp.a, cp.b, Aab, Vt)
        if np.linalg.norm(res) <= (1.0 - LINE_ARMIJO * s) * f0:
            return s, (A1, b1, Aab, e, res)
        s *= 0.5
    return s, None


# ---- the turns with the contacts (``step``'s contact passes, ``[contact] turn_passes``) -------------

def residual_at(cp: Couplings, p_w, R_wb, V, Vb, T: float, A, rhs):
    """r (B,6) = b(theta) - A(theta) Vb of the coupled system at the iterate Vb, its turns
    theta = T (w_k + w_b)/2 (the module docstring's system, the contacts left out): what the
    contacts' generalized force must meet where Vb is the step's solution.  A, rhs: the
    bodies' blocks without the couplings (not changed)."""
    T = float(T)
    A1, b1 = A.copy(), rhs.copy()
    Aab, _, _ = terms(cp, p_w, R_wb, V, 0.5 * T * (V[:, 3:] + Vb[:, 3:]), T, A1, b1)
    return _residual(A1, b1, cp.a, cp.b, Aab, Vb)


def newton_blocks(cp: Couplings, p_w, R_wb, V, Vb, T: float):
    """(Da, Db, Jab, Jba) (c,6,6) each: every coupling's own part of the Newton matrix at Vb --
    its rows and columns on body a, on b, and between them (``local_newton_terms`` before they
    are summed per body).  FRAME_ANCHOR couplings only (a cable's; the world-axes kernel sums
    as it goes)."""
    kinds = _kinds(cp)
    if not kinds.anchor_only:
        raise ValueError("couplings.newton_blocks: the contact passes need anchor-frame couplings (a cable's)")
    T = float(T)
    c = len(cp)
    Da, Db, Jab, Jba = (np.zeros((c, 6, 6)) for _ in range(4))
    theta = 0.5 * T * (V[:, 3:] + Vb[:, 3:])
    args = (cp.a, cp.b, cp.r_a, cp.R_a, cp.r_b, cp.R_b, cp.K, cp.D, kinds.frame, p_w, R_wb, V, Vb, theta, T,
            Jab, Jba, Da, Db)
    chunks = _chunks(cp)
    if chunks > 1:
        _local_newton_chunks(*args, chunks)
    else:
        _local_newton_range(0, c, *args)
    return Da, Db, Jab, Jba


def contact_system(cp: Couplings, p_w, R_wb, V, Vb, T: float, A, r):
    """(M (B,6,6), rhs_M (B,6), M_ab (c,6,6)): the linear system a contact pass solves at the
    iterate Vb, r = ``residual_at`` there:  M V+ = M Vb + r + (contacts).  M is the bodies'
    blocks A plus each coupling's Newton part projected onto its positive semi-definite part
    (``_semidefinite``): M - A is symmetric positive semi-definite, so M is A's kind (A's own
    skew part is the bodies' Coriolis term) and the contacts' Delassus operator is as definite
    as A(theta)'s.  Where the passes converge (V+ = Vb) the coupled system holds
    exactly with the contacts, whatever M is; M only sets how fast they get there (docs/cable.md
    "Turns with the contacts": the Newton matrix itself turns indefinite under a compressed
    joint, and the contact kernels then diverge; A(theta) alone, a fixed point in the turns,
    diverges too)."""
    Da, Db, Jab, Jba = newton_blocks(cp, p_w, R_wb, V, Vb, T)
    M, M_ab = A.copy(), np.zeros((len(cp), 6, 6))
    _semidefinite(cp.a, cp.b, Da, Db, Jab, Jba, M, M_ab)
    rhs_M = r - _residual(M, np.zeros_like(r), cp.a, cp.b, M_ab, Vb)     # r + M Vb
    return M, rhs_M, M_ab


@njit(cache=True)
def _semidefinite(a, b, Da, Db, Jab, Jba, M, M_ab):
    """Per coupling k, C = [[Da, Jab], [Jba, Db]] (12x12, its rows and columns on bodies a, b):
    P = the positive semi-definite part of (C + C^T)/2 (its negative eigenvalues dropped), added
    to M[a], M[b] and written to M_ab[k] (P's (a, b) block; M_ba = M_ab^T).  A coupling to the
    world (a < 0) has b's 6x6 alone."""
    S = np.empty((12, 12))
    for k in range(b.shape[0]):
        n = 12 if a[k] >= 0 else 6
        o = 6 if a[k] >= 0 else 0            # where b's rows start
        for p in range(6):
            for q in range(6):
                S[o + p, o + q] = 0.5 * (Db[k, p, q] + Db[k, q, p])
                if n == 12:
                    S[p, q] = 0.5 * (Da[k, p, q] + Da[k, q, p])
                    S[p, 6 + q] = 0.5 * (Jab[k, p, q] + Jba[k, q, p])
                    S[6 + q, p] = S[p, 6 + q]
        w, U = np.linalg.eigh(S[:n, :n].copy())
        for j in range(n):
            if w[j] <= 0.0:
                continue
            for p in range(n):
                up = w[j] * U[p, j]
                for q in range(n):
                    v = up * U[q, j]
                    if p >= o and q >= o:
                        M[b[k], p - o, q - o] += v
                    elif p < 6 and q < 6:
                        M[a[k], p, q] += v
                    elif p < 6:
                        M_ab[k, p, q - 6] += v


def apply(cp: Couplings | None, p_w, R_wb, V, T: float, A, rhs, theta=None):
    """The couplings' terms: (A_ab (c,6,6), e (c,6)), the diagonal terms added to A (B,6,6)
    and rhs (B,6) in place; nothing when there are none.  theta (B,3): the bodies' turns over
    the step; None: ``turns`` finds them (and its last pass's terms are used)."""
    if cp is None or len(cp) == 0:
        return np.zeros((0, 6, 6)), np.zeros((0, 6))
    if theta is None:
        _, _, (A1, b1, Aab, e), _ = turns(cp, p_w, R_wb, V, T, A, rhs)
        A[...] = A1
        rhs[...] = b1
        return Aab, e
    Aab, e, _ = terms(cp, p_w, R_wb, V, theta, float(T), A, rhs)
    return Aab, e


def energy(cp: Couplings | None, p_w, R_wb) -> float:
    """The couplings' potential energy sum 1/2 e^T K e (J)."""
    if cp is None or len(cp) == 0:
        return 0.0
    A, rhs = np.zeros((len(p_w), 6, 6)), np.zeros((len(p_w), 6))
    _, e = apply(cp, p_w, R_wb, np.zeros((len(p_w), 6)), 1.0, A, rhs, np.zeros((len(p_w), 3)))
    return 0.5 * float(np.sum(cp.K * e * e))


# ---- the fold -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Folded:
    """What recovers a folded block's velocities once the block it was folded into is known."""
    X: np.ndarray                  # (nf, np + 1): S_ff^-1 [-C_f | r_f - S_fF v_F]
    free: np.ndarray               # (na,) bool
    v_fix: np.ndarray              # (na,) the held coordinates' velocities


def fold(A_p, b_p, S, r, C, fixed=None, v_fix=None, X=None):
    """(A_eff, b_eff, Folded): block a (S, r), coupled to block p by C = A_ap, eliminated into
    p (module docstring); coordinates ``fixed`` of a held at ``v_fix``.  X: S^-1 [-C | r]
    where the caller has it already (used when nothing is held)."""
    na = S.shape[0]
    v_fix = np.zeros(na) if v_fix is None else v_fix
    if fixed is None or not fixed.any():        # nothing held: the same arithmetic, no gathers
        nC = -C
        X = np.linalg.solve(S, np.column_stack([nC, r])) if X is None else X
        return A_p - nC.T @ X[:, :-1], b_p + nC.T @ X[:, -1], Folded(X, np.ones(na, bool), v_fix)
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
