"""Stand-in snapshots for the view's tests, benchmark and screenshots (no physics run).

``bolting_snapshot(t)`` poses the M48 nut on the bolt as in ``config/bolting.toml``: it
starts with its lower face 3 mm above the bolt's end (centre z = 0.132 m), engages, and
then advances one pitch (5 mm) per clockwise turn, one turn per second, for four turns
before starting over.  The contacts are twelve points on the engaged thread flanks
(the baseline's M_c = 12) carrying together about the drive's 14 N axial push, so the
picture is the one the live session shows; the numbers are illustrative, not simulated.
"""
from __future__ import annotations

import math

import numpy as np

from app.view.window import Snapshot
from sim_core.types import WORLD

BOLT_RGBA = (0.66, 0.68, 0.72, 1.0)       # steel
NUT_RGBA = (0.86, 0.66, 0.26, 1.0)        # yellow-zinc plating
PITCH = 0.005                             # m per turn (M48 x 5)
NUT_HALF_HEIGHT = 0.019                   # m
BOLT_TIP_Z = 0.110                        # m
CONTACT_RADIUS = 0.0225                   # m, on the flanks between d1 and d


def rot_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def nut_pose(t: float) -> tuple[np.ndarray, np.ndarray]:
    """Nut centre and rotation at session time t (s): 0.6 s approach, then 4 turns."""
    start_z = BOLT_TIP_Z + 0.003 + NUT_HALF_HEIGHT
    if t < 0.6:
        return np.array([0.0, 0.0, start_z - 0.004 * t / 0.6]), np.eye(3)
    turns = (t - 0.6) % 4.0
    z = start_z - 0.004 - PITCH * turns
    return np.array([0.0, 0.0, z]), rot_z(-2.0 * math.pi * turns)


def bolting_snapshot(t: float = 2.1, with_arm: bool = False) -> Snapshot:
    p_nut, R_nut = nut_pose(t)
    ghost_p = p_nut + np.array([0.0015, -0.001, 0.005])
    ghost_R = rot_z(math.radians(-9.0)) @ R_nut
    engaged_lo = p_nut[2] - NUT_HALF_HEIGHT            # nut's lower face
    engaged_hi = min(BOLT_TIP_Z, p_nut[2] + NUT_HALF_HEIGHT)
    k = np.arange(12)
    ang = -2.0 * math.pi * (t % 1.0) + k * (2.0 * math.pi / 12.0) * 5.0
    zc = np.linspace(engaged_lo + 0.002, max(engaged_hi - 0.002, engaged_lo + 0.003), 12)
    contacts = np.column_stack([CONTACT_RADIUS * np.cos(ang), CONTACT_RADIUS * np.sin(ang), zc])
    # flank normal of a 60 deg thread: 30 deg from the axis, pointing up and inward on the nut
    radial = np.column_stack([np.cos(ang), np.sin(ang), np.zeros(12)])
    n_nut = np.array([0.0, 0.0, 1.0]) * math.cos(math.radians(30)) - radial * math.sin(math.radians(30))
    load = 14.0 / 12.0 * (1.0 + 0.6 * np.sin(3.0 * ang + 7.0 * t))   # N each, about 14 N in all
    forces = n_nut * load[:, None] / math.cos(math.radians(30))
    hud = {"haptic": "1000 Hz", "physics": "100 Hz", "render": "60 fps",
           "force": f"{float(np.linalg.norm(forces.sum(0))):.1f} N", "clock": f"{t:.1f} s",
           "note": "SCHED_FIFO not permitted"}
    arm = []
    if with_arm:                      # a gripper stand-in above the nut, for drawing only
        top = p_nut[2] + NUT_HALF_HEIGHT
        arm = [("box", np.array([0.0, 0.0, top + 0.012]), R_nut, (0.10, 0.03, 0.024)),
               ("capsule", np.array([0.0, 0.0, top + 0.024]), np.array([0.0, 0.0, top + 0.09]),
                0.018)]
    return Snapshot(t=t,
                    parts=[("bolt_M48x5", np.zeros(3), np.eye(3), BOLT_RGBA),
                           ("nut_M48x5", p_nut, R_nut, NUT_RGBA)],
                    ghost=("nut_M48x5", ghost_p, ghost_R), arm=arm,
                    contacts=contacts, forces=forces, hud=hud)


def complete_snapshot(model, state) -> Snapshot:
    """A frame of the complete simulation (a ``types.State`` with the arm): every world-fixed
    shape and every body (their names are their meshes'), and the arm's solids
    (``sim_core.systems.arm.visual``)."""
    from sim_core.systems.arm.system import arm_of, joints
    from sim_core.systems.arm.visual import arm_solids
    parts = [(s.name, s.p_ws, s.R_ws, BOLT_RGBA) for s in model.shapes if s.body == WORLD]
    for b, p, R in zip(model.bodies, state.p_w, state.R_wb):
        parts.append((b.name, p - R @ b.com_part, R, NUT_RGBA))        # from the mesh frame's origin
    return Snapshot(t=state.t, parts=parts, arm=arm_solids(arm_of(model)[1].arm, joints(state)[0]))
