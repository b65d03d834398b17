"""Seed 004's pin-hole contact manifold (``collision.pins``) over 10,000 random poses: the cap
and body cases against their closed forms written here in world axes (1e-9 m), the rim case
against a dense brute-force search over the rim (1 um), and what each case must and must not
report."""
import math

import numpy as np
import pytest

from sim_core.collision.pins import KEYS_PER_PIN, MAX_PER_PIN, detect_pins
from sim_core.math.so3 import quat_to_matrix

R_HOLE, H_HOLE = 0.0175, 0.04          # m: the seed's 35 mm hole, 40 mm deep cylinder
HALF = (0.06, 0.05)                    # m, the block's top face half sizes
BAND = 2e-3                            # m, report gaps below this (to see near misses too)
POSES = 10_000
CLOSED_FORM_TOL = 1e-9                 # m: the bound (rounding is ~1e-16 m)
RIM_TOL = 1e-6                         # m: the bound against the brute force
RIM_GRID = 4096                        # rim points in each of the brute force's grids


def _rot(rng):
    """A random rotation (a uniformly random unit quaternion)."""
    return quat_to_matrix(rng.normal(size=4))


def random_case(rng):
    """A pin near the hole at (0.01, -0.005) of a randomly placed block, in world axes:
    (A_w, B_w, rho, R_ws, p_ws, hole centre c_s)."""
    c_s = np.array([0.01, -0.005])
    rho = R_HOLE * rng.uniform(0.6, 1.0)
    ang = rng.uniform(0, 2 * np.pi)
    rad = rng.uniform(0.0, R_HOLE + rho + 2e-3)
    A = np.array([c_s[0] + rad * math.cos(ang), c_s[1] + rad * math.sin(ang),
                  rng.uniform(-H_HOLE - R_HOLE, 0.01)])
    tilt, az = rng.uniform(0, math.radians(50)), rng.uniform(0, 2 * np.pi)
    d = np.array([math.sin(tilt) * math.cos(az), math.sin(tilt) * math.sin(az), math.cos(tilt)])
    B = A + rng.uniform(0.02, 0.07) * d
    R_ws, p_ws = _rot(rng), rng.normal(size=3) * 0.3
    return R_ws @ A + p_ws, R_ws @ B + p_ws, rho, R_ws, p_ws, c_s


def run(A_w, B_w, rho, R_ws, p_ws, c_s, rng):
    """The kernel, with the pin given from a random body pose."""
    R_wb, p_w = _rot(rng), rng.normal(size=3) * 0.3
    seg_b = np.array([[R_wb.T @ (A_w - p_w), R_wb.T @ (B_w - p_w)]])
    x, n = np.zeros((MAX_PER_PIN, 3)), np.zeros((MAX_PER_PIN, 3))
    d, key = np.zeros(MAX_PER_PIN), np.zeros(MAX_PER_PIN, np.int64)
    m = detect_pins(seg_b, rho, R_wb, p_w, R_ws, p_ws, c_s[None, :].copy(), R_HOLE, H_HOLE, HALF[0], HALF[1],
                    BAND, x, n, d, key)
    return x[:m], n[:m], d[:m], key[:m] % KEYS_PER_PIN


def wall_closed_form(E, rho, R_ws, p_ws, c_s):
    """Gap, wall point and normal of a pin end E below the top face (world axes)."""
    a = R_ws[:, 2]
    P1 = R_ws @ np.array([c_s[0], c_s[1], 0.0]) + p_ws
    s = (E - P1) @ a                              # height over the top face (< 0 inside)
    q = P1 + max(s, -H_HOLE) * a                  # nearest point of the axis ray
    v = E - q
    return R_HOLE - rho - np.linalg.norm(v), q + R_HOLE * v / np.linalg.norm(v), -v / np.linalg.norm(v)


def rim_brute_force(A, B, R_ws, p_ws, c_s):
    """Least distance from the segment [A, B] to the rim circle and the rim point: 4,096 rim
    points, then twice 4,096 more across the best one's neighbours (each rim point's distance
    to the segment is closed form): the last grid's spacing is 6e-12 m of rim, far below
    ``RIM_TOL``.  (A golden-section search took 80 scalar NumPy calls a pose, 34 s for the
    10,000 poses; the grids take 3 vector calls.)"""
    centre = R_ws @ np.array([c_s[0], c_s[1], 0.0]) + p_ws
    ex, ey = R_ws[:, 0], R_ws[:, 1]
    D = B - A

    def dist(th):
        R = centre + R_HOLE * (np.cos(th)[..., None] * ex + np.sin(th)[..., None] * ey)
        t = np.clip(((R - A) @ D) / (D @ D), 0.0, 1.0)
        return np.linalg.norm(A + t[..., None] * D - R, axis=-1), R

    th = np.linspace(0, 2 * np.pi, RIM_GRID, endpoint=False)
    for _ in range(3):
        dd, R = dist(th)
        k = int(np.argmin(dd))
        step = th[1] - th[0]
        th = np.linspace(th[k] - step, th[k] + step, RIM_GRID)
    return float(dd[k]), R[k]


@pytest.fixture(scope="module")
def cases():
    rng = np.random.default_rng(4)
    out = []
    for _ in range(POSES):
        c = random_case(rng)
        out.append((c, run(*c, rng)))
    return out


def test_cap_and_body_contacts_are_the_closed_forms(cases):
    seen = {"cap": 0, "body": 0}
    for (A, B, rho, R_ws, p_ws, c_s), (x, n, d, key) in cases:
        for e, E in ((0, A), (1, B)):
            below = (E - (R_ws @ np.array([*c_s, 0.0]) + p_ws)) @ R_ws[:, 2]
            gap, xw, nw = wall_closed_form(E, rho, R_ws, p_ws, c_s) if below < 0 else (np.inf, None, None)
            mine = np.flatnonzero(key == e)
            if gap < BAND and np.linalg.norm(xw - (R_ws @ np.array([*c_s, 0.0]) + p_ws)) < 10:
                # reported exactly when the closed form says it touches (inside the hole's reach)
                if -gap < 2 * rho:
                    assert len(mine) == 1
                    i = mine[0]
                    assert abs(d[i] - gap) <= CLOSED_FORM_TOL
                    assert np.linalg.norm(x[i] - xw) <= CLOSED_FORM_TOL
                    assert np.linalg.norm(n[i] - nw) <= 1e-9
                    seen["cap" if below < -H_HOLE else "body"] += 1
            else:
                assert len(mine) == 0
    assert seen["cap"] > 300 and seen["body"] > 300, seen


def test_rim_contacts_match_a_brute_force_search(cases):
    seen = 0
    for (A, B, rho, R_ws, p_ws, c_s), (x, _n, d, key) in cases:
        ref, R = rim_brute_force(A, B, R_ws, p_ws, c_s)
        mine = np.flatnonzero((key == 2) | (key == 3))
        if ref - rho < BAND - 1e-9:
            assert len(mine) >= 1
            i = mine[np.argmin(d[mine])]
            assert abs(d[i] + rho - ref) <= RIM_TOL
            assert np.linalg.norm(x[i] - R) <= RIM_TOL or abs(ref) < 1e-4   # the point is unique unless S is on the rim
            seen += 1
        elif ref - rho > BAND + 1e-9:
            assert len(mine) == 0
    assert seen > 1000, seen


def test_top_face_edge_and_side_contacts(cases):
    seen = edge = 0
    for (A, B, rho, R_ws, p_ws, c_s), (x, n, d, key) in cases:
        centre = R_ws @ np.array([*c_s, 0.0]) + p_ws
        for e, E in ((0, A), (1, B)):
            rel = E - centre
            z = rel @ R_ws[:, 2]
            radial = math.hypot(rel @ R_ws[:, 0], rel @ R_ws[:, 1])
            mine = np.flatnonzero(key == 4 + e)
            E_s = R_ws.T @ (E - p_ws)
            on_face = abs(E_s[0]) <= HALF[0] and abs(E_s[1]) <= HALF[1]
            if not on_face:
                # beyond the rectangle: against the nearest edge or side point of the box
                q = np.array([np.clip(E_s[0], -HALF[0], HALF[0]), np.clip(E_s[1], -HALF[1], HALF[1]), min(E_s[2], 0.0)])
                gap = np.linalg.norm(E_s - q) - rho
                if gap < BAND - 1e-12:                     # beside the block too (below its top)
                    assert len(mine) == 1 and abs(d[mine[0]] - gap) <= CLOSED_FORM_TOL
                    assert np.linalg.norm(x[mine[0]] - (R_ws @ q + p_ws)) <= CLOSED_FORM_TOL
                    edge += 1
                elif gap > BAND + 1e-12:
                    assert len(mine) == 0
            elif radial >= R_HOLE and -rho < z < rho + BAND:
                assert len(mine) == 1
                assert abs(d[mine[0]] - (z - rho)) <= CLOSED_FORM_TOL
                assert np.allclose(n[mine[0]], R_ws[:, 2], atol=1e-12)
                assert abs((x[mine[0]] - centre) @ R_ws[:, 2]) <= CLOSED_FORM_TOL
                seen += 1
            elif radial < R_HOLE or z > rho + BAND or z < -rho:
                assert len(mine) == 0
    assert seen > 300 and edge > 10, (seen, edge)


def test_a_centred_pin_is_free_and_a_seated_zero_clearance_pin_touches_only_at_the_bottom():
    rng = np.random.default_rng(1)
    R_ws, p_ws, c_s = np.eye(3), np.zeros(3), np.array([0.0, 0.0])
    A, B = np.array([0.0, 0.0, -0.02]), np.array([0.0, 0.0, 0.03])
    x, n, d, key = run(A, B, 0.9 * R_HOLE, R_ws, p_ws, c_s, rng)
    assert np.all(d > 0.1 * R_HOLE - 1e-12)              # only near misses, every gap the clearance
    A = np.array([0.0, 0.0, -H_HOLE - 1e-4])             # zero clearance, pushed 0.1 mm too far
    x, n, d, key = run(A, B, R_HOLE, R_ws, p_ws, c_s, rng)
    bottom = np.flatnonzero(key == 0)
    assert len(bottom) == 1 and d[bottom[0]] == pytest.approx(-1e-4, abs=1e-12)
    assert np.allclose(n[bottom[0]], [0.0, 0.0, 1.0], atol=1e-12)


def test_supporting_planes_bound_the_exact_wall_contact_from_outside(cases):
    """Each supporting plane of the tip's capsule is an outer bound: its gap is never below the
    exact wall gap of the tip (n_k . v <= |v|), and the nearest one is within the polytope's
    looseness (cos 22.5 deg below the horizon) of it."""
    from sim_core.collision.pins import N_EXACT, SUPPORT_DIRS
    seen = 0
    for (_, _, rho, *_), (_, _, d, key) in cases:
        sup = np.flatnonzero((key >= N_EXACT) & (key < N_EXACT + len(SUPPORT_DIRS)))
        exact = np.flatnonzero(key == 0)
        if len(sup) == 0 or len(exact) == 0:
            continue
        c = R_HOLE - rho
        delta = c - d[exact[0]]                       # |v|: the tip centre's offset from the axis ray
        assert np.all(d[sup] >= d[exact[0]] - 1e-12)
        # n_k . v >= |v| cos 22.5 deg for the nearest direction, when it is reported
        if d[sup].min() < BAND - 2 * delta:
            assert c - d[sup].min() >= delta * math.cos(math.radians(22.5)) - 1e-12
        seen += 1
    assert seen > 300, seen


def test_a_pin_drooping_across_the_blocks_outer_edge_touches_the_edge():
    """A pin across the block's +x top edge, sloping down beyond it: its body is nearest the
    edge (the face under its upper end is further), at the distance from the edge's line to the
    pin's line in their common plane; the contact is on the edge, pushing the pin up and out."""
    from sim_core.collision.pins import N_EDGES
    rng = np.random.default_rng(2)
    rho = 0.9 * R_HOLE
    # in the x-z plane at y = 0.03 (clear of the hole at (0.01, -0.005)), crossing x = HALF[0]
    A = np.array([HALF[0] - 0.01, 0.03, rho + 0.002])
    B = np.array([HALF[0] + 0.03, 0.03, rho - 0.010])
    u = (B - A)[[0, 2]] / np.linalg.norm((B - A)[[0, 2]])
    rel = np.array([HALF[0], 0.0]) - A[[0, 2]]
    dist = abs(rel[0] * u[1] - rel[1] * u[0])               # edge line (a point in x-z) to the pin's line
    x, n, d, key = run(A, B, rho, np.eye(3), np.zeros(3), np.array([0.01, -0.005]), rng)
    edge = np.flatnonzero(key >= KEYS_PER_PIN - N_EDGES)
    assert len(edge) == 1
    i = edge[0]
    assert d[i] == pytest.approx(dist - rho, abs=1e-12)
    assert np.allclose(x[i], [HALF[0], 0.03, 0.0], atol=1e-12)
    assert n[i][0] > 0.0 and n[i][2] > 0.0 and abs(n[i][1]) < 1e-12


def test_a_tip_exactly_on_the_top_face_keeps_its_rim_contact():
    """g' exactly zero at a sample of the rim search (a vertical pin whose tip centre is at
    z = 0 to the bit): the minimum there is still found (it was skipped: no contact at all
    for a pin 2.9 mm deep in the rim)."""
    rng = np.random.default_rng(3)
    rho = 0.9 * R_HOLE
    c_s = np.array([0.01, -0.005])
    A = np.array([c_s[0] + R_HOLE - 0.003, c_s[1], 0.0])
    x, n, d, key = run(A, A + np.array([0.0, 0.0, 0.04]), rho, np.eye(3), np.zeros(3), c_s, rng)
    rim = np.flatnonzero((key == 2) | (key == 3))
    assert len(rim) >= 1 and d[rim].min() == pytest.approx(0.003 - rho, abs=1e-12)
