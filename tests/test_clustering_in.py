"""Learned clustering's networks (seed 000 eqs. (4)-(6)): the fast path against the plain
pair-by-pair formula, the weights' normalization, the surface projection and the normal
rotation."""
from __future__ import annotations

import numpy as np
import pytest

from sim_core import broadphase, clustering_in as CI, detection, scenario

REF_TOL = 1e-12      # the fast path regroups sums: rounding only
LEVEL_TOL = 5e-6     # m: three Newton steps onto a level set of a network SDF near thread corners


@pytest.fixture(scope="module")
def engaged():
    model, state, cfg = scenario.load("bolting")
    cfg["arm"]["robot"] = "off"
    model, state = scenario.build(cfg)
    res = scenario.simulate(model, state, 2.5)
    st = res.final
    _, x_s = broadphase.candidates(model, st, detection.reach(model, st))
    nodes, _ = detection.detect(model, x_s, detection.reach(model, st))
    near = nodes.d < 3e-4                                # the touching ones, not the speculative
    from sim_core.model import Contacts
    return model, st, Contacts(nodes.x_w[near], nodes.n_w[near], nodes.d[near])


def test_parameter_vector_round_trips():
    net = CI.INClustering.initial(3)
    v = net.vector()
    assert v.shape == (CI.N_PARAMS,)
    assert np.array_equal(CI.INClustering.from_vector(v).vector(), v)
    with pytest.raises(ValueError, match=str(CI.N_PARAMS)):
        CI.INClustering.from_vector(v[:-1])


def test_fast_weights_equal_the_plain_formula(engaged):
    model, st, nodes = engaged
    net = CI.INClustering.initial(1, scale=1.0)
    X = CI.node_features(nodes.x_w, st, np.array([1.0, -2.0, -14.0, 0.01, 0.02, 0.3]), model)
    nb = CI._neighbours(nodes.x_w, CI.K_NEIGHBOURS)
    W = CI.cluster_weights(net, X, nb)
    Wr = CI.weights_reference(net, X, nb)
    assert np.abs(W - Wr).max() < REF_TOL
    assert np.allclose(W.sum(axis=0), 1.0) and (W >= 0).all()
    assert len(nodes) > 100                              # a real engaged contact set


def test_representatives_sit_at_their_average_depth_with_unit_normals(engaged):
    model, st, nodes = engaged
    net = CI.INClustering.initial(2)
    reps = CI.cluster(net, nodes, st, np.zeros(6), model)
    assert len(reps) == CI.M_C
    xs = (reps.x_w - model.p_ws) @ model.R_ws
    d, _ = model.sdf.query(xs)
    assert np.abs(d - reps.d).max() < LEVEL_TOL
    assert np.allclose(np.linalg.norm(reps.n_w, axis=1), 1.0)
    assert reps.d.min() >= nodes.d.min() - 1e-12 and reps.d.max() <= nodes.d.max() + 1e-12


def test_normal_rotation_turns_by_the_predicted_angles():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = rng.normal(size=3)
        n /= np.linalg.norm(n)
        th1, th2 = rng.uniform(-0.2, 0.2, 2)
        m = CI._rotate(n, th1, th2)
        assert abs(np.linalg.norm(m) - 1) < 1e-12
        assert abs(np.arccos(np.clip(m @ n, -1, 1)) - abs(th2)) < 1e-9    # tilt = theta2


def test_initial_weights_already_partition_the_contact_set(engaged):
    """The seeded start puts each representative on its own group of nodes: the 12 are
    spread over the contact set, not piled at its centroid."""
    model, st, nodes = engaged
    reps = CI.cluster(CI.INClustering.initial(0), nodes, st, np.zeros(6), model)
    spread = np.linalg.norm(reps.x_w - reps.x_w.mean(0), axis=1).mean()
    node_spread = np.linalg.norm(nodes.x_w - nodes.x_w.mean(0), axis=1).mean()
    assert spread > 0.5 * node_spread
