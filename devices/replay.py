"""Replay device: plays back recorded ``DeviceSample``s bit for bit.

``read(now)`` returns the recorded sample with the latest ``t <= now`` -- the very sample
recorded, arrays and all, so a replayed session sees exactly the input the live one saw
(the recorded ``t`` is kept, not replaced by ``now``).  Before the first sample there is
nothing to return and ``read`` raises DeviceFault.  ``finished`` turns true once ``now``
reaches the last sample.  Forces written are recorded (``forces``) so a replay can be compared
with the forces the live session logged.

Sources: any iterable of samples, or a file through ``load_samples``:
``.npz`` (``save_samples``; arrays t, p, q, v, w, buttons) or ``.mcap`` (a session log; its
``/device`` topic, read with ``sim_core.io.log.read_log`` -- JSON floats round-trip bit for bit).
"""
from __future__ import annotations

import bisect
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from devices.base import Capability, Device, DeviceFault, DeviceSample, register

REPLAY_CAPABILITY = Capability(
    name="replay", dof_in=6, dof_out=6, max_force=20.0, max_torque=1.0, max_stiffness=5000.0,
    max_damping=50.0, workspace_radius=0.1, rate_hz=1000.0)


def _frozen(s: DeviceSample) -> DeviceSample:
    """A read-only copy (consumers cannot alter the recording through a returned sample)."""
    arrs = {}
    for k in "pqvw":
        a = np.array(getattr(s, k), dtype=np.float64, copy=True)
        a.setflags(write=False)
        arrs[k] = a
    return DeviceSample(t=float(s.t), buttons=int(s.buttons), **arrs)


class ReplayDevice(Device):
    """Plays back ``samples`` (any iterable of DeviceSample, times non-decreasing)."""

    def __init__(self, samples: Iterable[DeviceSample], capability: Capability = REPLAY_CAPABILITY,
                 source: str = "replay"):
        super().__init__(capability)
        self.samples = [_frozen(s) for s in samples]
        self._times = [s.t for s in self.samples]
        for i in range(1, len(self._times)):
            if not self._times[i] >= self._times[i - 1]:
                raise ValueError(f"{source}: sample {i} has t = {self._times[i]!r} before "
                                 f"sample {i - 1} (t = {self._times[i - 1]!r})")
        self.source = source
        self._now = -np.inf
        self.forces: list[tuple[float, np.ndarray]] = []

    @property
    def finished(self) -> bool:
        return not self.samples or self._now >= self._times[-1]

    def read(self, now: float) -> DeviceSample:
        self._require_open()
        self._now = now
        i = bisect.bisect_right(self._times, now) - 1
        if i < 0:
            first = f"{self._times[0]!r}" if self._times else "none (empty recording)"
            raise DeviceFault(f"{self.source}: no recorded sample at or before t = {now!r} "
                              f"(first sample: {first})")
        return self.samples[i]

    def _apply_force(self, wrench: np.ndarray) -> None:
        self.forces.append((self._now, wrench.copy()))


def save_samples(path: str | Path, samples: Iterable[DeviceSample]) -> None:
    """Write samples to an ``.npz`` (float64 arrays: exact)."""
    s = list(samples)
    np.savez(path, t=np.array([x.t for x in s], dtype=np.float64),
             p=np.array([x.p for x in s], dtype=np.float64).reshape(-1, 3),
             q=np.array([x.q for x in s], dtype=np.float64).reshape(-1, 4),
             v=np.array([x.v for x in s], dtype=np.float64).reshape(-1, 3),
             w=np.array([x.w for x in s], dtype=np.float64).reshape(-1, 3),
             buttons=np.array([x.buttons for x in s], dtype=np.int64))


def load_samples(path: str | Path) -> list[DeviceSample]:
    """Samples from an ``.npz`` (``save_samples``) or a session log ``.mcap`` (``/device``).

    Bad files raise ValueError with one line naming the file and the field.
    """
    path = Path(path)
    if path.suffix == ".mcap":
        from sim_core.io.log import read_log  # the session log format (bottom layer)
        log = read_log(path)
        out = []
        for i, (_, msg) in enumerate(log.messages("/device")):
            try:
                out.append(DeviceSample.from_dict(msg))
            except (KeyError, TypeError, ValueError) as e:
                raise ValueError(f"{path}: /device message {i}: {e}") from None
        return out
    try:
        with np.load(path) as z:
            t, p, q, v, w, b = (z[k] for k in ("t", "p", "q", "v", "w", "buttons"))
    except OSError as e:
        raise ValueError(f"{path}: cannot read ({e})") from None
    except KeyError as e:
        raise ValueError(f"{path}: missing array {e}") from None
    n = len(t)
    for k, a, m in (("p", p, 3), ("q", q, 4), ("v", v, 3), ("w", w, 3)):
        if a.shape != (n, m):
            raise ValueError(f"{path}: array {k} has shape {a.shape}, expected ({n}, {m})")
    if b.shape != (n,):
        raise ValueError(f"{path}: array buttons has shape {b.shape}, expected ({n},)")
    return [DeviceSample(t=float(t[i]), p=p[i], q=q[i], v=v[i], w=w[i], buttons=int(b[i]))
            for i in range(n)]


@register("replay", "replay:PATH (.npz or .mcap)")
def _open_replay(arg: str, **kw) -> ReplayDevice:
    return ReplayDevice(load_samples(arg), **kw)
