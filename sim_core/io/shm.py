"""State that crosses processes: seqlock slots and a lossless-or-counted ring, in shared memory.

The haptic loop runs alone in its process (ARCHITECTURE sec. 3), so everything it exchanges
with the physics, render and logging side goes through ``multiprocessing.shared_memory``:

* ``SeqSlot``: one writer, any number of readers, latest value only.  The writer bumps a
  sequence counter to odd, writes the payload, bumps it to even; a reader copies the payload
  between two reads of the counter and retries unless both are the same even number, so a
  torn read can never be returned.  (x86-64 keeps stores in program order, and CPython
  executes these steps in order; on weakly ordered CPUs this would need fences.)
* ``Ring``: single-producer single-consumer ring of fixed-size float64 records for the
  logger.  ``push`` never blocks: when the ring is full the record is dropped and counted.
* ``RingWriter``: the loops' side of a ring, which loses nothing while memory lasts: a
  record that finds the ring full waits in the producer's own memory (a spill) and goes in,
  in order, as the logger makes room.  It never blocks either, so the 1 kHz loop never waits
  on the logger or the disk; only past its spill limit (minutes of records) does it drop,
  and then it counts what it dropped where the logger sees it (the ring's header), and every
  record carries its sequence number, so the logger knows which ones are missing.

Both are plain float64 arrays; the meaning of each field is the caller's ``Layout``.
"""
from __future__ import annotations

import time
from collections import deque
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
    """SPSC ring of `capacity` records of `width` float64 in shared memory.

    Header words: head (records published), tail (records taken), dropped (records the
    producer gave up on), offered (records the producer was given, sent or not), closed (the
    producer will push no more), and the time field of the last record offered."""

    _HEAD, _TAIL, _DROPPED, _OFFERED, _CLOSED, _LAST_T = range(6)

    def __init__(self, width: int, capacity: int, name: str | None = None, create: bool = True):
        nbytes = (_HDR + width * capacity) * 8
        self.shm = shared_memory.SharedMemory(name=name, create=create, size=nbytes if create else 0)
        self.width, self.capacity = width, capacity
        self._ctr = np.ndarray((6,), dtype=np.uint64, buffer=self.shm.buf, offset=0)
        self._last_t = np.ndarray((1,), dtype=np.float64, buffer=self.shm.buf, offset=8 * self._LAST_T)
        self._rec = np.ndarray((capacity, width), dtype=np.float64, buffer=self.shm.buf, offset=_HDR * 8)
        if create:
            self._ctr[:] = 0
            self._last_t[0] = float("nan")

    @property
    def name(self) -> str:
        return self.shm.name

    @property
    def dropped(self) -> int:
        return int(self._ctr[self._DROPPED])

    @property
    def offered(self) -> int:
        """Records the producer was given (pushed, spilled or dropped)."""
        return int(self._ctr[self._OFFERED])

    @property
    def last_t(self) -> float:
        """The time field (column 0) of the last record offered (NaN: none)."""
        return float(self._last_t[0])

    @property
    def closed(self) -> bool:
        """The producer has finished: everything it will ever push is in the ring."""
        return bool(self._ctr[self._CLOSED])

    def __len__(self) -> int:
        return int(self._ctr[self._HEAD]) - int(self._ctr[self._TAIL])

    def push(self, record: np.ndarray) -> bool:
        """Push one record, or drop and count it when the ring is full."""
        if self.try_push(record):
            return True
        self._ctr[self._DROPPED] += 1
        return False

    def try_push(self, record: np.ndarray) -> bool:
        """Push one record if there is room (nothing is counted if not)."""
        head = int(self._ctr[self._HEAD])
        if head - int(self._ctr[self._TAIL]) >= self.capacity:
            return False
        self._rec[head % self.capacity, : record.shape[0]] = record
        self._ctr[self._HEAD] = head + 1          # publish after the record is written
        return True

    def push_many(self, records: np.ndarray) -> int:
        """Push as many of `records` (n, <= width) as there is room for, in order; returns
        how many went in (the rest are the caller's: nothing is counted as dropped)."""
        head, tail = int(self._ctr[self._HEAD]), int(self._ctr[self._TAIL])
        n = min(len(records), self.capacity - (head - tail))
        if n <= 0:
            return 0
        w = records.shape[1]
        i = head % self.capacity
        first = min(n, self.capacity - i)              # up to the end of the buffer, then wrap
        self._rec[i:i + first, :w] = records[:first]
        if n > first:
            self._rec[:n - first, :w] = records[first:n]
        self._ctr[self._HEAD] = head + n                # publish after the records are written
        return n

    def drain(self, most: int | None = None) -> np.ndarray:
        """The records pushed since the last drain (at most `most`), oldest first, (n, width)."""
        head, tail = int(self._ctr[self._HEAD]), int(self._ctr[self._TAIL])
        n = head - tail if most is None else min(head - tail, most)
        if n <= 0:
            return np.empty((0, self.width))
        idx = np.arange(tail, tail + n) % self.capacity
        out = self._rec[idx].copy()
        self._ctr[self._TAIL] = tail + n
        return out

    def close(self, unlink: bool = False) -> None:
        del self._ctr, self._rec, self._last_t
        self.shm.close()
        if unlink:
            self.shm.unlink()


class RingWriter:
    """The producer's side of a ``Ring`` that loses no record while memory lasts.

    ``put`` never blocks: a record that finds the ring full is kept in this process's memory
    (a spill, in blocks of ``BLOCK`` records), and the spill goes into the ring first, in
    order, as the consumer makes room -- at most ``catch_up`` records a call, so a call costs
    a bounded copy.  Past ``spill_limit`` waiting records the new record is dropped and
    counted in the ring's header.  Every record is stamped with its sequence number (column
    ``seq_col``: 0, 1, 2, ... over every record offered), so the consumer finds any gap, and
    the header keeps how many were offered and the last one's time (column 0), so it also
    knows about records lost at the very end.  ``close`` hands the spill over (this may wait:
    call it once the loop is over) and tells the consumer that nothing more will come."""

    BLOCK = 4096

    def __init__(self, ring: Ring, seq_col: int, spill_limit: int, catch_up: int = 512):
        self.ring, self.seq_col, self.spill_limit, self.catch_up = ring, seq_col, spill_limit, catch_up
        self._blocks: deque = deque()
        self._first = 0                 # next record to send in the first block
        self._fill = self.BLOCK         # records in the last block (full: the next put starts a block)
        self.pending = 0                # records in the spill
        self.spilled = 0                # records that ever went through the spill
        self.most_pending = 0

    def put(self, record: np.ndarray) -> bool:
        """Offer one record (stamped with its sequence number); False only if it was dropped."""
        r = self.ring
        ctr = r._ctr
        seq = int(ctr[r._OFFERED])
        record[self.seq_col] = seq
        ctr[r._OFFERED] = seq + 1
        r._last_t[0] = record[0]
        if self.pending:
            self._send(self.catch_up)
        if not self.pending and r.try_push(record):
            return True
        if self.pending >= self.spill_limit:
            r._ctr[r._DROPPED] += 1
            return False
        if self._fill == self.BLOCK:
            self._blocks.append(np.empty((self.BLOCK, r.width)))
            self._fill = 0
        self._blocks[-1][self._fill, :record.shape[0]] = record
        self._fill += 1
        self.pending += 1
        self.spilled += 1
        self.most_pending = max(self.most_pending, self.pending)
        return True

    def _send(self, most: int) -> int:
        """Move up to `most` spilled records into the ring; how many went."""
        sent = 0
        while self.pending and sent < most:
            block = self._blocks[0]
            end = self._fill if len(self._blocks) == 1 else self.BLOCK
            n = self.ring.push_many(block[self._first:min(end, self._first + most - sent)])
            if n == 0:
                break
            sent += n
            self._first += n
            self.pending -= n
            if self._first == end:
                self._blocks.popleft()
                self._first = 0
                if not self._blocks:
                    self._fill = self.BLOCK
        return sent

    def close(self, patience_s: float = 10.0, clock=time.monotonic, sleep=time.sleep) -> int:
        """Hand the spill over, waiting for room (gives up after `patience_s` without any: the
        consumer is gone, and what is left is counted as dropped), then mark the ring closed.
        Returns the records dropped here."""
        last = clock()
        while self.pending:
            if self._send(self.ring.capacity):
                last = clock()
            elif clock() - last > patience_s:
                break
            else:
                sleep(0.002)
        lost = self.pending
        if lost:
            self.ring._ctr[self.ring._DROPPED] += lost
            self._blocks.clear()
            self.pending = 0
        self.ring._ctr[self.ring._CLOSED] = 1
        return lost


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
