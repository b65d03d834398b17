"""Exact SDFs (sim_core/geometry/sdf.py) against closed forms, an independent plain-NumPy
reference of the same formula, a fine mesh (python-fcl), finite differences and the thread's
helical symmetry.  The long versions are marked slow (``pytest -m slow``)."""
import math
import time

import fcl
import numba as nb
import numpy as np
import pytest

from sim_core.geometry.mesh import mesh_part
from sim_core.geometry.profiles import BoltSpec, HoleSpec, NutSpec, PegSpec, all_parts, thread_radius
from sim_core.geometry.sdf import BoltSDF, HoleSDF, exact_sdf

MM = 1e-3

# --- tolerances --------------------------------------------------------------------------
# Same formula, two implementations: both minimise to rounding (~1e-17 m); 1e-12 m leaves
# room for the Brent tolerance of the kernel (its distance error is ~1e-20 m) and for the
# zoom search of the reference.
REF_TOL = 1e-12
# Closed forms: rounding of coordinates of ~0.1 m (ulp 1.4e-17).
EXACT_TOL = 1e-14
# |grad| = 1: the gradient is a normalised vector.
UNIT_TOL = 1e-12
# Central differences with step FD_STEP at points >= 0.1 mm from the surface: truncation
# ~ FD_STEP^2 / (6 * 0.1 mm)^2 ~ 2e-7 at worst (next to an edge, where the level sets are
# tubes of radius d), rounding ~ 1e-17 / FD_STEP = 1e-10; the kernel's gradient itself is
# exact to ~1e-8 (observed max |fd - grad| ~ 5e-8).
FD_STEP = 1e-7
FD_TOL = 1e-6
# A point counts as "away from kinks" when its central-difference gradient has unit norm to
# this (across a medial axis / crease the difference quotient is visibly shorter than 1).
FD_SMOOTH = 1e-7
# Helical invariance: both queries are exact to rounding.
SCREW_TOL = 1e-12
# The mesh comparison tolerance is MESH_MARGIN x the mesh's own measured deviation (see
# _mesh_deviation): |d_exact - d_mesh| <= Hausdorff(surface, mesh); the mesh interpolates
# the surface (all vertices on it), so the surface->mesh and mesh->surface deviations are
# the same chordal error, and the deviation bound is itself an upper bound (<= 2x) of it.
MESH_MARGIN = 1.5
# Points whose sign is compared with the mesh winding number keep at least this multiple of
# the coarse mesh's deviation away from the surface (closer, the mesh may disagree legally).
SIGN_MARGIN = 3.0
NEAR = 2 * MM                      # "near the surface": |d| <= 2 mm

slow = pytest.mark.slow


@pytest.fixture(scope="module")
def bolt():
    return BoltSpec()


@pytest.fixture(scope="module")
def bolt_sdf(bolt):
    return exact_sdf(bolt)


@pytest.fixture(scope="module")
def hole():
    return HoleSpec()


@pytest.fixture(scope="module")
def hole_sdf(hole):
    return exact_sdf(hole)


def _cyl(r, th, z):
    return np.stack([r * np.cos(th), r * np.sin(th), z], axis=-1)


# ------------------------------------------------------------------------------------------
# Plain-NumPy reference of the same formula (independent code path: full polyline from the
# profile's own functions, vectorised over phi, dense scan + zoom refinement, asin range).
# ------------------------------------------------------------------------------------------

def _ref_g(spec: BoltSpec, rho, theta, z, phis, w):
    """g(phi) = rho^2 sin^2 phi + D_{theta+phi}(rho cos phi, z)^2 for an array of phi, D to the
    section boundary restricted to |z' - z| <= w (inf where that part is empty)."""
    t = spec.thread
    p, c, L = t.p, t.c, spec.length
    phis = np.atleast_1d(np.asarray(phis, dtype=np.float64))
    n = len(phis)
    al = theta + phis
    x = rho * np.cos(phis)
    zlo, zhi = max(0.0, z - w), min(L, z + w)
    if zlo > zhi:
        return np.full(n, np.inf)
    b = t.breakpoints()
    s = c * al
    ks = np.arange(math.floor((zlo - s.max() - b.max()) / p) - 1,
                   math.ceil((zhi - s.min() - b.min()) / p) + 2)
    tk = (s[:, None, None] + b[None, None, :] + p * ks[None, :, None]).reshape(n, -1)
    fixed = np.array([spec.runout_start, spec.runout_start + spec.runout_length,
                      L + spec.tip_radius - float(spec.envelope_radius(-1e9))])
    Z = np.concatenate([tk, np.broadcast_to(fixed, (n, 3)), np.full((n, 2), [zlo, zhi])], 1)
    Z = np.sort(np.clip(Z, zlo, zhi), axis=1)
    za, zb = Z[:, :-1], Z[:, 1:]
    funcs = [lambda zz: thread_radius(zz - s[:, None], spec.r_major, spec.r_root, p),
             spec.core_radius, spec.envelope_radius]
    Fa = [f(za) for f in funcs]
    Fb = [f(zb) for f in funcs]
    cross = []
    for i, j in ((0, 1), (0, 2), (1, 2)):     # where the min / max may switch pieces
        fa, fb = Fa[i] - Fa[j], Fb[i] - Fb[j]
        with np.errstate(divide="ignore", invalid="ignore"):
            cross.append(np.where(fa * fb < 0, fa / (fa - fb), 0.0))
    T = np.sort(np.stack([np.zeros_like(za)] + cross + [np.ones_like(za)], -1), -1)
    V = za[..., None] + T * (zb - za)[..., None]           # polyline vertices' z
    Rv = spec.radius(al[:, None, None], V)                 # ... and r, from the profile
    ar, az = Rv[..., :-1].reshape(n, -1), V[..., :-1].reshape(n, -1)
    br, bz = Rv[..., 1:].reshape(n, -1), V[..., 1:].reshape(n, -1)
    for zc in (0.0, L):                                    # the caps
        if zlo <= zc <= zhi and (zc == zlo or zc == zhi):
            zcol = np.full((n, 1), zc)
            ar = np.concatenate([ar, np.zeros((n, 1))], 1)
            az = np.concatenate([az, zcol], 1)
            br = np.concatenate([br, spec.radius(al, zc)[:, None]], 1)
            bz = np.concatenate([bz, zcol], 1)
    dr, dz = br - ar, bz - az
    l2 = dr * dr + dz * dz
    with np.errstate(divide="ignore", invalid="ignore"):
        tp = np.clip(np.where(l2 > 0, ((x[:, None] - ar) * dr + (z - az) * dz) / l2, 0.0), 0, 1)
    d2 = (x[:, None] - ar - tp * dr) ** 2 + (z - az - tp * dz) ** 2
    return (rho * np.sin(phis)) ** 2 + d2.min(axis=1)


def ref_bolt_sdf(spec: BoltSpec, q, n_dense=401, n_cand=3) -> float:
    x, y, z = map(float, q)
    rho = math.hypot(x, y)
    theta = math.atan2(y, x) if rho > 0 else 0.0
    L = spec.length
    zc = min(max(z, 0.0), L)
    w_init = math.hypot(rho - float(spec.radius(theta, zc)), z - zc)  # a surface point
    best = float(_ref_g(spec, rho, theta, z, [0.0], w_init * (1 + 1e-9) + 1e-300)[0])
    w0 = math.sqrt(best)
    if w0 > 0:
        if w0 < rho:
            half = math.asin(w0 / rho)
            ph = np.linspace(-half, half, n_dense)
        else:
            half = math.pi
            ph = np.linspace(-math.pi, math.pi, 2 * n_dense)
        W = w0 * (1 + 1e-9)
        g = _ref_g(spec, rho, theta, z, ph, W)
        h = ph[1] - ph[0]
        loc = [i for i in range(len(g))
               if g[i] <= g[max(i - 1, 0)] and g[i] <= g[min(i + 1, len(g) - 1)]]
        for i in sorted(loc, key=lambda i: g[i])[:n_cand]:
            c0, dl, gb = ph[i], h, g[i]
            while dl > 1e-14 * half:                # zoom: 21-point grids shrinking 5x
                pp = np.linspace(c0 - dl, c0 + dl, 21)
                gg = _ref_g(spec, rho, theta, z, pp, W)
                j = int(np.argmin(gg))
                if gg[j] < gb:
                    gb, c0 = gg[j], pp[j]
                dl /= 5
            best = min(best, gb)
    d = math.sqrt(best)
    inside = 0 <= z <= L and rho <= float(spec.radius(theta, z))
    return -d if inside else d


def ref_polygon_sd(profile: np.ndarray, r: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Signed distance to a closed CCW (r, z) polygon: plain NumPy, winding by crossings."""
    a = profile
    b = np.roll(profile, -1, axis=0)
    q = np.stack([r, z], -1)[:, None, :]
    ab = (b - a)[None]
    t = np.clip(((q - a[None]) * ab).sum(-1) / (ab ** 2).sum(-1), 0, 1)
    d = np.sqrt(((q - a[None] - t[..., None] * ab) ** 2).sum(-1)).min(1)
    zr, zz = r[:, None], z[:, None]
    crosses = (a[None, :, 1] > zz) != (b[None, :, 1] > zz)
    with np.errstate(divide="ignore", invalid="ignore"):
        rx = a[None, :, 0] + (zz - a[None, :, 1]) * (b - a)[None, :, 0] / (b - a)[None, :, 1]
    inside = (crosses & (zr < rx)).sum(1) % 2 == 1
    return np.where(inside, -d, d)


# ------------------------------------------------------------------------------------------
# Point sets near the surface (rejection sampling with the SDF only as a filter)
# ------------------------------------------------------------------------------------------

def _near(sdf, gen, n, lo=0.0, hi=NEAR, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    while sum(len(o) for o in out) < n:
        P = gen(rng, 4 * n)
        d, _ = sdf.query(P)
        out.append(P[(np.abs(d) <= hi) & (np.abs(d) >= lo)])
    return np.concatenate(out)[:n]


def bolt_regions(spec: BoltSpec):
    """Generators of points around each region of the bolt (z ranges in metres)."""
    L, z0, z1 = spec.length, spec.runout_start, spec.runout_start + spec.runout_length
    rr, rc = spec.r_root, spec.r_major

    def shell(zlo, zhi, rlo, rhi):
        def gen(rng, n):
            return _cyl(np.sqrt(rng.uniform(rlo ** 2, rhi ** 2, n)),
                        rng.uniform(-np.pi, np.pi, n), rng.uniform(zlo, zhi, n))
        return gen

    return {
        "thread": shell(z1 + 3 * MM, spec.chamfer_start - 3 * MM, rr - 2.5 * MM, rc + 2 * MM),
        "runout": shell(z0 - 3 * MM, z1 + 3 * MM, rr - 2.5 * MM, rc + 2 * MM),
        "tip_chamfer": shell(spec.chamfer_start - 3 * MM, L + 2 * MM, 0.0, rc + 2 * MM),
        "base_cap": shell(-2 * MM, 3 * MM, 0.0, rc + 2 * MM),
    }


def hole_regions(spec: HoleSpec):
    rb, ro, h = spec.bore / 2, spec.outer_diameter / 2, spec.height

    def box(zlo, zhi, rlo, rhi):
        def gen(rng, n):
            return _cyl(np.sqrt(rng.uniform(rlo ** 2, rhi ** 2, n)),
                        rng.uniform(-np.pi, np.pi, n), rng.uniform(zlo, zhi, n))
        return gen

    return {
        "top_chamfer": box(-3 * MM, 2 * MM, rb - 2 * MM, rb + 3 * MM),
        "bottom_chamfer": box(-h - 2 * MM, -h + 3 * MM, rb - 2 * MM, rb + 3 * MM),
        "bore": box(-h + 3 * MM, -3 * MM, rb - 2 * MM, rb + 2 * MM),
        "outer": box(-h - 2 * MM, 2 * MM, ro - 2 * MM, ro + 2 * MM),
    }


# ------------------------------------------------------------------------------------------
# Mesh helpers: own deviation bound, fcl distance, winding-number sign
# ------------------------------------------------------------------------------------------

_BARY = np.array([[1 / 3, 1 / 3, 1 / 3], [.5, .5, 0], [0, .5, .5], [.5, 0, .5],
                  [.25, .25, .5], [.25, .5, .25], [.5, .25, .25],
                  [.7, .15, .15], [.15, .7, .15], [.15, .15, .7]])


def _mesh_deviation(spec, mesh) -> float:
    """Upper bound of the mesh->surface distance at 10 barycentric samples per triangle,
    computed from profiles.py alone (not from the SDF under test): for the bolt the surface
    point (R(theta, z), theta, z) is at most |rho - R| away (a cap-plane sample inside the
    disk is on the surface); for the hole, the exact 2-D distance to the revolved profile."""
    V, F = mesh.vertices, mesh.faces
    dev = 0.0
    for b in _BARY:
        X = b[0] * V[F[:, 0]] + b[1] * V[F[:, 1]] + b[2] * V[F[:, 2]]
        rho = np.hypot(X[:, 0], X[:, 1])
        z = X[:, 2]
        if isinstance(spec, BoltSpec):
            R = spec.radius(np.arctan2(X[:, 1], X[:, 0]), np.clip(z, 0.0, spec.length))
            on_cap = ((np.abs(z) < 1e-12) | (np.abs(z - spec.length) < 1e-12)) & (rho <= R)
            d = np.where(on_cap, np.abs(z - np.clip(z, 0, spec.length)), np.abs(rho - R))
        else:
            d = np.abs(ref_polygon_sd(spec.profile(), rho, z))
        dev = max(dev, float(d.max()))
    return dev


def _fcl_distance(mesh, P) -> np.ndarray:
    """Unsigned distance from points to the triangle soup (python-fcl BVH vs a tiny sphere:
    the soup has no inside, so this is the distance to the surface)."""
    bvh = fcl.BVHModel()
    bvh.beginModel(mesh.n_vertices, mesh.n_faces)
    bvh.addSubModel(mesh.vertices, mesh.faces)
    bvh.endModel()
    mo = fcl.CollisionObject(bvh, fcl.Transform())
    r = 1e-9
    so = fcl.CollisionObject(fcl.Sphere(r), fcl.Transform())
    req = fcl.DistanceRequest()
    out = np.empty(len(P))
    for i, q in enumerate(P):
        so.setTranslation(q)
        d = fcl.distance(mo, so, req, fcl.DistanceResult())
        out[i] = max(d, 0.0) + r
    return out


@nb.njit(parallel=True, cache=False)
def _winding(P, V, F):
    """Generalised winding number (sum of signed solid angles / 4 pi): 1 inside, 0 outside."""
    out = np.zeros(P.shape[0])
    for i in nb.prange(P.shape[0]):
        acc = 0.0
        for f in range(F.shape[0]):
            ax = V[F[f, 0], 0] - P[i, 0]
            ay = V[F[f, 0], 1] - P[i, 1]
            az = V[F[f, 0], 2] - P[i, 2]
            bx = V[F[f, 1], 0] - P[i, 0]
            by = V[F[f, 1], 1] - P[i, 1]
            bz = V[F[f, 1], 2] - P[i, 2]
            cx = V[F[f, 2], 0] - P[i, 0]
            cy = V[F[f, 2], 1] - P[i, 1]
            cz = V[F[f, 2], 2] - P[i, 2]
            la = math.sqrt(ax * ax + ay * ay + az * az)
            lb = math.sqrt(bx * bx + by * by + bz * bz)
            lc = math.sqrt(cx * cx + cy * cy + cz * cz)
            det = ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
            den = (la * lb * lc + (ax * bx + ay * by + az * bz) * lc
                   + (bx * cx + by * cy + bz * cz) * la + (cx * ax + cy * ay + cz * az) * lb)
            acc += 2.0 * math.atan2(det, den)
        out[i] = acc / (4.0 * math.pi)
    return out


def _mesh_check(spec, sdf, P, n_fine, n_coarse, label):
    d, _ = sdf.query(P)
    fine = mesh_part(spec, n_fine)
    dev = _mesh_deviation(spec, fine)
    tol = MESH_MARGIN * dev
    dm = _fcl_distance(fine, P)
    err = np.abs(np.abs(d) - dm)
    print(f"\n[{label}] fine mesh {fine.n_faces} faces, deviation bound {dev * 1e6:.2f} um, "
          f"tol {tol * 1e6:.2f} um; max |d_exact - d_mesh| = {err.max() * 1e6:.3f} um "
          f"over {len(P)} points with |d| <= {np.abs(d).max() * 1e3:.2f} mm")
    assert err.max() <= tol, f"{label}: {err.max()} > {tol}"
    coarse = mesh_part(spec, n_coarse)
    band = SIGN_MARGIN * _mesh_deviation(spec, coarse)
    keep = np.abs(d) > band
    wn = _winding(P[keep], coarse.vertices, coarse.faces)
    assert np.all(np.abs(wn - np.round(wn)) < 1e-6)        # a closed mesh: 0 or 1
    inside_mesh = np.round(wn) == 1
    assert np.array_equal(inside_mesh, d[keep] < 0), f"{label}: sign disagrees with the mesh"
    assert keep.sum() > 0.8 * len(P)
    return err.max(), tol


# ------------------------------------------------------------------------------------------
# API
# ------------------------------------------------------------------------------------------

def test_dispatch_and_bounds(bolt, hole):
    b = exact_sdf(bolt)
    h = exact_sdf(hole)
    assert isinstance(b, BoltSDF) and isinstance(h, HoleSDF)
    assert b.bounds == (bolt.r_major, 0.0, bolt.length)
    assert h.bounds == (hole.outer_diameter / 2, -hole.height, 0.0)
    for other in (PegSpec(), NutSpec(), "bolt"):
        with pytest.raises(ValueError):
            exact_sdf(other)
    d, g = b.query(np.zeros((0, 3)))
    assert d.shape == (0,) and g.shape == (0, 3)
    d, g = b.query(np.array([0.0, 0.0, 0.2]))
    assert d.shape == (1,) and g.shape == (1, 3)
    with pytest.raises(ValueError):
        b.query(np.zeros((4, 2)))


def test_kernel_radius_is_the_profile(bolt_sdf, bolt):
    rng = np.random.default_rng(1)
    th = rng.uniform(-10, 10, 20000)
    z = rng.uniform(0, bolt.length, 20000)
    assert np.abs(bolt_sdf.radius(th, z) - bolt.radius(th, z)).max() <= 1e-16


# ------------------------------------------------------------------------------------------
# Closed forms
# ------------------------------------------------------------------------------------------

def test_bolt_axis_beyond_the_ends(bolt_sdf, bolt):
    h = np.array([1e-6, 1 * MM, 10 * MM, 0.3, 1000.0])
    P = np.concatenate([np.stack([0 * h, 0 * h, bolt.length + h], 1),
                        np.stack([0 * h, 0 * h, -h], 1)])
    d, g = bolt_sdf.query(P)
    assert np.allclose(d, np.concatenate([h, h]), rtol=1e-15, atol=EXACT_TOL)
    assert np.allclose(g[:5], [0, 0, 1], atol=1e-12)
    assert np.allclose(g[5:], [0, 0, -1], atol=1e-12)


def test_bolt_axis_inside_is_root_deep(bolt_sdf, bolt):
    # Every height of the full thread meets the root flat at some angle: d = -r_root.
    z = np.linspace(bolt.runout_start + bolt.runout_length + bolt.r_root,
                    bolt.length - bolt.r_root - 1 * MM, 7)   # caps farther than r_root
    d, g = bolt_sdf.query(np.stack([0 * z, 0 * z, z], 1))
    assert np.allclose(d, -bolt.r_root, rtol=0, atol=EXACT_TOL)
    assert np.allclose(np.linalg.norm(g, axis=1), 1, atol=UNIT_TOL)
    assert np.abs(g[:, 2]).max() < 1e-12


def test_bolt_crest_and_root_radial(bolt_sdf, bolt):
    t = bolt.thread
    th = np.linspace(-3, 3, 9)
    k = 8                                   # an axial period inside the full thread
    z_crest = t.c * th + k * t.p            # zeta = 0: crest centre
    z_root = z_crest + t.p / 2              # zeta = p/2: root centre
    dr = np.array([1e-9, 1e-6, 1e-4, 0.5 * MM, 3 * MM, 1e-3, 2e-3, 1e-5, 0.2 * MM])
    d, g = bolt_sdf.query(_cyl(bolt.r_major + dr, th, z_crest))
    assert np.allclose(d, dr, rtol=0, atol=EXACT_TOL)
    er = np.stack([np.cos(th), np.sin(th), 0 * th], 1)
    assert np.allclose(g, er, atol=1e-9)
    dr_in = np.minimum(dr, 0.1 * MM)        # inside the core under the root flat
    d, g = bolt_sdf.query(_cyl(bolt.r_root - dr_in, th, z_root))
    assert np.allclose(d, -dr_in, rtol=0, atol=EXACT_TOL)
    assert np.allclose(g, er, atol=1e-9)


def test_bolt_point_on_and_off_a_flank(bolt_sdf, bolt):
    t = bolt.thread
    p, c = t.p, t.c
    rc, rr = bolt.r_major, bolt.r_root
    zeta = (p / 16 + 3 * p / 8) / 2                 # middle of the falling flank
    slope = (rr - rc) / (3 * p / 8 - p / 16)        # T'(zeta)
    r = float(thread_radius(zeta, rc, rr, p))
    th = np.linspace(-2.5, 2.5, 6)
    z = zeta + c * th + 9 * p
    on = _cyl(np.full_like(th, r), th, z)
    # outward normal of r = T(z - c theta): e_r + (c T'/r) e_theta - T' e_z
    er = np.stack([np.cos(th), np.sin(th), 0 * th], 1)
    et = np.stack([-np.sin(th), np.cos(th), 0 * th], 1)
    ez = np.array([0.0, 0.0, 1.0])
    n = er + (c * slope / r) * et - slope * ez
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    d, g = bolt_sdf.query(on)
    assert np.abs(d).max() <= EXACT_TOL
    assert np.allclose(g, n, atol=1e-12)
    for delta in (1e-8, 1e-5, 0.1 * MM, -1e-5, -0.1 * MM):
        # the helicoid's curvature radii are ~r >> delta: the foot of the normal stays closest
        d, g = bolt_sdf.query(on + delta * n)
        assert np.allclose(d, delta, rtol=0, atol=EXACT_TOL)
        assert np.allclose(g, n, atol=1e-8)


def test_hole_closed_forms(hole_sdf, hole):
    rb, ro, h, ch = hole.bore / 2, hole.outer_diameter / 2, hole.height, hole.chamfer
    th = np.linspace(-3, 3, 7)
    z = np.full_like(th, -h / 2)
    er = np.stack([np.cos(th), np.sin(th), 0 * th], 1)
    for r in (0.0, 1 * MM, rb - 1 * MM, rb - 1e-9, rb + 1e-9, rb + 4 * MM):
        d, g = hole_sdf.query(_cyl(np.full_like(th, r), th, z))
        assert np.allclose(d, rb - r, rtol=0, atol=EXACT_TOL)
        if r > 0:
            assert np.allclose(g, -er, atol=1e-12)
        assert np.allclose(np.linalg.norm(g, axis=1), 1, atol=UNIT_TOL)
    d, g = hole_sdf.query(_cyl(np.full_like(th, ro + 2 * MM), th, z))
    assert np.allclose(d, 2 * MM, atol=EXACT_TOL) and np.allclose(g, er, atol=1e-12)
    d, g = hole_sdf.query(_cyl(np.full_like(th, (rb + ro) / 2), th, z * 0 + 3 * MM))
    assert np.allclose(d, 3 * MM, atol=EXACT_TOL) and np.allclose(g, [0, 0, 1], atol=1e-12)
    # off the top chamfer's middle along its normal (-1, +1)/sqrt2 in (r, z)
    nr, nz = -1 / math.sqrt(2), 1 / math.sqrt(2)
    for delta in (0.0, 1e-6, 0.1 * MM, -0.1 * MM):
        r = rb + ch / 2 + delta * nr
        zz = -ch / 2 + delta * nz
        d, g = hole_sdf.query(_cyl(np.full_like(th, r), th, np.full_like(th, zz)))
        assert np.allclose(d, delta, rtol=0, atol=EXACT_TOL)
        assert np.allclose(g, nr * er + nz * np.array([0, 0, 1.0]), atol=1e-12)


# ------------------------------------------------------------------------------------------
# Kernel vs the plain-NumPy reference
# ------------------------------------------------------------------------------------------

def _ref_points(spec, sdf, n_near, n_deep, n_far, seed):
    gens = bolt_regions(spec)
    P = [_near(sdf, g, n_near // len(gens), seed=seed + i) for i, g in enumerate(gens.values())]
    rng = np.random.default_rng(seed)
    L, R = spec.length, spec.r_major
    th = rng.uniform(-np.pi, np.pi, n_deep + n_far)
    P.append(_cyl(R * np.sqrt(rng.uniform(0, 0.9, n_deep)), th[:n_deep],
                  rng.uniform(-0.05 * L, 1.05 * L, n_deep)))
    P.append(_cyl(rng.uniform(0, 4 * R, n_far), th[n_deep:], rng.uniform(-0.5 * L, 1.5 * L, n_far)))
    P.append(np.array([[0.0, 0.0, 0.3 * L], [0.0, 0.0, 2 * L], [1e-9, 0.0, -0.01]]))
    return np.concatenate(P)


def _compare_with_reference(spec, P):
    sdf = exact_sdf(spec)
    d, _ = sdf.query(P)
    dr = np.array([ref_bolt_sdf(spec, q) for q in P])
    err = np.abs(d - dr)
    assert err.max() <= REF_TOL, (err.max(), P[np.argmax(err)])
    return err.max()


def test_bolt_kernel_matches_numpy_reference(bolt, bolt_sdf):
    P = _ref_points(bolt, bolt_sdf, 240, 40, 30, seed=10)
    e = _compare_with_reference(bolt, P)
    print(f"\n[reference] max |kernel - reference| = {e:.2e} m over {len(P)} points")


def test_other_bolts_match_numpy_reference():
    parts = all_parts()
    for name in ("bolt_d39_p4", "bolt_d60_p5.5", "bolt_d47.2_p5"):
        spec = parts[name]
        _compare_with_reference(spec, _ref_points(spec, exact_sdf(spec), 24, 6, 4, seed=20))


def test_hole_kernel_matches_numpy_reference(hole, hole_sdf):
    rng = np.random.default_rng(3)
    n = 4000
    P = _cyl(rng.uniform(0, 0.07, n), rng.uniform(-np.pi, np.pi, n), rng.uniform(-0.07, 0.02, n))
    d, _ = hole_sdf.query(P)
    dr = ref_polygon_sd(hole.profile(), np.hypot(P[:, 0], P[:, 1]), P[:, 2])
    assert np.abs(d - dr).max() <= REF_TOL


@slow
def test_bolt_kernel_matches_numpy_reference_many():
    for name, spec in all_parts().items():
        if name.startswith("bolt_"):
            _compare_with_reference(spec, _ref_points(spec, exact_sdf(spec), 400, 100, 50,
                                                      seed=hash(name) % 1000))


# ------------------------------------------------------------------------------------------
# Gradient, symmetry, robustness
# ------------------------------------------------------------------------------------------

def _fd_check(sdf, P):
    d, g = sdf.query(P)
    assert np.all(np.isfinite(d)) and np.all(np.isfinite(g))
    assert np.abs(np.linalg.norm(g, axis=1) - 1).max() <= UNIT_TOL
    fd = np.empty_like(P)
    for k in range(3):
        e = np.zeros(3)
        e[k] = FD_STEP
        fd[:, k] = (sdf.query(P + e)[0] - sdf.query(P - e)[0]) / (2 * FD_STEP)
    smooth = np.abs(np.linalg.norm(fd, axis=1) - 1) < FD_SMOOTH
    assert smooth.mean() > 0.9
    err = np.abs(fd - g)[smooth].max()
    assert err <= FD_TOL, err
    return smooth.sum(), err


def test_bolt_gradient_finite_differences(bolt, bolt_sdf):
    gens = bolt_regions(bolt)
    P = np.concatenate([_near(bolt_sdf, g, 150, lo=1e-4, seed=30 + i)
                        for i, g in enumerate(gens.values())])
    n, err = _fd_check(bolt_sdf, P)
    print(f"\n[gradient] bolt: {n}/{len(P)} smooth points, max |fd - grad| = {err:.1e}")


def test_hole_gradient_finite_differences(hole, hole_sdf):
    gens = hole_regions(hole)
    P = np.concatenate([_near(hole_sdf, g, 150, lo=1e-4, seed=40 + i)
                        for i, g in enumerate(gens.values())])
    _fd_check(hole_sdf, P)


def test_bolt_helical_invariance(bolt, bolt_sdf):
    t = bolt.thread
    gen = bolt_regions(bolt)["thread"]
    P = _near(bolt_sdf, gen, 600, seed=50)
    z_lo = bolt.runout_start + bolt.runout_length + NEAR + 1 * MM
    z_hi = bolt.chamfer_start - NEAR - 1 * MM
    rng = np.random.default_rng(51)
    a = rng.uniform(-4 * np.pi, 4 * np.pi, len(P))
    zs = P[:, 2] + t.c * a
    keep = (P[:, 2] > z_lo) & (P[:, 2] < z_hi) & (zs > z_lo) & (zs < z_hi)
    P, a = P[keep], a[keep]
    ca, sa = np.cos(a), np.sin(a)
    S = np.stack([ca * P[:, 0] - sa * P[:, 1], sa * P[:, 0] + ca * P[:, 1], P[:, 2] + t.c * a], 1)
    d0, g0 = bolt_sdf.query(P)
    d1, g1 = bolt_sdf.query(S)
    assert len(P) > 200
    assert np.abs(d0 - d1).max() <= SCREW_TOL
    g0r = np.stack([ca * g0[:, 0] - sa * g0[:, 1], sa * g0[:, 0] + ca * g0[:, 1], g0[:, 2]], 1)
    assert np.abs(g0r - g1).max() <= 1e-7


def test_robust_far_and_degenerate_points(bolt_sdf, hole_sdf, bolt):
    L = bolt.length
    P = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, L], [0.0, 0.0, L / 2], [bolt.r_major, 0, 0],
                  [0.0, 0.0, -1e6], [1e6, -1e6, 5.0], [1e-300, 0.0, L / 2], [-0.0, -0.0, 1.0],
                  [50.0, 0.0, 0.05], [0.0, 30.0, -40.0], [0.02, 0.0, -1e-30]])
    for sdf in (bolt_sdf, hole_sdf):
        d, g = sdf.query(P)
        assert np.all(np.isfinite(d)) and np.all(np.isfinite(g))
        assert np.abs(np.linalg.norm(g, axis=1) - 1).max() <= UNIT_TOL
    d, _ = bolt_sdf.query(P)
    assert abs(d[0]) <= EXACT_TOL and abs(d[1]) <= EXACT_TOL and abs(d[3]) <= EXACT_TOL
    assert abs(d[4] - 1e6) <= 1e-9
    assert d[2] == pytest.approx(-bolt.r_root, abs=EXACT_TOL)
    d, g = bolt_sdf.query(np.array([[np.nan, 0.0, 0.0], [0.0, 0.0, L + 1.0], [np.inf, 0, 0]]))
    assert np.isnan(d[[0, 2]]).all() and np.isnan(g[[0, 2]]).all() and d[1] == pytest.approx(1.0)


# ------------------------------------------------------------------------------------------
# Brute force against fine meshes
# ------------------------------------------------------------------------------------------

def test_bolt_against_fine_mesh(bolt, bolt_sdf):
    gens = bolt_regions(bolt)
    P = np.concatenate([_near(bolt_sdf, g, 150, lo=1e-6, seed=60 + i)
                        for i, g in enumerate(gens.values())])
    _mesh_check(bolt, bolt_sdf, P, 400_000, 40_000, "bolt")


def test_hole_against_fine_mesh(hole, hole_sdf):
    gens = hole_regions(hole)
    P = np.concatenate([_near(hole_sdf, g, 100, lo=1e-6, seed=70 + i)
                        for i, g in enumerate(gens.values())])
    _mesh_check(hole, hole_sdf, P, 400_000, 40_000, "hole")


@slow
def test_bolt_against_very_fine_mesh(bolt, bolt_sdf):
    gens = bolt_regions(bolt)
    P = np.concatenate([_near(bolt_sdf, g, 500, lo=1e-6, seed=80 + i)
                        for i, g in enumerate(gens.values())])
    _mesh_check(bolt, bolt_sdf, P, 2_000_000, 100_000, "bolt 2M")


# ------------------------------------------------------------------------------------------
# Timing (reported, not asserted)
# ------------------------------------------------------------------------------------------

def test_bolt_query_time(bolt, bolt_sdf):
    P = _near(bolt_sdf, bolt_regions(bolt)["thread"], 2000, seed=90)
    bolt_sdf.query(P[:10])
    reps = 5
    t0 = time.perf_counter()
    for _ in range(reps):
        bolt_sdf.query(P)
    dt = (time.perf_counter() - t0) / reps / len(P)
    print(f"\n[timing] bolt SDF: {dt * 1e6:.2f} us per point (2000 points, |d| <= 2 mm, "
          f"{nb.get_num_threads()} threads)")
