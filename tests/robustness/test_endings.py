"""Attack tests: a session ends clean on every path -- SIGTERM, Ctrl-C, an absent device:
summary printed, log complete, no loop process and no shared-memory segment left behind."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sim_core.io.log import read_log

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())   # the checkout
END_BOUND_S = 20.0       # s: from the signal to every process gone (the loops stop within a tick
                         # or a step; joining, the summary and closing the log take the rest)
START_BOUND_S = 180.0    # s: a fresh machine compiles the numba kernels first


def _children(pid: int) -> set[int]:
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.add(int(d.name))
            except (OSError, IndexError, ValueError):
                pass
    return out


def _alive(pid: int) -> bool:
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _shm() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signalled_session_ends_clean(tmp_path, sig):
    log = tmp_path / "s.mcap"
    before = _shm()
    p = subprocess.Popen([sys.executable, "-m", "app.cli", "run", "peg_in_hole", "--device", "scripted:insert",
                          "--duration", "120", "--log", str(log)], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while time.monotonic() - t0 < START_BOUND_S and (not log.exists() or log.stat().st_size < 60_000):
        assert p.poll() is None, p.communicate()
        time.sleep(0.2)
    kids = _children(p.pid)
    assert kids, "the session's loop processes"
    p.send_signal(sig)
    out, err = p.communicate(timeout=END_BOUND_S)
    t_end = time.monotonic() + 5.0
    while any(_alive(k) for k in kids) and time.monotonic() < t_end:
        time.sleep(0.1)
    assert not any(_alive(k) for k in kids), "a loop process outlived the session"
    assert "session" in out and "physics loop" in out, (out, err)          # the summary
    assert "Traceback" not in err, err
    assert _shm() <= before, _shm() - before                                   # every segment unlinked
    r = read_log(log)
    assert not r.truncated and not r.corrupt and len(r.messages("/physics_input")) > 10


def test_an_absent_device_is_one_line_and_an_intact_log(tmp_path):
    log = tmp_path / "s.mcap"
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", "peg_in_hole", "--device", "serial:/dev/tightsim-none",
                        "--duration", "5", "--log", str(log)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "Traceback" not in r.stderr and "UnboundLocalError" not in r.stderr
    faults = [ln for ln in r.stdout.splitlines() if ln.startswith("fault")]
    assert len(faults) == 1 and "/dev/tightsim-none" in faults[0]
    rl = read_log(log)
    assert not rl.truncated and not rl.corrupt


def test_a_loop_not_ready_in_time_ends_the_session_before_real_time(tmp_path):
    """The haptic loop takes longer than the start-up limit (an injected delay: what a first
    run compiling for minutes does): the session never starts -- no tick, no step --, its
    fault names the haptic loop, the haptic process still zeroes the force on its way out,
    and the log holds the start and says why it ended.  (Before: the session went ahead
    without the loop, exit 0, no fault.)"""
    from app.session import run_session
    log_path = tmp_path / "s.mcap"
    res = run_session("peg_in_hole", "scripted:insert", 5.0, log_path=str(log_path), startup_timeout=3.0,
                      startup_delays={"haptic": 600.0})
    assert not res.started and res.physics == {}
    assert res.fault.startswith("the haptic loop was not ready after 3 s") or \
        res.fault.startswith("neither the haptic nor the physics loop was ready after 3 s"), res.fault
    assert ("exit", True, "haptic loop stopped") in res.messages      # its finally ran: zero force
    log = read_log(log_path)
    assert not log.truncated and not log.corrupt and log.messages("/config") and log.messages("/part_state")
    assert not log.messages("/device") and not log.messages("/physics_input") and not log.messages("/session")
    end = log.messages("/session_end")[-1][1]
    assert end["started"] is False and end["fault"] == res.fault


def test_a_session_past_its_start_up_limit_is_one_line_and_a_non_zero_exit(tmp_path):
    """From the command line, with the limit set (TIGHTSIM_STARTUP_TIMEOUT_S) below what any
    start-up takes: one line naming what was not ready, exit 3, the log closed."""
    log = tmp_path / "s.mcap"
    env = dict(os.environ, TIGHTSIM_STARTUP_TIMEOUT_S="0.001")
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", "peg_in_hole", "--headless", "--device",
                        "scripted:insert", "--duration", "5", "--log", str(log)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=START_BOUND_S)
    err = r.stderr.strip().splitlines()
    assert r.returncode == 3 and len(err) == 1 and "Traceback" not in r.stderr, (r.stdout, r.stderr)
    assert "neither the haptic nor the physics loop was ready after 0.001 s" in err[0]
    assert "compiling numba kernels?" in err[0]
    rl = read_log(log)
    assert not rl.truncated and rl.messages("/session_end")[-1][1]["started"] is False
    env["TIGHTSIM_STARTUP_TIMEOUT_S"] = "soon"
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", "peg_in_hole", "--headless", "--device",
                        "scripted:insert", "--duration", "5"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=START_BOUND_S)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "TIGHTSIM_STARTUP_TIMEOUT_S" in r.stderr


def test_a_start_up_ended_inside_a_c_callback_leaves_no_traceback(capfd):
    """SIGTERM during numba's compilation can land in a C callback (llvmlite's object cache),
    where Python cannot raise: it printed StartUpEnded as an "ignored" exception, 8 lines of
    traceback where the session promises one line.  The loop processes' hook drops exactly
    that exception, and no other."""
    import ctypes

    from app.loops import StartUpEnded, _quiet_start_up_end
    seen = []
    old = sys.unraisablehook
    sys.unraisablehook = _quiet_start_up_end(lambda u: seen.append(type(u.exc_value)))
    try:
        def end(_):
            raise StartUpEnded(1)

        def other(_):
            raise ValueError("kept")
        for f in (end, other):
            ctypes.CFUNCTYPE(None, ctypes.c_int)(f)(0)
    finally:
        sys.unraisablehook = old
    assert seen == [ValueError]
    assert "StartUpEnded" not in capfd.readouterr().err
