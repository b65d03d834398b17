"""What reaches a session's log when its logger process is stopped for a while (SIGSTOP).

    python bench/logger_stall.py [--duration 20] [--at 2] [--stop 12] [--sigterm]

Runs a peg session (``scripted:insert``, shipped ring sizes), stops the ``tightsim-logger``
process `--at` s after the loops start for `--stop` s (what a logger starved by CPU load or a
stalled disk does), then lets it go on; with ``--sigterm`` the session gets SIGTERM while the
logger is still stopped, and the logger is continued a second later.  Prints the haptic ticks
and physics steps the session ran against those in the file, the log's own account, and what
``tightsim log info`` and ``tightsim replay --verify`` say.  Figures only (docs/safety.md).
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from app.session import run_session
from sim_core.io.log import read_log


def _staller(log_path: str, at: float, stop_s: float, sigterm: bool) -> None:
    while True:                          # the logger, once the loops run and the log exists
        names = {p.name: p for p in mp.active_children()}
        if "tightsim-logger" in names and "tightsim-haptic" in names and os.path.exists(log_path):
            break
        time.sleep(0.05)
    time.sleep(at)
    pid = names["tightsim-logger"].pid
    os.kill(pid, signal.SIGSTOP)
    time.sleep(stop_s)
    if sigterm:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1.0)
    os.kill(pid, signal.SIGCONT)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--at", type=float, default=2.0)
    ap.add_argument("--stop", type=float, default=12.0)
    ap.add_argument("--sigterm", action="store_true")
    a = ap.parse_args()
    path = os.path.join(tempfile.mkdtemp(), "stall.mcap")
    threading.Thread(target=_staller, args=(path, a.at, a.stop, a.sigterm), daemon=True).start()
    res = run_session("peg_in_hole", "scripted:insert", a.duration, log_path=path)
    log = read_log(path)
    print(f"session {res.wall:.2f} s: about {round(res.wall * 1000)} haptic ticks and "
          f"{res.physics.get('steps')} physics steps ran; in the file {len(log.messages('/device'))} ticks, "
          f"{len(log.messages('/physics_input'))} steps")
    end = log.messages("/session_end")
    if end:
        e = end[-1][1]
        print(f"the log's account: haptic {e['haptic']}, physics {e['physics']}, lost {e['lost']}")
    for cmd in (["log", "info", path], ["replay", path, "--verify"]):
        r = subprocess.run([sys.executable, "-m", "app.cli", *cmd], capture_output=True, text=True)
        print(f"tightsim {' '.join(cmd[:2])} -> exit {r.returncode}: {(r.stdout + r.stderr).strip().splitlines()[-1]}")


if __name__ == "__main__":
    main()
