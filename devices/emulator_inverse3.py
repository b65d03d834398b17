"""An Inverse3 emulator on a pseudo-terminal: the serial driver's test partner.

``Inverse3Emulator`` opens a pty pair (``os.openpty``), puts the slave in raw mode and answers
on the master side in a thread, speaking ``inverse3_protocol`` in either framing:
wake-up -> device info; every force command -> one end-effector state (position and velocity
of its handle trajectory at the time of the reply).  The driver opens ``emulator.port`` (the
slave's path) with pyserial like any serial device.

It records every force it receives, with the ``clock()`` time (default ``time.monotonic``, the
same clock a real-time test hands the driver) at which its thread read the bytes, and every
state it sends.  Failure injection:

* ``inject_garbage(n)``  write n seeded random bytes into the stream now;
* ``mode = "garbage"``   answer every command with random bytes instead of a frame;
* ``mode = "silent"``    stop answering (keeps reading and recording forces);
* ``hang_up()``          close the pty master: the driver's next read or write fails;
* ``state_override = (p, v)``  answer with this state in well-formed frames (a valid CRC in
  the checked framing): NaN, inf, 1e30 or a position past the arm's reach, as a broken
  device would send (``None``: the trajectory again).

``wait_until(pred, timeout)`` blocks (without spinning) until the emulator's thread has
processed input that makes ``pred(emulator)`` true.
"""
from __future__ import annotations

import math
import os
import select
import threading
import time
import tty
from collections.abc import Callable

import numpy as np

from devices import inverse3_protocol as proto

MODES = ("normal", "silent", "garbage")
DEFAULT_INFO = proto.DeviceInfo(0x049D, 1, 2, 3, "00112233445566778899aabbccddeeff")   # what a wake-up reports


def circle_trajectory(t: float) -> tuple[np.ndarray, np.ndarray]:
    """Default handle motion: a 2 cm circle at 0.5 Hz with a small vertical wobble (m, m/s)."""
    om = 2.0 * math.pi * 0.5
    p = np.array([0.02 * math.cos(om * t), 0.02 * math.sin(om * t), 0.005 * math.sin(2 * om * t)])
    v = np.array([-0.02 * om * math.sin(om * t), 0.02 * om * math.cos(om * t),
                  0.01 * om * math.cos(2 * om * t)])
    return p, v


class Inverse3Emulator:
    def __init__(self, trajectory: Callable[[float], tuple] = circle_trajectory, *,
                 framing: str = "haply",
                 info: proto.DeviceInfo = DEFAULT_INFO,
                 clock: Callable[[], float] = time.monotonic, seed: int = 0):
        if framing not in proto.FRAMINGS:
            raise ValueError(f"emulator: framing {framing!r}: expected one of {', '.join(proto.FRAMINGS)}")
        self.trajectory = trajectory
        self.framing = framing
        self.info = info
        self.clock = clock
        self.rng = np.random.default_rng(seed)
        self.mode = "normal"
        self.state_override: tuple | None = None   # (p, v) sent instead of the trajectory's
        self.decoder = proto.make_decoder(framing, proto.HOST_TO_DEVICE)
        self.forces: list[tuple[float, np.ndarray]] = []      # (t received, f float32 -> float64)
        self.states: list[tuple[float, np.ndarray, np.ndarray]] = []   # (t sent, p, v) as sent
        self.wakeups = 0
        self.replies = 0                        # answers written (frames or garbage)
        self.garbage_bytes = 0
        self.bytes_out = 0                      # everything written towards the driver
        self.bytes_in = 0                       # everything read from the driver
        self.hung_up = False
        self.t_hang_up: float | None = None
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._stop = False
        self._master = self._slave = -1
        self._wake_r = self._wake_w = -1
        self._thread: threading.Thread | None = None
        self._t0 = 0.0

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def port(self) -> str:
        return os.ttyname(self._slave)

    def start(self) -> Inverse3Emulator:
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)                 # no echo, no line discipline: bytes are bytes
        os.set_blocking(self._master, False)
        self._wake_r, self._wake_w = os.pipe()
        self._t0 = self.clock()
        self._thread = threading.Thread(target=self._run, name="inverse3-emulator", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop = True
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self._close_pty()
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- failure injection ---------------------------------------------------------------------
    def inject_garbage(self, n: int) -> bytes:
        """Write ``n`` random bytes into the device -> host stream now; returns them."""
        with self._cond:                        # the thread uses the same generator
            junk = self.rng.integers(0, 256, n, dtype=np.uint8).tobytes()
            self.garbage_bytes += n
        self._write(junk)
        return junk

    def hang_up(self) -> None:
        """Close the pty (as if the USB cable were pulled); waits for the thread to do it."""
        with self._cond:
            self.hung_up = True
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    # -- queries -------------------------------------------------------------------------------
    def wait_until(self, pred: Callable[[Inverse3Emulator], bool], timeout: float = 1.0) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: pred(self), timeout)

    def counts(self) -> tuple[int, int]:
        """(force commands received, replies written), taken under the thread's lock: a frame
        being handled is counted whole or not at all.  Read without it, the reply to the last
        command can already be at the driver (``_write``) while ``replies`` still lacks it --
        a wait for the next reply then ends on that one (the rare ``[haply]`` flake of the
        clamped-force test: the previous command's zero force read as the emulator's last)."""
        with self._cond:
            return len(self.forces), self.replies

    def last_force(self) -> tuple[float, np.ndarray] | None:
        with self._cond:
            return self.forces[-1] if self.forces else None

    # -- the thread ----------------------------------------------------------------------------
    def _wake(self) -> None:
        if self._wake_w >= 0:
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass

    def _close_pty(self) -> None:
        for fd in (self._master, self._slave):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._master = self._slave = -1

    def _write(self, data: bytes) -> None:
        with self._write_lock:
            if self._master < 0:
                return
            try:
                self.bytes_out += os.write(self._master, data)
            except (BlockingIOError, OSError):
                pass                            # nobody reading: the reply is lost, as on a wire

    def _run(self) -> None:
        while not self._stop:
            if self.hung_up:
                with self._write_lock:
                    self._close_pty()
                with self._cond:
                    self.t_hang_up = self.clock()
                    self._cond.notify_all()
                return
            r, _, _ = select.select([self._master, self._wake_r], [], [], 0.1)
            if self._wake_r in r:
                os.read(self._wake_r, 64)
            if self._master not in r:
                continue
            try:
                data = os.read(self._master, 4096)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:                     # slave side gone for good
                return
            t = self.clock()
            with self._cond:
                self.bytes_in += len(data)
                for fr in self.decoder.feed(data):
                    self._handle(fr, t)
                self._cond.notify_all()

    def _handle(self, fr: proto.Frame, t: float) -> None:
        if fr.code == proto.EE_FORCE:
            self.forces.append((t, np.array(proto.FORCE_FMT.unpack(fr.payload), dtype=np.float64)))
            reply = self._state_frame(t)
        elif fr.code == proto.WAKEUP:
            self.wakeups += 1
            reply = proto.encode(self.framing, proto.DEVICE_INFO, self.info.pack())
        else:
            return
        if self.mode == "silent":
            return
        if self.mode == "garbage":
            reply = self.rng.integers(0, 256, len(reply), dtype=np.uint8).tobytes()
            self.garbage_bytes += len(reply)
        self._write(reply)
        self.replies += 1

    def _state_frame(self, t: float) -> bytes:
        p, v = self.trajectory(t - self._t0) if self.state_override is None else self.state_override
        payload = proto.STATE_FMT.pack(*p, *v)
        x = np.array(proto.STATE_FMT.unpack(payload), dtype=np.float64)   # what the wire carries
        if self.mode == "normal":
            self.states.append((t, x[:3], x[3:]))
        return proto.encode(self.framing, proto.EE_STATE, payload)


def lockstep_tick(driver, emulator: Inverse3Emulator, now: float, wrench,
                  expect_reply: bool = True, timeout: float = 1.0):
    """One haptic tick in fake time against the emulator, without races.

    Sends ``wrench``, waits (real time, bounded) until the emulator has answered and every
    byte it wrote has reached the driver's port, then returns ``driver.read(now)``.  With
    ``expect_reply=False`` (a silent emulator) it only waits for the command to be received.
    """
    n_forces, n_replies = emulator.counts()
    driver.write_force(wrench)
    if expect_reply:
        ok = emulator.wait_until(lambda e: e.replies > n_replies, timeout)
    else:
        ok = emulator.wait_until(lambda e: len(e.forces) > n_forces, timeout)
    if not ok:
        raise TimeoutError("emulator did not process the force command")
    t_end = time.monotonic() + timeout
    while driver.in_waiting < emulator.bytes_out - driver.bytes_in:
        if time.monotonic() > t_end:
            raise TimeoutError("emulator bytes did not reach the driver")
        time.sleep(20e-6)
    return driver.read(now)
