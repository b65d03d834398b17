"""Shared-memory exchange: a reader in one process never sees a torn write from another."""
import multiprocessing as mp

import numpy as np

from sim_core.io.shm import Ring, SeqSlot, StopFlag

SIZE = 64
WRITES = 20000


def _writer(name, n):
    slot = SeqSlot(SIZE, name=name, create=False)
    for k in range(1, n + 1):
        slot.write(np.full(SIZE, float(k)))      # every field carries the same k
    slot.close()


def test_seqlock_never_torn_across_processes():
    slot = SeqSlot(SIZE)
    p = mp.get_context("spawn").Process(target=_writer, args=(slot.name, WRITES))
    p.start()
    seen, last = 0, 0
    buf = np.empty(SIZE)
    while p.is_alive() or last < WRITES:
        assert p.is_alive() or p.exitcode == 0, f"writer process failed ({p.exitcode})"
        seq, v = slot.read(buf)
        if seq == 0:
            continue
        assert np.all(v == v[0]), "torn read"     # a mix of two writes would differ
        assert v[0] >= last                       # never goes back in time
        assert seq == int(v[0])                   # sequence number counts writes
        last = int(v[0])
        seen += 1
        if not p.is_alive() and last == WRITES:
            break
    p.join()
    assert last == WRITES and seen > 0
    slot.close(unlink=True)


def _producer(name, n):
    ring = Ring(4, 256, name=name, create=False)
    k = 0
    while k < n:
        if ring.push(np.array([k, 2 * k, 3 * k, 4 * k], dtype=np.float64)):
            k += 1
    ring.close()


def test_ring_delivers_in_order_without_loss_when_drained():
    ring = Ring(4, 256)
    n = 5000
    p = mp.get_context("spawn").Process(target=_producer, args=(ring.name, n))
    p.start()
    got = []
    while p.is_alive() or sum(len(g) for g in got) < n:
        got.append(ring.drain())
        if not p.is_alive() and sum(len(g) for g in got) >= n:
            break
    p.join()
    recs = np.vstack([g for g in got if len(g)])
    assert np.array_equal(recs[:, 0], np.arange(n))
    assert np.array_equal(recs[:, 3], 4 * np.arange(n))
    ring.close(unlink=True)


def test_ring_full_drops_and_counts():
    ring = Ring(2, 4)
    ok = [ring.push(np.array([i, i], dtype=np.float64)) for i in range(6)]
    assert ok == [True] * 4 + [False] * 2 and ring.dropped == 2
    assert np.array_equal(ring.drain()[:, 0], [0, 1, 2, 3])
    ring.close(unlink=True)


def test_try_read_gives_up_instead_of_waiting_on_a_writer():
    slot = SeqSlot(4)
    slot.write(np.arange(4.0))
    out = np.zeros(4)
    assert slot.try_read(out) == 1 and np.array_equal(out, np.arange(4.0))
    slot._seq[0] += 1                      # a writer stopped mid-write (odd sequence)
    out[:] = -1.0
    assert slot.try_read(out) == -1 and np.all(out == -1.0)   # old value kept by the caller
    slot._seq[0] += 1
    slot.close(unlink=True)


def _set_later(flag, delay):
    import time
    time.sleep(delay)
    flag.set()


def test_stop_flag_set_in_one_process_is_seen_in_another():
    ctx = mp.get_context("spawn")
    flag = StopFlag(ctx)
    assert not flag.is_set()
    p = ctx.Process(target=_set_later, args=(flag, 0.05))
    p.start()
    p.join(timeout=30)
    assert p.exitcode == 0 and flag.is_set()
