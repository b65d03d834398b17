"""Baseline contact stages (k-means, PGS) against laws and hand-checkable cases."""
import numpy as np
import pytest

from sim_core.contact import clustering, solver_pgs
from sim_core.dynamics import pmi
from sim_core.types import Contacts

G_ACC = 9.81
T = 0.01
# PGS on 4 redundant contacts converges geometrically; 200 sweeps leave < 1e-9 relative.
PGS_SWEEPS = 200
VEL_TOL = 1e-9      # m/s, velocity residual after the sweeps


def _box_on_plane(fx, mu, d=0.0, m=2.0, corners=None):
    """A 0.1 m cube on z = 0; one step from rest under gravity and a horizontal push fx
    applied at the bottom face's centre (so the push itself does not tip the cube).  Contacts at
    the given bottom points (default: the centre of the bottom face, where the tangential
    Delassus block is isotropic).  Returns (V+, lambdas, G)."""
    J = np.eye(3) * m * 0.1 ** 2 / 6
    if corners is None:
        corners = np.array([[0.0, 0.0, -0.05]])
    k = len(corners)
    p, R = np.array([0.0, 0.0, 0.05]), np.eye(3)
    x_w = corners + p
    n_w = np.tile([0.0, 0.0, 1.0], (k, 1))
    F = np.array([fx, 0.0, -m * G_ACC, 0.0, -0.05 * fx, 0.0])   # torque of the push, r x f
    A, b = pmi.system(m, J, np.zeros(6), T, F, np.zeros((6, 6)))
    A_inv = np.linalg.inv(A)
    G, _ = solver_pgs.contact_jacobians(x_w, n_w, p, R)
    lam, V, _ = solver_pgs.pgs(G, A_inv, A_inv @ b, np.zeros(6), np.full(k, d), T, np.full(k, mu), np.full(k, 0.2),
                               PGS_SWEEPS, 0.0, np.zeros((k, 3)))
    return V, lam, G


@pytest.mark.parametrize("ratio", [0.0, 0.5, 0.95])
def test_sticks_below_the_coulomb_threshold(ratio):
    mu, m = 0.4, 2.0
    V, lam, G = _box_on_plane(ratio * mu * m * G_ACC, mu, m=m)
    u = G[0] @ V
    assert np.abs(u).max() < VEL_TOL                        # contact point at rest: stick
    assert lam[0, 0] == pytest.approx(m * G_ACC, rel=1e-9)  # N = m g
    assert np.hypot(*lam[0, 1:]) <= mu * lam[0, 0]


@pytest.mark.parametrize("ratio", [1.2, 2.0, 5.0])
def test_slides_above_threshold_with_coulomb_deceleration(ratio):
    mu, m = 0.4, 2.0
    fx = ratio * mu * m * G_ACC
    V, lam, G = _box_on_plane(fx, mu, m=m)
    assert V[0] == pytest.approx(T * (fx - mu * m * G_ACC) / m, rel=1e-6)   # a = (F - mu N)/m
    assert abs(V[2]) < VEL_TOL
    assert np.hypot(*lam[0, 1:]) == pytest.approx(mu * lam[0, 0], rel=1e-12)


def test_redundant_contacts_keep_the_cone_and_the_load():
    """Four corner contacts: PGS keeps every force inside its cone and carries m g, but its
    radial cone projection does not maximise dissipation -- the body slides faster than
    Coulomb's law says (the seed solver of a later issue fixes this).  Bound it both ways."""
    mu, m = 0.4, 2.0
    fx = 1.2 * mu * m * G_ACC
    corners = np.array([[sx, sy, -0.05] for sx in (-0.05, 0.05) for sy in (-0.05, 0.05)])
    V, lam, _ = _box_on_plane(fx, mu, m=m, corners=corners)
    assert lam[:, 0].sum() == pytest.approx(m * G_ACC, rel=1e-9)
    for ln, t1, t2 in lam:
        assert np.hypot(t1, t2) <= mu * ln * (1 + 1e-12)
    coulomb, frictionless = T * (fx - mu * m * G_ACC) / m, T * fx / m
    assert coulomb * (1 - 1e-9) <= V[0] < 0.5 * (coulomb + frictionless)


def test_penetration_is_pushed_out_at_the_correction_rate_but_never_with_positive_work():
    """A penetrating box at rest under its weight is held where it is (pushing it out would do
    positive work against gravity: issue 23 (5)); one approaching at 1 m/s is pushed out at
    beta = 0.2 of the depth per step (less than its approach: the contact's work is negative)."""
    d = -1e-4
    V, lam, _ = _box_on_plane(0.0, 0.3, d=d)
    assert abs(V[2]) < VEL_TOL and lam[0, 0] > 0.0
    m = 1.0
    J = np.eye(3) * m * 0.1 ** 2 / 6
    V0 = np.array([0.0, 0.0, -1.0, 0.0, 0.0, 0.0])
    A, b = pmi.system(m, J, V0, T, np.array([0.0, 0.0, -m * G_ACC, 0.0, 0.0, 0.0]), np.zeros((6, 6)))
    A_inv = np.linalg.inv(A)
    G, _ = solver_pgs.contact_jacobians(np.array([[0.0, 0.0, 0.0]]), np.array([[0.0, 0.0, 1.0]]),
                                        np.array([0.0, 0.0, 0.05]), np.eye(3))
    lam, V, _ = solver_pgs.pgs(G, A_inv, A_inv @ b, V0, np.array([d]), T, np.array([0.3]), np.array([0.2]),
                               PGS_SWEEPS, 0.0, np.zeros((1, 3)))
    assert V[2] == pytest.approx(-0.2 * d / T, rel=1e-6)
    assert T * lam[0, 0] * 0.5 * (V0[2] + V[2]) < 0.0


def test_open_contact_gives_no_force():
    """A gap larger than one step of approach: no force, free fall continues."""
    V, lam, _ = _box_on_plane(0.0, 0.3, d=0.01)
    assert np.all(lam == 0.0)
    assert V[2] == pytest.approx(-G_ACC * T)


def test_kmeans_separates_opposite_flanks_and_repeats():
    rng = np.random.default_rng(3)
    n = 200
    x = rng.normal(scale=1e-3, size=(n, 3))
    up = np.arange(n) % 2 == 0
    nrm = np.where(up[:, None], [0.0, 0.0, 1.0], [0.0, 0.0, -1.0])
    d = -rng.uniform(0, 1e-4, n)
    c = Contacts(x, nrm, d)
    reps = clustering.kmeans(c, 12, 0.01)
    assert len(reps) == 12
    assert np.allclose(np.abs(reps.n_w[:, 2]), 1.0)         # no averaged-away normals
    assert reps.d.min() == pytest.approx(d.min())           # deepest node kept
    again = clustering.kmeans(c, 12, 0.01)
    assert np.array_equal(reps.x_w, again.x_w)              # deterministic


def test_kmeans_passes_small_sets_through():
    c = Contacts(np.zeros((5, 3)), np.tile([0, 0, 1.0], (5, 1)), -np.ones(5) * 1e-5)
    assert clustering.kmeans(c, 12, 0.01) is c


def test_kmeans_centroids_are_their_members_means():
    """The seed's K-means baseline: each representative is its cluster's mean position, mean
    depth and normalized mean normal (two far-apart blobs give two clusters exactly)."""
    rng = np.random.default_rng(5)
    a = rng.normal(scale=1e-4, size=(30, 3))
    b = rng.normal(scale=1e-4, size=(50, 3)) + [0.02, 0.0, 0.0]
    x = np.vstack([a, b])
    nrm = rng.normal(size=(80, 3)) * 0.1 + [0.0, 0.0, 1.0]
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    d = -rng.uniform(0, 1e-4, 80)
    reps = clustering.kmeans(Contacts(x, nrm, d), 2, 0.01, "centroid")
    for grp in (slice(0, 30), slice(30, 80)):
        j = int(np.argmin(np.linalg.norm(reps.x_w - x[grp].mean(0), axis=1)))
        assert np.allclose(reps.x_w[j], x[grp].mean(0), atol=1e-15)
        assert reps.d[j] == pytest.approx(d[grp].mean(), abs=1e-18)
        m = nrm[grp].mean(0)
        assert np.allclose(reps.n_w[j], m / np.linalg.norm(m), atol=1e-14)
