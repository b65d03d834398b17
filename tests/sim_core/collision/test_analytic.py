"""The primitives' detectors (``collision.analytic`` through ``collision.detectors``) against
references written apart from them: the least distance by dense sampling of the segment
refined by golden-section search (the distances convex, so the bracket holds the minimum),
the cylinder's signed distance by points set off its surface along the normal and by dense
surface sampling, and closed forms."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial import cKDTree

from sim_core.collision import analytic
from sim_core.collision import detectors as collision
from sim_core.math.so3 import rot_axis_angle
from sim_core.shapes import Capsule, Cylinder, Plane, Sphere
from sim_core.types import WORLD, BodyPose, ContactParams

DIST_TOL = 1e-12        # m: the reference's refined minimum (golden section to 1e-16 of a <= 0.3 m segment)
                        # against the kernels' closed forms and bisection: rounding of coordinates <= 1 m
SURFACE_TOL = 1e-12     # m: a contact's two surface points x -+ d n / 2 on their shapes (closed-form
                        # reference signed distances at coordinates <= 1 m: rounding only)
SAMPLE_TOL = 2.5e-4     # m: the cylinder's signed distance against a surface sampled every 0.5 mm
                        # (the largest hole in the grid is 0.5 mm x 0.36 mm; half its diagonal)
POSES = 300             # random poses per detector
BAND = 0.05             # m: a reach that takes every pose's nearest contact in
PARAMS = ContactParams(friction=0.0, clusters=12, band=BAND, broadphase_margin=0.0, normal_scale=0.0,
                       penetration_gain=0.2, pgs_iterations=10, pgs_tolerance=1e-6)
REST = BodyPose(0.0, np.zeros(3), np.eye(3), np.zeros(6))     # a body at rest (dt = 0: reach = BAND)


def _rot(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _pose(R, p):
    return BodyPose(0.0, np.asarray(p, float), np.asarray(R, float), np.zeros(6))


# --- reference signed distances (numpy, written apart from the kernels) ---------------------
def _seg_points(P, A, B):
    """Distances (k,) from points P (k,3) to the segment AB, by the clamped projection."""
    D = B - A
    DD = float(D @ D)
    t = np.clip((P - A) @ D / DD, 0.0, 1.0) if DD > 0 else np.zeros(len(P))
    return np.linalg.norm(P - (A + t[:, None] * D), axis=1)


def _cyl_ref(q, R, H):
    """Signed distances (k,) of points q (k,3) (cylinder frame) to the solid cylinder, by cases
    on the 2-D (rho, |z|)."""
    dr, dz = np.hypot(q[:, 0], q[:, 1]) - R, np.abs(q[:, 2]) - H
    inside = (dr <= 0) & (dz <= 0)
    return np.where(inside, np.maximum(dr, dz), np.hypot(np.maximum(dr, 0.0), np.maximum(dz, 0.0)))


def _ends(s, at):
    R, p = at.R_wb @ s.R_bs, at.p_w + at.R_wb @ s.p_bs
    return p - s.half_length * R[:, 2], p + s.half_length * R[:, 2]


def _sdf(shape, at, x):
    """Reference signed distances (k,) of world points x (k,3) to a shape whose body is at `at`."""
    x = np.atleast_2d(x)
    R, p = at.R_wb @ shape.R_bs, at.p_w + at.R_wb @ shape.p_bs
    if isinstance(shape, Sphere):
        return np.linalg.norm(x - p, axis=1) - shape.radius
    if isinstance(shape, Plane):
        return (x - p) @ R[:, 2]
    if isinstance(shape, Capsule):
        return _seg_points(x, *_ends(shape, at)) - shape.radius
    return _cyl_ref((x - p) @ R, shape.radius, shape.half_length)


def _min_along(A, B, f, n=4001):
    """min over t in [0, 1] of a convex f(A + t (B - A)) (f of points (k,3)): dense samples,
    then golden-section search on the values in the bracket to 1e-16 of t (a kink's minimum is
    placed by the values to that; a smooth one only to ~1e-8 in t, its value then flat to
    rounding)."""
    ts = np.linspace(0.0, 1.0, n)
    v = f(A + ts[:, None] * (B - A))
    i = int(np.argmin(v))
    lo, hi = ts[max(i - 1, 0)], ts[min(i + 1, n - 1)]
    g = 0.5 * (math.sqrt(5.0) - 1.0)

    def at(t):
        return float(f((A + t * (B - A))[None])[0])
    t1, t2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = at(t1), at(t2)
    for _ in range(90):                        # 0.618^90 * 5e-4 = 7e-23: below 1e-16 of t
        if f1 <= f2:
            hi, t2, f2 = t2, t1, f1
            t1 = hi - g * (hi - lo)
            f1 = at(t1)
        else:
            lo, t1, f1 = t1, t2, f2
            t2 = lo + g * (hi - lo)
            f2 = at(t2)
    return min(f1, f2, float(v.min()))


def _distance(a, pa, b, pb):
    """Reference signed distance between shapes a and b (a sphere's centre or a capsule's
    segment swept against b's signed distance)."""
    if isinstance(a, Sphere):
        return float(_sdf(b, pb, pa.p_w + pa.R_wb @ a.p_bs)[0]) - a.radius
    return _min_along(*_ends(a, pa), lambda x: _sdf(b, pb, x)) - a.radius


# --- random configurations -------------------------------------------------------------------
def _random_pair(kind, rng):
    ball = lambda body: Sphere(body=body, radius=float(rng.uniform(0.01, 0.05)))        # noqa: E731
    caps = lambda body: Capsule(body=body, radius=float(rng.uniform(0.005, 0.03)),       # noqa: E731
                                half_length=float(rng.uniform(0.01, 0.15)),
                                R_bs=_rot(rng), p_bs=rng.normal(0.0, 0.02, 3))
    if kind == ("sphere", "plane"):
        a, b = ball(0), Plane(R_bs=_rot(rng), p_bs=rng.normal(0.0, 0.05, 3))
    elif kind == ("sphere", "sphere"):
        a, b = ball(0), ball(1)
    elif kind == ("sphere", "capsule"):
        a, b = ball(0), caps(1)
    elif kind == ("sphere", "cylinder"):
        a, b = ball(0), Cylinder(radius=0.1, half_length=0.15, R_bs=_rot(rng))
    elif kind == ("capsule", "plane"):
        a, b = caps(0), Plane(R_bs=_rot(rng), p_bs=rng.normal(0.0, 0.05, 3))
    elif kind == ("capsule", "capsule"):
        a, b = caps(0), caps(1)
    else:
        a, b = caps(0), Cylinder(radius=0.1, half_length=0.15, R_bs=_rot(rng))
    pb = REST if b.body == WORLD else _pose(_rot(rng), rng.normal(0.0, 0.05, 3))
    # a's body near b's: apart, touching and overlapping
    spread = {"plane": 0.03, "cylinder": 0.09}.get(kind[1], 0.04)
    return a, b, _pose(_rot(rng), pb.p_w + b.p_bs + rng.normal(0.0, spread, 3)), pb


KINDS = [k for k in collision.DETECTORS if k not in (("nodes", "sdf"), ("pins", "holes"))]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: f"{k[0]}-{k[1]}")
def test_the_nearest_contact_is_the_least_distance_and_every_contact_lies_on_both_surfaces(kind):
    rng = np.random.default_rng(sum(map(ord, "-".join(kind))))
    seen = 0
    for _ in range(POSES):
        a, b, pa, pb = _random_pair(kind, rng)
        ref = _distance(a, pa, b, pb)
        det = collision.detect(a, b, PARAMS, pa, pb, 0.0)
        c = det.nodes
        if ref >= BAND:
            assert len(c) == 0 or c.d.min() >= BAND - DIST_TOL
            continue
        seen += 1
        assert len(c) >= 1 and det.manifold
        assert abs(c.d.min() - ref) <= DIST_TOL, (kind, c.d.min(), ref)
        assert np.all(c.d < BAND)
        assert np.abs(np.linalg.norm(c.n_w, axis=1) - 1.0).max() < 1e-12
        # x -+ d n / 2: a point of a and a point on b's surface; n leaves b.  a's point is on
        # a's surface for the nearest contact of separate shapes (there n is normal to a's axis
        # or leaves an end); a capsule end's ball may lie inside the rest of the capsule, and
        # an overlap with a solid's corner region takes one face's normal (a kink)
        for k, (x, n, d) in enumerate(zip(c.x_w, c.n_w, c.d)):
            on_a = float(_sdf(a, pa, x + 0.5 * d * n)[0])
            assert (abs(on_a) if k == np.argmin(c.d) and d >= 0.0 else on_a) <= SURFACE_TOL, (kind, d, on_a)
            if kind[0] == "capsule" and kind[1] != "capsule" or k == np.argmin(c.d):
                assert abs(_sdf(b, pb, x - 0.5 * d * n)[0]) <= SURFACE_TOL, (kind, d)
            else:                               # b's end against a: the end's ball, inside b
                assert _sdf(b, pb, x - 0.5 * d * n)[0] <= SURFACE_TOL, (kind, d)
        # the pair given the other way round: the same contacts, normals flipped
        rev = collision.detect(b, a, PARAMS, pb, pa, 0.0).nodes
        if kind[0] == kind[1]:                  # a symmetric kind: its own detector, b's features first
            assert abs(rev.d.min() - c.d.min()) <= DIST_TOL
        else:
            assert np.array_equal(rev.x_w, c.x_w) and np.array_equal(rev.n_w, -c.n_w)
            assert np.array_equal(rev.d, c.d) and np.array_equal(rev.idx, c.idx)
    assert seen >= POSES // 5, seen              # the poses did test contacts


def test_the_cylinder_distance_off_its_surface_and_against_dense_sampling():
    R, H = 0.1, 0.15
    rng = np.random.default_rng(7)
    # points set off the surface along its outward normal (lateral face, caps, rims)
    for _ in range(2000):
        a, s = rng.uniform(0, 2 * math.pi), rng.uniform(1e-6, 0.1)
        c, sn = math.cos(a), math.sin(a)
        which = rng.integers(3)
        if which == 0:
            q, n = np.array([R * c, R * sn, rng.uniform(-H, H)]), np.array([c, sn, 0.0])
        elif which == 1:
            rr = R * math.sqrt(rng.random())
            q, n = np.array([rr * c, rr * sn, H]), np.array([0.0, 0.0, 1.0])
        else:
            e = rng.uniform(0, math.pi / 2)
            q, n = np.array([R * c, R * sn, -H]), np.array([math.cos(e) * c, math.cos(e) * sn, -math.sin(e)])
        x = q + s * n
        g, gx, gy, gz = analytic.cylinder_sdf(x[0], x[1], x[2], R, H)
        assert abs(g - s) <= 1e-14 and np.abs(np.array([gx, gy, gz]) - n).max() <= 1e-9
    # inside: the nearer of the lateral face and a cap
    for _ in range(500):
        x = np.array([*rng.uniform(-0.7 * R, 0.7 * R, 2), rng.uniform(-H, H)])
        g = analytic.cylinder_sdf(x[0], x[1], x[2], R, H)[0]
        assert g == pytest.approx(-min(R - math.hypot(x[0], x[1]), H - abs(x[2])), abs=1e-15)
    # against the surface sampled every 0.5 mm (the unsigned distance to the sample cloud)
    h = 5e-4
    az = np.linspace(0, 2 * math.pi, int(2 * math.pi * R / h), endpoint=False)
    zs = np.linspace(-H, H, int(2 * H / h) + 1)
    side = np.stack(np.broadcast_arrays(R * np.cos(az)[:, None], R * np.sin(az)[:, None], zs[None, :]), -1)
    g = np.arange(-R, R + h / 2, h)
    X, Y = np.meshgrid(g, g)
    disc = np.stack([X, Y], -1)[X ** 2 + Y ** 2 <= R * R]
    caps = np.vstack([np.column_stack([disc, np.full(len(disc), z)]) for z in (-H, H)])
    tree = cKDTree(np.vstack([side.reshape(-1, 3), caps]))
    pts = rng.uniform(-0.2, 0.2, (3000, 3)) * np.array([1, 1, 1.3])
    dist, _ = tree.query(pts)
    sdf = np.array([analytic.cylinder_sdf(p[0], p[1], p[2], R, H)[0] for p in pts])
    assert np.abs(np.abs(sdf) - dist).max() <= SAMPLE_TOL


# --- closed forms ------------------------------------------------------------------------------
def _det(a, b, pa=REST, pb=REST):
    return collision.detect(a, b, PARAMS, pa, pb, 0.0).nodes


def test_closed_forms():
    up = np.array([0.0, 0.0, 1.0])
    # a ball 3 mm over a tilted plane
    Rp = rot_axis_angle([1.0, 1.0, 0.0], 0.3)
    c = _det(Sphere(body=0, radius=0.02, p_bs=Rp @ [0.01, 0.02, 0.023]), Plane(R_bs=Rp))
    assert len(c) == 1 and c.d[0] == pytest.approx(0.003, abs=1e-15)
    assert np.allclose(c.n_w[0], Rp @ up, atol=1e-15)
    # a capsule lying on the floor 1 mm up: both ends, equal gaps
    lying = Capsule(body=0, radius=0.01, half_length=0.05, R_bs=rot_axis_angle([0.0, 1.0, 0.0], math.pi / 2),
                    p_bs=[0.0, 0.0, 0.011])
    c = _det(lying, Plane())
    assert len(c) == 2 and np.allclose(c.d, 0.001, atol=1e-15) and sorted(c.idx) == [0, 1]
    assert np.allclose(sorted(c.x_w[:, 0]), [-0.05, 0.05], atol=1e-15)
    # two parallel capsules side by side, overlapping half their length, 2 mm apart
    a = Capsule(body=0, radius=0.01, half_length=0.05, p_bs=[0.0, 0.0, 0.0])
    b = Capsule(body=1, radius=0.01, half_length=0.05, p_bs=[0.022, 0.0, 0.05])
    c = _det(a, b)
    touch = np.abs(c.d - 0.002) < 1e-15                           # the rest: ends beyond the overlap, farther
    assert touch.sum() >= 2 and np.allclose(c.n_w[touch], [-1.0, 0.0, 0.0], atol=1e-15)
    assert np.allclose(sorted(set(np.round(c.x_w[touch, 2], 12))), [0.0, 0.05], atol=1e-15)   # the overlap's ends
    # crossing capsules: the common perpendicular
    c = _det(a, Capsule(body=1, radius=0.01, half_length=0.05, R_bs=rot_axis_angle([0.0, 1.0, 0.0], math.pi / 2),
                        p_bs=[0.0, 0.025, 0.01]))
    assert c.d.min() == pytest.approx(0.005, abs=1e-15) and np.allclose(c.n_w[0], [0.0, -1.0, 0.0], atol=1e-15)
    # a winch drum (horizontal axis along x, radius 0.1 m): a link across its top, 1 mm up
    drum = Cylinder(radius=0.1, half_length=0.15, R_bs=rot_axis_angle([0.0, 1.0, 0.0], math.pi / 2))
    across = Capsule(body=0, radius=0.005, half_length=0.02, R_bs=rot_axis_angle([1.0, 0.0, 0.0], math.pi / 2),
                     p_bs=[0.03, 0.0, 0.106])
    c = _det(across, drum)
    k = int(np.argmin(c.d))
    assert c.d[k] == pytest.approx(0.001, abs=1e-15) and np.allclose(c.n_w[k], up, atol=1e-15)
    # its ends, 20 mm along, are farther: their distance from the axis less R and r
    assert np.allclose(np.sort(c.d)[1:], math.hypot(0.02, 0.106) - 0.1 - 0.005, atol=1e-13)
    # a link lying along the drum's top (parallel to its axis): a line contact, every gap 1 mm
    along = Capsule(body=0, radius=0.005, half_length=0.02, R_bs=rot_axis_angle([0.0, 1.0, 0.0], math.pi / 2),
                    p_bs=[0.03, 0.0, 0.106])
    c = _det(along, drum)
    assert len(c) == 2 and np.allclose(c.d, 0.001, atol=1e-15) and np.allclose(c.n_w, up, atol=1e-15)
    assert np.allclose(sorted(c.x_w[:, 0]), [0.01, 0.05], atol=1e-15)          # held at both ends
    # a link end on against the drum's cap (its axis along x): the cap's distance
    end_on = Capsule(body=0, radius=0.005, half_length=0.02, R_bs=rot_axis_angle([0.0, 1.0, 0.0], math.pi / 2),
                     p_bs=[0.15 + 0.025 + 0.002, 0.03, 0.0])
    c = _det(end_on, drum)
    assert len(c) >= 1 and c.d.min() == pytest.approx(0.002, abs=1e-15)
    assert np.allclose(c.n_w[np.argmin(c.d)], [1.0, 0.0, 0.0], atol=1e-15)
    # a ball against a ball, and coincident centres push along +z
    c = _det(Sphere(body=0, radius=0.02, p_bs=[0.0, 0.05, 0.0]), Sphere(body=1, radius=0.03))
    assert c.d[0] == pytest.approx(0.0, abs=1e-15) and np.allclose(c.n_w[0], [0.0, 1.0, 0.0])
    c = _det(Sphere(body=0, radius=0.02), Sphere(body=1, radius=0.03))
    assert c.d[0] == -0.05 and np.array_equal(c.n_w[0], up)


def test_a_pair_with_no_detector_says_which_kinds():
    with pytest.raises(KeyError, match="plane.*plane"):
        collision.detect(Plane(name="floor"), Plane(name="roof"), PARAMS, REST, REST, 0.0)
