"""The haptic proxy: the nut (or peg) the user holds, integrated with PMI at T = 1 ms.

One tick (seed 000 eq. (1), the multirate scheme of ARCHITECTURE sec. 3):

    M (V+ - V)/T + C (V+ + V)/2 = F - B V+ + sum_i G_i^T lambda_i (+ g_c lambda_c),

* F - B V+ is the coupling wrench from ``haptics.coupling`` (the spring-damper to the device
  evaluated at the tick's midpoint, so B is its implicit, passive part) -- it enters
  ``pmi.system`` exactly as the drive of the physics loop does;
* the contacts are the latest ``LocalContact`` moved to the current pose to first order
  (``local_contact.gaps_at``) and solved on this 6x6 system by the project's contact solver,
  called through ``solve_contacts`` only (the seed solver of a later issue replaces its body),
  whose penetration push-out is paid from the energy the contacts dissipated before
  (``Proxy.budget``; the physics loop's ``solvers.push_out`` does the same per body);
* the pose follows the midpoint twist (``pmi.advance``).

Twist V = [v_w (COM velocity, world axes); w_b (body axes)], wrenches [f_w; tau_b].
Discrete energy balance (PMI, seed 000 Sec. III.C), exact to rounding:
    E+ - E = T (F - B V+)^T V_mid + T W_c^T V_mid,   W_c = sum G_i^T lambda_i + g_c lambda_c.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from haptics.local_contact import LocalContact, cspace_gap_kernel, gaps_kernel
from sim_core.contact import frames, solver_pgs
from sim_core.contact.solvers import PUSH_OUT_SLACK
from sim_core.dynamics import pmi

# Penetration correction per tick (Signorini bias of solver_pgs): 0.2 of a penetration per
# 1 ms tick removes 99 % within ~20 ticks, well inside one 10 ms physics period.
BETA = 0.2
PGS_ITERATIONS = 50
PGS_TOLERANCE = 1e-6      # N, force change per sweep -- three decades below what a device resolves
CSPACE_PASSES = 20        # outer block Gauss-Seidel passes between node contacts and C-space row


@njit(cache=True)
def _unilateral_bias(gap, u_prev, T, beta):
    """Velocity bound of one normal row, capped as ``solver_pgs.normal_targets``: close a gap
    by the end of the tick, push a penetration out by beta of it, never faster than the row
    approached (its work over the tick is then <= 0)."""
    if gap >= 0.0:
        return min(0.0, -2.0 * gap / T - u_prev)
    return min(-beta * gap / T, -u_prev)


@njit(cache=True)
def _solve_targets(A_inv, V_free, G, bn, g_c, b_c, use_c, mu, iterations, tol, lam0):
    """The solve with the normal targets bn (M,) and b_c: PGS (``solver_pgs.pgs_targets``);
    with the C-space row, block Gauss-Seidel between the node contacts and that row (no
    friction on it).  Returns (V+, lambda (M,3), lambda_c, sweeps)."""
    m = G.shape[0]
    if not use_c:
        if m == 0:
            return V_free.copy(), np.zeros((0, 3)), 0.0, 0
        lam, V, sweeps = solver_pgs.pgs_targets(G, A_inv, V_free, bn, mu, iterations, tol, lam0)
        return V, lam, 0.0, sweeps
    ag = A_inv @ g_c
    w_c = g_c @ ag
    lam = lam0.copy()
    lam_c = 0.0
    V = V_free.copy()
    sweeps = 0
    for _ in range(CSPACE_PASSES):
        Vf = V_free + ag * lam_c
        if m > 0:
            lam, V, sw = solver_pgs.pgs_targets(G, A_inv, Vf, bn, mu, iterations, tol, lam)
            sweeps += sw
        else:
            V = Vf
        new = max(0.0, lam_c - (g_c @ V - b_c) / w_c) if w_c > 0.0 else 0.0
        change = abs(new - lam_c)
        V = V + ag * (new - lam_c)
        lam_c = new
        if change < tol:
            break
    return V, lam, lam_c, sweeps


@njit(cache=True)
def _wrench_and_work(G, lam, g_c, lam_c, V_prev, V, T):
    """The contact wrench W_c = sum G_i^T lambda_i + g_c lambda_c and its exact work over the
    tick, T W_c . (V_k + V_k+1)/2 (PMI's energy balance; friction's included)."""
    W = g_c * lam_c
    for i in range(G.shape[0]):
        W += G[i].T @ lam[i]
    return W, T * (W @ (0.5 * (V_prev + V)))


@njit(cache=True)
def solve_contacts(A_inv, V_free, V_prev, G, d, g_c, d_c, use_c, T, mu, beta, iterations, tol, lam0,
                   budget):
    """Contact solve on the PMI system: the single entry point of the contact solver.

    A_inv (6,6) inverse PMI matrix, V_free (6,) twist without contact, V_prev (6,) V_k,
    G (M,3,6) contact Jacobians in contact frames [n t1 t2], d (M,) gaps (m), g_c (6,) the
    C-space row (used when use_c), d_c its gap, mu (M,) each contact's friction coefficient,
    beta the proxy's penetration gain per tick (every row's: the tick is not the physics
    step the materials' gains are given for), budget (J) the push-out budget.  Returns
    (V+ (6,), lambda (M,3) N in the contact frames, lambda_c, sweeps, W_c (6,), the contacts'
    work over the tick (J), the budget after it).

    The push-out is paid from the budget, as the physics loop's (``solvers.push_out``): the
    capped targets (``solver_pgs.normal_targets``) make a frictionless contact's work <= 0
    but hold a penetration the proxy rests in for good (a proxy landing on a plane kept its
    impact penetration, 21-72 um); the uncapped -beta d / T pushes it out, with work that may
    be positive.  So the capped solve comes first; where a contact (or the C-space row)
    penetrates and the budget is positive, the tick is solved again with the uncapped targets
    of the penetrating rows, and that solution is kept if its work fits the budget.  The
    budget then loses the kept solution's work: it grows by what the contacts dissipate
    (normal and friction) and shrinks by what they give back, so their work summed from a
    start without penetration never exceeds zero (up to the solver's residual).  A second
    solve only in a tick that penetrates with a budget: the tick stays cheap.
    """
    m = G.shape[0]
    bn = solver_pgs.normal_targets(G, V_prev, d, T, np.full(m, beta))
    b_c = _unilateral_bias(d_c, g_c @ V_prev, T, beta) if use_c else 0.0
    V, lam, lam_c, sweeps = _solve_targets(A_inv, V_free, G, bn, g_c, b_c, use_c, mu, iterations,
                                           tol, lam0)
    W, work = _wrench_and_work(G, lam, g_c, lam_c, V_prev, V, T)
    if budget > 0.0:
        wants = False
        bu = bn.copy()
        for i in range(m):
            if d[i] < 0.0 and -beta * d[i] / T > bn[i]:
                bu[i] = -beta * d[i] / T
                wants = True
        bu_c = b_c
        if use_c and d_c < 0.0 and -beta * d_c / T > b_c:
            bu_c = -beta * d_c / T
            wants = True
        if wants:
            V2, lam2, lam_c2, sw2 = _solve_targets(A_inv, V_free, G, bu, g_c, bu_c, use_c, mu,
                                                   iterations, tol, lam0)
            W2, work2 = _wrench_and_work(G, lam2, g_c, lam_c2, V_prev, V2, T)
            sweeps += sw2
            if work2 <= budget + PUSH_OUT_SLACK:
                V, lam, lam_c, W, work = V2, lam2, lam_c2, W2, work2
    if work > max(budget, 0.0) + PUSH_OUT_SLACK:
        # A solve cut off by the sweep limit can do positive work even with the capped
        # targets (a wedge of nearly opposite normals, warm-started from a push-out); scale
        # its impulse (inside the cone still) to what the budget pays: the work s a + s^2 c
        # of s W_c (V+ = V_free + s A^-1 W_c) is convex in s and 0 at s = 0.
        a = 0.5 * T * (W @ (V_prev + V_free))
        c = 0.5 * T * (W @ (A_inv @ W))
        e = max(budget, 0.0)
        s = (-a + np.sqrt(a * a + 4.0 * c * e)) / (2.0 * c) if c > 0.0 else 0.0
        s = min(1.0, max(0.0, s))
        lam = lam * s
        lam_c *= s
        V = V_free + s * (V - V_free)
        W, work = _wrench_and_work(G, lam, g_c, lam_c, V_prev, V, T)
    return V, lam, lam_c, sweeps, W, work, budget - work


@njit(cache=True, nogil=True)
def proxy_kernel(m, J, p, R, V, F, B, T, r_b, n_w, d_ref, p_ref, R_ref, mu, nc, dc, use_nc,
                 beta, iterations, tol, lam0, budget):
    """One PMI tick with local contacts.  Returns (p+, R+, V+, W_c (6,) contact wrench
    [f_w; tau_b], lambda (M,3), lambda_c, sweeps, min gap at the start of the tick,
    work of the coupling T (F - B V+) . V_mid, work of the contacts T W_c . V_mid,
    the push-out budget after the tick (``solve_contacts``))."""
    A, b = pmi.system(m, J, V, T, F, B)
    A_inv = np.linalg.inv(A)
    V_free = A_inv @ b
    x, d = gaps_kernel(r_b, n_w, d_ref, p_ref, R_ref, p, R)
    G, _ = frames.contact_jacobians(x, n_w, p, R)
    g_c = np.zeros(6)
    d_c = 0.0
    if use_nc:
        g_c[:3] = nc[:3]
        g_c[3:] = R.T @ nc[3:]          # n_ang (world) . w_w = (R^T n_ang) . w_b
        d_c = cspace_gap_kernel(nc, dc, p_ref, R_ref, p, R)
    V1, lam, lam_c, sweeps, W, work_contact, budget = solve_contacts(
        A_inv, V_free, V, G, d, g_c, d_c, use_nc, T, mu, beta, iterations, tol, lam0, budget)
    p1, R1 = pmi.advance(p, R, V, V1, T)
    gmin = np.inf
    for i in range(d.shape[0]):
        gmin = min(gmin, d[i])
    if use_nc:
        gmin = min(gmin, d_c)
    Vm = 0.5 * (V + V1)
    work_coupling = T * ((F - B @ V1) @ Vm)
    return p1, R1, V1, W, lam, lam_c, sweeps, gmin, work_coupling, work_contact, budget


@dataclass(frozen=True)
class ProxyStepInfo:
    """What one proxy tick did."""
    contact_wrench: np.ndarray   # (6,) [N world; N m body] on the proxy, over the tick
    lam: np.ndarray              # (M,3) N, contact forces in contact frames [n t1 t2]
    lam_c: float                 # C-space multiplier (0 without a C-space normal)
    sweeps: int                  # solver sweeps used
    min_gap: float               # m, smallest first-order gap at the start of the tick (inf: none)
    work_coupling: float         # J, T (F - B V+) . V_mid  (energy the coupling put in)
    work_contact: float          # J, T W_c . V_mid         (energy the contacts put in)
    budget: float                # J, the push-out budget after the tick (``solve_contacts``)


class Proxy:
    """PMI proxy (rigid body) driven by the coupling and the local contact model."""

    def __init__(self, mass: float, inertia_b, p_w, R_wb, V=None, *, beta: float = BETA,
                 iterations: int = PGS_ITERATIONS, tol: float = PGS_TOLERANCE):
        self.mass = float(mass)
        self.inertia_b = np.ascontiguousarray(inertia_b, dtype=np.float64)   # (3,3) kg m^2, body
        self.p_w = np.array(p_w, dtype=np.float64)                           # (3,) m, COM, world
        self.R_wb = np.array(R_wb, dtype=np.float64)                         # (3,3)
        self.V = np.zeros(6) if V is None else np.array(V, dtype=np.float64)  # (6,) [v_w; w_b]
        self.beta, self.iterations, self.tol = float(beta), int(iterations), float(tol)
        self.contact_wrench = np.zeros(6)   # (6,) [f_w; tau_b], of the last tick
        self.env_wrench = np.zeros(6)       # (6,) [f_w; tau_b], of the last tick: contacts + f_ext
        self._lc = None                     # LocalContact of the last tick (warm start)
        self._lam = np.zeros((0, 3))
        # J: energy the contacts dissipated and have not given back, what pays the push-out
        # of a penetration (``solve_contacts``); 0 at the start
        self.budget = 0.0

    def place(self, p_w, R_wb, V=None) -> None:
        """Put the proxy at a new pose (at rest unless V): the contacts' history goes with
        the old pose, so the push-out budget starts again at 0 (no energy banked in one place
        pushes a penetration out in another) and the warm start is dropped."""
        self.p_w = np.array(p_w, dtype=np.float64)
        self.R_wb = np.array(R_wb, dtype=np.float64)
        self.V = np.zeros(6) if V is None else np.array(V, dtype=np.float64)
        self.contact_wrench = np.zeros(6)
        self.env_wrench = np.zeros(6)
        self._lc, self._lam = None, np.zeros((0, 3))
        self.budget = 0.0

    def kinetic_energy(self) -> float:
        return pmi.kinetic_energy(self.mass, self.inertia_b, self.V)

    def step(self, F_coupling, B_coupling, lc: LocalContact | None, T: float) -> ProxyStepInfo:
        """Advance one tick under the coupling wrench F - B V+, the local contacts and the
        held body's couplings' pull (``LocalContact.f_ext``)."""
        F = np.asarray(F_coupling, dtype=np.float64)
        B = np.asarray(B_coupling, dtype=np.float64)
        if lc is None:
            lc = _NO_CONTACT
        warm = lc is self._lc and self._lam.shape[0] == len(lc)
        lam0 = self._lam if warm else np.zeros((len(lc), 3))
        use_nc = lc.nc_w is not None
        nc = lc.nc_w if use_nc else _ZERO6
        if lc.f_ext.any():
            F = F + lc.f_ext
        p1, R1, V1, W, lam, lam_c, sweeps, gmin, work_f, work_c, budget = proxy_kernel(
            self.mass, self.inertia_b, self.p_w, self.R_wb, self.V, F, B, T, lc.r_b, lc.n_w, lc.d,
            lc.p_ref_w, lc.R_ref_wb, lc.mu, nc, lc.dc, use_nc, self.beta, self.iterations,
            self.tol, lam0, self.budget)
        info = ProxyStepInfo(W, lam, lam_c, sweeps, gmin, work_f, work_c, budget)
        self.budget = budget
        self.p_w, self.R_wb, self.V = p1, R1, V1
        self.contact_wrench = W
        # what the environment did to the proxy: its contacts and the held body's couplings'
        # pull -- the coupling's force channel C2 renders this (``haptics.coupling``).  With
        # the contacts alone a wound cable's 0.52 N pull reached the hand as 0.10 N (1 - c2)
        self.env_wrench = W + lc.f_ext if lc.f_ext.any() else W
        self._lc, self._lam = lc, lam
        return info


_ZERO6 = np.zeros(6)
_NO_CONTACT = LocalContact.empty(0.0, np.zeros(3), np.eye(3))
