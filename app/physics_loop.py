"""The 100 Hz physics loop: the full pipeline on the proxy's pose, publishing the local contact
model for the haptic loop and a snapshot for the view, and logging (ARCHITECTURE sec. 3).

One step: read the latest proxy pose (seqlock) -> the part is driven toward it by the arm
stand-in (spring-damper drive of the foundation issue; the robot arm replaces it later) ->
``pipeline.step`` -> publish the clustered contacts in the part's body frame, so the haptic
loop can re-evaluate their gaps at the proxy pose every millisecond -> log the step's inputs
and outputs (replay re-runs exactly these) and the haptic ticks drained from the ring.
"""
from __future__ import annotations

import os
import time

import numpy as np

from haptics.local_contact import LocalContact
from sim_core import drive, pipeline
from sim_core.model import Contacts, Inputs, State

from .layout import MAX_CONTACTS, PHYS, PROXY, SNAPSHOT, TICK, pack_physics
from .loops import RateStats, sleep_until


def proxy_inputs(v: np.ndarray) -> Inputs:
    """Drive inputs from a proxy record: set pose = proxy pose, set twist = proxy twist."""
    R = PROXY.get(v, "R").reshape(3, 3)
    V = PROXY.get(v, "V")
    return Inputs(PROXY.get(v, "p").copy(), R.copy(), V[:3].copy(), R @ V[3:])


def local_contact_array(before: State, c, mu: float) -> np.ndarray:
    """Clustered contacts `c`, in the body frame of the state they were found at."""
    if c is None or len(c) == 0:
        r_b = np.zeros((0, 3))
        n_w = np.zeros((0, 3))
        d = np.zeros(0)
    else:
        r_b = (c.x_w - before.p_w) @ before.R_wb
        n_w, d = c.n_w, c.d
    keep = np.argsort(d, kind="stable")[:MAX_CONTACTS]          # the deepest, if ever more
    return LocalContact(before.t, before.p_w, before.R_wb, r_b[keep], n_w[keep], d[keep], mu).to_array()


def session_step(model, state: State, inp: Inputs) -> tuple[State, object, State, object]:
    """One physics step of a haptic session: the pipeline runs once, on the proxy's pose.

    Detection and clustering at the proxy pose give the haptic loop its local contact model
    (exact at that pose; extrapolating from the lagging part instead let the proxy slip
    through the thread: 12.6 mm penetration in a 30 s bolting session).  The part held by
    the arm stand-in follows the proxy; it sees the same contacts, moved to its own pose to
    first order (x = p + R r_b, d + n . dx).  Penetration figures are those at the proxy.
    Returns (next part state, step info, the proxy state used, the proxy contacts)."""
    V_at = np.concatenate([inp.v_set_w, inp.R_set_w.T @ inp.w_set_w])
    at = State(state.t, inp.p_set_w, inp.R_set_w, V_at)
    F0, B = drive.linearize(model, state, inp)
    f = F0 - B @ state.V                            # the drive's pull on the part, [f_w; tau in its body axes]
    f_at = np.concatenate([f[:3], at.R_wb.T @ state.R_wb @ f[3:]])   # the torque in the proxy's body axes
    reps, n_cand, n_cont, d_all, laps = pipeline.contacts_at(model, at, f_at)
    if len(reps):
        r_b = (reps.x_w - at.p_w) @ at.R_wb
        x_part = state.p_w + r_b @ state.R_wb.T
        d_part = reps.d + np.einsum("ij,ij->i", reps.n_w, x_part - reps.x_w)
        part_contacts = Contacts(x_part, reps.n_w, d_part)
    else:
        part_contacts = reps
    nxt, info = pipeline.step_with_contacts(model, state, inp, part_contacts, d_all, laps, n_cand, n_cont, (F0, B))
    return nxt, info, at, reps


def snapshot_array(st: State, info, stats: RateStats, misses: int) -> np.ndarray:
    m = 0 if info.contacts is None else min(len(info.contacts), MAX_CONTACTS)
    x = np.zeros((MAX_CONTACTS, 3))
    f = np.zeros((MAX_CONTACTS, 3))
    if m:
        x[:m] = info.contacts.x_w[:m]
        f[:m] = info.forces_w[:m]
    return SNAPSHOT.pack(t=st.t, p=st.p_w, R=st.R_wb, n=m, x=x, f=f, rate=stats.rate(),
                         step=sum(info.times.values()), max_pen=info.max_penetration, misses=misses,
                         steps=stats.count)


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
        duration: float | None = None, on_step=None, clock=time.perf_counter, phys_ring=None) -> dict:
    """Run until `stop` is set (or `duration` of wall time); returns loop statistics.

    Logging: either in this loop (``log``: a LogWriter; it also drains the haptic ``ring``)
    or, in a session, by the logger process (``phys_ring``: one ``layout.PHYS`` record per
    step), so JSON and disk never cost the physics its deadline."""
    stats = RateStats(window=100000)
    T = model.dt
    misses = 0
    buf = np.empty(PROXY.size)
    rec = np.empty(PHYS.size)
    t0 = clock()
    k = 0
    if log is not None:     # replay must step the way this loop does
        log.put("/session", 0.0, {"device": "in-process", "sched_fifo": False, "physics": "session_step"})
    parent = os.getppid()
    while not stop.is_set() and (duration is None or k * T < duration):
        k += 1
        if k % 10 == 0 and os.getppid() != parent:   # the session process died: stop
            break
        late = sleep_until(t0 + k * T, clock=clock)
        start = clock()
        seq, v = proxy_slot.read(buf)
        inp = proxy_inputs(v) if seq else None
        if inp is None:                       # no proxy yet: hold the part where it is
            inp = Inputs(state.p_w.copy(), state.R_wb.copy(), np.zeros(3), np.zeros(3))
        before = state
        state, info, at, proxy_contacts = session_step(model, state, inp)
        contact_slot.write(local_contact_array(at, proxy_contacts, model.contact.mu))
        end = clock()
        misses += int(late + (end - start) > T)
        stats.tick(start, end)
        snap_slot.write(snapshot_array(state, info, stats, misses))
        if phys_ring is not None:
            phys_ring.push(pack_physics(before, inp, state, info, rec))
        if log is not None:
            log.physics_step(before, inp, state, info)
            log_ticks(log, ring.drain())
        if on_step is not None:
            on_step(before, inp, state, info)
    if log is not None and ring is not None:
        log_ticks(log, ring.drain())
    return {"steps": stats.count, "misses": misses, "periods": np.array(stats.periods),
            "works": np.array(stats.works), "final": state}
