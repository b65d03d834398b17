"""Cartesian admittance control of the Panda's tool centre point toward a set pose.

The controller makes the tool behave as a mass-spring-damper around the set pose: the
arm's own Cartesian inertia, a spring K and a damper D on the pose error (world axes),
    tau = J^T [K e + D (V_set - J qd)] - d_null qd,
evaluated at the step's midpoint like the part's drive (``dynamics.blocks.drive_terms``), so
that a stiff controller stays stable at T = 10 ms:  e(t_k+1/2) ~ e_k + T/2 (V_set - J qd_mid).  That is
linear in qd_k+1 and enters the arm's PMI system as tau0 - B qd_k+1.

Limits, as an active set over a few solves:
* torque: a commanded torque beyond the Panda's limit is held at the limit (that joint gets
  the saturated torque as a constant and the system is solved again);
* joint range: a joint that would pass its limit within the step is stopped there, like a
  hard stop: its end velocity is set so that the midpoint step lands on the limit (or to 0
  when even that overshoots, by at most T qd / 2), and the other joints are solved with it
  fixed.  The stop's reaction is a constraint force, not a motor torque;
* joint speed: a joint faster than its limit is held at the limit speed the same way;
* the spring sees at most ``max_error`` of pose error;
* the infinite-turn gripper's spring sees at most its torque limit over its gain of turn
  error (``turn_error``): the error is carried from step to step without wrapping at 180 deg,
  and beyond that angle its anchor slips with the set turn.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from sim_core.math.so3 import cross, log_so3
from sim_core.systems.arm import panda


@dataclass
class AdmittanceGains:
    K: np.ndarray = field(default_factory=lambda: np.array([2000.0] * 3 + [60.0] * 3))   # N/m, N m/rad
    D: np.ndarray = field(default_factory=lambda: np.array([200.0] * 3 + [6.0] * 3))     # N s/m, N m s/rad
    null_damping: float = 0.5        # N m s/rad on every joint (keeps the redundancy quiet)
    max_error: tuple = (0.05, 0.3)   # m, rad: the spring sees at most this pose error, so a far
                                     # set pose pulls with K * 5 cm, not with K * distance
    gripper_K: float = 20.0          # N m/rad, the infinite-turn gripper's joint spring
    gripper_D: float = 0.3           # N m s/rad


def pose_error(R, p, R_set, p_set) -> np.ndarray:
    """[p_set - p; log(R_set R^T)] in world axes."""
    return np.concatenate([p_set - p, R @ log_so3(R.T @ R_set)])


def wrap(a: float) -> float:
    """a in [-pi, pi): the shortest turn equal to a modulo a full turn."""
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def turn_error(reading: float, latch, cap: float):
    """(error, latch) of the gripper's joint spring: its turn error, without wrapping at 180 deg
    and held within +-cap by a slip, and the latch to pass to the next step.

    ``reading`` is this step's turn of the set pose about the tool axis relative to the tool,
    known only modulo a full turn (in (-pi, pi]); ``latch`` the previous step's
    [error, reading], None on the first step.  The error moves by the shortest increment of
    the reading (a step turns the set and the gripper far less than half a turn), so a set
    turn running 400 deg ahead of a jammed nut is a growing error, never one that passes 180
    deg and reverses.  It is held at +-cap (the gripper's torque limit over its gain): beyond
    it the spring's anchor slips with the set turn, like the haptic coupling's rotation anchor
    (``haptics.coupling``, step 3a), so turning the set far ahead of a stuck nut stores no
    more than the limit, and turning it back releases the torque at once.  (The slip only
    removes stored spring energy: passive.)"""
    e = reading if latch is None else float(latch[0]) + wrap(reading - float(latch[1]))
    e = min(cap, max(-cap, e))
    return e, np.array([e, reading])


def linearize(arm, q, v, T, R_set, p_set, V_set, gains: AdmittanceGains, flange_home=None, grip_turn=None):
    """(tau0, B, flange_home, grip_turn) of the controller torque tau0 - B qd_k+1 toward the
    tool set pose.

    With the infinite-turn gripper (bolting) the Cartesian spring-damper holds the *flange*
    -- the tool's pose with the turn about the tool axis taken out, at the flange's own
    angle about that axis -- and the gripper joint alone follows the turn, by a joint
    spring-damper (``gripper_K``, ``gripper_D``) toward the set angle: the wrist keeps its
    range and the gripper turns without end.

    ``flange_home`` (3,3) is the controller's latch, the wrist's held orientation: None on
    the first step, when it is taken from q; the caller keeps what this returns (in
    ``types.State``) for the next step; ``grip_turn`` (2,) the gripper spring's latch
    (``turn_error``), likewise."""
    if not arm.gripper_joint:
        return (*_cartesian(arm, q, v, T, R_set, p_set, V_set, gains, None), flange_home, grip_turn)
    if flange_home is None:
        flange_home = arm.tcp_pose(q, arm.flange)[0]
    z = R_set[:, 2]
    # the flange's set pose: the tool set pose turned back about the tool axis to the flange's
    # home angle about it (so the wrist holds still while the gripper turns)
    Rrel = flange_home.T @ R_set
    theta = math.atan2(Rrel[1, 0] - Rrel[0, 1], Rrel[0, 0] + Rrel[1, 1])
    c, s = math.cos(theta), math.sin(theta)
    R_fs = R_set @ np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])    # R_set Rz(-theta)
    p_fs = p_set - z * panda.TCP_D
    w_set = V_set[3:]
    V_fs = np.concatenate([V_set[:3] - cross(w_set, z * panda.TCP_D), w_set - z * float(z @ w_set)])
    tau0, B = _cartesian(arm, q, v, T, R_fs, p_fs, V_fs, gains, arm.flange)
    # the gripper joint: spring-damper (midpoint form) on the tool's own turn error
    g = arm.nv - 1
    R_t, _ = arm.tcp_pose(q)
    Re = R_t.T @ R_set
    err, grip_turn = turn_error(math.atan2(Re[1, 0] - Re[0, 1], Re[0, 0] + Re[1, 1]), grip_turn,
                                arm.tau_max[g] / gains.gripper_K)
    Gg = gains.gripper_K * T / 2 + gains.gripper_D
    tau0[g] += gains.gripper_K * err + Gg * float(z @ w_set) - 0.5 * Gg * v[g]
    B[g, g] += 0.5 * Gg
    return tau0, B, flange_home, grip_turn


def _cartesian(arm, q, v, T, R_set, p_set, V_set, gains, frame):
    R, p = arm.tcp_pose(q, frame)
    J = arm.tcp_jacobian(q, frame)
    e = pose_error(R, p, R_set, p_set)
    for sl, cap in ((slice(0, 3), gains.max_error[0]), (slice(3, 6), gains.max_error[1])):
        n = math.sqrt(float(e[sl].dot(e[sl])))       # np.linalg.norm's arithmetic, without its checks
        if n > cap:
            e[sl] *= cap / n
    G = gains.K * T / 2 + gains.D                              # (6,)
    dn = np.full(arm.nv, gains.null_damping)
    if arm.gripper_joint:
        dn[-1] = 0.0                 # the gripper turns freely; its own servo damps it
    Bc = 0.5 * (J.T @ (G[:, None] * J)) + 0.5 * np.diag(dn)
    tau0 = J.T @ (gains.K * e + G * V_set) - Bc @ v
    return tau0, Bc


def solve_limited(arm, q, v, T, A, b, tau0, B, extra=None, passes: int = 8, active=None):
    """qd+ from  A qd+ = b + (tau0 - B qd+) (+ extra)  with the torque and joint-range limits
    (module docstring).  A, b: the arm's PMI system without the controller.
    Returns (qd+, commanded motor torque); with ``active`` (a dict), also fills it with the
    active set: fixed (bool), v_fix, sat (bool), tau_sat."""
    n = A.shape[0]
    rhs0 = b + (np.zeros(n) if extra is None else extra)
    sat, fixed = np.zeros(n, bool), np.zeros(n, bool)
    tau_sat, v_fix = np.zeros(n), np.zeros(n)
    a = arm.angles(q)
    v1 = np.zeros(n)
    tau = tau0.copy()
    for _ in range(passes):
        Bf = np.where(sat[:, None], 0.0, B)
        K = A + Bf
        rhs = rhs0 + np.where(sat, tau_sat, tau0)
        if fixed.any():
            free = ~fixed
            v1 = v_fix.copy()
            v1[free] = np.linalg.solve(K[np.ix_(free, free)], rhs[free] - K[np.ix_(free, fixed)] @ v_fix[fixed])
        else:                        # no joint held: the same solve without the gathers
            v1 = np.linalg.solve(K, rhs)
        tau = np.where(sat, tau_sat, tau0 - B @ v1)
        a1 = a + 0.5 * T * (v + v1)
        over, under = a1 > arm.q_max, a1 < arm.q_min
        fast = (np.abs(v1) > arm.v_max) & ~over & ~under
        new_fix = (over | under | fast) & ~fixed
        new_sat = (np.abs(tau) > arm.tau_max) & ~sat & ~fixed
        if not new_fix.any() and not new_sat.any():
            break
        lim = np.where(over, arm.q_max, arm.q_min)
        land = 2.0 * (lim - a) / T - v                   # end velocity landing on the limit
        stop = np.where(over, np.maximum(land, 0.0), np.minimum(land, 0.0))
        v_fix = np.where(new_fix, np.where(fast, np.sign(v1) * arm.v_max, stop), v_fix)
        fixed |= new_fix
        sat |= new_sat
        tau_sat = np.where(sat, np.clip(tau, -arm.tau_max, arm.tau_max), 0.0)
    if fixed.any():
        tau = np.where(fixed, np.clip(tau0 - B @ v1, -arm.tau_max, arm.tau_max), tau)
    if active is not None:
        active.update(fixed=fixed, v_fix=v_fix, sat=sat, tau_sat=tau_sat)
    return v1, tau


def step(arm, q, v, T, R_set, p_set, V_set, gains: AdmittanceGains, passive: bool = True, flange_home=None,
         grip_turn=None):
    """One PMI step of the arm alone under admittance control: (q+, qd+, joint torque, the
    controller's latches for the next step: flange_home, grip_turn)."""
    A, b = arm.system(q, v, T, np.zeros(arm.nv), np.zeros((arm.nv, arm.nv)))
    tau0, B, flange_home, grip_turn = linearize(arm, q, v, T, R_set, p_set, V_set, gains, flange_home, grip_turn)
    v1, tau = solve_limited(arm, q, v, T, A, b, tau0, B)
    q1 = arm.advance(q, v, v1, T)
    if passive:
        # the work of every generalized force of the step -- motor torques and the limit
        # stops' reactions alike -- is what the PMI equation itself puts in: A qd+ - b
        work = T * float((A @ v1 - b) @ (0.5 * (v + v1)))
        v1 = arm.project_energy(q1, v1, arm.energy(q, v) + work)
    return q1, v1, tau, flange_home, grip_turn
