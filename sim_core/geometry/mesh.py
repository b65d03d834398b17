"""Closed, outward-oriented triangle meshes of the parts in ``profiles.py``.

Every mesh is built by sampling the part's own radius functions, so every vertex lies
exactly (to rounding) on the analytic surface:

* peg, hole (solids of revolution): the closed (r, z) profile polygon is revolved with
  ``n_theta`` uniform angles; long profile edges are subdivided (every profile corner kept
  exactly), profile points on the axis collapse into one fan vertex.
* bolt: ``n_theta`` vertical *columns* of vertices at uniform angles theta_i; column i
  holds z samples at every kink of z -> R(theta_i, z) (ends, run-out/chamfer breakpoints,
  thread breakpoints shifted onto the helix, and the crossings where the max/min in R
  switches), so each column polyline *is* the exact surface curve at theta_i.  Samples
  that are not kinks are pruned, then intervals longer than the target edge length are
  split evenly.  Adjacent columns are joined by a zipper triangulation; the end caps are
  fans to a centre vertex.
* nut: the bore is meshed in columns like the bolt (normals pointing into the bore), the
  hexagon's vertices sit at the same angles (``n_theta`` a multiple of 12, so the six
  corners are among them), and the end faces are quads bore vertex -> hex vertex.

``mesh_part(spec, target_triangles)`` chooses the resolution: one length ``s`` is the
angular spacing at the part's outer radius and the longest allowed profile/column edge
(triangles roughly isotropic); ``s`` is found by bisection and the number of angles is then
tuned so that the triangle count is close to the target.  All of it is deterministic.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim_core.geometry.profiles import BoltSpec, HoleSpec, NutSpec, PegSpec, thread_radius

# Column z samples closer than this (m) are merged (the lower one is kept); the column
# polyline then misses R by at most |dR/dz| * Z_MERGE (< 2e-10 m).  It only happens when a
# crossing falls within 0.1 nm of a breakpoint; it avoids needle triangles.
Z_MERGE = 1e-10
# A column sample whose R deviates less than this (m) from the chord of its neighbours is
# not a kink and is pruned (rounding in R is ~1e-17 m, so real kinks are never lost).
KINK_TOL = 1e-13
# Longest profile/column edge as a multiple of the angular spacing at the outer radius
# (1: roughly isotropic triangles and vertex spacing, which the point-based contact wants).
EDGE_ASPECT = 1.0
MIN_THETA = 8            # fewest angles for a solid of revolution or a bolt
_N_PROBE = 8             # columns sampled to estimate the count per column


@dataclass(frozen=True)
class TriMesh:
    """Triangle mesh in the part frame (metres); faces counter-clockwise seen from outside."""
    vertices: np.ndarray  # (V, 3) float64
    faces: np.ndarray     # (F, 3) int64

    def __post_init__(self):
        v = np.ascontiguousarray(self.vertices, dtype=np.float64)
        f = np.ascontiguousarray(self.faces, dtype=np.int64)
        if v.ndim != 2 or v.shape[1] != 3:
            raise ValueError(f"TriMesh: vertices must have shape (V, 3), got {v.shape}")
        if f.ndim != 2 or f.shape[1] != 3:
            raise ValueError(f"TriMesh: faces must have shape (F, 3), got {f.shape}")
        object.__setattr__(self, "vertices", v)
        object.__setattr__(self, "faces", f)

    @property
    def n_vertices(self) -> int:
        return int(self.vertices.shape[0])

    @property
    def n_faces(self) -> int:
        return int(self.faces.shape[0])

    def volume(self) -> float:
        """Signed volume (positive for a closed outward-oriented mesh)."""
        return signed_volume(self)


# ----------------------------------------------------------------------------- dispatch

def mesh_part(spec, target_triangles: int = 5000) -> TriMesh:
    """Mesh of a part spec with about `target_triangles` triangles (deterministic)."""
    target = int(target_triangles)
    if target < 1:
        raise ValueError(f"target_triangles must be positive, got {target_triangles!r}")
    if isinstance(spec, (PegSpec, HoleSpec)):
        n_theta, max_edge = plan_revolution(spec.profile(), target)
        return mesh_revolution(spec.profile(), n_theta, max_edge)
    if isinstance(spec, BoltSpec):
        n_theta, max_dz = plan_bolt(spec, target)
        return mesh_bolt(spec, n_theta, max_dz)
    if isinstance(spec, NutSpec):
        n_theta, max_dz = plan_nut(spec, target)
        return mesh_nut(spec, n_theta, max_dz)
    raise TypeError(f"mesh_part: unsupported part spec {type(spec).__name__}")


def part_kind(spec) -> str:
    """'peg' | 'hole' | 'bolt' | 'nut'."""
    for cls, kind in ((PegSpec, "peg"), (HoleSpec, "hole"), (BoltSpec, "bolt"), (NutSpec, "nut")):
        if isinstance(spec, cls):
            return kind
    raise TypeError(f"unsupported part spec {type(spec).__name__}")


def _bisect_resolution(count, target: int, s_lo: float, s_hi: float) -> float:
    """Largest s (edge length) whose estimated count reaches `target` (count decreases in s)."""
    if count(s_hi) >= target:
        return s_hi
    if count(s_lo) < target:
        return s_lo
    lo, hi = math.log(s_lo), math.log(s_hi)     # count(e^lo) >= target > count(e^hi)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if count(math.exp(mid)) >= target:
            lo = mid
        else:
            hi = mid
    return math.exp(lo)


def _n_from_slope(per_theta: float, fixed: float, target: int, multiple: int, minimum: int) -> int:
    """n (a multiple of `multiple`, >= minimum) with n * per_theta + fixed closest to target."""
    k = max(1, round((target - fixed) / (per_theta * multiple)))
    return max(minimum, multiple * k)


# ---------------------------------------------------------------- solids of revolution

def _profile_chain(profile: np.ndarray, max_edge: float) -> tuple[np.ndarray, bool]:
    """Subdivided profile points in traversal order, and whether the chain is closed.

    An open chain starts and ends on the axis (the axis edge of the polygon is dropped)."""
    P = np.asarray(profile, dtype=np.float64)
    n = len(P)
    if P.ndim != 2 or P.shape[1] != 2 or n < 3:
        raise ValueError("profile must be an (n >= 3, 2) array of (r, z)")
    if np.any(P[:, 0] < 0):
        raise ValueError("profile has negative radii")
    on_axis = P[:, 0] == 0.0
    axis_edges = [k for k in range(n) if on_axis[k] and on_axis[(k + 1) % n]]
    if len(axis_edges) > 1:
        raise ValueError("profile touches the axis along more than one edge")
    if axis_edges:
        start = (axis_edges[0] + 1) % n
        chain = P[[(start + j) % n for j in range(n)]]
        closed = False
        if np.any(chain[1:-1, 0] == 0.0):
            raise ValueError("profile touches the axis inside the chain (non-manifold)")
    else:
        chain = P
        closed = True
        if np.any(on_axis):
            raise ValueError("profile touches the axis at an isolated vertex (non-manifold)")
    n_edges = n if closed else n - 1
    pts = []
    for k in range(n_edges):
        a, b = chain[k], chain[(k + 1) % n]
        length = math.hypot(b[0] - a[0], b[1] - a[1])
        if length == 0.0:
            raise ValueError("profile has a zero-length edge")
        m = max(1, math.ceil(length / max_edge - 1e-9))
        t = np.arange(m, dtype=np.float64) / m
        pts.append(a + t[:, None] * (b - a))     # t = 0 gives the corner exactly
    if not closed:
        pts.append(chain[-1:])
    return np.concatenate(pts), closed


def _profile_area(profile: np.ndarray) -> float:
    P = np.asarray(profile, dtype=np.float64)
    r, z = P[:, 0], P[:, 1]
    return 0.5 * float(np.sum(r * np.roll(z, -1) - np.roll(r, -1) * z))


def _revolution_faces_per_theta(chain: np.ndarray, closed: bool) -> int:
    r = chain[:, 0]
    nxt = np.roll(r, -1) if closed else r[1:]
    cur = r if closed else r[:-1]
    fan = (cur == 0) | (nxt == 0)
    return int(np.sum(np.where(fan, 1, 2)))


def plan_revolution(profile: np.ndarray, target: int) -> tuple[int, float]:
    """(n_theta, max_edge) for about `target` triangles."""
    r_max = float(np.max(np.asarray(profile)[:, 0]))

    def n_of(s):
        return max(MIN_THETA, math.ceil(2 * math.pi * r_max / s))

    def count(s):
        chain, closed = _profile_chain(profile, EDGE_ASPECT * s)
        return n_of(s) * _revolution_faces_per_theta(chain, closed)

    s = _bisect_resolution(count, target, 1e-3 * r_max, 10.0 * r_max)
    max_edge = EDGE_ASPECT * s
    chain, closed = _profile_chain(profile, max_edge)
    n_theta = _n_from_slope(_revolution_faces_per_theta(chain, closed), 0.0, target, 1, MIN_THETA)
    return n_theta, max_edge


def _angles(n_theta: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """theta_i = 2 pi i / n and their cos/sin.  The scalar libm functions are used rather
    than numpy's (possibly SIMD-dispatched, CPU-dependent) ones so that the assets are
    reproducible bit for bit across machines as far as the platform's libm allows."""
    theta = 2.0 * math.pi * np.arange(n_theta, dtype=np.float64) / n_theta
    cos_t = np.array([math.cos(t) for t in theta.tolist()], dtype=np.float64)
    sin_t = np.array([math.sin(t) for t in theta.tolist()], dtype=np.float64)
    return theta, cos_t, sin_t


def mesh_revolution(profile: np.ndarray, n_theta: int, max_edge: float) -> TriMesh:
    """Revolve a closed (r, z) profile polygon about z.

    The polygon is either a closed loop off the axis (annulus, e.g. the hole) or touches
    the axis along one edge (e.g. the peg), whose end points become single fan vertices."""
    n_theta = int(n_theta)
    if n_theta < 3:
        raise ValueError("n_theta must be >= 3")
    chain, closed = _profile_chain(profile, max_edge)
    _, cos_t, sin_t = _angles(n_theta)
    n_pts = len(chain)
    axis = chain[:, 0] == 0.0
    sizes = np.where(axis, 1, n_theta)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    verts = []
    for j in range(n_pts):
        r, z = chain[j]
        if axis[j]:
            verts.append(np.array([[0.0, 0.0, z]]))
        else:
            verts.append(np.stack([r * cos_t, r * sin_t, np.full(n_theta, z)], axis=1))
    i = np.arange(n_theta, dtype=np.int64)
    i1 = (i + 1) % n_theta
    faces = []
    pairs = [(j, j + 1) for j in range(n_pts - 1)] + ([(n_pts - 1, 0)] if closed else [])
    for ja, jb in pairs:
        # A -> B runs along the profile with the material on its left: the quad
        # A_i, A_i+1, B_i+1, B_i is counter-clockwise seen from outside.
        if axis[ja] and axis[jb]:
            raise ValueError("profile edge along the axis inside the chain")
        if axis[ja]:
            a = offsets[ja]
            B = offsets[jb] + i
            B1 = offsets[jb] + i1
            faces.append(np.stack([np.full(n_theta, a), B1, B], axis=1))
        elif axis[jb]:
            A = offsets[ja] + i
            A1 = offsets[ja] + i1
            faces.append(np.stack([A, A1, np.full(n_theta, offsets[jb])], axis=1))
        else:
            A, A1 = offsets[ja] + i, offsets[ja] + i1
            B, B1 = offsets[jb] + i, offsets[jb] + i1
            quad = np.empty((n_theta, 2, 3), dtype=np.int64)
            quad[:, 0] = np.stack([A, A1, B1], axis=1)
            quad[:, 1] = np.stack([A, B1, B], axis=1)
            faces.append(quad.reshape(-1, 3))
    F = np.concatenate(faces).astype(np.int64)
    if _profile_area(profile) < 0:      # clockwise profile: material on the right
        F = F[:, [0, 2, 1]]
    return TriMesh(np.concatenate(verts), F)


# -------------------------------------------------------------------- column sampling

def _sample_column(theta: float, z_lo: float, z_hi: float, breaks: np.ndarray, components,
                   radius, max_dz: float) -> tuple[np.ndarray, np.ndarray]:
    """Sorted z samples of one column and R there.

    `breaks`: every kink of every component function (any order, may fall outside);
    `components(theta, z)` -> (k, len(z)) values of the k piecewise-linear functions that R
    is a min/max of; `radius(theta, z)` -> R.  Returns the kinks of R (ends included) plus
    even subdivisions of intervals longer than `max_dz`."""
    b = np.asarray(breaks, dtype=np.float64)
    b = np.sort(b[(b > z_lo + Z_MERGE) & (b < z_hi - Z_MERGE)])
    z = np.concatenate([[z_lo], b, [z_hi]])
    z = z[np.concatenate([[True], np.diff(z) > Z_MERGE])]
    if z[-1] != z_hi:
        z[-1] = z_hi
    # crossings of every pair of components (each linear between consecutive breaks)
    V = components(theta, z)
    dz = np.diff(z)
    extra = []
    for a in range(len(V)):
        for c in range(a + 1, len(V)):
            d = V[a] - V[c]
            s = d[:-1] * d[1:] < 0
            if np.any(s):
                d0, d1 = d[:-1][s], d[1:][s]
                extra.append(z[:-1][s] + dz[s] * (d0 / (d0 - d1)))
    if extra:
        zc = np.concatenate(extra)
        zz = np.sort(np.concatenate([z[1:-1], zc[(zc > z_lo + Z_MERGE) & (zc < z_hi - Z_MERGE)]]))
        z = np.concatenate([[z_lo], zz, [z_hi]])
        z = z[np.concatenate([[True], np.diff(z) > Z_MERGE])]
        if z[-1] != z_hi:
            z[-1] = z_hi
    R = radius(theta, z)
    # prune samples that are not kinks of R (collinear with their neighbours)
    if len(z) > 2:
        z0, z1, z2 = z[:-2], z[1:-1], z[2:]
        r0, r1, r2 = R[:-2], R[1:-1], R[2:]
        dev = r1 - (r0 + (r2 - r0) * ((z1 - z0) / (z2 - z0)))
        keep = np.concatenate([[True], np.abs(dev) > KINK_TOL, [True]])
        z, R = z[keep], R[keep]
    # split long intervals evenly
    m = np.maximum(1, np.ceil(np.diff(z) / max_dz - 1e-9).astype(np.int64))
    if np.any(m > 1):
        start = np.repeat(z[:-1], m)
        step = np.repeat(np.diff(z) / m, m)
        j = np.arange(int(m.sum())) - np.repeat(np.cumsum(m) - m, m)
        zn = start + j * step                  # j = 0 gives the kink exactly
        z = np.concatenate([zn, z[-1:]])
        R = radius(theta, z)
    return z, R


def _zipper(ia: np.ndarray, za: np.ndarray, ib: np.ndarray, zb: np.ndarray) -> np.ndarray:
    """Strip triangles between column a (angle theta_i) and column b (theta_i+1), both sorted
    by z, outward (radially) oriented: advance the side whose next vertex is lower."""
    na, nb = len(za), len(zb)
    side = np.concatenate([np.zeros(na - 1, dtype=np.int64), np.ones(nb - 1, dtype=np.int64)])
    order = np.lexsort((side, np.concatenate([za[1:], zb[1:]])))   # by z, ties: a first
    s = side[order]
    adv_a = s == 0
    a = np.cumsum(adv_a) - adv_a
    b = np.cumsum(~adv_a) - (~adv_a)
    third = np.where(adv_a, ia[np.minimum(a + 1, na - 1)], ib[np.minimum(b + 1, nb - 1)])
    return np.stack([ia[a], ib[b], third], axis=1)


def _columns(n_theta: int, sampler) -> tuple[list, list, np.ndarray, np.ndarray, np.ndarray]:
    theta, cos_t, sin_t = _angles(n_theta)
    zs, rs = [], []
    for th in theta:
        z, R = sampler(float(th))
        zs.append(z)
        rs.append(R)
    return zs, rs, theta, cos_t, sin_t


def _column_mesh(zs, rs, cos_t, sin_t, inward: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vertices of all columns, zipper faces, and the start offset of every column."""
    n = len(zs)
    sizes = np.array([len(z) for z in zs], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    V = np.empty((int(offsets[-1]), 3), dtype=np.float64)
    for i in range(n):
        sl = slice(offsets[i], offsets[i + 1])
        V[sl, 0] = rs[i] * cos_t[i]
        V[sl, 1] = rs[i] * sin_t[i]
        V[sl, 2] = zs[i]
    faces = []
    for i in range(n):
        j = (i + 1) % n
        ia = np.arange(offsets[i], offsets[i + 1], dtype=np.int64)
        ib = np.arange(offsets[j], offsets[j + 1], dtype=np.int64)
        faces.append(_zipper(ia, zs[i], ib, zs[j]))
    F = np.concatenate(faces)
    if inward:
        F = F[:, [0, 2, 1]]
    return V, F, offsets


# ------------------------------------------------------------------------------- bolt

def _bolt_sampler(spec: BoltSpec, max_dz: float):
    t = spec.thread
    L = spec.length
    z0, z1 = spec.runout_start, spec.runout_start + spec.runout_length
    z_env = L + spec.tip_radius - 2.0 * spec.r_major      # kink of E (min with 2 r_major)
    fixed = np.array([z0, z1, spec.chamfer_start, z_env])
    bps = t.breakpoints()
    ks = np.arange(math.floor(-1.0 - (bps.max() + t.p) / t.p), math.ceil(L / t.p + 2.0) + 1)
    rel = (ks[:, None] * t.p + bps[None, :]).ravel()

    def components(theta, z):
        return np.stack([thread_radius(z - t.c * theta, spec.r_major, spec.r_root, t.p),
                         spec.core_radius(z), spec.envelope_radius(z)])

    def sampler(theta):
        breaks = np.concatenate([fixed, t.c * theta + rel])
        return _sample_column(theta, 0.0, L, breaks, components, spec.radius, max_dz)

    return sampler


def _mean_column_size(sampler) -> float:
    theta, _, _ = _angles(_N_PROBE)
    return float(np.mean([len(sampler(float(th))[0]) for th in theta]))


def plan_bolt(spec: BoltSpec, target: int) -> tuple[int, float]:
    """(n_theta, max_dz): triangles = 2 * sum of column sizes."""
    r = spec.r_major

    def n_of(s):
        return max(MIN_THETA, math.ceil(2 * math.pi * r / s))

    def count(s):
        return 2.0 * n_of(s) * _mean_column_size(_bolt_sampler(spec, EDGE_ASPECT * s))

    s = _bisect_resolution(count, target, 1e-3 * r, 10.0 * spec.length)
    max_dz = EDGE_ASPECT * s
    per = 2.0 * _mean_column_size(_bolt_sampler(spec, max_dz))
    return _n_from_slope(per, 0.0, target, 1, MIN_THETA), max_dz


def mesh_bolt(spec: BoltSpec, n_theta: int, max_dz: float) -> TriMesh:
    """Bolt lateral surface in `n_theta` columns (z in [0, length]) plus two capping fans."""
    n_theta = int(n_theta)
    if n_theta < 3:
        raise ValueError("n_theta must be >= 3")
    zs, rs, _, cos_t, sin_t = _columns(n_theta, _bolt_sampler(spec, max_dz))
    V, F, offsets = _column_mesh(zs, rs, cos_t, sin_t, inward=False)
    nv = len(V)
    bottom = offsets[:-1]                       # z = 0 vertex of every column
    top = offsets[1:] - 1                       # z = length vertex
    nxt = np.roll(np.arange(n_theta), -1)
    cb, ct = nv, nv + 1
    caps_b = np.stack([np.full(n_theta, cb), bottom[nxt], bottom], axis=1)
    caps_t = np.stack([np.full(n_theta, ct), top, top[nxt]], axis=1)
    V = np.concatenate([V, [[0.0, 0.0, 0.0], [0.0, 0.0, spec.length]]])
    return TriMesh(V, np.concatenate([F, caps_b, caps_t]))


# -------------------------------------------------------------------------------- nut

def _nut_sampler(spec: NutSpec, max_dz: float):
    t = spec.thread
    h2 = spec.height / 2
    bps = t.breakpoints()
    ks = np.arange(math.floor((-h2 - bps.max() - t.p) / t.p) - 1, math.ceil((h2 + t.p) / t.p) + 2)
    rel = (ks[:, None] * t.p + bps[None, :]).ravel()
    fixed = np.array([0.0])                     # kink of the countersink function K

    def components(theta, z):
        return np.stack([thread_radius(z - t.c * theta, spec.r_root, spec.r_crest, t.p),
                         spec.countersink(z)])

    def sampler(theta):
        breaks = np.concatenate([fixed, t.c * theta + rel])
        return _sample_column(theta, -h2, h2, breaks, components, spec.bore_radius, max_dz)

    return sampler


def plan_nut(spec: NutSpec, target: int) -> tuple[int, float]:
    """(n_theta, max_dz): triangles = 2 * sum of bore column sizes + 4 n_theta."""
    r = spec.r_root

    def n_of(s):
        return 12 * max(1, math.ceil(2 * math.pi * r / s / 12))

    def count(s):
        return n_of(s) * (2.0 * _mean_column_size(_nut_sampler(spec, EDGE_ASPECT * s)) + 4.0)

    s = _bisect_resolution(count, target, 1e-3 * r, 10.0 * spec.height)
    max_dz = EDGE_ASPECT * s
    per = 2.0 * _mean_column_size(_nut_sampler(spec, max_dz)) + 4.0
    return _n_from_slope(per, 0.0, target, 12, 12), max_dz


def mesh_nut(spec: NutSpec, n_theta: int, max_dz: float) -> TriMesh:
    """Hex nut: bore columns (normals into the bore), hex sides, annular end faces."""
    n_theta = int(n_theta)
    if n_theta < 12 or n_theta % 12:
        raise ValueError(f"n_theta must be a positive multiple of 12, got {n_theta}")
    zs, rs, theta, cos_t, sin_t = _columns(n_theta, _nut_sampler(spec, max_dz))
    V, F, offsets = _column_mesh(zs, rs, cos_t, sin_t, inward=True)
    h2 = spec.height / 2
    # spec.hex_radius evaluated with scalar libm cos (see _angles)
    half_flats = spec.across_flats / 2
    a = np.mod(theta + math.pi / 6, math.pi / 3) - math.pi / 6
    rh = np.array([half_flats / math.cos(x) for x in a.tolist()], dtype=np.float64)
    nv = len(V)
    hb = nv + np.arange(n_theta, dtype=np.int64)            # hex, z = -h/2
    ht = nv + n_theta + np.arange(n_theta, dtype=np.int64)  # hex, z = +h/2
    hexv = np.concatenate([
        np.stack([rh * cos_t, rh * sin_t, np.full(n_theta, -h2)], axis=1),
        np.stack([rh * cos_t, rh * sin_t, np.full(n_theta, h2)], axis=1)])
    nxt = np.roll(np.arange(n_theta), -1)
    bb = offsets[:-1]                           # bore vertex at z = -h/2
    bt = offsets[1:] - 1                        # bore vertex at z = +h/2
    sides = np.concatenate([np.stack([hb, hb[nxt], ht[nxt]], axis=1),
                            np.stack([hb, ht[nxt], ht], axis=1)])
    top = np.concatenate([np.stack([bt, ht, ht[nxt]], axis=1),
                          np.stack([bt, ht[nxt], bt[nxt]], axis=1)])
    bottom = np.concatenate([np.stack([bb, hb[nxt], hb], axis=1),
                             np.stack([bb, bb[nxt], hb[nxt]], axis=1)])
    return TriMesh(np.concatenate([V, hexv]), np.concatenate([F, sides, top, bottom]))


# ------------------------------------------------------------------ mass and checks

def signed_volume(mesh: TriMesh) -> float:
    v = mesh.vertices
    ref = v.mean(axis=0) if len(v) else np.zeros(3)
    a, b, c = (v[mesh.faces[:, k]] - ref for k in range(3))
    return float(np.sum(np.einsum("ij,ij->i", a, np.cross(b, c)))) / 6.0


def mass_properties(mesh: TriMesh, density: float) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass kg, centre of mass (3,), 3x3 inertia tensor about the COM) of the closed mesh
    as a homogeneous solid, exact for the polyhedron (signed tetrahedra to a reference)."""
    v = mesh.vertices
    ref = v.mean(axis=0)
    a, b, c = (v[mesh.faces[:, k]] - ref for k in range(3))
    d6 = np.einsum("ij,ij->i", a, np.cross(b, c))          # 6 x signed tet volume
    vol = float(d6.sum()) / 6.0
    if not vol > 0:
        raise ValueError(f"mass_properties: mesh volume {vol!r} is not positive")
    s = a + b + c
    first = (d6[:, None] * s).sum(axis=0) / 24.0
    # int x x^T over tet (0, a, b, c) = vol/20 (aa^T + bb^T + cc^T + ss^T)
    w = d6 / 120.0
    S = (np.einsum("i,ij,ik->jk", w, a, a) + np.einsum("i,ij,ik->jk", w, b, b)
         + np.einsum("i,ij,ik->jk", w, c, c) + np.einsum("i,ij,ik->jk", w, s, s))
    com_rel = first / vol
    S_com = S - vol * np.outer(com_rel, com_rel)
    inertia = density * (np.trace(S_com) * np.eye(3) - S_com)
    inertia = 0.5 * (inertia + inertia.T)
    return density * vol, ref + com_rel, inertia


def check_closed_oriented(mesh: TriMesh) -> None:
    """Raise ValueError unless the mesh is a watertight, consistently outward-oriented
    2-manifold (edges and vertex links) without unused/duplicate vertices or degenerate
    triangles, with positive volume."""
    v, f = mesh.vertices, mesh.faces
    nv, nf = len(v), len(f)
    if nf < 4 or nv < 4:
        raise ValueError(f"mesh too small ({nv} vertices, {nf} faces)")
    if not np.all(np.isfinite(v)):
        raise ValueError("mesh has non-finite vertex coordinates")
    if f.min() < 0 or f.max() >= nv:
        raise ValueError("face index out of range")
    used = np.zeros(nv, dtype=bool)
    used[f.ravel()] = True
    if not used.all():
        raise ValueError(f"vertex {int(np.argmin(used))} is not used by any face")
    if len(np.unique(v, axis=0)) != nv:
        raise ValueError("mesh has duplicate vertices")
    a, b, c = f[:, 0], f[:, 1], f[:, 2]
    bad = (a == b) | (b == c) | (c == a)
    if bad.any():
        raise ValueError(f"face {int(np.argmax(bad))} repeats a vertex")
    p0, p1, p2 = v[a], v[b], v[c]
    cr = np.linalg.norm(np.cross(p1 - p0, p2 - p0), axis=1)
    longest = np.max(np.stack([np.sum((p1 - p0) ** 2, 1), np.sum((p2 - p1) ** 2, 1),
                               np.sum((p0 - p2) ** 2, 1)]), axis=0)
    degenerate = cr <= 1e-12 * longest
    if degenerate.any():
        raise ValueError(f"face {int(np.argmax(degenerate))} is degenerate (zero area)")
    # directed edges: each used once, each with its reverse present
    src = f.ravel()
    dst = np.roll(f, -1, axis=1).ravel()
    key = src * nv + dst
    order = np.argsort(key, kind="stable")
    ks = key[order]
    dup = ks[1:] == ks[:-1]
    if dup.any():
        e = int(ks[1:][dup][0])
        raise ValueError(f"directed edge ({e // nv}, {e % nv}) used twice "
                         "(non-manifold edge or inconsistent orientation)")
    rkey = dst * nv + src
    pos = np.searchsorted(ks, rkey)
    pos_c = np.minimum(pos, len(ks) - 1)
    has_rev = ks[pos_c] == rkey
    if not has_rev.all():
        k = int(np.argmin(has_rev))
        raise ValueError(f"edge ({int(src[k])}, {int(dst[k])}) has no opposite half-edge "
                         "(hole in the surface or inconsistent orientation)")
    # vertex links: the corners around each vertex must form one cycle
    # corner k (= face k // 3, at vertex src[k]) -> corner whose directed edge is src -> prev
    prev = np.roll(f, 1, axis=1).ravel()
    succ = order[np.searchsorted(ks, src * nv + prev)]
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    n_corner = len(src)
    g = coo_matrix((np.ones(n_corner, dtype=np.int8), (np.arange(n_corner), succ)),
                   shape=(n_corner, n_corner))
    n_cycles, _ = connected_components(g, directed=True, connection="weak")
    if n_cycles != nv:
        raise ValueError(f"mesh is not a 2-manifold at the vertices ({n_cycles} corner cycles "
                         f"for {nv} vertices)")
    vol = signed_volume(mesh)
    if not vol > 0:
        raise ValueError(f"mesh volume {vol!r} is not positive (inward orientation?)")
