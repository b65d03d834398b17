"""The 100 Hz physics loop: follows the proxy pose, publishes contacts and snapshots, logs
what replay needs (run in-process here, for a fraction of a second of real time)."""
import threading

import numpy as np

from app.physics_loop import run
from app.replay import replay
from haptics.local_contact import PACKED_SIZE, LocalContact
from sim_core.io.log import LogWriter, read_log
from sim_core.io.records import PROXY, SNAPSHOT, TICK
from sim_core.io.shm import Ring, SeqSlot
from sim_core.scenarios import scenario


def test_physics_loop_follows_proxy_and_logs_for_replay(tmp_path):
    model, state, cfg = scenario.load("peg_in_hole")
    proxy, contact = SeqSlot(PROXY.size), SeqSlot(PACKED_SIZE)
    snap, ring = SeqSlot(SNAPSHOT.size), Ring(TICK.size, 1024)
    # the proxy sits 1 mm into the chamfer region of the hole, offset as in the scenario
    p = np.array([0.0006, 0.0, 0.0395])
    proxy.write(PROXY.pack(t=0.0, p=p, R=np.eye(3), V=np.zeros(6)))
    ring.push(TICK.pack(t=0.001, dev_q=[1, 0, 0, 0], R=np.eye(3)))
    log = LogWriter(tmp_path / "s.mcap")
    log.put("/config", 0.0, cfg)
    log.part_state(state)
    out = run(model, state, proxy, contact, snap, ring, log, threading.Event(), duration=0.3)
    log.close()
    assert out["steps"] == 30
    seq, v = snap.read()
    assert seq == 30 and SNAPSHOT.get(v, "steps")[0] == 30
    # the part moved toward the proxy and touches the hole's chamfer
    assert out["final"].p_w[0, 2] < state.p_w[0, 2]
    lc = LocalContact.from_array(contact.read()[1])
    assert len(lc) > 0 and np.allclose(np.linalg.norm(lc.n_w, axis=1), 1.0)
    log_r = read_log(tmp_path / "s.mcap")
    assert len(log_r.messages("/device")) == 1
    n, ep, ev = replay(log_r, verify=True)
    assert n == 30 and ep == 0.0 and ev == 0.0
    for s in (proxy, contact, snap, ring):
        s.close(unlink=True)
