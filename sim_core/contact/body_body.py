"""Body-body contacts that keep the total momentum: the island solve of ``step.solve`` for an
island with a contact between two bodies (issue 24: two free bodies colliding keep their total
linear and angular momentum to 1e-9 relative).

Why the ordinary rows do not.  PMI (``dynamics.pmi``) moves a body by its midpoint twist,
p+ = p + T v_m, R+ = R exp(T S(w_m)), with the Coriolis matrix at the point w_bar.  The
ordinary rows (``frames.contact_rows``) take a contact's lever from the start-of-step COM p_k
and map a world torque to the body by R_k^T: under an impulse T f at x on body a and -T f on
body b the total angular momentum then changes by about (T^2/2)(v_a - v_b) x f per contact
step (1.7e-2 relative in ``test_body_body``'s throw).

Derivation (checked numerically on one body and on colliding pairs in
``tests/sim_core/collision/test_body_body.py``).
With the body's generalized force [f; tau_b] (f world, tau_b body axes) over the step T:

1. Orbital part.  m (v+ - v) = T f and p+ = p + T (v + v+)/2, so
       p+ x m v+ - p x m v = p x T f + (T/2) v x m v+ = (p + (T/2) v) x T f
   (v x m v = 0, v+ = v + T f / m): the force acts as if at the lever point
   p~ = p_k + (T/2) v_k, known at the start of the step.
2. Spin part.  Pi = J w; the angular rows  J (w+ - w)/T - S(J w_bar) (w + w+)/2 = tau_b  with
   w_bar = s w_m (the solution's own Coriolis point, ``pmi.coriolis_point``) read
       (I + T/2 S(w_bar)) Pi+ = (I - T/2 S(w_bar)) Pi + T tau_b,
   i.e. Pi+ = cay(-T w_bar) Pi + T (I + T/2 S(w_bar))^-1 tau_b, and since exp(T S(w_m)) =
   cay(T w_bar) and cay(T w_bar) (I + T/2 S(w_bar))^-1 = (I - T/2 S(w_bar))^-1, the world spin
       R+ Pi+ - R Pi = T R_k (I - T/2 S(w_bar))^-1 tau_b.
3. So the world momentum of the body changes by T (p~ x f + R_k (I - T/2 S(w_bar))^-1 tau_b),
   and a contact force f at x on body a, -f on body b keeps the total exactly when each body
   takes  tau_b = (I - T/2 S(w_bar)) R_k^T ((x - p~) x f):  the sum is T x x (f - f) = 0.
   These are the rows ``frames.lever_rows``: row k of G on a body is
   [c_k, (I - T/2 S(w_bar)) (r_b x R^T c_k)], r_b = R_k^T (x - p~).

PMI's energy balance stays exact: E+ - E = T lambda^T G (V + V+)/2 for any G, and the solvers
take the contact velocity u = G V (their targets, the push-out's work) with the same G.  The
price: u = G V is not the point's true velocity, v + R w x (x - p) in the ordinary rows, but
v + R (I + T/2 S(w_bar)) w x (x - p~): they differ by O(T |v|) in the lever (a half step's
travel of the COM) and O(T |w|) in the rotation, so the contact's Signorini target and its
friction's sliding velocity are off by that much (at T = 10 ms and 1 m/s the lever point is
5 mm from the COM); the momentum is exact regardless.

w_bar must be the Coriolis point of the motion WITH the contacts, while ``systems.rigid.blocks``
evaluates it on the contact-free motion.  So the island is solved as a fixed point: from the
contact-free point, its blocks moved to w_bar (A += (C(w_bar) - C(w_0))/2, b -= (C(w_bar) -
C(w_0)) V / 2: C enters the block additively, so what the systems and couplings folded into it
stays), the rows rebuilt, the island re-solved warm-started from the last pass's forces, and
w_bar <- s (w_k + w+)/2.  That contracts by about T |w| / 2 per pass (as ``pmi.coriolis_point``
does) only while the solver's answer is a smooth function of w_bar; an iterative solver
stopped at its tolerance is not (on 98 every-node contacts block SOR crept on by ~1e-7 per
pass and never settled), so the re-solves stop at ``RESOLVE_TOL`` (or ``RESOLVE_MAX`` passes),
and the last pass's forces lambda are then held while w_bar alone is iterated to
``FIXED_POINT_TOL``: with lambda fixed each body's V+ = A(w_bar)^-1 (b(w_bar) + G(w_bar)^T
lambda) is smooth in w_bar and the map contracts as the contact-free one does.  The momentum
is then exact (equal and opposite forces at one point, each body at its own Coriolis point),
and the forces are the solver's answer at a w_bar within ``RESOLVE_TOL`` of the final one, or
wherever ``RESOLVE_MAX`` passes left it (1.5e-4 on the 98 every-node contacts): their contact
laws hold at the final rows up to that change of the rows and blocks (relative T |w| / 2 times
it).  The push-out budget is rebooked with the held forces' work at the final rows
(``solvers.contact_work``), so the contacts' summed work stays what the budget allows.

Scope: islands with a body-body contact, no couplings and at most ``step.SMALL_ISLAND`` bodies
(the velocity-space solve), every contact in it (its world contacts too) on these rows; an
island without a body-body contact keeps the ordinary rows and today's arithmetic, bitwise.
A coupled or large island with body-body contacts (a cable's links against each other) still
takes the ordinary rows in ``island_solvers.direct``.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from sim_core.contact import frames, materials
from sim_core.contact.solvers import contact_work
from sim_core.dynamics import pmi
from sim_core.types import Contacts, Warm

# Re-solve the contacts while w_bar moves by more than this, relative to the island's fastest
# spin (then hold the forces, module docstring): measured 0.8, 7e-3, 8e-5, 6e-7 over the passes
# of the ball thrown at the link (T |w| ~ 0.01); below ~1e-6 the solver's stopping tolerance, not
# w_bar, moves its answer.
RESOLVE_TOL = 1e-6
RESOLVE_MAX = 4
# Then iterate w_bar with the forces held until it moves by less than this (as
# ``pmi.CORIOLIS_TOL``): the world momentum error per step is about T |Pi| times the remaining
# error, far below 1e-9.  Each pass contracts by ~T |w| / 2; past ``FIXED_POINT_MAX`` the last
# pass is kept (the energy balance holds, the momentum to the residual).
FIXED_POINT_TOL = 1e-13
FIXED_POINT_MAX = 50


def applies(c: Contacts) -> bool:
    """Whether an island's contacts join two bodies (then ``solve`` is its solve)."""
    return bool((c.others() >= 0).any())


def contact_free_points(model, state, g: np.ndarray, blk, dt: float) -> np.ndarray:
    """(k,3) rad/s: the Coriolis points ``systems.rigid.blocks`` used for bodies g (the same
    kernel on the same inputs, so bitwise the same)."""
    out = np.empty((g.size, 3))
    for j, i in enumerate(g.tolist()):
        body = model.bodies[i]
        out[j] = pmi.coriolis_point(float(body.mass), np.asarray(body.inertia_b, float), state.V[i], float(dt),
                                    blk.F0[i], np.diag(blk.Bd[i]))
    return out


def dense_rows(Gb: np.ndarray, Go: np.ndarray, body: np.ndarray, other: np.ndarray, k: int) -> np.ndarray:
    """(m,3,6k): the sparse rows scattered into the island's columns."""
    m = Gb.shape[0]
    G = np.zeros((m, 3, 6 * k))
    i = np.arange(m)[:, None]
    G[i, :, 6 * body[:, None] + np.arange(6)] = Gb.transpose(0, 2, 1)
    w = np.flatnonzero(other >= 0)
    G[w[:, None], :, 6 * other[w][:, None] + np.arange(6)] += Go[w].transpose(0, 2, 1)
    return G


class _Island:
    """The island's blocks and rows as functions of the bodies' Coriolis points w_bar (k,3)."""

    def __init__(self, model, state, sub: Contacts, g: np.ndarray, blk, V_prev: np.ndarray, T: float):
        self.k, self.T, self.sub = g.size, T, sub
        self.V0 = V_prev.reshape(g.size, 6)
        self.p_lever = state.p_w[g] + 0.5 * T * self.V0[:, :3]          # p~ = p_k + T v_k / 2
        self.R = state.R_wb[g]
        self.w0 = contact_free_points(model, state, g, blk, T)
        self.J = [np.asarray(model.bodies[i].inertia_b, float) for i in g.tolist()]
        self.A0, self.b0 = blk.A[g], blk.b[g]

    def blocks(self, w_bar):
        """(A (k,6,6), b (k,6)): the blocks with C(w_0) moved to C(w_bar)."""
        A, b = self.A0.copy(), self.b0.copy()
        for j in range(self.k):
            dC = pmi.coriolis(self.J[j], w_bar[j]) - pmi.coriolis(self.J[j], self.w0[j])
            A[j] += 0.5 * dC
            b[j] -= 0.5 * dC @ self.V0[j]
        return A, b

    def rows(self, w_bar):
        """(G (m,3,6k), frames (m,3,3)): ``frames.lever_rows`` at w_bar, dense over the island."""
        c = self.sub
        Gb, Go, Cf = frames.lever_rows(c.x_w, c.n_w, c.body, c.other, self.p_lever, self.R, w_bar, self.T)
        return dense_rows(Gb, Go, c.body, c.other, self.k), Cf

    def point(self, V):
        """The Coriolis points s w_m of the motion V (6k,) (``pmi.coriolis_point``), or None past
        170 deg per step (no midpoint worth predicting)."""
        wm = 0.5 * (self.V0[:, 3:] + V.reshape(self.k, 6)[:, 3:])
        h = 0.5 * self.T * np.linalg.norm(wm, axis=1)
        if (h >= 1.5).any():
            return None
        return np.array([pmi.tan_ratio(x) for x in h])[:, None] * wm


def _change(new, old) -> float:
    """max_i |new_i - old_i| relative to the island's fastest spin."""
    return float(np.linalg.norm(new - old, axis=1).max()) / max(float(np.linalg.norm(new, axis=1).max()), 1e-300)


def _dense(A):
    k = A.shape[0]
    out = np.zeros((6 * k, 6 * k))
    for j in range(k):
        out[6 * j:6 * j + 6, 6 * j:6 * j + 6] = A[j]
    return out


def solve(model, state, solver, sub: Contacts, g: np.ndarray, blk, V_prev: np.ndarray, dt: float,
          warm: Warm | None, row=None, trace: list | None = None):
    """The island g (bodies renumbered 0..k-1 in `sub`) solved with the momentum-keeping rows
    (module docstring) at the Coriolis point of its own solution.  Returns the solver's
    ``Solution`` over the island's 6k coordinates.  `trace`, when given, receives (phase,
    relative change of w_bar) per pass, phase "solve" or "hold" (the convergence test reads it)."""
    isl = _Island(model, state, sub, g, blk, V_prev, float(dt))
    mu, beta = materials.per_contact(model, sub)
    w_bar, start = isl.w0.copy(), warm
    for _ in range(RESOLVE_MAX):
        A, b = isl.blocks(w_bar)
        G, Cf = isl.rows(w_bar)
        s = solver(model.contact, sub, G, Cf, _dense(A), b.ravel(), V_prev, dt, start, row, mu=mu, beta=beta,
                   nexp=materials.exponents(model, sub))
        new = isl.point(s.V)
        if new is None:
            return s
        change = _change(new, w_bar)
        if trace is not None:
            trace.append(("solve", change))
        w_bar = new
        if change <= RESOLVE_TOL:
            break
        # the next pass starts from this one's forces (the same contacts: matched exactly), with
        # the step's own energy budget and C-space warm start
        start = Warm(sub.x_w, s.forces_w, sub.body, 0.0 if warm is None else warm.lam_c, sub.idx,
                     None if warm is None else warm.budget, push_need=None if warm is None else warm.push_need)
    if change <= FIXED_POINT_TOL:
        return s
    # the forces held, w_bar alone to its fixed point: each body's block on its own
    G_s, V, gen = G, s.V, s.generalized
    extra = np.zeros(V.size) if row is None else np.asarray(row[0], float) * s.lam_c     # N^C lambda^C
    for _ in range(FIXED_POINT_MAX):
        A, b = isl.blocks(w_bar)
        G, _ = isl.rows(w_bar)
        gen = np.einsum("mij,mi->j", G, s.lam) + extra
        V = np.linalg.solve(A, (b.ravel() + gen).reshape(isl.k, 6)[..., None])[..., 0].ravel()
        new = isl.point(V)
        if new is None:
            break
        change = _change(new, w_bar)
        if trace is not None:
            trace.append(("hold", change))
        w_bar = new
        if change <= FIXED_POINT_TOL:
            break
    budget = s.budget
    if budget is not None:                   # the held forces' work at the final rows, rebooked
        body = sub.bodies()
        budget = budget + contact_work(G_s, s.lam, V_prev, s.V, dt, body, isl.k) \
            - contact_work(G, s.lam, V_prev, V, dt, body, isl.k)
    return replace(s, V=V, generalized=gen, budget=budget)
