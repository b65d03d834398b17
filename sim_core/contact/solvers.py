"""Contact solving (stage 4): the table ``SOLVERS`` of solvers with one signature.

Each takes the world's linear PMI system  A V+ = b + G^T lambda (+ N^C lambda^C)  over all n
velocity coordinates of the bodies (assembled by ``dynamics`` from their blocks, the arm
folded into the body it holds), the contacts with their Jacobians G (m,3,n) and frames, and
returns a ``Solution``.  Both solvers work on the Delassus operator G A^-1 G^T contact by
contact (3x3 blocks W_i = G_i A^-1 G_i^T), so neither knows how many bodies there are.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim_core.contact import solver_pgs, solver_sor
from sim_core.types import ContactParams, Contacts, Warm


@dataclass(frozen=True)
class Solution:
    V: np.ndarray                  # (n,) the bodies' velocities at k+1 ([v_w; w_b] per body)
    lam: np.ndarray                # (m,3) N, contact forces in their frames [n t1 t2]
    forces_w: np.ndarray           # (m,3) N, the same in world axes (on `contacts.body`)
    generalized: np.ndarray        # (n,) N / N m, the contact forces' generalized force G^T lambda (+ N^C lambda^C)
    sweeps: int
    lam_c: float = 0.0             # N, the C-space constraint's force


def _free(A, b):
    A_inv = np.linalg.inv(A)
    return A_inv, A_inv @ b


def solve_sor(params: ContactParams, contacts: Contacts, G, Cf, A, b, V_prev, dt: float,
              warm: Warm | None, row=None) -> Solution:
    """Seed 000 Algorithm 1 (``solver_sor``), warm-started; `row` = (N^C (n,), b^C) or None."""
    A_inv, V_free = _free(A, b)
    m, n = len(contacts), A.shape[0]
    if m == 0 and row is None:
        return Solution(V_free, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(n), 0)
    NC, bC = (np.zeros(n), 0.0) if row is None else (np.asarray(row[0], float), float(row[1]))
    lam0, lamC0 = solver_sor.warm_start(contacts, Cf, warm)
    bn = solver_pgs.normal_targets(G, V_prev, contacts.d, dt, params.penetration_gain)
    lam, lamC, V, its, _, _ = solver_sor.sor(G, A_inv, V_free, bn, params.friction, params.sor_relaxation,
                                             params.sor_iterations, params.sor_tolerance, lam0, NC, bC, lamC0)
    gen = solver_pgs.contact_wrench(G, lam) + NC * lamC
    return Solution(V, lam, np.einsum("mij,mj->mi", Cf, lam), gen, its, float(lamC))


def solve_pgs(params: ContactParams, contacts: Contacts, G, Cf, A, b, V_prev, dt: float,
              warm: Warm | None, row=None) -> Solution:
    """Projected Gauss-Seidel (``solver_pgs``), the seed's baseline: cold-started, no C-space row."""
    A_inv, V_free = _free(A, b)
    m, n = len(contacts), A.shape[0]
    if m == 0:
        return Solution(V_free, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(n), 0)
    lam, V, sweeps = solver_pgs.pgs(G, A_inv, V_free, V_prev, contacts.d, dt, params.friction, params.penetration_gain,
                                    params.pgs_iterations, params.pgs_tolerance, np.zeros((m, 3)))
    return Solution(V, lam, np.einsum("mij,mj->mi", Cf, lam), solver_pgs.contact_wrench(G, lam), sweeps)


SOLVERS = {"sor": solve_sor, "pgs": solve_pgs}


def solve_body(params: ContactParams, contacts: Contacts, body, pose, F0, B, dt: float,
               warm: Warm | None = None, row=None) -> Solution:
    """The solving stage for one body alone with the wrench F0 - B V+ (its PMI block with the
    Coriolis matrix at the start of the step): what the clustering training and the solver
    bench compare representatives with."""
    from sim_core.dynamics import pmi
    A, b = pmi.system(body.mass, body.inertia_b, pose.V, dt, F0, B)
    G, Cf = solver_pgs.world_jacobians(contacts.x_w, contacts.n_w, np.zeros(len(contacts), np.int64), contacts.others(),
                                       pose.p_w[None], pose.R_wb[None])
    return SOLVERS[params.solver](params, contacts, G, Cf, A, b, pose.V, dt, warm, row)
