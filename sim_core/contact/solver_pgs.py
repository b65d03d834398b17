"""Contact solving (stage 4), baseline: projected Gauss-Seidel (seed 000 Sec. V.C, PGS [41]).

Unknowns: per contact i the force lambda_i = [lambda_n; lambda_t1; lambda_t2] in its contact
frame C_i = [n t1 t2] (world axes).  With the PMI system A V+ = b + sum G_i^T lambda_i
(``pmi.system``), G_i = C_i^T J_i and J_i = [I, -R S(r_i)] (node velocity in world axes from
the twist [v_w; w_b], r_i the node's body-axis offset from the COM), the contact velocity is
u_i = G_i V+.  Conditions, velocity level on V_{k+1} (seed 000 eqs. (2), (3)):
  * Signorini with penetration correction: 0 <= lambda_n  _|_  u_n - b_n >= 0, where for a
    gap d >= 0, b_n = min(0, -2d/T - u_n,k) (the pose moves with the midpoint velocity, so
    this closes the gap exactly by the end of the step without asking for a rebound), and
    for a penetration d < 0, b_n = min(-beta d / T, -u_n,k) (a fraction beta pushed out per
    step, as far as that does no work: below);
  * Coulomb cone ||lambda_t|| <= mu lambda_n (the exact disk, not a pyramid).
No positive work.  PMI's energy balance (``pmi``) makes the contacts' work over a step exactly
T sum_i lambda_i . (u_i,k + u_i,k+1)/2 with u = G V: the impulse times the midpoint velocity.
Where lambda_n > 0 the solve ends with u_n,k+1 = b_n, so a frictionless contact's work is
T lambda_n (u_n,k + b_n)/2, and it is <= 0 for every lambda_n >= 0 exactly when
b_n <= -u_n,k.  The gap target meets that (-2d/T - u_n,k <= -u_n,k).  The old penetration
target b_n = -beta d/T did not: in a wedge (a 1 deg pin in its zero-clearance hole) pushing
micrometres out along two nearly opposite normals moves the body millimetres -- it
straightened the pin against its drive and pushed it in, +0.079 J against 0.042 J from the
push.  So the correction is capped at -u_n,k: it may turn an approach into a separation at
most as fast (a penetrating contact that was approaching is pushed out, a body resting in a
penetration stays where it is, never pushed against what presses it).  A penetration held
that way would stay for good (a nut landing on a frictionless thread kept ~95 um of it all
the way down), so the block SOR solver (``solvers.push_out``) also pushes penetrations out
at beta d / T, but pays for it from an energy budget per body: what its contacts
dissipated before and have not given back.  A solve whose work exceeds the budget
is replaced by the capped one, so the contacts' work summed from a start without
penetration never exceeds zero (up to the solver's residual).  The haptic proxy keeps such a
budget too (``haptics.proxy``, through ``pgs_targets``); ``pgs`` itself, the seed's baseline,
keeps the capped targets only.
Friction is apart: it works at u_t,k+1 (maximum dissipation there, ``solver_sor``).
Each sweep solves contact i's normal row with the others fixed, then its tangential 2x2 block
and projects onto the disk -- the classic PGS that the seed solver will be compared with.
"""
from __future__ import annotations

import numpy as np
from numba import njit

# the contact frames and Jacobians live in ``frames``; re-exported for the proxy and the tests
from sim_core.contact.frames import contact_frames, contact_jacobians, world_jacobians  # noqa: F401
from sim_core.contact.solver_sor import OPEN, STICK, _subspace, delassus_blocks, identity_rows


@njit(cache=True)
def normal_targets(G, V_prev, d, T, beta):
    """Signorini targets b_n per contact (velocity level): for a gap d >= 0 the pose moves
    with the midpoint velocity, so allow the approach that closes the gap by the end of the
    step, T (u_k + u_k+1)/2 = -d, and never demand a rebound (cap at 0); a penetration is
    pushed out by the fraction beta (m,) (the contact's material) per step, but never faster than the contact approached
    (b_n <= -u_k: the contact's work T lambda_n (u_k + b_n)/2 is never positive; module
    docstring)."""
    m, n = G.shape[0], G.shape[2]
    b = np.empty(m)
    for i in range(m):
        u = 0.0
        for j in range(n):
            u += G[i, 0, j] * V_prev[j]
        if d[i] >= 0.0:
            b[i] = min(0.0, -2.0 * d[i] / T - u)
        else:
            b[i] = min(-beta[i] * d[i] / T, -u)
    return b


@njit(cache=True)
def pgs(G, A_inv, V_free, V_prev, d, T, mu, beta, iterations, tol, lam0):
    """Projected Gauss-Seidel on the Delassus operator G A^-1 G^T of any n velocity
    coordinates (G (m,3,n), A_inv (n,n)) with the capped targets ``normal_targets``; mu (m,)
    and beta (m,) per contact (``materials.per_contact``); returns (lambda (m,3), V+ (n,),
    sweeps used)."""
    return pgs_targets(G, A_inv, V_free, normal_targets(G, V_prev, d, T, beta), mu, iterations, tol, lam0)


@njit(cache=True)
def pgs_law(G, A_inv, V_free, V_prev, d, T, mu, nexp, beta, iterations, tol, lam0):
    """``pgs`` with the generalized friction law ||lambda_t|| <= mu lambda_n^N per contact,
    nexp (m,) the exponents N (``friction_limit``)."""
    return _pgs(G, A_inv, V_free, normal_targets(G, V_prev, d, T, beta), mu, nexp, iterations, tol, lam0)


@njit(cache=True)
def friction_limit(mu, N, ln):
    """The radius of the friction disk at the normal force ln >= 0 (N): mu ln (Coulomb, N = 1,
    the arithmetic of before) or mu ln^N -- seed 002 eq. (8), ||lambda_t|| <= kappa |lambda_n|^N.
    The print writes it on impulses; an impulse law with N != 1 would change with the step (the
    impulses are T f: ||f_t|| <= kappa T^(N-1) f_n^N), so it is taken as a law on FORCES, which is
    what these kernels' lambda are (A V+ = b + G^T lambda, lambda in N): the threshold
    ||f_t|| = kappa f_n^N is the same at every step (kappa in N^(1-N)).  On the seed's impulses
    Lambda = T f it reads ||Lambda_t|| <= kappa T^(1-N) Lambda_n^N.  The disk stays convex (the
    projection is the radial one), its radius concave in f_n for N < 1."""
    if N == 1.0:
        return mu * ln
    return mu * ln ** N


@njit(cache=True)
def pgs_targets(G, A_inv, V_free, b, mu, iterations, tol, lam0):
    """``pgs`` with the normal targets b (m,) given (the haptic proxy's budgeted push-out,
    ``haptics.proxy``, solves with the uncapped ones where its budget pays); mu (m,)."""
    return _pgs(G, A_inv, V_free, b, mu, np.ones(G.shape[0]), iterations, tol, lam0)


@njit(cache=True)
def _row(i, G, W, AG, V, lam, b, mu, nexp, ident=False):
    """One PGS step on contact i with the others held: its normal row, then its tangential 2x2
    block projected onto the disk of ``friction_limit``; lam[i] and V (+= A^-1 G_i^T delta) in
    place.  Returns the largest change of its force (N).  `ident`: G is the identity's rows
    (``solver_sor.identity_rows``), so G_i V is V's slice -- the same numbers."""
    u = V[3 * i:3 * i + 3].copy() if ident else G[i] @ V
    old = lam[i].copy()
    # normal row
    ln = max(0.0, lam[i, 0] - (u[0] - b[i]) / W[i, 0, 0])
    dn = ln - lam[i, 0]
    u = u + W[i, :, 0] * dn
    lam[i, 0] = ln
    # tangential 2x2 block, then the disk of radius mu * ln
    a, bb, c, e = W[i, 1, 1], W[i, 1, 2], W[i, 2, 1], W[i, 2, 2]
    det = a * e - bb * c
    t1 = lam[i, 1] - (e * u[1] - bb * u[2]) / det
    t2 = lam[i, 2] - (-c * u[1] + a * u[2]) / det
    lim = friction_limit(mu[i], nexp[i], ln)
    nt = np.sqrt(t1 * t1 + t2 * t2)
    if nt > lim:
        s = lim / nt if nt > 0.0 else 0.0
        t1 *= s
        t2 *= s
    lam[i, 1] = t1
    lam[i, 2] = t2
    delta = lam[i] - old
    V += AG[i] @ delta
    out = 0.0
    for j in range(3):
        if abs(delta[j]) > out:
            out = abs(delta[j])
    return out


@njit(cache=True)
def _pgs(G, A_inv, V_free, b, mu, nexp, iterations, tol, lam0):
    m = G.shape[0]
    lam = lam0.copy()
    # Delassus diagonal blocks and the velocity map of each contact's force (in contact space
    # copies of A_inv's columns: the same numbers, ``delassus_blocks``)
    ident = identity_rows(G)
    if ident:
        AG, W = delassus_blocks(G, A_inv, True)
    else:
        AG = np.empty((m, A_inv.shape[0], 3))
        W = np.empty((m, 3, 3))
        for i in range(m):
            AG[i] = A_inv @ G[i].T
            W[i] = G[i] @ AG[i]
    V = V_free.copy()
    for i in range(m):
        V += AG[i] @ lam[i]
    sweeps = 0
    for it in range(iterations):
        sweeps = it + 1
        dmax = 0.0
        for i in range(m):
            dmax = max(dmax, _row(i, G, W, AG, V, lam, b, mu, nexp, ident))
        if dmax < tol:
            break
    return lam, V, sweeps


def contact_wrench(G: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Total generalized contact force, (n,): per body [f world; tau body]."""
    if lam.shape[0] == 0:
        return np.zeros(G.shape[2])
    return np.einsum("mij,mi->j", G, lam)


@njit(cache=True)
def pgs_subspace(G, A_inv, V_free, b, mu, nexp, iterations, tol, lam0, every):
    """``_pgs`` (the friction law of ``friction_limit``, exponents nexp (m,)) warm-started from
    lam0 (m,3), with a subspace step every `every` sweeps and after the last one
    (``solver_sor._subspace``: the normal forces of the contacts with a force at once, the
    friction held, by Lawson and Hanson's active set, up to 2 m row additions) -- the PGS
    that holds a stiff chain.

    Why.  A cable wound on a drum under tension is held by normal forces in a pattern that
    barely moves it: pushing every wound link outward at once stretches the whole coil (a hoop
    of axial stiffness E A / l), pushing one link alone only bends it.  The normal rows of the
    Delassus operator then spread over six decades (the seed's cable, 40 links, T = 10 ms:
    eigenvalues 4e-5 .. 55), PGS gains almost nothing a sweep on the coil's mode, and at 50
    sweeps it left the coil 2.5 mm inside the drum (docs/cable.md).  The subspace step meets
    every normal row to round-off.  The friction rows along the cable see the same stiff
    axial mode, so the sweeps between subspace steps leave them converging slowly (the
    largest force change of a sweep ~1e-4 of the forces at 100 sweeps); ending on a subspace
    step keeps what matters for the coil -- no contact approaching, no force at a separating
    one -- exact, and the friction inside its disk.  Unlike ``solver_sor.sor_with`` the steps
    are not judged by the sweep after them: every sweep there raises the force change again
    (the friction answers the new normal forces), which is not a worse solution.
    Returns (lambda (m,3), V+ (n,), sweeps, the last sweep's largest force change (N))."""
    m = G.shape[0]
    lam = lam0.copy()
    for i in range(m):                         # the warm start inside the law's disk
        lam[i, 0] = max(lam[i, 0], 0.0)
        lim = friction_limit(mu[i], nexp[i], lam[i, 0])
        nt = np.sqrt(lam[i, 1] ** 2 + lam[i, 2] ** 2)
        if nt > lim:
            sc = lim / nt
            lam[i, 1] *= sc
            lam[i, 2] *= sc
    ident = identity_rows(G)
    AG, W = delassus_blocks(G, A_inv, ident)
    V = V_free.copy()
    for i in range(m):
        V += AG[i] @ lam[i]
    modes = np.zeros(m, np.int64)
    NC, AN = np.zeros(V.shape[0]), np.zeros(V.shape[0])      # no C-space row
    sweeps = 0
    dmax = 0.0
    since = 0
    for it in range(iterations):
        sweeps = it + 1
        dmax = 0.0
        for i in range(m):
            dmax = max(dmax, _row(i, G, W, AG, V, lam, b, mu, nexp, ident))
            modes[i] = OPEN if lam[i, 0] == 0.0 else STICK
        since += 1
        last = dmax < tol or it + 1 == iterations
        if every > 0 and (since >= every or last):
            since = 0
            for _ in range(FINAL_PASSES if last else 1):
                _subspace(G, AG, V, lam, b, mu, nexp, modes, NC, AN, 0.0, 0.0, False, 2 * m, True, ident)
                if not last or _normal_violation(G, V, b) <= FINAL_EXACT * (1.0 + np.abs(b).max()):
                    break
        if dmax < tol:
            break
    return lam, V, sweeps, dmax


# The last subspace step is repeated while a normal row is still violated: a contact whose
# normal force it lowered has its friction scaled back into the disk, which moves the others
# (measured on the hoop of the tests: 7e-5, 4e-7, 7e-10, 2e-11, 8e-13 m/s left after one to
# five: each pass ~30x less).
FINAL_PASSES = 8
FINAL_EXACT = 1e-12     # m/s per (1 + the largest target): a row met to round-off


@njit(cache=True)
def _normal_violation(G, V, b):
    """max_i max(0, b_i - u_i,n) (m/s): how fast the worst contact still approaches its target."""
    out = 0.0
    for i in range(G.shape[0]):
        u = 0.0
        for j in range(V.shape[0]):
            u += G[i, 0, j] * V[j]
        out = max(out, b[i] - u)
    return out
