"""An interactive session: the three loops and the logger (ARCHITECTURE sec. 3).

    haptic process  (1 kHz, alone: no GIL-holding neighbour) -- app.haptic_loop
        ^  local contact model (seqlock)      |  proxy pose (seqlock), tick records (ring)
        |                                     v
    physics process (100 Hz pipeline) -- app.physics_loop --- step records (ring) --> logger
        |  snapshot (seqlock)                                                    process (MCAP)
        v
    main process    (render loop ~60 Hz when there is a display; else just waits)

The logger process (``app.logger``) owns the MCAP log and drains both rings every 20 ms, so
neither loop ever waits on JSON encoding or the disk; a logger that falls behind delays the
records, it does not lose them (the loops spill what finds a ring full into their own memory).
The haptic loop runs SCHED_FIFO at priority 80 and the physics loop at 60 where permitted: a
frame may wait for a physics step, a step not.

Real time starts (the ``go`` event) only when both loops have said that they are ready (their
kernels loaded or compiled and warmed); past ``STARTUP_TIMEOUT_S`` the session ends with one
line naming the loop that was not, without starting.  Any way the session ends -- duration
reached, window closed, Ctrl-C, SIGTERM, a device fault, a crashed loop, a start-up that never
finished -- the stop flag is set, the haptic loop commands zero force, both loops hand their
records over, and the logger writes them all before it closes the log.
"""
from __future__ import annotations

import logging
import multiprocessing as mp
import os
import queue
import signal
import time
from dataclasses import dataclass, field

import numpy as np

from app.events import ROOT, as_message, event, process_logger
from app.loops import child_signals, sleep_until, start_up_done, try_realtime, wait_for_go
from sim_core.io.records import PHYS, PROXY, TICK, snapshot_layout
from sim_core.io.shm import Ring, RingWriter, SeqSlot, StopFlag
from sim_core.systems.base import view_size

RING_CAPACITY = 8192          # 8 s of haptic ticks (2.8 MB); the logger drains every 20 ms
PHYS_RING_CAPACITY = 1024     # 10 s of physics steps (0.9 MB)
SPILL_LIMIT_S = 600.0         # s of physics steps kept while the ring is full (70 MB at most; the
                              # haptic loop's: haptic_loop.SPILL_LIMIT_TICKS): a logger starved
                              # this long loses records (counted, and said where)
PHYSICS_PRIORITY = 60         # SCHED_FIFO priority of the physics process (haptic: 80)
PHYSICS_THREADS = 1          # numba threads: the haptic loop owns the other core
STARTUP_TIMEOUT_S = 120.0     # loading (or, on a fresh machine, compiling) the numba kernels;
STARTUP_ENV = "TIGHTSIM_STARTUP_TIMEOUT_S"   # ... or this many seconds from the environment
HANDOVER_S = 60.0             # after stop: the most a loop may take to hand its records over
ABORTED_JOIN_S = 0.5          # a session that never started: then its loops are terminated


@dataclass
class SessionResult:
    physics: dict = field(default_factory=dict)      # steps, misses, periods, works, final
    messages: list = field(default_factory=list)     # (kind, ok, text) from the haptic process
    realtime: bool = False
    started: bool = False                             # real time began (both loops were ready)
    fault: str | None = None
    energy: float = 0.0
    wall: float = 0.0
    log_stats: dict = field(default_factory=dict)   # the log's /session_end: counts and gaps (app.logger)
    figures: dict = field(default_factory=dict)     # the part's penetration and the task figure

    def absorb(self, status) -> bool:
        """Take every pending status message; True if one of them was a fault."""
        fault = False
        while True:
            try:
                msg = as_message(status.get_nowait())
            except queue.Empty:
                return fault
            self.messages.append(msg)
            if msg[0] == "realtime":
                self.realtime = bool(msg[1])
            elif msg[0] == "fault":
                self.fault, fault = msg[2], True


def _with_hand_at(state, h: int, p0, R0):
    """The built start's bodies at rest, the held one (`h`) at (p0, R0): what ``step.start``
    solves the arm's configuration for."""
    from sim_core.types import State
    P, R = state.p_w.copy(), state.R_wb.copy()
    P[h], R[h] = p0, R0
    return State(0.0, P, R, np.zeros((len(P), 6)))


def _arm_start(model, st) -> dict:
    from sim_core.systems.arm.system import joints
    q, qd = joints(st)
    return {"q0": q.tolist(), "qd0": qd.tolist()}


def start_state(spec: dict):
    """The session's start: the held part (``spec["hand"]``, ``Model.hand_body``) at the
    spec's pose (``p0``, ``R0``), every other body at its built start (``bodies_p0``,
    ``bodies_R0``), all at rest, and the arm (if any) at the configuration the main process
    solved for it (``q0``), so the physics and the log agree."""
    from sim_core.systems.arm.system import ArmState
    from sim_core.types import State
    h = spec.get("hand", 0)
    P = np.array(spec.get("bodies_p0", [spec["p0"]]), dtype=np.float64).reshape(-1, 3)
    R = np.array(spec.get("bodies_R0", [spec["R0"]]), dtype=np.float64).reshape(-1, 3, 3)
    P[h], R[h] = spec["p0"], spec["R0"]
    q0 = np.array(spec["q0"], dtype=np.float64)
    arm = (ArmState(q0, np.array(spec["qd0"], dtype=np.float64)),) if q0.size else ()   # a session's only system
    return State(0.0, P, R, np.zeros((len(P), 6)), systems=arm)


def _physics_main(spec: dict, stop, out, ready=None, go=None, realtime=None) -> None:
    """Physics process: build the scenario, run the loop until stop, hand the log records
    over, report statistics."""
    child_signals(stop, starting=True)     # SIGTERM ends the start-up at once (not the loop)
    # One numba thread: the haptic loop owns a core, and a parallel kernel whose second
    # thread waits behind it would stall the whole step (measured: 6.6 % missed deadlines).
    import numba

    from app import physics_loop
    from haptics.local_contact import PACKED_SIZE
    from sim_core.scenarios import scenario
    numba.set_num_threads(PHYSICS_THREADS)
    from sim_core import step as step_mod
    from sim_core.systems.arm.system import joints
    model, _, cfg = scenario.load(spec["scenario"])
    state = start_state(spec)
    if len(state.systems) != len(model.systems):       # a system other than the arm (the snap socket):
        state = step_mod.start(model, state)            # its start at the spec's poses
    h = model.hand_body
    proxy = SeqSlot(PROXY.size, name=spec["proxy"], create=False)
    contact = SeqSlot(PACKED_SIZE, name=spec["contact"], create=False)
    snap = SeqSlot(snapshot_layout(model.n_bodies, view_size(model)).size, name=spec["snapshot"], create=False)
    phys_ring = Ring(PHYS.size, spec["phys_ring_capacity"], name=spec["phys_ring"], create=False)
    writer = (RingWriter(phys_ring, PHYS.slices["seq"].start,
                         spec.get("spill_limits", {}).get("physics", int(SPILL_LIMIT_S / model.dt)))
              if spec.get("log") else None)
    trace = {"t": [], "p_w": [], "rot": [], "max_pen": [], "mean_pen": [], "force": [], "step": []}
    rot = [0.0]

    def record(before, inp, after, info):         # the held part's trajectory
        w_mid = 0.5 * (before.R_wb[h] @ before.V[h, 3:] + after.R_wb[h] @ after.V[h, 3:])
        rot[0] += (after.t - before.t) * float(w_mid[2])
        trace["t"].append(after.t)
        trace["p_w"].append(after.p_w[h].tolist())
        trace["rot"].append(rot[0])
        trace["max_pen"].append(info.max_penetration)
        trace["mean_pen"].append(info.mean_penetration)
        trace["force"].append(float(np.linalg.norm(info.contact_wrench[h, :3])))
        trace["step"].append(sum(info.times.values()))

    try:
        # warm up at rest and in contact (at the scenario's last set pose the part is engaged),
        # so that a cold kernel cache compiles here, before real time, and not at the first
        # contact (measured on a cold cache: peg sessions missed 92-492 of 900 deadlines and
        # jammed, with none missed once warm); the probe steps are thrown away
        from dataclasses import replace as _replace
        scen = scenario.record(cfg)
        last = scenario.inputs_at(scen, scen.duration)
        for inp in (physics_loop.held_inputs(model, state, state.p_w[h], state.R_wb[h], np.zeros(3), np.zeros(3)),
                    physics_loop.held_inputs(model, state, last.p_set_w[0], last.R_set_w[0], last.v_set_w[0],
                                             last.w_set_w[0])):
            probe = _replace(state, p_w=inp.p_set_w.copy(), R_wb=inp.R_set_w.copy())
            step_mod.step(model, probe, inp)
            physics_loop.local_contact_array(*physics_loop.proxy_contacts(model, probe, inp), model, h)
        if spec.get("realtime", True):
            # after the start-up (numba, scenario), below the haptic loop (80) but above
            # rendering: a frame may wait, a physics step not
            try_realtime(PHYSICS_PRIORITY)
        time.sleep(spec.get("startup_delays", {}).get("physics", 0.0))   # injected (the tests)
        if ready is not None:
            start_up_done()
            event(process_logger("physics", ready), "ready", True, "physics loop ready")
            if not wait_for_go(go, stop):
                return                       # the session did not start
        loop = None if scen.control is None else scen.control.start()     # the task's loop (grinding)
        res = physics_loop.run(model, state, proxy, contact, snap, None, None, stop, on_step=record,
                               stalls=[tuple(s) for s in spec.get("physics_stalls", ())],
                               phys_ring=writer, task=scenario.LiveFigures(model, scen, control=loop),
                               control=loop)
        if writer is not None:
            writer.close()                   # the spill goes into the ring as the logger takes it
        out.put({"steps": res["steps"], "misses": res["misses"], "periods": res["periods"].tolist(),
                 "works": res["works"].tolist(), "trace": trace,
                 "final": {"p_w": res["final"].p_w[h].tolist(), "R_wb": res["final"].R_wb[h].tolist(),
                           "q": joints(res["final"])[0].tolist()},
                 "control": None if loop is None else {"t": loop.t, "force": loop.force, "on": loop.on},
                 "dropped": phys_ring.dropped if writer is not None else 0,
                 "spilled": writer.spilled if writer is not None else 0})
    except Exception as e:  # noqa: BLE001 - report it; the main process ends the session
        import traceback
        out.put({"error": f"physics loop: {type(e).__name__}: {e}", "traceback": traceback.format_exc()})
        stop.set()
    finally:
        if writer is not None and not phys_ring.closed:
            writer.close(patience_s=2.0)    # after an error: what was stepped still reaches the log
        for s in (proxy, contact, snap, phys_ring):
            s.close()


def scripted_start(scen, R0: np.ndarray, p_script: np.ndarray) -> np.ndarray:
    """The part's start COM for a scripted device whose first point is ``p_script``.

    Scripted trajectories are written in a frame whose origin is the top of the static part
    (bolt end / hole entry), axis +z, and their point is where the part's lower face centre
    goes: so "over the hole axis" puts the peg's tip on the axis.  The part keeps the
    scenario's start orientation ``R0`` (the coupling's anchor maps the script's orientation
    to it), so the lower face centre is placed through ``R0``: COM = point + R0 (0, 0, half).
    Placing the COM at point + (0, 0, half) instead put the tip of the 0.5 deg tilted peg
    0.35 mm off the axis, on the high side of its tilted chamfer ring: the ring's edge then
    landed on the hole's chamfer-bore corner at +-100 deg from that side, a near-vertical
    support 5.8 mm behind the COM, and the 10-74 N push through the COM tipped the proxy
    against the coupling's 2 N m/rad (compliance centre at the COM, 40 mm above the tip) to
    a 10 deg jam at 1.6 mm depth.  The local contact model was exact there; the start was off.
    """
    if "lowest_part" in scen.moving_dims:              # docking: the pins' tips (the block's top is z = 0)
        off = np.asarray(scen.moving_dims["com_part"]) - np.asarray(scen.moving_dims["lowest_part"])
        return np.asarray(p_script, dtype=np.float64) + np.asarray(R0) @ off
    top = scen.static_dims.get("length", 0.0)          # bolt end; the hole's top is z = 0
    half = 0.5 * scen.moving_dims.get("height", scen.moving_dims.get("length", 0.0))
    # for an upright part (bolting) this is bit for bit point + (0, 0, top + half)
    return np.asarray(p_script, dtype=np.float64) + (np.array([0.0, 0.0, top])
                                                     + np.asarray(R0) @ np.array([0.0, 0.0, half]))


def startup_limit() -> float:
    """The start-up limit (s): ``$TIGHTSIM_STARTUP_TIMEOUT_S`` if set, else ``STARTUP_TIMEOUT_S``."""
    text = os.environ.get(STARTUP_ENV)
    if text is None:
        return STARTUP_TIMEOUT_S
    try:
        x = float(text)
    except ValueError:
        x = float("nan")
    if not (0.0 < x < float("inf")):
        raise ValueError(f"{STARTUP_ENV}={text!r}: the start-up limit must be a number of seconds > 0")
    return x


def not_ready_line(waiting, limit: float) -> str:
    """The one line of a session given up on at the start: which loop was not ready."""
    what = ("neither the haptic nor the physics loop was" if len(waiting) == 2
            else f"the {next(iter(waiting))} loop was not")
    return (f"{what} ready after {limit:g} s (compiling numba kernels? a first run compiles them; "
            f"{STARTUP_ENV} sets the limit)")


def _result_of(q, proc, timeout: float):
    """The one result a process puts on `q`, read while it runs (a process does not exit
    before its queue's data is taken); None if it ends, or `timeout` passes, without one."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            return q.get(timeout=0.1)
        except queue.Empty:
            if proc is not None and not proc.is_alive():
                try:
                    return q.get(timeout=0.5)
                except queue.Empty:
                    return None
    return None


def _end_process(p, timeout: float) -> None:
    """Join `p` for `timeout` s; then SIGTERM (a loop still starting leaves at once), then kill."""
    p.join(timeout=timeout)
    for stop_it in (p.terminate, p.kill):
        if not p.is_alive():
            return
        stop_it()
        p.join(timeout=2.0)


def run_session(scenario_name: str, device: str, duration: float, log_path: str | None = None,
                gains: dict | None = None, on_frame=None, frame_period: float = 1 / 60,
                realtime: bool = True, physics_stalls=(), haptic_stalls=(), logger_stalls=(),
                rings=(RING_CAPACITY, PHYS_RING_CAPACITY), startup_timeout: float | None = None,
                startup_delays: dict | None = None, spill_limits: dict | None = None) -> SessionResult:
    """Start the loops, let them run `duration` seconds (or until on_frame returns False),
    stop them, and gather their statistics.  ``on_frame(snapshot, proxy)`` is the render
    loop's body when there is a view (called about every ``frame_period``).

    Real time starts only once both loops are ready; past ``startup_timeout`` s (default
    ``startup_limit()``) the session ends without starting, its fault naming the loop that
    was not ready (``started`` False).

    Fault injection (the robustness tests): ``physics_stalls`` / ``haptic_stalls`` /
    ``logger_stalls``: [(t s, length s), ...] -- that process freezes for `length` once its
    clock passes `t`; ``startup_delays``: {"haptic" | "physics": s} -- that loop takes this
    much longer to get ready; ``rings``: the capacities of the haptic and physics rings;
    ``spill_limits``: {"haptic" | "physics": records} a loop keeps while its ring is full."""
    from devices.base import open_device
    from haptics.local_contact import PACKED_SIZE
    from sim_core import step as step_mod
    from sim_core.scenarios import scenario
    limit = startup_limit() if startup_timeout is None else float(startup_timeout)
    model, state, cfg = scenario.load(scenario_name)
    scen = scenario.record(cfg)
    h = model.hand_body                      # the part the hand holds: the proxy's
    p0, R0 = state.p_w[h], state.R_wb[h]
    if device.startswith("scripted:"):
        dev = open_device(device)
        p0 = scripted_start(scen, R0, dev.read(0.0).p)
        dev.close()
    ctx = mp.get_context("spawn")
    slots = {"proxy": SeqSlot(PROXY.size), "contact": SeqSlot(PACKED_SIZE),
             "snapshot": SeqSlot(snapshot_layout(model.n_bodies, view_size(model)).size)}
    keyboard = None
    device_label = device
    script = None
    if device == "keyboard" or device.startswith("keys:"):
        # the window's events arrive here, in the main process: run the keyboard/mouse state
        # machine here and hand its samples to the haptic process through a seqlock slot;
        # "keys:PATH" plays a file of timed window events into it (devices.keyboard.KeyScript)
        from devices.keyboard import KeyboardDevice, KeyScript
        from devices.shared import SAMPLE_SIZE, pack_sample
        if device.startswith("keys:"):
            script = KeyScript.load(device[len("keys:"):])
        keyboard = KeyboardDevice()
        keyboard.open()
        slots["input"] = SeqSlot(SAMPLE_SIZE)
        slots["input"].write(pack_sample(keyboard.read(0.0)))
        device = f"shared:{slots['input'].name}"
        if on_frame is not None and hasattr(on_frame, "bind_keyboard"):
            on_frame.bind_keyboard(keyboard)
    if on_frame is not None and hasattr(on_frame, "bind_model"):
        on_frame.bind_model(model)                 # the view draws this world's bodies and shapes
    ring = Ring(TICK.size, rings[0])
    phys_ring = Ring(PHYS.size, rings[1])
    slots["proxy"].write(PROXY.pack(t=0.0, p=p0, R=R0, V=np.zeros(6)))
    stop, go = StopFlag(ctx), ctx.Event()
    started, producers_done = ctx.RawValue("b", 0), ctx.Event()
    status, out, notes = ctx.Queue(), ctx.Queue(), ctx.Queue()
    spec = {k: s.name for k, s in slots.items()}
    spec.update(ring=ring.name, ring_capacity=rings[0], phys_ring=phys_ring.name, phys_ring_capacity=rings[1],
                device=device, device_label=device_label, scenario=scenario_name,
                mass=model.bodies[h].mass, inertia=model.bodies[h].inertia_b.tolist(), p0=list(p0),
                R0=np.asarray(R0).tolist(), hand=h, bodies_p0=state.p_w.tolist(), bodies_R0=state.R_wb.tolist(),
                **_arm_start(model, step_mod.start(model, _with_hand_at(state, h, p0, R0))),
                gains=gains or {}, log=log_path, headless=on_frame is None, realtime=realtime,
                physics_stalls=[list(s) for s in physics_stalls],
                haptic_stalls=[list(s) for s in haptic_stalls],
                logger_stalls=[list(s) for s in logger_stalls],
                startup_delays=dict(startup_delays or {}), spill_limits=dict(spill_limits or {}))
    rt_flag = ctx.Value("b", 0)
    phys = ctx.Process(target=_physics_main, args=(spec, stop, out, status, go, rt_flag),
                       name="tightsim-physics", daemon=True)
    from app.haptic_loop import haptic_main
    hapt = ctx.Process(target=haptic_main, args=(spec, stop, status, go), name="tightsim-haptic", daemon=True)
    logger = None
    log_out = ctx.Queue()
    if log_path:
        from app.logger import logger_main
        logger = ctx.Process(target=logger_main,
                             args=(spec, cfg, stop, go, started, producers_done, rt_flag, notes, log_out),
                             name="tightsim-logger", daemon=True)
        logger.start()
    res = SessionResult()

    def _interrupted(signum, _frame):
        # SIGTERM or Ctrl-C: stop every loop the usual way; the finally below joins them,
        # the logger writes every record and closes the log, the shared memory is unlinked
        res.messages.append(("stop", True, f"interrupted ({signal.Signals(signum).name})"))
        stop.set()
    old = {sig: signal.signal(sig, _interrupted) for sig in (signal.SIGTERM, signal.SIGINT)}
    phys.start()
    hapt.start()
    t0 = time.perf_counter()
    snap_buf, prox_buf = np.empty(slots["snapshot"].size), np.empty(PROXY.size)
    frame = 0
    phys_out = None
    try:
        # the start-up: real time begins only when both loops are ready
        waiting = {"haptic", "physics"}
        deadline = time.perf_counter() + limit
        while waiting and res.fault is None and not stop.is_set():
            if not hapt.is_alive() or not phys.is_alive():
                who = "haptic" if not hapt.is_alive() else "physics"
                res.absorb(status)             # a loop that failed says why (its fault line)
                if res.fault is None and who == "physics":
                    phys_out = _result_of(out, phys, 1.0)
                    if phys_out is not None and "error" in phys_out:
                        res.fault = phys_out["error"]
                        event(logging.getLogger(ROOT), "fault", False, res.fault)
                if res.fault is None:
                    res.fault = f"the {who} loop's process ended during its start-up"
                    event(logging.getLogger(ROOT), "fault", False, res.fault)
                break
            if time.perf_counter() >= deadline:
                res.fault = not_ready_line(waiting, limit)
                event(logging.getLogger(ROOT), "fault", False, res.fault)
                break
            try:
                msg = as_message(status.get(timeout=0.1))
            except queue.Empty:
                continue
            res.messages.append(msg)
            if msg[0] == "ready":
                waiting.discard(msg[2].split()[0])      # "haptic loop ready" / "physics loop ready"
            elif msg[0] == "realtime":
                res.realtime = bool(msg[1])
                rt_flag.value = int(res.realtime)
            elif msg[0] == "fault":
                res.fault = msg[2]
        if not waiting and res.fault is None and not stop.is_set():
            res.started = True
            started.value = 1
            go.set()
        t0 = time.perf_counter()
        while res.started and time.perf_counter() - t0 < duration and not stop.is_set():
            frame += 1                        # absolute frame deadlines; a late frame does not wait
            next_frame = t0 + frame * frame_period
            if next_frame > time.perf_counter():
                sleep_until(next_frame, spin=0.0)
            else:
                frame = int((time.perf_counter() - t0) / frame_period)
            if res.absorb(status):
                stop.set()
            if keyboard is not None:
                if script is not None:
                    script.play(getattr(on_frame, "keys", None) or keyboard, time.perf_counter() - t0)
                slots["input"].write(pack_sample(keyboard.read(time.perf_counter() - t0)))
            _, pv = slots["proxy"].read(prox_buf)
            res.energy = float(PROXY.get(pv, "energy")[0])
            if on_frame is not None:
                _, sv = slots["snapshot"].read(snap_buf)
                if on_frame(sv, pv) is False:
                    break
            if not hapt.is_alive() or not phys.is_alive():
                break
    except KeyboardInterrupt:
        res.messages.append(("stop", True, "interrupted"))
        event(logging.getLogger(ROOT), "stop", True, "interrupted")
    finally:
        stop.set()
        for sig, handler in old.items():
            signal.signal(sig, handler)
        res.wall = time.perf_counter() - t0 if res.started else 0.0
        if on_frame is not None and hasattr(on_frame, "close"):
            on_frame.close()                 # the window goes before the loops are joined
        # the loops stop within a tick or a step, then hand their records over to the logger
        # (which drains meanwhile); a session that never started ends its loops at once
        wait = HANDOVER_S if res.started else ABORTED_JOIN_S
        _end_process(hapt, wait)
        if phys_out is None:
            phys_out = _result_of(out, phys, wait)
        _end_process(phys, wait)
        res.absorb(status)
        if phys_out is not None and "error" in phys_out:
            res.fault = res.fault or phys_out["error"]
        if logger is not None:
            # both loops are gone: whatever they handed over is in the rings; the logger
            # writes it all, then /session_end with why the session ended, and closes the log
            notes.put({"fault": res.fault, "interrupted": any(m[0] == "stop" for m in res.messages)})
            producers_done.set()
            res.log_stats = _result_of(log_out, logger, HANDOVER_S) or {}
            _end_process(logger, 5.0)
        for s in (*slots.values(), ring, phys_ring):
            s.close(unlink=True)
    if phys_out is not None and "error" not in phys_out:
        res.physics = phys_out
        res.figures = _figures(model, scen, phys_out)
    return res


def _haptic_timing(path: str, key: str) -> np.ndarray:
    from sim_core.io.log import read_log
    log = read_log(path)
    return np.array([m[key] for _, m in log.messages("/timing") if m.get("loop") == "haptic"][1:])


def haptic_jitter_from_log(path: str) -> np.ndarray:
    """Every haptic period (s) of a session, from its log's /timing messages."""
    return _haptic_timing(path, "period")


def haptic_work_from_log(path: str) -> np.ndarray:
    """Every haptic tick's work time (s: device read to force write) of a session."""
    return _haptic_timing(path, "work")


def _figures(model, scen, ph: dict) -> dict:
    """Penetration and the task figure of the session's part, from the physics trace (the
    batch run's summary computes the same ones)."""
    from sim_core.scenarios import scenario
    from sim_core.types import State
    tr = ph.get("trace") or {}
    if not tr.get("t") or "final" not in ph:
        return {}
    fin = ph["final"]
    loop = None
    if ph.get("control") is not None and scen.control is not None:     # the task loop's record
        loop = scen.control.start()
        loop.t, loop.force, loop.on = ph["control"]["t"], ph["control"]["force"], ph["control"]["on"]
    run = scenario.RunResult(model=model, scen=scen, t=tr["t"], p_w=[np.array(p) for p in tr["p_w"]],
                             rot_axis=tr["rot"], control=loop,
                             final=State(tr["t"][-1], np.array(fin["p_w"]), np.array(fin["R_wb"]), np.zeros(6)))
    out = {"max_penetration_m": float(max(tr["max_pen"])), "task": scen.task}
    out.update(scenario.task_figures(run))
    return out


def log_line(stats: dict) -> str | None:
    """The summary's line on the log: every record written, or how many were lost and where."""
    if not stats:
        return None
    from sim_core.io.log import describe_losses
    h, p = stats.get("haptic", {}), stats.get("physics", {})
    if stats.get("lost"):
        return f"log records         INCOMPLETE: {describe_losses(stats['lost'])}"
    if not stats.get("complete"):
        return "log records         INCOMPLETE: the logger did not finish (see the log's end)"
    return (f"log records         all written: {h.get('logged', 0)} haptic ticks, "
            f"{p.get('logged', 0)} physics steps")


def summary_lines(res: SessionResult, model_dt: float = 0.01) -> list[str]:
    if not res.started:             # never started: the reason, nothing to measure
        lines = [f"fault               {res.fault}" if res.fault else "session             stopped before it started"]
        return lines
    ph = res.physics
    prio = 'SCHED_FIFO' if res.realtime else 'normal priority (SCHED_FIFO not permitted)'
    lines = [f"session             {res.wall:.2f} s wall, haptic loop {prio}"]
    if ph.get("steps"):
        per = np.array(ph["periods"]) * 1e3
        lines.append(f"physics loop        {ph['steps']} steps, {1e3 / per.mean():.1f} Hz, missed deadline in "
                     f"{100.0 * ph['misses'] / ph['steps']:.2f} % of steps")
    verdict = ("net from the hand: passive" if res.energy >= 0.0 else
               "the hand got net energy back, at most one tick's work at the limits (haptics.coupling)")
    lines.append(f"device port energy  {res.energy:.4f} J ({verdict})")
    fg = res.figures
    if fg:
        lines.append(f"penetration         max {fg['max_penetration_m'] * 1e6:.1f} um (the part, by its detector)")
        from sim_core.scenarios.scenario import task_line
        lines.append(task_line(fg))             # the batch summary's line: figure and target
    line = log_line(res.log_stats)
    if line:
        lines.append(line)
    if res.fault:
        lines.append(f"fault               {res.fault}")
    return lines


