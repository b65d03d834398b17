"""What every scenario builder shares: the set rotation of a waypoint, the [contact] table as
the world's parameters, the [drive] gains, and the Panda of an [arm] table holding a body.

A leaf of the scenarios package: it imports no other scenario module, so every builder
(``mesh_parts``, ``docking``) and the table of builders (``tasks``) can import it without a
cycle (tests/sim_core/scenarios/test_scenario_table.py checks the package's import graph).
"""
from __future__ import annotations

import numpy as np

from sim_core.math.so3 import rot_axis_angle
from sim_core.types import ContactParams


def set_rotation(yaw: float, tilt_x: float, tilt_y: float) -> np.ndarray:
    """R = Rz(yaw) Ry(tilt_y) Rx(tilt_x) (radians)."""
    return (rot_axis_angle([0, 0, 1], yaw) @ rot_axis_angle([0, 1, 0], tilt_y)
            @ rot_axis_angle([1, 0, 0], tilt_x))


def contact_params(c: dict) -> ContactParams:
    """The [contact] table of a validated config as the solver's parameters."""
    return ContactParams(friction=c["friction"], clusters=c["clusters"], band=c["band"],
                         broadphase_margin=c["broadphase_margin"], normal_scale=c["normal_scale"],
                         penetration_gain=c["penetration_gain"], pgs_iterations=c["pgs_iterations"],
                         pgs_tolerance=c["pgs_tolerance"], solver=c["solver"],
                         sor_relaxation=c["sor_relaxation"], sor_iterations=c["sor_iterations"],
                         sor_tolerance=c["sor_tolerance"], clustering=c["clustering"],
                         fallback_depth=c["fallback_depth"], speculative=c["speculative"], law=c["law"],
                         island_solver=c["island_solver"], subsystems=c["subsystems"],
                         subsystem_split=c["subsystem_split"],
                         island_iterations=c["island_iterations"], island_tolerance=c["island_tolerance"],
                         regulation_xi=c["regulation_xi"], regulation_alpha=c["regulation_alpha"],
                         friction_exponent=c["friction_exponent"], impact_splits=c["impact_splits"],
                         impact_tolerance=c["impact_tolerance"], turn_passes=c["turn_passes"])


def drive_gains(cfg: dict) -> tuple[np.ndarray, np.ndarray]:
    """(K, D) (6,) of the [drive] table: [linear x3, angular x3] stiffness and damping."""
    dr = cfg["drive"]
    K = np.array([*dr["stiffness_linear"], *dr["stiffness_angular"]])
    D = np.array([*dr["damping_linear"], *dr["damping_angular"]])
    return K, D


def arm_system(cfg: dict, K: np.ndarray, D: np.ndarray, body: int = 0):
    """The arm of a validated scenario config: a Panda (with the infinite-turn gripper when
    ``[arm] gripper = "turning"``) at the configured base, holding `body` at its axis, tool
    pointing down it; the [drive] gains (K, D) become the tool's admittance gains."""
    from sim_core.systems.arm import control
    from sim_core.systems.arm.arm import Arm
    from sim_core.systems.arm.system import ArmSystem
    a = cfg["arm"]
    arm = Arm(gripper_joint=(a["gripper"] == "turning"), base_p=np.array(a["base_position"], float))
    ks, kd = a["coupling_stiffness"], a["coupling_damping"]
    return ArmSystem(arm=arm, body=body, grasp_R=rot_axis_angle([1.0, 0.0, 0.0], np.pi),
                     grasp_p=np.array([0.0, 0.0, a["grasp_offset"]]),
                     gains=control.AdmittanceGains(K=K.copy(), D=D.copy()),
                     K_c=np.array([ks[0]] * 3 + [ks[1]] * 3), D_c=np.array([kd[0]] * 3 + [kd[1]] * 3))
