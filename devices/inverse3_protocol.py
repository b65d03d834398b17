"""Haply Inverse3 serial protocol: command codes, payloads and the two framings we speak.

What is from a published source, and what is not
-----------------------------------------------
Published (Haply Robotics' C++ HardwareAPI headers, ``Inverse3.h`` and ``Device.h``,
(c) 2022, as shipped with the HardwareAPI SDK; facts only, no code copied):

* the command ("header") codes: device wake-up ``0x0A``, end-effector force ``0x2A``,
  end-effector state ``0x2B`` (also joint torques 0x1A, joint states 0x1B, joint angles 0x1C,
  end-effector position 0x2C -- not used here);
* the payloads: a force request is 3 float32 (N); the end-effector state response is
  position 3 float32 (m) then velocity 3 float32 (m/s); the wake-up response
  ("DeviceInfoResponse") carries device_id uint16, device_model_number uint8,
  hardware_version uint8, firmware_version uint8 and a 16-byte UUID;
* the exchange: ``EndEffectorForce(request) -> EndEffectorStateResponse`` -- one state reply
  per force command (Haply's service docs add: to read the position you must send a force,
  even a zero one);
* the framing *shape*: ``Device::SendCommand(header_code, const float* data, float_count)``,
  ``ReadHeaderCode()`` and ``ReadBytes(n)`` -- one code byte followed by the raw payload.

Not published (our assumptions, to be checked against a real device):

* that floats and integers are little-endian (the native order of the host and the
  device's MCU -- the headers ``memcpy`` floats);
* that the wake-up reply is headed by ``0x0A`` (the headers do not say which code heads it);
* that the byte stream has nothing else in it (no length, no checksum) -- this is the
  ``"haply"`` framing below.  With no checksum it cannot detect corruption, so its decoder
  resynchronises only by plausibility (known code, finite values within physical bounds, and
  the driver's continuity check) -- good enough to recover from a burst of noise, not a
  guarantee;
* the ``"checked"`` framing is entirely ours, for links we control (the emulator, a bridge
  firmware): ``0xA5 | code | n | payload (n bytes) | CRC-16/CCITT-FALSE (LE)``, the CRC
  (poly 0x1021, init 0xFFFF, ``binascii.crc_hqx``) over code, n and payload.  A frame is
  accepted only if the code is known, n matches the code's payload size and the CRC matches;
  otherwise the start byte is dropped and the search resumes at the next 0xA5.

Both decoders keep partial frames across ``feed`` calls, so it does not matter how the
serial driver chunks the bytes.
"""
from __future__ import annotations

import binascii
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass

# -- codes (published) and payloads ---------------------------------------------------------
WAKEUP = 0x0A            # host -> device, no payload
DEVICE_INFO = 0x0A       # device -> host, reply to WAKEUP (code assumed, see above)
EE_FORCE = 0x2A          # host -> device, force request
EE_STATE = 0x2B          # device -> host, end-effector state

DEVICE_INFO_FMT = struct.Struct("<HBBB16s")   # device_id, model, hw, fw, uuid  (21 bytes)
FORCE_FMT = struct.Struct("<3f")              # f (N), device frame               (12 bytes)
STATE_FMT = struct.Struct("<6f")              # p (m), v (m/s), device frame      (24 bytes)

HOST_TO_DEVICE = {WAKEUP: 0, EE_FORCE: FORCE_FMT.size}
DEVICE_TO_HOST = {DEVICE_INFO: DEVICE_INFO_FMT.size, EE_STATE: STATE_FMT.size}

FRAMINGS = ("haply", "checked")
START = 0xA5
CHECKED_OVERHEAD = 5                           # start, code, n, crc (2)
MAX_BUFFER = 4096                              # bytes kept while hunting for a frame

# Plausibility bounds for the unchecked ("haply") framing: a state whose numbers fall outside
# them cannot come from the arm (its reach is well under 1 m, hand speeds under a few m/s),
# and random bytes read as float32 fall outside them most of the time.
PLAUSIBLE_POSITION_M = 1.0
PLAUSIBLE_SPEED_M_S = 20.0
PLAUSIBLE_FORCE_N = 1000.0


@dataclass(frozen=True)
class Frame:
    code: int
    payload: bytes


@dataclass(frozen=True)
class DeviceInfo:
    device_id: int
    model: int
    hardware_version: int
    firmware_version: int
    uuid: str                                   # 32 hex digits

    @staticmethod
    def unpack(payload: bytes) -> DeviceInfo:
        i, m, h, f, u = DEVICE_INFO_FMT.unpack(payload)
        return DeviceInfo(i, m, h, f, u.hex())

    def pack(self) -> bytes:
        return DEVICE_INFO_FMT.pack(self.device_id, self.model, self.hardware_version,
                                    self.firmware_version, bytes.fromhex(self.uuid))


def plausible(code: int, payload: bytes) -> bool:
    """Static plausibility of a frame's numbers (used by the unchecked framing)."""
    if code == EE_STATE:
        x = STATE_FMT.unpack(payload)
        return (all(math.isfinite(a) and abs(a) <= PLAUSIBLE_POSITION_M for a in x[:3])
                and all(math.isfinite(a) and abs(a) <= PLAUSIBLE_SPEED_M_S for a in x[3:]))
    if code == EE_FORCE:
        return all(math.isfinite(a) and abs(a) <= PLAUSIBLE_FORCE_N for a in FORCE_FMT.unpack(payload))
    return True


def encode(framing: str, code: int, payload: bytes = b"") -> bytes:
    if framing == "haply":
        return bytes((code,)) + payload
    if framing == "checked":
        body = bytes((code, len(payload))) + payload
        return bytes((START,)) + body + binascii.crc_hqx(body, 0xFFFF).to_bytes(2, "little")
    raise ValueError(f"framing {framing!r}: expected one of {', '.join(FRAMINGS)}")


class Decoder:
    """Pulls frames out of a byte stream; counts what it had to throw away."""

    def __init__(self, table: dict[int, int], validate: Callable[[int, bytes], bool] | None = None):
        self.table = table                      # code -> payload size, for this direction
        self.validate = validate
        self.buf = bytearray()
        self.frames = 0
        self.dropped_bytes = 0                  # bytes skipped while resynchronising
        self.rejected = 0                       # candidate frames refused (CRC or plausibility)

    def _drop(self, n: int) -> None:
        del self.buf[:n]
        self.dropped_bytes += n

    def feed(self, data: bytes) -> list[Frame]:
        self.buf += data
        out: list[Frame] = []
        while self.buf:
            fr = self._next()
            if fr is None:
                break
            if fr is not _SKIP:
                out.append(fr)
                self.frames += 1
        if len(self.buf) > MAX_BUFFER:
            self._drop(len(self.buf) - MAX_BUFFER)
        return out

    def _next(self):                            # -> Frame, _SKIP (progress made) or None (wait)
        raise NotImplementedError


_SKIP = Frame(-1, b"")


class RawDecoder(Decoder):
    """``"haply"`` framing: code byte + fixed-size payload; resync by plausibility."""

    def _next(self):
        code = self.buf[0]
        n = self.table.get(code)
        if n is None:
            self._drop(1)
            return _SKIP
        if len(self.buf) < 1 + n:
            return None
        payload = bytes(self.buf[1:1 + n])
        ok = plausible(code, payload) and (self.validate is None or self.validate(code, payload))
        if not ok:
            self.rejected += 1
            self._drop(1)
            return _SKIP
        del self.buf[:1 + n]
        return Frame(code, payload)


class CheckedDecoder(Decoder):
    """``"checked"`` framing: start byte, code, length, payload, CRC-16."""

    def _next(self):
        i = self.buf.find(START)
        if i < 0:
            self._drop(len(self.buf))
            return None
        if i > 0:
            self._drop(i)
        if len(self.buf) < 3:
            return None
        code, n = self.buf[1], self.buf[2]
        if self.table.get(code) != n:
            self._drop(1)
            return _SKIP
        if len(self.buf) < CHECKED_OVERHEAD + n:
            return None
        body = bytes(self.buf[1:3 + n])
        crc = int.from_bytes(self.buf[3 + n:5 + n], "little")
        if binascii.crc_hqx(body, 0xFFFF) != crc or (
                self.validate is not None and not self.validate(code, body[2:])):
            self.rejected += 1
            self._drop(1)
            return _SKIP
        del self.buf[:CHECKED_OVERHEAD + n]
        return Frame(code, body[2:])


def make_decoder(framing: str, table: dict[int, int],
                 validate: Callable[[int, bytes], bool] | None = None) -> Decoder:
    if framing == "haply":
        return RawDecoder(table, validate)
    if framing == "checked":
        return CheckedDecoder(table, validate)
    raise ValueError(f"framing {framing!r}: expected one of {', '.join(FRAMINGS)}")
