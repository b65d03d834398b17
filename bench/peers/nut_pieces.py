"""The nut's threaded ring as convex pieces that keep the thread groove, for engines that
collide a moving body only through convex shapes (PyBullet).

Built by the project's own geometry (``geometry.profiles.NutSpec``), not by a decomposition
library: PyBullet's V-HACD (``p.vhacd``), tried at its finest settings, gives 8 to 13 hulls
that fill the groove and most of the bore (docs/peers.md), and a nut without its groove cannot
thread.  The construction is exact up
to the chords:

  * at a fixed angle theta the nut's material is r >= max(T_n(z - c theta), K(z)) (profiles'
    module docstring).  Between two root flats, phase [k p + p/16, k p + 15 p/16], T_n falls
    from the root to the crest, stays, and rises again -- a convex function -- so the material
    of one tooth inside the root radius is a convex polygon in (r, z); the ring from the root
    radius out to ``OUTER_EXTRA`` beyond it is another (a tooth with its root flats is not:
    flat-falling-flat is not convex); the countersinks (r >= K(z): a half-plane each) and the
    faces (a slab) clip both;
  * one piece is the convex hull of that polygon at the two angles of a sector of 2 pi / N,
    shifted along z by the lead between them: a helical tooth segment whose flanks are the
    planes through its two end profiles;
  * radii are scaled by 1 / cos(pi / N), so the chord between the two end profiles touches
    the true surface at the sector's middle and nowhere enters the bore: the pieces leave at
    most r (1 / cos(pi / N) - 1) of extra play (45 um at the crest with 48 sectors), never
    material in the groove (``tests/bench/test_assembly_peers.py`` checks both).  A sector's
    flanks between its end profiles are the hull's planes, not the helicoid: the profile at
    the sector's middle is the end ones' average, so it is exact there too.

The hexagon outside the ring is left out: nothing touches it in the bolting task, and the
engines take the part's mass and inertia from tightsim, not from these pieces.
"""
from __future__ import annotations

import math

import numpy as np

SECTORS = 48            # pieces around: chord play r (1/cos(pi/N) - 1) = 45 um at the 21.4 mm crest
OUTER_EXTRA = 3e-3      # m of ring beyond the thread root: thicker than any penetration a step leaves


def _clip(poly: list, a: float, b: float, c: float) -> list:
    """The part of a convex (r, z) polygon with a r + b z >= c (Sutherland-Hodgman, one edge)."""
    out = []
    n = len(poly)
    for i in range(n):
        P, Q = poly[i], poly[(i + 1) % n]
        fp, fq = a * P[0] + b * P[1] - c, a * Q[0] + b * Q[1] - c
        if fp >= 0:
            out.append(P)
        if (fp >= 0) != (fq >= 0):
            s = fp / (fp - fq)
            out.append((P[0] + s * (Q[0] - P[0]), P[1] + s * (Q[1] - P[1])))
    return out


def _faces_and_countersinks(spec, poly: list) -> list:
    """A convex (r, z) polygon clipped to the nut's faces and countersinks (r >= K(z))."""
    h2 = spec.height / 2
    tan60 = math.tan(math.radians(60.0))
    k0 = spec.countersink_radius - tan60 * h2            # K at the nut's middle, extended
    for a_, b_, c_ in ((0.0, 1.0, -h2), (0.0, -1.0, -h2),   # the faces: -h/2 <= z <= h/2
                       (1.0, tan60, k0),                     # bottom: r >= K0 - tan60 (z + h/2)
                       (1.0, -tan60, k0)):                   # top:    r >= K0 - tan60 (h/2 - z)
        poly = _clip(poly, a_, b_, c_)
        if len(poly) < 3:
            return []
    return poly


def tooth_profile(spec, k: int, theta: float) -> list:
    """The (r, z) polygon of tooth k at angle theta, inside the root radius (unscaled): the
    phase from the root flat's end (p/16) to the next one's start (15 p/16), where T_n falls,
    stays at the crest and rises -- slopes -, 0, + -- so r >= T_n is convex there."""
    t = spec.thread
    p = t.p
    a = k * p + t.c * theta                              # z of phase 0 (the root flat's middle)
    poly = [(spec.r_root, a + p / 16), (spec.r_crest, a + 3 * p / 8),
            (spec.r_crest, a + 5 * p / 8), (spec.r_root, a + 15 * p / 16)]
    return _faces_and_countersinks(spec, poly)


def ring_profile(spec) -> list:
    """The (r, z) polygon of the ring from the root radius out (unscaled, any angle)."""
    h2, r_out = spec.height / 2, spec.r_root + OUTER_EXTRA
    return _faces_and_countersinks(spec, [(spec.r_root, -h2), (r_out, -h2), (r_out, h2), (spec.r_root, h2)])


def nut_pieces(spec, sectors: int = SECTORS) -> list[np.ndarray]:
    """[(V,3) m] the convex pieces' vertices in the nut's part frame (module docstring): per
    sector the ring outside the root radius and each tooth inside it."""
    t = spec.thread
    scale = 1.0 / math.cos(math.pi / sectors)
    h2 = spec.height / 2
    k_lo = int(math.floor((-h2 - t.p) / t.p)) - 1
    k_hi = int(math.ceil((h2 + t.p) / t.p)) + 1
    pieces = []
    for j in range(sectors):
        th = (2 * math.pi * j / sectors, 2 * math.pi * (j + 1) / sectors)
        profiles = [lambda theta: ring_profile(spec)]
        profiles += [lambda theta, k=k: tooth_profile(spec, k, theta) for k in range(k_lo, k_hi + 1)]
        for prof in profiles:
            pts = [(scale * r * math.cos(theta), scale * r * math.sin(theta), z)
                   for theta in th for r, z in prof(theta)]
            if len(pts) >= 4 and _volume(np.array(pts)) > MIN_VOLUME:
                pieces.append(np.array(pts))
    return pieces


MIN_VOLUME = 1e-12      # m^3 (a 0.1 mm cube): slivers the faces cut off below this are dropped


def _volume(P: np.ndarray) -> float:
    from scipy.spatial import ConvexHull, QhullError
    try:
        return float(ConvexHull(P).volume)
    except QhullError:                                   # flat: a face cut the tooth to a polygon
        return 0.0


def inside(pieces: list[np.ndarray], x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """(M,) bool: which points (M,3) lie inside any piece's convex hull."""
    from scipy.spatial import ConvexHull
    x = np.atleast_2d(x)
    hit = np.zeros(len(x), bool)
    for P in pieces:
        eq = ConvexHull(P).equations                     # a . x + b <= 0 inside
        hit |= np.all(x @ eq[:, :3].T + eq[:, 3] <= tol, axis=1)
    return hit
