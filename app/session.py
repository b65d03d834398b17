"""An interactive session: the three loops and the logger (ARCHITECTURE sec. 3).

    haptic process  (1 kHz, alone: no GIL-holding neighbour) -- app.haptic_loop
        ^  local contact model (seqlock)      |  proxy pose (seqlock), tick records (ring)
        |                                     v
    physics process (100 Hz pipeline) -- app.physics_loop --- step records (ring) --> logger
        |  snapshot (seqlock)                                                    process (MCAP)
        v
    main process    (render loop ~60 Hz when there is a display; else just waits)

The logger process owns the MCAP log and drains both rings every 20 ms, so neither loop ever
waits on JSON encoding or the disk.  The haptic loop runs SCHED_FIFO at priority 80 and the
physics loop at 60 where permitted: a frame may wait for a physics step, a step not.  Any way the
session ends -- duration reached, window closed, Ctrl-C, a device fault, a crashed loop -- the
stop event is set, the haptic loop commands zero force, and the log is closed.
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
from app.loops import child_signals, sleep_until, try_realtime
from sim_core.io.records import PHYS, PROXY, SNAPSHOT, TICK
from sim_core.io.shm import Ring, SeqSlot, StopFlag

RING_CAPACITY = 8192          # 8 s of haptic ticks; the logger drains every LOG_PERIOD_S
PHYS_RING_CAPACITY = 1024     # 10 s of physics steps
LOG_PERIOD_S = 0.02
PHYSICS_PRIORITY = 60         # SCHED_FIFO priority of the physics process (haptic: 80)
PHYSICS_THREADS = 1          # numba threads: the haptic loop owns the other core
STARTUP_TIMEOUT_S = 120.0     # loading (or, on a fresh machine, compiling) the numba kernels


@dataclass
class SessionResult:
    physics: dict = field(default_factory=dict)      # steps, misses, periods, works, final
    messages: list = field(default_factory=list)     # (kind, ok, text) from the haptic process
    realtime: bool = False
    fault: str | None = None
    energy: float = 0.0
    wall: float = 0.0
    log_stats: dict = field(default_factory=dict)   # logged_steps, dropped_ticks, dropped_steps
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


def _arm_start(model, st) -> dict:
    return {"q0": st.q.tolist(), "qd0": st.qd.tolist()}


def start_state(spec: dict):
    """The session's start: the part at the spec's pose at rest, and the arm (if any) at the
    configuration the main process solved for it (``q0``), so the physics and the log agree."""
    from sim_core.types import State
    return State(0.0, np.array(spec["p0"]), np.array(spec["R0"]), np.zeros(6),
                 q=np.array(spec["q0"], dtype=np.float64), qd=np.array(spec["qd0"], dtype=np.float64))


def _physics_main(spec: dict, stop, out, ready=None, go=None, realtime=None) -> None:
    """Physics process: build the scenario, run the loop until stop, report statistics."""
    child_signals(stop)
    # One numba thread: the haptic loop owns a core, and a parallel kernel whose second
    # thread waits behind it would stall the whole step (measured: 6.6 % missed deadlines).
    import numba

    from app import physics_loop
    from haptics.local_contact import PACKED_SIZE
    from sim_core.scenarios import scenario
    numba.set_num_threads(PHYSICS_THREADS)
    from sim_core import step as step_mod
    from sim_core.types import Inputs
    model, _, cfg = scenario.load(spec["scenario"])
    state = start_state(spec)
    proxy = SeqSlot(PROXY.size, name=spec["proxy"], create=False)
    contact = SeqSlot(PACKED_SIZE, name=spec["contact"], create=False)
    snap = SeqSlot(SNAPSHOT.size, name=spec["snapshot"], create=False)
    phys_ring = Ring(PHYS.size, PHYS_RING_CAPACITY, name=spec["phys_ring"], create=False)
    trace = {"t": [], "p_w": [], "rot": [], "max_pen": [], "mean_pen": [], "force": [], "step": []}
    rot = [0.0]

    def record(before, inp, after, info):
        w_mid = 0.5 * (before.R_wb[0] @ before.V[0, 3:] + after.R_wb[0] @ after.V[0, 3:])
        rot[0] += (after.t - before.t) * float(w_mid[2])
        trace["t"].append(after.t)
        trace["p_w"].append(after.p_w[0].tolist())
        trace["rot"].append(rot[0])
        trace["max_pen"].append(info.max_penetration)
        trace["mean_pen"].append(info.mean_penetration)
        trace["force"].append(float(np.linalg.norm(info.contact_wrench[0, :3])))
        trace["step"].append(sum(info.times.values()))

    try:
        # warm up at rest and in contact (at the scenario's last set pose the part is engaged),
        # so that a cold kernel cache compiles here, before real time, and not at the first
        # contact (measured on a cold cache: peg sessions missed 92-492 of 900 deadlines and
        # jammed, with none missed once warm); the probe steps are thrown away
        from dataclasses import replace as _replace
        scen = scenario.record(cfg)
        for inp in (Inputs(state.p_w[0], state.R_wb[0], np.zeros(3), np.zeros(3)),
                    scenario.inputs_at(scen, scen.duration)):
            probe = _replace(state, p_w=inp.p_set_w.copy(), R_wb=inp.R_set_w.copy())
            step_mod.step(model, probe, inp)
            physics_loop.local_contact_array(*physics_loop.proxy_contacts(model, probe, inp), model.contact.friction)
        if spec.get("realtime", True):
            # after the start-up (numba, scenario), below the haptic loop (80) but above
            # rendering: a frame may wait, a physics step not
            try_realtime(PHYSICS_PRIORITY)
        if ready is not None:
            event(process_logger("physics", ready), "ready", True, "physics loop ready")
            go.wait()
        res = physics_loop.run(model, state, proxy, contact, snap, None, None, stop, on_step=record,
                               stalls=[tuple(s) for s in spec.get("physics_stalls", ())],
                               phys_ring=phys_ring, task=scenario.LiveFigures(model, scen))
        out.put({"steps": res["steps"], "misses": res["misses"], "periods": res["periods"].tolist(),
                 "works": res["works"].tolist(), "trace": trace,
                 "final": {"p_w": res["final"].p_w[0].tolist(), "R_wb": res["final"].R_wb[0].tolist(),
                           "q": res["final"].q.tolist()},
                 "dropped": phys_ring.dropped})
    except Exception as e:  # noqa: BLE001 - report it; the main process ends the session
        import traceback
        out.put({"error": f"physics loop: {type(e).__name__}: {e}", "traceback": traceback.format_exc()})
        stop.set()
    finally:
        for s in (proxy, contact, snap, phys_ring):
            s.close()


def _logger_main(spec: dict, cfg: dict, stop, go, realtime, out) -> None:
    """Logger process: drains the haptic and physics rings into the MCAP log every
    ``LOG_PERIOD_S``, so neither loop ever waits on JSON encoding or the disk."""
    child_signals(stop)
    from app import physics_loop
    from sim_core.io.log import LogWriter
    ticks = Ring(TICK.size, RING_CAPACITY, name=spec["ring"], create=False)
    phys = Ring(PHYS.size, PHYS_RING_CAPACITY, name=spec["phys_ring"], create=False)
    log = LogWriter(spec["log"])
    n = 0
    try:
        log.put("/config", 0.0, cfg)
        log.part_state(start_state(spec))
        go.wait()
        log.put("/session", 0.0, {"device": spec["device_label"], "sched_fifo": bool(realtime.value),
                                  "headless": spec.get("headless", True), "physics": "step"})
        parent = os.getppid()
        while True:
            done = stop.is_set() or os.getppid() != parent   # session died: close the log
            physics_loop.log_ticks(log, ticks.drain())
            for r in phys.drain():
                log.physics_record(r)
                n += 1
            log.flush()
            if done:
                break
            time.sleep(LOG_PERIOD_S)
    finally:
        log.close()
        out.put({"logged_steps": n, "dropped_ticks": ticks.dropped, "dropped_steps": phys.dropped})
        ticks.close()
        phys.close()


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


def run_session(scenario_name: str, device: str, duration: float, log_path: str | None = None,
                gains: dict | None = None, on_frame=None, frame_period: float = 1 / 60,
                realtime: bool = True, physics_stalls=(), haptic_stalls=()) -> SessionResult:
    """Start the loops, let them run `duration` seconds (or until on_frame returns False),
    stop them, and gather their statistics.  ``on_frame(snapshot, proxy)`` is the render
    loop's body when there is a view (called about every ``frame_period``).
    ``physics_stalls`` / ``haptic_stalls``: [(t s, length s), ...] fault injection -- the loop
    freezes for `length` once its clock passes `t` (the robustness tests)."""
    from devices.base import open_device
    from haptics.local_contact import PACKED_SIZE
    from sim_core import step as step_mod
    from sim_core.scenarios import scenario
    from sim_core.types import State
    model, state, cfg = scenario.load(scenario_name)
    scen = scenario.record(cfg)
    p0, R0 = state.p_w[0], state.R_wb[0]
    if device.startswith("scripted:"):
        dev = open_device(device)
        p0 = scripted_start(scen, R0, dev.read(0.0).p)
        dev.close()
    ctx = mp.get_context("spawn")
    slots = {"proxy": SeqSlot(PROXY.size), "contact": SeqSlot(PACKED_SIZE), "snapshot": SeqSlot(SNAPSHOT.size)}
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
    ring = Ring(TICK.size, RING_CAPACITY)
    phys_ring = Ring(PHYS.size, PHYS_RING_CAPACITY)
    slots["proxy"].write(PROXY.pack(t=0.0, p=p0, R=R0, V=np.zeros(6)))
    stop, go = StopFlag(ctx), ctx.Event()
    status, out = ctx.Queue(), ctx.Queue()
    spec = {k: s.name for k, s in slots.items()}
    spec.update(ring=ring.name, ring_capacity=RING_CAPACITY, phys_ring=phys_ring.name, device=device,
                device_label=device_label, scenario=scenario_name,
                mass=model.bodies[0].mass, inertia=model.bodies[0].inertia_b.tolist(), p0=list(p0),
                R0=np.asarray(R0).tolist(), **_arm_start(model, step_mod.start(model, State(0.0, p0, R0, np.zeros(6)))),
                gains=gains or {}, log=log_path, headless=on_frame is None, realtime=realtime,
                physics_stalls=[list(s) for s in physics_stalls],
                haptic_stalls=[list(s) for s in haptic_stalls])
    rt_flag = ctx.Value("b", 0)
    phys = ctx.Process(target=_physics_main, args=(spec, stop, out, status, go, rt_flag),
                       name="tightsim-physics", daemon=True)
    from app.haptic_loop import haptic_main
    hapt = ctx.Process(target=haptic_main, args=(spec, stop, status, go), name="tightsim-haptic", daemon=True)
    logger = None
    log_out = ctx.Queue()
    if log_path:
        logger = ctx.Process(target=_logger_main, args=(spec, cfg, stop, go, rt_flag, log_out),
                             name="tightsim-logger", daemon=True)
        logger.start()
    res = SessionResult()

    def _interrupted(signum, _frame):
        # SIGTERM or Ctrl-C: stop every loop the usual way; the finally below joins them,
        # closes the log and unlinks the shared memory
        res.messages.append(("stop", True, f"interrupted ({signal.Signals(signum).name})"))
        stop.set()
    old = {sig: signal.signal(sig, _interrupted) for sig in (signal.SIGTERM, signal.SIGINT)}
    phys.start()
    hapt.start()
    ready = 0
    deadline = time.perf_counter() + STARTUP_TIMEOUT_S
    while (ready < 2 and time.perf_counter() < deadline and hapt.is_alive() and phys.is_alive()
           and not stop.is_set()):
        try:
            msg = as_message(status.get(timeout=0.1))
        except queue.Empty:
            continue
        res.messages.append(msg)
        if msg[0] == "ready":
            ready += 1
        elif msg[0] == "realtime":
            res.realtime = bool(msg[1])
            rt_flag.value = int(res.realtime)
        elif msg[0] == "fault":
            res.fault = msg[2]
            break
    go.set()
    t0 = time.perf_counter()
    snap_buf, prox_buf = np.empty(SNAPSHOT.size), np.empty(PROXY.size)
    frame = 0
    try:
        while time.perf_counter() - t0 < duration and not stop.is_set():
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
        res.wall = time.perf_counter() - t0
        if on_frame is not None and hasattr(on_frame, "close"):
            on_frame.close()                 # the window goes before the loops are joined
        hapt.join(timeout=5)
        phys_out = None
        try:
            phys_out = out.get(timeout=30)
        except queue.Empty:
            pass
        phys.join(timeout=5)
        if logger is not None:
            try:
                res.log_stats = log_out.get(timeout=30)
            except queue.Empty:
                pass
            logger.join(timeout=5)
        for p in (hapt, phys, logger):
            if p is not None and p.is_alive():
                p.terminate()
        res.absorb(status)
        for s in (*slots.values(), ring, phys_ring):
            s.close(unlink=True)
    if phys_out is not None:
        if "error" in phys_out:
            res.fault = phys_out["error"]
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
    run = scenario.RunResult(model=model, scen=scen, t=tr["t"], p_w=[np.array(p) for p in tr["p_w"]],
                             rot_axis=tr["rot"],
                             final=State(tr["t"][-1], np.array(fin["p_w"]), np.array(fin["R_wb"]), np.zeros(6)))
    out = {"max_penetration_m": float(max(tr["max_pen"])), "task": scen.task}
    out.update(scenario.task_figures(run))
    return out


def summary_lines(res: SessionResult, model_dt: float = 0.01) -> list[str]:
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
    if res.fault:
        lines.append(f"fault               {res.fault}")
    return lines


