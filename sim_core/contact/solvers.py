"""Contact solving (stage 4): the table ``SOLVERS`` of solvers with one signature.

Each takes an island's linear PMI system  A V+ = b + G^T lambda (+ N^C lambda^C)  over its n
velocity coordinates (``step.solve``: the bodies' blocks, the systems folded in), the contacts
with their Jacobians G (m,3,n) and frames, and their materials as the arrays mu (m,) and
beta (m,) (friction and penetration gain per contact, ``materials.per_contact``), and returns
a ``Solution``; or, for a large coupled island, the same problem in contact space (``free`` =
(W, G V_free) with G the identity rows: ``step.solve`` factorizes the island and forms the
Delassus operator W itself).  Both solvers work on the Delassus operator G A^-1 G^T contact by
contact (3x3 blocks W_i = G_i A^-1 G_i^T), so neither knows how many bodies there are.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim_core.contact import frames, materials, solver_pgs, solver_sor
from sim_core.types import ContactParams, Contacts, Warm


@dataclass(frozen=True)
class Solution:
    V: np.ndarray                  # (n,) the bodies' velocities at k+1 ([v_w; w_b] per body)
    lam: np.ndarray                # (m,3) N, contact forces in their frames [n t1 t2]
    forces_w: np.ndarray           # (m,3) N, the same in world axes (on `contacts.body`)
    generalized: np.ndarray        # (n,) N / N m, the contact forces' generalized force G^T lambda (+ N^C lambda^C)
    sweeps: int
    lam_c: float = 0.0             # N, the C-space constraint's force
    budget: np.ndarray | None = None  # (bodies,) J, the push-out budget after the step (``push_out``)
    push_need: np.ndarray | None = None  # (bodies,) J, what a refused push-out asked of each body (``push_out``)
    shift: np.ndarray | None = None   # (bodies,6) [m world; rad body]: the compliant contacts' displacement
                                      # correction, added to the poses in integration (``compliant_stage``)
    capped: bool = False           # the iteration stopped at its cap, not converged (``island_solvers``)
    cut: np.ndarray | None = None  # (c,6) per coupling of Model.couplings: a subsystem solver's cut forces


def _free(A, b):
    A_inv = np.linalg.inv(A)
    return A_inv, A_inv @ b


PUSH_OUT_SLACK = 1e-12     # J: a push-out solve may overdraw its budget by rounding only
# A push-out is refused when any body's work W exceeds its budget; the refusal keeps those W
# (``Warm.push_need``, -inf elsewhere) and the push-out is not tried again while any of those
# bodies' budgets is still below its W (it would be refused again, the step's contacts alike).
# Each solve that passes it over halves the shortfall W - budget, so it is tried again within
# log2(shortfall / PUSH_OUT_SLACK) solves whatever the budgets do.  On the shipped 40-link
# winding 593 of 604 push-out solves in 200 steps were refused (none taken): each cost a whole
# contact solve, half the step's contact solving (the coupled links' budgets run negative, so
# a push-out of one link is refused for the work it does on its neighbours).
PUSH_NEED_DECAY = 0.5


def contact_work(G, lam, V_prev, V, dt: float, body, n_bodies: int) -> np.ndarray:
    """(bodies,) J: the contact forces' work over the step per body, T lambda . (u_k + u_k+1)/2
    (PMI's energy balance, ``solver_pgs``; the friction's too), each contact booked to the
    body it pushes."""
    u = np.einsum("mij,j->mi", G, V_prev + V)
    return np.bincount(body, 0.5 * dt * np.einsum("mi,mi->m", lam, u), minlength=n_bodies)


def push_out(beta: np.ndarray, contacts: Contacts, G, V_prev, dt: float, warm: Warm | None, solve_with,
             n_bodies: int | None = None):
    """The solve with the penetration push-out paid from an energy budget (issue 23 (5)).

    The capped targets (``solver_pgs.normal_targets``) make every frictionless contact's work
    <= 0, but a penetration that a contact rests in is then never pushed out.  The uncapped
    target -beta d / T would push it out, and its extra work is what made the wedged pin and
    peg gain energy.  So each body keeps a budget: the energy its contacts have dissipated
    (normal and friction forces) and not yet given back (0 at the start; ``Warm.budget``).
    Where a body has a budget and a penetration, the step is solved with the uncapped
    targets of its penetrating contacts; the solution's work W (``contact_work``, exact) is
    accepted if W <= budget, and the budget becomes budget - W.  Otherwise (or with no
    budget) the capped solve is used, and its W (<= 0 when frictionless) is booked the same
    way.  So the contacts' work summed from the start never exceeds zero by more than the
    solver's residual: a penetration is pushed out only with energy the contacts took from
    the bodies before.  (Banking the friction's dissipation too keeps the power screw's
    torques where the uncapped target had them: -0.8 to -2.5 %; normal work alone: up to
    +2.5 / -4.9 %.)
    beta (m,): each contact's penetration gain.  `solve_with(bn)` -> (lam, V, sweeps, extra)
    solves with the targets bn.  `n_bodies`: how many bodies the budget covers (default: G's
    columns over 6; a contact-space solve, whose G has 3 m columns, names them).  Returns
    (solve_with's output, the budget after it, the bodies' push-out need: PUSH_NEED_DECAY)."""
    nb = G.shape[2] // 6 if n_bodies is None else n_bodies
    budget = np.zeros(nb) if warm is None or warm.budget is None or len(warm.budget) != nb else warm.budget
    need = warm.push_need if warm is not None and warm.push_need is not None and len(warm.push_need) == nb \
        else np.full(nb, -np.inf)
    body = contacts.bodies()
    capped = solver_pgs.normal_targets(G, V_prev, contacts.d, dt, beta)
    uncapped = np.where(contacts.d < 0.0, -beta * contacts.d / dt, capped)
    wants = (uncapped > capped) & (budget[body] > 0.0)
    if wants.any():
        short = need > budget + PUSH_OUT_SLACK     # a body the last refused try overdrew, still short
        if short.any():
            need = np.where(short, budget + PUSH_NEED_DECAY * (need - budget), need)
        else:
            out = solve_with(np.where(wants, uncapped, capped))
            W = contact_work(G, out[0], V_prev, out[1], dt, body, nb)
            over = W > budget + PUSH_OUT_SLACK
            if not over.any():
                return out, budget - W, np.full(nb, -np.inf)
            need = np.where(over, W, -np.inf)
    out = solve_with(capped)
    return out, budget - contact_work(G, out[0], V_prev, out[1], dt, body, nb), need


def solve_sor(params: ContactParams, contacts: Contacts, G, Cf, A, b, V_prev, dt: float,
              warm: Warm | None, row=None, free=None, n_bodies: int | None = None, *, mu: np.ndarray,
              beta: np.ndarray, nexp: np.ndarray | None = None) -> Solution:
    """Seed 000 Algorithm 1 (``solver_sor``), warm-started; `row` = (N^C (n,), b^C) or None;
    the penetration push-out paid from the bodies' energy budgets (``push_out``).  `free` =
    (A^-1, A^-1 b) when the caller has them (A, b unused then: ``step.solve``'s contact-space
    form passes the Delassus operator and the contacts' free velocities).  Coulomb only: `nexp`
    (the generalized law's exponents, ``solver_pgs.friction_limit``) must be None."""
    if nexp is not None:
        raise ValueError("solver 'sor': the generalized friction law (friction_exponent != 1) needs solver 'pgs'")
    A_inv, V_free = _free(A, b) if free is None else free
    m, n = len(contacts), V_free.shape[0]
    if m == 0 and row is None:
        keep = None if warm is None else warm.budget
        return Solution(V_free, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(n), 0, budget=keep)
    NC, bC = (np.zeros(n), 0.0) if row is None else (np.asarray(row[0], float), float(row[1]))
    lam0, lamC0 = solver_sor.warm_start(contacts, Cf, warm)

    def solve_with(bn):
        lam, lamC, V, its, _, _ = solver_sor.sor(G, A_inv, V_free, bn, mu, params.sor_relaxation,
                                                 params.sor_iterations, params.sor_tolerance, lam0, NC, bC, lamC0)
        return lam, V, its, lamC
    (lam, V, its, lamC), budget, need = push_out(beta, contacts, G, V_prev, dt, warm, solve_with, n_bodies)
    gen = solver_pgs.contact_wrench(G, lam) + NC * lamC
    return Solution(V, lam, np.einsum("mij,mj->mi", Cf, lam), gen, its, float(lamC), budget, push_need=need)


def solve_pgs(params: ContactParams, contacts: Contacts, G, Cf, A, b, V_prev, dt: float,
              warm: Warm | None, row=None, free=None, n_bodies: int | None = None, *, mu: np.ndarray,
              beta: np.ndarray, nexp: np.ndarray | None = None) -> Solution:
    """Projected Gauss-Seidel (``solver_pgs``), the seed's baseline: cold-started, no C-space
    row; `free` as in ``solve_sor``; `nexp` (m,) the friction law's exponents N (None: Coulomb)."""
    A_inv, V_free = _free(A, b) if free is None else free
    m, n = len(contacts), V_free.shape[0]
    if m == 0:
        return Solution(V_free, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(n), 0)
    if nexp is None:
        lam, V, sweeps = solver_pgs.pgs(G, A_inv, V_free, V_prev, contacts.d, dt, mu, beta, params.pgs_iterations,
                                        params.pgs_tolerance, np.zeros((m, 3)))
    else:
        lam, V, sweeps = solver_pgs.pgs_law(G, A_inv, V_free, V_prev, contacts.d, dt, mu, nexp, beta,
                                            params.pgs_iterations, params.pgs_tolerance, np.zeros((m, 3)))
    return Solution(V, lam, np.einsum("mij,mj->mi", Cf, lam), solver_pgs.contact_wrench(G, lam), sweeps,
                    capped=sweeps >= params.pgs_iterations)


# Sweeps between pgs_subspace's subspace steps (it always ends on one).  Measured on the 40-link
# winding's first 3 s (step median / deepest penetration): every 4 sweeps 9.8 ms / 112 um, every
# 25: 7.5 ms / 102 um, only at the end: 6.5 ms / 98 um -- the end's step is what holds the coil;
# a few between keep a solve that stops early on its tolerance close to it.
PGS_SUBSPACE_EVERY = 25


def solve_pgs_subspace(params: ContactParams, contacts: Contacts, G, Cf, A, b, V_prev, dt: float,
                       warm: Warm | None, row=None, free=None, n_bodies: int | None = None, *, mu: np.ndarray,
                       beta: np.ndarray, nexp: np.ndarray | None = None) -> Solution:
    """PGS with the friction law (``solver_pgs.pgs_subspace``), warm-started like ``solve_sor``,
    with subspace steps on the normal forces and the budgeted push-out (``push_out``): the
    PGS of seed 002's Solver 1 made to hold a stiff chain (a cable wound under tension); no
    C-space row; `free` as in ``solve_sor``; `nexp` None is Coulomb's cone."""
    A_inv, V_free = _free(A, b) if free is None else free
    m, n = len(contacts), V_free.shape[0]
    if m == 0:
        keep = None if warm is None else warm.budget
        return Solution(V_free, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(n), 0, budget=keep)
    ex = np.ones(m) if nexp is None else np.asarray(nexp, float)
    lam0, _ = solver_sor.warm_start(contacts, Cf, warm)

    def solve_with(bn):
        lam, V, its, res = solver_pgs.pgs_subspace(G, A_inv, V_free, bn, mu, ex, params.pgs_iterations,
                                                   params.pgs_tolerance, lam0, PGS_SUBSPACE_EVERY)
        return lam, V, its, res
    (lam, V, its, res), budget, need = push_out(beta, contacts, G, V_prev, dt, warm, solve_with, n_bodies)
    return Solution(V, lam, np.einsum("mij,mj->mi", Cf, lam), solver_pgs.contact_wrench(G, lam), its,
                    budget=budget, capped=bool(res >= params.pgs_tolerance), push_need=need)


SOLVERS = {"sor": solve_sor, "pgs": solve_pgs, "pgs_subspace": solve_pgs_subspace}


def solve_body(params: ContactParams, contacts: Contacts, body, pose, F0, B, dt: float,
               warm: Warm | None = None, row=None) -> Solution:
    """The solving stage for one body alone with the wrench F0 - B V+ (its PMI block with the
    Coriolis matrix at the start of the step), its contacts of the default material
    (``params.material``): what the clustering training and the solver bench compare
    representatives with."""
    from sim_core.dynamics import pmi
    A, b = pmi.system(body.mass, body.inertia_b, pose.V, dt, F0, B)
    G, Cf = frames.world_jacobians(contacts.x_w, contacts.n_w, np.zeros(len(contacts), np.int64), contacts.others(),
                                   pose.p_w[None], pose.R_wb[None])
    mu, beta = materials.uniform(params.material, len(contacts))
    return SOLVERS[params.solver](params, contacts, G, Cf, A, b, pose.V, dt, warm, row, mu=mu, beta=beta)
