"""Contact solving (stage 4), the seed's solver: per-contact open / stick / slip with maximum
dissipation, nonlinear block SOR over the contacts, and the C-space constraint (seed 000
Sec. III.C, IV.C, Algorithm 1).

Notation as in ``solver_pgs``: the PMI system A V+ = b + sum_i G_i^T lambda_i (+ N^C lambda^C),
G_i = C_i^T J_i with the contact frame C_i = [n t1 t2]; the velocity of contact i at the end
of the step is u_i = G_i V+, and with every other force held fixed it is affine in its own
force:  u_i = W_i lambda_i + uf_i,  W_i = G_i A^-1 G_i^T (the 3x3 Delassus block).

Single contact (``single_contact``), given W, uf and the Signorini target b_n (velocity
level, with the penetration-compensation term of ``solver_pgs``):
  * open  -- uf_n >= b_n: no force;
  * stick -- the force that gives u_n = b_n and a zero tangential velocity at k+1, if it lies
    in the Coulomb cone ||lambda_t|| <= mu lambda_n;
  * slip  -- otherwise the force lies on the cone's boundary, lambda = lambda_n [1, mu cos phi,
    mu sin phi], lambda_n(phi) from u_n = b_n, and the friction dissipates the most energy it
    can: eq. (7) minimizes the friction's work, and at a given sliding velocity u_t the force
    on the disk ||lambda_t|| <= mu lambda_n that does the least work is the one opposite to u_t.
    Since u_t itself depends on phi, this is a fixed point on the cone boundary, found as in
    Hwangbo, Lee and Hutter 2018 by bisection on the angle: the sign of d(phi) x (-u_t(phi))
    tells on which side of the consistent direction phi lies.  A ring of ``N_COARSE`` angles
    brackets every crossing; if there are several, the most dissipative is kept.  Within block
    SOR a contact that slipped in the last sweep is first solved by Newton's method on the
    angle from its last one (the derivative of d x (-u_t) in closed form, ``_slip_slope``):
    the crossing nearest the last sweep's, in ~3 steps instead of ~10 of regula falsi.

  The sliding velocity is the one at k+1, the velocity the stick case sets to zero.  PMI's
  energy balance would suggest the midpoint velocity (u_k + u_k+1)/2 instead, and that was
  tried: with stick meaning u_k+1 = 0, the single-contact force then jumps where stick turns
  into slip, block SOR cycles on it (on 40 random 12-contact problems, 9 did not converge
  in 5000 sweeps against 3 that converge later with u_k+1), and a friction that would
  reverse the sliding within a step has no consistent midpoint direction at all.  Minimizing
  the work through the force's own effect on u_t (a third reading of eq. (7)) lets redundant
  contacts squeeze sideways and creep down an incline they should stick to.

Multi-contact (``sor``): nonlinear block SOR -- each contact's single-contact solution with
the others fixed, relaxed, lambda <- alpha lambda* + (1 - alpha) lambda (Algorithm 1 lines 3-6);
then the C-space constraint (lines 7-13): with the C-space normal N^C, v^C = N^C^T V+ must not
fall below its target (0, or a push-out when the configuration is inside the C-space
obstacle), 0 <= lambda^C _|_ v^C - b^C >= 0, relaxed the same way.  Warm-started, and
converged when the natural residual max_i ||lambda_i - lambda_i*|| (which is zero exactly when
complementarity, the cone and maximum dissipation all hold) is below the tolerance, or after
the iteration bound.

Subspace steps (issue 23 (5)), an addition to Algorithm 1.  Block SOR gains little per sweep
where the Delassus operator is nearly singular: a pin tilted 1 deg in a hole of its own
diameter is held by forces ~57 x the push along nearly opposite normals, and the sweeps
trade force between the two sides a little at a time (10,000 sweeps to hold it within
0.1 um; at 100 it followed its set path 568 um below its stop).  But with the friction
forces lambda_t held, the normal forces alone are a small problem with a direct solution.
Write a_q = G_q,n (row q of the normal rows; the C-space row N^C joins as one more) and
V = V_f + A^-1 sum_q a_q lambda_q,n, V_f the velocity with every force but the normal ones.
Signorini for all rows at once is the LCP
    0 <= lambda_n _|_ D lambda_n - c >= 0,   D = G_n A^-1 G_n^T,  c_q = b_q - a_q . V_f,
which for a symmetric A is the QP min 1/2 lambda^T D lambda - c^T lambda, lambda >= 0 (the
primal: the velocity nearest V_f in A's metric with every a_q . V >= b_q; PMI's A is
symmetric up to the small gyroscopic term, and nothing below needs the symmetry).  D has rank <= n
(6 per body): of its rows at most n are independent, so it is solved as Lawson and
Hanson solve non-negative least squares: a set P of independent rows held at their targets,
grown by the most violated row outside it (w_q = c_q - a_q . dV > 0, dV = sum_P s_q A^-1 a_q),
D_PP s = c_P solved directly (D_PP = R_P C_P^T, R the rows a_q, C the columns A^-1 a_q; at
most n x n, Gaussian elimination), and where some s_q <= 0 the step back to the boundary,
dropping the rows that reach zero.  It ends with every row met (w_q <= tolerance) and every
force in P positive: lambda_n solves the LCP given lambda_t (the redundant contacts, met
by the set's velocity, carry no force; the sweeps share it out again).  A row that depends
on the set (a pivot below ``PIVOT_MIN``, or n rows already) or whose own force is not
positive at once is left out: its violation is the sweeps' to settle.  The rows are those
of the contacts with a force or not open at the last sweep (the LCP's likely support; a gap
the new forces close is caught by the next sweep).  Then lambda_n replaces their normal
forces, the friction is scaled into the cone where lambda_n shrank, and the sweeps go on:
they restore the cone, stick / slip and maximum dissipation, so every law above is the
sweeps' as before.  Without friction one step solves the step's contact problem (the wedges'
solves end in 1-6 sweeps); with friction it solves the normal part for the current
friction, which helps where the normal forces are the slow part, not where the friction is.
A step is taken every ``SUBSPACE_EVERY`` sweeps while unconverged and judged by the natural
residual of the sweep after it (the merit): if that is larger than the sweep's before it, the
state before the step is restored and no further step is taken in this solve; if it does not
at least halve (``SUBSPACE_GAIN``), the step is kept but is the solve's last.  Only a sweep
ends a solve, so the stopping rule and the returned state are block SOR's.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

OPEN, STICK, SLIP = 0, 1, 2
# Active set, for large contact sets only (every contact node of a line or face contact, not
# the ~12-40 representatives of a clustered step, which sweep every contact as before).  Of
# the ~900 nodes of the peg pressed on its bore, ~20 carry force: the others are gaps that
# stay open.  After a sweep over every contact, the next FULL_EVERY - 1 sweeps visit only the
# contacts with a force or not open there; then (or as soon as they settle) every contact
# again.  Only a sweep over every contact may end the solve, so its result meets the same
# tolerance on every contact; a gap that another contact's force closes is caught at the next
# full sweep.  Every sweep counts against the iteration cap.
ACTIVE_SET_MIN = 64
FULL_EVERY = 8
N_COARSE = 24          # angles sampled to bracket the most dissipative slip direction
N_BISECT = 40          # bisection steps: the bracket 2 (2 pi / 24) shrinks to ~5e-13 rad
DENOM_MIN = 1e-12      # relative: a slip direction whose normal row W_nn + mu W_nt.d is not
                       # positive cannot satisfy Signorini with a finite force; skipped


@njit(cache=True, inline="always")
def _slip_terms(W, uf, s, mu, phi):
    """Slip force with its friction along the cone angle phi: (lambda_n, lambda_t1, lambda_t2,
    the friction's power P = lambda_t . u_t at the sliding velocity u_t(phi) it leaves, the
    cross product g = d x (-u_t) of the friction direction d with -u_t, the dot d . u_t, ok).
    The maximally dissipative slip is where g = 0 and d . u_t < 0."""
    c, sn = math.cos(phi), math.sin(phi)
    den = W[0, 0] + mu * (W[0, 1] * c + W[0, 2] * sn)
    if den <= DENOM_MIN * W[0, 0]:
        return 0.0, 0.0, 0.0, math.inf, 0.0, 0.0, False
    ln = s / den
    l1, l2 = mu * ln * c, mu * ln * sn
    u1 = W[1, 0] * ln + W[1, 1] * l1 + W[1, 2] * l2 + uf[1]
    u2 = W[2, 0] * ln + W[2, 1] * l1 + W[2, 2] * l2 + uf[2]
    return ln, l1, l2, l1 * u1 + l2 * u2, -(c * u2 - sn * u1), c * u1 + sn * u2, True


@njit(cache=True)
def _solve3(W, r0, r1, r2, out):
    """out = W^-1 r for a 3x3 W (Cramer's rule; W is symmetric positive definite here)."""
    a, b, c = W[0, 0], W[0, 1], W[0, 2]
    d, e, f = W[1, 0], W[1, 1], W[1, 2]
    g, h, k = W[2, 0], W[2, 1], W[2, 2]
    A_, B_, C_ = e * k - f * h, -(d * k - f * g), d * h - e * g
    det = a * A_ + b * B_ + c * C_
    out[0] = (A_ * r0 + (c * h - b * k) * r1 + (b * f - c * e) * r2) / det
    out[1] = (B_ * r0 + (a * k - c * g) * r1 + (c * d - a * f) * r2) / det
    out[2] = (C_ * r0 + (b * g - a * h) * r1 + (a * e - b * d) * r2) / det


@njit(cache=True)
def single_contact(W, uf, bn, mu):
    """One contact's force with everything else fixed: (lambda [n, t1, t2] (3,), mode).

    W (3,3) Delassus block, uf (3,) its velocity at k+1 without its own force, bn the
    normal-velocity target, mu the friction coefficient."""
    lam = np.zeros(3)
    mode = _single(W, uf, bn, mu, lam)
    return lam, mode


@njit(cache=True)
def _single(W, uf, bn, mu, lam, hint=math.nan):
    """``single_contact`` writing into lam (3,); returns the mode.  Allocation-free: it runs
    M_c times per sweep.  `hint`: the contact's friction angle at the last sweep (rad; NaN:
    none) -- where it still slips, Newton's method looks for its consistent angle there first
    (``_root_newton``)."""
    s = bn - uf[0]
    lam[0] = lam[1] = lam[2] = 0.0
    if s <= 0.0:
        return OPEN
    if mu <= 0.0:
        lam[0] = s / W[0, 0]
        return SLIP
    _solve3(W, s, -uf[1], -uf[2], lam)
    if lam[0] >= 0.0 and math.sqrt(lam[1] * lam[1] + lam[2] * lam[2]) <= mu * lam[0]:
        return STICK
    # slip: in a sweep, near the last sweep's angle (Newton from there); else near the stick
    # force's (Hwangbo et al. start there too): bracket it in a widening window around that
    # angle and close the bracket by regula falsi (Illinois); only if no window brackets it,
    # scan the whole ring
    if hint == hint and _root_newton(W, uf, s, mu, hint, lam):
        return SLIP
    found = _root_near(W, uf, s, mu, math.atan2(lam[2], lam[1]), WINDOWS)
    best = math.inf
    step = 2.0 * math.pi / N_COARSE
    if found < -10.0:
        t = _slip_terms(W, uf, s, mu, 0.0)
        g0, ok0 = t[4], t[6]
        ga, oka = g0, ok0
        for j in range(N_COARSE):
            a = j * step
            if j + 1 < N_COARSE:
                t = _slip_terms(W, uf, s, mu, a + step)
                gb, okb = t[4], t[6]
            else:
                gb, okb = g0, ok0
            if oka and okb and ga >= 0.0 and gb < 0.0:      # d turns counter-clockwise past -u_t
                xm = _illinois(W, uf, s, mu, a, a + step, ga, gb)
                t = _slip_terms(W, uf, s, mu, xm)
                if t[6] and t[5] <= 0.0 and t[3] < best:
                    best, found = t[3], xm
            ga, oka = gb, okb
    if found < -10.0:            # not met in the tests: the least-power direction of the ring
        for j in range(N_COARSE):
            t = _slip_terms(W, uf, s, mu, j * step)
            if t[6] and t[3] < best:
                best, found = t[3], j * step
    if found < -10.0:            # no direction can hold the contact: push along the normal
        lam[0], lam[1], lam[2] = s / W[0, 0], 0.0, 0.0
        return SLIP
    t = _slip_terms(W, uf, s, mu, found)
    lam[0], lam[1], lam[2] = t[0], t[1], t[2]
    return SLIP


WINDOWS = (0.05, 0.3, 1.0)   # rad, half-widths tried around the stick force's direction
# Newton's method on the consistent angle from the angle the contact slipped at in the last
# sweep (``_root_newton``): at most this many steps, none taking it further than HINT_REACH
# (rad) from where it started -- else the windows above.  In block SOR a contact's angle moves
# little between sweeps (measured on the snap's capped steps: median 3e-4 rad, 99 % below
# 0.04), where Newton closes to ROOT_TOL in ~3 steps and the stick force's window takes ~10.
HINT_STEPS = 8
HINT_REACH = 0.05
ROOT_TOL = 1e-13             # rad, bracket width at which regula falsi stops


@njit(cache=True)
def _illinois(W, uf, s, mu, a, b, ga, gb):
    """Root of g = d x (-u_t) in [a, b] with g(a) >= 0 > g(b), by the Illinois variant of
    regula falsi (keeps a bracket, like bisection, and converges superlinearly)."""
    side = 0
    c = 0.5 * (a + b)
    for _ in range(N_BISECT):
        c = b - gb * (b - a) / (gb - ga) if gb != ga else 0.5 * (a + b)
        t = _slip_terms(W, uf, s, mu, c)
        gc, ok = t[4], t[6]
        if not ok:
            c = 0.5 * (a + b)
            t = _slip_terms(W, uf, s, mu, c)
            gc, ok = t[4], t[6]
            if not ok:
                break
        if gc >= 0.0:
            a, ga = c, gc
            if side == -1:
                gb *= 0.5
            side = -1
        else:
            b, gb = c, gc
            if side == 1:
                ga *= 0.5
            side = 1
        if b - a < ROOT_TOL or gc == 0.0:
            break
    return c


@njit(cache=True, inline="always")
def _slip_slope(W, uf, s, mu, phi):
    """(g, dg/dphi, ok) of ``_slip_terms`` at phi: g = d x (-u_t) and its derivative along the
    cone, from lambda_n = s / den(phi), u_t = lambda_n a(phi) + uf_t (a = W_tn + mu W_tt d)."""
    c, sn = math.cos(phi), math.sin(phi)
    den = W[0, 0] + mu * (W[0, 1] * c + W[0, 2] * sn)
    if den <= DENOM_MIN * W[0, 0]:
        return 0.0, 0.0, False
    ln = s / den
    dln = -ln * mu * (W[0, 2] * c - W[0, 1] * sn) / den
    a1, a2 = W[1, 0] + mu * (W[1, 1] * c + W[1, 2] * sn), W[2, 0] + mu * (W[2, 1] * c + W[2, 2] * sn)
    da1, da2 = mu * (W[1, 2] * c - W[1, 1] * sn), mu * (W[2, 2] * c - W[2, 1] * sn)
    u1, u2 = ln * a1 + uf[1], ln * a2 + uf[2]
    du1, du2 = dln * a1 + ln * da1, dln * a2 + ln * da2
    return sn * u1 - c * u2, c * u1 + sn * du1 + sn * u2 - c * du2, True


@njit(cache=True)
def _root_newton(W, uf, s, mu, phi0, lam):
    """The consistent slip angle by Newton's method from phi0 (the last sweep's): True with its
    slip force in lam (3,), or False (lam untouched) where it leaves HINT_REACH, meets a rising g
    (the root it would find is not the dissipative crossing, ``_single``'s ga >= 0 > gb) or does
    not settle to ROOT_TOL in HINT_STEPS."""
    phi = phi0
    for _ in range(HINT_STEPS):
        g, dg, ok = _slip_slope(W, uf, s, mu, phi)
        if not ok or not dg < 0.0:
            return False
        step = g / dg
        phi -= step
        if abs(phi - phi0) > HINT_REACH:
            return False
        if abs(step) < ROOT_TOL:
            t = _slip_terms(W, uf, s, mu, phi)
            if not (t[6] and t[5] <= 0.0):
                return False
            lam[0], lam[1], lam[2] = t[0], t[1], t[2]
            return True
    return False


@njit(cache=True)
def _root_near(W, uf, s, mu, phi0, windows):
    """The consistent slip angle bracketed in the smallest of `windows` (half-widths, rad)
    around phi0, or -100."""
    for h in windows:
        a, b = phi0 - h, phi0 + h
        ta = _slip_terms(W, uf, s, mu, a)
        tb = _slip_terms(W, uf, s, mu, b)
        if ta[6] and tb[6] and ta[4] >= 0.0 and tb[4] < 0.0:
            c = _illinois(W, uf, s, mu, a, b, ta[4], tb[4])
            tc = _slip_terms(W, uf, s, mu, c)
            if tc[6] and tc[5] <= 0.0:
                return c
    return -100.0


@njit(cache=True)
def identity_rows(G) -> bool:
    """Whether G (m,3,n) is the identity's first 3m rows: contact i's row r is e_(3i+r) (the
    contact-space problems ``island_solvers.direct`` hands the kernels)."""
    m, n = G.shape[0], G.shape[2]
    if n != 3 * m:
        return False
    for i in range(m):
        for r in range(3):
            for j in range(n):
                if G[i, r, j] != (1.0 if j == 3 * i + r else 0.0):
                    return False
    return True


@njit(cache=True)
def delassus_blocks(G, A_inv, ident=False):
    """AG_i = A^-1 G_i^T (n,3): the velocity change per unit force of contact i, and the
    Delassus block W_i = G_i A^-1 G_i^T (3,3); scalar loops, no temporaries per contact.
    `ident`: G is the identity's rows (``identity_rows``, found once a solve by the caller)."""
    m, n = G.shape[0], A_inv.shape[0]
    AG = np.zeros((m, n, 3))
    W = np.zeros((m, 3, 3))
    if ident:
        # contact space (``island_solvers.direct``: G the identity's rows, A_inv the Delassus
        # operator): the sums below each hold one product with 1.0 and zeros, so these copies
        # are the same numbers, in O(m n) instead of O(m n^2) (80 wound links: 25 ms -> 0.1)
        for i in range(m):
            for a in range(n):
                for k in range(3):
                    AG[i, a, k] = A_inv[a, 3 * i + k]
            for r in range(3):
                for k in range(3):
                    W[i, r, k] = AG[i, 3 * i + r, k]
        return AG, W
    for i in range(m):
        for a in range(n):
            for k in range(3):
                acc = 0.0
                for b in range(n):
                    acc += A_inv[a, b] * G[i, k, b]
                AG[i, a, k] = acc
        for r in range(3):
            for k in range(3):
                acc = 0.0
                for a in range(n):
                    acc += G[i, r, a] * AG[i, a, k]
                W[i, r, k] = acc
    return AG, W

SUBSPACE_EVERY = 4     # sweeps between subspace steps (module docstring; 0: none)
SUBSPACE_GAIN = 0.5    # a step that does not halve the residual is the solve's last
LH_ITERATIONS = 24     # rows added at most in one subspace step (a settled wedge: ~3-12)
LH_TOL = 1e-12         # relative: a constraint violated by less counts as met
LH_ZERO = 1e-12        # relative: a multiplier interpolated this close to 0 leaves the set
LH_INNER = 8           # drops at most after one addition
PIVOT_MIN = 1e-12      # relative: a smaller pivot of D_PP means the new row depends on the set


@njit(cache=True)
def _subspace(G, AG, V, lam, bn, mu, nexp, modes, NC, AN, bC, lamC, cspace, additions, seeded=False,
              ident=False):
    """Subspace step (module docstring): the normal forces of the contacts with a force or not
    open (``modes`` of the last sweep) at once, the friction held, by Lawson and Hanson's active
    set; mu (m,) the contacts' friction coefficients, nexp (m,) their friction laws' exponents
    (``solver_pgs.friction_limit``: 1 is Coulomb's cone); at most `additions` rows added
    (``LH_ITERATIONS`` for ``sor``).  Changes lam and V in place; returns
    (lambda^C, True), or (lambda^C, False) with lam and V untouched where it did not settle.
    `seeded`: the set starts as the rows that hold a force now, solved at once and the rows
    that come out negative dropped, before the additions (``solver_pgs.pgs_subspace``: after
    PGS sweeps nearly every pushing contact is in the solution's set, so one or two solves
    replace one per row -- 2 m factorizations of a growing D_PP at 160 wound links).
    `ident`: G is the identity's rows (``identity_rows``)."""
    m, n = G.shape[0], V.shape[0]
    idx = np.empty(m + 1, np.int64)            # row q is contact idx[q] (-1: the C-space row)
    k = 0
    for i in range(m):
        if lam[i, 0] != 0.0 or lam[i, 1] != 0.0 or lam[i, 2] != 0.0 or modes[i] != OPEN:
            idx[k] = i
            k += 1
    if cspace:
        idx[k] = -1
        k += 1
    Vf = V.copy()                              # V without the normal forces
    for q in range(k):
        i = idx[q]
        for j in range(n):
            Vf[j] -= AG[i, j, 0] * lam[i, 0] if i >= 0 else AN[j] * lamC
    R = np.empty((k, n))                       # rows a_q: u_q = a_q . V
    C = np.empty((k, n))                       # columns A^-1 a_q: V per unit force
    c = np.empty(k)                            # c_q = b_q - a_q . V_f
    # in contact space (G the identity's rows) row q is e_col[q]: its products with a vector
    # are that vector's entry -- the same numbers as the sums over n (one product with 1.0)
    col = np.full(k, -1, np.int64)
    if ident:
        for q in range(k):
            if idx[q] >= 0:
                col[q] = 3 * idx[q]
    top = 0.0
    for q in range(k):
        i = idx[q]
        acc = 0.0
        for j in range(n):
            R[q, j] = G[i, 0, j] if i >= 0 else NC[j]
            C[q, j] = AG[i, j, 0] if i >= 0 else AN[j]
        if col[q] >= 0:
            acc = Vf[col[q]]
        else:
            for j in range(n):
                acc += R[q, j] * Vf[j]
        c[q] = (bn[i] if i >= 0 else bC) - acc
        top = max(top, abs(c[q]))
    tol = LH_TOL * top + 1e-300
    x = np.zeros(k)                            # the normal forces (and lambda^C)
    inP = np.zeros(k, np.bool_)                # the passive set: x > 0, rows held at target
    blocked = np.zeros(k, np.bool_)            # dependent on the set: its least squares pulls
    P = np.empty(n, np.int64)                  # the set: independent rows, at most n
    Mw = np.empty((n, n))
    sP = np.empty(n)
    dV = np.zeros(n)
    D = np.empty((k, k))                       # D = R C^T, its entries computed as needed
    have = np.zeros((k, k), np.bool_)
    ok = False
    seed = False
    if seeded:
        for q in range(k):
            if (lam[idx[q], 0] if idx[q] >= 0 else lamC) > 0.0:
                inP[q] = True
                seed = True
    for _ in range(additions):
        jbest, wbest = -1, tol                 # the most violated row outside the set
        if seed:                               # the seeded set first, nothing added
            seed = False
            if _lh_inner(inP, P, D, have, Mw, sP, c, x, C, R, col, dV, blocked, np.int64(-1), n, k, k + 1):
                continue
            for q in range(k):                 # dependent rows among the seed: start empty
                inP[q] = False
                x[q] = 0.0
            dV[:] = 0.0
            continue
        for q in range(k):
            if not inP[q] and not blocked[q]:
                w = c[q]
                if col[q] >= 0:
                    w -= dV[col[q]]
                else:
                    for j in range(n):
                        w -= R[q, j] * dV[j]
                if w > wbest:
                    jbest, wbest = q, w
        if jbest < 0:
            ok = True
            break
        cnt = 0
        for q in range(k):
            if inP[q]:
                cnt += 1
        if cnt >= n:                           # n independent rows fix V: the new one depends
            blocked[jbest] = True
            continue
        inP[jbest] = True
        # np.int64: literals would make more specializations of the helper (``sor``)
        _lh_inner(inP, P, D, have, Mw, sP, c, x, C, R, col, dV, blocked, jbest, n, k, np.int64(LH_INNER))
    if not ok:
        return lamC, False
    V[:] = Vf + dV
    newC = lamC
    for q in range(k):
        i = idx[q]
        if i < 0:
            newC = x[q]
            continue
        lam[i, 0] = x[q]
        nt = math.sqrt(lam[i, 1] ** 2 + lam[i, 2] ** 2)
        lim = mu[i] * x[q] if nexp[i] == 1.0 else mu[i] * x[q] ** nexp[i]
        if nt > lim:                           # the friction held, but inside the cone
            sc = lim / nt
            d1, d2 = lam[i, 1] * (sc - 1.0), lam[i, 2] * (sc - 1.0)
            lam[i, 1] += d1
            lam[i, 2] += d2
            for j in range(n):
                V[j] += AG[i, j, 1] * d1 + AG[i, j, 2] * d2
    return newC, True


@njit(cache=True)
def _lh_inner(inP, P, D, have, Mw, sP, c, x, C, R, col, dV, blocked, jbest, n, k, rounds):
    """Lawson and Hanson's inner loop after row `jbest` joined the set (-1: a seeded set): solve
    on the set, step towards it, drop who reaches 0, at most `rounds` times; x, inP, dV (= sum
    x_q C_q) in place.  False where D_PP is singular (`jbest` is then blocked and out)."""
    for _inner in range(rounds):
        np_ = 0
        for q in range(k):
            if inP[q]:
                P[np_] = q
                np_ += 1
        for t in range(np_):               # D_PP = R_P C_P^T, c_P
            for u in range(np_):
                a, b = P[t], P[u]
                if not have[a, b]:         # each entry once per call: a set that grows to
                    acc = 0.0              # k rows refactorizes k times, not recomputes
                    if col[a] >= 0:
                        acc = C[b, col[a]]
                    else:
                        for j in range(n):
                            acc += R[a, j] * C[b, j]
                    D[a, b] = acc
                    have[a, b] = True
                Mw[t, u] = D[a, b]
            sP[t] = c[P[t]]
        if not _gauss(Mw, sP, np_):        # the new row depends on the set: out
            if jbest >= 0:
                inP[jbest] = False
                blocked[jbest] = True
            return False
        alpha = 1.0
        for t in range(np_):
            if sP[t] <= 0.0:
                q = P[t]
                alpha = min(alpha, x[q] / (x[q] - sP[t]))
        for t in range(np_):
            q = P[t]
            x[q] += alpha * (sP[t] - x[q])
        if alpha < 1.0:                    # back to the boundary: who reached 0 leaves
            for t in range(np_):
                q = P[t]
                if sP[t] <= 0.0 and x[q] <= LH_ZERO * abs(sP[t]):
                    x[q] = 0.0
                    inP[q] = False
                    blocked[q] = q == jbest and alpha == 0.0
        dV[:] = 0.0
        for t in range(np_):
            q = P[t]
            for j in range(n):
                dV[j] += x[q] * C[q, j]
        if alpha >= 1.0:
            break
    return True


@njit(cache=True)
def _gauss(M, r, k):
    """Solve M[:k,:k] s = r[:k] in place (s in r) by Gaussian elimination with partial
    pivoting; False where a pivot is below PIVOT_MIN of the largest entry (the rows are
    dependent).  k <= n, so a few hundred flops and no allocation."""
    big = 0.0
    for i in range(k):
        for j in range(k):
            big = max(big, abs(M[i, j]))
    if big == 0.0:
        return False
    for col in range(k):
        piv, pr = 0.0, col
        for i in range(col, k):
            if abs(M[i, col]) > piv:
                piv, pr = abs(M[i, col]), i
        if piv <= PIVOT_MIN * big:
            return False
        if pr != col:
            for j in range(k):
                M[col, j], M[pr, j] = M[pr, j], M[col, j]
            r[col], r[pr] = r[pr], r[col]
        for i in range(col + 1, k):
            f = M[i, col] / M[col, col]
            if f != 0.0:
                for j in range(col, k):
                    M[i, j] -= f * M[col, j]
                r[i] -= f * r[col]
    for i in range(k - 1, -1, -1):
        acc = r[i]
        for j in range(i + 1, k):
            acc -= M[i, j] * r[j]
        r[i] = acc / M[i, i]
    return True


@njit(cache=True)
def sor(G, A_inv, V_free, bn, mu, alpha, iterations, tol, lam0, NC, bC, lamC0):
    """``sor_with`` with a subspace step every ``SUBSPACE_EVERY`` sweeps; its first six
    results (mu (m,) per contact)."""
    # np.int64: the global is a compile-time Literal[int](4), a second specialization of sor_with
    # beside the int64 one its callers with another `every` make (one more cold compile)
    return sor_with(G, A_inv, V_free, bn, mu, alpha, iterations, tol, lam0, NC, bC, lamC0, np.int64(SUBSPACE_EVERY))[:6]


@njit(cache=True)
def sor_with(G, A_inv, V_free, bn, mu, alpha, iterations, tol, lam0, NC, bC, lamC0, every):
    """Nonlinear block SOR (Algorithm 1) on the Delassus operator G A^-1 G^T of any n velocity
    coordinates.  G (m,3,n), A_inv (n,n), V_free = A^-1 b, bn (m,) normal targets, mu (m,) the
    contacts' friction coefficients (``materials.per_contact``), lam0 (m,3) warm start; NC (n,)
    the C-space normal (all zero: no C-space constraint), bC its velocity target, lamC0 its
    warm start.

    More than ``ACTIVE_SET_MIN`` contacts: sweeps alternate between all contacts and the
    active ones (module constants).  A subspace step (module docstring) every `every` sweeps
    while unconverged (0: plain block SOR), judged by the sweep after it.

    Returns (lambda (m,3), lambda^C, V+ (n,), iterations used, residual, modes (m,), subspace
    steps tried, of them undone or unsettled)."""
    m = G.shape[0]
    n = A_inv.shape[0]
    lam = lam0.copy()
    for i in range(m):               # a warm start outside the cone is projected onto it, so
        lam[i, 0] = max(lam[i, 0], 0.0)  # that every relaxed iterate stays inside (convex)
        nt = math.sqrt(lam[i, 1] ** 2 + lam[i, 2] ** 2)
        if nt > mu[i] * lam[i, 0]:
            sc = mu[i] * lam[i, 0] / nt
            lam[i, 1] *= sc
            lam[i, 2] *= sc
    lamC = max(lamC0, 0.0)
    ident = identity_rows(G)
    AG, W = delassus_blocks(G, A_inv, ident)
    AGt = np.empty((m, 3, n))        # AG's columns as rows: the sweep's update of V reads them in order
    for i in range(m):
        for j in range(n):
            for k in range(3):
                AGt[i, k, j] = AG[i, j, k]
    cspace = False
    for j in range(n):
        if NC[j] != 0.0:
            cspace = True
    AN = A_inv @ NC
    wC = NC @ AN
    if not cspace:
        lamC = 0.0
    V = V_free + AN * lamC
    for i in range(m):
        V += AG[i] @ lam[i]
    modes = np.zeros(m, np.int64)
    ones = np.ones(m)                # Coulomb's cone: the subspace step's friction limit
    res = 0.0
    it = 0
    uf = np.empty(3)
    star = np.empty(3)
    use_set = m > ACTIVE_SET_MIN
    order = np.arange(m)
    lam_keep = lam.copy()
    V_keep = V.copy()
    modes_keep = np.zeros(m, np.int64)
    lamC_keep, res_keep = lamC, 0.0
    trial = False
    since = 0
    tried = rejected = 0
    n_act = m
    full = True
    partial = 0
    for _ in range(iterations):
        it += 1
        res = 0.0
        for q in range(m if full else n_act):
            i = q if full else order[q]
            Gi, Wi, AGi, li = G[i], W[i], AGt[i], lam[i]
            for r in range(3):           # uf = G_i V - W_i lambda_i, without temporaries
                if ident:                # G_i V is V's rows 3i..3i+2: the same sum without its zeros
                    acc = V[3 * i + r]
                else:
                    acc = 0.0
                    for j in range(n):
                        acc += Gi[r, j] * V[j]
                uf[r] = acc - (Wi[r, 0] * li[0] + Wi[r, 1] * li[1] + Wi[r, 2] * li[2])
            # modes[i] is still the last sweep's: a contact that slipped there starts at its angle
            hint = math.atan2(li[2], li[1]) if modes[i] == SLIP and (li[1] != 0.0 or li[2] != 0.0) else math.nan
            modes[i] = _single(Wi, uf, bn[i], mu[i], star, hint)
            d0, d1, d2 = star[0] - li[0], star[1] - li[1], star[2] - li[2]
            rr = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            if rr > res:
                res = rr
            if d0 == 0.0 and d1 == 0.0 and d2 == 0.0:    # unchanged (a gap that stays open): so is V
                continue
            d0, d1, d2 = alpha * d0, alpha * d1, alpha * d2      # relaxed step
            li[0] += d0
            li[1] += d1
            li[2] += d2
            for j in range(n):
                V[j] += AGi[0, j] * d0 + AGi[1, j] * d1 + AGi[2, j] * d2
        if cspace:
            vC = NC @ V - wC * lamC          # line 7: v^C without the virtual force
            starC = (bC - vC) / wC if vC < bC else 0.0
            if abs(starC - lamC) > res:
                res = abs(starC - lamC)
            newC = alpha * starC + (1.0 - alpha) * lamC
            V += AN * (newC - lamC)
            lamC = newC
        if trial:                        # the sweep after a subspace step: its merit
            trial = False
            if res > res_keep:           # worse than before it: back, and try less often
                lam[:, :] = lam_keep
                V[:] = V_keep
                modes[:] = modes_keep
                lamC, res = lamC_keep, res_keep
                every = 0                # none again in this solve
                rejected += 1
            elif res > SUBSPACE_GAIN * res_keep:
                every = 0                # kept, but too little gained to try again
        if not use_set:
            if res < tol:
                break
        elif full:
            if res < tol:                # only a sweep over every contact may stop the solve
                break
            n_act = 0                    # the active set: contacts with a force, or not open
            for i in range(m):
                if lam[i, 0] != 0.0 or lam[i, 1] != 0.0 or lam[i, 2] != 0.0 or modes[i] != OPEN:
                    order[n_act] = i
                    n_act += 1
            full, partial = False, 0
        else:
            partial += 1
            full = res < tol or partial >= FULL_EVERY - 1
        since += 1
        if 0 < every <= since and it + 1 < iterations:
            since = 0                    # a subspace step, then a sweep to judge it by
            lam_keep[:, :] = lam
            V_keep[:] = V
            modes_keep[:] = modes
            lamC_keep, res_keep = lamC, res
            lamC, trial = _subspace(G, AG, V, lam, bn, mu, ones, modes, NC, AN, bC, lamC, cspace,
                                    LH_ITERATIONS, False, ident)
            tried += 1
            if not trial:                # it did not settle: none again in this solve
                every = 0
                rejected += 1
    return lam, lamC, V, it, res, modes, tried, rejected


@njit(cache=True)
def residuals(G, A_inv, V, bn, mu, lam):
    """Constraint residuals of a solution (mu (m,) per contact), each >= 0 and zero at an exact solution:
    (Signorini violation max(0, b_n - u_n) m/s, complementarity max |lambda_n (u_n - b_n)| W,
    cone violation max(0, ||lambda_t|| - mu lambda_n) N, negative normal force N,
    dissipation: the largest force change ||lambda_i - lambda_i*|| N, lambda_i* the single-
    contact solution with the others fixed -- zero only where friction is maximally
    dissipative)."""
    m = G.shape[0]
    sig = comp = cone = neg = diss = 0.0
    for i in range(m):
        u = G[i] @ V
        sig = max(sig, bn[i] - u[0])
        comp = max(comp, abs(lam[i, 0] * (u[0] - bn[i])))
        cone = max(cone, math.sqrt(lam[i, 1] ** 2 + lam[i, 2] ** 2) - mu[i] * lam[i, 0])
        neg = max(neg, -lam[i, 0])
        AGi = A_inv @ G[i].T
        Wi = G[i] @ AGi
        star, _ = single_contact(Wi, u - Wi @ lam[i], bn[i], mu[i])
        dl = star - lam[i]
        diss = max(diss, math.sqrt(dl @ dl))
    return max(sig, 0.0), comp, max(cone, 0.0), max(neg, 0.0), diss


WARM_RADIUS = 2e-3     # m: a previous contact this close is taken as the same contact
BODY_APART = 1e3       # m: the shift that keeps different bodies' contacts from matching
NODE_KEY = 1 << 32     # (body, node) as one sortable key


@njit(cache=True)
def _same_nodes(key_prev, key_now, Cf, f_w, lam0):
    """lam0 (m,3) in place: each contact whose key (body, node) the previous step had starts
    from that contact's world force f_w in its own frame Cf (m,3,3), lambda = Cf^T f (its
    normal force not below 0); the others from 0.  One pass: 850 nodes in ~10 us, where the
    NumPy form (sort, search, gathers, einsum) took ~75 us of the peg's step."""
    order = np.argsort(key_prev, kind="mergesort")
    keys = key_prev[order]
    for q in range(key_now.shape[0]):
        p = np.searchsorted(keys, key_now[q])
        if p < keys.shape[0] and keys[p] == key_now[q]:
            j = order[p]
            for i in range(3):
                lam0[q, i] = Cf[q, 0, i] * f_w[j, 0] + Cf[q, 1, i] * f_w[j, 1] + Cf[q, 2, i] * f_w[j, 2]
        lam0[q, 0] = max(lam0[q, 0], 0.0)


def warm_start_kernels() -> None:
    """Load (or compile) the warm start's kernel now, with the argument types a step passes."""
    none = np.zeros(0, np.int64)
    _same_nodes(none, none, np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros((0, 3)))


def warm_start(contacts, Cf: np.ndarray, warm) -> tuple[np.ndarray, float]:
    """Initial forces from the previous step's (``types.Warm``): every-node contacts start from
    the force their own node had (matched by body and node row); representatives from the
    force of the nearest previous contact on the same body within ``WARM_RADIUS``."""
    m = len(contacts)
    lam0 = np.zeros((m, 3))
    if warm is None:
        return lam0, 0.0
    if m and len(warm.x_w) and contacts.idx is not None and warm.node is not None:
        # every-node contacts: the same node of the same body is the same contact
        _same_nodes(warm.body * NODE_KEY + warm.node, contacts.bodies() * NODE_KEY + contacts.idx, Cf,
                    warm.f_w, lam0)
    elif m and len(warm.x_w):
        # contacts of different bodies never match: each body's points are shifted far apart
        x_now, x_prev = contacts.x_w, warm.x_w
        b_now, b_prev = contacts.bodies(), warm.body
        if b_now.any() or b_prev.any():
            x_now = x_now + BODY_APART * b_now[:, None]
            x_prev = x_prev + BODY_APART * b_prev[:, None]
        if m * len(x_prev) <= 4096:             # a few clusters: all pairs
            d2 = ((x_now[:, None, :] - x_prev[None, :, :]) ** 2).sum(-1)
            j = d2.argmin(1)
            near = d2[np.arange(m), j] < WARM_RADIUS ** 2
        else:                                   # every contact node (reference runs): a k-d tree
            from scipy.spatial import cKDTree
            dist, j = cKDTree(x_prev).query(x_now, distance_upper_bound=WARM_RADIUS)
            near = np.isfinite(dist)
            j = np.where(near, j, 0)
        lam0[near] = np.einsum("mji,mj->mi", Cf[near], warm.f_w[j[near]])
        lam0[:, 0] = np.maximum(lam0[:, 0], 0.0)
    return lam0, float(warm.lam_c)
