"""The grinding workpiece (seed 001 Sec. 4.3): a curved aluminium bar with a weld bead along its
top, its exact signed distance, its surface by position and normal, the tool path generated
from them, and a mesh for the view.

**Geometry** (the workpiece frame; the shape ``shapes.Workpiece`` places it in the world): the
union of two solid circular cylinders whose axes run along x, both of length ``length``
(|x| <= length / 2):

* the bar, radius ``radius`` (R), axis the x axis: its top, the convex surface ground, is the
  cylinder's face at z = R over y = 0;
* the weld bead, radius ``bead_radius`` (r_b), axis the line y = 0, z = z_b = R + h - r_b,
  where ``bead_height`` h (0 < h < r_b) is how far its crest stands above the bar's top.

**Signed distance.**  Outside the union, the distance to it is exactly the smaller of the two
cylinders' distances, and its gradient that cylinder's (``signed_distance``; inside, the
smaller value bounds the depth from above, which is what a contact needs).  A ball of
radius r meets the union exactly when it meets one of them: the detector
(``collision.detectors.sphere_workpiece``) reports one contact per cylinder, the closed form
of ``collision.analytic.sphere_cylinder``, so at the concave crease where the bead meets the
bar the tip is held by both.

**The surface by position and normal** (``surface``): along the ray from the bar's axis at
angle theta from +z towards +y, the union's boundary is the farther of the bar's face (at R)
and the bead's outer intersection; with 0 < h < r_b the union is star-shaped about the axis
(the tangent from the axis to the bead circle touches it inside the bar: z_b^2 - r_b^2 < R^2),
so that boundary point is unique and the surface is one chart theta -> point.

**The tool path** (Sec. 4.3: "the method parallel to the first selection curve ... trajectory
points generated based on the surface position and normal vector"): the first selection
curve is the bead's crest line (theta = 0, along x); the passes run parallel to it, at a
set arc-length ``spacing`` apart across the surface (each pass at constant theta), in a
zig-zag, each point offset along the surface normal by the tool's tip radius r_t with the
tool axis along the normal.  The seed offsets p + r_t n; so does this, but through the
boundary of the union inflated by r_t (radii R + r_t and r_b + r_t, ``path``): it is p + r_t n
wherever the nearest surface point is unique, and at the crease -- where p + r_t n off one
cylinder would lie within r_t of the other -- it is the point touching both (the tip rides
the offset surface, never into the bead).  The contact point is the centre minus r_t n, on
the surface to rounding (``tests/sim_core/geometry/test_grinding.py``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim_core.geometry.mesh import TriMesh


@dataclass(frozen=True)
class Workpiece:
    """The bar with its bead (module docstring).  All m."""
    radius: float          # R, the bar's radius (the convex surface's curvature radius)
    length: float          # along x, both cylinders
    bead_radius: float     # r_b, the bead's cross-section radius
    bead_height: float     # h, the bead's crest above the bar's top face, 0 < h < r_b

    def __post_init__(self):
        for k in ("radius", "length", "bead_radius", "bead_height"):
            if not getattr(self, k) > 0.0:
                raise ValueError(f"workpiece: {k} must be > 0, got {getattr(self, k)}")
        if not self.bead_height < self.bead_radius:
            raise ValueError(f"workpiece: bead_height {self.bead_height:g} m must be below bead_radius "
                             f"{self.bead_radius:g} m (a bead is a segment of its circle, less than half)")
        if not self.bead_radius < self.radius:
            raise ValueError(f"workpiece: bead_radius {self.bead_radius:g} m must be below radius {self.radius:g} m")

    @property
    def bead_z(self) -> float:
        """m, z of the bead's axis (workpiece frame)."""
        return self.radius + self.bead_height - self.bead_radius

    def cylinders(self) -> tuple[tuple[float, float], ...]:
        """((axis z m, radius m), ...): the bar, then the bead; both axes along x at y = 0."""
        return ((0.0, self.radius), (self.bead_z, self.bead_radius))

    def extent(self) -> float:
        """m: no material farther than this from the workpiece origin."""
        return math.hypot(0.5 * self.length, self.radius)


def _cylinder_x(p: np.ndarray, zc: float, r: float, half: float) -> tuple[np.ndarray, np.ndarray]:
    """Signed distance (N,) and unit gradient (N,3) of the solid cylinder |x| <= half,
    (y, z - zc) within r -- the same cases as ``collision.analytic.cylinder_sdf``, axis x."""
    y, z = p[:, 1], p[:, 2] - zc
    rho = np.hypot(y, z)
    safe = np.where(rho > 0.0, rho, 1.0)
    uy, uz = np.where(rho > 0.0, y / safe, 0.0), np.where(rho > 0.0, z / safe, 1.0)
    sx = np.where(p[:, 0] >= 0.0, 1.0, -1.0)
    dr, dx = rho - r, np.abs(p[:, 0]) - half
    rim = (dr > 0.0) & (dx > 0.0)
    g_rim = np.hypot(np.maximum(dr, 0.0), np.maximum(dx, 0.0))
    side = ~rim & ((dr > 0.0) | ((dx <= 0.0) & (dr > dx)))
    cap = ~rim & ~side
    d = np.where(rim, g_rim, np.where(side, dr, dx))
    g = np.zeros_like(p)
    gr = np.where(rim, g_rim, 1.0)
    g[:, 0] = np.where(rim, dx * sx / gr, np.where(cap, sx, 0.0))
    g[:, 1] = np.where(rim, dr * uy / gr, np.where(side, uy, 0.0))
    g[:, 2] = np.where(rim, dr * uz / gr, np.where(side, uz, 0.0))
    return d, g


def signed_distance(wp: Workpiece, p) -> tuple[np.ndarray, np.ndarray]:
    """(d (N,) m, n (N,3)) at points p (N,3) m (workpiece frame): the union's signed distance
    (exact outside, an upper bound of the depth inside) and the unit outward gradient."""
    p = np.atleast_2d(np.asarray(p, dtype=np.float64))
    (z0, r0), (z1, r1) = wp.cylinders()
    d0, g0 = _cylinder_x(p, z0, r0, 0.5 * wp.length)
    d1, g1 = _cylinder_x(p, z1, r1, 0.5 * wp.length)
    bead = d1 < d0
    return np.where(bead, d1, d0), np.where(bead[:, None], g1, g0)


def _boundary(theta: np.ndarray, R: float, zb: float, rb: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Along the ray at angle theta (from +z towards +y) from the bar's axis: the distance t to
    the union's boundary of the circles (0, R) and (zb, rb) (yz plane), the boundary point's
    unit normal (ny, nz), and whether the bead is the face there."""
    uy, uz = np.sin(theta), np.cos(theta)
    cu = zb * uz                                 # c . u, c = (0, zb)
    disc = cu * cu - zb * zb + rb * rb
    tb = np.where(disc >= 0.0, cu + np.sqrt(np.maximum(disc, 0.0)), -np.inf)
    bead = tb > R
    t = np.where(bead, tb, R)
    ny = np.where(bead, (t * uy) / rb, uy)
    nz = np.where(bead, (t * uz - zb) / rb, uz)
    return t, np.stack([ny, nz], -1), bead


def surface(wp: Workpiece, x, theta) -> tuple[np.ndarray, np.ndarray]:
    """(p (N,3) m, n (N,3)): the surface point and its unit outward normal at the positions
    x (N,) m along the bar and angles theta (N,) rad from its top (+z towards +y)."""
    x, theta = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(theta, np.float64))
    t, nyz, _ = _boundary(theta, wp.radius, wp.bead_z, wp.bead_radius)
    p = np.stack([x, t * np.sin(theta), t * np.cos(theta)], -1)
    n = np.stack([np.zeros_like(x), nyz[..., 0], nyz[..., 1]], -1)
    return p, n


@dataclass(frozen=True)
class ToolPath:
    """The tool path: the tip centre's points, the surface normals there (the tool axis), the
    contact points on the surface, and each point's pass (workpiece frame)."""
    centre: np.ndarray     # (P,3) m, tip centre: contact point + tip_radius n
    normal: np.ndarray     # (P,3) unit, outward surface normal at the contact point (= tool axis)
    contact: np.ndarray    # (P,3) m, where the tip touches the surface
    pass_id: np.ndarray    # (P,) int64, the pass of each point (0 .. passes - 1)
    theta: np.ndarray      # (P,) rad, each point's angle about the bar's axis


def pass_angles(wp: Workpiece, tip_radius: float, spacing: float, passes: int) -> np.ndarray:
    """(passes,) rad: the passes' angles, centred on the bead's crest (theta = 0), ``spacing``
    m of arc apart on the tip centre's offset surface (the bar's R + r_t where the bead is not
    the face; the arc the tool's centre travels between passes)."""
    k = np.arange(passes) - 0.5 * (passes - 1)
    return k * spacing / (wp.radius + tip_radius)


def path(wp: Workpiece, tip_radius: float, spacing: float, passes: int, x_range: tuple[float, float],
         points_per_pass: int) -> ToolPath:
    """Zig-zag passes parallel to the first selection curve (the bead's crest line), each of
    ``points_per_pass`` points from x_range[0] to x_range[1] (alternating direction), the tip
    centre offset along the normal by ``tip_radius`` (module docstring)."""
    if not (tip_radius > 0.0 and spacing > 0.0 and passes >= 1 and points_per_pass >= 2):
        raise ValueError("path: tip_radius and spacing must be > 0, passes >= 1, points_per_pass >= 2")
    half = 0.5 * wp.length
    if not -half <= x_range[0] < x_range[1] <= half:
        raise ValueError(f"path: x_range {x_range} must lie inside the workpiece's length +-{half:g} m")
    th = pass_angles(wp, tip_radius, spacing, passes)
    xs = np.linspace(x_range[0], x_range[1], points_per_pass)
    X = np.concatenate([xs if k % 2 == 0 else xs[::-1] for k in range(passes)])
    T = np.repeat(th, points_per_pass)
    t, nyz, _ = _boundary(T, wp.radius + tip_radius, wp.bead_z, wp.bead_radius + tip_radius)
    centre = np.stack([X, t * np.sin(T), t * np.cos(T)], -1)
    normal = np.stack([np.zeros_like(X), nyz[:, 0], nyz[:, 1]], -1)
    return ToolPath(centre, normal, centre - tip_radius * normal, np.repeat(np.arange(passes), points_per_pass), T)


def tool_rotation(n: np.ndarray, along=(1.0, 0.0, 0.0)) -> np.ndarray:
    """(3,3): the tool's orientation with its axis (body +z) along the unit normal n (the tip,
    at body -z, pointing into the surface), body x along `along` made orthogonal to n."""
    z = np.asarray(n, np.float64) / np.linalg.norm(n)
    x = np.asarray(along, np.float64) - (np.dot(along, z)) * z
    x /= np.linalg.norm(x)
    return np.stack([x, np.cross(z, x), z], 1)


def mesh(wp: Workpiece, segments: int = 96, rings: int = 24) -> TriMesh:
    """The view's mesh of the workpiece (its frame): the union's boundary sampled by
    ``surface`` round the full turn (segments angles), ``rings`` stations along x, closed by
    two end fans.  Every vertex of the lateral face lies on the true surface."""
    th = np.linspace(-math.pi, math.pi, segments, endpoint=False)
    xs = np.linspace(-0.5 * wp.length, 0.5 * wp.length, rings + 1)
    t, _, _ = _boundary(th, wp.radius, wp.bead_z, wp.bead_radius)
    ring = np.stack([t * np.sin(th), t * np.cos(th)], -1)                   # (S,2) yz
    V = [np.column_stack([np.full(segments, x), ring]) for x in xs]
    V = np.concatenate(V + [np.array([[xs[0], 0.0, 0.0], [xs[-1], 0.0, 0.0]])])
    F = []
    for i in range(rings):
        a, b = i * segments, (i + 1) * segments
        for j in range(segments):
            j1 = (j + 1) % segments
            # outward: theta increases from +z towards +y, i.e. clockwise seen from +x
            F.append((a + j, b + j, a + j1))
            F.append((a + j1, b + j, b + j1))
    c0, c1 = len(V) - 2, len(V) - 1
    last = rings * segments
    for j in range(segments):
        j1 = (j + 1) % segments
        F.append((c0, j, j1))                       # the -x end, facing -x
        F.append((c1, last + j1, last + j))         # the +x end, facing +x
    return TriMesh(V, np.array(F, np.int64))
