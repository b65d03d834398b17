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
'r' pressed            back to the start pose through the clutch's map (``reset_position``;
                       the session also undoes the turn and lets go of a held part:
                       app.view.session.SessionKeys)
=====================  =====================================================================

Key names are lower-case pyglet symbol names (``pyglet.window.key.symbol_string(sym).lower()``);
mouse buttons use pyglet's bits (left 1, middle 2, right 4); pyglet's ``dy`` is positive upward.

``read(now)`` integrates: the yaw turns at ``turn_rate`` while a turn key is held, and the
handle position follows the event-driven target through a first-order lag of time constant
``smoothing`` (exact exponential update; ``smoothing = 0`` jumps) whose speed is bounded by
``max_speed`` (``MAX_SPEED``), so a drag or a scroll of any size is a glide.  Target and handle stay in the ball of
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
# m/s, the handle's top speed: a scroll or a drag of any size becomes a glide of at most this
# speed.  Unbounded, a fast scroll drove the handle at up to 1 m/s (a 30 mm scroll through a
# 30 ms lag) and the part hit the bore or the thread at 0.3 m/s: 150-480 um of penetration on
# the bolt and 3.2 mm on the peg, where the batch runs move at 10-20 mm/s (33-200 um).
# 30 mm/s crosses the workspace in 3.3 s; at 50 mm/s the peg met the chamfer with the arm
# lagging 0.3-0.5 mm sideways (its inertia) and went 102 um deep (2.3x the batch);
# with CONTACT_SPEED and the session's contact hold it keeps a session within 2x the batch's
# penetration (tests/app/test_keyboard_sessions.py)
MAX_SPEED = 0.03
MAX_ACCEL = 0.2
# m/s, the handle's top speed while the proxy touches (``KeyboardDevice.touch``, from the
# session): a key cannot render the contact, so the hand slows as a careful hand would -- a
# 10 ms physics step then moves the part 0.1 mm, half the contact band (0.2 mm), where at
# 50 mm/s it moved 0.5 mm and the part met the chamfers and the holes at the hand's full speed
CONTACT_SPEED = 0.02


class KeyboardDevice(Device):
    def __init__(self, metres_per_pixel: float = 2e-4, metres_per_scroll: float = 2e-3,
                 turn_rate: float = math.pi / 2, smoothing: float = 0.03,
                 start=(0.0, 0.0, 0.05), capability: Capability = KEYBOARD_CAPABILITY,
                 max_speed: float = MAX_SPEED, max_accel: float = MAX_ACCEL,
                 contact_speed: float = CONTACT_SPEED):
        super().__init__(capability)
        self.metres_per_pixel = metres_per_pixel
        self.metres_per_scroll = metres_per_scroll
        self.turn_rate = turn_rate              # rad/s while a turn key is held
        self.smoothing = smoothing              # s, time constant of the position lag
        self.start = clamp_to_ball(np.array(start, dtype=np.float64), capability.workspace_radius)
        self.target = self.start.copy()         # m, set by events
        self.p = self.start.copy()              # m, the handle (follows the target)
        self.yaw = 0.0                          # rad about the device z axis
        self.max_speed = max_speed              # m/s, bound on the handle's speed
        self.max_accel = max_accel              # m/s^2, bound on its acceleration
        self.contact_speed = contact_speed      # m/s, bound on its speed while in contact
        self.in_contact = False                 # the proxy touches (``touch``, from the session)
        self._held_along: np.ndarray | None = None   # unit: no glide this way (``lead_by``)
        self._v = np.zeros(3)                   # m/s, the handle's velocity
        self.held: set[str] = set()
        self._last_now: float | None = None
        # the clutch's workspace map, as the coupling keeps it: each clutch hold re-anchors
        # the map by the handle's travel during the hold (haptics.coupling step 2), so the
        # handle position that maps to the start pose is start + clutch_shift
        self.clutch_shift = np.zeros(3)         # m, sum of the handle's travel while clutched
        self._clutch_from: np.ndarray | None = None   # handle position at the clutched sample

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
                self.reset_position()
        else:
            self.held.discard(key)

    def reset_position(self) -> None:
        """Send the handle back to the position the coupling's map takes to the start pose
        (``start`` moved by what the clutch holds shifted the map); it travels there at the
        handle's bounded speed.  (Jumping to ``start`` itself, as before, left the part 28 mm
        off the axis after a clutch move; ``SessionKeys`` also undoes the turn.)"""
        self.target = clamp_to_ball(self.start + self.clutch_shift, self.capability.workspace_radius)

    # -- the tick -------------------------------------------------------------------------
    @property
    def turn(self) -> int:
        """-1 tightening, +1 loosening, 0 (both or neither held)."""
        return int(bool(self.held & LOOSEN_KEYS)) - int(bool(self.held & TIGHTEN_KEYS))

    @property
    def buttons(self) -> int:
        return CLUTCH_BIT if CLUTCH_KEY in self.held else 0

    def touch(self, in_contact: bool) -> None:
        """The session says whether the proxy touches: while it does, the handle's speed is at
        most ``contact_speed`` (it slows at once: a hand stopped by what it feels)."""
        self.in_contact = bool(in_contact)

    def lead_by(self, lead, limit: float) -> None:
        """The session's hand held by a contact (``app.view.session.SessionKeys``): `lead` (3,)
        m, how far the handle is ahead of the proxy (none: not held).  Beyond `limit` the glide
        makes no way along the lead -- sideways and back it moves freely, and the handle is
        never dragged after a proxy pushed away."""
        if lead is None or float(np.linalg.norm(lead)) <= limit:
            self._held_along = None
        else:
            self._held_along = np.asarray(lead, float) / float(np.linalg.norm(lead))

    def _glide(self, dt: float) -> np.ndarray:
        """The handle's step toward the target over `dt`: the first-order lag's velocity,
        at most ``max_speed``, changed by at most ``max_accel`` dt, and never faster than it
        can stop at the target (sqrt(2 a d)), so it glides there without overshoot."""
        d = self.target - self.p
        dist = math.sqrt(float(d @ d))
        if dt <= 0.0 or dist == 0.0:
            self._v = np.zeros(3)
            return np.zeros(3)
        if self.smoothing <= 0.0:
            return d
        top = min(self.max_speed, self.contact_speed) if self.in_contact else self.max_speed
        v_now = math.sqrt(float(self._v @ self._v))
        if v_now > top:                          # touched: slow at once
            self._v = self._v * (top / v_now)
        speed = min(dist * (1.0 - math.exp(-dt / self.smoothing)) / dt, top,
                    math.sqrt(2.0 * self.max_accel * dist))
        want = d * (speed / dist)
        dv = want - self._v
        n = math.sqrt(float(dv @ dv))
        if n > self.max_accel * dt:
            dv *= self.max_accel * dt / n
        v = self._v + dv
        u = self._held_along
        if u is not None and float(v @ u) > 0.0:      # held by the contact: no way ahead
            v = v - float(v @ u) * u
        step = v * dt
        n = math.sqrt(float(step @ step))
        return step * (dist / n) if n > dist else step

    def read(self, now: float) -> DeviceSample:
        self._require_open()
        dt = 0.0 if self._last_now is None else max(now - self._last_now, 0.0)
        self._last_now = now
        wz = self.turn * self.turn_rate
        self.yaw += wz * dt
        p_old = self.p
        self.p = clamp_to_ball(p_old + self._glide(dt), self.capability.workspace_radius)
        v = (self.p - p_old) / dt if dt > 0.0 else np.zeros(3)
        self._v = v
        buttons = self.buttons
        if buttons & CLUTCH_BIT and self._clutch_from is None:
            self._clutch_from = self.p.copy()
        elif not buttons & CLUTCH_BIT and self._clutch_from is not None:
            self.clutch_shift += self.p - self._clutch_from
            self._clutch_from = None
        return DeviceSample(t=now, p=self.p.copy(), q=quat_about_z(self.yaw), v=v,
                            w=np.array([0.0, 0.0, wz]), buttons=buttons)

    def _apply_force(self, wrench: np.ndarray) -> None:
        pass                                     # no actuator; last_wrench keeps it for the HUD


class KeyScript:
    """Timed window events for a keyboard session without a window (tests, demos).

    ``events``: (t s, kind, *args) with the kinds of ``KeyboardDevice.on_event`` -- ("drag",
    dx, dy, buttons), ("scroll", dy), ("key", name, pressed).  ``play(target, now)`` hands
    every event due by `now`, in time order, to `target`: the window's receiver (the
    session's ``SessionKeys`` for keys, which passes them on to the device) or the device
    itself -- the path a window's events take."""

    def __init__(self, events=()):
        evs = []
        for i, e in enumerate(events):
            e = tuple(e)
            if not (len(e) >= 2 and isinstance(e[0], (int, float)) and not isinstance(e[0], bool)
                    and math.isfinite(e[0]) and e[1] in ("drag", "scroll", "key")):
                raise ValueError(f"keyboard script: event {i}: expected (t s, drag|scroll|key, *args), got {e!r}")
            evs.append((float(e[0]), i, e[1], e[2:]))
        self.events = [(t, kind, args) for t, _, kind, args in sorted(evs)]
        self.next = 0

    @classmethod
    def load(cls, path: str) -> KeyScript:
        """A script from a JSON file: a list of [t, kind, *args] (``keys:PATH`` sessions)."""
        import json
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            if not isinstance(data, list):
                raise ValueError("expected a list of [t, kind, *args]")
            return cls(data)
        except (OSError, ValueError, TypeError) as e:
            raise ValueError(f"keyboard script {path}: {str(e).splitlines()[0]}") from None

    def play(self, target, now: float) -> None:
        device = getattr(target, "keyboard", None) or target
        while self.next < len(self.events) and self.events[self.next][0] <= now:
            _, kind, args = self.events[self.next]
            self.next += 1
            if kind == "key" and hasattr(target, "on_key"):
                target.on_key(*args)
            else:
                device.on_event(kind, *args)


@register("keyboard", "keyboard", needs_arg=None)
def _open_keyboard(arg: str, **kw) -> KeyboardDevice:
    return KeyboardDevice(**kw)
