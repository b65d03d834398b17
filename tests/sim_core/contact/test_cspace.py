"""C-space contact model: symmetry of the inputs, the SQP's nearest contact configuration on a
closed-form surface, the C-space normal, weight files, and training end to end."""
from __future__ import annotations

import json

import numpy as np
import pytest

from sim_core.contact import cspace
from sim_core.io.weights import WeightsError
from sim_core.math.so3 import exp_so3, rot_axis_angle
from sim_core.paths import assets_dir

FEATURE_TOL = 1e-9     # invariance of the inputs under the parts' symmetries (rounding only)


def _random_pose(rng, tilt=0.01, off=1e-3):
    p = np.array([*rng.normal(0, off, 2), rng.uniform(-0.04, 0.1)])
    R = rot_axis_angle([0, 0, 1], rng.uniform(-np.pi, np.pi)) @ exp_so3(np.array([*rng.normal(0, tilt, 2), 0.0]))
    return p, R


def test_peg_inputs_do_not_see_the_symmetries():
    rng = np.random.default_rng(0)
    for _ in range(50):
        p, R = _random_pose(rng)
        f0 = cspace.features("peg", 0.0, 1.0, p[None], R[None])
        Rz = rot_axis_angle([0, 0, 1], rng.uniform(-np.pi, np.pi))
        twist = rot_axis_angle([0, 0, 1], rng.uniform(-np.pi, np.pi))
        mirror = np.diag([1.0, -1.0, 1.0])
        for P2, R2 in ((Rz @ p, Rz @ R), (p, R @ twist), (mirror @ p, mirror @ R @ mirror)):
            assert np.abs(cspace.features("peg", 0.0, 1.0, P2[None], R2[None]) - f0).max() < FEATURE_TOL


def test_nut_inputs_see_only_the_thread_phase_of_a_screw_motion():
    """A screw motion of the whole configuration about the bolt's axis maps the thread onto
    itself: the inputs change only in z (kept for the thread's ends).  A screw of an upright
    nut about its own axis does the same (tilted, the twist about z is only approximately its
    own twist: the inputs are exact for the upright nut the thread admits)."""
    rng = np.random.default_rng(1)
    lead, pitch = 5e-3 / (2 * np.pi), 5e-3
    for tilt in (0.0, 0.01):
        for _ in range(50):
            p, R = _random_pose(rng, tilt=tilt)
            f0 = cspace.features("nut", lead, pitch, p[None], R[None])[0]
            a = rng.uniform(-3, 3)
            S = rot_axis_angle([0, 0, 1], a)
            moves = [(S @ p + [0, 0, lead * a], S @ R)]
            if tilt == 0.0:
                moves.append((p + R[:, 2] * lead * a, rot_axis_angle(R[:, 2], a) @ R))
            for P2, R2 in moves:
                f1 = cspace.features("nut", lead, pitch, P2[None], R2[None])[0]
                assert np.abs(f1[:6] - f0[:6]).max() < FEATURE_TOL    # phase, offset, tilt
            # a quarter pitch up without the turn: the phase turns by 90 degrees
            f2 = cspace.features("nut", lead, pitch, (p + [0, 0, pitch / 4])[None], R[None])[0]
            assert abs(f2[0] * f0[0] + f2[1] * f0[1]) < FEATURE_TOL


class _Ball:
    """A closed-form C-space surface: free where the centre of mass lies outside a ball of
    radius r0 (logit = (|p - c| - r0) / 1 um), whatever the rotation."""
    def __init__(self, c, r0):
        self.c, self.r0 = np.asarray(c, float), r0

    def logit(self, P, R):
        return (np.linalg.norm(np.asarray(P).reshape(-1, 3) - self.c, axis=1) - self.r0) / 1e-6


def test_sqp_finds_the_nearest_contact_configuration_in_the_inertia_metric():
    M = np.diag([0.4, 0.4, 0.4, 3e-4, 3e-4, 1e-4])
    ball = _Ball([0.0, 0.0, 0.0], 2e-4)
    rng = np.random.default_rng(2)
    for _ in range(20):
        p = rng.normal(0, 1, 3)
        p *= rng.uniform(0.1, 0.9) * ball.r0 / np.linalg.norm(p)
        V, ok = cspace.nearest_contact(ball, M, p, np.eye(3))
        assert ok
        exact = (ball.r0 - np.linalg.norm(p)) * p / np.linalg.norm(p)
        assert np.linalg.norm(V[:3] - exact) < 0.01 * np.linalg.norm(exact)
        assert np.linalg.norm(V[3:]) < 1e-6                   # rotation cannot free it
        NC, bC = cspace.cspace_row(ball, M, p, np.eye(3))
        assert abs(np.linalg.norm(NC) - 1) < 1e-12
        assert np.allclose(NC, M @ V / np.linalg.norm(M @ V), atol=1e-12)   # N^C ~ M V_C
        assert bC == 0.0
    assert cspace.cspace_row(ball, M, np.array([1e-3, 0, 0]), np.eye(3)) is None   # free


def test_shipped_weights_load_and_classify_the_task_start_and_a_deep_collision():
    from sim_core.scenarios import scenario
    for task in ("peg_in_hole", "bolting"):
        _, _, cfg = scenario.load(task)
        cfg["contact"]["cspace"] = "on"
        model, state = scenario.build(cfg)
        net = model.pairs[0].cspace
        assert net is not None and net.task == task
        rep = json.loads(
            (assets_dir() / "cspace" / f"{cfg['parts']['static']}__{cfg['parts']['moving']}.json").read_text())
        assert rep["accuracy_held_out"] > 0.9
        # the start is above the static part: free; 2 mm sideways and 10 mm down: colliding
        assert net.logit(state.p_w, state.R_wb)[0] > 0
        deep = state.p_w[0] + [2e-3, 0, -0.03]
        assert net.logit(deep[None], state.R_wb)[0] < 0


def test_bad_weight_files_give_one_line_errors(tmp_path):
    src = assets_dir() / "cspace" / "hole__peg.npz"
    net = cspace.load(src)
    good = net.arrays()
    cases = {
        "missing": {k: v for k, v in good.items() if k != "W2"},
        "shape": {**good, "W1": good["W1"][:, :2]},
        "nan": {**good, "b2": np.full_like(good["b2"], np.nan)},
        "kind": {**good, "kind": np.array("cube")},
        "std": {**good, "std": np.zeros_like(good["std"])},
    }
    for name, arrays in cases.items():
        path = tmp_path / f"{name}.npz"
        np.savez(path, **arrays)
        with pytest.raises(WeightsError) as e:
            cspace.load(path)
        assert str(path) in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(WeightsError, match="does not match"):
        cspace.load(src, digest="0" * 16)
    with pytest.raises(WeightsError, match="asked for"):
        cspace.load(src, task="bolting")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(WeightsError, match="not a readable"):
        cspace.load(tmp_path / "junk.npz")


def test_training_is_seeded_and_writes_loadable_weights(tmp_path):
    pytest.importorskip("torch")
    from sim_core.learning import train_cspace
    s = train_cspace.CSpaceSettings(samples=600, steps=40, batch=256, seed=3)
    a, rep = train_cspace.train("peg_in_hole", s, progress=False)
    b, _ = train_cspace.train("peg_in_hole", s, progress=False)
    assert all(np.array_equal(a.arrays()[k], b.arrays()[k]) for k in ("W1", "W2", "W3", "mean"))
    path = train_cspace.write("peg_in_hole", a, rep, tmp_path)
    back = cspace.load(path, task="peg_in_hole")
    P = np.array([[0.0, 0.0, 0.02], [1e-3, 0.0, -0.01]])
    R = np.stack([np.eye(3)] * 2)
    assert np.allclose(back.logit(P, R), a.logit(P, R))
    assert rep["held_out"] == 180 and 0.0 <= rep["accuracy_held_out"] <= 1.0
