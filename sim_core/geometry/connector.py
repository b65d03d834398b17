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

import hashlib
import io
import json
import math
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from numba import njit

from sim_core.geometry.sdf import _SDFBase
from sim_core.paths import assets_dir

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

# -- the cached meshes (``tightsim assets build``: assets/fem/) ------------------------------------
# A prong's mesh is a pure function of its spec and cell counts, so the cache is a copy, written
# once and checked on every read: the file is named by the digest of (format, spec, cells) and
# holds them, so a file for another prong is never taken for this one.
PRONG_CACHE_FORMAT = 1


def prong_key(spec: ProngSpec, cells) -> str:
    """The digest (16 hex) a prong's cached mesh is filed under."""
    text = json.dumps({"format": PRONG_CACHE_FORMAT, "spec": asdict(spec), "cells": [int(c) for c in cells]},
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def prong_cache_path(folder, spec: ProngSpec, level: str):
    return Path(folder) / f"prong_{prong_key(spec, LEVELS[level])}.npz"


def write_prong_mesh(folder, spec: ProngSpec, level: str):
    """Write the prong's mesh at `level` to `folder` (``prong_cache_path``), atomically; its path."""
    from sim_core.geometry.assets import write_atomic  # assets' writer; it imports the part meshers
    mesh = prong_mesh(spec, *LEVELS[level])
    path = prong_cache_path(folder, spec, level)
    Path(folder).mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    np.savez(buf, format=np.int64(PRONG_CACHE_FORMAT), spec=np.array(json.dumps(asdict(spec), sort_keys=True)),
             cells=np.array(LEVELS[level], np.int64), p=np.asarray(mesh.p, np.float64), t=np.asarray(mesh.t, np.int64))
    write_atomic(path, buf.getvalue())
    return path


def cached_prong_mesh(spec: ProngSpec, level: str, folder=None):
    """The prong's mesh at `level`: read from the cache `folder` (default assets/fem/) where
    ``tightsim assets build`` wrote it, else built (the same mesh: deterministic).  A cache file
    that cannot be read, lacks a field, or holds another format, another prong or a broken mesh
    is a one-line ValueError naming the file and the field.  A change to ``prong_mesh`` must bump
    ``PRONG_CACHE_FORMAT`` (the key) and rebuild the assets: a well-formed file from an older
    mesher passes these checks (the tests compare the shipped files with a fresh build)."""

    from skfem import MeshTet

    if level not in LEVELS:
        raise ValueError(f"mesh level: must be one of {sorted(LEVELS)}, got {level!r}")
    path = prong_cache_path(assets_dir() / "fem" if folder is None else folder, spec, level)
    if not path.exists():
        return prong_mesh(spec, *LEVELS[level])
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path}: cannot read the cached prong mesh ({type(e).__name__}); rebuild it with "
                         f"`tightsim assets build`") from None

    def field(name: str) -> np.ndarray:
        if name not in data:
            raise ValueError(f"{path}: field '{name}' missing")
        return data[name]
    fmt = field("format")
    if fmt.shape != () or fmt.dtype.kind not in "iu" or int(fmt) != PRONG_CACHE_FORMAT:
        raise ValueError(f"{path}: field 'format' is not the integer {PRONG_CACHE_FORMAT}")
    sp = field("spec")
    if sp.shape != () or sp.dtype.kind != "U" or str(sp) != json.dumps(asdict(spec), sort_keys=True):
        raise ValueError(f"{path}: field 'spec' is not this prong's")
    cells = field("cells")
    if cells.dtype.kind not in "iu" or cells.tolist() != list(LEVELS[level]):
        raise ValueError(f"{path}: field 'cells' is not {list(LEVELS[level])}")
    p, t = field("p"), field("t")
    if p.dtype != np.float64 or p.ndim != 2 or p.shape[0] != 3 or not np.isfinite(p).all():
        raise ValueError(f"{path}: field 'p' is not finite float64 points (3, n)")
    if t.dtype != np.int64 or t.ndim != 2 or t.shape[0] != 4 or t.size == 0 or t.min() < 0 or t.max() >= p.shape[1]:
        raise ValueError(f"{path}: field 't' is not int64 tetrahedra (4, m) indexing the points")
    return MeshTet(p, t)


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


class PlugSDF(_SDFBase):
    """The plug's exact signed distance in 3-D, the interface of ``geometry.sdf``'s parts
    (``query``, ``query_closest``, ``bounds``): what ``tightsim train sdf`` labels its samples
    with and what the trained network is checked against.  The plug is a prism along y, so the
    distance is ``union_sdf`` of (x, z) and the gradient has no y part.  ``bounds`` (x_max,
    z_min, z_max): the training's working cylinder about z reaches every x of the profile.
    The closest point is p - d grad: exact outside; inside, the deepest piece's face point."""

    def __init__(self, spec: PlugSpec):
        if not isinstance(spec, PlugSpec):
            raise ValueError(f"PlugSDF needs a PlugSpec, got {type(spec).__name__}")
        self.spec = spec
        self.V, self.counts = packed_polygons(spec)
        self.bounds = (float(spec.head_half), 0.0, float(spec.top))

    def _run(self, p, d, g, c) -> None:
        g2 = np.empty((len(p), 2))
        union_sdf(np.ascontiguousarray(p[:, [0, 2]]), self.V, self.counts, d, g2)
        g[:, 0], g[:, 1], g[:, 2] = g2[:, 0], 0.0, g2[:, 1]
        c[:] = p - d[:, None] * g


# ---- the view's surfaces ----------------------------------------------------------------------

def prism_mesh(poly: np.ndarray, y0: float, y1: float) -> tuple[np.ndarray, np.ndarray]:
    """A convex x-z polygon (k, 2), counter-clockwise in (x, z), extruded over y in [y0, y1]:
    (vertices (2k, 3), faces (4k - 4, 3)) counter-clockwise seen from outside."""
    k = len(poly)
    V = np.vstack([np.column_stack([poly[:, 0], np.full(k, y), poly[:, 1]]) for y in (y0, y1)])
    F = []
    for i in range(k):                                  # the sides
        j = (i + 1) % k
        F += [(i, k + j, j), (i, k + i, k + j)]
    for i in range(1, k - 1):                           # the two end caps (fans)
        F += [(0, i, i + 1), (k, k + i + 1, k + i)]
    return V, np.array(F, np.int64)


def box_mesh(lo, hi) -> tuple[np.ndarray, np.ndarray]:
    """An axis-aligned box from `lo` to `hi` (3,): (vertices (8, 3), faces (12, 3))."""
    (x0, y0, z0), (x1, y1, z1) = lo, hi
    return prism_mesh(np.array([[x0, z0], [x1, z0], [x1, z1], [x0, z1]]), y0, y1)


def tet_surface(mesh) -> tuple[np.ndarray, np.ndarray]:
    """The boundary of a tetrahedral mesh (a ``skfem.MeshTet``): (its vertices (n, 3), the boundary
    triangles (F, 3) as indices into them, counter-clockwise seen from outside)."""
    P = mesh.p.T
    bf = mesh.boundary_facets()
    tri = mesh.facets[:, bf].T.copy()
    el = mesh.f2t[0, bf]                                # the one tetrahedron on each boundary facet
    centre = P[mesh.t[:, el]].mean(axis=0)              # (F, 3) its centroid: inside
    a, b, c = P[tri[:, 0]], P[tri[:, 1]], P[tri[:, 2]]
    inward = np.einsum("ij,ij->i", np.cross(b - a, c - a), centre - a) > 0.0
    tri[inward] = tri[inward][:, ::-1]
    return P.copy(), tri.astype(np.int64)


SEAT_CLEARANCE = 0.1e-3   # m: the seat's pedestal stops this short of the prongs' inner faces (the view)
BASE_THICKNESS = 1.5e-3   # m: the socket's base plate under the prongs' feet (the view)


def socket_surface(prong_tets, spec: ProngSpec, spacing: float, seat: float):
    """The socket the view draws, world frame: two prongs (the right one x_w = spacing + x, the
    left one mirrored), a base plate under their feet and the seat's pedestal between them.
    Returns (vertices (n, 3), faces (F, 3), vertex (n,) each vertex's index in the prong's mesh
    (-1: the base), side (n,) +1 right, -1 left, 0 the base) -- a prong vertex moves with its
    prong (``systems.fem.snap_socket.SnapSocket.view_parts``)."""
    Pv, Pf = tet_surface(prong_tets)
    outer = spacing + spec.thickness
    half = 0.5 * spec.width
    parts = [box_mesh((-outer, -half, -BASE_THICKNESS), (outer, half, 0.0)),
             box_mesh((-(spacing - SEAT_CLEARANCE), -half, 0.0), (spacing - SEAT_CLEARANCE, half, seat))]
    V, F, vertex, side = [], [], [], []
    n = 0
    for sgn in (1.0, -1.0):
        Vs = Pv.copy()
        Vs[:, 0] = sgn * (spacing + Pv[:, 0])
        V.append(Vs)
        F.append((Pf if sgn > 0 else Pf[:, ::-1]) + n)   # a mirror turns the faces inside out
        vertex.append(np.arange(len(Pv)))
        side.append(np.full(len(Pv), sgn))
        n += len(Pv)
    for Vb, Fb in parts:
        V.append(Vb)
        F.append(Fb + n)
        vertex.append(np.full(len(Vb), -1))
        side.append(np.zeros(len(Vb)))
        n += len(Vb)
    return np.vstack(V), np.vstack(F), np.concatenate(vertex), np.concatenate(side)


def plug_surface(spec: PlugSpec, y_half: float) -> tuple[np.ndarray, np.ndarray]:
    """The plug the view draws, its frame: the head and the neck prisms over y in [-y_half, y_half]."""
    V, F, n = [], [], 0
    for poly in spec.polygons():
        Vp, Fp = prism_mesh(poly, -y_half, y_half)
        V.append(Vp)
        F.append(Fp + n)
        n += len(Vp)
    return np.vstack(V), np.vstack(F)
