"""The grinding workpiece (seed 001 Sec. 4.3): its signed distance against a brute-force search
of its surface, the surface chart, the tool path, the view's mesh; the ball-workpiece detector
against a brute-force closest point."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sim_core.collision.detectors import detect
from sim_core.geometry import grinding as g
from sim_core.geometry.mesh import check_closed_oriented
from sim_core.shapes import Sphere, Workpiece
from sim_core.types import WORLD, BodyPose, ContactParams

WP = g.Workpiece(radius=0.1, length=0.2, bead_radius=0.004, bead_height=0.002)
ROUNDING = 1e-12        # m: closed forms agree to rounding at 0.1 m
SAMPLED = 2e-6          # m: a brute-force search on a 0.05 mm, 2e-4 rad grid of the surface (its step^2 / (8 r))


def _dense_surface(wp: g.Workpiece, x_lo, x_hi, th_lo, th_hi, nx=201, nth=4001):
    """Points of the union's boundary, densely: the bar's face outside the bead and the bead's
    face outside the bar (workpiece frame)."""
    x = np.linspace(x_lo, x_hi, nx)
    pts = []
    for k, (zc, r) in enumerate(wp.cylinders()):
        th = np.linspace(th_lo, th_hi, nth) if k == 0 else np.linspace(-math.pi, math.pi, nth)   # the bead: round
        X, T = np.meshgrid(x, th, indexing="ij")
        p = np.stack([X, r * np.sin(T), zc + r * np.cos(T)], -1).reshape(-1, 3)
        d, _ = g.signed_distance(wp, p)
        pts.append(p[d > -1e-12])                 # on the boundary of the union, not inside the other
    return np.concatenate(pts)


def test_signed_distance_matches_a_brute_force_search():
    rng = np.random.default_rng(1)
    S = _dense_surface(WP, -0.004, 0.004, -0.12, 0.12)
    q = np.column_stack([rng.uniform(-0.002, 0.002, 60), rng.uniform(-0.006, 0.006, 60),
                         WP.radius + rng.uniform(0.0005, 0.006, 60)])
    d, n = g.signed_distance(WP, q)
    q, d, n = q[d > 0], d[d > 0], n[d > 0]          # outside, where the union's distance is exact
    assert len(q) > 30
    for k in range(len(q)):
        dist = np.linalg.norm(S - q[k], axis=1)
        j = int(np.argmin(dist))
        assert abs(dist[j] - d[k]) < SAMPLED
        # the nearest grid point is within half the grid's 40 um x step of the true one
        assert np.linalg.norm((q[k] - S[j]) / dist[j] - n[k]) < 2.5e-5 / d[k]
    assert np.allclose(np.linalg.norm(n, axis=1), 1.0)


def test_surface_points_are_on_the_surface_with_outward_unit_normals():
    th = np.linspace(-0.5, 0.5, 1001)
    p, n = g.surface(WP, np.zeros_like(th), th)
    d, grad = g.signed_distance(WP, p)
    assert np.abs(d).max() < ROUNDING
    assert np.allclose(np.linalg.norm(n, axis=1), 1.0, atol=ROUNDING)
    assert np.abs(n - grad).max() < 1e-9
    out, _ = g.signed_distance(WP, p + 1e-5 * n)
    assert np.all(out > 0)                         # outward: a step along n leaves the material
    exact = np.abs(out - 1e-5) < 1e-12             # by that much, but at the crease (the other face is near)
    assert exact.mean() > 0.99
    bead = p[:, 2] > WP.radius * np.cos(th) + 1e-12
    assert bead.any() and (~bead).any()            # both faces met


def test_tool_path_offsets_along_the_normal_and_keeps_the_tip_off_the_surface():
    r_t = 0.005
    tp = g.path(WP, r_t, spacing=0.002, passes=11, x_range=(-0.05, 0.05), points_per_pass=21)
    assert tp.centre.shape == (11 * 21, 3)
    d, n = g.signed_distance(WP, tp.contact)
    assert np.abs(d).max() < ROUNDING                              # contact points on the surface
    assert np.allclose(np.linalg.norm(tp.normal, axis=1), 1.0, atol=ROUNDING)
    assert np.abs(tp.normal - n).max() < 1e-9                      # the surface's outward normal there
    dc, _ = g.signed_distance(WP, tp.centre)
    assert np.abs(dc - r_t).max() < ROUNDING                       # the tip touches, nowhere deeper
    # zig-zag passes parallel to the crest line, equally spaced in angle
    for k in range(11):
        xs = tp.centre[tp.pass_id == k, 0]
        assert np.all(np.diff(xs) > 0) if k % 2 == 0 else np.all(np.diff(xs) < 0)
    assert np.allclose(np.diff(np.unique(tp.theta)), 0.002 / (WP.radius + r_t))


def test_tool_rotation_points_the_axis_along_the_normal():
    n = np.array([0.0, math.sin(0.3), math.cos(0.3)])
    R = g.tool_rotation(n)
    assert np.allclose(R.T @ R, np.eye(3)) and np.isclose(np.linalg.det(R), 1.0)
    assert np.allclose(R[:, 2], n)


def test_mesh_is_closed_and_its_vertices_on_the_surface():
    m = g.mesh(WP)
    check_closed_oriented(m)
    lateral = m.vertices[np.abs(np.hypot(m.vertices[:, 1], m.vertices[:, 2])) > 0.5 * WP.radius]
    assert np.abs(g.signed_distance(WP, lateral)[0]).max() < ROUNDING
    assert 0.99 * math.pi * WP.radius ** 2 * WP.length < m.volume() < 1.01 * math.pi * WP.radius ** 2 * WP.length


def test_bad_geometry_is_refused():
    with pytest.raises(ValueError, match="bead_height"):
        g.Workpiece(radius=0.1, length=0.2, bead_radius=0.004, bead_height=0.004)
    with pytest.raises(ValueError, match="radius must be > 0"):
        g.Workpiece(radius=-0.1, length=0.2, bead_radius=0.004, bead_height=0.002)


# --- the detector ----------------------------------------------------------------------------
PARAMS = ContactParams(friction=0.3, clusters=1, band=0.01, broadphase_margin=0.0, normal_scale=0.01,
                       penetration_gain=0.2, pgs_iterations=10, pgs_tolerance=1e-10)


def _world_frame():
    """A turned, shifted workpiece frame (so the detector's frame arithmetic is exercised)."""
    c, s = math.cos(0.4), math.sin(0.4)
    R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return R, np.array([0.02, -0.01, -0.1])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ball_workpiece_detector_matches_brute_force_closest_points(seed):
    rng = np.random.default_rng(seed)
    R, p = _world_frame()
    wp_shape = Workpiece(name="workpiece", body=WORLD, R_bs=R, p_bs=p, workpiece=WP)
    r = 0.005
    ball = Sphere(name="tip", body=0, radius=r)
    S = _dense_surface(WP, -0.003, 0.003, -0.15, 0.15)
    world = BodyPose(0.0, np.zeros(3), np.eye(3), np.zeros(6))
    for _ in range(12):
        th = rng.uniform(-0.08, 0.08)
        c_s = np.array([rng.uniform(-0.001, 0.001), 0.0, 0.0])
        c_s[1:] = (WP.radius + r + rng.uniform(-3e-4, 6e-4)) * np.array([math.sin(th), math.cos(th)])
        c_s[2] += WP.bead_height * rng.uniform(0.0, 1.2) * (abs(th) < 0.05)
        c_w = R @ c_s + p
        det = detect(ball, wp_shape, PARAMS, BodyPose(0.0, c_w, np.eye(3), np.zeros(6)), world, 0.0)
        c = det.nodes
        dist = np.linalg.norm(S - c_s, axis=1)
        best = float(dist.min()) - r
        d_union, _ = g.signed_distance(WP, c_s[None])
        if d_union[0] >= 0:                                     # outside: the exact union distance
            assert abs(float(c.d.min()) - best) < SAMPLED
        assert abs(float(c.d.min()) - (d_union[0] - r)) < ROUNDING
        for k in range(len(c)):                                 # each contact: its cylinder's closed form
            zc, rc = WP.cylinders()[int(c.idx[k])]
            rel = c_s - np.array([0.0, 0.0, zc])
            rho = math.hypot(rel[1], rel[2])
            assert abs(c.d[k] - (rho - rc - r)) < ROUNDING
            n_s = R.T @ c.n_w[k]
            assert np.allclose(n_s, [0.0, rel[1] / rho, rel[2] / rho], atol=1e-12)


def test_ball_in_the_crease_is_held_by_both_bar_and_bead():
    r = 0.005
    tp = g.path(WP, r, spacing=0.001, passes=41, x_range=(-0.01, 0.01), points_per_pass=2)
    wp_shape = Workpiece(name="workpiece", workpiece=WP)
    world = BodyPose(0.0, np.zeros(3), np.eye(3), np.zeros(6))
    ball = Sphere(name="tip", body=0, radius=r)
    for c_s in tp.centre:
        det = detect(ball, wp_shape, PARAMS, BodyPose(0.0, c_s, np.eye(3), np.zeros(6)), world, 0.0)
        assert det.nodes.d.min() > -ROUNDING                    # the path never drives the tip in
    # the crease's offset point: where the inflated bar and bead circles cross
    A, B, zb = WP.radius + r, WP.bead_radius + r, WP.bead_z
    z = (A * A - B * B + zb * zb) / (2.0 * zb)
    for y in (math.sqrt(A * A - z * z), -math.sqrt(A * A - z * z)):
        det = detect(ball, wp_shape, PARAMS, BodyPose(0.0, np.array([0.0, y, z]), np.eye(3), np.zeros(6)), world, 0.0)
        assert len(det.nodes) == 2 and np.abs(det.nodes.d).max() < ROUNDING
        assert sorted(det.nodes.idx.tolist()) == [0, 1]
        p, _ = g.surface(WP, 0.0, math.atan2(y, z))                # the surface's crease under it
        assert abs(g.signed_distance(WP, p)[0][0]) < ROUNDING
