"""The Panda arm's dynamics with Pinocchio, integrated by generalized-coordinate PMI
(seed 000 Sec. V.A):

    M(q_k) (qd_k+1 - qd_k) / T + C(q_k, qd_k) (qd_k+1 + qd_k) / 2 = tau_k (+ J^T lambda),
    q_k+1 = q_k (+) T (qd_k + qd_k+1) / 2,

gravity ignored, as in the seed.  Everything linear in qd_k+1 (the admittance controller's
spring-damper evaluated at the midpoint, the arm-part coupling) enters as  tau0 - B qd_k+1,
the same form as the part's drive (``pmi.system``).

Energy.  For a rigid body in body coordinates PMI's C is skew-symmetric and the kinetic
energy is conserved to rounding (``pmi``).  In joint coordinates M depends on q, and with
M(q_k), C(q_k, qd_k) the discrete energy is only bounded, not exact: measured on the free
Panda at T = 10 ms, it wanders by about 3e-3 relative without drifting.  The discrete energy
balance  E_k+1 - E_k = T tau^T qd_mid  (PMI's passivity, the property the seed uses) is
restored by one scalar projection: after the step, qd_k+1 is scaled so that the kinetic
energy at q_k+1 equals E_k plus the work T tau^T qd_mid of the step's joint torques
(evaluated with the unscaled qd_k+1).  Without torques this conserves the energy to
rounding; the scale differs from 1 by O(T^2) (measured: < 2e-3).

Momentum.  The part's midpoint Coriolis point (``pmi``: C at (w_k + w_k+1)/2 with a Cayley
rotation update, which conserves a free body's world angular momentum exactly) does not
carry over: a fixed-base arm has no conserved world momentum (the base takes the reaction
wrench), and that construction rests on the body-axis form with a constant inertia, while
here M depends on q.  The one momentum a free arm keeps with gravity ignored, (M qd)_1 about
joint 1's vertical axis (a cyclic coordinate), would need a variational (discrete-Lagrangian)
step, not another evaluation point of C: measured on the free Panda over 2000 steps at
T = 10 ms, it wanders by 2.4 % with C(q_k, qd_k) and still 1.9 % with C at the midpoint
velocity.  So the arm keeps the seed's C(q_k, qd_k).
"""
from __future__ import annotations

import math

import numpy as np

from sim_core.systems.arm import panda
from sim_core.systems.arm.urdf import RobotFileError, build_model

__all__ = ["Arm", "RobotFileError", "load_model"]


def load_model(gripper_joint: bool, urdf=None):
    """The Pinocchio model of the arm from its URDF, checked (``urdf.build_model``: numbers,
    XML, the parser's own complaints) and for the joints the simulation needs."""
    from pathlib import Path

    from sim_core.paths import assets_dir
    name = "panda_gripper" if gripper_joint else "panda"
    path = Path(urdf) if urdf is not None else assets_dir() / "robots" / f"{name}.urdf"
    if path.exists():
        try:
            data = path.read_bytes()
        except OSError as e:
            raise RobotFileError(f"{path}: cannot read ({e.strerror or type(e).__name__})") from None
    elif urdf is None:
        data, path = panda.urdf_text(gripper_joint).encode("utf-8"), Path(f"<generated {name}.urdf>")
    else:
        raise RobotFileError(f"{path}: no such robot description")
    model = build_model(data, path)
    want = [f"joint{i}" for i in range(1, 8)] + (["gripper_joint"] if gripper_joint else [])
    have = [model.names[i] for i in range(1, model.njoints)]
    if have != want:
        raise RobotFileError(f"{path}: joints {have}, expected {want}")
    if not model.existFrame("tcp"):
        raise RobotFileError(f"{path}: no frame 'tcp' (the grasp point)")
    return model


class Arm:
    """One Panda, 7 joints, or 8 with the infinite-turn gripper (bolting)."""

    def __init__(self, gripper_joint: bool = False, base_R=None, base_p=None, urdf=None):
        """`urdf`: a URDF file (default: the shipped assets/robots/panda[_gripper].urdf, or the
        same text generated in memory when the file is absent)."""
        import pinocchio as pin
        self.pin = pin
        self.model = load_model(gripper_joint, urdf)
        self.model.gravity.linear[:] = 0.0                  # the seed ignores gravity
        self.data = self.model.createData()
        self.tcp = self.model.getFrameId("tcp")
        self.flange = self.model.getFrameId("flange")
        self.nv = self.model.nv
        self._upper = np.triu(np.ones((self.nv, self.nv), bool))   # M's entries crba fills
        self.gripper_joint = gripper_joint
        self.base_R = np.eye(3) if base_R is None else np.asarray(base_R, float)
        self.base_p = np.zeros(3) if base_p is None else np.asarray(base_p, float)
        n7 = 7
        self.q_min = np.array(panda.Q_MIN + ([-np.inf] if gripper_joint else []))
        self.q_max = np.array(panda.Q_MAX + ([np.inf] if gripper_joint else []))
        self.v_max = np.array(panda.V_MAX + ([panda.GRIPPER_V_MAX] if gripper_joint else []))
        self.tau_max = np.array(panda.TAU_MAX + ([panda.GRIPPER_TAU_MAX] if gripper_joint else []))
        assert self.nv == n7 + (1 if gripper_joint else 0)

    # --- configuration helpers (the continuous joint is (cos, sin) in pinocchio's q) ----------
    def q_from_angles(self, angles) -> np.ndarray:
        a = np.asarray(angles, float)
        if not self.gripper_joint:
            return a.copy()
        return np.concatenate([a[:7], [math.cos(a[7]), math.sin(a[7])]])

    def angles(self, q) -> np.ndarray:
        """Joint angles (nv,): the gripper's angle from its (cos, sin)."""
        if not self.gripper_joint:
            return np.asarray(q, float).copy()
        return np.concatenate([q[:7], [math.atan2(q[8], q[7])]])

    def integrate(self, q, dq) -> np.ndarray:
        return self.pin.integrate(self.model, q, dq)

    # --- dynamics and kinematics ----------------------------------------------------------------
    def mass(self, q) -> np.ndarray:
        M = self.pin.crba(self.model, self.data, q)      # the upper triangle filled
        return np.where(self._upper, M, M.T)

    def coriolis(self, q, v) -> np.ndarray:
        return self.pin.computeCoriolisMatrix(self.model, self.data, q, v).copy()

    def energy(self, q, v) -> float:
        return 0.5 * float(v @ self.mass(q) @ v)

    def tcp_pose(self, q, frame=None) -> tuple[np.ndarray, np.ndarray]:
        """(R_w, p_w) of the tool centre point (or of another frame id)."""
        pin = self.pin
        pin.framesForwardKinematics(self.model, self.data, q)
        X = self.data.oMf[self.tcp if frame is None else frame]
        return self.base_R @ X.rotation, self.base_R @ X.translation + self.base_p

    def tcp_jacobian(self, q, frame=None) -> np.ndarray:
        """J (6, nv): [v; w] of the tool centre point (or another frame id) in world axes."""
        pin = self.pin
        J = pin.computeFrameJacobian(self.model, self.data, q, self.tcp if frame is None else frame,
                                     pin.LOCAL_WORLD_ALIGNED)
        out = np.empty_like(J)
        out[:3] = self.base_R @ J[:3]
        out[3:] = self.base_R @ J[3:]
        return out

    # --- PMI ------------------------------------------------------------------------------------
    def system(self, q, v, T, tau0, B):
        """PMI system  A qd+ = b  with the joint torque  tau0 - B qd+."""
        M = self.mass(q)
        C = self.coriolis(q, v)
        return M / T + 0.5 * C + B, (M / T - 0.5 * C) @ v + tau0

    def advance(self, q, v, v_next, T) -> np.ndarray:
        return self.integrate(q, 0.5 * T * (v + v_next))

    def project_energy(self, q_next, v_next, target: float) -> np.ndarray:
        """qd+ scaled so that its kinetic energy at q+ is `target` (PMI's discrete balance)."""
        e = self.energy(q_next, v_next)
        if e <= 0.0 or target <= 0.0:
            return v_next
        return v_next * math.sqrt(target / e)

    def step_free(self, q, v, T, tau=None, passive: bool = True):
        """One PMI step under joint torques held over the step (no contact)."""
        tau = np.zeros(self.nv) if tau is None else np.asarray(tau, float)
        A, b = self.system(q, v, T, tau, np.zeros((self.nv, self.nv)))
        v1 = np.linalg.solve(A, b)
        q1 = self.advance(q, v, v1, T)
        if passive:
            v1 = self.project_energy(q1, v1, self.energy(q, v) + T * float(tau @ (0.5 * (v + v1))))
        return q1, v1

    def solve_ik(self, R, p, angles0, iterations: int = 300, tol: float = 1e-12):
        """Joint configuration (pinocchio q) with the tool at (R, p), by damped least squares
        from `angles0`; raises ValueError if it does not converge."""
        from sim_core.systems.arm.control import pose_error
        q = self.q_from_angles(angles0)
        e = np.zeros(6)
        for _ in range(iterations):
            Rt, pt = self.tcp_pose(q)
            e = pose_error(Rt, pt, R, p)
            if float(e @ e) < tol:
                return q
            J = self.tcp_jacobian(q)
            dq = J.T @ np.linalg.solve(J @ J.T + 1e-6 * np.eye(6), e)
            q = self.integrate(q, dq)
        raise ValueError(f"arm: no joint configuration puts the tool at {np.round(p, 4)} "
                         f"(error {np.linalg.norm(e):.2e} after {iterations} iterations)")
