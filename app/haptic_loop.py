"""The 1 kHz haptic loop, alone in its own process (ARCHITECTURE sec. 3).

Per tick (CHAI3D order): read the device -> take the newest local contact model from the
physics loop (seqlock) -> four-channel coupling -> PMI proxy step with the contacts solved
at 1 kHz -> write the device force -> publish the proxy (seqlock) and a log record (ring).

Safety, whatever happens:
  * the device clamps every wrench to its capability (``devices.base``), the coupling limits
    and ramps its output, bounds its rate of change (the device's rated N/ms), and its
    passivity controller books the energy of the held wrench against the motion under it
    (zero-order hold) and keeps the hand from receiving more than one tick's work;
  * **through a physics stall the last contact model is held**, never dropped: its contacts
    are planes fixed to the static part, re-evaluated at the proxy pose every tick, so the
    proxy cannot sink into geometry while no new model comes (dropping the model let the
    proxy fall 36 mm into the bolt under the user's 20 N in a 26 ms stall, and the
    penetration was expelled when contact came back: the part was flung).  Only when the
    physics has been silent for ``PHYSICS_DEAD_S`` (it is presumed dead, not late) does a
    **watchdog** ramp the output to zero (``physics_watchdog``), and back up if it resumes;
  * a device fault (disconnect, garbage, silence) sets the force to zero at once, reports a
    one-line message and ends this loop (the session then ends cleanly; the log is intact);
  * leaving the loop for any reason -- stop, fault, exception -- commands zero force.
The process asks for SCHED_FIFO and publishes whether it got it (the HUD says so if not).
"""
from __future__ import annotations

import gc
import math
import os
import time
import traceback

import numpy as np

from app.events import event, process_logger
from app.loops import child_signals, sleep_until, start_up_done, try_realtime, wait_for_go
from devices.base import DeviceFault
from sim_core.io.records import PROXY, TICK
from sim_core.io.shm import Ring, RingWriter, SeqSlot

T_HAPTIC = 1e-3
ORPHAN_CHECK_TICKS = 50     # every 50 ms: if the session process died, stop (zero force)
PHYSICS_DEAD_S = 0.25       # 25 physics periods without a contact model: the physics is dead, ramp out
STALL_RAMP_S = 0.01         # ... over 10 ms (and back in over the same time)
SPILL_LIMIT_TICKS = 600_000  # 10 minutes of ticks (200 MB) kept while the logger's ring is full


def physics_watchdog(age: float | None, safety: float) -> float:
    """The output scale after a tick whose newest contact model is `age` s old (None: none
    yet): ramped toward 0 by T / ``STALL_RAMP_S`` a tick once the physics has been silent
    for ``PHYSICS_DEAD_S``, toward 1 otherwise.  The model itself is held meanwhile."""
    if age is not None and age > PHYSICS_DEAD_S:
        return max(0.0, safety - T_HAPTIC / STALL_RAMP_S)
    return min(1.0, safety + T_HAPTIC / STALL_RAMP_S)


def make_coupling(cap, gains: dict):
    """The coupling for a device of capability `cap` with the session's `gains`."""
    from haptics.coupling import Coupling, CouplingGains, DeviceLimits
    limits = DeviceLimits(max_force=cap.max_force, max_torque=cap.max_torque,
                          max_stiffness=cap.max_stiffness, max_damping=cap.max_damping,
                          max_force_rate=cap.max_force_rate, max_torque_rate=cap.max_torque_rate)
    return Coupling(CouplingGains(**gains), limits, T=T_HAPTIC)


def tick(dev, coupling, proxy, lc, now: float, safety: float, label: str = ""):
    """One haptic tick after the wait: read the device -> coupling -> proxy step with the
    local contact model `lc` -> write the device force.  Returns (the device sample, the
    proxy's step info).
    (``app.lockstep`` runs this same tick on a simulated clock.)"""
    s = dev.read(now)
    if not (np.isfinite(s.p).all() and np.isfinite(s.q).all() and np.isfinite(s.v).all()
            and np.isfinite(s.w).all()):
        raise DeviceFault(f"device {label or dev.capability.name}: a sample with non-finite values "
                          "(refused; zero force)")
    # the watchdog's factor goes in before the limits, the rate limit and the
    # passivity observer: the energy booked is that of the wrench sent
    f_dev, F, B = coupling.step(s.p, s.q, s.v, s.w, proxy, proxy.env_wrench, T_HAPTIC,
                                clutch=bool(s.buttons & 1), out_scale=safety)
    info = proxy.step(F, B, lc, T_HAPTIC)          # the newest model, held through a stall
    dev.write_force(f_dev)
    return s, info


def _warm_up(Coupling, CouplingGains, limits, Proxy, LocalContact, spec) -> None:
    """Run every kernel once on throwaway objects, so numba loads or compiles before the
    first real tick (otherwise the first periods take hundreds of milliseconds)."""
    c = Coupling(CouplingGains(**spec.get("gains", {})), limits, T=T_HAPTIC)
    pr = Proxy(spec["mass"], np.array(spec["inertia"]), np.zeros(3), np.eye(3))
    lc = LocalContact(0.0, np.zeros(3), np.eye(3), np.zeros((1, 3)), np.array([[0.0, 0.0, 1.0]]),
                      np.array([1e-4]), 0.1)
    for _ in range(3):
        f, F, B = c.step(np.zeros(3), np.array([1.0, 0, 0, 0]), np.zeros(3), np.zeros(3), pr,
                         pr.contact_wrench, T_HAPTIC)
        pr.step(F, B, lc, T_HAPTIC)
    LocalContact.from_array(lc.to_array())


def haptic_main(spec: dict, stop, status, go=None) -> None:
    """Process entry point.  ``spec``: shared-memory names, device spec, proxy mass/inertia
    and start pose, workspace offset, coupling gains; ``status``: a queue for one-line
    events (realtime, faults, exit) as log records (``app.events``)."""
    from devices.base import open_device
    from haptics.coupling import Coupling, CouplingGains
    from haptics.local_contact import PACKED_SIZE, LocalContact
    from haptics.proxy import Proxy

    child_signals(stop, starting=True)     # SIGTERM ends the start-up at once (not the loop)
    log = process_logger("haptic", status)
    realtime = False
    proxy_slot = SeqSlot(PROXY.size, name=spec["proxy"], create=False)
    contact_slot = SeqSlot(PACKED_SIZE, name=spec["contact"], create=False)
    ring = Ring(TICK.size, spec["ring_capacity"], name=spec["ring"], create=False)
    # every tick to the logger, which may fall behind: a full ring spills into this process's
    # memory, never blocks the loop (shm.RingWriter); no log, no records
    spill = spec.get("spill_limits", {}).get("haptic", SPILL_LIMIT_TICKS)
    writer = RingWriter(ring, TICK.slices["seq"].start, spill, catch_up=64) if spec.get("log") else None
    dev = None
    rec = np.zeros(PROXY.size)          # before the device opens: a failing open still reports through it
    try:
        dev = open_device(spec["device"])
        coupling = make_coupling(dev.capability, spec.get("gains", {}))
        limits = coupling.limits
        proxy = Proxy(spec["mass"], np.array(spec["inertia"]), np.array(spec["p0"]), np.array(spec["R0"]))
        _warm_up(Coupling, CouplingGains, limits, Proxy, LocalContact, spec)
        # real-time priority only now: the start-up (numba loading or compiling) must not
        # hold a core at SCHED_FIFO (the kernel throttled it: "RT throttling activated")
        if spec.get("realtime", True):
            realtime, note = try_realtime()
        else:
            realtime, note = False, "SCHED_FIFO not requested"
        event(log, "realtime", realtime, note)
        # no cyclic garbage collection during the loop: a full collection can take
        # milliseconds, and a tick allocates only acyclic temporaries (freed by refcount)
        gc.collect()
        gc.freeze()
        gc.disable()
        time.sleep(spec.get("startup_delays", {}).get("haptic", 0.0))   # injected (the tests)
        start_up_done()
        event(log, "ready", True, "haptic loop ready")
        if go is not None and not wait_for_go(go, stop):
            return                               # the session did not start (finally: zero force)
        buf = np.empty(PACKED_SIZE)
        lc, lc_seq, lc_wall = None, 0, None
        safety = 1.0
        rec_tick = np.zeros(TICK.size)
        clock = time.perf_counter
        parent = os.getppid()
        t0 = clock()
        prev = t0
        k = 0
        pending = sorted(tuple(x) for x in spec.get("haptic_stalls", ()))
        while not stop.is_set():
            if pending and clock() - t0 >= pending[0][0]:
                # injected stall (the robustness tests): what SIGSTOP or a descheduled
                # process does between two ticks -- the device holds its last wrench
                time.sleep(pending.pop(0)[1])
            k += 1
            if k % ORPHAN_CHECK_TICKS == 0 and os.getppid() != parent:
                event(log, "fault", False, "haptic loop: the session process died; zero force")
                break
            late = sleep_until(t0 + k * T_HAPTIC, clock=clock)
            start = clock()
            now = start - t0
            seq = contact_slot.try_read(buf)
            if seq > 0 and seq != lc_seq:
                lc_seq, lc_wall = seq, now
                try:
                    lc = LocalContact.from_array(buf)
                except ValueError as e:           # never act on a corrupt model
                    lc = None
                    event(log, "warning", False, f"haptic loop: bad contact model ignored ({e})")
            safety = physics_watchdog(None if lc_wall is None else now - lc_wall, safety)
            s, _ = tick(dev, coupling, proxy, lc, now, safety, spec["device"])
            end = clock()
            PROXY.pack(rec, t=now, p=proxy.p_w, R=proxy.R_wb, V=proxy.V, device_wrench=dev.last_wrench,
                       proxy_contact=proxy.contact_wrench, energy=coupling.observer_energy,
                       period=start - prev, work=end - start, late=late, realtime=float(realtime),
                       ticks=k, device_p=s.p, device_q=s.q)
            proxy_slot.write(rec)
            TICK.pack(rec_tick, t=now, dev_p=s.p, dev_q=s.q, dev_v=s.v, dev_w=s.w, buttons=s.buttons,
                      p=proxy.p_w, R=proxy.R_wb, V=proxy.V, device_wrench=dev.last_wrench,
                      energy=coupling.observer_energy, period=start - prev, work=end - start)
            if writer is not None:
                writer.put(rec_tick)
            prev = start
            if not math.isfinite(proxy.p_w.sum()):
                raise FloatingPointError("proxy state is not finite")
    except DeviceFault as e:
        event(log, "fault", False, str(e).splitlines()[0])
        rec[PROXY.slices["fault"]] = 1.0
        proxy_slot.write(rec)
    except Exception as e:  # noqa: BLE001 - report, then the finally makes the device safe
        event(log, "fault", False, f"haptic loop: {type(e).__name__}: {e}".splitlines()[0])
        event(log, "traceback", False, traceback.format_exc())
    finally:
        if dev is not None:
            try:
                dev.zero_force()
                dev.close()
            except Exception:  # noqa: BLE001 - the device may be gone already
                pass
        if writer is not None:
            writer.close()       # the force is zero: now the spill may wait for the logger
        event(log, "exit", True, "haptic loop stopped")
        proxy_slot.close()
        contact_slot.close()
        ring.close()
