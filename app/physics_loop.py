"""The 100 Hz physics loop: the complete simulation following the proxy, publishing the local
contact model for the haptic loop and a snapshot for the view, and logging (ARCHITECTURE sec. 3,
seed 000 Fig. 17).

One step: read the latest proxy pose (seqlock) -> ``sim_core.step.step`` with the proxy pose as
the part's set pose: the Panda's tool follows it by admittance control and holds the part
through the grasp (or, with ``[arm] robot = "off"``, the spring-damper drive pulls the part)
-> detection and clustering at the proxy's own pose (``step.collide``), published in the
proxy's body frame, so the haptic loop re-evaluates those contacts' gaps at the proxy pose
every millisecond (extrapolating from the lagging part instead let the proxy slip through the
thread: 12.6 mm in a 30 s bolting session) -> log the step's inputs and outputs (replay re-runs
exactly the step) and the haptic ticks drained from the ring.
"""
from __future__ import annotations

import os
import time

import numpy as np

from app.loops import RateStats, sleep_until
from haptics.local_contact import LocalContact
from sim_core import step as step_mod
from sim_core.io.records import ARM_NQ, MAX_CONTACTS, PHYS, PROXY, SNAPSHOT, TICK, pack_physics
from sim_core.types import Inputs, State


def proxy_inputs(v: np.ndarray) -> Inputs:
    """Drive inputs from a proxy record: set pose = proxy pose, set twist = proxy twist."""
    R = PROXY.get(v, "R").reshape(3, 3)
    V = PROXY.get(v, "V")
    return Inputs(PROXY.get(v, "p").copy(), R.copy(), V[:3].copy(), R @ V[3:])


def local_contact_array(at: State, c, mu: float) -> np.ndarray:
    """Contacts `c` of body 0, in the body frame of the pose `at` they were found at."""
    if c is None or len(c) == 0:
        r_b = np.zeros((0, 3))
        n_w = np.zeros((0, 3))
        d = np.zeros(0)
    else:
        r_b = (c.x_w - at.p_w[0]) @ at.R_wb[0]
        n_w, d = c.n_w, c.d
    keep = np.argsort(d, kind="stable")[:MAX_CONTACTS]          # the deepest, if ever more
    return LocalContact(at.t, at.p_w[0], at.R_wb[0], r_b[keep], n_w[keep], d[keep], mu).to_array()


def proxy_contacts(model, state: State, inp: Inputs):
    """(the proxy's state, the contacts at it): detection and clustering at the set pose the
    haptic side holds, with its twist."""
    V_at = np.concatenate([inp.v_set_w[0], inp.R_set_w[0].T @ inp.w_set_w[0]])
    at = State(state.t, inp.p_set_w[0], inp.R_set_w[0], V_at)
    return at, step_mod.collide(model, at, model.dt).contacts


def snapshot_array(st: State, info, stats: RateStats, misses: int, task: dict | None = None) -> np.ndarray:
    """The render loop's snapshot of a step; ``task``: the live task figure's fields
    (``scenario.LiveFigures.fields``), none (zeros: no figure) without one."""
    m = 0 if info.contacts is None else min(len(info.contacts), MAX_CONTACTS)
    x = np.zeros((MAX_CONTACTS, 3))
    f = np.zeros((MAX_CONTACTS, 3))
    if m:
        x[:m] = info.contacts.x_w[:m]
        f[:m] = info.forces_w[:m]
    from sim_core.systems.arm.system import joints
    aq = joints(st)[0]
    q = np.zeros(ARM_NQ)
    q[:aq.size] = aq
    return SNAPSHOT.pack(t=st.t, p=st.p_w[0], R=st.R_wb[0], n=m, x=x, f=f, rate=stats.rate(),
                         step=sum(info.times.values()), max_pen=info.max_penetration, misses=misses,
                         steps=stats.count, nq=aq.size, q=q, **(task or {}))


def log_ticks(log, records: np.ndarray) -> None:
    for r in records:
        f = TICK.unpack(r)
        t = float(f["t"][0])
        log.put("/device", t, {"t": t, "p": f["dev_p"].tolist(), "q": f["dev_q"].tolist(),
                               "v": f["dev_v"].tolist(), "w": f["dev_w"].tolist(),
                               "buttons": int(f["buttons"][0])})
        log.put("/proxy", t, {"t": t, "p_w": f["p"].tolist(), "R_wb": f["R"].tolist(), "V": f["V"].tolist(),
                              "device_wrench": f["device_wrench"].tolist(), "energy": float(f["energy"][0])})
        log.put("/timing", t, {"loop": "haptic", "t": t, "period": float(f["period"][0]),
                               "work": float(f["work"][0])})


def run(model, state: State, proxy_slot, contact_slot, snap_slot, ring, log, stop,
        duration: float | None = None, on_step=None, clock=time.perf_counter, phys_ring=None,
        stalls=(), task=None) -> dict:
    """Run until `stop` is set (or `duration` of wall time); returns loop statistics.

    ``stalls``: [(t s, length s), ...] -- the loop freezes for `length` once its clock passes
    `t` (fault injection: what a descheduled or swapped-out physics process does to the
    haptic side; the robustness tests use it).

    ``task``: a ``scenario.LiveFigures``, updated every step; its figure goes into the
    snapshot (the HUD's task line).

    Logging: either in this loop (``log``: a LogWriter; it also drains the haptic ``ring``)
    or, in a session, by the logger process (``phys_ring``: a ``shm.RingWriter``, one
    ``records.PHYS`` record per step), so JSON and disk never cost the physics its deadline."""
    stats = RateStats(window=100000)
    T = model.dt
    misses = 0
    buf = np.empty(PROXY.size)
    rec = np.empty(PHYS.size)
    t0 = clock()
    k = 0
    if log is not None:     # replay must step the way this loop does
        log.put("/session", 0.0, {"device": "in-process", "sched_fifo": False, "physics": "step"})
    parent = os.getppid()
    pending = sorted(stalls)
    while not stop.is_set() and (duration is None or k * T < duration):
        if pending and clock() - t0 >= pending[0][0]:
            time.sleep(pending.pop(0)[1])     # injected stall: no step, no model, no snapshot
        k += 1
        if k % 10 == 0 and os.getppid() != parent:   # the session process died: stop
            break
        late = sleep_until(t0 + k * T, clock=clock)
        start = clock()
        seq, v = proxy_slot.read(buf)
        inp = proxy_inputs(v) if seq else None
        if inp is None:                       # no proxy yet: hold the part where it is
            inp = Inputs(state.p_w[0].copy(), state.R_wb[0].copy(), np.zeros(3), np.zeros(3))
        before = state
        state, info = step_mod.step(model, state, inp)
        at, found = proxy_contacts(model, before, inp)
        contact_slot.write(local_contact_array(at, found, model.contact.friction))
        end = clock()
        misses += int(late + (end - start) > T)
        stats.tick(start, end)
        if task is not None:
            task.update(before, state)
        snap_slot.write(snapshot_array(state, info, stats, misses, None if task is None else task.fields()))
        if phys_ring is not None:
            phys_ring.put(pack_physics(before, inp, state, info, rec))
        if log is not None:
            log.physics_step(before, inp, state, info)
            log_ticks(log, ring.drain())
        if on_step is not None:
            on_step(before, inp, state, info)
    if log is not None and ring is not None:
        log_ticks(log, ring.drain())
    return {"steps": stats.count, "misses": misses, "periods": np.array(stats.periods),
            "works": np.array(stats.works), "final": state}
