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
