"""Centering pins and docking holes (seed 004 Sec. 3.1): the pin plate and the hole block.

**Pin** ("CylSphere"): a capsule -- the points within ``radius`` of a segment of length
``length`` -- standing out of the plate's lower face.  In the plate's part frame (origin at
the centre of the plate's lower face, z up) pin i's segment runs from its base centre
B_i = (x_i, y_i, 0) to its tip centre A_i = (x_i, y_i, -length); the tip's hemisphere reaches
z = -(length + radius).  (The capsule's upper hemisphere lies inside the plate: the plate's
box counts that material.)

**Hole block** ("CylSphereHole"): a box a x b x c (x, y, z) with, at each hole, the negative
of a capsule of radius r open at the top face: a cylinder of height h under the top face and
a hemisphere under it.  In the block's frame (origin at the centre of its top face, z up)
the block is [-a/2, a/2] x [-b/2, b/2] x [-c, 0], hole j's axis runs from its bottom point
P0_j = (x_j, y_j, -h) (the hemisphere's centre) to P1_j = (x_j, y_j, 0), and c >= h + r (the
seed takes c = h + r; a real block has material under the hole).

**Mass properties** (seed 004 eqs. (1)-(10)): the box's inertia less the holes' cylinders and
hemispheres, each about its own centre of mass, moved to the block's centre of mass by the
parallel-axis theorem.  Where this differs from the print:
  * the print moves each shape only along z (eqs. (4)-(6)): true for one centred hole; for
    holes off the block's axis (N holes) the full parallel-axis tensor m (|d|^2 I - d d^T) is
    used, which also gives the products of inertia (eq. (10)'s diagonal holds only for a
    symmetric layout);
  * the centre of mass the print uses but never writes out:
        c^csh = (m^box c^box - sum_j (m^cyl c^cyl_j + m^cap c^cap_j)) / m^csh,
    with c^box = (0, 0, -c/2), c^cyl_j = (x_j, y_j, -h/2), c^cap_j = (x_j, y_j, -h - 3r/8)
    (a hemisphere's centre of mass is 3r/8 from its flat face), m^csh = m^box - N (m^cyl +
    m^cap); for c > h + r the box simply is taller (eq. (1) with that c);
  * eq. (3) is right as printed with m^sph the mass of the whole sphere (m^cap = m^sph / 2):
    (2/5 m^sph r^2) / 2 is the hemisphere about its flat face's centre, and 1/2 (9/64) m^sph
    r^2 = m^cap (3r/8)^2 moves it to its own centre of mass.
The pin plate is the plate's box plus each pin's exposed cylinder (length ``length``) and tip
hemisphere, by the same formulas.  ``tests/sim_core/geometry/test_docking.py`` checks both
against a fine voxel integration.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# holes must stand apart so that a pin near one hole can touch no other hole's rim: the pin
# detector takes each pin against its nearest hole (sim_core.collision.pins)
HOLE_GAP_MIN = 1e-3            # m, least material between two holes' rims (and to the block's edge)


@dataclass(frozen=True)
class PinPlate:
    """The moving part: a plate with N capsule pins (part frame: origin at the centre of the
    plate's lower face, z up)."""
    pins_xy: np.ndarray            # (N,2) m, pin axes on the lower face
    radius: float                  # m, pin radius (capsule radius)
    length: float                  # m, pin cylinder length below the plate (tip centre at z = -length)
    plate: tuple                   # (a, b, t) m: plate size along x, y and its thickness (z in [0, t])

    @property
    def segments(self) -> np.ndarray:
        """(N,2,3) m: each pin's [tip centre A, base centre B], part frame."""
        n = self.pins_xy.shape[0]
        seg = np.zeros((n, 2, 3))
        seg[:, :, :2] = self.pins_xy[:, None, :]
        seg[:, 0, 2] = -self.length
        return seg


@dataclass(frozen=True)
class HoleBlock:
    """The static part: a box with N capsule holes open at its top face (block frame: origin
    at the centre of the top face, z up)."""
    holes_xy: np.ndarray           # (N,2) m, hole axes on the top face
    radius: float                  # m, hole radius r
    depth: float                   # m, the hole's cylinder height h (the hemisphere is under it)
    box: tuple                     # (a, b, c) m, c >= h + r

    @property
    def half(self) -> np.ndarray:
        return np.array([0.5 * self.box[0], 0.5 * self.box[1]])


def check_layout(block: HoleBlock, plate: PinPlate, clearance_ok_zero: bool = True) -> None:
    """ValueError (naming the field) for a layout the geometry or the detector cannot take."""
    r, rho = block.radius, plate.radius
    if not (r > 0 and rho > 0 and plate.length > 0 and block.depth > 0):
        raise ValueError("radii, pin length and hole depth must be > 0")
    if rho > r:
        raise ValueError(f"pin radius {rho} m is wider than the hole's {r} m")
    a, b, c = block.box
    if c < block.depth + r:
        raise ValueError(f"block height {c} m is less than hole depth + radius {block.depth + r} m")
    xy = block.holes_xy
    if np.any(np.abs(xy[:, 0]) + r + HOLE_GAP_MIN > 0.5 * a) or np.any(np.abs(xy[:, 1]) + r + HOLE_GAP_MIN > 0.5 * b):
        raise ValueError("a hole reaches the block's edge")
    if len(xy) > 1:
        dist = np.linalg.norm(xy[:, None, :] - xy[None, :, :], axis=2) + np.eye(len(xy)) * 1e9
        if dist.min() < 2 * r + 2 * rho + HOLE_GAP_MIN:
            raise ValueError(f"holes {dist.min():.4g} m apart: at least 2 (r + pin radius) + "
                             f"{HOLE_GAP_MIN} m, so that a pin meets one hole at a time")


# --- mass properties (seed 004 eqs. (1)-(10)) ----------------------------------------

def box_inertia(m: float, a: float, b: float, c: float) -> np.ndarray:
    """Eq. (1): a box's inertia about its centre (kg m^2)."""
    return m / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])


def cylinder_inertia(m: float, r: float, h: float) -> np.ndarray:
    """Eq. (2): a solid cylinder (axis z) about its centre."""
    t = 0.25 * m * r * r + m * h * h / 12.0
    return np.diag([t, t, 0.5 * m * r * r])


def hemisphere_inertia(m_sph: float, r: float) -> np.ndarray:
    """Eq. (3): a solid hemisphere (flat face normal to z) about its own centre of mass;
    ``m_sph`` the whole sphere's mass (the hemisphere weighs m_sph / 2)."""
    t = 0.4 * m_sph * r * r * 0.5 - 0.5 * 9.0 / 64.0 * m_sph * r * r
    return np.diag([t, t, 0.4 * m_sph * r * r * 0.5])


def _shift(J: np.ndarray, m: float, d: np.ndarray) -> np.ndarray:
    """Eqs. (4)-(6), in full: the parallel-axis theorem for an offset d (3,)."""
    return J + m * (float(d @ d) * np.eye(3) - np.outer(d, d))


def _combine(parts: list[tuple[float, np.ndarray, np.ndarray]]) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, com (3,), inertia about the com) of signed parts (mass < 0: removed material),
    each (m, its com, its inertia about its com) -- eqs. (7)-(10)."""
    m = sum(p[0] for p in parts)
    com = sum(p[0] * p[1] for p in parts) / m
    J = sum(_shift(p[2], p[0], p[1] - com) for p in parts)
    return m, com, J


def _capsule_end(density: float, r: float, h: float, top: float, xy):
    """Cylinder (height h, from z = top downward) and hemisphere under it, as parts."""
    m_cyl = density * math.pi * r * r * h
    m_sph = density * 4.0 / 3.0 * math.pi * r ** 3
    c_cyl = np.array([xy[0], xy[1], top - 0.5 * h])
    c_cap = np.array([xy[0], xy[1], top - h - 3.0 * r / 8.0])
    J_cap = hemisphere_inertia(m_sph, r)
    return [(m_cyl, c_cyl, cylinder_inertia(m_cyl, r, h)), (0.5 * m_sph, c_cap, J_cap)]


def block_mass_properties(block: HoleBlock, density: float) -> tuple[float, np.ndarray, np.ndarray]:
    """(kg, com (3,) m block frame, inertia (3,3) kg m^2 about the com)."""
    a, b, c = block.box
    m_box = density * a * b * c
    parts = [(m_box, np.array([0.0, 0.0, -0.5 * c]), box_inertia(m_box, a, b, c))]
    for xy in block.holes_xy:
        for m, com, J in _capsule_end(density, block.radius, block.depth, 0.0, xy):
            parts.append((-m, com, -J))
    return _combine(parts)


def plate_mass_properties(plate: PinPlate, density: float) -> tuple[float, np.ndarray, np.ndarray]:
    """(kg, com (3,) m part frame, inertia (3,3) kg m^2 about the com): plate box + pins."""
    a, b, t = plate.plate
    m_box = density * a * b * t
    parts = [(m_box, np.array([0.0, 0.0, 0.5 * t]), box_inertia(m_box, a, b, t))]
    for xy in plate.pins_xy:
        parts += _capsule_end(density, plate.radius, plate.length, 0.0, xy)
    return _combine(parts)


# --- point queries (tests, the view, the penetration figures) --------------------------

def block_inside(block: HoleBlock, p: np.ndarray) -> np.ndarray:
    """(k,) bool: points p (k,3) (block frame) inside the block's material."""
    a, b, c = block.box
    inside = (np.abs(p[:, 0]) <= 0.5 * a) & (np.abs(p[:, 1]) <= 0.5 * b) & (p[:, 2] <= 0.0) & (p[:, 2] >= -c)
    for x, y in block.holes_xy:
        q = p - np.array([x, y, 0.0])
        zc = np.maximum(q[:, 2], -block.depth)                 # nearest point of the axis ray
        dist = np.sqrt(q[:, 0] ** 2 + q[:, 1] ** 2 + (q[:, 2] - zc) ** 2)
        inside &= ~(dist < block.radius)
    return inside


def plate_inside(plate: PinPlate, p: np.ndarray) -> np.ndarray:
    """(k,) bool: points p (k,3) (part frame) inside the plate or a pin."""
    a, b, t = plate.plate
    inside = (np.abs(p[:, 0]) <= 0.5 * a) & (np.abs(p[:, 1]) <= 0.5 * b) & (p[:, 2] >= 0.0) & (p[:, 2] <= t)
    for x, y in plate.pins_xy:
        q = p - np.array([x, y, 0.0])
        zc = np.clip(q[:, 2], -plate.length, 0.0)
        dist = np.sqrt(q[:, 0] ** 2 + q[:, 1] ** 2 + (q[:, 2] - zc) ** 2)
        inside |= (dist <= plate.radius) & (q[:, 2] <= 0.0)
    return inside


class BlockSDF:
    """The hole block's signed distance (block frame): max(box, -holes).  Exact inside the
    material (the depth of a penetrating point); outside it is a lower bound near the rims
    and edges (the pin detector's rim case measures those exactly)."""

    def __init__(self, block: HoleBlock):
        self.block = block
        a, b, c = block.box
        self.bounds = (0.5 * math.hypot(a, b), -c, 0.0)

    def query(self, p: np.ndarray, band: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        blk = self.block
        a, b, c = blk.box
        centre = np.array([0.0, 0.0, -0.5 * c])
        half = np.array([0.5 * a, 0.5 * b, 0.5 * c])
        q = np.abs(p - centre) - half
        out = np.linalg.norm(np.maximum(q, 0.0), axis=1)
        d_box = out + np.minimum(q.max(axis=1), 0.0)
        g_box = np.zeros_like(p)
        k = np.argmax(q, axis=1)
        g_box[np.arange(len(p)), k] = np.sign((p - centre)[np.arange(len(p)), k])
        d_hole = np.full(len(p), np.inf)
        g_hole = np.zeros_like(p)
        for x, y in blk.holes_xy:
            v = p - np.array([x, y, 0.0])
            v[:, 2] -= np.maximum(v[:, 2], -blk.depth)          # from the nearest point of the axis ray
            dist = np.linalg.norm(v, axis=1)
            dh = dist - blk.radius
            closer = dh < d_hole
            d_hole[closer] = dh[closer]
            g_hole[closer] = v[closer] / np.maximum(dist[closer], 1e-300)[:, None]
        holes_win = -d_hole > d_box
        d = np.where(holes_win, -d_hole, d_box)
        g = np.where(holes_win[:, None], -g_hole, g_box)
        return d, g
