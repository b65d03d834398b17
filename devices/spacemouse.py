"""HID driver (hidapi) for 3Dconnexion SpaceMouse devices: 6-DOF rate control, no force output.

Reports (HID input reports, first byte the report id; axes int16 little-endian, nominal
range about +-350 counts):

======  =========  ================================================================
id      bytes      content
======  =========  ================================================================
1       7          translation x, y, z (older models: SpaceNavigator, SpaceMouse Pro)
1       13         translation x, y, z then rotation rx, ry, rz (newer models, one report)
2       7          rotation rx, ry, rz
3       >= 2       buttons, a little-endian bitmask (bit i = button i)
other   any        ignored (LED, battery, ...)
======  =========  ================================================================

Anything else with id 1-3 (a short or overlong report) is malformed: ignored, counted in
``malformed`` and logged (first time, then at 10, 100, ...).  A read error (unplugged device)
raises ``DeviceFault``.

The raw HID frame has x right, y toward the user, z down (push the cap down: +z).
``axis_map`` (default diag(1, -1, -1), a proper rotation, so it applies to the rotation axes
too) turns that into the device frame used here: x right, y away from the user, z up.
Rate control: counts beyond ``deadband`` are scaled so ``full_scale`` counts give
``max_speed`` (m/s) and ``max_rate`` (rad/s); ``read(now)`` integrates the pose over
``now - last now`` -- position clamped to the workspace ball, orientation
q <- exp(w dt) q with w in the device frame.  The velocities in the sample are the commanded
rates (zero while pinned at the workspace boundary).

``handle`` is injectable: anything with ``read(max_length) -> list[int] | bytes`` (empty when
nothing is waiting) and ``close()``; tests feed recorded report bytes.  Without one, ``open``
finds the first HID interface of vendor 0x046d (Logitech-era 3Dconnexion) or 0x256f
(3Dconnexion) with usage page 1 / usage 8 (multi-axis controller), or opens ``path``.
"""
from __future__ import annotations

import logging
import math
from collections import deque

import numpy as np

from devices.base import (
    Capability,
    Device,
    DeviceFault,
    DeviceSample,
    check_sample,
    clamp_to_ball,
    quat_from_rotvec,
    quat_mul,
    register,
)

log = logging.getLogger(__name__)

SPACEMOUSE_CAPABILITY = Capability(
    name="spacemouse", dof_in=6, dof_out=0, max_force=20.0, max_torque=1.0, max_stiffness=2000.0,
    max_damping=20.0, workspace_radius=0.1, rate_hz=60.0)

VENDOR_IDS = (0x046D, 0x256F)
USAGE_PAGE_GENERIC_DESKTOP, USAGE_MULTI_AXIS = 0x01, 0x08
REPORT_TRANSLATION, REPORT_ROTATION, REPORT_BUTTONS = 1, 2, 3
AXIS_MAP = np.diag([1.0, -1.0, -1.0])       # HID (x right, y toward user, z down) -> device
MAX_REPORT_BYTES = 64
MAX_REPORTS_PER_READ = 64                    # drain at most this many per tick (never blocks)


def parse_report(data: bytes) -> tuple[str, object] | None:
    """One HID report -> ("translation", (3,)), ("rotation", (3,)), ("both", (6,)),
    ("buttons", int), ("other", id); None if malformed."""
    if not data:
        return None
    rid, n = data[0], len(data)
    if rid == REPORT_TRANSLATION and n in (7, 13):
        a = np.frombuffer(bytes(data[1:n]), dtype="<i2").astype(np.float64)
        return ("translation", a) if n == 7 else ("both", a)
    if rid == REPORT_ROTATION and n == 7:
        return "rotation", np.frombuffer(bytes(data[1:7]), dtype="<i2").astype(np.float64)
    if rid == REPORT_BUTTONS and n >= 2:
        return "buttons", int.from_bytes(bytes(data[1:]), "little")
    if rid in (REPORT_TRANSLATION, REPORT_ROTATION, REPORT_BUTTONS):
        return None
    return "other", rid


class SpaceMouse(Device):
    def __init__(self, handle=None, *, path: bytes | str | None = None,
                 vendor_ids=VENDOR_IDS, full_scale: float = 350.0, deadband: float = 8.0,
                 max_speed: float = 0.1, max_rate: float = 1.0, axis_map=AXIS_MAP,
                 start=(0.0, 0.0, 0.0), capability: Capability = SPACEMOUSE_CAPABILITY):
        super().__init__(capability)
        self.handle = handle
        self.path = path
        self.vendor_ids = tuple(vendor_ids)
        self.full_scale = full_scale            # counts for full speed
        self.deadband = deadband                # counts ignored around rest
        self.max_speed = max_speed              # m/s at full scale
        self.max_rate = max_rate                # rad/s at full scale
        self.axis_map = np.asarray(axis_map, dtype=np.float64)
        self._check_settings()
        self.counts = np.zeros(6)               # latest raw axes: tx ty tz rx ry rz
        self.buttons = 0
        self.p = clamp_to_ball(np.array(start, dtype=np.float64), capability.workspace_radius)
        self.q = np.array([1.0, 0.0, 0.0, 0.0])
        self.reports = 0
        self.malformed = 0
        self._last_now: float | None = None

    def _check_settings(self) -> None:
        """The rate mapping's settings, so that no count can make a non-finite or too fast
        sample (counts are int16: with these checks every sample is finite and within the
        capability; ``read`` still checks each one)."""
        cap = self.capability
        bad = ""
        if not (math.isfinite(self.deadband) and 0.0 <= self.deadband < self.full_scale < math.inf):
            bad = f"needs 0 <= deadband < full_scale (got deadband {self.deadband:g}, full_scale {self.full_scale:g})"
        # each axis reaches its rate alone: all three together, sqrt(3) times it
        elif not (0.0 < self.max_speed <= cap.max_speed / math.sqrt(3.0)):
            bad = (f"max_speed must be > 0 and <= {cap.max_speed / math.sqrt(3.0):.4g} m/s, the capability's "
                   f"{cap.max_speed:g} over three axes (got {self.max_speed:g})")
        elif not (0.0 < self.max_rate <= cap.max_angular_speed / math.sqrt(3.0)):
            bad = (f"max_rate must be > 0 and <= {cap.max_angular_speed / math.sqrt(3.0):.4g} rad/s, the "
                   f"capability's {cap.max_angular_speed:g} over three axes (got {self.max_rate:g})")
        elif self.axis_map.shape != (3, 3) or not np.all(np.isfinite(self.axis_map)) or not np.allclose(
                self.axis_map @ self.axis_map.T, np.eye(3)):
            bad = "axis_map must be a 3 x 3 rotation or reflection"
        if bad:
            raise ValueError(f"spacemouse: {bad}")

    # -- lifecycle -----------------------------------------------------------------------------
    def open(self) -> None:
        if self.is_open:
            return
        if self.handle is None:
            self.handle = self._open_hid()
        self.is_open = True

    def _open_hid(self):
        try:
            import hid
        except ImportError as e:
            raise DeviceFault(f"spacemouse: hidapi is not installed ({e}); pip install hidapi") from None
        path = self.path
        if path is None:
            found = [d for vid in self.vendor_ids for d in hid.enumerate(vid, 0)
                     if d.get("usage_page") in (USAGE_PAGE_GENERIC_DESKTOP, 0)
                     and d.get("usage") in (USAGE_MULTI_AXIS, 0)]
            if not found:
                raise DeviceFault("spacemouse: no 3Dconnexion device found (vendor "
                                  + "/".join(f"0x{v:04x}" for v in self.vendor_ids) + ")")
            path = found[0]["path"]
        try:
            h = hid.device()
            h.open_path(path.encode() if isinstance(path, str) else path)
            h.set_nonblocking(1)
        except (OSError, ValueError) as e:
            raise DeviceFault(f"spacemouse: cannot open {path!r} ({e}); check permissions "
                              "(udev rule for hidraw)") from None
        return h

    def close(self) -> None:
        super().close()
        if self.handle is not None:
            try:
                self.handle.close()
            except (OSError, ValueError):
                pass

    # -- the tick ------------------------------------------------------------------------------
    def read(self, now: float) -> DeviceSample:
        self._require_open()
        for _ in range(MAX_REPORTS_PER_READ):
            try:
                data = self.handle.read(MAX_REPORT_BYTES)
            except (OSError, ValueError) as e:
                raise DeviceFault(f"spacemouse: read error ({str(e).strip() or type(e).__name__})") from None
            if not data:
                break
            self._take(bytes(data))
        dt = 0.0 if self._last_now is None else max(now - self._last_now, 0.0)
        self._last_now = now
        v, w = self.rates()
        p_new = clamp_to_ball(self.p + v * dt, self.capability.workspace_radius)
        if dt > 0.0:
            v = (p_new - self.p) / dt            # what the handle really did (0 when pinned)
        self.p = p_new
        q = quat_mul(quat_from_rotvec(w * dt), self.q)
        self.q = q / math.sqrt(float(q @ q))
        return check_sample(DeviceSample(t=now, p=self.p.copy(), q=self.q.copy(), v=v, w=w, buttons=self.buttons),
                            self.capability, "spacemouse")

    def rates(self) -> tuple[np.ndarray, np.ndarray]:
        """Commanded (v m/s, w rad/s) in the device frame from the latest counts."""
        c = np.clip(self.counts, -self.full_scale, self.full_scale)
        c = np.sign(c) * np.maximum(np.abs(c) - self.deadband, 0.0) / (self.full_scale - self.deadband)
        return (self.axis_map @ c[:3]) * self.max_speed, (self.axis_map @ c[3:]) * self.max_rate

    def _take(self, data: bytes) -> None:
        r = parse_report(data)
        if r is None:
            self.malformed += 1
            if math.log10(self.malformed).is_integer():
                log.warning("spacemouse: ignored malformed report #%d (id %d, %d bytes)",
                            self.malformed, data[0] if data else -1, len(data))
            return
        self.reports += 1
        kind, x = r
        if kind == "translation":
            self.counts[:3] = x
        elif kind == "rotation":
            self.counts[3:] = x
        elif kind == "both":
            self.counts[:] = x
        elif kind == "buttons":
            self.buttons = x

    def _apply_force(self, wrench: np.ndarray) -> None:
        pass                                     # no actuator; last_wrench keeps it for the HUD


class RecordedHID:
    """A HID handle that plays recorded reports (tests, or replaying a captured session).

    ``read`` returns the next queued report as a list of ints, or ``[]`` when the queue is
    empty (like a non-blocking hidapi handle); a queued exception is raised instead.
    Reports are bytes or hex strings (``"01 5e 01 00 00 f6 ff"``).
    """

    def __init__(self, reports=()):
        self.queue: deque = deque()
        self.closed = False
        self.feed(*reports)

    def feed(self, *reports) -> None:
        for r in reports:
            self.queue.append(bytes.fromhex(r) if isinstance(r, str) else r)

    def read(self, max_length: int, timeout_ms: int = 0) -> list[int]:
        if self.closed:
            raise ValueError("not open")
        if not self.queue:
            return []
        r = self.queue.popleft()
        if isinstance(r, BaseException):
            raise r
        return list(r[:max_length])

    def close(self) -> None:
        self.closed = True


@register("spacemouse", "spacemouse[:HIDPATH]", needs_arg=False)
def _open_spacemouse(arg: str, **kw) -> SpaceMouse:
    return SpaceMouse(path=arg or None, **kw)
