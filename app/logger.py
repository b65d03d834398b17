"""The session's logger process: drains the haptic and physics rings into the MCAP log.

Nothing is lost on the way (issue 23): the loops hand their records over through
``shm.RingWriter``, which spills into the loop's own memory when the ring is full instead of
dropping, so a logger that falls behind -- starved by CPU load, a slow disk, a stall -- only
delays the records; it catches up at several times the rate they come in.  When the session
ends, for whatever reason, the loops hand their spills over and mark their rings closed, and
this process drains until both are closed (or the main process says the loops are gone)
before it closes the file.  The choice, against the alternatives:

* back-pressure would make the physics loop wait for the logger: the haptic side would lose
  its contact model for a logging problem (its watchdog ramps the force out after 0.25 s);
  the haptic loop may never wait at all;
* larger rings alone only move the limit (shared memory is small in containers: 64 MiB by
  default under Docker), and a logger stalled longer than the ring still loses records;
* the session slowing its logging would lose records by design.

If a record is lost all the same (a spill past its limit -- minutes of records -- or a loop
killed before it could hand its spill over), every record carries its sequence number, so
this process knows how many and where: a ``/dropped`` message for each gap as it is found,
and ``/session_end`` (the last message) with the counts of each stream, what reached the
file, and every gap with its time range.  The summary, ``tightsim log info`` and ``tightsim
replay`` read them.
"""
from __future__ import annotations

import os
import queue
import time

import numpy as np

from app.loops import child_signals
from sim_core.io.records import PHYS, TICK
from sim_core.io.shm import Ring

LOG_PERIOD_S = 0.02      # drain every 20 ms (a full ring is drained again at once)
DRAIN_MOST = 4096        # records taken per stream per pass, so neither stream waits long on the other


class Stream:
    """One ring's records as they reach the file: the next sequence number expected and the
    gaps found (count, time of the record before, time of the record after)."""

    def __init__(self, name: str, ring: Ring, seq_col: int):
        self.name, self.ring, self.seq_col = name, ring, seq_col
        self.expected = 0
        self.logged = 0
        self.last_t = float("nan")
        self.gaps: list[dict] = []

    def take(self, log, most: int = DRAIN_MOST) -> np.ndarray:
        """The next records from the ring, oldest first; a gap in their numbers is written
        to the log as ``/dropped`` and kept."""
        recs = self.ring.drain(most)
        if not len(recs):
            return recs
        seq = recs[:, self.seq_col].astype(np.int64)
        want = self.expected + np.arange(len(recs))
        if not np.array_equal(seq, want):
            prev = np.concatenate([[self.expected - 1], seq[:-1]])
            for i in np.nonzero(seq != prev + 1)[0]:
                t_before = self.last_t if i == 0 else float(recs[i - 1, 0])
                self._gap(log, int(seq[i] - prev[i] - 1), int(prev[i] + 1), t_before, float(recs[i, 0]))
        self.expected = int(seq[-1]) + 1
        self.logged += len(recs)
        self.last_t = float(recs[-1, 0])
        return recs

    def _gap(self, log, count: int, first: int, t_before: float, t_after: float) -> None:
        g = {"stream": self.name, "count": count, "first": first,
             "after_t": None if np.isnan(t_before) else t_before,
             "before_t": None if np.isnan(t_after) else t_after}
        self.gaps.append(g)
        log.put("/dropped", t_before if np.isfinite(t_before) else 0.0, g)

    def finish(self, log) -> dict:
        """After the last drain: records offered but never seen are a gap at the end."""
        offered = self.ring.offered
        if offered > self.expected:
            self._gap(log, offered - self.expected, self.expected, self.last_t, self.ring.last_t)
            self.expected = offered
        return {"offered": offered, "logged": self.logged,
                "lost": sum(g["count"] for g in self.gaps), "closed": self.ring.closed}


def logger_main(spec: dict, cfg: dict, stop, go, started, producers_done, realtime, notes, out) -> None:
    """Process entry point.  ``go``/``started``: real time began (``started`` is set before
    ``go``; a session that never started sets ``stop`` alone); ``producers_done``: the main
    process has seen both loop processes end; ``notes``: why the session ended (a queue of
    dicts from the main process); ``out``: this process's statistics."""
    from app import physics_loop
    from app.session import start_state
    from sim_core.io.log import LogWriter
    child_signals(stop)
    ticks = Stream("haptic", Ring(TICK.size, spec["ring_capacity"], name=spec["ring"], create=False),
                   TICK.slices["seq"].start)
    steps = Stream("physics", Ring(PHYS.size, spec["phys_ring_capacity"], name=spec["phys_ring"], create=False),
                   PHYS.slices["seq"].start)
    log = LogWriter(spec["log"])
    stats: dict = {}
    try:
        log.put("/config", 0.0, cfg)
        log.part_state(start_state(spec), spec.get("hand", 0))
        log.flush()
        while not go.wait(0.05) and not stop.is_set():
            pass
        began = bool(started.value)
        parent = os.getppid()
        if began:
            log.put("/session", 0.0, {"device": spec["device_label"], "sched_fifo": bool(realtime.value),
                                      "headless": spec.get("headless", True), "physics": "step"})
        t0 = time.perf_counter()
        pending = sorted(tuple(x) for x in spec.get("logger_stalls", ()))
        while began:
            if pending and time.perf_counter() - t0 >= pending[0][0]:
                time.sleep(pending.pop(0)[1])    # injected stall (the robustness tests)
            # read the flags before draining: what was pushed before they were set is taken below
            ending = stop.is_set()
            last = ending and ((ticks.ring.closed and steps.ring.closed) or producers_done.is_set()
                               or os.getppid() != parent)
            busy = False
            while True:                   # both streams until both rings are empty
                t = ticks.take(log)
                physics_loop.log_ticks(log, t)
                s = steps.take(log)
                for r in s:
                    log.physics_record(r)
                log.flush()
                if len(t) < DRAIN_MOST and len(s) < DRAIN_MOST:
                    break
                busy = True
            if last:
                break
            if not busy:
                time.sleep(LOG_PERIOD_S)
        stats = {"started": began, "haptic": ticks.finish(log), "physics": steps.finish(log)}
        while not producers_done.wait(0.05) and os.getppid() == parent:
            pass                          # the main process's note on how the session ended comes first
    finally:
        end = dict(stats)
        end.setdefault("started", False)
        try:                              # put before producers_done is set: it is on its way
            end.update(notes.get(timeout=2.0 if producers_done.is_set() else 0.0))
        except (queue.Empty, OSError, ValueError):
            pass
        end["lost"] = ticks.gaps + steps.gaps
        end["complete"] = bool(stats) and not end["lost"]
        try:
            log.close(end=end)
        finally:
            out.put(end)
            ticks.ring.close()
            steps.ring.close()
