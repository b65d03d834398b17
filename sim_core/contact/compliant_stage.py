"""The compliant law in the step (``step.solve``): contacts of pairs whose material's law is
"compliant" are not complementarity rows; each gets seed 001's analytic normal force over the
step (``contact.compliant``), and the rest of the step runs as before with those forces held.

Per compliant contact i, from PMI's linear system A V+ = b + G^T lambda (A ~ M / T):

* **effective mass** along the normal, m_i = T / w_ii, w = G_n A^-1 G_n^T the normal block
  of the Delassus operator (A^-1 ~ T M^-1).  A's blocks hold the systems folded into the body
  (``System.fold``): for a link of the arm it is the arm's operational-space inertia along
  the normal -- Algorithm 1's "I_eff" -- with nothing more to do.  The bodies' couplings
  (off-diagonal blocks) are left out of w (block-diagonal A^-1).  A is PMI's M / T + B + ...:
  a drive's damper B (and what a system folds in beyond its inertia) enters m_i as B T, so
  the closed form is exact for a free body (the ball) and first order in B T / m otherwise.
* **the constant force** pressing along the normal: F_i = m_i (u_k - u_free) / T, with u the
  normal gap rate (G_n V, > 0 opening), u_k at the start and u_free = G_n A^-1 b at the end of
  the step without contact forces (gravity, drive, external wrench: seed 001's "F_ext
  constant over the step").  Other compliant contacts enter u_free with their latest
  impulses (Gauss-Seidel passes to a relative change of ``PASS_TOL`` where there are
  several; one contact: exact).  The coupled contacts' forces are then each a closed form
  under the others' mean force over the step: exact at rest, approximate through an impact.
* **the motion**: the gap d (signed distance, < 0 penetrating) at the start; d > 0 (within the
  detector's speculative reach) -> free flight to touchdown (the root of d + u_k t + a t^2 / 2,
  a = (u_free - u_k) / T), then the law from delta = 0; d <= 0 -> the law from delta = -d,
  delta' = -u_k.  The law's closed form (Kelvin-Voigt, both readings) or the Hunt-Crossley
  integration gives the impulse J_i over the rest of the step, the contact possibly ending
  inside it, and the gap at the step's end.
* **the force**: lambda_n = J_i / T in the PMI system.  For one contact V+ gives
  u+ = u_free + w J / T = u_k + a T + J / m_i, the closed form's end rate exactly.
* **the position**: PMI moves by T (V_k + V_k+1) / 2, which is not the in-contact
  displacement (the force is not constant over the step).  The step adds a displacement
  correction s_i = gap_closed_form(T) - gap_k - T (u_k + u+) / 2 along the normal, as the
  generalized displacement A^-1 G_n^T sigma with W_nn sigma = s (the least-inertia motion
  with that normal displacement; for a ball, a pure translation of its centre), booked to the
  bodies in integration (``Solution.shift``).  Why it stays passive: with it the body's normal
  gap and rate at the step's ends are those of the exact solution of m d'' + D d' + K d = F,
  whose energy (kinetic + spring + the constant force's potential) never grows for D >= 0;
  the step samples that solution and adds nothing to it (measured: the ball at e = 1 keeps
  its energy to 1e-12 over ten bounces at 128 ms steps, ``scenarios.bouncing_ball``).
* **friction**: Coulomb with the normal impulse held: the tangential force that stops the
  contact point's slip, A^-1 b with the normal forces in, projected onto the disk
  |lambda_t| <= mu max(lambda_n, 0) (maximum dissipation where the 2x2 tangential Delassus
  block is isotropic, as for a ball; otherwise the disk projection of the stick force),
  a few Gauss-Seidel passes over the compliant contacts.  The rigid contacts of the same
  step are then solved by the configured solver with all compliant forces held in b.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from sim_core.contact import compliant, frames, materials
from sim_core.contact.solvers import Solution
from sim_core.math.so3 import exp_so3

PASSES = 200               # Gauss-Seidel passes at most over several compliant contacts (one: one, exact)
PASS_TOL = 1e-13           # relative change of the impulses at which the passes stop (two contacts of a
                           # ball in a 60 deg groove: ~45 passes, the contraction W_12 / W_11 = 0.5)
FRICTION_PASSES = 8        # Gauss-Seidel passes of the held-normal friction


def rows(model, c) -> np.ndarray | None:
    """(m,) bool: the contacts whose pair's law is compliant; None when the world has none
    (the step then runs exactly as without this law)."""
    cp = materials.compliant_pairs(model)
    if not cp.any() or len(c) == 0:
        return None
    mask = cp[c.pairs()]
    return mask if mask.any() else None


def law_of(model, pair: int) -> tuple[float, float, int, float]:
    """(K, e, model, mu) of a compliant pair."""
    mat = materials.material_of(model.contact, model.pairs[pair])
    return (materials.law_param(mat, "stiffness"), materials.law_param(mat, "restitution"),
            int(round(materials.law_param(mat, "model"))), mat.friction)


def touchdown(d: float, u: float, a: float, T: float) -> float:
    """s in [0, T]: the first time the gap d + u t + a t^2 / 2 reaches 0 (inf: not in [0, T])."""
    if d <= 0.0:
        return 0.0
    if a == 0.0:
        return d / -u if u < 0.0 and d / -u <= T else math.inf
    disc = u * u - 2.0 * a * d
    if disc < 0.0:
        return math.inf
    sq = math.sqrt(disc)
    # the smaller positive root of a/2 t^2 + u t + d, written without cancellation
    q = -0.5 * (u + math.copysign(sq, u))
    if q == 0.0:
        return math.inf
    roots = [r for r in (q / (0.5 * a), d / q) if r >= 0.0]
    t = min(roots) if roots else math.inf
    return t if t <= T else math.inf


MAX_EPISODES = 64         # contact episodes within one step (a long step over small bounces); a
                          # ball coming to rest under gravity stays in contact, so no Zeno chain


def reclose(d: float, u: float, a: float, T: float) -> float:
    """s in (0, T]: after a contact ended (gap d ~ 0 or < 0, opening), the time the gap
    d + u t + a t^2 / 2 next reaches 0 while closing (inf: not within T)."""
    if a >= 0.0:
        return math.inf
    disc = u * u - 2.0 * a * d
    if disc < 0.0:
        return math.inf
    t = (-u - math.sqrt(disc)) / a           # the larger root (a < 0): the gap closing
    return t if 0.0 < t <= T else math.inf


def _episode(K, e, law, m, F, d0, v0, rest):
    """One contact from (delta d0, rate v0) over at most `rest` s: (J, delta, delta', t_in, ended)."""
    if law in (compliant.KELVIN_VOIGT, compliant.KELVIN_VOIGT_CLAMPED):
        kv = compliant.kelvin_voigt(m, K, e, F, d0, v0, clamped=law == compliant.KELVIN_VOIGT_CLAMPED)
        ts = kv.separation_time()
        J, t_in, dd, vv = kv.impulse(rest)
        return J, dd, vv, t_in, ts <= rest
    n = compliant.EXPONENT[law]
    v_in = math.sqrt(max(v0, 0.0) ** 2 + 2.0 * K * d0 ** (n + 1.0) / ((n + 1.0) * m))  # touchdown speed
    c = compliant.hunt_crossley_alpha(e) / v_in if v_in > 0.0 else 0.0
    J, t_in, dd, vv = compliant.hc_motion_fast(m, K, c, n, F, d0, v0, rest)   # hc_motion's kernel form
    return J, dd, vv, t_in, t_in < rest


def motion(K: float, e: float, law: int, m: float, F: float, d: float, u: float, T: float):
    """The normal motion over a step of length T of a contact with gap d (m) and gap rate u
    (m/s) at its start, effective mass m, constant force F pressing in: (J N s the normal
    impulse, gap at T m, gap rate at T m/s, t_touch s, t_end s (the first contact's end from
    the step's start; inf: lasts beyond T)).  A contact that ends inside the step flies
    freely and may land again within it (up to ``MAX_EPISODES``)."""
    a = -F / m                               # the gap's acceleration without contact force
    tc = touchdown(d, u, a, T)
    if not math.isfinite(tc):                # no contact in this step: free flight
        return 0.0, d + u * T + 0.5 * a * T * T, u + a * T, math.inf, math.inf
    t, J = tc, 0.0
    d0, v0 = max(-d, 0.0), -(u + a * tc)
    first_end = math.inf
    for _ in range(MAX_EPISODES):
        Ji, dd, vv, t_in, ended = _episode(K, e, law, m, F, d0, v0, T - t)
        J += Ji
        t += t_in
        if not ended or t >= T:
            return J, -dd, -vv, tc, first_end
        if not math.isfinite(first_end):
            first_end = t
        gap, rate = -dd, -vv
        fly = reclose(gap, rate, a, T - t)
        if not math.isfinite(fly):           # free flight to the step's end
            tau = T - t
            return J, gap + rate * tau + 0.5 * a * tau * tau, rate + a * tau, tc, first_end
        t += fly
        d0, v0 = 0.0, -(rate + a * fly)
    raise RuntimeError(f"compliant contact: more than {MAX_EPISODES} bounces in one step of {T:g} s")


def normal_problems(model, state, c, blk, dt: float) -> list[tuple]:
    """Per compliant contact of `c` (the others left out): (K, e, law, m_eff kg, F N, gap m,
    gap rate m/s), the problem ``motion`` solves, other compliant contacts not counted (what
    the variable step's policy predicts with, ``dynamics.variable_step``)."""
    mask = rows(model, c)
    if mask is None:
        return []
    T, nb = float(dt), model.n_bodies
    cc = c.rows(np.flatnonzero(mask))
    G, _ = frames.world_jacobians(cc.x_w, cc.n_w, cc.bodies(), cc.others(), state.p_w, state.R_wb)
    Gn = G[:, 0, :]
    A_inv = np.zeros((6 * nb, 6 * nb))
    for i in range(nb):
        A_inv[6 * i:6 * i + 6, 6 * i:6 * i + 6] = np.linalg.inv(blk.A[i])
    u_k, u_free = Gn @ state.V.reshape(-1), Gn @ (A_inv @ blk.b.reshape(-1))
    w = np.einsum("mj,jk,mk->m", Gn, A_inv, Gn)
    out = []
    for i, pair in enumerate(cc.pairs()):
        K, e, law, _ = law_of(model, int(pair))
        m_i = T / w[i]
        out.append((K, e, law, m_i, m_i * (u_k[i] - u_free[i]) / T, float(cc.d[i]), float(u_k[i])))
    return out


def solve(model, state, c, on, blk, A_ab, row, dt: float, mask: np.ndarray, rigid_solve) -> Solution:
    """Stage 6 with compliant contacts (module docstring): their forces first, then
    `rigid_solve` (``step.solve``) on the other contacts with those forces held in b."""
    T = float(dt)
    nb = model.n_bodies
    ic = np.flatnonzero(mask)
    cc = c.rows(ic)
    G, Cf = frames.world_jacobians(cc.x_w, cc.n_w, cc.bodies(), cc.others(), state.p_w, state.R_wb)
    A_inv = np.zeros((6 * nb, 6 * nb))
    for i in range(nb):
        A_inv[6 * i:6 * i + 6, 6 * i:6 * i + 6] = np.linalg.inv(blk.A[i])
    b = blk.b.reshape(-1)
    V_prev = state.V.reshape(-1)
    Gn = G[:, 0, :]                          # (mc, 6B) normal rows
    X = A_inv @ Gn.T                         # (6B, mc)
    W = Gn @ X                               # (mc, mc)
    u_k, u_free = Gn @ V_prev, Gn @ (A_inv @ b)
    mc = len(ic)
    laws = [law_of(model, int(p)) for p in cc.pairs()]
    J = np.zeros(mc)
    gap_end = np.zeros(mc)
    for _ in range(1 if mc == 1 else PASSES):
        J_old = J.copy()
        for i in range(mc):                  # Gauss-Seidel: the others' latest impulses held
            K, e, law, _mu = laws[i]
            m_i = T / W[i, i]
            u_f = u_free[i] + (W[i] @ J - W[i, i] * J[i]) / T
            F = m_i * (u_k[i] - u_f) / T
            J[i], gap_end[i], _, _, _ = motion(K, e, law, m_i, F, float(cc.d[i]), float(u_k[i]), T)
        if np.max(np.abs(J - J_old)) <= PASS_TOL * max(np.max(np.abs(J)), 1e-300):
            break
    lam = np.zeros((mc, 3))
    lam[:, 0] = J / T
    # friction with the normal force held (Gauss-Seidel over the compliant contacts)
    mu = np.array([x[3] for x in laws])
    if np.any(mu > 0.0):
        Gt = G[:, 1:, :]                                         # (mc, 2, 6B)
        V = A_inv @ (b + Gn.T @ lam[:, 0])
        for _ in range(FRICTION_PASSES):
            for i in range(mc):
                if mu[i] == 0.0:
                    continue
                Xi = A_inv @ Gt[i].T                             # (6B, 2)
                Wt = Gt[i] @ Xi
                want = lam[i, 1:] - np.linalg.solve(Wt, Gt[i] @ V)
                cap = mu[i] * max(lam[i, 0], 0.0)
                norm = float(np.hypot(*want))
                new = want if norm <= cap else want * (cap / norm)
                V += Xi @ (new - lam[i, 1:])
                lam[i, 1:] = new
    gen_c = np.einsum("mij,mi->j", G, lam)                       # G^T lambda of the compliant contacts
    # the rest of the step: the other contacts by the configured solver, these forces held
    rigid = np.flatnonzero(~mask)
    cr = c.rows(rigid)
    blk_r = replace(blk, b=(b + gen_c).reshape(nb, 6))
    sr = rigid_solve(model, state, cr, on[rigid], blk_r, A_ab, row, dt)
    V = sr.V
    # the displacement correction: each compliant gap follows its closed form (module docstring)
    u_end = Gn @ V
    s = gap_end - (cc.d + 0.5 * T * (u_k + u_end))
    sigma = np.linalg.solve(W, s) if mc > 1 else s / W[0, 0]
    shift = (X @ sigma).reshape(nb, 6)
    m = len(c)
    lam_all, f_all = np.zeros((m, 3)), np.zeros((m, 3))
    lam_all[ic] = lam
    f_all[ic] = np.einsum("mij,mj->mi", Cf, lam)
    lam_all[rigid], f_all[rigid] = sr.lam, sr.forces_w
    return Solution(V, lam_all, f_all, sr.generalized + gen_c, sr.sweeps, sr.lam_c, sr.budget, shift=shift,
                    push_need=sr.push_need)


def apply_shift(p: np.ndarray, R: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The poses after integration with the compliant displacement correction (B,6):
    [world translation; body-axis rotation vector]."""
    p = p + shift[:, :3]
    if np.any(shift[:, 3:]):
        R = np.array([R[i] @ exp_so3(shift[i, 3:]) for i in range(len(R))])
    return p, R
