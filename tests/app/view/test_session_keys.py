"""The session's own keys (app.view.session.SessionKeys): Escape ends the session, ``r`` puts
the proxy back at its start -- also after a clutch (indexing) move, which left it 28 mm off
the axis when the keyboard device's own reset did it.  No display needed."""
import math
import time

import numpy as np
import pytest

from app.view.session import RESET_TOLERANCE, SessionKeys
from devices.keyboard import KeyboardDevice

FRAME = 1 / 60
START = np.array([0.0, 0.0, 0.132])           # the bolting scenario's proxy start, m
CLUTCH_MOVE_PX = 140                           # 28 mm at the keyboard's 0.2 mm per pixel


class Coupling:
    """The workspace map of haptics.coupling (scale 1, device axes = world axes), a clutch
    that re-anchors it on release, and a proxy that follows the handle with a first-order lag
    (time constant `tau`): enough to see where a reset puts the proxy."""

    def __init__(self, kb, tau=0.05):
        self.kb, self.tau = kb, tau
        self.anchor_dev, self.anchor_world = kb.p.copy(), START.copy()
        self.frozen = None
        self.proxy = START.copy()

    def tick(self, dt):
        clutch = bool(self.kb.buttons & 1)
        if clutch and self.frozen is None:
            self.frozen = self.handle()
        elif not clutch and self.frozen is not None:      # release: continue from the frozen handle
            self.anchor_dev, self.anchor_world, self.frozen = self.kb.p.copy(), self.frozen, None
        self.proxy += (self.handle() - self.proxy) * (1.0 - math.exp(-dt / self.tau))

    def handle(self):
        return self.frozen if self.frozen is not None else self.anchor_world + (self.kb.p - self.anchor_dev)


def _run(kb, coupling, keys, t, seconds):
    for _ in range(round(seconds / FRAME)):
        t += FRAME
        kb.read(t)
        coupling.tick(FRAME)
        if keys is not None:
            keys.frame(coupling.proxy, np.eye(3))
    return t


def _clutch_move(kb, coupling, keys):
    t = _run(kb, coupling, keys, 0.0, 0.2)
    kb.on_key("space", True)
    t = _run(kb, coupling, keys, t, 0.1)
    kb.on_drag(CLUTCH_MOVE_PX, 0.0, 1)                   # the hand moves, the proxy stays
    t = _run(kb, coupling, keys, t, 0.3)
    kb.on_key("space", False)
    t = _run(kb, coupling, keys, t, 0.1)
    kb.on_drag(0.0, 50.0, 1)                             # then a real move: 10 mm in y
    return _run(kb, coupling, keys, t, 0.5)


def test_the_devices_own_reset_follows_the_clutch_map():
    """The device's own reset returns the handle to where the clutch's map takes it to the
    start (issue 23; it returned to where the handle started, 28 mm off the axis after
    indexing)."""
    kb = KeyboardDevice()
    kb.open()
    c = Coupling(kb)
    t = _clutch_move(kb, c, None)
    kb.on_key("r", True)
    _run(kb, c, None, t, 2.0)
    assert np.linalg.norm(c.proxy - START) < 2 * RESET_TOLERANCE


def test_r_puts_the_proxy_back_at_its_start_after_a_clutch_move():
    kb = KeyboardDevice()
    kb.open()
    c = Coupling(kb)
    keys = SessionKeys(kb)
    t = _clutch_move(kb, c, keys)
    assert np.linalg.norm(c.proxy - START) > 9e-3
    keys.on_key("r", True)
    keys.on_key("r", False)
    _run(kb, c, keys, t, 2.0)
    assert np.linalg.norm(c.proxy - START) < 2 * RESET_TOLERANCE
    assert not keys.resetting                            # done trimming


def test_r_also_undoes_the_turn():
    kb = KeyboardDevice()
    kb.open()
    keys = SessionKeys(kb)
    keys.frame(START, np.eye(3))
    a = math.radians(100.0)
    R = np.array([[math.cos(a), -math.sin(a), 0.0], [math.sin(a), math.cos(a), 0.0], [0.0, 0.0, 1.0]])
    keys.frame(START, R)
    yaw = kb.yaw
    keys.on_key("r", True)
    assert kb.yaw - yaw == pytest.approx(-a)


def test_escape_ends_the_session_and_other_keys_reach_the_device():
    kb = KeyboardDevice()
    kb.open()
    keys = SessionKeys(kb)
    keys.on_key("e", True)
    assert "e" in kb.held and not keys.quit
    keys.on_key("escape", True)
    assert keys.quit and "escape" not in kb.held
    without = SessionKeys(None)                          # a device other than the keyboard
    without.on_key("r", True)
    without.on_key("escape", True)
    assert without.quit


def test_in_a_real_session_r_brings_the_part_back_on_the_axis_and_escape_ends_it():
    """A keyboard bolting session without a window: a 28 mm clutch move, a 10 mm move, `r`,
    Escape.  Measured: the proxy and the part end within 0.05 mm of the start (the device's own
    reset: 28 mm off), and the session ends at the Escape, not at its duration."""
    from app.session import run_session
    from sim_core.io.records import PROXY, SNAPSHOT
    plan = [(0.5, "key", ("space", True)), (0.6, "drag", (CLUTCH_MOVE_PX, 0, 1)), (1.0, "key", ("space", False)),
            (1.2, "drag", (0, 50, 1)), (2.5, "key", ("r", True)), (2.55, "key", ("r", False)),
            (5.5, "key", ("escape", True))]
    st = {"t0": None, "i": 0, "keys": None, "part": None, "proxy": None, "away": 0.0}

    def on_frame(sv, pv):
        now = time.perf_counter()
        st["t0"] = st["t0"] or now
        keys = st["keys"]
        keys.frame(PROXY.get(pv, "p"), PROXY.get(pv, "R").reshape(3, 3))
        while st["i"] < len(plan) and plan[st["i"]][0] <= now - st["t0"]:
            _, kind, args = plan[st["i"]]
            st["i"] += 1
            if kind == "key":
                keys.on_key(*args)
            else:
                keys.keyboard.on_drag(*args)
        st["part"], st["proxy"] = SNAPSHOT.get(sv, "p").copy(), PROXY.get(pv, "p").copy()
        if not keys.resetting and st["i"] <= 4:                              # before the reset
            st["away"] = max(st["away"], float(np.linalg.norm(st["proxy"] - keys.start[0])))
        return not keys.quit

    on_frame.bind_keyboard = lambda kb: st.__setitem__("keys", SessionKeys(kb))
    res = run_session("bolting", "keyboard", 20.0, on_frame=on_frame, realtime=False)
    assert res.fault is None and res.wall < 10.0                           # Escape ended it
    start = st["keys"].start[0]
    assert st["away"] > 5e-3                                               # the proxy had moved away
    assert np.linalg.norm(st["proxy"] - start) < 0.1e-3
    assert np.linalg.norm(st["part"][:2] - start[:2]) < 0.1e-3             # on the axis again
