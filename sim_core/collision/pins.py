"""Capsule pins against a block of capsule holes: seed 004's analytic contact manifold (Sec. 3.1).

Each pin (a segment [A, B] -- tip centre A, base centre B -- of radius rho) is taken against
its nearest hole (``geometry.docking.check_layout`` keeps holes far enough apart that no pin
touches two), in that hole's frame: origin at the hole's top centre, z up, the hole the
points within r of the ray from P0 = (0, 0, -h) upward, cut by the top face z = 0.  Cases:

* **cap and body** (eqs. (11)-(17)): a pin end E below the top face, against the hole's wall.
  Its nearest axis point is q = P0 when E is at or below P0 (the bottom hemisphere, eq. (11))
  and (0, 0, E_z) otherwise (the cylinder, eq. (14)); with v = E - q the gap is
  r - rho - |v| (eqs. (12), (16)), the contact point on the wall q + r v/|v| and the normal
  pushing the pin -v/|v|.  The print's eq. (17) adds +r v/|v| with v pointing from the end
  *to* the axis (its eq. (16) definition): that is the far wall; the contact is on the near
  one (and its eq. (15) projects P_0^cs for both ends: each end is projected).  Why ends
  suffice: the distance from a point to the hole's axis ray is convex, so along the pin's
  segment its largest value below the top face is at an end or where the segment crosses
  z = 0 -- and the crossing is the rim case.
* **rim** (eqs. (18)-(21)): the pin's segment against the rim circle (radius r in z = 0).
  The print searches the rim by repeated subdivision into eight points, which need not find
  the global minimum (the distance along the rim is not unimodal) and has no stated
  accuracy.  Here the distance from the segment point S(t) to the circle is closed form,
  g(t)^2 = (u(t) - r)^2 + S_z(t)^2 with u = |S_xy|, and the search is over t in [0, 1], with
  every local minimum bracketed by the derivation below (sampling g' at fixed t missed the
  minima where the pin's axis passes near the hole's: a local maximum of g between two minima
  inside one interval, 0.16 mm wrong; and g' is undefined on the axis).  Let a = |D_xy|, d0 the
  xy distance of the pin's line from the hole's axis, w = a (t - t*) the signed xy distance
  along the line from its point nearest the axis, so u = sqrt(d0^2 + w^2).  For f = g^2/2,

      f'(t)  = a (w - r w/u) + S_z D_z,
      f''(t) = |D|^2 - r a^2 d0^2 / u^3.

  f'' grows with |w|, so f' rises for |w| > w1, falls for |w| < w1, where u(w1)^3 =
  r a^2 d0^2/|D|^2 (no falling stretch when that u is <= d0).  f' rising-falling-rising has
  at most one zero with f' going - to + on each rising stretch, so g has at most two interior
  local minima and (with the ends) at most two in all: t = 0 is one when f'(0) >= 0, t = 1
  when f'(1) <= 0, and each rising stretch [lo, hi] inside [0, 1] holds one exactly when
  f'(lo) < 0 < f'(hi), refined by regula falsi (Illinois) to a bracket of ``RIM_T_TOL``.  On
  the axis (d0 = 0) the falling stretch shrinks to a kink at w = 0 where f' jumps down by
  2 a r (a local maximum of g, never a minimum); the stretches' ends there take f''s one-
  sided limits.  A pin parallel to the axis (a = 0) has f' = S_z D_z: one minimum, at S_z = 0
  (clamped).  Both minima are kept (a pin lying across the hole touches the rim on both
  sides).  The rim point is r S_xy/|S_xy|, the gap g - rho, the normal (S - R)/|S - R|; where
  the nearest S is on the hole's axis (within ``RIM_AXIS_TOL``: an upright pin on the axis, or
  an end there) every rim point is nearest, and two opposite ones are reported, along the
  pin's tilt.  Caps and body are one case here (the segment's distance includes its ends).
* **top face, edges and sides** (the seed's "surfaces of the box"): a pin end outside the
  hole's circle and less than rho below the top face: over the face, gap E_z - rho, normal
  +z, point under E (the lowest point of a capsule above a plane is an end); beyond the
  face's rectangle, the end against the box's nearest edge or side point q (gap |E - q| -
  rho, normal (E - q)/|E - q|); a pin's *body* across one of the face's four outer edges,
  by the segments' closest points (the edge counts where it is the block's nearest feature:
  outside the face, above the side).

**Supporting planes** (an addition to the seed).  With a clearance c = r - rho, the places
the tip's centre may be form a capsule of radius c around the hole's axis ray, and the pin's
axis where it crosses the top face must stay within c of the hole's axis.  A single contact
along the offset v (the seed's) linearizes a constraint surface whose radius of curvature is
c -- 0.1 mm for the seed's 35 mm pins with 0.2 mm of play -- so any sideways step longer than
c lets the pin sink by (sqrt(c^2 + s^2) - c): measured, 0.46 mm of penetration on a 4-pin
docking at T = 10 ms, the plate vibrating.  So each pin in its hole also gets the planes that
support that capsule at fixed directions of the hole's frame: ``SUPPORT_DIRS`` (12 horizontal,
the pole and 8 at 45 deg below the horizon) for the tip's centre, gap c - n_k . (A - P0),
and the 12 horizontal ones for the axis's crossing X of the top face, gap c - n_k . X_xy.
Each is a linear constraint of the configuration, exact as far as it goes: an outer polytope
of the capsule, loose by at most c (1/cos 15 deg - 1) = 3.5 % of c at the horizon and
c (1/cos 22.5 deg - 1) = 8 % of c below it (3.5 and 8 um at c = 0.1 mm); the exact contacts
above keep the true depth.  Fixed directions keep their keys from step to step (warm start).
(For a tilted pin the rim planes neglect rho (1/cos(tilt) - 1): 2.7 um at 1 deg.)

Contacts carry keys (pin * ``KEYS_PER_PIN`` + case: 0/1 wall at A/B, 2/3 rim, 4/5 top face at
A/B, 6.. the tip's supporting planes, then the rim's) so that the solver's warm start follows
them from step to step.  All in one numba kernel over the pins, writing into preallocated
arrays (nothing allocated per pin).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

RIM_BISECTIONS = 60           # at most this many steps refining a bracket
RIM_T_TOL = 1e-15             # bracket width (of t in [0, 1]): 1e-15 of the pin, ~5e-17 m
RIM_AXIS_TOL = 1e-12          # m: a nearest segment point closer than this to the hole's axis
                              # is on it (every rim point nearest to within 2e-12 m)


def _support_dirs() -> np.ndarray:
    ring = [(math.cos(a), math.sin(a), 0.0) for a in 2 * math.pi * np.arange(12) / 12]
    down = [(0.0, 0.0, -1.0)] + [(math.cos(a) * math.sqrt(0.5), math.sin(a) * math.sqrt(0.5), -math.sqrt(0.5))
                                 for a in 2 * math.pi * np.arange(8) / 8]
    return np.array(ring + down)


SUPPORT_DIRS = _support_dirs()   # (21,3): 12 horizontal first, then the pole and 8 at 45 deg down
N_RING = 12
N_EXACT = 6                      # wall at A and B, two rim points, top face at A and B
N_RIM_RING = N_RING              # rim points at the ring directions, each against its nearest axis point
N_EDGES = 4                      # the top face's outer edges (a pin's body lying across one)
MAX_PER_PIN = N_EXACT + SUPPORT_DIRS.shape[0] + N_RING + N_RIM_RING + N_EDGES
KEYS_PER_PIN = MAX_PER_PIN


@njit(cache=True, inline="always")
def _k(t, w, side, Pz, Dz, r, a, d0):
    """f'(t) for f = g^2/2 (see ``rim_minima``), given w = a (t - t*) (the signed distance along
    the xy projection of the pin's line from its point nearest the hole's axis).  On the axis
    (d0 = w = 0, a kink) ``side`` (-1 or +1) picks the limit from the left or the right."""
    u = math.sqrt(d0 * d0 + w * w)
    phi = w / u if u > 0.0 else side
    return a * (w - r * phi) + (Pz + t * Dz) * Dz


@njit(cache=True, inline="always")
def _g2(t, Px, Py, Pz, Dx, Dy, Dz, r):
    x, y, z = Px + t * Dx, Py + t * Dy, Pz + t * Dz
    w = math.sqrt(x * x + y * y) - r
    return w * w + z * z


@njit(cache=True)
def _root(lo, hi, klo, khi, side, wA, Pz, Dz, r, a, d0):
    """The zero of f' in [lo, hi], where f' increases (klo < 0 < khi): the Illinois variant of
    regula falsi, superlinear, kept in the bracket; ends when the bracket is below ``RIM_T_TOL``
    or f' vanishes (at most ``RIM_BISECTIONS`` steps)."""
    sgn = 0
    x = lo
    for _ in range(RIM_BISECTIONS):
        x = (lo * khi - hi * klo) / (khi - klo)
        if not (lo < x < hi):
            x = 0.5 * (lo + hi)
        kx = _k(x, wA + a * x, side, Pz, Dz, r, a, d0)
        if kx == 0.0:
            return x
        if kx < 0.0:
            lo, klo = x, kx
            if sgn == -1:
                khi *= 0.5
            sgn = -1
        else:
            hi, khi = x, kx
            if sgn == 1:
                klo *= 0.5
            sgn = 1
        if hi - lo <= RIM_T_TOL:
            break
    return x


@njit(cache=True)
def segment_segment(Ax, Ay, Az, Dx, Dy, Dz, Ex, Ey, Ez, Fx, Fy, Fz):
    """Closest points of the segments A + s D and E + u F (s, u in [0, 1]): (s, u), by the
    clamped normal equations (Ericson, Real-Time Collision Detection, 5.1.9)."""
    rx, ry, rz = Ax - Ex, Ay - Ey, Az - Ez
    a = Dx * Dx + Dy * Dy + Dz * Dz
    e = Fx * Fx + Fy * Fy + Fz * Fz
    f = Fx * rx + Fy * ry + Fz * rz
    c = Dx * rx + Dy * ry + Dz * rz
    b = Dx * Fx + Dy * Fy + Dz * Fz
    den = a * e - b * b
    s = min(max((b * f - c * e) / den, 0.0), 1.0) if den > 1e-300 else 0.0
    u = (b * s + f) / e
    if u < 0.0:
        u = 0.0
        s = min(max(-c / a, 0.0), 1.0)
    elif u > 1.0:
        u = 1.0
        s = min(max((b - c) / a, 0.0), 1.0)
    return s, u


@njit(cache=True)
def _keep(t, g2, best0, t0, best1, t1):
    """Insert the minimum (t, g2) into the two nearest (best0, t0) <= (best1, t1)."""
    if g2 < best0:
        return g2, t, best0, t0
    if g2 < best1:
        return best0, t0, g2, t
    return best0, t0, best1, t1


@njit(cache=True)
def rim_minima(Px, Py, Pz, Dx, Dy, Dz, r, out_t):
    """Local minima of the distance g(t) from S(t) = P + t D, t in [0, 1], to the circle
    |xy| = r, z = 0: writes up to two parameters into out_t (2,), nearest first; returns how
    many (there are never more than two; see the module's docstring for the derivation)."""
    a2 = Dx * Dx + Dy * Dy
    D2 = a2 + Dz * Dz
    if D2 == 0.0:                                 # a point
        out_t[0] = 0.0
        return 1
    if a2 < 1e-300:                               # parallel to the axis: u constant, f' = z Dz
        out_t[0] = min(max(-Pz / Dz, 0.0), 1.0) if Dz != 0.0 else 0.0
        return 1
    a = math.sqrt(a2)
    d0 = abs(Px * Dy - Py * Dx) / a               # the line's xy distance from the axis
    wA = (Px * Dx + Py * Dy) / a                  # w at t = 0; w(t) = wA + a t
    # f' decreases where u^3 < u1^3 = r a^2 d0^2 / |D|^2, i.e. for |w| < w1
    u1 = (r * a2 * d0 * d0 / D2) ** (1.0 / 3.0)
    split = u1 > d0 or d0 == 0.0                  # else f' increases on all of [0, 1]
    w1 = math.sqrt(u1 * u1 - d0 * d0) if u1 > d0 else 0.0
    best0, best1 = math.inf, math.inf
    t0, t1 = -1.0, -1.0
    # the ends: t = 0 a minimum when f rises out of it, t = 1 when f falls into it
    if _k(0.0, wA, 1.0, Pz, Dz, r, a, d0) >= 0.0:
        best0, t0, best1, t1 = _keep(0.0, _g2(0.0, Px, Py, Pz, Dx, Dy, Dz, r), best0, t0, best1, t1)
    if _k(1.0, wA + a, -1.0, Pz, Dz, r, a, d0) <= 0.0:
        best0, t0, best1, t1 = _keep(1.0, _g2(1.0, Px, Py, Pz, Dx, Dy, Dz, r), best0, t0, best1, t1)
    # inside: one zero of f' (- to +) at most on each stretch where f' increases, w <= -w1
    # (side -1) and w >= w1 (side +1)
    for piece in range(2):
        if piece == 0:
            lo, wlo = 0.0, wA
            hi, whi = (-w1 - wA) / a, -w1
            if hi >= 1.0 or not split:
                hi, whi = 1.0, wA + a
            side = -1.0
        else:
            if not split:
                break
            lo, wlo = (w1 - wA) / a, w1
            hi, whi = 1.0, wA + a
            if lo <= 0.0:
                lo, wlo = 0.0, wA
            side = 1.0
        if not (lo < hi):
            continue
        klo = _k(lo, wlo, side, Pz, Dz, r, a, d0)
        khi = _k(hi, whi, side, Pz, Dz, r, a, d0)
        if klo < 0.0 < khi:
            tm = _root(lo, hi, klo, khi, side, wA, Pz, Dz, r, a, d0)
            best0, t0, best1, t1 = _keep(tm, _g2(tm, Px, Py, Pz, Dx, Dy, Dz, r), best0, t0, best1, t1)
    k = 0
    if t0 >= 0.0:
        out_t[k] = t0
        k += 1
    if t1 >= 0.0:
        out_t[k] = t1
        k += 1
    return k


@njit(cache=True, nogil=True)
def detect_pins(seg_b, rho, R_wb, p_w, R_ws, p_ws, holes_xy, r, h, half_a, half_b, band,
                x_out, n_out, d_out, key_out):
    """All pins of one body against one hole block.  seg_b (P,2,3) m: each pin's [A, B] from
    the body's COM, body axes; rho m its radius; (R_wb, p_w) the body's pose; (R_ws, p_ws)
    the block's; holes_xy (H,2) m; r, h m; half_a, half_b m the top face's half sizes; band m.
    Writes contacts with gap < band into x_out (>= 6P, 3) m (points on the block), n_out
    (unit, pushing the pin, world), d_out (m, negative: penetration), key_out; returns how
    many.  (No argument has a default: numba types an omitted array default by its id(), a
    new signature in every process -- compiled afresh each run and cached once more.)"""
    m = 0
    tt = np.empty(2)
    sup = SUPPORT_DIRS            # a global array: frozen into the machine code as a constant
    # body -> block frame: M = R_ws^T R_wb, t = R_ws^T (p_w - p_ws); scalar arithmetic below
    # (no temporaries per pin or per contact)
    M = np.empty((3, 3))
    t_ = np.empty(3)
    for a in range(3):
        t_[a] = R_ws[0, a] * (p_w[0] - p_ws[0]) + R_ws[1, a] * (p_w[1] - p_ws[1]) + R_ws[2, a] * (p_w[2] - p_ws[2])
        for b in range(3):
            M[a, b] = R_ws[0, a] * R_wb[0, b] + R_ws[1, a] * R_wb[1, b] + R_ws[2, a] * R_wb[2, b]
    A = np.empty(3)
    B = np.empty(3)
    for i in range(seg_b.shape[0]):
        # the pin's ends in the block frame
        for a in range(3):
            A[a] = M[a, 0] * seg_b[i, 0, 0] + M[a, 1] * seg_b[i, 0, 1] + M[a, 2] * seg_b[i, 0, 2] + t_[a]
            B[a] = M[a, 0] * seg_b[i, 1, 0] + M[a, 1] * seg_b[i, 1, 1] + M[a, 2] * seg_b[i, 1, 2] + t_[a]
        if A[2] > rho + band and B[2] > rho + band:
            continue                              # above the top face by more than the reach: nothing
        # its nearest hole (by the tip)
        jbest, dbest = 0, math.inf
        for j in range(holes_xy.shape[0]):
            dx, dy = A[0] - holes_xy[j, 0], A[1] - holes_xy[j, 1]
            dd = dx * dx + dy * dy
            if dd < dbest:
                jbest, dbest = j, dd
        cx, cy = holes_xy[jbest, 0], holes_xy[jbest, 1]
        for e in range(2):
            if e == 0:
                E0, E1, ez = A[0], A[1], A[2]
            else:
                E0, E1, ez = B[0], B[1], B[2]
            ex, ey = E0 - cx, E1 - cy
            # cap and body: the end against the hole's wall (eqs. (11)-(17))
            if ez < 0.0:
                qz = max(ez, -h)
                vx, vy, vz = ex, ey, ez - qz
                dl = math.sqrt(vx * vx + vy * vy + vz * vz)
                gap = r - rho - dl
                if gap < band and dl > 1e-15 and dl < r + rho:
                    ux, uy, uz = vx / dl, vy / dl, vz / dl
                    x_out[m, 0], x_out[m, 1], x_out[m, 2] = cx + r * ux, cy + r * uy, qz + r * uz
                    n_out[m, 0], n_out[m, 1], n_out[m, 2] = -ux, -uy, -uz
                    d_out[m] = gap
                    key_out[m] = i * KEYS_PER_PIN + e
                    m += 1
            # the block's outside: an end over the top face (outside the hole's circle), or
            # beyond the face's rectangle, against its edges and sides
            rr = math.sqrt(ex * ex + ey * ey)
            qx, qy, qz = min(max(E0, -half_a), half_a), min(max(E1, -half_b), half_b), min(ez, 0.0)
            wx, wy, wz = E0 - qx, E1 - qy, ez - qz
            beyond = wx != 0.0 or wy != 0.0                       # outside the face's rectangle
            if beyond or (rr >= r and ez > -rho):
                dl = math.sqrt(wx * wx + wy * wy + wz * wz)
                if beyond:                                        # the box's edge or side
                    gap = dl - rho
                    nx, ny, nz = wx / dl, wy / dl, wz / dl
                else:                                             # over the face (or just under it)
                    gap = ez - rho
                    nx, ny, nz = 0.0, 0.0, 1.0
                    qz = 0.0
                if gap < band:
                    x_out[m, 0], x_out[m, 1], x_out[m, 2] = qx, qy, qz
                    n_out[m, 0], n_out[m, 1], n_out[m, 2] = nx, ny, nz
                    d_out[m] = gap
                    key_out[m] = i * KEYS_PER_PIN + 4 + e
                    m += 1
        # rim: the segment against the rim circle (eqs. (18)-(21), exact)
        Px, Py, Pz = A[0] - cx, A[1] - cy, A[2]
        Dx, Dy, Dz = B[0] - A[0], B[1] - A[1], B[2] - A[2]
        k = rim_minima(Px, Py, Pz, Dx, Dy, Dz, r, tt)
        slot = 0
        for s in range(k):
            t = tt[s]
            sx, sy, sz = Px + t * Dx, Py + t * Dy, Pz + t * Dz
            u = math.sqrt(sx * sx + sy * sy)
            if u >= RIM_AXIS_TOL:
                ex_, ey_ = sx / u, sy / u
                npts = 1
            else:
                # S on the hole's axis: every rim point is nearest (the contact is the whole
                # rim); two opposite ones, along the pin's tilt (the block's x when upright),
                # whose pushes cancel sideways as the ring's do
                a_ = math.sqrt(Dx * Dx + Dy * Dy)
                ex_, ey_ = (Dx / a_, Dy / a_) if a_ > 1e-150 else (1.0, 0.0)
                npts = 2
            for q in range(npts):
                if slot >= 2:
                    break
                sg = 1.0 if q == 0 else -1.0
                Rx, Ry = r * sg * ex_, r * sg * ey_
                wx, wy, wz = sx - Rx, sy - Ry, sz
                dl = math.sqrt(wx * wx + wy * wy + wz * wz)
                gap = dl - rho
                if gap >= band:
                    break
                if dl > 1e-15:
                    nx, ny, nz = wx / dl, wy / dl, wz / dl
                elif sz > 0.0:
                    nx, ny, nz = 0.0, 0.0, 1.0
                else:
                    nx, ny, nz = -sg * ex_, -sg * ey_, 0.0
                x_out[m, 0], x_out[m, 1], x_out[m, 2] = cx + Rx, cy + Ry, 0.0
                n_out[m, 0], n_out[m, 1], n_out[m, 2] = nx, ny, nz
                d_out[m] = gap
                key_out[m] = i * KEYS_PER_PIN + 2 + slot
                m += 1
                slot += 1
        # the rim at fixed points r n_k (the ring directions) against the segment's nearest
        # point: exact gaps of those rim points, reported while the rim is within reach
        if slot > 0:
            DD = Dx * Dx + Dy * Dy + Dz * Dz
            for k in range(N_RIM_RING):
                Rx, Ry = r * sup[k, 0], r * sup[k, 1]
                t = ((Rx - Px) * Dx + (Ry - Py) * Dy - Pz * Dz) / DD if DD > 0.0 else 0.0
                t = min(max(t, 0.0), 1.0)
                wx, wy, wz = Px + t * Dx - Rx, Py + t * Dy - Ry, Pz + t * Dz
                dl = math.sqrt(wx * wx + wy * wy + wz * wz)
                gap = dl - rho
                if gap < band and dl > 1e-15:
                    x_out[m, 0], x_out[m, 1], x_out[m, 2] = cx + Rx, cy + Ry, 0.0
                    n_out[m, 0], n_out[m, 1], n_out[m, 2] = wx / dl, wy / dl, wz / dl
                    d_out[m] = gap
                    key_out[m] = i * KEYS_PER_PIN + N_EXACT + sup.shape[0] + N_RING + k
                    m += 1
        # the block's outer top edges against the pin's body (an end there is the case above);
        # none can be within reach when both ends are that far inside the face's rectangle
        inner = rho + band
        far_in = (abs(A[0]) < half_a - inner and abs(B[0]) < half_a - inner
                  and abs(A[1]) < half_b - inner and abs(B[1]) < half_b - inner)
        for k in range(0 if not far_in else N_EDGES, N_EDGES):
            sx_ = -1.0 if k == 0 else 1.0
            if k < 2:                                   # edges along y at x = -/+ half_a
                Ex, Ey, Fx, Fy = sx_ * half_a, -half_b, 0.0, 2.0 * half_b
            else:                                       # edges along x at y = -/+ half_b
                Ex, Ey, Fx, Fy = -half_a, (-1.0 if k == 2 else 1.0) * half_b, 2.0 * half_a, 0.0
            sp, up = segment_segment(A[0], A[1], A[2], B[0] - A[0], B[1] - A[1], B[2] - A[2],
                                     Ex, Ey, 0.0, Fx, Fy, 0.0)
            if not (0.0 < sp < 1.0):
                continue
            qx, qy = Ex + up * Fx, Ey + up * Fy
            wx = A[0] + sp * (B[0] - A[0]) - qx
            wy = A[1] + sp * (B[1] - A[1]) - qy
            wz = A[2] + sp * (B[2] - A[2])
            # the edge is the block's nearest feature only outside the face and above the side
            out = (wx * (qx / half_a if k < 2 else 0.0) + wy * (qy / half_b if k >= 2 else 0.0)) > 0.0
            if not (out and wz > 0.0):
                continue
            dl = math.sqrt(wx * wx + wy * wy + wz * wz)
            gap = dl - rho
            if gap < band and dl > 1e-15:
                x_out[m, 0], x_out[m, 1], x_out[m, 2] = qx, qy, 0.0
                n_out[m, 0], n_out[m, 1], n_out[m, 2] = wx / dl, wy / dl, wz / dl
                d_out[m] = gap
                key_out[m] = i * KEYS_PER_PIN + KEYS_PER_PIN - N_EDGES + k
                m += 1
        # supporting planes of the tip centre's capsule and of the axis's crossing of the top face
        c_cl = r - rho
        ax, ay, az = A[0] - cx, A[1] - cy, A[2]
        if az < 0.0 and ax * ax + ay * ay < r * r:
            for k in range(sup.shape[0]):
                nx, ny, nz = sup[k, 0], sup[k, 1], sup[k, 2]
                gap = c_cl - (nx * ax + ny * ay + nz * (az + h))
                if gap < band:
                    if nz == 0.0:
                        x_out[m, 0], x_out[m, 1], x_out[m, 2] = cx + r * nx, cy + r * ny, max(az, -h)
                    else:
                        x_out[m, 0], x_out[m, 1], x_out[m, 2] = cx + r * nx, cy + r * ny, -h + r * nz
                    n_out[m, 0], n_out[m, 1], n_out[m, 2] = -nx, -ny, -nz
                    d_out[m] = gap
                    key_out[m] = i * KEYS_PER_PIN + N_EXACT + k
                    m += 1
        if az < 0.0 < B[2]:
            t = -az / (B[2] - az)
            X0, X1 = ax + t * (B[0] - A[0]), ay + t * (B[1] - A[1])
            if X0 * X0 + X1 * X1 < r * r:
                for k in range(N_RING):
                    nx, ny = sup[k, 0], sup[k, 1]
                    gap = c_cl - (nx * X0 + ny * X1)
                    if gap < band:
                        x_out[m, 0], x_out[m, 1], x_out[m, 2] = cx + r * nx, cy + r * ny, 0.0
                        n_out[m, 0], n_out[m, 1], n_out[m, 2] = -nx, -ny, 0.0
                        d_out[m] = gap
                        key_out[m] = i * KEYS_PER_PIN + N_EXACT + sup.shape[0] + k
                        m += 1
    # to world axes
    for c in range(m):
        x0, x1, x2 = x_out[c, 0], x_out[c, 1], x_out[c, 2]
        n0, n1, n2 = n_out[c, 0], n_out[c, 1], n_out[c, 2]
        for a in range(3):
            x_out[c, a] = R_ws[a, 0] * x0 + R_ws[a, 1] * x1 + R_ws[a, 2] * x2 + p_ws[a]
            n_out[c, a] = R_ws[a, 0] * n0 + R_ws[a, 1] * n1 + R_ws[a, 2] * n2
    return m
