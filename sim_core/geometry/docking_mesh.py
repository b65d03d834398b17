"""Watertight triangle meshes of the docking parts (``geometry.docking``): the hole block and
the pin plate, for the view, for PLY export and for mesh-based detectors (python-fcl in
``bench/docking.py``).

**How.**  Each capsule -- a hole's cutter, a pin -- is written here vertex by vertex, every
vertex exactly (to rounding) on the analytic surface: ``segments`` angles theta_k = 2 pi k / n
round the axis; the hemisphere is ``segments / 4`` latitude steps of 2 pi / n from its pole to
its equator; the cylinder is one band from the equator to its top ring; the ends are fans.
The solids are then combined by ``manifold3d`` (Manifold 3D, Emmett Lalish et al.,
https://github.com/elalish/manifold): the block is its box *minus* the hole cutters (each
reaching above the top face, so that no face of the cutter is coplanar with the box's), the
plate is its box *plus* the pins (each reaching into the plate).  The only vertices the
booleans create are where the cutters' straight cylinder rulings cross the box's top face (or
the pins' cross the plate's lower face), so they lie on the true cylinder too.

**Why manifold3d, not triangulation by hand.**  The capsules alone are easy to triangulate;
the hard part is where they meet the box: the top face with N circular openings (a polygon
with N holes to triangulate), the rim where the cylinder's rulings end at the face, a block
with material under the holes (c > h + r), holes in any layout, and a plate whose pins
merge into its lower face.  Hand code for that is a polygon-with-holes triangulator plus a
stitching of rings to it, each case a chance for a T-junction, a crack or a flipped
triangle -- a mesh that is not watertight breaks the volume, the inertia and fcl's inside
tests silently.  Manifold's booleans are exact in their topology (symbolic perturbation for
coincident and coplanar input) and guarantee a closed, oriented 2-manifold output for
manifold input, in double precision (``to_mesh64``), at any resolution; the result is
checked here anyway (``mesh.check_closed_oriented``).  Its 2-D ``CrossSection`` (Clipper2)
rounds coordinates to about 1e-9 m, so no primitive here goes through it: the capsules
are built from exact vertices and handed over as meshes.

**Accuracy.**  Every vertex is on the surface, so each polygonal capsule lies inside the
true one (it is convex, the convex hull of points on the true surface) and contains the
capsule of the same axis with radius r cos(pi/n) on its cylinder and r cos^2(pi/n) on its
hemisphere (each cross-section is a regular n-gon whose inradius is cos(pi/n) times its
circumradius; each latitude chord is within cos(pi/n) of the radius).  The block's mesh
therefore holds slightly more material than the true block, the plate's slightly less; the
bounds are ``capsule_volume_deficit``.  The largest distance from the mesh to the true
surface (the sagitta) is ``sagitta(radius, segments)`` = r (1 - cos^2(pi/n)) <= r (pi/n)^2.
"""
from __future__ import annotations

import math

import manifold3d
import numpy as np

from sim_core.geometry.docking import HoleBlock, PinPlate
from sim_core.geometry.mesh import TriMesh

MIN_SEGMENTS = 8               # fewest angles round a circle (a multiple of 4, as all are)


def _check_segments(segments: int) -> int:
    n = int(segments)
    if n < MIN_SEGMENTS or n % 4:
        raise ValueError(f"segments must be a multiple of 4 and >= {MIN_SEGMENTS}, got {segments!r}")
    return n


def capsule_mesh(centre, radius: float, top: float, segments: int) -> tuple[np.ndarray, np.ndarray]:
    """(vertices (V,3), faces (F,3)) of a closed, outward-oriented capsule end: the hemisphere
    of ``radius`` under ``centre`` (3,) (its equator's centre) and the cylinder above it up to
    the height ``top`` (> centre z), axis z.  ``segments`` angles round the axis; the pole,
    segments / 4 latitude rings (the last the equator), the top ring and the top centre."""
    n = _check_segments(segments)
    cx, cy, cz = (float(c) for c in centre)
    if not top > cz:
        raise ValueError("capsule_mesh: top must be above the centre")
    m = n // 4
    th = 2.0 * np.pi * np.arange(n) / n
    ct, st = np.cos(th), np.sin(th)
    phi = -0.5 * np.pi + 0.5 * np.pi * np.arange(1, m + 1) / m        # ring latitudes, last = 0
    rad = radius * np.cos(phi)
    rad[-1] = radius                                                   # the equator, exactly
    z = cz + radius * np.sin(phi)
    z[-1] = cz
    rings = [np.stack([cx + r_ * ct, cy + r_ * st, np.full(n, z_)], 1) for r_, z_ in zip(rad, z)]
    rings.append(np.stack([cx + radius * ct, cy + radius * st, np.full(n, float(top))], 1))
    V = np.concatenate([[[cx, cy, cz - radius]], *rings, [[cx, cy, float(top)]]])
    k, k1 = np.arange(n), (np.arange(n) + 1) % n
    ring = lambda i: 1 + i * n                                         # noqa: E731 - first index of ring i
    faces = [np.stack([np.zeros(n, np.int64), ring(0) + k1, ring(0) + k], 1)]      # pole fan (outward: down)
    for i in range(m):                                                 # m - 1 latitude bands + the cylinder
        a, b = ring(i) + k, ring(i + 1) + k
        a1, b1 = ring(i) + k1, ring(i + 1) + k1
        faces += [np.stack([a, a1, b1], 1), np.stack([a, b1, b], 1)]
    apex = len(V) - 1
    faces.append(np.stack([np.full(n, apex), ring(m) + k, ring(m) + k1], 1))       # top fan (outward: up)
    return V, np.concatenate(faces).astype(np.int64)


def _manifold(V: np.ndarray, F: np.ndarray) -> manifold3d.Manifold:
    mesh = manifold3d.Mesh64(vert_properties=np.ascontiguousarray(V, np.float64),
                             tri_verts=np.ascontiguousarray(F, np.uint64))
    out = manifold3d.Manifold(mesh)
    if out.status() != manifold3d.Error.NoError:
        raise ValueError(f"manifold3d rejected a capsule: {out.status()}")
    return out


def _box(lo, hi) -> manifold3d.Manifold:
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    return manifold3d.Manifold.cube(tuple(hi - lo)).translate(tuple(lo))


def _trimesh(solid: manifold3d.Manifold, what: str) -> TriMesh:
    if solid.status() != manifold3d.Error.NoError:
        raise ValueError(f"{what}: manifold3d failed ({solid.status()})")
    out = solid.to_mesh64()
    V = np.asarray(out.vert_properties, np.float64)[:, :3]
    return TriMesh(V.copy(), np.asarray(out.tri_verts, np.int64).copy())


def block_mesh(block: HoleBlock, segments: int = 64) -> TriMesh:
    """The hole block (block frame: origin at the top face's centre, z up) as a closed,
    outward-oriented mesh: the box [-a/2, a/2] x [-b/2, b/2] x [-c, 0] minus each hole's
    capsule (hemisphere centre (x_j, y_j, -h), cylinder reaching r above the top face)."""
    a, b, c = block.box
    r, h = block.radius, block.depth
    cutters = [_manifold(*capsule_mesh((x, y, -h), r, r, segments)) for x, y in block.holes_xy]
    box = _box((-0.5 * a, -0.5 * b, -c), (0.5 * a, 0.5 * b, 0.0))
    solid = manifold3d.Manifold.batch_boolean([box, *cutters], manifold3d.OpType.Subtract) if cutters else box
    return _trimesh(solid, "block_mesh")


def plate_mesh(plate: PinPlate, segments: int = 64) -> TriMesh:
    """The pin plate (part frame: origin at the centre of the plate's lower face, z up) as a
    closed, outward-oriented mesh: the box [-a/2, a/2] x [-b/2, b/2] x [0, t] plus each pin's
    capsule (hemisphere centre (x_i, y_i, -length), cylinder reaching t/2 into the plate)."""
    a, b, t = plate.plate
    pins = [_manifold(*capsule_mesh((x, y, -plate.length), plate.radius, 0.5 * t, segments))
            for x, y in plate.pins_xy]
    box = _box((-0.5 * a, -0.5 * b, 0.0), (0.5 * a, 0.5 * b, t))
    solid = manifold3d.Manifold.batch_boolean([box, *pins], manifold3d.OpType.Add) if pins else box
    return _trimesh(solid, "plate_mesh")


# --- the polygonization's error, closed form ------------------------------------------

def sagitta(radius: float, segments: int) -> float:
    """m: the largest distance from a capsule's polygonal surface to the true one,
    r (1 - cos^2(pi/n)) (the hemisphere's; the cylinder's is r (1 - cos(pi/n)))."""
    return radius * (1.0 - math.cos(math.pi / _check_segments(segments)) ** 2)


def capsule_volume_deficit(radius: float, depth: float, segments: int) -> float:
    """m^3: an upper bound on how much less a polygonal capsule end (cylinder of height
    ``depth`` over a hemisphere) holds than the true one: the true volume less that of the
    inscribed capsule (cylinder radius r cos(pi/n), hemisphere radius r cos^2(pi/n))."""
    q = math.cos(math.pi / _check_segments(segments))
    return (math.pi * radius ** 2 * depth * (1.0 - q * q)
            + 2.0 / 3.0 * math.pi * radius ** 3 * (1.0 - q ** 6))


def polygonal_capsule_volume(radius: float, depth: float, segments: int) -> float:
    """m^3: the exact volume of ``capsule_mesh``'s solid below the height ``depth`` over its
    equator: each of the n wedges between two angles has cross-sections that are triangles
    of area p(z)^2 sin(2 pi/n) / 2 (p the profile's radius at z, linear along each latitude
    chord), so V = n sin(2 pi/n) / 2 * sum over chords of dz (p0^2 + p0 p1 + p1^2) / 3."""
    n = _check_segments(segments)
    m = n // 4
    phi = -0.5 * np.pi + 0.5 * np.pi * np.arange(m + 1) / m
    p = radius * np.cos(phi)
    p[0], p[-1] = 0.0, radius
    z = radius * np.sin(phi)
    z[0], z[-1] = -radius, 0.0
    lower = float(np.sum(np.diff(z) * (p[:-1] ** 2 + p[:-1] * p[1:] + p[1:] ** 2) / 3.0))
    return 0.5 * n * math.sin(2.0 * math.pi / n) * (lower + radius ** 2 * depth)
