"""The docking parts' meshes (``geometry.docking_mesh``, built with manifold3d): closed and
outward-oriented, every vertex on the analytic surface, and the volume against the analytic
one (``docking.*_mass_properties`` at density 1) within the polygonization's own bound --
and equal, to rounding, to the exact volume of the polygonal capsules, so the booleans lose
or add nothing."""
import math

import numpy as np
import pytest

from sim_core.geometry import docking_mesh as dm
from sim_core.geometry.assets import load_mesh, write_ply
from sim_core.geometry.docking import HoleBlock, PinPlate, block_mass_properties, plate_mass_properties
from sim_core.geometry.mesh import check_closed_oriented

# m: a vertex is "on" a surface within this.  Capsule vertices are r cos(theta) etc. and one
# translation (rounding ~1e-17 m at 0.1 m); the only vertices the booleans make are rulings
# (x, y constant) cut by a plane z = const, exact as well.  1e-14 m leaves 1,000x for that.
VERTEX_TOL = 1e-14
# relative: the exact polyhedral volume against the mesh's signed-tetrahedra sum (rounding
# of ~1e5 terms of size ~1e-7 m^3 against a volume of ~1e-3 m^3)
POLY_VOLUME_RTOL = 1e-12

BLOCKS = {
    "seed: one hole, c = h + r": HoleBlock(np.zeros((1, 2)), 0.0175, 0.04, (0.08, 0.08, 0.0575)),
    "thick, four holes off axis": HoleBlock(np.array([[-0.05, 0.03], [0.05, 0.03], [-0.05, -0.03], [0.04, -0.02]]),
                                            0.0175, 0.03, (0.16, 0.12, 0.07)),
}
PLATE = PinPlate(np.array([[-0.05, 0.03], [0.05, 0.03], [0.0, -0.04]]), 0.0175, 0.035, (0.16, 0.12, 0.01))
SEGMENTS = (16, 64, 256)


def _on_capsules(V, centres_xy, radius, depth, z_top):
    """(on the cylinder walls, on the hemispheres) per vertex: the capsule ends with the
    hemisphere's centre at (x, y, -depth), cylinder from there up to z_top."""
    wall = np.zeros(len(V), bool)
    cap = np.zeros(len(V), bool)
    for x, y in centres_xy:
        q = V - np.array([x, y, -depth])
        rad = np.hypot(q[:, 0], q[:, 1])
        wall |= (np.abs(rad - radius) <= VERTEX_TOL) & (q[:, 2] >= -VERTEX_TOL) & (V[:, 2] <= z_top + VERTEX_TOL)
        cap |= (np.abs(np.linalg.norm(q, axis=1) - radius) <= VERTEX_TOL) & (q[:, 2] <= VERTEX_TOL)
    return wall, cap


@pytest.mark.parametrize("segments", SEGMENTS)
@pytest.mark.parametrize("name", list(BLOCKS))
def test_block_mesh_is_closed_and_its_vertices_are_on_the_surfaces(name, segments):
    blk = BLOCKS[name]
    mesh = dm.block_mesh(blk, segments)
    check_closed_oriented(mesh)
    V = mesh.vertices
    a, b, c = blk.box
    face = ((np.abs(np.abs(V[:, 0]) - a / 2) <= VERTEX_TOL) | (np.abs(np.abs(V[:, 1]) - b / 2) <= VERTEX_TOL)
            | (np.abs(V[:, 2]) <= VERTEX_TOL) | (np.abs(V[:, 2] + c) <= VERTEX_TOL))
    wall, cap = _on_capsules(V, blk.holes_xy, blk.radius, blk.depth, 0.0)
    assert np.all(face | wall | cap), V[~(face | wall | cap)][:5]
    # nothing inside the block's bounds but on a face or a hole; nothing above the top face
    assert V[:, 2].max() <= VERTEX_TOL and V[:, 2].min() >= -c - VERTEX_TOL
    # each hole: the rim (n vertices at radius r in the top face) and the wall, at radius r
    for x, y in blk.holes_xy:
        q = V - np.array([x, y, 0.0])
        rad = np.hypot(q[:, 0], q[:, 1])
        near = (rad < blk.radius + 1e-3) & (q[:, 2] > -blk.depth)
        assert np.abs(rad[near] - blk.radius).max() <= VERTEX_TOL
        rim = near & (np.abs(q[:, 2]) <= VERTEX_TOL)
        assert rim.sum() == segments
        ang = np.sort(np.mod(np.arctan2(q[rim, 1], q[rim, 0]), 2 * np.pi))
        assert np.allclose(ang, 2 * np.pi * np.arange(segments) / segments, atol=1e-12)


@pytest.mark.parametrize("segments", SEGMENTS)
@pytest.mark.parametrize("name", list(BLOCKS))
def test_block_mesh_volume_is_the_analytic_one_within_the_polygonization(name, segments):
    """The polygonal hole lies inside the true one and contains the capsule of radius
    r cos(pi/n) (cylinder) / r cos^2(pi/n) (hemisphere): 0 <= V_mesh - V <= N * deficit."""
    blk = BLOCKS[name]
    vol = dm.block_mesh(blk, segments).volume()
    exact = block_mass_properties(blk, 1.0)[0]
    n = len(blk.holes_xy)
    slack = 1e-12 * exact                                   # rounding of the volume sums
    assert -slack <= vol - exact <= n * dm.capsule_volume_deficit(blk.radius, blk.depth, segments) + slack
    a, b, c = blk.box
    poly = a * b * c - n * dm.polygonal_capsule_volume(blk.radius, blk.depth, segments)
    assert vol == pytest.approx(poly, rel=POLY_VOLUME_RTOL)


@pytest.mark.parametrize("segments", SEGMENTS)
def test_plate_mesh_is_closed_on_the_surfaces_and_its_volume_within_the_polygonization(segments):
    mesh = dm.plate_mesh(PLATE, segments)
    check_closed_oriented(mesh)
    V = mesh.vertices
    a, b, t = PLATE.plate
    face = ((np.abs(np.abs(V[:, 0]) - a / 2) <= VERTEX_TOL) | (np.abs(np.abs(V[:, 1]) - b / 2) <= VERTEX_TOL)
            | (np.abs(V[:, 2]) <= VERTEX_TOL) | (np.abs(V[:, 2] - t) <= VERTEX_TOL))
    wall, cap = _on_capsules(V, PLATE.pins_xy, PLATE.radius, PLATE.length, 0.0)
    assert np.all(face | wall | cap)
    assert V[:, 2].min() == pytest.approx(-(PLATE.length + PLATE.radius), abs=VERTEX_TOL)
    # the pins' tops are merged into the plate: no vertex inside the plate's slab but on its faces
    inner = (V[:, 2] > VERTEX_TOL) & (V[:, 2] < t - VERTEX_TOL)
    assert np.all(face[inner])
    vol = mesh.volume()
    exact = plate_mass_properties(PLATE, 1.0)[0]
    n = len(PLATE.pins_xy)
    slack = 1e-12 * exact
    assert -n * dm.capsule_volume_deficit(PLATE.radius, PLATE.length, segments) - slack <= vol - exact <= slack
    poly = a * b * t + n * dm.polygonal_capsule_volume(PLATE.radius, PLATE.length, segments)
    assert vol == pytest.approx(poly, rel=POLY_VOLUME_RTOL)


def test_polygonization_bounds_shrink_as_one_over_n_squared():
    r, h = 0.0175, 0.04
    d = [dm.capsule_volume_deficit(r, h, n) for n in (64, 128, 256)]
    assert d[0] / d[1] == pytest.approx(4.0, rel=1e-2) and d[1] / d[2] == pytest.approx(4.0, rel=1e-2)
    assert dm.sagitta(r, 256) <= r * (math.pi / 256) ** 2
    exact = math.pi * r * r * h + 2.0 / 3.0 * math.pi * r ** 3
    for n in (16, 64, 256):       # the polygonal capsule is between the inscribed and the true one
        assert exact - dm.capsule_volume_deficit(r, h, n) <= dm.polygonal_capsule_volume(r, h, n) <= exact


def test_a_block_mesh_survives_a_ply_round_trip(tmp_path):
    mesh = dm.block_mesh(BLOCKS["thick, four holes off axis"], 32)
    write_ply(tmp_path / "block.ply", mesh)
    back = load_mesh(tmp_path / "block.ply", validate=True)
    assert np.array_equal(back.vertices, mesh.vertices) and np.array_equal(back.faces, mesh.faces)


@pytest.mark.parametrize("segments", [6, 10, 0])
def test_segments_must_be_a_multiple_of_four_and_at_least_eight(segments):
    with pytest.raises(ValueError, match="segments"):
        dm.block_mesh(BLOCKS["seed: one hole, c = h + r"], segments)
