"""Attack tests: a session's log loses no record when the logger is stalled (issue 23), and a
record lost all the same is counted and located everywhere a user looks: the summary, the log
itself (/dropped, /session_end), ``tightsim log info`` (exit 1) and ``tightsim replay``
("incomplete log", never MISMATCH).

The stall is injected into the logger process (``run_session(logger_stalls=...)``, as the
physics and haptic stalls are) with rings of a fraction of a second, so that a short session
overflows them many times over: before the fix, 1522 of 4009 haptic ticks and 168 of 401
physics steps were lost this way, silently."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from sim_core.io.log import LogError, read_log

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())   # the checkout
SMALL_RINGS = (200, 20)          # 0.2 s of ticks and of steps: a 1.5 s stall overflows both 7 times over
STALL = [(0.5, 1.5)]             # (s into the session, s)
START_BOUND_S = 180.0            # s: a fresh machine compiles the numba kernels first


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True, text=True, cwd=ROOT)


def _ticks_in_file(log) -> np.ndarray:
    return np.array([m["t"] for _, m in log.messages("/device")])


@pytest.fixture(scope="module")
def stalled(tmp_path_factory):
    from app.session import run_session
    path = tmp_path_factory.mktemp("stall") / "peg.mcap"
    res = run_session("peg_in_hole", "scripted:insert", 3.0, log_path=str(path), logger_stalls=STALL,
                      rings=SMALL_RINGS)
    return res, path


def test_a_stalled_logger_loses_no_tick_and_no_step(stalled):
    res, path = stalled
    log = read_log(path)
    st = res.log_stats
    assert res.fault is None and st["complete"] and not st["lost"]
    assert st["haptic"]["offered"] == st["haptic"]["logged"] == len(log.messages("/device")) > 2500
    assert st["physics"]["offered"] == st["physics"]["logged"] == res.physics["steps"]
    assert len(log.messages("/physics_input")) == res.physics["steps"] and res.physics["dropped"] == 0
    t = _ticks_in_file(log)
    per = np.array([m["period"] for _, m in log.messages("/timing") if m["loop"] == "haptic"])
    assert np.all(np.diff(t) > 0) and np.abs(np.diff(t) - per[1:]).max() < 1e-7   # no tick missing between
    assert not log.messages("/dropped")


def test_a_stalled_loggers_log_says_complete_and_replays_bitwise(stalled):
    from app.session import summary_lines
    res, path = stalled
    assert "log records         all written" in "\n".join(summary_lines(res))
    r = _cli("log", "info", str(path))
    assert r.returncode == 0 and "complete   yes" in r.stdout, r.stdout
    r = _cli("replay", str(path), "--verify")
    assert r.returncode == 0 and "MATCH (bitwise)" in r.stdout, (r.stdout, r.stderr)


@pytest.fixture(scope="module")
def lossy(tmp_path_factory):
    """The same stall with the loops' spills held to a few hundred records: records are lost
    (as with a logger starved for longer than the spill limit, minutes in a real session)."""
    from app.session import run_session
    path = tmp_path_factory.mktemp("loss") / "peg.mcap"
    res = run_session("peg_in_hole", "scripted:insert", 3.0, log_path=str(path), logger_stalls=STALL,
                      rings=SMALL_RINGS, spill_limits={"haptic": 300, "physics": 30})
    return res, path


def test_lost_records_are_counted_and_located_in_the_summary_and_the_log(lossy):
    from app.session import summary_lines
    res, path = lossy
    st = res.log_stats
    gaps = {g["stream"]: g for g in st["lost"]}
    assert not st["complete"] and set(gaps) == {"haptic", "physics"}
    log = read_log(path)
    for stream, topic in (("haptic", "/device"), ("physics", "/physics_input")):
        s = st[stream]
        assert s["offered"] == s["logged"] + s["lost"] and s["logged"] == len(log.messages(topic))
        assert s["lost"] == sum(g["count"] for g in st["lost"] if g["stream"] == stream) > 0
    # where: between two ticks that are in the file, with none in between, and as long as
    # the ticks it counts (the loop keeps 1 kHz on average: its deadlines are absolute)
    t = _ticks_in_file(log)
    g = gaps["haptic"]
    assert g["after_t"] in t and g["before_t"] in t
    assert np.count_nonzero((t > g["after_t"]) & (t < g["before_t"])) == 0
    assert abs((g["before_t"] - g["after_t"]) / 1e-3 - 1 - g["count"]) <= 0.02 * g["count"] + 3
    # the log says it itself, and the summary
    assert sorted(m["stream"] for _, m in log.messages("/dropped")) == ["haptic", "physics"]
    end = log.messages("/session_end")[-1][1]
    assert end["complete"] is False and end["lost"] == st["lost"]
    text = "\n".join(summary_lines(res))
    assert f"INCOMPLETE: {g['count']} haptic ticks lost ({g['after_t']:.3f} .. {g['before_t']:.3f} s)" in text


def test_log_info_and_replay_say_incomplete_not_match(lossy):
    _, path = lossy
    r = _cli("log", "info", str(path))
    assert r.returncode == 1 and "complete   yes" not in r.stdout
    assert "complete   NO: records lost:" in r.stdout and "haptic ticks lost" in r.stdout, r.stdout
    r = _cli("replay", str(path), "--verify")
    assert r.returncode != 0 and "MATCH" not in r.stdout and "Traceback" not in r.stderr
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "incomplete log" in err[0] and "physics steps lost" in err[0], r.stderr


SESSION = """
import sys
from app.session import run_session
if __name__ == "__main__":
    res = run_session("peg_in_hole", "scripted:insert", 120.0, log_path=sys.argv[1],
                      logger_stalls=[(1.0, 4.0)], rings=(200, 20))
    print("ended", res.log_stats.get("complete"), flush=True)
"""


def _started(log_path) -> bool:
    """The live log holds its /session record (a log still being written reads as cut)."""
    try:
        return bool(read_log(log_path).messages("/session"))
    except LogError:                  # only the header so far: nothing to read yet
        return False


def test_sigterm_while_the_logger_is_stalled_still_writes_every_record(tmp_path):
    """SIGTERM lands while the logger sleeps with seconds of records waiting in the loops:
    the loops stop and hand them over, the logger wakes, writes them all, then closes."""
    log_path = tmp_path / "s.mcap"
    script = tmp_path / "session.py"
    script.write_text(SESSION)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, str(script), str(log_path)], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while time.monotonic() - t0 < START_BOUND_S:
        assert p.poll() is None, p.communicate()
        if log_path.exists() and _started(log_path):
            break
        time.sleep(0.2)
    time.sleep(2.5)                       # into the logger's stall (1 .. 5 s of the session)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert "ended True" in out and "Traceback" not in err, (out, err)
    log = read_log(log_path)
    assert not log.truncated and not log.corrupt
    end = log.messages("/session_end")[-1][1]
    assert end["interrupted"] and end["complete"] and not end["lost"]
    assert end["haptic"]["offered"] == len(log.messages("/device")) > 1500
    assert end["physics"]["offered"] == len(log.messages("/physics_input")) > 150
