"""Contact frames and contact Jacobians: the maths every solver and the haptic proxy share.

A contact i with unit normal n_i at the world point x_i has the frame C_i = [n t1 t2]
(``contact_frames``).  A rigid body's twist [v_w; w_b] moves its material point at x_i with
the world velocity J_i V, J_i = [I, -R S(r_b)], r_b = R^T (x_i - p) (body axes).  The contact's
relative velocity in its frame is u_i = G_i V, G_i = C_i^T (J_i(body) - J_i(other)).

A contact touches at most two blocks, so its Jacobian is stored sparse: ``contact_rows``
gives the two (3,6) pieces and the block each acts on (the island solve, ``step.solve``);
``world_jacobians`` scatters them into a dense (m,3,6B) array for a small island's
velocity-space solve; ``contact_jacobians`` is the one-body form the haptic proxy calls.
``lever_rows`` are the rows with which body-body contacts keep the total momentum under PMI
(``contact.body_body`` derives them): the lever from the point p~ = p_k + T v_k / 2 and the
body torque (I - T/2 S(w_bar)) R^T ((x - p~) x f).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def contact_frames(n_w):
    """(m,3,3) frames [n t1 t2] as columns, t1 from the least-aligned world axis (x, or y
    when the normal is within 53 deg of x).  Scalar arithmetic: no temporaries per contact
    (an every-node step has ~900 contacts)."""
    m = n_w.shape[0]
    Cf = np.empty((m, 3, 3))
    for i in range(m):
        n0, n1, n2 = n_w[i, 0], n_w[i, 1], n_w[i, 2]
        if abs(n0) < 0.6:                        # a = x: t1 = x - n0 n
            t0, t1_, t2_ = 1.0 - n0 * n0, -n0 * n1, -n0 * n2
        else:                                    # a = y: t1 = y - n1 n
            t0, t1_, t2_ = -n1 * n0, 1.0 - n1 * n1, -n1 * n2
        s = 1.0 / math.sqrt(t0 * t0 + t1_ * t1_ + t2_ * t2_)
        t0, t1_, t2_ = t0 * s, t1_ * s, t2_ * s
        Cf[i, 0, 0], Cf[i, 1, 0], Cf[i, 2, 0] = n0, n1, n2
        Cf[i, 0, 1], Cf[i, 1, 1], Cf[i, 2, 1] = t0, t1_, t2_
        Cf[i, 0, 2] = n1 * t2_ - n2 * t1_          # t2 = n x t1
        Cf[i, 1, 2] = n2 * t0 - n0 * t2_
        Cf[i, 2, 2] = n0 * t1_ - n1 * t0
    return Cf


@njit(cache=True)
def _rows(G, i, col, sign, Cf_i, R, x, p):
    """Contact i's three rows in the six columns from `col` of the body at (p, R): row k of
    C^T J is [c_k, r_b x (R^T c_k)] (J = [I, -R S(r_b)], and -a^T S(r) = (r x a)^T)."""
    d0, d1, d2 = x[0] - p[0], x[1] - p[1], x[2] - p[2]
    r0 = R[0, 0] * d0 + R[1, 0] * d1 + R[2, 0] * d2          # r_b = R^T (x - p)
    r1 = R[0, 1] * d0 + R[1, 1] * d1 + R[2, 1] * d2
    r2 = R[0, 2] * d0 + R[1, 2] * d1 + R[2, 2] * d2
    for k in range(3):
        c0, c1, c2 = Cf_i[0, k], Cf_i[1, k], Cf_i[2, k]
        b0 = R[0, 0] * c0 + R[1, 0] * c1 + R[2, 0] * c2      # R^T c_k
        b1 = R[0, 1] * c0 + R[1, 1] * c1 + R[2, 1] * c2
        b2 = R[0, 2] * c0 + R[1, 2] * c1 + R[2, 2] * c2
        G[i, k, col] += sign * c0
        G[i, k, col + 1] += sign * c1
        G[i, k, col + 2] += sign * c2
        G[i, k, col + 3] += sign * (r1 * b2 - r2 * b1)
        G[i, k, col + 4] += sign * (r2 * b0 - r0 * b2)
        G[i, k, col + 5] += sign * (r0 * b1 - r1 * b0)


@njit(cache=True)
def world_jacobians(x_w, n_w, body, other, p_w, R_wb):
    """G_i = C_i^T (J_i(body) - J_i(other)), (m,3,6B), and the frames C_i (m,3,3): contact i
    pushes `body[i]` along its normal and `other[i]` (``types.WORLD``: nothing) the other way.
    J_i = [I, -R S(r_b)] maps a body's twist [v_w; w_b] to the world velocity of its point
    x_w, r_b = R^T (x_w - p) (body axes), in that body's six columns."""
    m = x_w.shape[0]
    Cf = contact_frames(n_w)
    G = np.zeros((m, 3, 6 * p_w.shape[0]))
    for i in range(m):
        _rows(G, i, 6 * body[i], 1.0, Cf[i], R_wb[body[i]], x_w[i], p_w[body[i]])
        if other[i] >= 0:
            _rows(G, i, 6 * other[i], -1.0, Cf[i], R_wb[other[i]], x_w[i], p_w[other[i]])
    return G, Cf


@njit(cache=True)
def contact_jacobians(x_w, n_w, p_w, R_wb):
    """``world_jacobians`` of one body's contacts with the world: G (m,3,6), frames (m,3,3)
    (the haptic proxy's kernel calls it at 1 kHz)."""
    m = x_w.shape[0]
    Cf = contact_frames(n_w)
    G = np.zeros((m, 3, 6))
    for i in range(m):
        _rows(G, i, 0, 1.0, Cf[i], R_wb, x_w[i], p_w)
    return G, Cf



@njit(cache=True)
def contact_rows(x_w, n_w, body, other, p_w, R_wb):
    """The sparse contact Jacobian: (G_body (m,3,6), G_other (m,3,6), frames (m,3,3)).
    G_body[i] acts on body[i]'s six columns, G_other[i] on other[i]'s (zero where other[i] is
    ``types.WORLD``): G_i = C_i^T (J_i(body) - J_i(other)) without the (m,3,6B) zeros."""
    m = x_w.shape[0]
    Cf = contact_frames(n_w)
    Gb = np.zeros((m, 3, 6))
    Go = np.zeros((m, 3, 6))
    for i in range(m):
        _rows(Gb, i, 0, 1.0, Cf[i], R_wb[body[i]], x_w[i], p_w[body[i]])
        if other[i] >= 0:
            _rows(Go, i, 0, -1.0, Cf[i], R_wb[other[i]], x_w[i], p_w[other[i]])
    return Gb, Go, Cf


@njit(cache=True)
def _lever_rows(G, i, sign, Cf_i, R, x, p_lever, w_bar, T):
    """Contact i's three rows on the body at (p~, R) with the Coriolis point w_bar
    (``contact.body_body``): row k = [c_k, (I - T/2 S(w_bar)) (r_b x R^T c_k)],
    r_b = R^T (x - p~) -- the force c_k at x as the body torque that keeps the world momentum."""
    d0, d1, d2 = x[0] - p_lever[0], x[1] - p_lever[1], x[2] - p_lever[2]
    r0 = R[0, 0] * d0 + R[1, 0] * d1 + R[2, 0] * d2
    r1 = R[0, 1] * d0 + R[1, 1] * d1 + R[2, 1] * d2
    r2 = R[0, 2] * d0 + R[1, 2] * d1 + R[2, 2] * d2
    h = 0.5 * T
    for k in range(3):
        c0, c1, c2 = Cf_i[0, k], Cf_i[1, k], Cf_i[2, k]
        b0 = R[0, 0] * c0 + R[1, 0] * c1 + R[2, 0] * c2
        b1 = R[0, 1] * c0 + R[1, 1] * c1 + R[2, 1] * c2
        b2 = R[0, 2] * c0 + R[1, 2] * c1 + R[2, 2] * c2
        a0, a1, a2 = r1 * b2 - r2 * b1, r2 * b0 - r0 * b2, r0 * b1 - r1 * b0       # r_b x R^T c_k
        G[i, k, 0] = sign * c0
        G[i, k, 1] = sign * c1
        G[i, k, 2] = sign * c2
        G[i, k, 3] = sign * (a0 - h * (w_bar[1] * a2 - w_bar[2] * a1))          # - T/2 w_bar x a
        G[i, k, 4] = sign * (a1 - h * (w_bar[2] * a0 - w_bar[0] * a2))
        G[i, k, 5] = sign * (a2 - h * (w_bar[0] * a1 - w_bar[1] * a0))


@njit(cache=True)
def lever_rows(x_w, n_w, body, other, p_lever, R_wb, w_bar, T):
    """``contact_rows`` with the momentum-keeping rows of ``_lever_rows``: (G_body (m,3,6),
    G_other (m,3,6), frames (m,3,3)); p_lever (B,3) m the lever points p~, w_bar (B,3) rad/s the
    bodies' Coriolis points (body axes), T s the step."""
    m = x_w.shape[0]
    Cf = contact_frames(n_w)
    Gb = np.zeros((m, 3, 6))
    Go = np.zeros((m, 3, 6))
    for i in range(m):
        j = body[i]
        _lever_rows(Gb, i, 1.0, Cf[i], R_wb[j], x_w[i], p_lever[j], w_bar[j], T)
        if other[i] >= 0:
            j = other[i]
            _lever_rows(Go, i, -1.0, Cf[i], R_wb[j], x_w[i], p_lever[j], w_bar[j], T)
    return Gb, Go, Cf
