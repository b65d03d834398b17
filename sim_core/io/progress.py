"""Progress on stderr: a one-line bar shared by the training and data commands, and a notice
when numba compiles (no extra dependency for a few lines of text).

Compilation.  The kernels are ``@njit(cache=True)``: the first run on a machine (or after a
source change) compiles them -- over a minute with an empty cache, a second or two when only a
few are missing from it -- in several bursts as each stage of the step first meets its data
(the scenario's SDF probe, the first step, the first contact) -- and every later run loads
them from the cache in about a second.
:class:`CompileWatch` listens to numba's ``"numba:compile"`` event, which numba sends only
when it really compiles (a cache miss), never when it loads from the cache; so it counts
exactly the first-run work and its time, and says so the moment it starts.
"""
from __future__ import annotations

import sys
import time


class Progress:
    """``bar(k, note)``: redraws at most twice a second, and ends the line at the total."""

    def __init__(self, total: int, label: str, stream=sys.stderr, width: int = 30):
        self.total, self.label, self.stream, self.width = total, label, stream, width
        self.t0 = time.perf_counter()
        self.last = -1.0

    def __call__(self, k: int, note: str = "") -> None:
        now = time.perf_counter()
        if k < self.total and now - self.last < 0.5:
            return
        self.last = now
        f = k / self.total
        bar = "#" * int(f * self.width)
        eta = (now - self.t0) / max(f, 1e-9) * (1 - f)
        self.stream.write(f"\r{self.label} [{bar:<{self.width}}] {100 * f:5.1f} % "
                          f"{k}/{self.total}  eta {eta:4.0f} s  {note}   ")
        if k >= self.total:
            self.stream.write("\n")
        self.stream.flush()


# No time estimate: it ranges from a second or two (a few kernels missing) to over a minute (an
# empty cache); each stage's line then says what it compiled and how long that took.
COMPILE_NOTICE = ("compiling the numba kernels missing from the cache (later runs load them from it; "
                  "each stage below says how long it took)...")


class CompileWatch:
    """Counts numba compilations (cache misses) and the seconds they take while registered.

    ``with CompileWatch() as w: ...`` -- ``w.kernels`` (dispatchers compiled, nested callees
    included), ``w.seconds`` (wall time inside the outermost compilations).  With a
    ``stream`` it is also the user's notice: :data:`COMPILE_NOTICE` when the first compilation
    starts, and :meth:`report` after each stage: one line with what that stage compiled.
    ``clock`` is injectable for tests."""

    def __init__(self, stream=None, clock=time.perf_counter):
        from numba.core import event
        self.stream, self.clock = stream, clock
        self.kernels, self.seconds = 0, 0.0
        self._depth, self._t0 = 0, 0.0
        self._reported = (0, 0.0)                # (kernels, seconds) at the last report
        outer = self

        class _Listener(event.Listener):         # numba's listener interface
            def on_start(self, ev):
                outer._start()

            def on_end(self, ev):
                outer._end()

        self._listener, self._event = _Listener(), event

    def _start(self) -> None:
        if self._depth == 0:
            self._t0 = self.clock()
            if self.kernels == 0:
                self.say(COMPILE_NOTICE)
        self._depth += 1
        self.kernels += 1

    def _end(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.seconds += self.clock() - self._t0

    def say(self, line: str) -> None:
        if self.stream is not None:
            self.stream.write(line + "\n")
            self.stream.flush()

    def report(self, stage: str) -> bool:
        """One line for what compiled since the last report (nothing when nothing did):
        ``  STAGE: N kernels compiled in S s``; True when it wrote one."""
        k0, s0 = self._reported
        self._reported = (self.kernels, self.seconds)
        if self.kernels == k0:
            return False
        self.say(f"  {stage}: {self.kernels - k0} kernels compiled in {self.seconds - s0:.1f} s")
        return True

    def __enter__(self):
        self._event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc):
        self._event.unregister("numba:compile", self._listener)


_PROCESS_WATCH: CompileWatch | None = None


def compile_watch() -> CompileWatch:
    """The process's silent :class:`CompileWatch`, registered on first use and never removed
    (it costs nothing until numba compiles): the difference of its ``seconds`` over a stretch
    of code is the compilation inside it."""
    global _PROCESS_WATCH
    if _PROCESS_WATCH is None:
        _PROCESS_WATCH = CompileWatch().__enter__()
    return _PROCESS_WATCH
