"""``solver_pgs.pgs_subspace`` on the problem it exists for: a stiff hoop pressed onto a drum.

A ring of M point masses (the seed 002 cable's links at 40 links: 0.157 g each, joined by its
axial stiffness E A / l = 5.6 kN/m) lies on a drum and moves inward and along itself; one
contact per node (normal radial, t1 along the ring, t2 along the drum's axis).  The PMI-like
system A = M / T + T K / 2 (T = 10 ms) makes the Delassus operator's normal rows spread over
decades: the uniform push that holds the hoop out stretches it, a single push only moves one
node.  Plain PGS is far from the solution at 50 sweeps; the subspace steps meet every normal
row exactly and agree with PGS run to convergence."""
import math

import numpy as np
import pytest

from sim_core.contact import solver_pgs

M_NODES = 24
MASS = 1.57e-4          # kg, a 1 cm link of the seed's cable (radius 2 mm, 1250 kg/m^3)
K_AXIAL = 5.6e3         # N/m, E A / l at 40 links (E = 4.462 MPa)
T = 0.01                # s, seed 002's step
RADIUS = 0.022          # m
SWEEPS = 50             # the winding config's cap order of magnitude
# m/s: what the subspace step leaves of the Signorini rows -- round-off of a direct solve on
# rows of order 1 (measured ~1e-15)
SIGNORINI_EXACT = 1e-10
# plain PGS at SWEEPS leaves the hoop approaching the drum faster than this (measured ~1e-2 m/s):
# the reason the subspace step exists, checked so that this test fails if the problem is easy
PGS_FAR = 1e-4
# relative: the normal forces against PGS run to convergence (REFERENCE_SWEEPS, tol 1e-13 N)
AGREE = 1e-6
REFERENCE_SWEEPS = 400_000


def hoop(mu: float):
    n = 3 * M_NODES
    ang = 2 * math.pi * np.arange(M_NODES) / M_NODES
    pos = RADIUS * np.column_stack([np.cos(ang), np.sin(ang), np.zeros(M_NODES)])
    K = np.zeros((n, n))
    for i in range(M_NODES):
        j = (i + 1) % M_NODES
        u = pos[j] - pos[i]
        u /= np.linalg.norm(u)
        ke = K_AXIAL * np.outer(u, u)
        for a, b, s in ((i, i, 1), (j, j, 1), (i, j, -1), (j, i, -1)):
            K[3 * a:3 * a + 3, 3 * b:3 * b + 3] += s * ke
    A = MASS / T * np.eye(n) + 0.5 * T * K
    radial = pos / RADIUS
    along = np.column_stack([-np.sin(ang), np.cos(ang), np.zeros(M_NODES)])
    z = np.tile([0.0, 0.0, 1.0], (M_NODES, 1))
    G = np.zeros((M_NODES, 3, n))
    for i in range(M_NODES):
        G[i, :, 3 * i:3 * i + 3] = np.stack([radial[i], along[i], z[i]])
    rng = np.random.default_rng(7)
    v0 = (-0.1 * radial + 0.05 * along + 0.01 * rng.standard_normal((M_NODES, 3))).ravel()
    A_inv = np.linalg.inv(A)
    V_free = v0.copy()              # the free motion: inward, sliding round the drum
    bn = np.zeros(M_NODES)          # contacts at zero gap: no approach at k+1
    return G, A_inv, V_free, bn, np.full(M_NODES, mu)


def normal_violation(G, V, bn):
    u = np.einsum("iaj,j->ia", G, V)
    return float(np.maximum(bn - u[:, 0], 0.0).max())


@pytest.mark.parametrize("mu, nexp", [(0.0, 1.0), (0.3, 1.0), (1.296, 0.7616)])
def test_subspace_meets_every_normal_row_where_pgs_cannot(mu, nexp):
    G, A_inv, V_free, bn, mus = hoop(mu)
    ex = np.full(M_NODES, nexp)
    lam0 = np.zeros((M_NODES, 3))
    lam_p, V_p, _ = solver_pgs.pgs_law(G, A_inv, V_free, np.zeros_like(V_free), np.zeros(M_NODES), T, mus, ex,
                                       np.zeros(M_NODES), SWEEPS, 1e-13, lam0)
    lam_s, V_s, sweeps, _ = solver_pgs.pgs_subspace(G, A_inv, V_free, bn, mus, ex, SWEEPS, 1e-13, lam0, 4)
    assert normal_violation(G, V_p, bn) > PGS_FAR
    assert normal_violation(G, V_s, bn) < SIGNORINI_EXACT
    assert lam_s[:, 0].min() >= 0.0
    lim = mus * lam_s[:, 0] ** nexp
    assert np.all(np.hypot(lam_s[:, 1], lam_s[:, 2]) <= lim * (1 + 1e-12) + 1e-300)
    # the velocity is the one of its forces: V = V_free + A^-1 G^T lambda
    assert np.allclose(V_s, V_free + A_inv @ np.einsum("iaj,ia->j", G, lam_s), rtol=0, atol=1e-12)


def test_subspace_agrees_with_pgs_converged_frictionless():
    """Frictionless, the problem is one QP with one solution: the subspace solve at SWEEPS
    equals PGS run to convergence."""
    G, A_inv, V_free, bn, mus = hoop(0.0)
    ex, lam0 = np.ones(M_NODES), np.zeros((M_NODES, 3))
    ref, V_ref, _ = solver_pgs.pgs_law(G, A_inv, V_free, np.zeros_like(V_free), np.zeros(M_NODES), T, mus, ex,
                                       np.zeros(M_NODES), REFERENCE_SWEEPS, 1e-13, lam0)
    assert normal_violation(G, V_ref, bn) < 1e-9          # the reference did converge
    lam, _, _, _ = solver_pgs.pgs_subspace(G, A_inv, V_free, bn, mus, ex, SWEEPS, 1e-13, lam0, 4)
    assert np.abs(lam[:, 0] - ref[:, 0]).max() <= AGREE * np.abs(ref[:, 0]).max()


def test_contact_space_fast_path_gives_the_same_numbers():
    """The hoop in contact space (``island_solvers.direct``'s form: G the identity's rows,
    A_inv its Delassus operator) takes the kernels' copying path (``solver_sor.identity_rows``:
    25 ms -> 0.1 ms for the Delassus blocks at 80 wound links); the same problem with one idle
    coordinate appended (so not the identity's rows) takes the general sums.  Bit for bit the
    same forces and velocities, PGS and PGS with subspace steps."""
    from sim_core.contact import solver_sor
    G, A_inv, V_free, bn, mu = hoop(0.3)
    m = G.shape[0]
    W = np.einsum("mij,jk,nlk->minl", G, A_inv, G).reshape(3 * m, 3 * m)
    u_free = np.einsum("mij,j->mi", G, V_free).ravel()
    eye = np.eye(3 * m).reshape(m, 3, 3 * m)
    pad = np.zeros((m, 3, 3 * m + 1))
    pad[:, :, :-1] = eye
    W_pad = np.eye(3 * m + 1)
    W_pad[:-1, :-1] = W
    assert solver_sor.identity_rows(eye) and not solver_sor.identity_rows(pad)
    ones, lam0 = np.ones(m), np.zeros((m, 3))
    fast = solver_pgs.pgs_subspace(eye, W, u_free, bn, mu, ones, SWEEPS, 1e-10, lam0, 10)
    slow = solver_pgs.pgs_subspace(pad, W_pad, np.append(u_free, 0.0), bn, mu, ones, SWEEPS, 1e-10, lam0, 10)
    assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1][:-1]) and fast[2] == slow[2]
    assert np.abs(fast[0][:, 0]).max() > 0.0
    fast = solver_pgs._pgs(eye, W, u_free, bn, mu, ones, SWEEPS, 1e-10, lam0)
    slow = solver_pgs._pgs(pad, W_pad, np.append(u_free, 0.0), bn, mu, ones, SWEEPS, 1e-10, lam0)
    assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1][:-1])


def test_a_seeded_subspace_step_finds_the_cold_ones_forces():
    """``solver_sor._subspace`` seeded with the rows that push after PGS (one or two solves)
    against the cold start that adds the rows one at a time: the same normal forces and
    velocities to round-off, every normal row met."""
    from sim_core.contact import solver_sor
    G, A_inv, V_free, bn, mu = hoop(0.3)
    m, ones = G.shape[0], np.ones(G.shape[0])
    lam, V, _ = solver_pgs._pgs(G, A_inv, V_free, bn, mu, ones, SWEEPS, 1e-10, np.zeros((m, 3)))
    AG, _ = solver_sor.delassus_blocks(G, A_inv)
    modes = np.where(lam[:, 0] > 0.0, solver_sor.STICK, solver_sor.OPEN).astype(np.int64)
    zero = np.zeros(V.shape[0])
    got = {}
    for seeded in (False, True):
        lam_s, V_s = lam.copy(), V.copy()
        _, ok = solver_sor._subspace(G, AG, V_s, lam_s, bn, mu, ones, modes, zero, zero, 0.0, 0.0, False, 2 * m,
                                     seeded)
        assert ok
        got[seeded] = (lam_s, V_s)
    assert np.abs(got[True][0] - got[False][0]).max() <= 1e-12 * np.abs(got[False][0]).max()
    assert np.abs(got[True][1] - got[False][1]).max() <= 1e-12 * np.abs(got[False][1]).max()
    u_n = np.einsum("mj,j->m", G[:, 0, :], got[True][1])
    assert (bn - u_n).max() <= SIGNORINI_EXACT
