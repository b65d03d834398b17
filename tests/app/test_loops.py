"""Loop timing logic with fake time: nothing sleeps for real here."""
from app.loops import RateStats, sleep_until


class FakeClock:
    def __init__(self):
        self.t = 0.0
        self.sleeps = []

    def __call__(self):
        self.t += 1e-6          # each reading costs a microsecond (a spin iteration)
        return self.t

    def sleep(self, s):
        self.sleeps.append(s)
        self.t += s + 5e-5      # the OS oversleeps by 50 us


def test_sleep_then_spin_meets_absolute_deadline():
    c = FakeClock()
    late = sleep_until(1e-3, clock=c, sleep=c.sleep, spin=3e-4)
    assert 0.0 <= late < 2e-6                      # spinning absorbs the oversleep
    assert len(c.sleeps) == 1 and abs(c.sleeps[0] - (1e-3 - 3e-4 - 1e-6)) < 1e-9


def test_no_sleep_when_already_late():
    c = FakeClock()
    c.t = 5e-3
    late = sleep_until(1e-3, clock=c, sleep=c.sleep)
    assert c.sleeps == [] and abs(late - 4e-3) < 1e-5


def test_absolute_deadlines_do_not_drift():
    c = FakeClock()
    t0 = c()
    for k in range(1, 1001):
        sleep_until(t0 + k * 1e-3, clock=c, sleep=c.sleep)
        c.t += 2e-4                                # 0.2 ms of work per tick
    assert abs(c.t - (t0 + 1.0)) < 1e-3            # 1000 ticks take 1 s, not 1000 x (1 ms + work)


def test_rate_stats():
    r = RateStats(window=10)
    for k in range(20):
        r.tick(k * 1e-3, k * 1e-3 + 1e-4)
    assert abs(r.rate() - 1000.0) < 1e-6 and len(r.periods) == 10 and r.count == 20
