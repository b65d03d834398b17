"""The generalized friction law of seed 002 eq. (8), ||f_t|| <= kappa f_n^N, as a material
(``Material.friction_exponent``) in the PGS kernel (``solver_pgs.friction_limit``): a block on a
plane pushed sideways sticks below kappa f_n^N and slides above it, at two steps (the law is on
forces, so the threshold does not depend on the step); N = 1 is Coulomb bitwise."""
from dataclasses import replace

import numpy as np
import pytest

from sim_core import config
from sim_core.contact import materials, solver_pgs
from sim_core.contact.solvers import SOLVERS
from sim_core.dynamics import pmi
from sim_core.types import ContactPair, ContactParams, Contacts, Material, Model

KAPPA, N_EXP = 1.296, 0.7616          # seed 002 Sec. V-A's identified cable-on-drum law (kappa in N^(1-N))
MASS, G_ACC = 0.5, 9.81               # kg, m/s^2: f_n = 4.905 N, kappa f_n^N = 4.32 N (Coulomb would give 6.36 N)
MARGIN = 0.05                         # the push 5 % below / above the threshold
VEL_TOL = 1e-10                       # m/s: one contact, PGS converged to 1e-14 N
STEPS = (1e-3, 1e-2)                  # s


def _params() -> ContactParams:
    return ContactParams(friction=KAPPA, clusters=1, band=2e-4, broadphase_margin=2e-3, normal_scale=0.01,
                         penetration_gain=0.2, pgs_iterations=200, pgs_tolerance=1e-14, solver="pgs",
                         friction_exponent=N_EXP)


def _block(push: float, T: float):
    """A block at rest on the plane z = 0, one contact under its centre of mass (no lever arm),
    its weight and a push along x at the centre: (contacts, G, Cf, A, b)."""
    J = np.eye(3) * 1e-3
    F = np.array([push, 0.0, -MASS * G_ACC, 0.0, 0.0, 0.0])
    A, b = pmi.system(MASS, J, np.zeros(6), T, F, np.zeros((6, 6)))
    p = np.zeros((1, 3))
    n_w = np.array([[0.0, 0.0, 1.0]])
    c = Contacts(p.copy(), n_w, np.zeros(1), None, np.array([0]), np.array([-1]), np.array([0]))
    G, Cf = solver_pgs.world_jacobians(p, n_w, c.body, c.other, p, np.eye(3)[None])
    return c, G, Cf, A, b


@pytest.mark.parametrize("solver", materials.LAW_SOLVERS)
@pytest.mark.parametrize("T", STEPS)
def test_block_sticks_below_kappa_fn_to_the_n_and_slides_above(T, solver):
    f_n = MASS * G_ACC
    limit = KAPPA * f_n ** N_EXP
    assert limit < KAPPA * f_n - 1.0                   # far from Coulomb's kappa f_n: the test can tell them apart
    kw = dict(mu=np.array([KAPPA]), beta=np.array([0.2]), nexp=np.array([N_EXP]))
    c, G, Cf, A, b = _block((1.0 - MARGIN) * limit, T)
    stuck = SOLVERS[solver](replace(_params(), solver=solver), c, G, Cf, A, b, np.zeros(6), T, None, **kw)
    assert abs(stuck.V[0]) <= VEL_TOL and abs(stuck.V[2]) <= VEL_TOL
    assert stuck.lam[0, 0] == pytest.approx(f_n, rel=1e-9)
    assert np.hypot(*stuck.lam[0, 1:]) == pytest.approx((1.0 - MARGIN) * limit, rel=1e-9)   # inside the disk
    c, G, Cf, A, b = _block((1.0 + MARGIN) * limit, T)
    slid = SOLVERS[solver](replace(_params(), solver=solver), c, G, Cf, A, b, np.zeros(6), T, None, **kw)
    # it slides with a = (push - kappa f_n^N) / m: the friction force on the disk's rim
    assert slid.V[0] == pytest.approx(T * MARGIN * limit / MASS, rel=1e-6)
    assert np.hypot(*slid.lam[0, 1:]) == pytest.approx(limit, rel=1e-9)


def test_exponent_one_is_coulomb_bitwise():
    """N = 1 runs Coulomb's arithmetic: the law's kernel with exponents 1 equals ``pgs`` bit for bit."""
    rng = np.random.default_rng(3)
    m, n = 6, 12
    G = rng.normal(size=(m, 3, n))
    M = rng.normal(size=(n, n))
    A_inv = np.linalg.inv(M @ M.T + n * np.eye(n))
    V_free, V_prev = rng.normal(size=n), rng.normal(size=n)
    d, mu, beta = rng.normal(size=m) * 1e-4, np.full(m, 0.4), np.full(m, 0.2)
    a = solver_pgs.pgs(G, A_inv, V_free, V_prev, d, 0.01, mu, beta, 30, 1e-12, np.zeros((m, 3)))
    b = solver_pgs.pgs_law(G, A_inv, V_free, V_prev, d, 0.01, mu, np.ones(m), beta, 30, 1e-12, np.zeros((m, 3)))
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[2] == b[2]


def test_exponents_follow_the_pairs_and_need_pgs():
    rubber = Material(friction=KAPPA, penetration_gain=0.2, band=2e-4, friction_exponent=N_EXP)
    params = replace(_params(), friction_exponent=1.0)
    model = Model(bodies=(), shapes=(), pairs=(ContactPair(0, 0), ContactPair(1, 1, material=rubber)),
                  contact=params, drive=None, dt=0.01)
    c = Contacts(np.zeros((3, 3)), np.tile([0.0, 0.0, 1.0], (3, 1)), np.zeros(3), pair=np.array([1, 0, 1]))
    assert materials.exponents(model, c).tolist() == [N_EXP, 1.0, N_EXP]
    assert materials.exponents(replace(model, pairs=(ContactPair(0, 0),)), c.rows([1])) is None   # all Coulomb
    materials.check_solver(model)
    with pytest.raises(ValueError, match="pair 1: friction_exponent != 1 .* needs solver 'pgs'"):
        materials.check_solver(replace(model, contact=replace(params, solver="sor")))


def test_a_materials_table_takes_friction_exponent():
    contact = {k: f.default for k, f in config.SCHEMA["contact"].items()}
    t = config._check_material("materials.cable", {"friction": KAPPA, "friction_exponent": N_EXP}, contact)
    assert materials.from_table(t).friction_exponent == N_EXP
    with pytest.raises(config.ConfigError, match=r"^materials\.cable\.friction_exponent: must be > 0"):
        config._check_material("materials.cable", {"friction_exponent": 0.0}, contact)
