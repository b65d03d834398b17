"""The arm's visual model: its links as simple solids sized from the kinematics, in the
view's format (``app.view.window.Snapshot.arm``).  A capsule joins each pair of consecutive joint
origins that lie apart (the DH offsets), with Panda-like radii shrinking toward the wrist;
the gripper is a box at the flange.  Meshes a user supplies may replace them in the view.
"""
from __future__ import annotations

import numpy as np

# m: radius of the capsule ending at joint i+1 (base ... wrist), roughly the Panda's housings
RADII = (0.065, 0.065, 0.06, 0.055, 0.055, 0.045, 0.045, 0.04)
LINK_RGBA = (0.90, 0.91, 0.93, 1.0)       # the Panda's white
GRIPPER_RGBA = (0.25, 0.27, 0.30, 0.45)   # dark gripper, translucent: the part it holds shows through
GRIPPER_BOX = (0.09, 0.06, 0.10)          # m, edge lengths (x, y, along the tool axis)


def arm_solids(arm, q) -> list:
    """Solids of the arm at configuration q (world frame)."""
    pin = arm.pin
    pin.framesForwardKinematics(arm.model, arm.data, q)
    pts = [arm.base_p.copy()]
    for j in range(1, 8):                       # the 7 arm joints' origins
        pts.append(arm.base_R @ arm.data.oMi[j].translation + arm.base_p)
    R_f, p_f = arm.tcp_pose(q, arm.flange)
    pts.append(p_f)
    out = []
    for i in range(len(pts) - 1):
        a, b = pts[i], pts[i + 1]
        if np.linalg.norm(b - a) > 1e-4:
            out.append(("capsule", a, b, RADII[min(i, len(RADII) - 1)], LINK_RGBA))
    R_t, p_t = arm.tcp_pose(q)
    out.append(("box", 0.5 * (p_f + p_t) - 0.5 * (p_t - p_f) * 0.2, R_t, GRIPPER_BOX, GRIPPER_RGBA))
    return out
