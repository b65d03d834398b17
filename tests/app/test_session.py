"""A real session: haptic and physics processes exchanging state through shared memory.

Short (about a second of wall time each).  Nothing here asserts on timing; the jitter figures
are measured by bench/haptic_jitter.py."""
import numpy as np
import pytest

from app.replay import replay
from app.session import run_session
from sim_core.io.log import read_log
from sim_core.systems.fem import snap

DURATION = 1.0


@pytest.fixture(scope="module")
def peg_session(tmp_path_factory):
    path = tmp_path_factory.mktemp("session") / "peg.mcap"
    res = run_session("peg_in_hole", "scripted:insert", DURATION, log_path=str(path))
    return res, path


def test_loops_ran_and_stopped_cleanly(peg_session):
    res, _ = peg_session
    kinds = [m[0] for m in res.messages]
    assert kinds.count("ready") == 2 and "exit" in kinds and res.fault is None
    assert res.physics["steps"] > 0 and res.physics["dropped"] == 0


def test_the_session_summary_gives_penetration_and_the_task_figure(peg_session):
    from app.session import summary_lines
    res, _ = peg_session
    text = "\n".join(summary_lines(res))
    assert "penetration         max" in text and "insertion depth" in text and "target >= 30 mm" in text
    assert np.isfinite(res.figures["insertion_depth_m"]) and res.figures["max_penetration_m"] >= 0.0


def test_session_log_has_every_stream_and_replays_bitwise(peg_session):
    _, path = peg_session
    log = read_log(path)
    assert not log.truncated
    for topic in ("/config", "/session", "/device", "/proxy", "/physics_input", "/part_state", "/timing"):
        assert log.messages(topic), topic
    # haptic ticks arrive in order, none lost between the ring and the log
    t = np.array([m["t"] for _, m in log.messages("/device")])
    assert np.all(np.diff(t) > 0)
    n, err_p, err_v = replay(log, verify=True)
    assert n == len(log.messages("/physics_input")) and err_p == 0.0 and err_v == 0.0


def test_device_fault_ends_the_session_with_one_line_and_an_intact_log(tmp_path):
    path = tmp_path / "fault.mcap"
    res = run_session("bolting", "serial:/dev/nonexistent-tightsim", 5.0, log_path=str(path))
    assert res.fault is not None and "\n" not in res.fault and "nonexistent" in res.fault
    assert res.wall < 5.0                                  # ended early, not at the duration
    log = read_log(path)
    assert not log.truncated and log.messages("/config")


def test_keyboard_session_reads_the_main_process_input(tmp_path):
    """The keyboard/mouse state machine runs beside the view (main process) and reaches the
    haptic process through shared memory; with no events the proxy stays put."""
    path = tmp_path / "kb.mcap"
    res = run_session("bolting", "keyboard", 0.5, log_path=str(path))
    assert res.fault is None
    log = read_log(path)
    assert log.messages("/session")[0][1]["device"] == "keyboard"
    dev = log.messages("/device")
    assert dev and all(m["p"] == dev[0][1]["p"] for _, m in dev)


@pytest.mark.slow
def test_a_scripted_docking_session_seats_the_plate_and_replays_bitwise(tmp_path):
    """Docking in the real-time session (seed 004 contacts at 100 Hz, the haptic local model at
    1 kHz, the Panda): the scripted hand goes down over the holes and the plate seats; the log
    replays bit for bit."""
    from app.session import summary_lines
    path = tmp_path / "docking.mcap"
    res = run_session("docking", "scripted:insert", 9.0, log_path=str(path))
    assert res.fault is None
    assert res.figures["seated"], res.figures
    assert res.figures["max_penetration_m"] < 0.1e-3
    assert "docking             seated" in "\n".join(summary_lines(res))
    n, err_p, err_v = replay(read_log(path), verify=True)
    assert n > 0 and err_p == 0.0 and err_v == 0.0


@pytest.mark.slow
def test_a_scripted_grinding_session_stays_passive_and_replays_bitwise(tmp_path):
    """Grinding by hand in the real-time session (issue 25): the keyboard script of the
    lockstep test (down onto the bar, along and back) through the window's event path, the
    compliant contact at 100 Hz and the haptic loop at 1 kHz: no fault, the hand puts energy in
    (the device port's net energy >= 0: the coupling is passive against the stiff contact), the
    tool stays on the bar, and the log replays bit for bit."""
    import json
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))
    from test_keyboard_sessions import GRINDING_EVENTS
    events = tmp_path / "events.json"
    events.write_text(json.dumps([list(e) for e in GRINDING_EVENTS]))
    path = tmp_path / "grinding.mcap"
    res = run_session("grinding", f"keys:{events}", 7.0, log_path=str(path))
    assert res.fault is None
    # J: the port may return at most one tick's work at the limits (haptics.coupling): the
    # keyboard's 20 N at its 0.03 m/s glide over 1 ms
    one_tick = 20.0 * 0.03 * 1e-3
    assert res.energy >= -one_tick, res.energy
    assert res.figures["max_penetration_m"] < 0.1e-3
    n, err_p, err_v = replay(read_log(path), verify=True)
    assert n > 0 and err_p == 0.0 and err_v == 0.0


def test_snap_fit_session_clicks_seats_and_replays_bitwise(tmp_path):
    """The snap fit (issue 27) in the real session: the prongs a system of the core's step, the
    hand holding the plug's admittance set point (scripted:insert, over the socket then down).
    It clicks and seats, the hand feels the hooks and the seat through the admittance, and the
    log replays bit for bit.  The physics keeps its 1 kHz on average in contact on this 2-core
    machine, with late steps (docs/snap.md, the session); nothing here asserts on timing."""
    path = tmp_path / "snap.mcap"
    res = run_session("snap_fit", "scripted:insert", 6.0, log_path=str(path))
    assert res.fault is None and res.started
    fig = res.figures
    assert fig["head_under_catch_m"] > 0.0 and fig["task_target_met"], fig
    # no deeper than the seat's plastic stop, however far behind the wall clock the physics ran
    # (the hand's set point then jumps ahead: CI once saw 36 um before ``snap._missed``)
    assert fig["max_penetration_m"] <= snap.SEAT_TOUCH, fig["max_penetration_m"]
    forces = [m["device_wrench"][2] for _, m in read_log(path).messages("/proxy")]
    assert max(forces) > 5.0                     # the hand felt the hooks (and the seat) push back
    n, err_p, err_v = replay(read_log(path), verify=True)
    assert n == res.physics["steps"] and err_p == 0.0 and err_v == 0.0
