"""The render loop's body for a session: shared-memory records -> ``view.Snapshot`` -> frame.

Reads the physics snapshot (simulated part, clustered contacts and their forces) and the
haptic proxy record (proxy pose drawn as a ghost, device force, loop health) and draws them
with the HUD: haptic, physics and render rates, device force, the session clock, and a note
when the haptic loop does not run SCHED_FIFO.
"""
from __future__ import annotations

import time

import numpy as np

from sim_core.io.records import MAX_CONTACTS, PROXY, SNAPSHOT

STATIC_RGBA = (0.66, 0.68, 0.72, 1.0)
MOVING_RGBA = (0.86, 0.66, 0.26, 1.0)


def snapshot(sv: np.ndarray, pv: np.ndarray, static: str, moving: str, render_fps: float, arm=None):
    """The frame of a physics snapshot and a proxy record; `arm` (``robot.arm.Arm``): draw it
    at the configuration the physics has it in."""
    from app.view.window import Snapshot
    n = int(SNAPSHOT.get(sv, "n")[0])
    x = SNAPSHOT.get(sv, "x").reshape(MAX_CONTACTS, 3)[:n]
    f = SNAPSHOT.get(sv, "f").reshape(MAX_CONTACTS, 3)[:n]
    period = float(PROXY.get(pv, "period")[0])
    f_dev = PROXY.get(pv, "device_wrench")[:3]
    hud = {
        "haptic": f"{1.0 / period:.0f} Hz" if period > 0 else "-",
        "physics": f"{SNAPSHOT.get(sv, 'rate')[0]:.0f} Hz, step {SNAPSHOT.get(sv, 'step')[0] * 1e3:.1f} ms",
        "render": f"{render_fps:.0f} fps",
        "force": f"{np.linalg.norm(f_dev):.2f} N",
        "clock": f"{PROXY.get(pv, 't')[0]:.1f} s",
    }
    if PROXY.get(pv, "realtime")[0] == 0.0:
        hud["note"] = "haptic loop without SCHED_FIFO (not permitted)"
    p_part = SNAPSHOT.get(sv, "p").copy()
    R_part = SNAPSHOT.get(sv, "R").reshape(3, 3).copy()
    solids = []
    nq = int(SNAPSHOT.get(sv, "nq")[0])
    if arm is not None and nq:
        from sim_core.systems.arm.visual import arm_solids
        solids = arm_solids(arm, SNAPSHOT.get(sv, "q")[:nq].copy())
    return Snapshot(t=float(PROXY.get(pv, "t")[0]),
                    parts=[(static, np.zeros(3), np.eye(3), STATIC_RGBA), (moving, p_part, R_part, MOVING_RGBA)],
                    ghost=(moving, PROXY.get(pv, "p").copy(), PROXY.get(pv, "R").reshape(3, 3).copy()),
                    contacts=x.copy(), forces=f.copy(), hud=hud, arm=solids)


def make_renderer(scenario_name: str, width: int = 1280, height: int = 720, visible: bool = True):
    """An ``on_frame(snapshot_record, proxy_record)`` for ``session.run_session``; returns
    False when the window is closed."""
    from sim_core import config
    from sim_core.paths import scenario_path
    cfg = config.load(scenario_path(scenario_name))
    static, moving = cfg["parts"]["static"], cfg["parts"]["moving"]
    arm = None
    if cfg["arm"]["robot"] == "panda":          # the view draws the arm where the physics has it
        from sim_core.systems.arm.arm import Arm
        arm = Arm(gripper_joint=cfg["arm"]["gripper"] == "turning", base_p=np.array(cfg["arm"]["base_position"]))
    state = {"view": None, "last": None, "fps": 0.0, "keyboard": None}

    def on_frame(sv, pv):
        from app.view.window import View
        if state["view"] is None:
            state["view"] = on_frame.view = View(width, height, visible=visible, direct=True)
            kb = state["keyboard"]
            if kb is not None:          # mouse drags, scroll and keys drive the proxy
                state["view"].on_drag, state["view"].on_scroll, state["view"].on_key = \
                    kb.on_drag, kb.on_scroll, kb.on_key
        view = state["view"]
        now = time.perf_counter()
        if state["last"] is not None:
            dt = now - state["last"]
            state["fps"] = 0.9 * state["fps"] + 0.1 / dt if state["fps"] else 1.0 / dt
        state["last"] = now
        view.poll()
        if view.close_requested:
            view.close()
            return False
        view.draw(snapshot(sv, pv, static, moving, state["fps"], arm))
        return True

    def bind_keyboard(kb):
        state["keyboard"] = kb

    def close():
        if state["view"] is not None and not state["view"].close_requested:
            state["view"].close()
        state["view"] = None

    on_frame.bind_keyboard = bind_keyboard
    on_frame.close = close
    return on_frame
