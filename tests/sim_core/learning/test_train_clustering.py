"""Training the clustering (issue 7, item 3): the wrench-error machinery reproduces the
reference data when it uses the reference's own model, and a small F/T-style file trains end
to end (seeded, checkpointed, resumable) into a loadable weight file."""
from __future__ import annotations

import numpy as np
import pytest

from sim_core import config as config_mod
from sim_core.contact import interaction_networks as clustering_in
from sim_core.learning import reference_data, wrench_data
from sim_core.learning import train_clustering as TC
from sim_core.paths import scenario_path
from sim_core.scenarios import scenario
from sim_core.shapes import nodes_of

# the replay solves the same step again, without the reference run's warm start: the SOR
# tolerance (1e-5 N per contact, over hundreds of contacts) bounds how far it can land
REPLAY_REL = 0.01

pytest.importorskip("cma")


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    return {t: reference_data.generate(t, d / f"{t}.mcap", 1500, seed=2)["file"] for t in ("peg_in_hole", "bolting")}


@pytest.mark.parametrize("task", ["peg_in_hole", "bolting"])
def test_full_contact_replay_reproduces_the_reference_wrench(ref, task):
    d = wrench_data.load(ref[task])
    cfg = config_mod.load(scenario_path(task))
    cfg["arm"]["robot"] = "off"
    cfg["scenario"]["dt"] = d.meta["dt"]
    cfg["contact"].update(reference_data.HIFI)
    model, _ = scenario.build(cfg)
    pressed = np.flatnonzero(np.linalg.norm(d.wrench[:, :3], axis=1) > 0.1)
    samples = TC.prepare(model, d, pressed[:: max(1, len(pressed) // 20)])
    assert len(samples) >= 10
    e = TC.wrench_errors(model, samples, lambda s: s[2])              # every node, no clustering
    f = np.sqrt(np.mean([np.sum(s[3][:3] ** 2) for s in samples]))
    assert np.sqrt(np.mean(e[:, 0] ** 2)) < REPLAY_REL * f


def test_ft_style_file_trains_end_to_end_and_resumes(ref, tmp_path):
    s = TC.ClusteringSettings(generations=2, popsize=4, batch=8, seed=0, workers=1, checkpoint_every=1)
    rep = TC.train(ref["peg_in_hole"], tmp_path / "peg", s, progress=False)
    assert rep["generations"] == 2 and np.isfinite(rep["best_loss_N"])
    net = clustering_in.load(tmp_path / "peg.npz", task="peg_in_hole")
    assert net.vector().shape == (clustering_in.N_PARAMS,)
    by = rep["validation_loss_by_delta_N"]                # the depth tilt's scale, chosen on validation
    assert net.delta == rep["delta_m"] and by[f"{net.delta:g}"] == min(by.values())
    s.generations = 3
    rep2 = TC.train(ref["peg_in_hole"], tmp_path / "peg", s, resume=True, progress=False)
    assert rep2["generations"] == 3 and rep2["best_loss_N"] <= rep["best_loss_N"] + 1e-12


def test_a_damaged_checkpoint_is_one_line(ref, tmp_path):
    """--resume with a checkpoint cut or overwritten: one line naming it, not an unpickling
    traceback (issue 23)."""
    (tmp_path / "peg.cmaes").write_bytes(b"\x80\x04\x95garbage")
    s = TC.ClusteringSettings(generations=1, popsize=4, batch=8, seed=0, workers=1)
    with pytest.raises(ValueError, match=r"peg\.cmaes: not a readable CMA-ES checkpoint") as e:
        TC.train(ref["peg_in_hole"], tmp_path / "peg", s, resume=True, progress=False)
    assert "\n" not in str(e.value)


def test_bad_clustering_weights_give_one_line_errors(tmp_path):
    from sim_core.io.weights import WeightsError
    good = tmp_path / "good.npz"
    clustering_in.save(good, clustering_in.INClustering.initial(0), "bolting")
    with pytest.raises(WeightsError, match="asked for"):
        clustering_in.load(good, task="peg_in_hole")
    z = dict(np.load(good))
    z["theta"] = z["theta"][:-3]
    np.savez(tmp_path / "short.npz", **z)
    with pytest.raises(WeightsError, match="shape") as e:
        clustering_in.load(tmp_path / "short.npz")
    assert "\n" not in str(e.value)
    for bad, msg in ((np.array(-1e-6), "delta"), (np.array(np.nan), "NaN")):
        z = dict(np.load(good))
        z["delta"] = bad
        np.savez(tmp_path / "bad.npz", **z)
        with pytest.raises(WeightsError, match=msg) as e:
            clustering_in.load(tmp_path / "bad.npz")
        assert "\n" not in str(e.value) and "bad.npz" in str(e.value)


def test_replay_at_the_simulator_step_averages_each_window(ref):
    """At T = 10 ms against 1 ms data each replayed sample carries the means of its ten
    samples, and no window crosses an episode."""
    d = wrench_data.load(ref["bolting"])
    model = TC.model_for(d, dt=0.01, detector="exact")
    assert model.dt == 0.01
    idx = np.arange(0, len(d), 97)
    samples = TC.prepare(model, d, idx)
    assert samples
    starts = {round(s[0].t, 9): s for s in samples}
    for i in idx:
        s = starts.get(round(float(d.t[i]), 9))
        if s is None:
            continue
        assert np.allclose(s[3], d.wrench[i:i + 10].mean(0)) and np.allclose(s[1], d.f_ext[i:i + 10].mean(0))
        assert (d.episode[i:i + 10] == d.episode[i]).all()


def test_training_can_start_from_weights_and_weigh_penetration(ref, tmp_path):
    """--init starts CMA-ES at a weight file; --penetration adds the deepening of the replayed
    step's detected nodes to the loss, which can only raise it."""
    from sim_core.paths import assets_dir
    shipped = assets_dir() / "clustering" / "peg_in_hole.npz"
    s = TC.ClusteringSettings(generations=1, popsize=4, batch=8, workers=1, checkpoint_every=1,
                              penetration=2e4, init=str(shipped))
    rep = TC.train(ref["peg_in_hole"], tmp_path / "p", s, progress=False)
    assert rep["init"] == str(shipped) and rep["penetration_weight_N_per_m"] == 2e4
    d = wrench_data.load(ref["peg_in_hole"])
    model = TC.model_for(d)
    samples = TC.prepare(model, d, np.arange(0, len(d), 25))
    net = clustering_in.load(shipped)
    e = TC.wrench_errors(model, samples, lambda x: clustering_in.cluster(net, x[2], x[0], x[1], model.shapes[0],
                                                                        nodes_of(model, 0).node_nb))
    assert e.shape == (len(samples), 3) and (e >= 0).all()
    assert TC.loss_of(model, samples, net, 2e4) >= TC.loss_of(model, samples, net) - 1e-15
    assert rep["start_validation_loss_N"] > 0


def test_rollout_term_is_the_closed_loop_penetration_past_the_allowance(ref, tmp_path):
    """--rollouts: each candidate also runs the scenario in closed loop from perturbed starts,
    networks alone (no safety net), and pays for how far its deepest node went past
    ROLLOUT_ALLOWANCE.  Checked against scenario.simulate of the same start and networks."""
    from dataclasses import replace

    from sim_core.paths import assets_dir
    net = clustering_in.load(assets_dir() / "clustering" / "bolting.npz")
    (model, scen, state, n), = TC.rollout_models("bolting", [TC.ROLLOUT_FIT_SEEDS], 0.5)
    assert n == 50 and model.contact.fallback_depth >= 1.0
    cfg = scenario.perturbed(config_mod.load(scenario_path("bolting")), TC.ROLLOUT_FIT_SEEDS)
    cfg["contact"]["fallback_depth"] = 1.0
    cfg["contact"]["impact_splits"] = 0
    cfg["contact"]["clustering"] = "learned"
    m2, s2 = scenario.build(cfg)
    m2 = replace(m2, pairs=tuple(replace(p, clustering_net=net) for p in m2.pairs))
    res = scenario.simulate(m2, scenario.record(cfg), s2, 0.5)
    want = max(0.0, max(res.max_pen) - TC.ROLLOUT_ALLOWANCE)
    assert want > 0.0                                # the check below compares something
    assert TC.rollout_excess([(model, scen, state, n)], net) == pytest.approx(want, rel=0, abs=1e-12)
    # and the training loop takes it: a tiny budget writes its figures in the report, and
    # the reported loss is the replay plus the weighted excess
    s = TC.ClusteringSettings(generations=1, popsize=4, batch=8, workers=1, checkpoint_every=1,
                              rollouts=1, rollout_seconds=0.5, init=str(assets_dir() / "clustering" / "bolting.npz"))
    rep = TC.train(ref["bolting"], tmp_path / "r", s, progress=False)
    ex = rep["rollout_excess_m"]
    assert rep["rollouts"] == 1 and set(ex) == {"fit", "validation", "start_fit", "start_validation"}
    assert ex["start_fit"] > 0.0 and ex["start_validation"] > 0.0
    assert rep["validation_loss_N"] == pytest.approx(
        rep["validation_replay_loss_N"] + s.rollout_weight * ex["validation"], rel=1e-9)
    with pytest.raises(ValueError, match="overlap"):
        TC.train(ref["bolting"], tmp_path / "r2", TC.ClusteringSettings(rollouts=11, workers=1), progress=False)
