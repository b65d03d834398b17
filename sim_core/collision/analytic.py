"""Analytic detectors of the primitive shapes: spheres, planes, capsules, solid cylinders.

Every kernel works in world coordinates, takes a speculative reach ``band`` (m,
``detection.reach``) and writes the contacts whose gap is below it into preallocated arrays
(x (k,3) m, n (k,3) unit, d (k,) m, key (k,) int64), returning how many.  Conventions, the
same for all:

* ``d`` is the signed distance between the two shapes along ``n`` (negative: overlap), exact
  for the features named below;
* ``n`` is the unit normal pushing shape **a** (the first argument's) away from shape b;
* ``x`` is midway between the two surfaces' points that realize ``d`` (so it does not depend
  on which shape is a: a swapped pair has the same points, its normals flipped);
* ``key`` names the feature pair (the solver's warm start follows it from step to step).

A capsule is the set within ``r`` of a segment, so its distance to anything is its segment's
distance minus r; a sphere likewise of its centre.  What each detects:

* **sphere-plane**: the centre's height over the plane minus r (key 0).
* **sphere-sphere**: |c_a - c_b| - r_a - r_b along the centres' line (key 0); coincident
  centres push along world +z.
* **sphere-capsule**: the centre against the segment's nearest point (key 0).
* **sphere-cylinder**: the centre's signed distance to the solid cylinder (``cylinder_sdf``)
  minus r (key 0).
* **capsule-plane**: both ends of the segment (keys 0, 1): the height is linear along the
  segment, so its least value is at an end, and a capsule lying on the plane is held at
  both (a line contact by its two ends).
* **capsule-capsule**: the segments' closest points (key 0, Ericson 5.1.9,
  ``pins.segment_segment``), and each segment's ends against the other segment (keys 1, 2:
  a's ends; 3, 4: b's), an end skipped where the closest points already are at it.  Each is
  the exact distance of two points of the axes, so each is a valid constraint; the ends
  hold two parallel links lying along each other (a line contact), which the closest pair
  alone -- one point anywhere along the overlap -- would let pivot.  Coincident axes push
  along their common perpendicular (or a perpendicular of a's axis when parallel).
* **capsule-cylinder**: the capsule's segment against the solid cylinder -- its lateral face,
  both flat caps and the two rim circles, all through the exact signed distance of a point
  to the solid (``cylinder_sdf``).  That distance is convex (the signed distance of a convex
  set), so along the segment its slope never decreases and its minimum is where the slope
  changes sign, bisected to ``T_TOL`` of the segment (key 0); the segment's two ends are reported too (keys 1,
  2) where they are not the minimum, so a link lying along the drum's face (a line contact)
  rests on both ends.  The drum's axis may lie in any direction (horizontal for a winch).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from sim_core.collision.pins import segment_segment

T_TOL = 1e-15                 # bracket width of the segment parameter t in [0, 1] at which the
                              # bisection stops: 1e-16 m on a 0.1 m link
BISECTIONS = 60               # 2^-60 = 9e-19 < T_TOL: the bound is never what stops it
DEGENERATE = 1e-15            # m: a distance below this has no direction of its own
MAX_CONTACTS = 5              # the most any kernel here writes (capsule-capsule)


@njit(cache=True, inline="always")
def _put(x, n, d, key, m, px, py, pz, nx, ny, nz, gap, k):
    x[m, 0], x[m, 1], x[m, 2] = px, py, pz
    n[m, 0], n[m, 1], n[m, 2] = nx, ny, nz
    d[m] = gap
    key[m] = k


@njit(cache=True)
def sphere_plane(c, r, o, nz, band, x, n, d, key):
    """Sphere (centre c, radius r) against the half-space below the plane through o with
    outward normal nz (3,)."""
    s = nz[0] * (c[0] - o[0]) + nz[1] * (c[1] - o[1]) + nz[2] * (c[2] - o[2])
    gap = s - r
    if gap >= band:
        return 0
    h = 0.5 * (r + s)
    _put(x, n, d, key, 0, c[0] - h * nz[0], c[1] - h * nz[1], c[2] - h * nz[2], nz[0], nz[1], nz[2], gap, 0)
    return 1


@njit(cache=True, inline="always")
def _pair(x, n, d, key, m, Px, Py, Pz, ra, Qx, Qy, Qz, rb, band, fx, fy, fz, k):
    """The contact of two balls (centre P radius ra = shape a's, centre Q radius rb): gap
    |P - Q| - ra - rb along (P - Q)/|P - Q| (fallback direction f where P = Q)."""
    wx, wy, wz = Px - Qx, Py - Qy, Pz - Qz
    L = math.sqrt(wx * wx + wy * wy + wz * wz)
    gap = L - ra - rb
    if gap >= band:
        return m
    if L > DEGENERATE:
        ux, uy, uz = wx / L, wy / L, wz / L
    else:
        ux, uy, uz = fx, fy, fz
    # midway between a's surface point P - ra u and b's Q + rb u
    h = 0.5 * (rb - ra)
    _put(x, n, d, key, m, 0.5 * (Px + Qx) + h * ux, 0.5 * (Py + Qy) + h * uy, 0.5 * (Pz + Qz) + h * uz,
         ux, uy, uz, gap, k)
    return m + 1


@njit(cache=True)
def sphere_sphere(ca, ra, cb, rb, band, x, n, d, key):
    return _pair(x, n, d, key, 0, ca[0], ca[1], ca[2], ra, cb[0], cb[1], cb[2], rb, band, 0.0, 0.0, 1.0, 0)


@njit(cache=True, inline="always")
def _closest_t(Px, Py, Pz, Ax, Ay, Az, Dx, Dy, Dz):
    """t in [0, 1] of the point of the segment A + t D nearest P."""
    DD = Dx * Dx + Dy * Dy + Dz * Dz
    if DD <= 0.0:
        return 0.0
    t = ((Px - Ax) * Dx + (Py - Ay) * Dy + (Pz - Az) * Dz) / DD
    return min(max(t, 0.0), 1.0)


@njit(cache=True)
def sphere_capsule(c, rs, E0, E1, rc, band, x, n, d, key):
    Dx, Dy, Dz = E1[0] - E0[0], E1[1] - E0[1], E1[2] - E0[2]
    t = _closest_t(c[0], c[1], c[2], E0[0], E0[1], E0[2], Dx, Dy, Dz)
    return _pair(x, n, d, key, 0, c[0], c[1], c[2], rs, E0[0] + t * Dx, E0[1] + t * Dy, E0[2] + t * Dz, rc,
                 band, 0.0, 0.0, 1.0, 0)


@njit(cache=True)
def capsule_plane(E0, E1, r, o, nz, band, x, n, d, key):
    m = 0
    for e in range(2):
        E = E0 if e == 0 else E1
        s = nz[0] * (E[0] - o[0]) + nz[1] * (E[1] - o[1]) + nz[2] * (E[2] - o[2])
        gap = s - r
        if gap < band:
            h = 0.5 * (r + s)
            _put(x, n, d, key, m, E[0] - h * nz[0], E[1] - h * nz[1], E[2] - h * nz[2], nz[0], nz[1], nz[2], gap, e)
            m += 1
    return m


@njit(cache=True)
def capsule_capsule(A0, A1, ra, B0, B1, rb, band, x, n, d, key):
    Dx, Dy, Dz = A1[0] - A0[0], A1[1] - A0[1], A1[2] - A0[2]
    Fx, Fy, Fz = B1[0] - B0[0], B1[1] - B0[1], B1[2] - B0[2]
    s, u = segment_segment(A0[0], A0[1], A0[2], Dx, Dy, Dz, B0[0], B0[1], B0[2], Fx, Fy, Fz)
    # the direction where the axes meet: their common perpendicular, or one of a's
    cx, cy, cz = Dy * Fz - Dz * Fy, Dz * Fx - Dx * Fz, Dx * Fy - Dy * Fx
    cl = math.sqrt(cx * cx + cy * cy + cz * cz)
    if cl <= DEGENERATE * DEGENERATE:
        # any perpendicular of D: D x (the world axis least along D)
        ax_ = 0 if abs(Dx) <= abs(Dy) and abs(Dx) <= abs(Dz) else (1 if abs(Dy) <= abs(Dz) else 2)
        ex, ey, ez = (1.0 if ax_ == 0 else 0.0), (1.0 if ax_ == 1 else 0.0), (1.0 if ax_ == 2 else 0.0)
        cx, cy, cz = Dy * ez - Dz * ey, Dz * ex - Dx * ez, Dx * ey - Dy * ex
        cl = math.sqrt(cx * cx + cy * cy + cz * cz)
        if cl <= 0.0:
            cx, cy, cz, cl = 0.0, 0.0, 1.0, 1.0
    fx, fy, fz = cx / cl, cy / cl, cz / cl
    m = _pair(x, n, d, key, 0, A0[0] + s * Dx, A0[1] + s * Dy, A0[2] + s * Dz, ra,
              B0[0] + u * Fx, B0[1] + u * Fy, B0[2] + u * Fz, rb, band, fx, fy, fz, 0)
    for e in range(2):                          # a's ends against b's segment
        te = float(e)
        if s == te:
            continue
        Px, Py, Pz = A0[0] + te * Dx, A0[1] + te * Dy, A0[2] + te * Dz
        t = _closest_t(Px, Py, Pz, B0[0], B0[1], B0[2], Fx, Fy, Fz)
        m = _pair(x, n, d, key, m, Px, Py, Pz, ra, B0[0] + t * Fx, B0[1] + t * Fy, B0[2] + t * Fz, rb, band,
                  fx, fy, fz, 1 + e)
    for e in range(2):                          # b's ends against a's segment
        te = float(e)
        if u == te:
            continue
        Qx, Qy, Qz = B0[0] + te * Fx, B0[1] + te * Fy, B0[2] + te * Fz
        t = _closest_t(Qx, Qy, Qz, A0[0], A0[1], A0[2], Dx, Dy, Dz)
        m = _pair(x, n, d, key, m, A0[0] + t * Dx, A0[1] + t * Dy, A0[2] + t * Dz, ra, Qx, Qy, Qz, rb, band,
                  fx, fy, fz, 3 + e)
    return m


@njit(cache=True)
def cylinder_sdf(px, py, pz, R, H):
    """Signed distance of the point (px, py, pz) (cylinder frame) to the solid cylinder
    rho <= R, |z| <= H, and its unit gradient (gx, gy, gz), pointing out of the material:
    outside, to the nearest point of the lateral face, a cap or a rim circle; inside, to the
    nearer of the lateral face and the nearer cap (on the axis, the lateral direction is +x)."""
    rho = math.sqrt(px * px + py * py)
    sz = 1.0 if pz >= 0.0 else -1.0
    dr, dz = rho - R, abs(pz) - H
    ux, uy = (px / rho, py / rho) if rho > 0.0 else (1.0, 0.0)
    if dr > 0.0 and dz > 0.0:                   # beyond a rim
        g = math.sqrt(dr * dr + dz * dz)
        return g, dr * ux / g, dr * uy / g, dz * sz / g
    if dr > 0.0:                                # beside the lateral face
        return dr, ux, uy, 0.0
    if dz > 0.0:                                # over a cap
        return dz, 0.0, 0.0, sz
    if dr > dz:                                 # inside, nearer the lateral face
        return dr, ux, uy, 0.0
    return dz, 0.0, 0.0, sz


@njit(cache=True, inline="always")
def _slope(t, e0, D, R, H):
    """d/dt of the cylinder's signed distance at e0 + t D: its gradient along D (a subgradient
    where the distance has a kink: inside, where the nearest face changes)."""
    _, gx, gy, gz = cylinder_sdf(e0[0] + t * D[0], e0[1] + t * D[1], e0[2] + t * D[2], R, H)
    return gx * D[0] + gy * D[1] + gz * D[2]


@njit(cache=True)
def _cyl_contact(x, n, d, key, m, Rc, pc, qx, qy, qz, rc, R, H, band, k):
    """The contact of the ball of radius rc at q (cylinder frame) against the cylinder, to world."""
    g, gx, gy, gz = cylinder_sdf(qx, qy, qz, R, H)
    gap = g - rc
    if gap >= band:
        return m
    h = 0.5 * (rc + g)                          # midway: q - rc n (the capsule), q - g n (the cylinder)
    sx, sy, sz = qx - h * gx, qy - h * gy, qz - h * gz
    wx = Rc[0, 0] * sx + Rc[0, 1] * sy + Rc[0, 2] * sz + pc[0]
    wy = Rc[1, 0] * sx + Rc[1, 1] * sy + Rc[1, 2] * sz + pc[1]
    wz = Rc[2, 0] * sx + Rc[2, 1] * sy + Rc[2, 2] * sz + pc[2]
    nx = Rc[0, 0] * gx + Rc[0, 1] * gy + Rc[0, 2] * gz
    ny = Rc[1, 0] * gx + Rc[1, 1] * gy + Rc[1, 2] * gz
    nz = Rc[2, 0] * gx + Rc[2, 1] * gy + Rc[2, 2] * gz
    _put(x, n, d, key, m, wx, wy, wz, nx, ny, nz, gap, k)
    return m + 1


@njit(cache=True)
def _to_frame(Rc, pc, P):
    q = np.empty(3)
    for a in range(3):
        q[a] = Rc[0, a] * (P[0] - pc[0]) + Rc[1, a] * (P[1] - pc[1]) + Rc[2, a] * (P[2] - pc[2])
    return q


@njit(cache=True)
def sphere_cylinder(c, rs, Rc, pc, R, H, band, x, n, d, key):
    q = _to_frame(Rc, pc, c)
    return _cyl_contact(x, n, d, key, 0, Rc, pc, q[0], q[1], q[2], rs, R, H, band, 0)


@njit(cache=True)
def segment_cylinder_min(e0, e1, R, H):
    """t in [0, 1] minimizing the solid cylinder's signed distance g along e0 + t (e1 - e0)
    (cylinder frame).  g is convex, so its slope never decreases: t = 0 where the slope there
    is >= 0, t = 1 where it is <= 0 at 1, and otherwise the slope's sign change, bisected to
    ``T_TOL``.  (A search on g's values alone cannot place a smooth minimum closer than
    sqrt(machine epsilon) of the segment: g is flat to rounding there.)"""
    D = e1 - e0
    if _slope(0.0, e0, D, R, H) >= 0.0:
        return 0.0
    if _slope(1.0, e0, D, R, H) <= 0.0:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(BISECTIONS):
        mid = 0.5 * (lo + hi)
        k = _slope(mid, e0, D, R, H)
        if k == 0.0:
            return mid
        if k < 0.0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= T_TOL:
            break
    return 0.5 * (lo + hi)


@njit(cache=True)
def capsule_cylinder(E0, E1, rc, Rc, pc, R, H, band, x, n, d, key):
    e0, e1 = _to_frame(Rc, pc, E0), _to_frame(Rc, pc, E1)
    t = segment_cylinder_min(e0, e1, R, H)
    m = _cyl_contact(x, n, d, key, 0, Rc, pc, e0[0] + t * (e1[0] - e0[0]), e0[1] + t * (e1[1] - e0[1]),
                     e0[2] + t * (e1[2] - e0[2]), rc, R, H, band, 0)
    if t != 0.0:
        m = _cyl_contact(x, n, d, key, m, Rc, pc, e0[0], e0[1], e0[2], rc, R, H, band, 1)
    if t != 1.0:
        m = _cyl_contact(x, n, d, key, m, Rc, pc, e1[0], e1[1], e1[2], rc, R, H, band, 2)
    return m
