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
from dataclasses import fields

import numpy as np

from app.loops import RateStats, sleep_until
from haptics.local_contact import LocalContact
from sim_core import step as step_mod
from sim_core.contact import materials
from sim_core.dynamics import couplings
from sim_core.io.records import ARM_NQ, MAX_CONTACTS, PHYS, PROXY, TICK, pack_physics, snapshot_layout
from sim_core.systems.arm.system import joints
from sim_core.systems.base import view_numbers
from sim_core.types import Inputs, State


def held_inputs(model, state: State, p_w, R_wb, v_w, w_w) -> Inputs:
    """Every body's drive inputs when the hand holds ``model.hand_body`` at the set pose
    (p_w, R_wb) with the set twist (v_w, w_w): the other bodies' set poses are where they are,
    at rest (their drives hold them)."""
    h = model.hand_body
    p, R = state.p_w.copy(), state.R_wb.copy()
    v, w = np.zeros_like(p), np.zeros_like(p)
    p[h], R[h], v[h], w[h] = p_w, R_wb, v_w, w_w
    return Inputs(p, R, v, w)


def proxy_inputs(v: np.ndarray, model=None, state: State | None = None) -> Inputs:
    """Drive inputs from a proxy record: the held body's set pose = proxy pose, set twist =
    proxy twist (``held_inputs``; with no model: that body alone)."""
    R = PROXY.get(v, "R").reshape(3, 3)
    V = PROXY.get(v, "V")
    if model is None:
        return Inputs(PROXY.get(v, "p").copy(), R.copy(), V[:3].copy(), R @ V[3:])
    return held_inputs(model, state, PROXY.get(v, "p"), R, V[:3], R @ V[3:])


def held_pull(model, state: State, body: int) -> np.ndarray:
    """(6,) [f_w N; tau_b N m]: what the couplings on `body` (a cable's joints) pull it with at
    `state` -- the potential's force, the generalized force ``couplings.apply`` adds at rest
    (zero twist: the damping's share left out) -- and what a system says the hand holding `body`
    feels of it (its ``pull``: the snap socket's, through the plug's admittance).  Zeros without
    either."""
    out = np.zeros(6)
    for s, sub in zip(model.systems, state.systems):
        if hasattr(s, "pull"):
            out += s.pull(model, sub, body)
    cp = model.couplings
    if cp is None or len(cp) == 0:
        return out
    on = np.flatnonzero((cp.a == body) | (cp.b == body))
    if on.size == 0:
        return out
    sub = type(cp)(*(None if v is None else v[on] for v in (getattr(cp, f.name) for f in fields(cp))))
    n = len(state.p_w)
    A, rhs = np.zeros((n, 6, 6)), np.zeros((n, 6))
    couplings.apply(sub, state.p_w, state.R_wb, np.zeros((n, 6)), model.dt, A, rhs, np.zeros((n, 3)))
    return out + rhs[body]


def local_contact_array(at: State, c, model, body: int = 0, state: State | None = None) -> np.ndarray:
    """The contacts `c` that push `body` (the held part), in its body frame at the pose `at`
    they were found at, each with the friction of its pair's material
    (``materials.per_contact``); a contact whose other side is `body` is turned round (its
    normal pushes `body`).  With the physics `state`: the pull of `body`'s couplings and systems
    there too (``held_pull``, ``LocalContact.f_ext``)."""
    pull = None if state is None else held_pull(model, state, body)
    if c is None or len(c) == 0:
        r_b = np.zeros((0, 3))
        n_w = np.zeros((0, 3))
        d = mu = np.zeros(0)
    else:
        mine, theirs = c.bodies() == body, c.others() == body
        mu_all = materials.per_contact(model, c)[0]
        if mine.all():
            x_w, n_w, d, mu = c.x_w, c.n_w, c.d, mu_all
        else:
            x_w = np.concatenate([c.x_w[mine], c.x_w[theirs]])
            n_w = np.concatenate([c.n_w[mine], -c.n_w[theirs]])
            d = np.concatenate([c.d[mine], c.d[theirs]])
            mu = np.concatenate([mu_all[mine], mu_all[theirs]])
        r_b = (x_w - at.p_w[body]) @ at.R_wb[body]
    keep = np.argsort(d, kind="stable")[:MAX_CONTACTS]          # the deepest, if ever more
    return LocalContact(at.t, at.p_w[body], at.R_wb[body], r_b[keep], n_w[keep], d[keep], mu[keep],
                        f_ext=pull).to_array()


def proxy_contacts(model, state: State, inp: Inputs):
    """(the proxy's state, the contacts at it): detection and clustering with the held body
    (``model.hand_body``) at the set pose the haptic side holds, with its twist, and every
    other body where it is."""
    h = model.hand_body
    V_at = state.V.copy()
    V_at[h] = np.concatenate([inp.v_set_w[h], inp.R_set_w[h].T @ inp.w_set_w[h]])
    P, R = state.p_w.copy(), state.R_wb.copy()
    P[h], R[h] = inp.p_set_w[h], inp.R_set_w[h]
    at = State(state.t, P, R, V_at)
    return at, step_mod.collide(model, at, model.dt).contacts


def snapshot_array(st: State, info, stats: RateStats, misses: int, task: dict | None = None,
                   model=None) -> np.ndarray:
    """The render loop's snapshot of a step (``records.snapshot_layout``: every body's pose);
    ``task``: the live task figure's fields (``scenario.LiveFigures.fields``), none (zeros: no
    figure) without one; with the `model`, its systems' numbers for the view
    (``systems.base.view_numbers``)."""
    m = 0 if info.contacts is None else min(len(info.contacts), MAX_CONTACTS)
    x = np.zeros((MAX_CONTACTS, 3))
    f = np.zeros((MAX_CONTACTS, 3))
    if m:
        x[:m] = info.contacts.x_w[:m]
        f[:m] = info.forces_w[:m]
    aq = joints(st)[0]
    q = np.zeros(ARM_NQ)
    q[:aq.size] = aq
    shape = np.zeros(0) if model is None else view_numbers(model, st)
    return snapshot_layout(st.p_w.shape[0], shape.size).pack(
        t=st.t, p=st.p_w, R=st.R_wb, n=m, x=x, f=f, rate=stats.rate(), step=sum(info.times.values()),
        max_pen=info.max_penetration, misses=misses, steps=stats.count, nq=aq.size, q=q, shape=shape, **(task or {}))


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
        stalls=(), task=None, control=None) -> dict:
    """Run until `stop` is set (or `duration` of wall time); returns loop statistics.

    ``stalls``: [(t s, length s), ...] -- the loop freezes for `length` once its clock passes
    `t` (fault injection: what a descheduled or swapped-out physics process does to the
    haptic side; the robustness tests use it).

    ``task``: a ``scenario.LiveFigures``, updated every step; its figure goes into the
    snapshot (the HUD's task line).

    ``control``: the task's controller loop (``scenario.Scenario.control.start()``, grinding's
    force loop), or None: it adjusts the held body's set pose from the proxy's
    (``hand(model, state, inputs, T)``) and reads each step's result (``measure``); the
    proxy's own contacts stay at the proxy's pose, and the log holds the adjusted inputs the
    step took (replay re-runs the step without the loop).

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
        if seq:
            inp = proxy_inputs(v, model, state)
        else:                                 # no proxy yet: hold the part where it is
            h = model.hand_body
            inp = held_inputs(model, state, state.p_w[h], state.R_wb[h], np.zeros(3), np.zeros(3))
        before = state
        hand = inp
        if control is not None:
            inp = control.hand(model, state, hand, T)
        state, info = step_mod.step(model, state, inp)
        if control is not None:
            control.measure(state, info)
        at, found = proxy_contacts(model, before, hand)
        contact_slot.write(local_contact_array(at, found, model, model.hand_body, state))
        end = clock()
        misses += int(late + (end - start) > T)
        stats.tick(start, end)
        if task is not None:
            task.update(before, state)
        snap_slot.write(snapshot_array(state, info, stats, misses, None if task is None else task.fields(), model))
        if phys_ring is not None:
            phys_ring.put(pack_physics(before, inp, state, info, rec, model.hand_body))
        if log is not None:
            log.physics_step(before, inp, state, info, model.hand_body)
            log_ticks(log, ring.drain())
        if on_step is not None:
            on_step(before, inp, state, info)
    if log is not None and ring is not None:
        log_ticks(log, ring.drain())
    return {"steps": stats.count, "misses": misses, "periods": np.array(stats.periods),
            "works": np.array(stats.works), "final": state}
