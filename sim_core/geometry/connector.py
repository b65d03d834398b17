"""Procedural snap-fit connector pairs (seed 003 Fig. 2): a socket's cantilever prong with a hook,
meshed in tetrahedra for the FEM (``systems.fem``), and the rigid plug it snaps over.

**The prong** (its own frame: z up the prong from its fixed foot at z = 0, x across its
thickness towards the plug, y along its width).  A beam of thickness ``thickness`` (x from 0
to t), width ``width`` (y from -w/2 to w/2) and height ``length``, with a hook on its inner
face x = 0 at the top: protruding by up to ``hook_depth`` into x < 0.  Read from the top down
the hook's inner edge is

- the *lead* ramp: from ``hook_top`` of protrusion at z = L down to the full depth, at
  ``lead_angle`` from the insertion axis (z): the plug slides down it and bends the prong out
  (Bayer's snap-fit lead angle: the mating force is P (mu + tan a) / (1 - mu tan a));
- a *land* of ``hook_land`` at the full depth;
- the *return* face: back to the beam face at ``return_angle`` from the insertion axis
  (90 deg: a flat shelf that never lets go; less lets the plug be pulled out).

**The mesh** is a structured grid mapped onto that profile: (nx, ny, nz) hexahedra in (xi, eta,
zeta) on the unit cube, each cut into tetrahedra by scikit-fem's ``MeshTet.init_tensor``, then
x = t - xi (t + p(z)) with p(z) the hook's protrusion (zero below the hook), y = w (eta - 1/2),
z = zeta L, with grid planes in z at every break of the profile so that the polyline is exact.
Every cell keeps a width of at least t across x, so no element degenerates at the hook's
corners (where the return face meets the beam the cells narrow to t, not to zero), and the
mesh is a pure function of the spec and the counts: deterministic on every machine (the
issue's requirement; an unstructured mesher is an option, not a need, for this profile).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

MIN_CELLS_Z = 4        # the fewest cells up a prong: fewer cannot place the hook's breaks


@dataclass(frozen=True)
class ProngSpec:
    """One cantilever prong, SI units, its own frame (see the module's text)."""
    length: float = 12e-3         # m, z: foot to tip
    width: float = 8e-3           # m, y
    thickness: float = 2.5e-3     # m, x
    hook_depth: float = 1.0e-3    # m, how far the hook reaches in front of the beam (x < 0)
    hook_top: float = 0.2e-3      # m, the hook's protrusion left at the tip (a blunted top)
    hook_land: float = 0.5e-3     # m, flat at full depth between the ramps
    lead_angle: float = 30.0      # deg from the insertion axis (z)
    return_angle: float = 60.0    # deg from the insertion axis (90: a shelf that never lets go)

    def __post_init__(self):
        for k in ("length", "width", "thickness", "hook_depth"):
            if not getattr(self, k) > 0.0:
                raise ValueError(f"{k}: must be > 0, got {getattr(self, k)!r}")
        if not 0.0 <= self.hook_top < self.hook_depth:
            raise ValueError(f"hook_top: must be in [0, hook_depth), got {self.hook_top!r}")
        if not self.hook_land >= 0.0:
            raise ValueError(f"hook_land: must be >= 0, got {self.hook_land!r}")
        for k in ("lead_angle", "return_angle"):
            if not 0.0 < getattr(self, k) <= 90.0:
                raise ValueError(f"{k}: must be in (0, 90] deg, got {getattr(self, k)!r}")
        if self.hook_bottom <= 0.25 * self.length:
            raise ValueError(f"hook_depth/angles: the hook reaches down to z = {self.hook_bottom:.4g} m, "
                             f"below a quarter of the prong's length {self.length:.4g} m")

    # the profile's breaks, from the top down (z of each, in the prong's frame)
    @property
    def lead_height(self) -> float:
        """m, the lead ramp's height along z."""
        return (self.hook_depth - self.hook_top) / math.tan(math.radians(self.lead_angle))

    @property
    def return_height(self) -> float:
        """m, the return face's height along z (0 for a 90 deg shelf)."""
        a = math.radians(self.return_angle)
        return 0.0 if self.return_angle >= 90.0 else self.hook_depth / math.tan(a)

    @property
    def hook_bottom(self) -> float:
        """m, z where the return face meets the beam's inner face."""
        return self.length - self.lead_height - self.hook_land - self.return_height

    def breaks(self) -> np.ndarray:
        """z of the profile's corners, foot to tip (distinct, ascending)."""
        L = self.length
        z = [0.0, self.hook_bottom, self.hook_bottom + self.return_height,
             L - self.lead_height, L]
        return np.unique(np.round(np.array(z), 15))

    def protrusion(self, z) -> np.ndarray:
        """m, p(z): how far the inner face lies in front of the beam (x = -p(z)); 0 below the hook.
        At a 90 deg shelf it is the full depth from the shelf's z up (the step is a grid plane)."""
        z = np.asarray(z, float)
        zb, zr, zl = self.hook_bottom, self.hook_bottom + self.return_height, self.length - self.lead_height
        h = self.hook_depth
        rise = np.where(z <= zb, 0.0, h if self.return_height == 0.0 else h * (z - zb) / self.return_height)
        fall = h - (h - self.hook_top) * (z - zl) / max(self.lead_height, 1e-300)
        return np.where(z < zr, np.minimum(rise, h), np.where(z <= zl, h, fall))


def _graded(breaks: np.ndarray, nz: int) -> np.ndarray:
    """nz + 1 grid planes over [breaks[0], breaks[-1]] that include every break: each interval
    gets cells in proportion to its length (at least one)."""
    spans = np.diff(breaks)
    if nz < len(spans):
        raise ValueError(f"nz: {nz} cells cannot hold the profile's {len(spans)} intervals")
    share = np.maximum(1, np.floor(nz * spans / spans.sum()).astype(int))
    while share.sum() < nz:                     # give the rest to the intervals with the longest cells
        share[np.argmax(spans / share)] += 1
    while share.sum() > nz:
        i = np.argmin(np.where(share > 1, spans / share, np.inf))
        share[i] -= 1
    out = [breaks[0]]
    for a, b, n in zip(breaks[:-1], breaks[1:], share):
        out.extend(a + (b - a) * np.arange(1, n + 1) / n)
    return np.array(out)


def prong_mesh(spec: ProngSpec, nx: int, ny: int, nz: int):
    """The prong's tetrahedral mesh (a ``skfem.MeshTet``, metres, the prong's frame)."""
    from skfem import MeshTet

    if min(nx, ny) < 1 or nz < MIN_CELLS_Z:
        raise ValueError(f"cells: need nx, ny >= 1 and nz >= {MIN_CELLS_Z}, got ({nx}, {ny}, {nz})")
    zs = _graded(spec.breaks(), nz)
    m = MeshTet.init_tensor(np.linspace(0.0, 1.0, nx + 1), np.linspace(0.0, 1.0, ny + 1), zs)
    xi, eta, z = m.p
    t = spec.thickness
    p = np.vstack([t - xi * (t + spec.protrusion(z)), spec.width * (eta - 0.5), z])
    return MeshTet(p, m.t)


# Mesh levels the scenario ships (issue 27: near seed 003 Table I's 663 and 1,266 DOF with the
# quadratic element, after the foot's nodes are fixed; docs/snap.md measures each)
LEVELS = {"coarse": (1, 1, 12), "fine": (1, 2, 14)}


@dataclass(frozen=True)
class PlugSpec:
    """The rigid plug (seed 003's plug connector): a prism along y whose x-z profile is a head
    (half-width ``head_half``, height ``head_height``, its lower edges chamfered by ``chamfer``
    at 45 deg) under a neck (half-width ``neck_half``) up to ``top`` above the head's bottom.
    Its frame: origin at the middle of the head's bottom edge, z up."""
    head_half: float = 3.1e-3
    head_height: float = 2.0e-3
    chamfer: float = 0.8e-3
    neck_half: float = 2.3e-3
    top: float = 8.0e-3

    def __post_init__(self):
        if not 0.0 < self.neck_half < self.head_half:
            raise ValueError(f"neck_half: must be in (0, head_half), got {self.neck_half!r}")
        if not 0.0 <= self.chamfer < min(self.head_height, self.head_half):
            raise ValueError(f"chamfer: must be in [0, min(head_height, head_half)), got {self.chamfer!r}")
        if not self.top > self.head_height:
            raise ValueError(f"top: must be above the head ({self.head_height!r}), got {self.top!r}")

    def polygons(self) -> list[np.ndarray]:
        """The profile as two convex polygons (counter-clockwise (k, 2) x-z vertices): head, neck."""
        h, c, H = self.head_half, self.chamfer, self.head_height
        head = np.array([[-h + c, 0.0], [h - c, 0.0], [h, c], [h, H], [-h, H], [-h, c]])
        n = self.neck_half
        neck = np.array([[-n, H], [n, H], [n, self.top], [-n, self.top]])
        return [head, neck]


def polygon_sdf(P: np.ndarray, poly: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact signed distance (m; negative inside) of points P (k, 2) to a convex polygon (ccw),
    and its unit gradient (k, 2) (the outward direction of the closest feature)."""
    a, b = poly, np.roll(poly, -1, axis=0)
    e = b - a                                             # (v, 2) edges
    w = P[:, None, :] - a[None]                           # (k, v, 2)
    t = np.clip(np.einsum("kvi,vi->kv", w, e) / np.einsum("vi,vi->v", e, e), 0.0, 1.0)
    d = w - t[..., None] * e[None]                        # point minus closest point on each edge
    dist2 = np.einsum("kvi,kvi->kv", d, d)
    j = np.argmin(dist2, axis=1)
    k = np.arange(len(P))
    nrm_e = np.stack([e[:, 1], -e[:, 0]], axis=1) / np.linalg.norm(e, axis=1)[:, None]   # outward (ccw)
    side = np.einsum("kvi,vi->kv", w, nrm_e)              # signed distance to each edge's line
    inside = np.all(side <= 0.0, axis=1)
    dist = np.sqrt(dist2[k, j])
    sdf = np.where(inside, side.max(axis=1), dist)
    g_in = nrm_e[np.argmax(side, axis=1)]
    on = dist <= 1e-15 * max(1.0, float(np.abs(poly).max()))     # on the boundary: the edge's normal
    g_out = d[k, j] / np.where(on, 1.0, dist)[:, None]
    return sdf, np.where((inside | on)[:, None], g_in, g_out)


def plug_sdf(spec: PlugSpec, P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The plug's signed distance (k,) and outward unit normal (k, 2) at x-z points P (k, 2) in
    its frame: the union of its convex pieces (exact outside; inside, the deepest piece's)."""
    out = [polygon_sdf(P, poly) for poly in spec.polygons()]
    d = np.stack([o[0] for o in out])
    i = np.argmin(d, axis=0)
    k = np.arange(len(P))
    return d[i, k], np.stack([o[1] for o in out])[i, k]


def packed_polygons(spec: PlugSpec) -> tuple[np.ndarray, np.ndarray]:
    """The plug's pieces for ``union_sdf``: vertices (pieces, v_max, 2) and counts (pieces,)."""
    polys = spec.polygons()
    V = np.zeros((len(polys), max(len(p) for p in polys), 2))
    for i, p in enumerate(polys):
        V[i, :len(p)] = p
    return V, np.array([len(p) for p in polys], np.int64)


@njit(cache=True)
def union_sdf(P, V, counts, d_out, g_out):
    """``plug_sdf`` as a kernel: the union of convex ccw polygons V (pieces, v_max, 2) with
    `counts` vertices, at points P (k, 2), into d_out (k,) and g_out (k, 2).  The same sums per
    point as ``polygon_sdf`` (tested equal), without the temporaries (the snap step's detection:
    0.6 ms a step in NumPy on the fine mesh)."""
    for q in range(P.shape[0]):
        px, pz = P[q, 0], P[q, 1]
        best = np.inf
        bx, bz = 0.0, 0.0
        for c in range(V.shape[0]):
            n = counts[c]
            dmin2, sidemax = np.inf, -np.inf
            cx, cz, sx, sz = 0.0, 0.0, 0.0, 0.0
            for e in range(n):
                ax, az = V[c, e, 0], V[c, e, 1]
                ex, ez = V[c, (e + 1) % n, 0] - ax, V[c, (e + 1) % n, 1] - az
                wx, wz = px - ax, pz - az
                t = (wx * ex + wz * ez) / (ex * ex + ez * ez)
                t = min(max(t, 0.0), 1.0)
                dx, dz = wx - t * ex, wz - t * ez
                d2 = dx * dx + dz * dz
                if d2 < dmin2:
                    dmin2, cx, cz = d2, dx, dz
                L = math.sqrt(ex * ex + ez * ez)
                nx, nz = ez / L, -ex / L
                side = wx * nx + wz * nz
                if side > sidemax:
                    sidemax, sx, sz = side, nx, nz
            dist = math.sqrt(dmin2)
            scale = 0.0
            for e in range(n):
                scale = max(scale, abs(V[c, e, 0]), abs(V[c, e, 1]))
            on = dist <= 1e-15 * max(1.0, scale)
            if sidemax <= 0.0 or on:
                d, gx, gz = (sidemax if sidemax <= 0.0 else dist), sx, sz
            else:
                d, gx, gz = dist, cx / dist, cz / dist
            if d < best:
                best, bx, bz = d, gx, gz
        d_out[q] = best
        g_out[q, 0] = bx
        g_out[q, 1] = bz
