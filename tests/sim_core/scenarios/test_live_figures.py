"""The live task figure (the HUD's task line): ``scenario.LiveFigures`` computes, step by step,
the same figure the batch summary takes from ``task_figures``, and the snapshot carries it."""
import math
import threading

import numpy as np
import pytest

from sim_core.io.records import SNAPSHOT
from sim_core.scenarios import scenario
from sim_core.types import State


def test_live_figure_of_a_peg_run_is_the_batch_summarys():
    model, state, cfg = scenario.load("peg_in_hole")
    scen = scenario.record(cfg)
    live = scenario.LiveFigures(model, scen, every=1)
    seen = []

    def on_step(before, inp, after, info):
        seen.append(live.update(before, after)["insertion_depth_m"])

    res = scenario.simulate(model, scen, state, 0.2, on_step=on_step)
    assert live.figures == scenario.task_figures(res)
    assert len(set(seen)) > 1                                   # it follows the run
    f = live.fields()
    assert f["task"] == scenario.TASK_CODES["peg_in_hole"] and f["task_value"] == seen[-1]
    text = scenario.hud_text(f["task"], f["task_value"], f["task_aux"], f["task_met"])
    assert text == f"insertion {seen[-1] * 1e3:.2f} mm (target not met)"


def _helix_states(pitch, turns_per_s, t_engage, dt=0.01, n=500, z0=0.14):
    """A nut held still until `t_engage`, then screwed down one `pitch` per turn (clockwise
    seen from above), as states with the velocities the figures integrate."""
    w = 2.0 * math.pi * turns_per_s
    out = []
    for k in range(n):
        t = k * dt
        moving = t >= t_engage
        a = -w * (t - t_engage) if moving else 0.0
        R = np.array([[math.cos(a), -math.sin(a), 0.0], [math.sin(a), math.cos(a), 0.0], [0.0, 0.0, 1.0]])
        z = z0 - (pitch * turns_per_s * (t - t_engage) if moving else 0.0)
        V = np.array([0.0, 0.0, -pitch * turns_per_s, 0.0, 0.0, -w]) if moving else np.zeros(6)
        out.append(State(t, np.array([[0.0, 0.0, z]]), R[None], V[None]))
    return out


@pytest.mark.parametrize("every", [1, 10])
def test_live_figure_of_a_screwed_nut_is_the_batch_summarys(every):
    """Bolting's figure needs the whole trajectory (when the nut engaged, how far it turned
    since): fed a nut screwed down 5 mm per turn, the live figure is task_figures' of the same
    trajectory, refreshed every `every` steps, and reads 5 mm/rev once engaged."""
    model, _, cfg = scenario.load("bolting")
    scen = scenario.record(cfg)
    pitch = scen.static_dims["p"]
    top, h = scen.static_dims["length"], scen.moving_dims["height"]
    com_z = model.bodies[0].com_part[2]
    states = _helix_states(pitch, 1.0, 0.5, z0=top + h / 2 + 0.003 + com_z)
    live = scenario.LiveFigures(model, scen, every=every)
    res = scenario.RunResult(model=model, scen=scen)
    rot, axis = 0.0, model.shapes[0].R_ws[:, 2]
    for before, after in zip(states[:-1], states[1:]):
        live.update(before, after)
        w_mid = 0.5 * (before.R_wb[0] @ before.V[0, 3:] + after.R_wb[0] @ after.V[0, 3:])
        rot += (after.t - before.t) * float(w_mid @ axis)          # as simulate() integrates it
        res.t.append(after.t)
        res.p_w.append(after.p_w[0].copy())
        res.rot_axis.append(rot)
        res.final = after
    if (len(states) - 1) % every == 0:
        assert live.figures == scenario.task_figures(res)
    fig = live.figures
    assert fig["advance_per_rev_m"] == pytest.approx(pitch, rel=1e-9) and fig["task_target_met"]
    f = live.fields()
    assert scenario.hud_text(f["task"], f["task_value"], f["task_aux"], f["task_met"]) == (
        f"advance {pitch * 1e3:.3f} mm/rev over {fig['revolutions_measured']:.2f} rev (target met)")
    # before the nut engages: no advance yet, and the HUD says why
    early = scenario.LiveFigures(model, scen)
    early.update(states[0], states[1])
    f = early.fields()
    assert math.isnan(f["task_value"])
    assert "not engaged" in scenario.hud_text(f["task"], f["task_value"], f["task_aux"], f["task_met"])


def test_docking_hud_says_seated_or_not_and_the_worst_tip():
    fig = {"seated": False, "height_to_seat_m": 0.0123, "lateral_offset_m": 0.0021, "tilt_deg": 1.0,
           "pins": 4, "clearance_m": 1e-4, "task_target": "every pin seated", "task_target_met": False}
    f = scenario.task_fields("docking", fig)
    assert scenario.hud_text(f["task"], f["task_value"], f["task_aux"], f["task_met"]) == (
        "not seated, worst tip 12.30 mm from its seat, offset 2.10 mm")
    f = scenario.task_fields("docking", dict(fig, seated=True, task_target_met=True, height_to_seat_m=2e-4))
    assert scenario.hud_text(f["task"], f["task_value"], f["task_aux"], f["task_met"]).startswith(
        "seated, worst tip 0.20 mm")
    # a snapshot without a figure (zeros) has no task line
    assert scenario.hud_text(*(float(SNAPSHOT.get(np.zeros(SNAPSHOT.size), k)[0])
                               for k in ("task", "task_value", "task_aux", "task_met"))) == ""


def test_the_physics_loop_publishes_the_live_figure_in_the_snapshot():
    from app.physics_loop import run
    from haptics.local_contact import PACKED_SIZE
    from sim_core.io.records import PROXY
    from sim_core.io.shm import SeqSlot
    model, state, cfg = scenario.load("peg_in_hole")
    proxy, contact, snap = SeqSlot(PROXY.size), SeqSlot(PACKED_SIZE), SeqSlot(SNAPSHOT.size)
    try:
        proxy.write(PROXY.pack(t=0.0, p=state.p_w[0] - [0.0, 0.0, 0.01], R=state.R_wb[0], V=np.zeros(6)))
        live = scenario.LiveFigures(model, scenario.record(cfg), every=1)
        run(model, state, proxy, contact, snap, None, None, threading.Event(), duration=0.1, task=live)
        _, v = snap.read()
        want = scenario.task_fields("peg_in_hole", live.figures)
        np.testing.assert_equal({k: float(SNAPSHOT.get(v, k)[0]) for k in want}, want)   # NaN == NaN
        assert want["task"] == scenario.TASK_CODES["peg_in_hole"]
    finally:
        for s in (proxy, contact, snap):
            s.close(unlink=True)


def test_live_figure_of_a_bouncing_ball_is_the_batch_summarys():
    """The ball's HUD line (issue 25): the restitution measured live is the batch figure's."""
    model, state, cfg = scenario.load("bouncing_ball")
    scen = scenario.record(cfg)
    live = scenario.LiveFigures(model, scen, every=1)

    def on_step(before, inp, after, info):
        live.update(before, after)

    res = scenario.simulate(model, scen, state, 1.2, on_step=on_step)
    want = scenario.task_figures(res)
    assert live.figures["restitution_measured"] == want["restitution_measured"]
    f = live.fields()
    assert f["task"] == scenario.TASK_CODES["bouncing_ball"]
    assert f["task_value"] == pytest.approx(f["task_aux"], abs=0.01)        # the first bounce's e
    text = scenario.hud_text(f["task"], f["task_value"], f["task_aux"], f["task_met"])
    assert text.startswith(f"restitution {f['task_value']:.4f} of {f['task_aux']:g}")
