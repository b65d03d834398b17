"""Serial driver (pyserial) for the Haply Inverse3, a 3-DOF force-feedback arm.

Protocol and framing: see ``inverse3_protocol`` (codes and payloads from Haply's published
HardwareAPI headers; the ``"haply"`` framing -- code byte + little-endian float32 payload --
inferred from them; the CRC-checked ``"checked"`` framing is ours).

The exchange is request/response, pipelined by one tick:

    open():  wake-up (0x0A) -> device info;  zero force (0x2A) -> first state (0x2B)
    tick k:  read(now_k)   consumes the state answering tick k-1's force command
             write_force() sends tick k's force command (answered before tick k+1)

``read`` never blocks: it takes whatever bytes have arrived (``timeout=0``), decodes every
complete frame and keeps the newest state.  The handle position is reported relative to
``p_offset`` (the workspace centre in the arm's own frame); orientation is identity (the
Inverse3 alone has no orientation sensing: ``dof_in = 3``), ``w = 0``.

Watchdog: once a force command is sent, a valid state frame must arrive within
``silence_timeout`` (default 2 ms, two haptic periods) measured on the ``now`` passed to
``read`` -- counted from the ``now`` of the tick that sent the first unanswered command.  Bytes
that arrive late but before the check are used first, so a stall of the *host* loop does not
read as a silent device (the haptic watchdog in ``haptics/`` covers host stalls).

Faults -- a serial exception (disconnect), a device that stops reading, silence, a state
frame whose numbers cannot be the handle's (non-finite, past ``Capability.max_reach`` from the
workspace centre or ``max_speed``: ``base.sample_problem``; in the checked framing such a frame
passes its CRC) -- raise ``DeviceFault`` with one line naming the device (and the field).
The driver's last act before raising is to send a zero-force frame if the port is still
writable; the message says whether it could.  The fault is sticky:
every later ``read``/``write_force`` raises it again (after another zero-force attempt).
``close`` sends zero force when it can and never raises.
"""
from __future__ import annotations

import math
import select
import time
from collections.abc import Callable

import numpy as np
import serial

from devices import inverse3_protocol as proto
from devices.base import IDENTITY_Q, Capability, Device, DeviceFault, DeviceSample, register, sample_problem

INVERSE3_CAPABILITY = Capability(
    # Conservative defaults, NOT vendor figures: a desktop 3-DOF arm renders a few newtons
    # continuously and ~1-2 kN/m stably.  Override with the values of your unit.
    name="inverse3", dof_in=3, dof_out=3, max_force=3.0, max_torque=0.0, max_stiffness=1500.0,
    max_damping=5.0, workspace_radius=0.1, rate_hz=1000.0)

DEFAULT_SILENCE_TIMEOUT_S = 2e-3
DEFAULT_HANDSHAKE_TIMEOUT_S = 1.0
# A state more than this away from the previous one is refused by the unchecked framing's
# decoder (at 1 kHz it is a hand speed of 50 m/s): a misaligned frame, not the arm.  (After a
# host stall long enough for the hand to move this far, states are refused and the silence
# watchdog faults -- safe, and such a stall is a haptic-loop fault anyway.)
MAX_JUMP_M = 0.05
# Ports without a selectable fd: if this many bytes we wrote are still queued, the device has
# stopped reading (each force frame is 13-17 bytes; this is ~60 ms of them).
MAX_OUT_QUEUE_BYTES = 1024
READ_CHUNK = 4096


def _one_line(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return (s[0] if s else type(e).__name__)[:160]


class Inverse3Serial(Device):
    """``Inverse3Serial("/dev/ttyACM0")``; see the module docstring for the protocol."""

    def __init__(self, port: str, *, framing: str = "haply", baudrate: int = 115200,
                 silence_timeout: float = DEFAULT_SILENCE_TIMEOUT_S,
                 handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT_S,
                 p_offset=(0.0, 0.0, 0.0), capability: Capability = INVERSE3_CAPABILITY,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep,
                 serial_factory: Callable[..., serial.Serial] = serial.Serial):
        super().__init__(capability)
        if framing not in proto.FRAMINGS:
            raise ValueError(f"inverse3: framing {framing!r}: expected one of {', '.join(proto.FRAMINGS)}")
        self.port = port
        self.framing = framing
        self.baudrate = baudrate
        self.silence_timeout = silence_timeout
        self.handshake_timeout = handshake_timeout
        self.p_offset = np.array(p_offset, dtype=np.float64)
        self._clock, self._sleep, self._factory = clock, sleep, serial_factory
        self._ser: serial.Serial | None = None
        self.bytes_in = 0                       # everything read from the port, ever
        self.bytes_out = 0                      # everything written to the port, ever
        self._reset_link()

    def _reset_link(self) -> None:
        """Fresh protocol state (each ``open`` starts a new link)."""
        # the checked framing has a CRC; the unchecked one also needs the continuity test
        self._decoder = proto.make_decoder(self.framing, proto.DEVICE_TO_HOST,
                                           self._continuous if self.framing == "haply" else None)
        self.info: proto.DeviceInfo | None = None
        self._p = np.zeros(3)                   # raw state, arm frame
        self._v = np.zeros(3)
        self._have_state = False
        self._outstanding = False               # a command is waiting for its state reply
        self._wait_since: float | None = None   # now of the tick that sent it
        self._last_now: float | None = None
        self.fault: str | None = None           # the sticky fault message
        self.fault_time: float | None = None    # the now at which it was declared
        self.states_received = 0
        self.commands_sent = 0
        self._dropped_mark = 0                  # decoder.dropped_bytes at the last valid state

    # -- diagnostics -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return f"inverse3 at {self.port}"

    @property
    def decoder(self) -> proto.Decoder:
        return self._decoder

    @property
    def in_waiting(self) -> int:
        """Bytes received and not yet read (0 when closed)."""
        try:
            return self._ser.in_waiting if self._ser is not None else 0
        except (serial.SerialException, OSError):
            return 0

    # -- lifecycle ---------------------------------------------------------------------------
    def open(self) -> None:
        if self.is_open:
            return
        self._reset_link()
        try:
            self._ser = self._factory(self.port, baudrate=self.baudrate, timeout=0, write_timeout=0)
            self._ser.reset_input_buffer()
        except (serial.SerialException, OSError, ValueError) as e:
            self._ser = None
            raise DeviceFault(f"{self.name}: cannot open ({_one_line(e)})") from None
        self.is_open = True
        try:
            self._send(proto.encode(self.framing, proto.WAKEUP), now=None)
            self._await(lambda: self.info is not None, "no answer to the wake-up command")
            # from now on only states are expected: a stray "device info" code byte in noise
            # must not swallow the bytes of a real state frame (unchecked framing)
            self._decoder.table = {proto.EE_STATE: proto.STATE_FMT.size}
            self._send_force(np.zeros(3), now=None)
            self._await(lambda: self._have_state, "no state in answer to a zero-force command")
        except DeviceFault:
            self._close_port()
            raise
        self._outstanding, self._wait_since = False, None

    def _await(self, done: Callable[[], bool], what: str) -> None:
        """Handshake wait (``open`` only): poll until ``done`` or ``handshake_timeout``."""
        t_end = self._clock() + self.handshake_timeout
        while True:
            self._receive(now=None)
            if done():
                return
            if self._clock() > t_end:
                self._fail(f"{what} within {self.handshake_timeout:g} s "
                           f"(framing {self.framing!r}; is this an Inverse3?)", now=None)
            self._sleep(2e-4)

    def close(self) -> None:
        if self._ser is not None:
            self._try_zero()
        self._close_port()
        self._last_wrench = np.zeros(6)

    def _close_port(self) -> None:
        if self._ser is not None:
            try:
                self._ser.close()
            except (serial.SerialException, OSError):
                pass
        self._ser = None
        self.is_open = False

    # -- the tick ----------------------------------------------------------------------------
    def read(self, now: float) -> DeviceSample:
        self._check_usable()
        got = self._receive(now)
        if got:
            self._outstanding, self._wait_since = False, None
            self._dropped_mark = self._decoder.dropped_bytes
        elif self._outstanding:
            if self._wait_since is None:
                self._wait_since = now if self._last_now is None else self._last_now
            silent = now - self._wait_since
            if silent > self.silence_timeout:
                self._last_now = now
                junk = self._decoder.dropped_bytes - self._dropped_mark
                self._fail(f"silent: no valid state frame for {silent * 1e3:.2f} ms "
                           f"(timeout {self.silence_timeout * 1e3:g} ms"
                           + (f"; {junk} bytes of garbage skipped)" if junk else ")"), now)
        self._last_now = now
        return DeviceSample(t=now, p=self._p - self.p_offset, q=IDENTITY_Q.copy(),
                            v=self._v.copy(), w=np.zeros(3), buttons=0)

    def _apply_force(self, wrench: np.ndarray) -> None:
        self._check_usable()
        self._send_force(wrench[:3], now=self._last_now)

    # -- internals ---------------------------------------------------------------------------
    def _check_usable(self) -> None:
        if self.fault is not None:
            self._try_zero()
            raise DeviceFault(self.fault)
        self._require_open()

    def _continuous(self, code: int, payload: bytes) -> bool:
        """Decoder hook: refuse a state that jumps implausibly far from the last one."""
        if code != proto.EE_STATE or not self._have_state:
            return True
        x = proto.STATE_FMT.unpack(payload)
        return math.dist(x[:3], self._p) <= MAX_JUMP_M

    def _receive(self, now: float | None) -> bool:
        """Read what has arrived, decode it; True if a new state came in."""
        try:
            data = self._ser.read(READ_CHUNK)
        except (serial.SerialException, OSError) as e:
            self._fail(f"disconnected (read: {_one_line(e)})", now)
        self.bytes_in += len(data)
        got = False
        for fr in self._decoder.feed(data):
            if fr.code == proto.EE_STATE:
                x = proto.STATE_FMT.unpack(fr.payload)
                p, v = np.array(x[:3], dtype=np.float64), np.array(x[3:], dtype=np.float64)
                # a frame that passed its CRC but holds NaN, 1e30 or a position past the arm's
                # reach comes from a broken device: refused here, before any of it is used
                bad = sample_problem(DeviceSample(t=0.0, p=p - self.p_offset, q=IDENTITY_Q, v=v, w=np.zeros(3)),
                                     self.capability)
                if bad:
                    self._fail(f"state frame refused: {bad}", now)
                self._p, self._v = p, v
                self._have_state = got = True
                self.states_received += 1
            elif fr.code == proto.DEVICE_INFO and len(fr.payload) == proto.DEVICE_INFO_FMT.size:
                self.info = proto.DeviceInfo.unpack(fr.payload)
        return got

    def _send_force(self, f: np.ndarray, now: float | None) -> None:
        self._send(proto.encode(self.framing, proto.EE_FORCE, proto.FORCE_FMT.pack(*f)), now)
        self.commands_sent += 1
        if not self._outstanding:
            self._outstanding, self._wait_since = True, now

    def _writable(self) -> bool:
        """Room in the output buffer now?  pyserial's non-blocking write busy-loops forever on
        EAGAIN (a full buffer), so we never write to a port that select() says is full."""
        fd = getattr(self._ser, "fd", None)
        if fd is None:
            return self._ser.out_waiting <= MAX_OUT_QUEUE_BYTES
        return bool(select.select([], [fd], [], 0)[1])

    def _send(self, frame: bytes, now: float | None) -> None:
        try:
            if not self._writable():
                self._fail("device stopped reading (output buffer full)", now)
            n = self._ser.write(frame)
            self.bytes_out += n or 0
        except (serial.SerialException, OSError) as e:
            self._fail(f"disconnected (write: {_one_line(e)})", now)
        if n != len(frame):
            self._fail(f"write incomplete ({n} of {len(frame)} bytes)", now)

    def _try_zero(self) -> bool:
        """Best effort zero-force frame; True if the whole frame went out."""
        if self._ser is None:
            return False
        frame = proto.encode(self.framing, proto.EE_FORCE, proto.FORCE_FMT.pack(0.0, 0.0, 0.0))
        try:                                    # no flush(): tcdrain blocks on a stuck device
            if not self._writable():
                return False
            n = self._ser.write(frame) or 0
            self.bytes_out += n
            return n == len(frame)
        except (serial.SerialException, OSError, ValueError):
            return False

    def _fail(self, what: str, now: float | None):
        """Declare a fault: zero force if possible, then raise (sticky)."""
        zero = self._try_zero()
        self.fault = (f"{self.name}: {what}; "
                      + ("zero force sent" if zero else "zero force not sent (port not writable)"))
        self.fault_time = now
        self._last_wrench = np.zeros(6)
        raise DeviceFault(self.fault)


@register("serial", "serial:PORT")
def _open_serial(arg: str, **kw) -> Inverse3Serial:
    return Inverse3Serial(arg, **kw)
