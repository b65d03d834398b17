"""A keyboard session on a simulated clock: the session's three loops in one thread, in lockstep.

The live session (``app.session``) runs the haptic loop (1 kHz), the physics loop (100 Hz) and
the main process's frames (60 Hz: the window forwards its events to the keyboard driver, which
publishes a sample for the haptic loop) in three processes on the wall clock.  This runs the
same pieces -- ``KeyboardDevice`` fed through ``SessionKeys`` as the window feeds it, its
samples read back through the ``shared:`` device of the haptic process, ``haptic_loop.tick``,
``sim_core.step.step`` followed by ``physics_loop.proxy_contacts`` and
``local_contact_array`` -- with perfect timing: ten haptic ticks per physics step, a frame
every ``frame_period``.  The result does not depend on the machine's load, so a test can hold a
keyboard session to bounds (tests/app/test_keyboard_sessions.py); the live session is tried on
the same event scripts by ``run_session(device="keys:...")``.

Order per haptic tick k (time k T): a frame is due -> play the script's events up to now,
``SessionKeys.frame`` with the proxy pose, ``KeyboardDevice.read``, publish the sample; then
the haptic tick; every tenth tick the physics step on the proxy just published, and its local
contact model for the next tick (what the live loops do when the physics is on time).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

T_HAPTIC = 1e-3
PHYSICS_TICKS = 10


@dataclass
class Trace:
    """Per physics step (100 Hz) unless said otherwise."""
    t: list = field(default_factory=list)            # s
    part_p: list = field(default_factory=list)       # (3,) m, part COM
    part_R: list = field(default_factory=list)       # (3,3)
    part_speed: list = field(default_factory=list)   # m/s, |v| of the part's COM
    part_pen: list = field(default_factory=list)     # m, the part's deepest penetration (its detector)
    contact_force: list = field(default_factory=list)  # N, |f| of the part's contact wrench
    proxy_p: list = field(default_factory=list)      # (3,) m
    proxy_R: list = field(default_factory=list)      # (3,3)
    proxy_gap: list = field(default_factory=list)    # m, the proxy's smallest local gap over the step's ticks
    device_force: list = field(default_factory=list)  # N, |f| the coupling sent (the HUD's figure), per step
    handle_p: list = field(default_factory=list)     # (3,) m, the keyboard handle (device frame)

    def arrays(self) -> dict:
        return {k: np.array(v) for k, v in self.__dict__.items()}


def run_lockstep(scenario_name: str, duration: float, events=(), frame_period: float = 1 / 60,
                 gains: dict | None = None, keyboard_kw: dict | None = None,
                 physics_ticks: int = PHYSICS_TICKS) -> tuple[Trace, dict]:
    """Run a keyboard session for `duration` simulated seconds with the script `events`
    (``devices.keyboard.KeyScript`` or its list of (t, kind, *args)).  Returns the trace and
    the last objects (``model``, ``keyboard``, ``keys``, ``coupling``, ``proxy``, ``state``).
    ``physics_ticks``: haptic ticks per physics step (10: on time; 20: a physics loop that
    takes twice its period, as a busy machine makes it -- each step still advances 10 ms)."""
    from app import physics_loop
    from app.haptic_loop import make_coupling, tick
    from app.view.session import SessionKeys
    from devices.base import open_device
    from devices.keyboard import KeyboardDevice, KeyScript
    from devices.shared import SAMPLE_SIZE, pack_sample
    from haptics.local_contact import LocalContact
    from haptics.proxy import Proxy
    from sim_core import step as step_mod
    from sim_core.io.shm import SeqSlot
    from sim_core.scenarios import scenario
    from sim_core.types import State

    model, state, cfg = scenario.load(scenario_name)
    spec = scenario.record(cfg).control
    control = None if spec is None else spec.start()      # the task's loop, as the session's physics runs it
    h = model.hand_body                                   # the part the hand holds
    p0, R0 = state.p_w[h].copy(), state.R_wb[h].copy()
    state = step_mod.start(model, State(0.0, state.p_w.copy(), state.R_wb.copy(), np.zeros((model.n_bodies, 6))))
    script = events if isinstance(events, KeyScript) else KeyScript(events)
    kb = KeyboardDevice(**(keyboard_kw or {}))
    kb.open()
    keys = SessionKeys(kb)
    slot = SeqSlot(SAMPLE_SIZE)
    dev = None
    tr = Trace()
    try:
        slot.write(pack_sample(kb.read(0.0)))
        dev = open_device(f"shared:{slot.name}")
        coupling = make_coupling(dev.capability, gains or {})
        proxy = Proxy(model.bodies[h].mass, model.bodies[h].inertia_b, p0, R0)
        lc = None
        next_frame = 0.0
        gap, fmax = np.inf, 0.0
        n = int(round(duration / T_HAPTIC))
        for k in range(1, n + 1):
            now = k * T_HAPTIC
            if now >= next_frame - 1e-12:
                next_frame += frame_period
                script.play(keys, now)
                keys.frame(proxy.p_w, proxy.R_wb, proxy.contact_wrench)
                slot.write(pack_sample(kb.read(now)))
            _, info = tick(dev, coupling, proxy, lc, now, 1.0)
            gap = min(gap, info.min_gap)
            fmax = max(fmax, float(np.linalg.norm(dev.last_wrench[:3])))
            if k % physics_ticks == 0:
                V = proxy.V
                inp = physics_loop.held_inputs(model, state, proxy.p_w, proxy.R_wb, V[:3], proxy.R_wb @ V[3:])
                before = state
                held = inp if control is None else control.hand(model, state, inp, model.dt)
                state, sinfo = step_mod.step(model, state, held)
                if control is not None:
                    control.measure(state, sinfo)
                at, found = physics_loop.proxy_contacts(model, before, inp)
                lc = LocalContact.from_array(physics_loop.local_contact_array(at, found, model, h, state))
                tr.t.append(state.t)
                tr.part_p.append(state.p_w[h].copy())
                tr.part_R.append(state.R_wb[h].copy())
                tr.part_speed.append(float(np.linalg.norm(state.V[h, :3])))
                tr.part_pen.append(float(sinfo.max_penetration))
                tr.contact_force.append(float(np.linalg.norm(sinfo.contact_wrench[h, :3])))
                tr.proxy_p.append(proxy.p_w.copy())
                tr.proxy_R.append(proxy.R_wb.copy())
                tr.proxy_gap.append(gap)
                tr.device_force.append(fmax)
                tr.handle_p.append(kb.p.copy())
                gap, fmax = np.inf, 0.0
    finally:
        if dev is not None:
            dev.close()
        slot.close(unlink=True)
    return tr, {"model": model, "keyboard": kb, "keys": keys, "coupling": coupling, "proxy": proxy,
                "state": state, "control": control}
