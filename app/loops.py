"""Loop timing: absolute deadlines, sleep-then-spin waits, real-time priority, rate statistics.

Every loop runs on absolute deadlines ``t0 + k T`` (never ``sleep(T)`` after the work, which
accumulates drift) and waits by sleeping until shortly before the deadline, then spinning:
``time.sleep`` alone overshoots by 50-100 us on Linux, which is a tenth of a haptic period.
Clocks are injectable so that the timing logic is tested with fake time.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

SPIN_S = 3e-4   # spin for the last 0.3 ms before a deadline


def sleep_until(deadline: float, clock=time.perf_counter, sleep=time.sleep, spin: float = SPIN_S) -> float:
    """Wait until clock() >= deadline; returns the lateness (s, >= 0)."""
    rest = deadline - clock() - spin
    if rest > 0:
        sleep(rest)
    while True:
        now = clock()
        if now >= deadline:
            return now - deadline


def try_realtime(priority: int = 80) -> tuple[bool, str]:
    """Ask for SCHED_FIFO for this process; (granted, one-line reason when not)."""
    if not hasattr(os, "sched_setscheduler"):
        return False, "SCHED_FIFO not available on this system"
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return True, "SCHED_FIFO"
    except PermissionError:
        return False, "SCHED_FIFO not permitted (needs CAP_SYS_NICE or rtprio limits)"
    except OSError as e:
        return False, f"SCHED_FIFO refused ({e.strerror})"


@dataclass
class RateStats:
    """Periods and work times of a loop over a sliding window (seconds)."""
    window: int = 2000
    periods: list = field(default_factory=list)
    works: list = field(default_factory=list)
    last: float | None = None
    count: int = 0

    def tick(self, start: float, end: float) -> None:
        if self.last is not None:
            self.periods.append(start - self.last)
            if len(self.periods) > self.window:
                del self.periods[: len(self.periods) - self.window]
        self.works.append(end - start)
        if len(self.works) > self.window:
            del self.works[: len(self.works) - self.window]
        self.last = start
        self.count += 1

    def rate(self) -> float:
        return 1.0 / float(np.mean(self.periods)) if self.periods else 0.0

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.periods, q)) if self.periods else 0.0


_STARTING = [False]


class StartUpEnded(SystemExit):
    """Raised by SIGTERM in a loop process still starting (loading or compiling kernels)."""


def child_signals(stop, starting: bool = False) -> None:
    """In a session's loop process: Ctrl-C belongs to the main process (it stops the session
    for everyone; a child that also caught it printed a traceback), and SIGTERM -- sent to the
    whole process group, say -- sets the stop flag, so the loop ends the way it always does
    (the haptic loop commands zero force, the logger closes the log).  With ``starting``,
    until ``start_up_done()``, SIGTERM also ends the start-up at once (``StartUpEnded``): a
    session given up on during a minute of compiling must not wait for the compiler; the
    process's ``finally`` blocks still run (the haptic loop zeroes the force)."""
    import signal
    _STARTING[0] = starting

    def on_term(*_):
        stop.set()
        if _STARTING[0]:
            _STARTING[0] = False
            raise StartUpEnded(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, on_term)
    sys.unraisablehook = _quiet_start_up_end(sys.unraisablehook)


def _quiet_start_up_end(prev):
    """An unraisable-exception hook that drops ``StartUpEnded``: a SIGTERM landing while numba's
    compiler is inside a C callback (its object cache's notify) cannot end the start-up there --
    Python prints the exception as "ignored" (8 lines of traceback on stderr, where the session
    promises one line) and goes on.  The stop flag is set all the same, so the start-up ends at
    its next check (``wait_for_go``); only the noise goes."""
    def hook(u):
        if isinstance(u.exc_value, StartUpEnded):
            return
        prev(u)
    return hook


def start_up_done() -> None:
    """From here on SIGTERM only sets the stop flag (the loop ends itself, cleanly)."""
    _STARTING[0] = False


def wait_for_go(go, stop, poll: float = 0.05) -> bool:
    """Wait for the session's go (True), or its stop without a go (False: it never started)."""
    while not go.wait(poll):
        if stop.is_set():
            return False
    return True
