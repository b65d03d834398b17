"""The batched detection of many capsule pairs (``collision.batch``) against the per-pair
detectors: the same contacts, pair by pair, in the model's pair order."""
import numpy as np
import pytest

from sim_core import step as step_mod
from sim_core.collision import batch, detectors
from sim_core.contact import materials
from sim_core.scenarios import chain
from sim_core.shapes import Plane, pose
from sim_core.types import ContactPair, Material

# m: the batch computes a capsule's world ends and reach in numba, the per-pair path in NumPy;
# they agree to rounding of centimetre coordinates
ROUNDING = 1e-15


def _per_pair(model, state, dt):
    out = []
    for k, pair in enumerate(model.pairs):
        a, b = model.shapes[pair.a], model.shapes[pair.b]
        det = detectors.detect(a, b, materials.pair_params(model.contact, pair), pose(state, a.body),
                               pose(state, b.body), dt)
        out.append(det.nodes.on(a.body, b.body, k))
    return out


def _draped_moving(n=40, seed=0):
    """The draped chain with its links moved onto and into the drum, turning and moving (the
    reach grows with the speed), half the pairs with a material of their own band."""
    model, st = chain.draped(n, dt=0.01)
    rng = np.random.default_rng(seed)
    drum = model.shapes[n]
    rho = drum.radius + chain.LinkSpec().radius + rng.uniform(-3e-4, 3e-4, n)
    th = np.linspace(-1.2, 1.2, n)                 # round the drum's top (its axis along world y)
    p = np.column_stack([drum.p_bs[0] + rho * np.sin(th), np.zeros(n), drum.p_bs[2] + rho * np.cos(th)])
    c, s_ = np.cos(th), np.sin(th)
    R = np.array([[[ci, 0.0, si], [0.0, 1.0, 0.0], [-si, 0.0, ci]] for ci, si in zip(c, s_)])
    V = rng.normal(scale=0.05, size=(n, 6))
    pairs = tuple(pr if i % 2 else ContactPair(pr.a, pr.b, material=Material(0.3, 0.2, 5e-4))
                  for i, pr in enumerate(model.pairs))
    from dataclasses import replace
    return replace(model, pairs=pairs), replace(st, p_w=p, R_wb=R, V=V)


def test_batched_capsule_cylinder_pairs_give_each_pairs_contacts():
    model, st = _draped_moving()
    groups, held = batch.plan(model)
    assert len(groups) == 1 and held.all()
    got = batch.detect(model, st, groups[0], 0.01)
    want = _per_pair(model, st, 0.01)
    assert len(got) == sum(len(w) for w in want) > 20
    for k, w in enumerate(want):
        g = got.rows(got.pair == k)
        assert len(g) == len(w)
        np.testing.assert_allclose(g.x_w, w.x_w, rtol=0, atol=ROUNDING)
        np.testing.assert_allclose(g.n_w, w.n_w, rtol=0, atol=ROUNDING)
        np.testing.assert_allclose(g.d, w.d, rtol=0, atol=ROUNDING)
        assert np.array_equal(g.idx, w.idx) and np.array_equal(g.body, w.body) and np.array_equal(g.other, w.other)


def test_collide_keeps_the_pair_order_with_a_batch_and_single_pairs():
    """A floor plane after the drum: the links' floor pairs are a second group; a last pair of
    its own kind runs per pair; the contacts come back in pair order either way."""
    from dataclasses import replace
    model, st = _draped_moving(12, seed=1)
    n = 12
    floor = Plane(name="floor", p_bs=np.array([0.0, 0.0, st.p_w[:, 2].min() - 1.05e-3]))
    shapes = model.shapes + (floor,)
    pairs = model.pairs + tuple(ContactPair(i, n + 1) for i in range(n)) + (ContactPair(0, 2),)
    model = replace(model, shapes=shapes, pairs=pairs)
    found = step_mod.collide(model, st, 0.01)
    assert len(batch.plan(model)[0]) == 2
    pr = found.contacts.pairs()
    assert np.all(np.diff(pr) >= 0)
    want = _per_pair(model, st, 0.01)
    assert len(found.contacts) == sum(len(w) for w in want)
    assert np.isin(np.arange(n, 2 * n), pr).sum() >= 2          # the floor touched too
    for k, w in enumerate(want):
        g = found.contacts.rows(pr == k)
        np.testing.assert_allclose(g.d, w.d, rtol=0, atol=ROUNDING)
        assert np.array_equal(g.idx, w.idx)


@pytest.mark.parametrize("n", [1])
def test_a_single_pair_runs_per_pair(n):
    model, _ = chain.draped(n, dt=0.01)
    groups, held = batch.plan(model)
    assert groups == () and not held.any()
