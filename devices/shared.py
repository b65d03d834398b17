"""A device whose samples are produced in another process (the keyboard/mouse of the view).

The OpenGL view lives in the main process, the haptic loop in its own; the main process runs
the ``KeyboardDevice`` state machine on the window's events and publishes its samples into a
seqlock slot (``sim_core.io.shm.SeqSlot``); this device reads that slot in the haptic process without
ever waiting on the writer (``try_read``: on a collision it keeps the previous sample).
Layout of the slot: t, p (3), q (4), v (3), w (3), buttons.
"""
from __future__ import annotations

import numpy as np

from devices.base import Capability, Device, DeviceFault, DeviceSample, register

SAMPLE_SIZE = 15


def pack_sample(s: DeviceSample, out: np.ndarray | None = None) -> np.ndarray:
    v = np.empty(SAMPLE_SIZE) if out is None else out
    v[0] = s.t
    v[1:4], v[4:8], v[8:11], v[11:14] = s.p, s.q, s.v, s.w
    v[14] = s.buttons
    return v


def unpack_sample(v: np.ndarray) -> DeviceSample:
    return DeviceSample(float(v[0]), v[1:4].copy(), v[4:8].copy(), v[8:11].copy(), v[11:14].copy(),
                        int(v[14]))


class SharedSampleDevice(Device):
    """Reads samples another process writes; force output is only recorded (dof_out of the
    producing device, normally 0)."""

    def __init__(self, slot_name: str, capability: Capability):
        super().__init__(capability)
        self.slot_name = slot_name
        self._slot = None
        self._buf = np.zeros(SAMPLE_SIZE)
        self._last: DeviceSample | None = None

    def open(self) -> None:
        from sim_core.io.shm import SeqSlot
        try:
            self._slot = SeqSlot(SAMPLE_SIZE, name=self.slot_name, create=False)
        except FileNotFoundError:
            raise DeviceFault(f"{self.capability.name}: shared input {self.slot_name} not found") from None
        super().open()

    def read(self, now: float) -> DeviceSample:
        self._require_open()
        seq = self._slot.try_read(self._buf)
        if seq > 0 or self._last is None:
            s = unpack_sample(self._buf)
            q = s.q if np.linalg.norm(s.q) > 0.5 else np.array([1.0, 0.0, 0.0, 0.0])
            self._last = DeviceSample(now, s.p, q, s.v, s.w, s.buttons)
        return self._last

    def _apply_force(self, wrench: np.ndarray) -> None:
        pass                                        # nothing to drive: recorded by the base

    def close(self) -> None:
        if self._slot is not None:
            self._slot.close()
            self._slot = None
        super().close()


@register("shared", "")
def _open_shared(arg: str, **kw) -> SharedSampleDevice:
    """The keyboard's samples handed over by the main process (a session's own wiring)."""
    from devices.keyboard import KEYBOARD_CAPABILITY
    return SharedSampleDevice(arg, kw.pop("capability", KEYBOARD_CAPABILITY))
