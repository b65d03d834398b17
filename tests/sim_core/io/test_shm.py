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


def test_a_ring_writer_spills_instead_of_dropping_and_keeps_the_order():
    """The ring fills (the consumer is away); the writer keeps every record in its own
    memory, never blocks, and the consumer later gets all of them, numbered, in order."""
    from sim_core.io.shm import RingWriter
    ring = Ring(3, 8)
    w = RingWriter(ring, seq_col=2, spill_limit=10_000, catch_up=4)
    got = []
    for k in range(5000):
        assert w.put(np.array([k * 1e-3, 7.0, -1.0]))
        if k % 1000 == 999:                     # the consumer comes by now and then
            got.append(ring.drain())
    assert w.spilled > 4000 and w.most_pending > 0 and ring.dropped == 0
    assert w.close(patience_s=0.5, sleep=lambda _: got.append(ring.drain())) == 0
    got.append(ring.drain())
    recs = np.vstack(got)
    assert ring.closed and ring.offered == 5000 and ring.last_t == 4.999
    assert np.array_equal(recs[:, 2], np.arange(5000))                # numbered in order, none lost
    assert np.array_equal(recs[:, 0], np.arange(5000) * 1e-3) and np.all(recs[:, 1] == 7.0)
    ring.close(unlink=True)


def test_a_ring_writer_past_its_spill_limit_drops_and_counts_and_the_gap_shows():
    from sim_core.io.shm import RingWriter
    ring = Ring(2, 4)
    w = RingWriter(ring, seq_col=1, spill_limit=6)
    ok = [w.put(np.array([float(k), 0.0])) for k in range(15)]
    assert ok == [True] * 10 + [False] * 5 and ring.dropped == 5 and ring.offered == 15
    got = [ring.drain()]
    assert w.close(patience_s=0.5, sleep=lambda _: got.append(ring.drain())) == 0   # as room is made
    got.append(ring.drain())
    seq = np.concatenate([g[:, 1] for g in got])
    assert np.array_equal(seq, np.arange(10))        # 10..14 never reached the ring: the
    assert ring.last_t == 14.0                       # offered count and last time say so
    ring.close(unlink=True)


def test_a_ring_writer_whose_consumer_is_gone_gives_up_counting_what_was_left():
    from sim_core.io.shm import RingWriter
    ring = Ring(2, 4)
    w = RingWriter(ring, seq_col=1, spill_limit=100)
    for k in range(10):
        w.put(np.array([float(k), 0.0]))
    clock = iter(np.arange(0.0, 100.0, 1.0))
    assert w.close(patience_s=3.0, clock=lambda: next(clock), sleep=lambda _: None) == 6
    assert ring.dropped == 6 and ring.closed
    ring.close(unlink=True)
