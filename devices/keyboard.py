"""Keyboard and mouse fallback: a pure state machine (no pyglet here; the view forwards events).

Bindings (seed 000 Sec. V.F uses keys to turn the nut):

=====================  =====================================================================
mouse drag, left       moves the target in the horizontal plane: +x right, +y up the screen
                       (``metres_per_pixel``)
mouse drag, right      moves the target along z (screen up = +z); the session window sends it
                       only with the left button held too (a right drag alone orbits the camera)
scroll                 moves the target along the bolt axis z (``metres_per_scroll`` per unit)
'e' or 'right' held    turns clockwise seen from above (-z; tightens a right-hand thread)
'q' or 'left' held     turns counter-clockwise (+z; loosens)
'space' held           clutch: button bit 0
'r' pressed            back to the start pose (the session also returns the part: app.view.session)
=====================  =====================================================================

Key names are lower-case pyglet symbol names (``pyglet.window.key.symbol_string(sym).lower()``);
mouse buttons use pyglet's bits (left 1, middle 2, right 4); pyglet's ``dy`` is positive upward.

``read(now)`` integrates: the yaw turns at ``turn_rate`` while a turn key is held, and the
handle position follows the event-driven target through a first-order lag of time constant
``smoothing`` (exact exponential update, so the 60 Hz mouse steps become a continuous 1 kHz
motion with bounded velocity; ``smoothing = 0`` jumps).  Target and handle stay in the ball of
the workspace radius.  There is no force output (``dof_out = 0``): ``write_force`` only keeps
the clamped wrench for the HUD (``last_wrench``).
"""
from __future__ import annotations

import math

import numpy as np

from devices.base import Capability, Device, DeviceSample, clamp_to_ball, quat_about_z, register

KEYBOARD_CAPABILITY = Capability(
    # no force output; the force limits bound what the HUD shows, the gains what the
    # (purely virtual) coupling may use
    name="keyboard", dof_in=6, dof_out=0, max_force=20.0, max_torque=1.0, max_stiffness=2000.0,
    max_damping=20.0, workspace_radius=0.1, rate_hz=60.0)

MOUSE_LEFT, MOUSE_MIDDLE, MOUSE_RIGHT = 1, 2, 4
TIGHTEN_KEYS = frozenset({"e", "right"})
LOOSEN_KEYS = frozenset({"q", "left"})
CLUTCH_KEY = "space"
RESET_KEY = "r"
CLUTCH_BIT = 1 << 0


class KeyboardDevice(Device):
    def __init__(self, metres_per_pixel: float = 2e-4, metres_per_scroll: float = 2e-3,
                 turn_rate: float = math.pi / 2, smoothing: float = 0.03,
                 start=(0.0, 0.0, 0.05), capability: Capability = KEYBOARD_CAPABILITY):
        super().__init__(capability)
        self.metres_per_pixel = metres_per_pixel
        self.metres_per_scroll = metres_per_scroll
        self.turn_rate = turn_rate              # rad/s while a turn key is held
        self.smoothing = smoothing              # s, time constant of the position lag
        self.start = clamp_to_ball(np.array(start, dtype=np.float64), capability.workspace_radius)
        self.target = self.start.copy()         # m, set by events
        self.p = self.start.copy()              # m, the handle (follows the target)
        self.yaw = 0.0                          # rad about the device z axis
        self.held: set[str] = set()
        self._last_now: float | None = None

    # -- events (from the view; call them in the thread that calls read) --------------------
    def on_event(self, kind: str, *args) -> None:
        """Dispatch a forwarded event tuple: ("drag", dx, dy, buttons), ("scroll", dy) or
        ("key", name, pressed) -- for views in another process sending events over a queue."""
        handler = {"drag": self.on_drag, "scroll": self.on_scroll, "key": self.on_key}.get(kind)
        if handler is None:
            raise ValueError(f"keyboard: unknown event {kind!r} (expected drag, scroll or key)")
        handler(*args)

    def on_drag(self, dx_px: float, dy_px: float, buttons: int) -> None:
        if buttons & MOUSE_LEFT:
            self.target[0] += dx_px * self.metres_per_pixel
            self.target[1] += dy_px * self.metres_per_pixel
        if buttons & MOUSE_RIGHT:
            self.target[2] += dy_px * self.metres_per_pixel
        self.target = clamp_to_ball(self.target, self.capability.workspace_radius)

    def on_scroll(self, dy: float) -> None:
        self.target[2] += dy * self.metres_per_scroll
        self.target = clamp_to_ball(self.target, self.capability.workspace_radius)

    def on_key(self, key: str, pressed: bool) -> None:
        key = key.lower()
        if pressed:
            self.held.add(key)
            if key == RESET_KEY:
                self.target = self.start.copy()
                self.p = self.start.copy()
                self.yaw = 0.0
        else:
            self.held.discard(key)

    # -- the tick -------------------------------------------------------------------------
    @property
    def turn(self) -> int:
        """-1 tightening, +1 loosening, 0 (both or neither held)."""
        return int(bool(self.held & LOOSEN_KEYS)) - int(bool(self.held & TIGHTEN_KEYS))

    @property
    def buttons(self) -> int:
        return CLUTCH_BIT if CLUTCH_KEY in self.held else 0

    def read(self, now: float) -> DeviceSample:
        self._require_open()
        dt = 0.0 if self._last_now is None else max(now - self._last_now, 0.0)
        self._last_now = now
        wz = self.turn * self.turn_rate
        self.yaw += wz * dt
        p_old = self.p
        if self.smoothing > 0.0:
            self.p = p_old + (self.target - p_old) * (1.0 - math.exp(-dt / self.smoothing))
        else:
            self.p = self.target.copy()
        self.p = clamp_to_ball(self.p, self.capability.workspace_radius)
        v = (self.p - p_old) / dt if dt > 0.0 else np.zeros(3)
        return DeviceSample(t=now, p=self.p.copy(), q=quat_about_z(self.yaw), v=v,
                            w=np.array([0.0, 0.0, wz]), buttons=self.buttons)

    def _apply_force(self, wrench: np.ndarray) -> None:
        pass                                     # no actuator; last_wrench keeps it for the HUD


@register("keyboard", "keyboard", needs_arg=None)
def _open_keyboard(arg: str, **kw) -> KeyboardDevice:
    return KeyboardDevice(**kw)
