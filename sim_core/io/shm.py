"""State that crosses processes: seqlock slots and a lossless-or-counted ring, in shared memory.

The haptic loop runs alone in its process (ARCHITECTURE sec. 3), so everything it exchanges
with the physics, render and logging side goes through ``multiprocessing.shared_memory``:

* ``SeqSlot``: one writer, any number of readers, latest value only.  The writer bumps a
  sequence counter to odd, writes the payload, bumps it to even; a reader copies the payload
  between two reads of the counter and retries unless both are the same even number, so a
  torn read can never be returned.  (x86-64 keeps stores in program order, and CPython
  executes these steps in order; on weakly ordered CPUs this would need fences.)
* ``Ring``: single-producer single-consumer ring of fixed-size float64 records for the
  logger.  The producer never blocks: when the ring is full the record is dropped and
  counted, so the 1 kHz loop never waits on the disk.

Both are plain float64 arrays; the meaning of each field is the caller's ``Layout``.
"""
from __future__ import annotations

from multiprocessing import shared_memory

import numpy as np

_HDR = 8  # float64/uint64 words of header


class SeqSlot:
    """A seqlock-protected float64[size] in shared memory."""

    def __init__(self, size: int, name: str | None = None, create: bool = True):
        nbytes = (_HDR + size) * 8
        self.shm = shared_memory.SharedMemory(name=name, create=create, size=nbytes if create else 0)
        self.size = size
        self._seq = np.ndarray((1,), dtype=np.uint64, buffer=self.shm.buf, offset=0)
        self._data = np.ndarray((size,), dtype=np.float64, buffer=self.shm.buf, offset=_HDR * 8)
        if create:
            self._seq[0] = 0
            self._data[:] = 0.0

    @property
    def name(self) -> str:
        return self.shm.name

    def write(self, values: np.ndarray) -> None:
        s = int(self._seq[0])
        self._seq[0] = s + 1            # odd: writing
        self._data[: values.shape[0]] = values
        self._seq[0] = s + 2            # even: consistent

    def read(self, out: np.ndarray | None = None, max_tries: int = 100000) -> tuple[int, np.ndarray]:
        """(sequence number, copy of the payload); sequence 0 means never written.  Retries
        while the writer is mid-write (for readers that may wait: not the haptic loop)."""
        buf = np.empty(self.size) if out is None else out
        for _ in range(max_tries):
            seq = self.try_read(buf, tries=1)
            if seq >= 0:
                return seq, buf
        raise TimeoutError("SeqSlot: writer never finished a write")

    def try_read(self, out: np.ndarray, tries: int = 4) -> int:
        """Non-blocking read for a real-time reader: copy into `out` and return the sequence
        number, or return -1 if the writer was mid-write on every try (keep the old value;
        a high-priority loop must never wait on a lower-priority writer)."""
        for _ in range(tries):
            s1 = int(self._seq[0])
            if s1 & 1:
                continue
            out[:] = self._data
            if int(self._seq[0]) == s1:
                return s1 // 2
        return -1

    def close(self, unlink: bool = False) -> None:
        del self._seq, self._data
        self.shm.close()
        if unlink:
            self.shm.unlink()


class Ring:
    """SPSC ring of `capacity` records of `width` float64 in shared memory."""

    def __init__(self, width: int, capacity: int, name: str | None = None, create: bool = True):
        nbytes = (_HDR + width * capacity) * 8
        self.shm = shared_memory.SharedMemory(name=name, create=create, size=nbytes if create else 0)
        self.width, self.capacity = width, capacity
        self._ctr = np.ndarray((3,), dtype=np.uint64, buffer=self.shm.buf, offset=0)  # head, tail, dropped
        self._rec = np.ndarray((capacity, width), dtype=np.float64, buffer=self.shm.buf, offset=_HDR * 8)
        if create:
            self._ctr[:] = 0

    @property
    def name(self) -> str:
        return self.shm.name

    @property
    def dropped(self) -> int:
        return int(self._ctr[2])

    def push(self, record: np.ndarray) -> bool:
        head, tail = int(self._ctr[0]), int(self._ctr[1])
        if head - tail >= self.capacity:
            self._ctr[2] += 1
            return False
        self._rec[head % self.capacity, : record.shape[0]] = record
        self._ctr[0] = head + 1          # publish after the record is written
        return True

    def drain(self) -> np.ndarray:
        """All records pushed since the last drain, oldest first, (n, width)."""
        head, tail = int(self._ctr[0]), int(self._ctr[1])
        n = head - tail
        if n <= 0:
            return np.empty((0, self.width))
        idx = np.arange(tail, head) % self.capacity
        out = self._rec[idx].copy()
        self._ctr[1] = head
        return out

    def close(self, unlink: bool = False) -> None:
        del self._ctr, self._rec
        self.shm.close()
        if unlink:
            self.shm.unlink()


class StopFlag:
    """A one-way stop flag shared by processes, read without any lock.

    ``multiprocessing.Event.is_set()`` acquires a process-shared lock; a low-priority
    holder (the render loop, the logger) preempted while holding it stalls whoever polls
    next -- measured: the 1 kHz loop missed its deadline by up to 5.9 ms a few times a
    minute.  A single shared byte written once (0 -> 1) cannot tear, so no lock is needed.
    Pass it to a spawned process as an argument (it pickles the shared value's handle)."""

    def __init__(self, ctx) -> None:
        self._v = ctx.RawValue("b", 0)

    def set(self) -> None:
        self._v.value = 1

    def is_set(self) -> bool:
        return self._v.value != 0
