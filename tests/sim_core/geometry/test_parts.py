"""Part meshes and mesh assets against the analytic part definitions (profiles.py)."""
import functools
import hashlib
import json
import math
import time

import numpy as np
import pytest

from sim_core.geometry.assets import build_assets, load_manifest, load_mesh, write_ply
from sim_core.geometry.mesh import TriMesh, check_closed_oriented, mass_properties, mesh_part
from sim_core.geometry.profiles import BoltSpec, HoleSpec, PegSpec, all_parts

PARTS = all_parts()
NAMES = sorted(PARTS)
TARGET = 5000
COUNT_REL_TOL = 0.15        # the brief: triangle count within 15 % of the target
# Vertices are computed from the radius functions themselves; 1e-12 m leaves room only for
# the rounding of cos/sin/hypot/atan2 (~1e-17 m at these radii).
ON_SURFACE_TOL = 1e-12
# A column polyline may miss R only where a kink was merged into a sample closer than
# mesh.Z_MERGE = 1e-10 m (|dR/dz| <= 1.8): bound 1e-9 m.
POLYLINE_TOL = 1e-9
# Closed-form and mesh values of a polyhedron agree to rounding.
EXACT_REL = 1e-9
# Semi-analytic volume of a thread (trapezoid in z over 20001 samples x 64 angles): the
# quadrature itself converges to < 1e-6 relative (checked against 80001 x 256).
QUADRATURE_REL = 2e-6
# Between two columns the zipper surface under-fills the chord polygon of the helical
# surface; observed <= 2.2 % of the polygon's own deficit 1 - k_N at target 5000.
ZIPPER_DEFICIT_FRACTION = 0.05
# Peg vs. a plain cylinder: two 0.5 mm chamfers change mass and inertia by < 0.1 %, and the
# inscribed N-gon (N >= 50 at target 5000) lowers the area by phi^2/6 and the polar moment
# by phi^2/3 (phi = 2 pi / N): < 5.3e-3.
PEG_CHAMFER_REL = 1e-3
PEG_DISCRETIZATION_REL = 6e-3
DENSITY = 7850.0


@functools.cache
def _mesh(name: str, target: int = TARGET) -> TriMesh:
    return mesh_part(PARTS[name], target)


def _k_area(n: int) -> float:
    """Area of the regular n-gon inscribed in a circle over the circle's area."""
    phi = 2 * math.pi / n
    return n * math.sin(phi) / (2 * math.pi)


def _k_polar(n: int) -> float:
    """Polar moment of the inscribed regular n-gon over the circle's."""
    phi = 2 * math.pi / n
    return n * math.sin(phi) * (2 + math.cos(phi)) / (6 * math.pi)


def _n_angles(mesh: TriMesh) -> int:
    """Number of distinct vertex angles (off the axis), checked to be uniform 2 pi i / N."""
    v = mesh.vertices
    rho = np.hypot(v[:, 0], v[:, 1])
    th = np.mod(np.arctan2(v[rho > 0, 1], v[rho > 0, 0]), 2 * math.pi)
    n = len(np.unique(np.round(th, 9) % round(2 * math.pi, 9)))
    k = th / (2 * math.pi / n)
    assert np.max(np.abs(k - np.round(k))) < 1e-6
    return n


# ------------------------------------------------------------------------- topology

@pytest.mark.parametrize("name", NAMES)
def test_closed_oriented_positive_volume(name):
    m = _mesh(name)
    check_closed_oriented(m)
    assert m.vertices.dtype == np.float64 and m.faces.dtype == np.int64
    assert m.volume() > 0


@pytest.mark.parametrize("name", NAMES)
def test_triangle_count_near_target(name):
    assert abs(_mesh(name).n_faces - TARGET) <= COUNT_REL_TOL * TARGET


@pytest.mark.parametrize("name", NAMES)
def test_resolution_scales(name):
    fine = mesh_part(PARTS[name], 4 * TARGET)
    assert abs(fine.n_faces - 4 * TARGET) <= COUNT_REL_TOL * 4 * TARGET
    check_closed_oriented(fine)


@pytest.mark.parametrize("name", ["peg", "bolt_M48x5", "nut_M48x5", "nut_d60_p5.5"])
def test_deterministic(name):
    a = mesh_part(PARTS[name], TARGET)
    b = mesh_part(PARTS[name], TARGET)
    assert a.vertices.tobytes() == b.vertices.tobytes()
    assert a.faces.tobytes() == b.faces.tobytes()


def test_nut_angles_include_hex_corners():
    m = _mesh("nut_M48x5")
    assert _n_angles(m) % 12 == 0


# -------------------------------------------------------------- vertices on surface

def _profile_distance(profile: np.ndarray, rho: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Distance in the (r, z) half-plane from points to the profile polygon's boundary,
    leaving out edges along the axis (they are not surface)."""
    P = np.asarray(profile)
    best = np.full(len(rho), np.inf)
    for k in range(len(P)):
        a, b = P[k], P[(k + 1) % len(P)]
        if a[0] == 0 and b[0] == 0:
            continue
        d = b - a
        t = np.clip(((rho - a[0]) * d[0] + (z - a[1]) * d[1]) / (d @ d), 0, 1)
        best = np.minimum(best, np.hypot(rho - a[0] - t * d[0], z - a[1] - t * d[1]))
    return best


@pytest.mark.parametrize("name", NAMES)
def test_vertices_on_analytic_surface(name):
    spec = PARTS[name]
    v = _mesh(name).vertices
    x, y, z = v[:, 0], v[:, 1], v[:, 2]
    rho, th = np.hypot(x, y), np.arctan2(y, x)
    if isinstance(spec, (PegSpec, HoleSpec)):
        assert np.max(_profile_distance(spec.profile(), rho, z)) <= ON_SURFACE_TOL
    elif isinstance(spec, BoltSpec):
        L = spec.length
        assert np.all((z >= 0) & (z <= L))
        side = (z > 0) & (z < L)
        assert np.max(np.abs(rho[side] - spec.radius(th[side], z[side]))) <= ON_SURFACE_TOL
        cap = ~side                                  # centre vertices and the rim rings
        rim = cap & (rho > 0)
        assert np.max(np.abs(rho[rim] - spec.radius(th[rim], z[rim]))) <= ON_SURFACE_TOL
        assert np.count_nonzero(cap & (rho == 0)) == 2
    else:
        h2 = spec.height / 2
        assert np.all(np.abs(z) <= h2)
        on_bore = np.abs(rho - spec.bore_radius(th, z)) <= ON_SURFACE_TOL
        on_hex = (np.abs(rho - spec.hex_radius(th)) <= ON_SURFACE_TOL) & (np.abs(z) == h2)
        assert np.all(on_bore | on_hex)
        assert np.count_nonzero(on_hex) == 2 * _n_angles(_mesh(name))


@pytest.mark.parametrize("name", [n for n in NAMES if not isinstance(PARTS[n], (PegSpec, HoleSpec))])
def test_columns_are_exact_surface_curves(name):
    """Each column polyline equals z -> R(theta_i, z) everywhere: every kink (thread corners on
    the helix, run-out, chamfer, countersink, max/min switches) is a vertex."""
    spec = PARTS[name]
    m = _mesh(name)
    v = m.vertices
    n = _n_angles(m)
    rho = np.hypot(v[:, 0], v[:, 1])
    idx = np.round(np.mod(np.arctan2(v[:, 1], v[:, 0]), 2 * math.pi) / (2 * math.pi / n)).astype(int) % n
    if isinstance(spec, BoltSpec):
        lateral = rho > 0
        radius, z_lo, z_hi = spec.radius, 0.0, spec.length
    else:
        lateral = rho < spec.countersink_radius + 1e-9      # the bore, not the hexagon
        radius, z_lo, z_hi = spec.bore_radius, -spec.height / 2, spec.height / 2
    zz = np.linspace(z_lo, z_hi, 20001)
    for i in sorted({0, 1, n // 3, n // 2 + 1, n - 1}):
        col = lateral & (idx == i)
        zc = v[col, 2]
        order = np.argsort(zc)
        zc, rc = zc[order], rho[col][order]
        assert zc[0] == z_lo and zc[-1] == z_hi and np.all(np.diff(zc) > 0)
        theta = 2 * math.pi * i / n
        err = np.abs(np.interp(zz, zc, rc) - radius(theta, zz))
        assert err.max() <= POLYLINE_TOL, (i, zz[np.argmax(err)])


# ------------------------------------------------------------------------- volumes

def _peg_rev_volume(s: PegSpec) -> float:
    r, L, c = s.diameter / 2, s.length, s.chamfer
    return math.pi * r * r * L - 2 * math.pi * c * c * (r - c / 3)      # Pappus for the chamfers


def _hole_rev_volume(s: HoleSpec) -> float:
    rb, ro, H, c = s.bore / 2, s.outer_diameter / 2, s.height, s.chamfer
    return math.pi * (ro * ro - rb * rb) * H - 2 * math.pi * c * c * (rb + c / 3)


@pytest.mark.parametrize("name", ["peg", "hole"])
def test_revolution_volume(name):
    spec = PARTS[name]
    m = _mesh(name)
    n = _n_angles(m)
    exact = _peg_rev_volume(spec) if name == "peg" else _hole_rev_volume(spec)
    # every cross-section of the revolved polygon is the inscribed n-gon (annulus) exactly
    assert m.volume() == pytest.approx(_k_area(n) * exact, rel=EXACT_REL)
    assert abs(m.volume() / exact - 1) <= 1 - _k_area(n) + EXACT_REL


def _thread_volume(spec, n_theta: int = 64, n_z: int = 20001) -> float:
    """int_0^2pi int R(theta, z)^2 / 2 dz dtheta by the trapezoid rule (periodic in theta)."""
    if isinstance(spec, BoltSpec):
        z, f = np.linspace(0.0, spec.length, n_z), spec.radius
    else:
        z, f = np.linspace(-spec.height / 2, spec.height / 2, n_z), spec.bore_radius
    th = 2 * math.pi * np.arange(n_theta) / n_theta
    R = f(th[:, None], z[None, :])
    return 2 * math.pi * float(np.mean(np.trapezoid(R * R / 2, z, axis=1)))


@pytest.mark.parametrize("name", [n for n in NAMES if not isinstance(PARTS[n], (PegSpec, HoleSpec))])
def test_thread_volume(name):
    spec = PARTS[name]
    m = _mesh(name)
    n = _n_angles(m)
    k = _k_area(n)
    ref = _thread_volume(spec)
    if isinstance(spec, BoltSpec):
        mesh_solid = m.volume()
    else:       # hexagon prism (corners are vertices: exact) minus the bore
        hex_volume = math.sqrt(3) / 2 * spec.across_flats ** 2 * spec.height
        mesh_solid = hex_volume - m.volume()
    tol = ZIPPER_DEFICIT_FRACTION * (1 - k) + QUADRATURE_REL
    assert abs(mesh_solid / (k * ref) - 1) <= tol


# -------------------------------------------------------------------- mass properties

def _peg_reference(spec: PegSpec, n: int) -> tuple[float, float, float]:
    """Exact (mass, Izz, Ixx about the COM) of the peg revolved as regular n-gons: every
    cross-section at height z is the n-gon inscribed in r(z) (piecewise linear)."""
    P = spec.profile()
    gx, gw = np.polynomial.legendre.leggauss(4)          # exact up to degree 7
    i_r2 = i_r4 = i_r2z2 = 0.0
    for (r0, z0), (r1, z1) in zip(P[:-1], P[1:]):
        if z1 == z0:
            continue                                      # the flat ends bound no slab
        z = 0.5 * (z0 + z1) + 0.5 * (z1 - z0) * gx
        r = r0 + (r1 - r0) * (z - z0) / (z1 - z0)
        w = 0.5 * (z1 - z0) * gw
        i_r2 += np.sum(w * r ** 2)
        i_r4 += np.sum(w * r ** 4)
        i_r2z2 += np.sum(w * r ** 2 * z ** 2)
    kA, kJ = _k_area(n), _k_polar(n)
    mass = DENSITY * kA * math.pi * i_r2
    izz = DENSITY * kJ * math.pi / 2 * i_r4
    ixx = DENSITY * (kJ * math.pi / 4 * i_r4 + kA * math.pi * i_r2z2)
    return mass, izz, ixx


def test_peg_mass_properties():
    spec = PARTS["peg"]
    m = _mesh("peg")
    n = _n_angles(m)
    mass, com, J = mass_properties(m, DENSITY)
    assert np.max(np.abs(com)) <= 1e-12
    assert np.max(np.abs(J - np.diag(np.diag(J)))) <= 1e-9 * J[2, 2]
    assert J[0, 0] == pytest.approx(J[1, 1], rel=1e-9)
    # exact polyhedron reference
    m_ref, izz_ref, ixx_ref = _peg_reference(spec, n)
    assert mass == pytest.approx(m_ref, rel=EXACT_REL)
    assert J[2, 2] == pytest.approx(izz_ref, rel=EXACT_REL)
    assert J[0, 0] == pytest.approx(ixx_ref, rel=EXACT_REL)
    # plain cylinder closed forms
    r, L = spec.diameter / 2, spec.length
    m_cyl = DENSITY * math.pi * r * r * L
    tol = PEG_DISCRETIZATION_REL + PEG_CHAMFER_REL
    assert mass == pytest.approx(m_cyl, rel=tol)
    assert J[2, 2] == pytest.approx(m_cyl * r * r / 2, rel=tol)
    assert J[0, 0] == pytest.approx(m_cyl * (3 * r * r + L * L) / 12, rel=tol)


def _box(lo, hi) -> TriMesh:
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    corners = np.array([[(hi if (k >> j) & 1 else lo)[j] for j in range(3)] for k in range(8)])
    quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    faces = [t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))]
    return TriMesh(corners, np.array(faces))


def test_mass_properties_box():
    lo, size = np.array([1.0, -2.0, 3.0]), np.array([0.1, 0.2, 0.3])
    box = _box(lo, lo + size)
    check_closed_oriented(box)
    mass, com, J = mass_properties(box, 1000.0)
    a, b, c = size
    m_ref = 1000.0 * a * b * c
    assert mass == pytest.approx(m_ref, rel=1e-12)
    assert np.allclose(com, lo + size / 2, rtol=0, atol=1e-14)
    J_ref = m_ref / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    assert np.allclose(J, J_ref, rtol=1e-10, atol=1e-16)


# ------------------------------------------------------------ check_closed_oriented

def test_check_rejects_broken_meshes():
    m = _mesh("peg")
    v, f = m.vertices, m.faces
    flipped = f.copy()
    flipped[7] = flipped[7, ::-1]
    dup_v = np.concatenate([v, v[f[3, :1]]])
    dup_f = f.copy()
    dup_f[3, 0] = len(v)
    inward = f[:, ::-1]
    # two tetrahedra sharing one vertex: edge-manifold but not a manifold at the vertex
    tet = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    bow_v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1],
                      [-1, 0, 0], [0, -1, 0], [0, 0, -1.0]])
    bow_f = np.concatenate([tet, np.where(tet == 0, 0, tet + 3)[:, [0, 2, 1]]])
    check_closed_oriented(TriMesh(bow_v[:4], tet))
    for bad in (TriMesh(v, flipped), TriMesh(v, f[1:]), TriMesh(dup_v, dup_f), TriMesh(v, inward),
                TriMesh(bow_v, bow_f)):
        with pytest.raises(ValueError):
            check_closed_oriented(bad)


# ------------------------------------------------------------------------- assets

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    a = tmp_path_factory.mktemp("assets_a")
    b = tmp_path_factory.mktemp("assets_b")
    return a, build_assets(a), b, build_assets(b)


def _digests(root) -> dict:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_build_is_byte_identical(built):
    a, man_a, b, man_b = built
    da, db = _digests(a), _digests(b)
    assert da == db
    assert set(da) == ({f"parts/{n}.ply" for n in NAMES} | {"parts/manifest.json"}
                       | {"robots/panda.urdf", "robots/panda_gripper.urdf"})
    assert man_a == man_b


def test_manifest_contents(built):
    a, man, _, _ = built
    text = (a / "parts" / "manifest.json").read_text()
    assert text == json.dumps(man, indent=2, sort_keys=True) + "\n"
    loaded = load_manifest(a, check_files=True)
    assert loaded == man
    assert loaded["format"] == 1 and loaded["units"] == "m" and loaded["target_triangles"] == TARGET
    assert sorted(loaded["parts"]) == NAMES
    for name, e in loaded["parts"].items():
        spec = PARTS[name]
        assert e["kind"] == type(spec).__name__.removesuffix("Spec").lower()
        assert e["file"] == f"parts/{name}.ply"
        assert e["sha256"] == hashlib.sha256((a / e["file"]).read_bytes()).hexdigest()
        mesh = _mesh(name)
        assert (e["triangles"], e["vertices"]) == (mesh.n_faces, mesh.n_vertices)
        assert e["dimensions"] == spec.dimensions()
        assert e["volume"] == mesh.volume()


@pytest.mark.parametrize("name", ["peg", "hole", "bolt_M48x5", "nut_M48x5"])
def test_load_mesh_round_trip(built, name):
    a = built[0]
    loaded = load_mesh(a / "parts" / f"{name}.ply", validate=True)
    mesh = _mesh(name)
    assert loaded.vertices.dtype == np.float64 and loaded.faces.dtype == np.int64
    assert np.array_equal(loaded.vertices, mesh.vertices)
    assert np.array_equal(loaded.faces, mesh.faces)


def _corrupt(src: bytes, kind: str) -> bytes:
    head_end = src.index(b"end_header\n") + len(b"end_header\n")
    header = src[:head_end].decode()
    nv = int(header.split("element vertex ")[1].split()[0])
    body = bytearray(src[head_end:])
    if kind == "truncated":
        return src[:-5]
    if kind == "truncated_header":
        return src[:40]
    if kind == "empty":
        return b""
    if kind == "magic":
        return b"plx" + src[3:]
    if kind == "no_vertex_element":
        return src.replace(b"element vertex", b"element vortex", 1)
    if kind == "format":
        return src.replace(b"binary_little_endian", b"binary_big_endian", 1)
    if kind == "bad_count":
        return src.replace(b"element face ", b"element face x", 1)
    if kind == "property":
        return src.replace(b"property double y", b"property float y", 1)
    if kind == "index":
        off = 24 * nv + 13 * 17 + 1 + 4                # face 17, second index
        body[off:off + 4] = np.int32(9999999).tobytes()
        return src[:head_end] + bytes(body)
    if kind == "negative_index":
        off = 24 * nv + 13 * 3 + 1
        body[off:off + 4] = np.int32(-1).tobytes()
        return src[:head_end] + bytes(body)
    if kind == "quad":
        body[24 * nv + 13 * 5] = 4
        return src[:head_end] + bytes(body)
    if kind == "nan":
        body[8 * 7:8 * 8] = np.float64(np.nan).tobytes()
        return src[:head_end] + bytes(body)
    if kind == "trailing":
        return src + b"\0\0"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["truncated", "truncated_header", "empty", "magic",
                                  "no_vertex_element", "format", "bad_count", "property", "index",
                                  "negative_index", "quad", "nan", "trailing"])
def test_load_mesh_rejects_corrupt_files(built, tmp_path, kind):
    src = (built[0] / "parts" / "nut_M48x5.ply").read_bytes()
    path = tmp_path / f"nut_{kind}.ply"
    path.write_bytes(_corrupt(src, kind))
    with pytest.raises(ValueError) as exc:
        load_mesh(path)
    msg = str(exc.value)
    assert str(path) in msg and "\n" not in msg
    if kind == "index":
        assert "face 17 index 9999999 out of range" in msg
    if kind == "no_vertex_element":
        assert "'element vertex' missing" in msg


def test_load_mesh_missing_file(tmp_path):
    path = tmp_path / "nope.ply"
    with pytest.raises(ValueError) as exc:
        load_mesh(path)
    assert str(path) in str(exc.value) and "\n" not in str(exc.value)


def test_write_ply_matches_build(built, tmp_path):
    path = tmp_path / "peg.ply"
    sha = write_ply(path, _mesh("peg"))
    assert sha == built[1]["parts"]["peg"]["sha256"]


@pytest.mark.parametrize("kind", ["missing", "json", "no_field", "type", "format", "kind"])
def test_load_manifest_rejects_corrupt(built, tmp_path, kind):
    (tmp_path / "parts").mkdir()
    path = tmp_path / "parts" / "manifest.json"
    man = json.loads((built[0] / "parts" / "manifest.json").read_text())
    field = None
    if kind == "json":
        path.write_text('{"format": 1, "units": ')
    elif kind == "no_field":
        del man["parts"]["peg"]["sha256"]
        field = "parts.peg.sha256"
    elif kind == "type":
        man["parts"]["hole"]["triangles"] = "many"
        field = "parts.hole.triangles"
    elif kind == "format":
        man["format"] = 2
        field = "format"
    elif kind == "kind":
        man["parts"]["peg"]["kind"] = "screw"
        field = "parts.peg.kind"
    if kind not in ("missing", "json"):
        path.write_text(json.dumps(man))
    with pytest.raises(ValueError) as exc:
        load_manifest(tmp_path)
    msg = str(exc.value)
    assert str(path) in msg and "\n" not in msg
    if field:
        assert f"'{field}'" in msg


# --------------------------------------------------------------------------- slow

@pytest.mark.slow
@pytest.mark.parametrize("name", ["peg", "hole", "bolt_M48x5", "nut_M48x5"])
def test_fine_mesh_fast_and_converged(name):
    """A ~1M-triangle mesh for exact-SDF tests builds in seconds and converges in volume."""
    t0 = time.perf_counter()
    m = mesh_part(PARTS[name], 1_000_000)
    elapsed = time.perf_counter() - t0
    assert abs(m.n_faces - 1_000_000) <= COUNT_REL_TOL * 1_000_000
    assert elapsed < 10.0
    check_closed_oriented(m)
    spec = PARTS[name]
    if isinstance(spec, PegSpec):
        exact = _peg_rev_volume(spec)
        solid = m.volume()
    elif isinstance(spec, HoleSpec):
        exact = _hole_rev_volume(spec)
        solid = m.volume()
    elif isinstance(spec, BoltSpec):
        exact = _thread_volume(spec, 256, 80001)
        solid = m.volume()
    else:
        hex_volume = math.sqrt(3) / 2 * spec.across_flats ** 2 * spec.height
        exact = _thread_volume(spec, 256, 80001)
        solid = hex_volume - m.volume()
    assert abs(solid / exact - 1) <= 1e-4
