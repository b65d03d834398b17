"""A tiny PNG writer and reader for 8-bit RGB images (zlib only; no GL, no pyglet).

The writer emits one IHDR, one IDAT (filter type 0 on every row) and IEND, so the same
pixels always give the same bytes.  The reader accepts what the writer writes (8-bit RGB,
non-interlaced, any filter types are *not* supported) and checks every chunk's CRC; it
exists so tests can look at rendered files without an imaging library.
"""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(tag: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + tag + data
            + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))


def png_bytes(rgb: np.ndarray) -> bytes:
    """PNG encoding of an (H, W, 3) uint8 image (row 0 at the top)."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    if rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"png_bytes: expected an (H, W, 3) image, got shape {rgb.shape}")
    h, w, _ = rgb.shape
    raw = np.hstack([np.zeros((h, 1), np.uint8), rgb.reshape(h, w * 3)]).tobytes()
    return (SIGNATURE + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(raw, 6)) + _chunk(b"IEND", b""))


def write_png(path, rgb: np.ndarray) -> None:
    Path(path).write_bytes(png_bytes(rgb))


def read_png(path) -> np.ndarray:
    """(H, W, 3) uint8 of a PNG written by `write_png`; ValueError("<path>: ...") otherwise."""
    data = Path(path).read_bytes()

    def bad(msg):
        return ValueError(f"{path}: {msg}")

    if not data.startswith(SIGNATURE):
        raise bad("not a PNG file (bad signature)")
    i, idat, ihdr = len(SIGNATURE), b"", None
    while i + 12 <= len(data):
        n, tag = struct.unpack(">I", data[i:i + 4])[0], data[i + 4:i + 8]
        body = data[i + 8:i + 8 + n]
        (crc,) = struct.unpack(">I", data[i + 8 + n:i + 12 + n])
        if zlib.crc32(tag + body) & 0xFFFFFFFF != crc:
            raise bad(f"chunk {tag!r}: CRC mismatch")
        if tag == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif tag == b"IDAT":
            idat += body
        elif tag == b"IEND":
            break
        i += 12 + n
    if ihdr is None:
        raise bad("no IHDR chunk")
    w, h, depth, ctype, _, _, interlace = ihdr
    if (depth, ctype, interlace) != (8, 2, 0):
        raise bad(f"unsupported PNG (bit depth {depth}, colour type {ctype}, interlace {interlace})")
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + 3 * w)
    if np.any(rows[:, 0] != 0):
        raise bad("row filters other than 'none' are not supported")
    return rows[:, 1:].reshape(h, w, 3).copy()
