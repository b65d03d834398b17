"""Part definitions: the single source of geometric truth for meshes and exact SDFs.

Every part is a solid described in its own frame (metres, axis along +z) by a few
piecewise-linear radius functions.  Meshing (``mesh.py``) samples these functions; the
exact signed distance (``sdf.py``) measures distance to the very same surfaces.  Nothing
else in the project may restate a dimension.

Peg and hole (seed 000 Sec. V.A): peg diameter 49.97 mm, bore 50.035 mm, 45-degree entry
chamfers on both.  Both are solids of revolution given by a closed (r, z) profile polygon.

Bolt and nut: ISO basic metric profile (60 degrees, H = 0.866 p, pitch diameter
d2 = d - 0.6495 p, minor diameter d1 = d - 1.0825 p; crest flat p/8 at the major diameter,
root flat p/4 at the minor diameter).  The seed's 0.4 mm machining tolerance is a diametral
clearance split evenly: the bolt's profile is moved radially inward by clearance/4 and the
nut's outward by clearance/4, so flank-to-flank the pair has clearance/2 of radial play.

Helical coordinates: a single-start right-hand thread of pitch p.  A point at cylindrical
coordinates (r, theta, z) has axial phase ``zeta = z - c * theta`` with ``c = p / (2 pi)``;
the thread surface is invariant under the screw motion (theta, z) -> (theta + a, z + c a).
Turning the nut by +a about +z (counter-clockwise seen from above) moves it by +c a along z,
so fastening a nut onto an upward-pointing bolt is a clockwise (negative) turn.

Bolt solid (frame origin at the base centre, axis +z, z in [0, length]):
    r <= R(theta, z) = min(E(z), max(T(zeta), C(z)))
  * T(zeta): periodic thread radius (crest centred at zeta = 0 mod p);
  * C(z): core radius -- the plain shank (r_major) below ``runout_start``, a cone rising
    from the thread root to r_major over ``runout_length`` (the incomplete thread a chaser
    leaves when it withdraws), the root radius above it (then C never wins);
  * E(z): envelope -- unlimited except the 45-degree tip chamfer down to ``tip_radius``.
Nut solid (frame origin at its centre, z in [-h/2, h/2]): inside the hexagon prism and
    r >= R_n(theta, z) = max(T_n(zeta), K(z))
  * T_n = T + clearance/2 (internal thread: root centred at zeta = 0, crest at p/2);
  * K(z): 120-degree countersinks at both faces.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

MM = 1e-3

# Standard hex nut sizes (ISO 4032): nominal diameter mm -> (across flats mm, height mm).
_ISO4032 = {39: (60.0, 31.0), 42: (65.0, 34.0), 45: (70.0, 36.0), 48: (75.0, 38.0),
            52: (80.0, 42.0), 56: (85.0, 45.0), 60: (90.0, 48.0)}


@dataclass(frozen=True)
class ThreadSpec:
    """Basic metric thread of one bolt-nut pair (all lengths in metres)."""
    d: float = 48 * MM            # nominal (major) diameter
    p: float = 5 * MM             # pitch (single start, so also the lead)
    clearance: float = 0.4 * MM   # diametral clearance between bolt and nut profiles

    @property
    def H(self) -> float:         # height of the fundamental triangle, 0.866 p
        return math.sqrt(3.0) / 2.0 * self.p

    @property
    def d2(self) -> float:        # pitch diameter
        return self.d - 0.6495 * self.p

    @property
    def d1(self) -> float:        # minor diameter
        return self.d - 1.0825 * self.p

    @property
    def c(self) -> float:         # axial advance per radian
        return self.p / (2.0 * math.pi)

    @property
    def delta(self) -> float:     # radial shift of each profile away from the basic one
        return self.clearance / 4.0

    def breakpoints(self) -> np.ndarray:
        """Phase breakpoints of T within one period, starting at -p/16 (crest start)."""
        p = self.p
        return np.array([-p / 16, p / 16, 3 * p / 8, 5 * p / 8, 15 * p / 16])

    def bolt_radii(self) -> tuple[float, float]:
        """(crest radius, root radius) of the external thread."""
        return self.d / 2 - self.delta, self.d1 / 2 - self.delta

    def nut_radii(self) -> tuple[float, float]:
        """(root radius, crest radius) of the internal thread (root is the outer one)."""
        return self.d / 2 + self.delta, self.d1 / 2 + self.delta


def thread_radius(zeta: np.ndarray, r_crest: float, r_root: float, p: float) -> np.ndarray:
    """Periodic piecewise-linear thread radius T(zeta): r_crest on |zeta| <= p/16,
    r_root on |zeta - p/2| <= p/8, straight 30-degree flanks between (mod p)."""
    u = np.mod(np.asarray(zeta, dtype=np.float64) + p / 16, p)  # 0 at crest start
    xs = np.array([0.0, p / 8, 7 * p / 16, 11 * p / 16, p])
    rs = np.array([r_crest, r_crest, r_root, r_root, r_crest])
    return np.interp(u, xs, rs)


@dataclass(frozen=True)
class BoltSpec:
    """Upward-pointing stud bolt; frame at the base centre."""
    thread: ThreadSpec = field(default_factory=ThreadSpec)
    length: float = 110 * MM          # total length
    runout_start: float = 15 * MM     # top of the plain shank
    runout_length: float = 10 * MM    # 2 p of incomplete thread
    tip_depth_below_root: float = 0.3 * MM  # tip chamfer ends this far inside the root

    @property
    def r_major(self) -> float:
        return self.thread.bolt_radii()[0]

    @property
    def r_root(self) -> float:
        return self.thread.bolt_radii()[1]

    @property
    def tip_radius(self) -> float:
        return self.r_root - self.tip_depth_below_root

    @property
    def chamfer_start(self) -> float:  # z where the 45-degree tip chamfer begins
        return self.length - (self.r_major - self.tip_radius)

    @property
    def full_thread_length(self) -> float:
        return self.chamfer_start - (self.runout_start + self.runout_length)

    def core_radius(self, z: np.ndarray) -> np.ndarray:
        """C(z): shank, run-out cone, then the root radius."""
        z0, z1 = self.runout_start, self.runout_start + self.runout_length
        return np.interp(z, [z0, z1], [self.r_major, self.r_root])

    def envelope_radius(self, z: np.ndarray) -> np.ndarray:
        """E(z): the 45-degree tip chamfer (inf-like elsewhere: 2 * r_major)."""
        z = np.asarray(z, dtype=np.float64)
        cham = self.tip_radius + (self.length - z)
        return np.minimum(cham, 2.0 * self.r_major)

    def radius(self, theta: np.ndarray, z: np.ndarray) -> np.ndarray:
        """R(theta, z) = min(E, max(T(z - c theta), C)) -- the lateral surface."""
        t = self.thread
        zeta = np.asarray(z) - t.c * np.asarray(theta)
        T = thread_radius(zeta, self.r_major, self.r_root, t.p)
        return np.minimum(self.envelope_radius(z), np.maximum(T, self.core_radius(z)))

    def dimensions(self) -> dict:
        t = self.thread
        return {"d": t.d, "p": t.p, "clearance": t.clearance, "d2": t.d2, "d1": t.d1,
                "r_major": self.r_major, "r_root": self.r_root, "length": self.length,
                "runout_start": self.runout_start, "runout_length": self.runout_length,
                "chamfer_start": self.chamfer_start, "tip_radius": self.tip_radius,
                "full_thread_length": self.full_thread_length,
                "thread_length": self.length - self.runout_start}


@dataclass(frozen=True)
class NutSpec:
    """Hex nut with internal thread; frame at its geometric centre."""
    thread: ThreadSpec = field(default_factory=ThreadSpec)
    across_flats: float = 75 * MM
    height: float = 38 * MM
    countersink_extra: float = 0.5 * MM   # countersink radius beyond the thread root

    @property
    def r_root(self) -> float:      # outer (major) radius of the bore
        return self.thread.nut_radii()[0]

    @property
    def r_crest(self) -> float:     # inner (minor) radius of the bore
        return self.thread.nut_radii()[1]

    @property
    def countersink_radius(self) -> float:
        return self.r_root + self.countersink_extra

    def countersink(self, z: np.ndarray) -> np.ndarray:
        """K(z): 120-degree countersinks (radius falls tan(60 deg) per unit depth)."""
        z = np.asarray(z, dtype=np.float64)
        h2 = self.height / 2
        depth = h2 - np.abs(z)      # distance from the nearer face
        return self.countersink_radius - math.tan(math.radians(60.0)) * depth

    def bore_radius(self, theta: np.ndarray, z: np.ndarray) -> np.ndarray:
        """R_n(theta, z) = max(T_n(z - c theta), K(z)); material is at r >= R_n.
        T_n is the bolt's T moved out by clearance/2: root centred at zeta = 0."""
        t = self.thread
        zeta = np.asarray(z) - t.c * np.asarray(theta)
        Tn = thread_radius(zeta, self.r_root, self.r_crest, t.p)
        return np.maximum(Tn, self.countersink(z))

    def hex_radius(self, theta: np.ndarray) -> np.ndarray:
        """Radius of the hexagon (flats normal to theta = 0, 60, ... degrees)."""
        a = np.mod(np.asarray(theta, dtype=np.float64) + math.pi / 6, math.pi / 3) - math.pi / 6
        return (self.across_flats / 2) / np.cos(a)

    def dimensions(self) -> dict:
        t = self.thread
        return {"d": t.d, "p": t.p, "clearance": t.clearance, "across_flats": self.across_flats,
                "height": self.height, "r_root": self.r_root, "r_crest": self.r_crest,
                "countersink_radius": self.countersink_radius}


@dataclass(frozen=True)
class PegSpec:
    """Cylindrical peg, 45-degree chamfers at both ends; frame at its centre."""
    diameter: float = 49.97 * MM
    length: float = 80 * MM
    chamfer: float = 0.5 * MM

    def profile(self) -> np.ndarray:
        """Closed (r, z) profile from the bottom axis point to the top axis point, CCW."""
        r, h, c = self.diameter / 2, self.length / 2, self.chamfer
        return np.array([[0.0, -h], [r - c, -h], [r, -h + c], [r, h - c], [r - c, h], [0.0, h]])

    def dimensions(self) -> dict:
        return {"diameter": self.diameter, "length": self.length, "chamfer": self.chamfer}


@dataclass(frozen=True)
class HoleSpec:
    """Holed cylinder (through bore), top face at z = 0, bottom at z = -height."""
    bore: float = 50.035 * MM
    outer_diameter: float = 100 * MM
    height: float = 50 * MM
    chamfer: float = 0.5 * MM

    def profile(self) -> np.ndarray:
        """Closed (r, z) annulus profile, counter-clockwise in the (r, z) plane
        (material on the left), with entry chamfers at both bore edges."""
        rb, ro, h, c = self.bore / 2, self.outer_diameter / 2, self.height, self.chamfer
        return np.array([[rb + c, -h], [ro, -h], [ro, 0.0], [rb + c, 0.0],
                         [rb, -c], [rb, -h + c]])

    def dimensions(self) -> dict:
        return {"bore": self.bore, "outer_diameter": self.outer_diameter, "height": self.height,
                "chamfer": self.chamfer, "radial_clearance_to_peg": (self.bore - PegSpec().diameter) / 2}


def nut_for(thread: ThreadSpec) -> NutSpec:
    """Hex nut for a thread: ISO 4032 size of the nearest standard diameter."""
    nominal = min(_ISO4032, key=lambda k: abs(k - thread.d / MM))
    af, h = _ISO4032[nominal]
    return NutSpec(thread=thread, across_flats=af * MM, height=h * MM)


# seed 000 Table II: (diameter mm, pitch mm) of the perturbed pairs.
TABLE2_NARROW = [(47.2, 5.0), (47.6, 5.0), (48.5, 5.0), (49.0, 5.0)]
TABLE2_BROAD = [(39.0, 4.0), (42.0, 4.5), (45.0, 4.5), (52.0, 5.0), (56.0, 5.5), (60.0, 5.5)]


def pair_name(d_mm: float, p_mm: float) -> str:
    return f"d{d_mm:g}_p{p_mm:g}"


def static_parts(parts: dict | None = None) -> dict[str, object]:
    """The parts that stay put (hole, bolts): the ones with an SDF, and so a network."""
    parts = all_parts() if parts is None else parts
    return {n: s for n, s in parts.items() if isinstance(s, STATIC_KINDS)}


def all_parts(clearance: float = 0.4 * MM) -> dict[str, object]:
    """Every part the project ships, by asset name (nominal pair plus Table II pairs)."""
    parts: dict[str, object] = {"peg": PegSpec(), "hole": HoleSpec()}
    for d_mm, p_mm in [(48.0, 5.0)] + TABLE2_NARROW + TABLE2_BROAD:
        t = ThreadSpec(d=d_mm * MM, p=p_mm * MM, clearance=clearance)
        suffix = "M48x5" if (d_mm, p_mm) == (48.0, 5.0) else pair_name(d_mm, p_mm)
        parts[f"bolt_{suffix}"] = BoltSpec(thread=t, length=max(110 * MM, 22 * t.p),
                                           runout_start=15 * MM, runout_length=2 * t.p)
        parts[f"nut_{suffix}"] = nut_for(t)
    return parts


STATIC_KINDS = (HoleSpec, BoltSpec)    # fixed in the world; detection runs against their SDF
MOVING_KINDS = (PegSpec, NutSpec)      # held by the user / the arm; their mesh vertices are the nodes
