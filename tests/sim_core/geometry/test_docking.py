"""Seed 004 eqs. (1)-(10): the hole block's and the pin plate's mass properties against an
independent voxel integration of the same solids (``docking.block_inside`` /
``plate_inside``, which share no code with the formulas)."""
import numpy as np
import pytest

from sim_core.geometry.docking import HoleBlock, PinPlate, block_inside, block_mass_properties, plate_mass_properties

DENSITY = 2700.0
# Midpoint voxel integration converges as (voxel / size)^2 on these boxes-with-capsules;
# at 1/300 of the part's size its error is ~1e-4 of the inertia: the 0.5 % is
# the tolerance, ~50x above the integration's own error.
INERTIA_TOL = 5e-3
COM_TOL = 2e-4                    # m: the voxel grid's 1/300 of 0.1 m is 3e-4; its mean error is far below


def voxel_mass_properties(inside, lo, hi, n):
    """(mass, com, inertia about the com) of the solid `inside` in the box [lo, hi] on an n^3
    midpoint grid, summed slice by slice."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    h = (hi - lo) / n
    ax = [lo[i] + h[i] * (np.arange(n) + 0.5) for i in range(3)]
    X, Y = np.meshgrid(ax[0], ax[1], indexing="ij")
    dv = float(np.prod(h)) * DENSITY
    m, s1, s2 = 0.0, np.zeros(3), np.zeros((3, 3))
    for z in ax[2]:
        p = np.stack([X.ravel(), Y.ravel(), np.full(X.size, z)], 1)
        q = p[inside(p)]
        m += dv * len(q)
        s1 += dv * q.sum(0)
        s2 += dv * q.T @ q
    com = s1 / m
    second = s2 / m - np.outer(com, com)
    J = m * (np.trace(second) * np.eye(3) - second)
    return m, com, J


BLOCKS = {
    "seed: one hole, c = h + r": HoleBlock(np.zeros((1, 2)), 0.0175, 0.04, (0.08, 0.08, 0.0575)),
    "thick, four holes off axis": HoleBlock(np.array([[-0.05, 0.03], [0.05, 0.03], [-0.05, -0.03], [0.04, -0.02]]),
                                            0.0175, 0.03, (0.16, 0.12, 0.07)),
}


@pytest.mark.parametrize("name", list(BLOCKS))
def test_block_inertia_matches_a_voxel_integration(name):
    blk = BLOCKS[name]
    a, b, c = blk.box
    m, com, J = block_mass_properties(blk, DENSITY)
    mv, comv, Jv = voxel_mass_properties(lambda p: block_inside(blk, p), [-a / 2, -b / 2, -c], [a / 2, b / 2, 0.0], 300)
    assert m == pytest.approx(mv, rel=INERTIA_TOL)
    assert np.allclose(com, comv, atol=COM_TOL)
    scale = np.abs(J).max()
    assert np.abs(J - Jv).max() <= INERTIA_TOL * scale
    assert np.allclose(np.diag(J), np.diag(Jv), rtol=INERTIA_TOL)


def test_plate_inertia_matches_a_voxel_integration():
    plate = PinPlate(np.array([[-0.05, 0.03], [0.05, 0.03], [0.0, -0.04]]), 0.0175, 0.035, (0.16, 0.12, 0.01))
    m, com, J = plate_mass_properties(plate, DENSITY)
    lo, hi = [-0.08, -0.06, -0.035 - 0.0175], [0.08, 0.06, 0.01]
    from sim_core.geometry.docking import plate_inside
    mv, comv, Jv = voxel_mass_properties(lambda p: plate_inside(plate, p), lo, hi, 300)
    assert m == pytest.approx(mv, rel=INERTIA_TOL)
    assert np.allclose(com, comv, atol=COM_TOL)
    assert np.abs(J - Jv).max() <= INERTIA_TOL * np.abs(J).max()


def test_eq3_is_a_hemisphere_about_its_own_centre():
    """The printed eq. (3), with m_sph the whole sphere's mass: 83/320 m_cap r^2 across the
    axis and 2/5 m_cap r^2 about it (m_cap = m_sph / 2)."""
    from sim_core.geometry.docking import hemisphere_inertia
    J = hemisphere_inertia(2.0, 1.0)
    assert J[0, 0] == pytest.approx(83.0 / 320.0)
    assert J[2, 2] == pytest.approx(0.4)
