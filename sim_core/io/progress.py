"""A one-line progress bar on stderr, shared by the training and data commands (no extra
dependency for one line of text)."""
from __future__ import annotations

import sys
import time


class Progress:
    """``bar(k, note)``: redraws at most twice a second, and ends the line at the total."""

    def __init__(self, total: int, label: str, stream=sys.stderr, width: int = 30):
        self.total, self.label, self.stream, self.width = total, label, stream, width
        self.t0 = time.perf_counter()
        self.last = -1.0

    def __call__(self, k: int, note: str = "") -> None:
        now = time.perf_counter()
        if k < self.total and now - self.last < 0.5:
            return
        self.last = now
        f = k / self.total
        bar = "#" * int(f * self.width)
        eta = (now - self.t0) / max(f, 1e-9) * (1 - f)
        self.stream.write(f"\r{self.label} [{bar:<{self.width}}] {100 * f:5.1f} % "
                          f"{k}/{self.total}  eta {eta:4.0f} s  {note}   ")
        if k >= self.total:
            self.stream.write("\n")
        self.stream.flush()
