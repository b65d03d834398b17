"""Contact materials (``contact.materials``): each contact's friction and penetration gain
reach the solver kernels from its pair's material, and a config names a material per pair."""
from dataclasses import replace

import numpy as np
import pytest

from sim_core import config
from sim_core.contact import materials, solver_pgs
from sim_core.contact.solvers import SOLVERS
from sim_core.dynamics import pmi
from sim_core.paths import scenario_path
from sim_core.scenarios import scenario
from sim_core.types import ContactPair, ContactParams, Contacts, Material, Model

G_ACC = 9.81
T = 0.01
MASS, SIDE = 2.0, 0.1                 # kg, m: two cubes on the plane z = 0
PUSH = 0.2                            # the push, in units of the weight: between the two mu
MU = (0.1, 0.3)                       # cube 0 slips (0.1 < 0.2), cube 1 sticks (0.3 > 0.2)
VEL_TOL = 1e-9                        # m/s: the solvers' residual on two decoupled contacts
SWEEPS = 200                          # PGS sweeps (decoupled contacts converge in a few)


def _params(solver: str) -> ContactParams:
    return ContactParams(friction=0.15, clusters=12, band=2e-4, broadphase_margin=2e-3, normal_scale=0.01,
                         penetration_gain=0.2, pgs_iterations=SWEEPS, pgs_tolerance=1e-14, solver=solver,
                         sor_iterations=SWEEPS, sor_tolerance=1e-12)


def _two_cubes():
    """Two cubes side by side, each on one contact under its centre, pushed along x by PUSH
    times its weight at the bottom face (no tipping moment), from rest: one 12 x 12 system."""
    J = np.eye(3) * MASS * SIDE ** 2 / 6
    p = np.array([[0.0, 0.0, SIDE / 2], [1.0, 0.0, SIDE / 2]])
    R = np.stack([np.eye(3)] * 2)
    fx = PUSH * MASS * G_ACC
    F = np.array([fx, 0.0, -MASS * G_ACC, 0.0, -SIDE / 2 * fx, 0.0])
    A = np.zeros((12, 12))
    b = np.zeros(12)
    for i in range(2):
        A[6 * i:6 * i + 6, 6 * i:6 * i + 6], b[6 * i:6 * i + 6] = pmi.system(MASS, J, np.zeros(6), T, F,
                                                                               np.zeros((6, 6)))
    x_w = p - [0.0, 0.0, SIDE / 2]
    n_w = np.tile([0.0, 0.0, 1.0], (2, 1))
    c = Contacts(x_w, n_w, np.zeros(2), None, np.array([0, 1]), np.array([-1, -1]), np.array([0, 1]))
    G, Cf = solver_pgs.world_jacobians(x_w, n_w, c.body, c.other, p, R)
    return c, G, Cf, A, b


@pytest.mark.parametrize("solver", ["sor", "pgs"])
def test_two_frictions_in_one_solve_slip_and_stick(solver):
    """Coulomb's threshold per contact: pushed with 0.2 of its weight, the cube on mu = 0.1
    slides with a = (F - mu N) / m and the cube on mu = 0.3 sticks, in one solve.  (One mu
    for both would move both or neither: the test fails if the kernels saw one value.)"""
    c, G, Cf, A, b = _two_cubes()
    mu, beta = np.array(MU), np.full(2, 0.2)
    sol = SOLVERS[solver](_params(solver), c, G, Cf, A, b, np.zeros(12), T, None, None, mu=mu, beta=beta)
    V = sol.V.reshape(2, 6)
    assert V[0, 0] == pytest.approx(T * (PUSH - MU[0]) * G_ACC, abs=VEL_TOL)     # slips
    assert abs(V[1, 0]) <= VEL_TOL                                               # sticks
    assert np.abs(V[:, 2]).max() <= VEL_TOL                                      # both stay on the plane
    assert sol.lam[0, 0] == pytest.approx(MASS * G_ACC, rel=1e-9)
    assert np.hypot(*sol.lam[0, 1:]) == pytest.approx(MU[0] * sol.lam[0, 0], rel=1e-9)   # on the cone
    assert np.hypot(*sol.lam[1, 1:]) == pytest.approx(PUSH * MASS * G_ACC, rel=1e-9)     # inside it


def _world(pair_materials) -> Model:
    """A model with one pair per material (None: the default); bodies and shapes are not read."""
    pairs = tuple(ContactPair(k, k, material=m) for k, m in enumerate(pair_materials))
    return Model(bodies=(), shapes=(), pairs=pairs, contact=_params("sor"), drive=None, dt=T)


def test_per_contact_arrays_follow_the_pairs():
    oiled = Material(friction=0.05, penetration_gain=0.1, band=5e-4)
    model = _world([None, oiled])
    c = Contacts(np.zeros((3, 3)), np.tile([0.0, 0.0, 1.0], (3, 1)), np.zeros(3), pair=np.array([1, 0, 1]))
    mu, beta = materials.per_contact(model, c)
    assert mu.tolist() == [0.05, 0.15, 0.05] and beta.tolist() == [0.1, 0.2, 0.1]
    # without pair indices every contact is pair 0's
    mu, beta = materials.per_contact(_world([oiled, None]), replace(c, pair=None))
    assert mu.tolist() == [0.05] * 3 and beta.tolist() == [0.1] * 3
    # the band acts at detection: the pair's own, the world's object where it is the default
    assert materials.pair_params(model.contact, model.pairs[1]).band == 5e-4
    assert materials.pair_params(model.contact, model.pairs[0]) is model.contact
    assert model.contact.material == Material(0.15, 0.2, 2e-4, "complementarity")


def test_contacts_carry_their_pair_through_labelling_and_concat():
    a = Contacts(np.zeros((2, 3)), np.zeros((2, 3)), np.zeros(2)).on(0, pair=0)
    b = Contacts(np.zeros((1, 3)), np.zeros((1, 3)), np.zeros(1)).on(1, pair=3)
    both = Contacts.concat([a, b])
    assert both.pairs().tolist() == [0, 0, 3] and both.bodies().tolist() == [0, 0, 1]
    assert b.on(2).pairs().tolist() == [3]                     # relabelling keeps the pair


def _peg_cfg(**edit) -> dict:
    cfg = config.load(scenario_path("peg_in_hole"))
    cfg.update(edit)
    return cfg


def test_a_config_gives_its_pair_a_material():
    raw_mats = {"frictionless": {"friction": 0.0}}
    cfg = config.validate({**_toml("peg_in_hole"), "materials": raw_mats, "pairs": {"peg/hole": "frictionless"}},
                          "peg.toml")
    model, _ = scenario.build(cfg, "peg.toml")
    assert model.pairs[0].material == Material(0.0, 0.2, 2e-4, "complementarity")
    assert model.contact.friction == 0.15                       # the default stays [contact]'s
    model, _ = scenario.build(_peg_cfg(), "peg.toml")
    assert model.pairs[0].material is None


def test_a_pair_that_is_not_in_the_world_is_a_one_line_error():
    cfg = config.validate({**_toml("peg_in_hole"), "materials": {"dry": {}}, "pairs": {"nut/hole": "dry"}},
                          "peg.toml")
    with pytest.raises(config.ConfigError, match=r'^peg\.toml: pairs\."nut/hole": no such pair \(.*peg/hole'):
        scenario.build(cfg, "peg.toml")


def test_a_law_the_solver_does_not_solve_is_refused(monkeypatch):
    monkeypatch.setitem(materials.LAWS, "compliant", materials.Law("a spring-damper", {}, ("none",)))
    cfg = config.validate({**_toml("peg_in_hole"), "materials": {"soft": {"law": "compliant"}},
                           "pairs": {"peg/hole": "soft"}}, "peg.toml")
    with pytest.raises(config.ConfigError, match=r"^peg\.toml: contact\.solver = 'sor': .*'compliant'"):
        scenario.build(cfg, "peg.toml")


def _toml(name: str) -> dict:
    import tomllib
    return tomllib.loads(scenario_path(name).read_text())
