"""One device interface for the 1 kHz haptic loop (CHAI3D-style), and the device factory.

Every input device -- a force-feedback arm on a serial port, a HID SpaceMouse, the keyboard
and mouse, a scripted trajectory, a replayed log -- is a ``Device``:

    dev = open_device("serial:/dev/ttyACM0")        # or "keyboard", "scripted:insert", ...
    s = dev.read(now)          # DeviceSample: t, p, q, v, w, buttons (non-blocking)
    dev.write_force(wrench)    # [f (3) N; tau (3) N m], clamped to dev.capability
    dev.close()                # always leaves the device at zero force

The haptic tick is CHAI3D's ``updateFromDevice -> computeInteractionForces -> applyToDevice``:
``read`` then ``write_force``, once per period.

Conventions (ARCHITECTURE.md sec. 5): SI units; quaternions **[w, x, y, z]**; positions,
velocities and wrenches are in the **device frame** (the device's fixed base, origin at the
centre of its usable workspace unless a driver says otherwise); ``w`` is the handle's angular
velocity in the same device frame.  Mapping the device frame onto the scene (scale, offset,
rotation) is the session's job, not the driver's.

Time: no device reads a clock in ``read``/``write_force``; ``now`` (s, host monotonic clock or a
fake one in tests) is passed in, and drivers that must wait (a serial handshake in ``open``)
take an injectable ``clock`` and ``sleep``.

Faults: anything that makes the input untrustworthy (disconnect, garbage, silence beyond a
watchdog) raises ``DeviceFault`` with a one-line message naming the device and what went wrong.
A driver that faults has already tried to command zero force before raising.  A hardware
driver (serial, SpaceMouse) also refuses a sample that cannot be its handle's
(``sample_problem``: non-finite, past ``Capability.max_reach``, ``max_speed`` or
``max_angular_speed``, a non-unit quaternion) and names the field; synthetic devices do not
(the adversarial scripts exceed those bounds on purpose, and a replay plays back what they
made), and the haptic loop refuses non-finite samples from any device.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Capability", "DeviceSample", "DeviceFault", "Device", "open_device", "clamp_wrench",
    "samples_identical", "quat_mul", "quat_from_rotvec", "quat_to_rotvec", "quat_about_z",
    "clamp_to_ball", "IDENTITY_Q", "sample_problem", "check_sample",
]

IDENTITY_Q = np.array([1.0, 0.0, 0.0, 0.0])
IDENTITY_Q.setflags(write=False)


@dataclass(frozen=True)
class Capability:
    """What a device can do, with units and safe limits (CHAI3D ``cHapticDeviceInfo`` style).

    The haptics side must never ask for more than this: ``Device.write_force`` clamps the force
    and torque norms to ``max_force`` / ``max_torque``; the coupling picks its gains within
    ``max_stiffness`` / ``max_damping``.  A device without force feedback has ``dof_out = 0``
    (its limits then bound what is *recorded* for the HUD, nothing is sent anywhere).
    """
    name: str
    dof_in: int             # 3 (position) or 6 (position and orientation) input DOF
    dof_out: int            # 0 (no force feedback), 3 (force) or 6 (force and torque)
    max_force: float        # N, bound on |f|
    max_torque: float       # N m, bound on |tau| (0 for a 3-DOF-out device)
    max_stiffness: float    # N/m the device can render stably
    max_damping: float      # N s/m
    workspace_radius: float  # m, half-size of the usable workspace around the frame origin
    rate_hz: float          # nominal update rate of the device itself
    units: str = "SI: m, rad, m/s, rad/s, N, N m"
    max_force_rate: float = 5000.0   # N/s, rated rate of change of |f| (haptics.coupling step 6)
    max_torque_rate: float = 300.0   # N m/s
    # Bounds on what a true sample can hold (``sample_problem``): past them a reading is not the
    # handle but a broken link or device, and the driver refuses it.  A desktop device's handle
    # stays within half a metre of its workspace centre; a hand moves at a few m/s and turns a
    # handle at a few turns a second.
    max_reach: float = 0.5           # m, bound on |p| (>= workspace_radius)
    max_speed: float = 10.0          # m/s, bound on |v|
    max_angular_speed: float = 100.0  # rad/s, bound on |w|

    def __post_init__(self):
        if self.dof_in not in (3, 6):
            raise ValueError(f"capability {self.name}: dof_in must be 3 or 6, got {self.dof_in}")
        if self.dof_out not in (0, 3, 6):
            raise ValueError(f"capability {self.name}: dof_out must be 0, 3 or 6, got {self.dof_out}")
        for k in ("max_force", "max_torque", "max_stiffness", "max_damping"):
            x = getattr(self, k)
            if not (math.isfinite(x) and x >= 0.0):
                raise ValueError(f"capability {self.name}: {k} must be finite and >= 0, got {x}")
        for k in ("workspace_radius", "rate_hz", "max_force_rate", "max_torque_rate", "max_reach", "max_speed",
                  "max_angular_speed"):
            x = getattr(self, k)
            if not (math.isfinite(x) and x > 0.0):
                raise ValueError(f"capability {self.name}: {k} must be finite and > 0, got {x}")
        if self.max_reach < self.workspace_radius:
            raise ValueError(f"capability {self.name}: max_reach {self.max_reach} is inside the workspace "
                             f"(workspace_radius {self.workspace_radius})")


@dataclass(frozen=True, eq=False)
class DeviceSample:
    """One reading of the handle, all in the device frame.

    Arrays are float64; compare samples with ``samples_identical`` (bitwise), not ``==``.
    """
    t: float                # s, the host time passed to read() (not a device timestamp)
    p: np.ndarray           # (3,) m, handle position
    q: np.ndarray           # (4,) [w x y z] handle orientation, unit norm
    v: np.ndarray           # (3,) m/s, handle linear velocity
    w: np.ndarray           # (3,) rad/s, handle angular velocity (device frame)
    buttons: int = 0        # bitmask, bit i = button i held

    def to_dict(self) -> dict:
        """Plain floats and lists (the session log's ``/device`` message)."""
        return {"t": float(self.t), "p": self.p.tolist(), "q": self.q.tolist(),
                "v": self.v.tolist(), "w": self.w.tolist(), "buttons": int(self.buttons)}

    @staticmethod
    def from_dict(d: dict) -> DeviceSample:
        """Inverse of ``to_dict`` (float64 values round-trip bit for bit through JSON repr)."""
        arr = lambda k, n: _vec(d[k], n, k)  # noqa: E731
        return DeviceSample(t=float(d["t"]), p=arr("p", 3), q=arr("q", 4), v=arr("v", 3),
                            w=arr("w", 3), buttons=int(d.get("buttons", 0)))


def _vec(x, n: int, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.shape != (n,):
        raise ValueError(f"device sample field {what}: expected {n} numbers, got shape {a.shape}")
    return a


# a driver's quaternion is normalised in float64 (|q| - 1 ~ 1e-16) or float32 (~1e-7): one off
# by more than this is not a rotation
UNIT_QUATERNION_TOL = 1e-3


def sample_problem(s: DeviceSample, cap: Capability) -> str:
    """'' when `s` can be the handle of a device of `cap`, else one phrase naming the field and
    what is wrong: a non-finite value, a position past ``max_reach``, a speed past
    ``max_speed`` / ``max_angular_speed``, a quaternion that is not unit."""
    for k, unit in (("p", "m"), ("q", ""), ("v", "m/s"), ("w", "rad/s")):
        a = getattr(s, k)
        if not np.all(np.isfinite(a)):
            return f"field {k} = {_show(a)} {unit}".rstrip() + " is not finite"
    for k, bound, what in (("p", cap.max_reach, "max_reach"), ("v", cap.max_speed, "max_speed"),
                           ("w", cap.max_angular_speed, "max_angular_speed")):
        n = math.sqrt(float(getattr(s, k) @ getattr(s, k)))
        if n > bound:
            return f"field {k}: |{k}| = {n:.4g}, beyond the device's {what} {bound:g}"
    n = math.sqrt(float(s.q @ s.q))
    if abs(n - 1.0) > UNIT_QUATERNION_TOL:
        return f"field q: |q| = {n:.6g}, not a unit quaternion"
    return ""


def _show(a) -> str:
    return "[" + ", ".join(f"{x:.4g}" for x in np.asarray(a, np.float64).ravel()) + "]"


def check_sample(s: DeviceSample, cap: Capability, who: str) -> DeviceSample:
    """`s`, or ``DeviceFault("<who>: sample refused: <field, what>")``."""
    bad = sample_problem(s, cap)
    if bad:
        raise DeviceFault(f"{who}: sample refused: {bad}")
    return s


def samples_identical(a: DeviceSample, b: DeviceSample) -> bool:
    """Bitwise equality of two samples (NaN payloads and signed zeros included)."""
    return (np.float64(a.t).tobytes() == np.float64(b.t).tobytes() and a.buttons == b.buttons
            and all(np.asarray(getattr(a, k), np.float64).tobytes()
                    == np.asarray(getattr(b, k), np.float64).tobytes() for k in "pqvw"))


class DeviceFault(RuntimeError):
    """The device cannot be trusted any more (disconnect, garbage, silence).

    The message is one line: ``"<device>: <what went wrong>[; zero force sent|not sent]"``.
    """


def clamp_wrench(wrench, cap: Capability) -> tuple[np.ndarray, bool]:
    """Clamp ``[f; tau]`` to the capability: |f| <= max_force, |tau| <= max_torque.

    Directions are kept (norm scaling, not per-axis clipping, so the rendered force never turns).
    A wrench with a non-finite entry becomes zero -- a NaN must never reach a motor.
    Returns (clamped copy, whether anything was changed).
    """
    w = np.array(wrench, dtype=np.float64, copy=True).reshape(-1)
    if w.shape != (6,):
        raise ValueError(f"{cap.name}: a wrench is [f (3); tau (3)], got {w.size} values")
    if not np.all(np.isfinite(w)):
        return np.zeros(6), True
    changed = False
    for sl, lim in ((slice(0, 3), cap.max_force), (slice(3, 6), cap.max_torque)):
        n = math.sqrt(float(w[sl] @ w[sl]))
        if n > lim:
            w[sl] *= (lim / n) if n > 0.0 else 0.0
            changed = True
    return w, changed


class Device(ABC):
    """Template for every driver: subclasses implement ``read`` and ``_apply_force``.

    The base class owns force clamping (``write_force``), the bookkeeping the HUD shows
    (``last_wrench``, ``clamp_count``), ``zero_force``, and the ``close`` contract.
    """

    capability: Capability

    def __init__(self, capability: Capability):
        self.capability = capability
        self.is_open = False
        self.clamp_count = 0                  # write_force calls that were clamped
        self._last_wrench = np.zeros(6)

    # -- lifecycle ---------------------------------------------------------------------
    def open(self) -> None:
        """Connect (and hand-shake); idempotent."""
        self.is_open = True

    def close(self) -> None:
        """Command zero force (best effort, never raises) and release the device."""
        if self.is_open:
            try:
                self._apply_force(np.zeros(6))
            except DeviceFault:
                pass
        self._last_wrench = np.zeros(6)
        self.is_open = False

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- the tick ----------------------------------------------------------------------
    @abstractmethod
    def read(self, now: float) -> DeviceSample:
        """The latest handle state at host time ``now`` (s); never blocks.

        Raises DeviceFault on disconnect, garbage or silence beyond the watchdog.
        """

    def write_force(self, wrench) -> None:
        """Command ``[f; tau]`` (N, N m, device frame), clamped to the capability."""
        w, changed = clamp_wrench(wrench, self.capability)
        self.clamp_count += changed
        self._apply_force(w)
        self._last_wrench = w

    def zero_force(self) -> None:
        self.write_force(np.zeros(6))

    @property
    def last_wrench(self) -> np.ndarray:
        """The last wrench actually commanded (after clamping), a copy."""
        return self._last_wrench.copy()

    @abstractmethod
    def _apply_force(self, wrench: np.ndarray) -> None:
        """Send an already clamped wrench to the hardware (or record it)."""

    def _require_open(self) -> None:
        if not self.is_open:
            raise DeviceFault(f"{self.capability.name}: not open")


# -- small quaternion helpers ([w, x, y, z]); pure NumPy so drivers stay light -------------

def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a * b (rotate by b, then by a)."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw])


def quat_from_rotvec(r: np.ndarray) -> np.ndarray:
    """exp: rotation vector (axis * angle, rad) -> unit quaternion."""
    r = np.asarray(r, dtype=np.float64)
    th = math.sqrt(float(r @ r))
    if th < 1e-12:
        return np.array([1.0, 0.5 * r[0], 0.5 * r[1], 0.5 * r[2]]) / math.sqrt(1.0 + 0.25 * th * th)
    s = math.sin(0.5 * th) / th
    return np.array([math.cos(0.5 * th), s * r[0], s * r[1], s * r[2]])


def quat_to_rotvec(q: np.ndarray) -> np.ndarray:
    """log: unit quaternion -> rotation vector with angle in [0, pi]."""
    q = np.asarray(q, dtype=np.float64)
    if q[0] < 0.0:
        q = -q
    s = math.sqrt(float(q[1:] @ q[1:]))
    if s < 1e-12:
        return 2.0 * q[1:]
    return (2.0 * math.atan2(s, q[0]) / s) * q[1:]


def quat_about_z(angle: float) -> np.ndarray:
    return np.array([math.cos(0.5 * angle), 0.0, 0.0, math.sin(0.5 * angle)])


def clamp_to_ball(p: np.ndarray, radius: float) -> np.ndarray:
    """Scale ``p`` back onto the ball |p| <= radius (direction kept)."""
    n = math.sqrt(float(p @ p))
    return p * (radius / n) if n > radius else p


# -- the registry ----------------------------------------------------------------------
# A driver joins by decorating its factory with ``@register(KIND, "SPEC help")`` in its own
# module of this package; ``open_device`` imports the package's modules once to collect them,
# so a new driver is one new file (nothing here names the drivers).
DRIVERS: dict = {}          # kind -> (factory(arg, **kw) -> Device, whether it takes an argument, help)


def register(kind: str, help: str, needs_arg: bool = True):
    def deco(factory):
        DRIVERS[kind] = (factory, needs_arg, help)
        return factory
    return deco


_discovered = False


def _discover() -> None:
    """Import every driver module of ``devices`` once, so each registers itself.  Not keyed on
    ``DRIVERS`` being empty: a driver imported on its own (``devices.keyboard``) registers
    alone, and the others must still be found."""
    global _discovered
    if _discovered:
        return
    import importlib
    import pkgutil

    import devices
    for m in pkgutil.iter_modules(devices.__path__):
        if m.name != "base":
            importlib.import_module(f"devices.{m.name}")   # a driver that cannot import is a bug: let it show
    _discovered = True


def spec_help() -> str:
    _discover()
    return ", ".join(h for _, (_, _, h) in sorted(DRIVERS.items()) if h)


def spec_problem(spec: str) -> str:
    """'' when `spec` names a known driver with an argument where it takes one, else why not
    (checked before anything starts: ``tightsim run --device``)."""
    _discover()
    kind, _, arg = spec.partition(":")
    entry = DRIVERS.get(kind)
    if entry is None or (entry[1] and not arg) or (entry[1] is None and arg):
        return f"device spec {spec!r}: expected one of {spec_help()}"
    return ""


def open_device(spec: str, **kw) -> Device:
    """Build and open a device from a spec string ``KIND[:ARG]``; ``kw`` goes to the driver.

    ``"keyboard"``, ``"scripted:approach_and_turn"``, ``"scripted:adversarial:random:7"``,
    ``"replay:session.mcap"``, ``"serial:/dev/ttyACM0"``, ``"spacemouse"``.
    A bad spec raises ValueError; a device that cannot be opened raises DeviceFault.
    """
    if bad := spec_problem(spec):
        raise ValueError(bad)
    kind, _, arg = spec.partition(":")
    dev = DRIVERS[kind][0](arg, **kw)
    dev.open()
    return dev
