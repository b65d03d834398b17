"""Wrench data (issue 7, item 1): the documented file format round-trips, bad files give
one-line errors, a cut file loads up to the cut, the split keeps episodes whole, and the
reference generator's records obey the part's equations of motion."""
from __future__ import annotations

import numpy as np
import pytest

from sim_core.learning import reference_data, wrench_data
from sim_core.math.so3 import quat_to_matrix

DYNAMICS_TOL = 1e-9   # N: m dv/T - (f_ext + wrench) from the file's own numbers (float64 JSON)


def _write(path, n=50, episodes=2, **over):
    rng = np.random.default_rng(0)
    with wrench_data.WrenchWriter(path, "bolting", "bolt_M48x5", "nut_M48x5", 0.001, "test") as w:
        for e in range(episodes):
            for k in range(n):
                q = rng.normal(size=4)
                rec = dict(p_w=rng.normal(size=3), q_wb=q / np.linalg.norm(q), v_w=rng.normal(size=3),
                           w_b=rng.normal(size=3), f_ext=rng.normal(size=6), wrench=rng.normal(size=6))
                rec.update(over)
                w.sample(e, k * 0.001, **rec)
    return path


def test_round_trip_and_split(tmp_path):
    path = _write(tmp_path / "a.mcap", n=70, episodes=10)
    d = wrench_data.load(path)
    assert len(d) == 700 and d.meta["task"] == "bolting" and d.meta["dt"] == 0.001 and not d.truncated
    assert np.allclose(np.linalg.norm(d.q_wb, axis=1), 1.0)
    tr, te = d.split(0.7)
    assert len(tr) == 490 and len(te) == 210
    assert not set(tr.episode) & set(te.episode)


def test_bad_files_give_one_line_errors(tmp_path):
    cases = {
        "nan": dict(wrench=[np.nan] * 6),
        "short": dict(p_w=[0.0, 1.0]),
        "quat": dict(q_wb=[1.0, 1.0, 0.0, 0.0]),
    }
    for name, over in cases.items():
        path = _write(tmp_path / f"{name}.mcap", n=3, episodes=1, **over)
        with pytest.raises(wrench_data.WrenchDataError) as e:
            wrench_data.load(path)
        assert str(path) in str(e.value) and "\n" not in str(e.value)
    back = tmp_path / "back.mcap"
    with wrench_data.WrenchWriter(back, "peg_in_hole", "hole", "peg", 0.001, "test") as w:
        for t in (0.0, 0.002, 0.001):
            w.sample(0, t, np.zeros(3), [1, 0, 0, 0], np.zeros(3), np.zeros(3), np.zeros(6), np.zeros(6))
    with pytest.raises(wrench_data.WrenchDataError, match="does not increase"):
        wrench_data.load(back)
    junk = tmp_path / "junk.mcap"
    junk.write_bytes(b"definitely not mcap")
    with pytest.raises(wrench_data.WrenchDataError, match="not a readable"):
        wrench_data.load(junk)
    with pytest.raises(wrench_data.WrenchDataError, match="cannot read"):
        wrench_data.load(tmp_path / "missing.mcap")


def test_a_cut_file_loads_up_to_the_cut(tmp_path):
    path = _write(tmp_path / "full.mcap", n=4000, episodes=1)
    raw = path.read_bytes()
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(raw[: len(raw) * 2 // 3])
    d = wrench_data.load(cut)
    assert d.truncated and 0 < len(d) < 4000


@pytest.mark.parametrize("task", ["peg_in_hole", "bolting"])
def test_reference_records_obey_the_equations_of_motion(tmp_path, task):
    """From the file's numbers alone: m (v_k+1 - v_k) / T = f_drive + f_contact (PMI's linear
    row, no gravity), and the recorded parts actually touch."""
    from sim_core.scenarios import scenario
    s = reference_data.generate(task, tmp_path / "r.mcap", 400, seed=1)
    d = wrench_data.load(s["file"])
    assert len(d) == 400 and d.meta["source"].startswith("reference")
    model, _, _ = scenario.load(task)
    T = d.meta["dt"]
    same = d.episode[1:] == d.episode[:-1]
    res = model.bodies[0].mass * (d.v_w[1:] - d.v_w[:-1]) / T - (d.f_ext[:-1, :3] + d.wrench[:-1, :3])
    assert np.abs(res[same]).max() < DYNAMICS_TOL * max(1.0, np.abs(d.wrench).max())
    R = quat_to_matrix(d.q_wb[-1])
    assert abs(np.linalg.det(R) - 1) < 1e-9
    assert (np.linalg.norm(d.wrench[:, :3], axis=1) > 1e-6).any()        # contact happened
