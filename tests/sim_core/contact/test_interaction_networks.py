"""Learned clustering's networks (seed 000 eqs. (4)-(6)): the fast path against the plain
pair-by-pair formula, the weights' normalization, the representatives' depth and normal,
and the normal rotation."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

from sim_core import shapes
from sim_core.collision import broadphase, detection
from sim_core.contact import interaction_networks as CI
from sim_core.scenarios import scenario
from sim_core.types import BodyPose

Pair = namedtuple("Pair", "body shape")

REF_TOL = 1e-12      # float64 paths that only regroup sums: rounding only
SCORE_TOL = 2e-4     # the fast path's pair block is float32 (relative 6e-8 per operation, over
                     # sums of ~200 terms of scores of size ~10): |log W - log W_ref| bound


@pytest.fixture(scope="module")
def engaged():
    model, state, cfg = scenario.load("bolting")
    cfg["arm"]["robot"] = "off"
    model, state = scenario.build(cfg)
    res = scenario.simulate(model, scenario.record(cfg), state, 2.5)
    st = res.final.body(0)
    body, shape = shapes.nodes_of(model, 0), model.shapes[0]
    reach = detection.reach(body, model.contact, st, model.dt)
    ci, x_s = broadphase.candidates(body, shape, st, model.contact.broadphase_margin, reach)
    nodes, _ = detection.detect(shape, x_s, reach, ci)
    near = nodes.d < 3e-4                                # the touching ones, not the speculative
    from sim_core.types import Contacts
    return Pair(body, shape), st, Contacts(nodes.x_w[near], nodes.n_w[near], nodes.d[near], nodes.idx[near])


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
    X = CI.node_features(nodes.x_w, st, np.array([1.0, -2.0, -14.0, 0.01, 0.02, 0.3]), model.shape)
    nb = CI._neighbours(nodes.x_w, CI.K_NEIGHBOURS)
    W = CI.cluster_weights(net, X, nb)
    Wr = CI.weights_reference(net, X, nb)
    big = Wr > 1e-12
    assert np.abs(np.log(W[big]) - np.log(Wr[big])).max() < SCORE_TOL
    assert np.allclose(W.sum(axis=0), 1.0) and (W >= 0).all()
    assert len(nodes) > 100                              # a real engaged contact set


def test_fast_features_and_normal_angles_equal_the_plain_formulas(engaged):
    model, st, nodes = engaged
    f = np.array([1.0, -2.0, -14.0, 0.01, 0.02, 0.3])
    st = BodyPose(st.t, st.p_w, st.R_wb, np.array([0.01, -0.02, 0.003, 0.5, -0.2, 3.0]))
    X = CI.node_features(nodes.x_w, st, f, model.shape)
    assert np.abs(X - CI.node_features_reference(nodes.x_w, st, f, model.shape)).max() < REF_TOL
    net = CI.INClustering.initial(1, scale=1.0)
    Xr = np.hstack([X[:CI.M_C], nodes.n_w[:CI.M_C]])
    w = net.w
    ang = CI._normal_angles(Xr, w["r2_Wa"], w["r2_Wb"], w["r2_b1"], w["r2_W2"], w["r2_b2"], w["r2_W3"],
                            w["r2_b3"], w["o2_W1"], w["o2_b1"], w["o2_W2"], w["o2_b2"], CI.MAX_ANGLE)
    assert np.abs(ang - CI._normal_angles_reference(net, Xr)).max() < REF_TOL


@pytest.mark.parametrize("shape", ["engaged", "line", "pair", "duplicates", "flat"])
def test_neighbour_search_is_exact(engaged, shape):
    """Both searches (the part's neighbour table in numba; for hand-made contact sets, scipy's
    k-d tree without the node itself) give the same k nearest distances as scipy's k-d tree,
    including degenerate sets."""
    from scipy.spatial import cKDTree
    model, _, nodes = engaged
    rng = np.random.default_rng(7)
    x, idx = {"engaged": (nodes.x_w, nodes.idx),
              "line": (np.c_[rng.uniform(0, 1, 40), np.zeros(40), np.zeros(40)], None),
              "pair": (rng.normal(size=(2, 3)), None),
              "duplicates": (np.repeat(rng.normal(size=(8, 3)), 3, axis=0), None),
              "flat": (rng.normal(size=(300, 3)) * [1.0, 1.0, 1e-9], None)}[shape]
    k = min(CI.K_NEIGHBOURS, len(x) - 1)
    ref = np.sort(cKDTree(x).query(x, k=k + 1)[0][:, 1:], axis=1)
    searches = [CI._neighbours(x, CI.K_NEIGHBOURS)]
    if idx is not None:
        searches.append(CI._neighbours(x, CI.K_NEIGHBOURS, idx, model.body.node_nb))
        sub = np.arange(0, len(x), 7)                    # a sparse subset: the table's rows run short
        xs = x[sub]
        ks = min(CI.K_NEIGHBOURS, len(sub) - 1)
        nb = CI._neighbours(xs, CI.K_NEIGHBOURS, idx[sub], model.body.node_nb)
        d = np.linalg.norm(xs[nb] - xs[:, None], axis=2)
        assert np.allclose(d, cKDTree(xs).query(xs, k=ks + 1)[0][:, 1:], atol=1e-12)
    for nb in searches:
        assert nb.shape == (len(x), k)
        assert not (nb == np.arange(len(x))[:, None]).any()
        d = np.linalg.norm(x[nb] - x[:, None], axis=2)
        assert np.allclose(d, ref, atol=1e-12)


def test_soft_min_depth_lies_between_the_deepest_member_and_the_weighted_mean():
    rng = np.random.default_rng(3)
    d = rng.uniform(-3e-5, 2e-4, 300)
    W = rng.dirichlet(np.full(300, 0.3), size=CI.M_C).T          # (n, M_c), columns sum to 1
    dr = CI.soft_min_depth(W, d)
    assert (dr >= d.min() - 1e-15).all() and (dr <= W.T @ d + 1e-15).all()
    one_hot = np.zeros((300, 1))
    one_hot[17] = 1.0
    assert abs(CI.soft_min_depth(one_hot, d)[0] - d[17]) < 1e-15       # a single member: its depth
    assert np.allclose(CI.soft_min_depth(W, d, delta=1.0), W.T @ d, rtol=0, atol=1e-8)   # wide delta: the mean


def test_representatives_are_tilted_averages_with_the_surface_normal_turned(engaged):
    """Each representative is its depth-tilted average at its soft-min depth; its normal is
    the static SDF's gradient there, turned by eq. (6)'s angles."""
    model, st, nodes = engaged
    net = CI.INClustering.initial(2, scale=1.0)                 # turns of a visible size
    f_ext = np.zeros(6)
    reps = CI.cluster(net, nodes, st, f_ext, model.shape, model.body.node_nb)
    assert len(reps) == CI.M_C
    X = CI.node_features(nodes.x_w, st, f_ext, model.shape)
    Y = CI.cluster_scores(net, X, CI._neighbours(nodes.x_w, CI.K_NEIGHBOURS, nodes.idx, model.body.node_nb))
    xr, _, dr = CI._tilted_averages(Y, nodes.x_w, nodes.n_w, nodes.d, CI.SOFT_MIN_DEPTH)
    assert np.abs(reps.x_w - xr).max() < 1e-15 and np.abs(reps.d - dr).max() < 1e-18
    assert reps.d.min() >= nodes.d.min() - 1e-12 and reps.d.max() <= nodes.d.max() + 1e-12
    _, g = model.shape.sdf.query((reps.x_w - model.shape.p_ws) @ model.shape.R_ws)
    n0 = g @ model.shape.R_ws.T
    Xr = np.hstack([CI.node_features(reps.x_w, st, f_ext, model.shape), n0])
    ang = CI._normal_angles_reference(net, Xr)
    assert np.abs(ang).max() > 1e-3
    assert np.abs(reps.n_w - CI._rotate_all(n0, ang[:, 0], ang[:, 1], model.shape.R_ws[:, 2].copy())).max() < 1e-9
    assert np.allclose(np.linalg.norm(reps.n_w, axis=1), 1.0)


def test_normal_rotation_turns_by_the_predicted_angles():
    """theta2 leans the normal toward the part's axis by exactly theta2, the same way on every
    side of the part (continuous around the axis), and theta1 turns about n."""
    rng = np.random.default_rng(0)
    axis = np.array([0.0, 0.0, 1.0])
    for _ in range(50):
        n = rng.normal(size=3)
        n /= np.linalg.norm(n)
        th1, th2 = rng.uniform(-0.2, 0.2, 2)
        m = CI._rotate(n, th1, th2)
        assert abs(np.linalg.norm(m) - 1) < 1e-12
        assert abs(np.arccos(np.clip(m @ n, -1, 1)) - abs(th2)) < 1e-9    # tilt = theta2
        lean = CI._rotate(n, 0.0, th2)
        assert np.sign(lean @ axis - n @ axis) == np.sign(th2)             # toward +axis for th2 > 0
    # around the axis: radial normals all lean up by the same amount, with no jump anywhere
    phi = np.linspace(0, 2 * np.pi, 721)
    radial = np.stack([np.cos(phi), np.sin(phi), np.zeros_like(phi)], 1)
    up = CI._rotate_all(radial, np.zeros(721), np.full(721, 0.2), axis)
    assert np.allclose(up[:, 2], np.sin(0.2), atol=1e-12)
    along = CI._rotate(axis, 0.1, 0.2)                                      # a normal on the axis
    assert abs(np.arccos(np.clip(along @ axis, -1, 1)) - 0.2) < 1e-9


def test_initial_weights_already_partition_the_contact_set(engaged):
    """The seeded start puts each representative on its own group of nodes: the 12 are
    spread over the contact set, not piled at its centroid."""
    model, st, nodes = engaged
    reps = CI.cluster(CI.INClustering.initial(0), nodes, st, np.zeros(6), model.shape, model.body.node_nb)
    spread = np.linalg.norm(reps.x_w - reps.x_w.mean(0), axis=1).mean()
    node_spread = np.linalg.norm(nodes.x_w - nodes.x_w.mean(0), axis=1).mean()
    assert spread > 0.5 * node_spread


def test_fused_tilted_averages_equal_the_plain_formula(engaged):
    """The one-pass kernel equals depth_tilted() on softmax(Y), and the same formula in the
    log domain where the scores are so spread that W itself underflows."""
    from scipy.special import logsumexp
    model, st, nodes = engaged
    rng = np.random.default_rng(11)
    t = (nodes.d - nodes.d.min()) / CI.SOFT_MIN_DEPTH
    for spread in (0.1, 5.0, 80.0, 400.0):
        Y = rng.normal(0.0, spread, (len(nodes), CI.M_C))
        L = Y - t[:, None]
        P = np.exp(L - logsumexp(L, axis=0))
        dr = nodes.d.min() - CI.SOFT_MIN_DEPTH * (logsumexp(L, axis=0) - logsumexp(Y, axis=0))
        if spread <= 5.0:                       # W is representable: the plain path agrees
            P0, dr0 = CI.depth_tilted(CI._softmax_columns(Y), nodes.d)
            assert np.abs(P0 - P).max() < 1e-12 and np.abs(dr0 - dr).max() < 1e-15
        nr = P.T @ nodes.n_w
        nr /= np.linalg.norm(nr, axis=1, keepdims=True)
        xr2, nr2, dr2 = CI._tilted_averages(Y, nodes.x_w, nodes.n_w, nodes.d, CI.SOFT_MIN_DEPTH)
        assert np.abs(xr2 - P.T @ nodes.x_w).max() < 1e-12
        assert np.abs(nr2 - nr).max() < 1e-9
        assert np.abs(dr2 - dr).max() < 1e-15
