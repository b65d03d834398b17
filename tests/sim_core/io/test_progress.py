"""The first-run compile notice: numba's compile event, counted and timed with a fake clock."""
import io

from numba import njit

from sim_core.io.progress import COMPILE_NOTICE, CompileWatch


class FakeClock:
    """Each reading is `step` seconds after the previous one."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_a_compilation_is_announced_counted_and_timed_and_a_cached_call_is_silent():
    @njit(cache=False)                       # a fresh function: compiles on its first call
    def twice(x):
        return 2.0 * x

    out = io.StringIO()
    with CompileWatch(stream=out, clock=FakeClock(7.0)) as w:
        assert not w.report("before")        # nothing compiled yet: no line
        assert twice(1.5) == 3.0
        assert w.report("first call")
        assert twice(2.5) == 5.0             # compiled already: no event
        assert not w.report("second call")
    lines = out.getvalue().splitlines()
    assert lines[0] == COMPILE_NOTICE
    assert lines[1] == f"  first call: {w.kernels} kernels compiled in 7.0 s" and w.kernels >= 1
    assert len(lines) == 2 and w.seconds == 7.0          # the outermost compilation only
    twice(1.0 + 1j)                          # after the with: no longer listening
    assert len(out.getvalue().splitlines()) == 2 and w.seconds == 7.0


def test_without_a_stream_the_watch_is_silent():
    @njit(cache=False)
    def inc(x):
        return x + 1

    with CompileWatch() as w:
        inc(1)
        w.report("stage")
    assert w.kernels >= 1 and w.seconds > 0.0
