"""The render loop's body for a session: shared-memory records -> ``window.Snapshot`` -> frame.

Reads the physics snapshot (every body of the world, ``records.snapshot_layout``, the clustered
contacts and their forces) and the haptic proxy record (the proxy's pose, drawn as a ghost of
the held part ``Model.hand_body``, device force, loop health) and draws them, every body's mesh
at its pose and every fixed shape's at its own (``ViewWorld``),
with the HUD: haptic, physics and render rates, device force, the session clock, the live
task figure (advance per revolution, insertion depth, or seating: computed in the physics
process by ``scenario.LiveFigures``, the batch summary's ``task_figures``), and a note when
the haptic loop does not run SCHED_FIFO.

The session's keys (:class:`SessionKeys`, listed in the view's help, ``h`` or F1): Escape
ends the session -- the window closes and the session stops the usual way (zero force, the
log closed, the summary printed).  With the keyboard device, ``r`` puts the proxy, and with it
the part, back at its start pose on the axis.  The keyboard device's own reset only returns
the *handle* to where it started, and after a clutch (indexing) the workspace map no longer
takes that handle position to the start: measured, a 28 mm clutch move left the part 28 mm off
the axis.  So ``r`` sends the handle to where the clutch's map takes it to the start, and lets
go of a part that something holds (``SessionKeys``).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from sim_core.io.records import MAX_CONTACTS, PROXY, snapshot_layout
from sim_core.types import WORLD

STATIC_RGBA = (0.66, 0.68, 0.72, 1.0)
MOVING_RGBA = (0.86, 0.66, 0.26, 1.0)

KEYBOARD_HELP = [("keyboard device", ""),
                 ("left drag", "move in the horizontal plane"),
                 ("scroll", "move along the axis (z)"),
                 ("e, right arrow", "turn clockwise seen from above"),
                 ("q, left arrow", "turn counter-clockwise"),
                 ("space, held", "clutch: the mouse moves alone"),
                 ("r", "back to the start (lets go if held)")]
SESSION_HELP = [("session", ""), ("Esc", "end the session")]

RESET_FRAMES = 300         # frames (5 s at 60 Hz) the reset waits for the part to come back
RESET_TOLERANCE = 0.05e-3  # m: back at the start
RESET_SETTLED = 0.01e-3    # m per frame: at rest (0.6 mm/s at 60 Hz); held away if not back by then
HAND_LEAD = 3e-3           # m: in contact, the keyboard's handle runs at most this far ahead of the
                           # proxy (6 N of the keyboard's 2000 N/m coupling: a firm press, not a wound spring)


def _yaw(R: np.ndarray) -> float:
    return math.atan2(R[1, 0], R[0, 0])


class SessionKeys:
    """The keys the session itself answers (Escape; ``r`` with the keyboard device); every
    other key goes on to the device.  ``frame(p, R)`` once a frame with the proxy's pose.

    ``r``: the keyboard's handle goes back to the position its clutch map takes to the start
    (``KeyboardDevice.reset_position``) and its yaw turns back by the proxy's turn (the
    shortest way); the proxy, and with it the part, follows.  If the part cannot follow -- the
    nut on the thread -- then once proxy and handle have come to rest (or after
    ``RESET_FRAMES``) the handle is put on the proxy: the part stays where it is held, with no
    force on it.  (Before, ``r`` kept moving the handle by the proxy's offset from the start
    while the thread held the nut: the handle ran to the workspace edge and 20 N stayed on.)"""

    def __init__(self, keyboard=None):
        self.keyboard = keyboard
        self.quit = False
        self.start: tuple | None = None          # the proxy's first pose: the scenario's start
        self.now: tuple | None = None            # its latest pose (p_w, R_wb)
        self.resetting = 0                       # frames of the reset left
        self.released = False                    # the last reset let go of a held part

    def on_key(self, key: str, pressed: bool) -> None:
        if key == "escape":
            self.quit = self.quit or pressed
        elif key == "r" and self.keyboard is not None:
            if pressed and self.start is not None:
                self.resetting = RESET_FRAMES
                self.released = False
                self._back_to_start()
        elif self.keyboard is not None:
            self.keyboard.on_key(key, pressed)

    def frame(self, p_w: np.ndarray, R_wb: np.ndarray, contact=None) -> None:
        """`contact`: the proxy's contact wrench (6,) (the haptic record's ``proxy_contact``),
        none: not known."""
        before = self.now
        self.now = (np.asarray(p_w, float).copy(), np.asarray(R_wb, float).copy())
        touching = contact is not None and bool(np.any(np.asarray(contact, float)[:3] != 0.0))
        if hasattr(self.keyboard, "touch"):
            self.keyboard.touch(touching)
        if self.start is None:
            self.start = self.now
        else:
            self._hold_the_hand(touching and not self.resetting)
        if self.resetting:
            self.resetting -= 1
            kb = self.keyboard
            if np.linalg.norm(self.start[0] - self.now[0]) < RESET_TOLERANCE:
                self.resetting = 0
            elif self.resetting == 0 or (np.linalg.norm(self.now[0] - before[0]) < RESET_SETTLED
                                         and np.linalg.norm(kb.target - kb.p) < RESET_SETTLED):
                self._let_go()

    def _hold_the_hand(self, touching: bool) -> None:
        """A hand on a haptic device is stopped by the contact it feels; the keyboard's handle
        was not: it glided on while the proxy sat on a chamfer, the coupling wound up and, once
        the proxy slid off, threw it in (the peg's part at 113 mm/s, the docking plate 221 um
        into its holes, issue 23).  So in contact the handle runs at most ``HAND_LEAD`` ahead
        of the proxy: its glide makes no way along the lead beyond that
        (``KeyboardDevice.lead_by``); not while the clutch is held."""
        kb = self.keyboard
        if kb is None or not hasattr(kb, "lead_by"):
            return
        lead = None
        if touching and not kb.buttons:
            lead = (self.start[0] + (kb.p - kb.start) - kb.clutch_shift) - self.now[0]
        kb.lead_by(lead, HAND_LEAD)

    def _back_to_start(self) -> None:
        kb = self.keyboard
        kb.reset_position()
        kb.yaw += math.remainder(_yaw(self.start[1]) - _yaw(self.now[1]), 2.0 * math.pi)

    def _let_go(self) -> None:
        """The part is held away from the start: put the handle on the proxy (the map is
        scale 1, device axes = world axes), so the coupling pulls no more."""
        from devices.base import clamp_to_ball
        kb = self.keyboard
        (p0, R0), (p, R) = self.start, self.now
        kb.target = clamp_to_ball(kb.target + (p - p0), kb.capability.workspace_radius)
        kb.yaw += math.remainder(_yaw(R) - _yaw(R0), 2.0 * math.pi)
        self.resetting = 0
        self.released = True


@dataclass(frozen=True)
class ViewWorld:
    """What the view draws of a world besides the snapshot's poses: each body's mesh and where
    its centre of mass sits in the mesh frame (the records hold COM poses; a mesh is drawn from
    its origin), each fixed shape's mesh and pose, and the body the hand holds (the ghost's)."""
    bodies: tuple                  # ((mesh name, com_part (3,) m), ...) per body of the model
    shapes: tuple                  # ((mesh name, p_ws (3,) m, R_ws (3,3)), ...) per fixed shape
    hand: int = 0                  # index in bodies: Model.hand_body
    systems: tuple = ()            # ((system, its numbers' slice of the snapshot's ``shape``), ...): the
                                   # systems the view draws deforming (``view_parts``: the snap socket)
    shape: int = 0                 # the snapshot's ``shape`` size (``systems.base.view_size``)


def view_world(model) -> ViewWorld:
    """The ``ViewWorld`` of a ``types.Model`` (mesh names are the bodies' and shapes' names; a
    system's, its ``VIEW_NAME``)."""
    drawn, o = [], 0
    for s in model.systems:
        n = int(getattr(s, "view_size", 0))
        if n:
            drawn.append((s, slice(o, o + n)))
            o += n
    return ViewWorld(bodies=tuple((b.name, np.asarray(b.com_part, float)) for b in model.bodies),
                     shapes=tuple((s.name, np.asarray(s.p_ws, float), np.asarray(s.R_ws, float))
                                  for s in model.shapes if s.body == WORLD),
                     hand=int(model.hand_body), systems=tuple(drawn), shape=o)


def snapshot(sv: np.ndarray, pv: np.ndarray, world: ViewWorld, render_fps: float, arm=None):
    """The frame of a physics snapshot and a proxy record: every fixed shape, every body at
    the snapshot's pose, the ghost of the held body at the proxy's; `arm`
    (``systems.arm.arm.Arm``): draw it at the configuration the physics has it in."""
    from app.view.window import Snapshot
    lay = snapshot_layout(len(world.bodies), world.shape)
    n = int(lay.get(sv, "n")[0])
    x = lay.get(sv, "x").reshape(MAX_CONTACTS, 3)[:n]
    f = lay.get(sv, "f").reshape(MAX_CONTACTS, 3)[:n]
    period = float(PROXY.get(pv, "period")[0])
    f_dev = PROXY.get(pv, "device_wrench")[:3]
    hud = {
        "haptic": f"{1.0 / period:.0f} Hz" if period > 0 else "-",
        "physics": f"{lay.get(sv, 'rate')[0]:.0f} Hz, step {lay.get(sv, 'step')[0] * 1e3:.1f} ms",
        "render": f"{render_fps:.0f} fps",
        "force": f"{np.linalg.norm(f_dev):.2f} N",
        "clock": f"{PROXY.get(pv, 't')[0]:.1f} s",
    }
    from sim_core.scenarios.scenario import hud_text
    task = hud_text(*(float(lay.get(sv, k)[0]) for k in ("task", "task_value", "task_aux", "task_met")))
    if task:
        hud["task"] = task
    if PROXY.get(pv, "realtime")[0] == 0.0:
        hud["note"] = "haptic loop without SCHED_FIFO (not permitted)"
    P = lay.get(sv, "p").reshape(-1, 3)
    R = lay.get(sv, "R").reshape(-1, 3, 3)
    parts = [(name, p, R_ws, STATIC_RGBA) for name, p, R_ws in world.shapes]
    deformed = {}
    for system, at in world.systems:                    # drawn where the physics has bent them
        for name, V in system.view_parts(lay.get(sv, "shape")[at]).items():
            parts.append((name, np.zeros(3), np.eye(3), STATIC_RGBA))
            deformed[name] = V
    for (name, com), p_b, R_b in zip(world.bodies, P, R):
        parts.append((name, p_b - R_b @ com, R_b.copy(), MOVING_RGBA))
    held, com = world.bodies[world.hand]
    R_ghost = PROXY.get(pv, "R").reshape(3, 3).copy()
    p_ghost = PROXY.get(pv, "p") - R_ghost @ com
    solids = []
    nq = int(lay.get(sv, "nq")[0])
    if arm is not None and nq:
        from sim_core.systems.arm.visual import arm_solids
        solids = arm_solids(arm, lay.get(sv, "q")[:nq].copy())
    return Snapshot(t=float(PROXY.get(pv, "t")[0]), parts=parts, ghost=(held, p_ghost, R_ghost),
                    contacts=x.copy(), forces=f.copy(), hud=hud, arm=solids, shapes=deformed)


def make_renderer(scenario_name: str, width: int = 1280, height: int = 720, visible: bool = True,
                  model=None):
    """An ``on_frame(snapshot_record, proxy_record)`` for ``session.run_session``; returns
    False when the window is closed.  It draws the world of `model` (``on_frame.bind_model``
    gives it later, as the session does; none by the first frame: the scenario's, built)."""
    from sim_core import config
    from sim_core.paths import scenario_path
    from sim_core.scenarios import tasks
    cfg = config.load(scenario_path(scenario_name))
    arm = None
    if cfg["arm"]["robot"] == "panda":          # the view draws the arm where the physics has it
        from sim_core.systems.arm.arm import Arm
        arm = Arm(gripper_joint=cfg["arm"]["gripper"] == "turning", base_p=np.array(cfg["arm"]["base_position"]))
    state = {"view": None, "last": None, "fps": 0.0, "keyboard": None,
             "world": None if model is None else view_world(model)}
    meshes = {}
    task = tasks.task(cfg)
    if task.meshes is not None:                 # generated parts (docking: from the [docking] geometry)
        meshes = task.meshes(cfg, str(scenario_path(scenario_name)))

    def on_frame(sv, pv):
        from app.view.window import View
        if state["view"] is None:
            view = state["view"] = on_frame.view = View(width, height, visible=visible, direct=True)
            for name, m in meshes.items():
                view.add_mesh(name, m.vertices, m.faces)
            kb = state["keyboard"]
            keys = on_frame.keys = SessionKeys(kb)
            view.on_key = keys.on_key
            view.help_keys = (KEYBOARD_HELP if kb is not None else []) + SESSION_HELP
            if kb is not None:          # mouse drags, scroll and keys drive the proxy
                view.on_drag, view.on_scroll = kb.on_drag, kb.on_scroll
        view = state["view"]
        if state["world"] is None:
            from sim_core.scenarios import scenario
            bind_model(scenario.load(scenario_name)[0])
        on_frame.keys.frame(PROXY.get(pv, "p"), PROXY.get(pv, "R").reshape(3, 3), PROXY.get(pv, "proxy_contact"))
        now = time.perf_counter()
        if state["last"] is not None:
            dt = now - state["last"]
            state["fps"] = 0.9 * state["fps"] + 0.1 / dt if state["fps"] else 1.0 / dt
        state["last"] = now
        view.poll()
        if view.close_requested or on_frame.keys.quit:
            view.close()
            return False
        view.draw(snapshot(sv, pv, state["world"], state["fps"], arm))
        return True

    def bind_keyboard(kb):
        state["keyboard"] = kb

    def bind_model(m):
        state["world"] = view_world(m)

    def close():
        if state["view"] is not None and not state["view"].close_requested:
            state["view"].close()
        state["view"] = None

    on_frame.bind_keyboard = bind_keyboard
    on_frame.bind_model = bind_model
    on_frame.close = close
    return on_frame
