"""The Panda holding one body, as a ``systems.base.System`` (seed 000 Sec. V.A, V.D).

The tool follows the held body's set pose by admittance control (``control``); the grasp is a
stiff potential between the tool frame and the body's grasp frame, psi = 1/2 e^T K_c e with e
the pose error tool - grasp (world axes), in the PMI potential-action form
(``dynamics.couplings``: the arm's joints are block a with the map J, the tool Jacobian; the
body is block b with the map G of its grasp frame):
    F_g = K_c e_k + H (J qd - G V)_k + H (J qd - G V)_k+1,   H = (K_c T / 2 + D_c) / 2.
The arm's block S (PMI + controller + coupling) is folded into the held body's
(``couplings.fold``), and recovered after the solve.  The arm's torque limits, joint stops and
speed limits are an active set from a contact-free coupled pre-solve (``control.solve_limited``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from sim_core.dynamics import couplings
from sim_core.math.so3 import log_so3
from sim_core.systems.arm import control
from sim_core.systems.arm.arm import Arm

HOME = [0.0, -0.3, 0.0, -2.2, 0.0, 1.9, 0.785]     # rad: IK starts here (tool pointing down)


@dataclass(frozen=True)
class ArmState:
    """The arm's part of ``State.systems``."""
    q: np.ndarray                  # (nq,) the configuration (pinocchio's q: the gripper as (cos, sin))
    qd: np.ndarray                 # (nv,) rad/s, joint velocities
    flange_home: np.ndarray | None = None  # (3,3) the wrist's held orientation (the controller's latch)
    grip_turn: np.ndarray | None = None    # (2,) rad, the gripper spring's latch: its turn error and the
                                           # wrapped reading it came from (control.turn_error)


@dataclass(frozen=True)
class ArmFold:
    """What recovers the arm's velocities once the held body's is known (``advance``)."""
    folded: couplings.Folded       # S_ff^-1 [J^T H G | r_f] over the free joints
    sat: np.ndarray                # (nv,) bool, torque-saturated joints
    tau_sat: np.ndarray            # (nv,) N m
    tau0: np.ndarray               # (nv,) N m, the controller's torque tau0 - B qd+
    B: np.ndarray                  # (nv,nv)
    grasp_error: float             # m, tool-grasp distance at the start of the step
    flange_home: np.ndarray | None  # the controller's latch after this step
    grip_turn: np.ndarray | None = None  # the gripper spring's latch after this step


@dataclass
class ArmPrep:
    """``ArmSystem.prepare``'s result: the grasp at the start of the step, and the fold's terms
    that do not depend on the bodies' blocks, formed at the step's first fold and kept for the
    folds after it (``step.turn_passes`` folds the arm again each pass)."""
    J: np.ndarray                  # (6,nv) the tool Jacobian
    e: np.ndarray                  # (6,) [m; rad] the grasp's pose error tool - grasp, world axes
    G: np.ndarray                  # (6,6) the held body's twist -> its grasp frame's twist
    e_dot: np.ndarray              # (6,) the error's rate at the start of the step
    terms: tuple | None = None     # ``ArmSystem._terms``, once formed


@dataclass(frozen=True)
class ArmSystem:
    """The arm of a world: a Panda holding body ``body``, and how (all constant)."""
    arm: Arm
    body: int                      # index of the held body
    grasp_R: np.ndarray            # (3,3) tool frame in the body's frame
    grasp_p: np.ndarray            # (3,) m, tool point in the body's frame (from the COM)
    gains: control.AdmittanceGains
    K_c: np.ndarray                # (6,) coupling stiffness [N/m x3, N m/rad x3]
    D_c: np.ndarray                # (6,) coupling damping [N s/m x3, N m s/rad x3]

    @property
    def holds(self) -> tuple[int, ...]:
        return (self.body,)

    # --- the System interface ------------------------------------------------------------------
    def start(self, model, state) -> ArmState:
        """At the configuration holding its body (IK), at rest, no controller latch yet."""
        i = self.body
        return ArmState(arm_start(self, state.R_wb[i], state.p_w[i]), np.zeros(self.arm.nv))

    def prepare(self, model, state, sub: ArmState, inp, dt: float, blocks):
        """The grasp's (J, e, G, e_dot) at the start of the step; its pull on the body now."""
        held = self.body
        J = self.arm.tcp_jacobian(sub.q)
        R_t, p_t = self.arm.tcp_pose(sub.q)
        R_g, p_g = grasp_pose(self, state.R_wb[held], state.p_w[held])
        e = np.concatenate([p_t - p_g, R_g @ log_so3(R_g.T @ R_t)])
        G = couplings.anchor_map(state.R_wb[held], self.grasp_p)
        e_dot = J @ sub.qd - G @ state.V[held]
        # as a drive's F0 - B V_k: the spring plus the midpoint damping K T / 2 + D
        blocks.pull[held] += G.T @ (self.K_c * e + (self.K_c * dt / 2 + self.D_c) * e_dot)
        return ArmPrep(J, e, G, e_dot)

    def _terms(self, sub: ArmState, inp, dt: float, prep: ArmPrep) -> tuple:
        """The fold's terms that do not depend on the bodies' blocks: the arm's PMI block, the
        controller's linearization, the grasp's potential terms and ``couplings.fold``'s solve
        with no joint saturated."""
        arm, i = self.arm, self.body
        A_a, b_a = arm.system(sub.q, sub.qd, dt, np.zeros(arm.nv), np.zeros((arm.nv, arm.nv)))
        R_ts, p_ts = grasp_pose(self, inp.R_set_w[i], inp.p_set_w[i])
        V_set = np.concatenate([inp.v_set_w[i], inp.w_set_w[i]])
        tau0, B, home, turn = control.linearize(arm, sub.q, sub.qd, dt, R_ts, p_ts, V_set, self.gains,
                                                sub.flange_home, sub.grip_turn)
        H = np.diag(0.5 * (self.K_c * dt / 2 + self.D_c))
        F0 = self.K_c * prep.e + H @ prep.e_dot
        JHJ, GHG, C, r_add, b_add = couplings.potential_terms(prep.J, prep.G, H, F0)
        S_free = A_a + JHJ
        r_a_free = b_a + r_add
        # X is ``couplings.fold``'s own solve with no joint saturated (S = Sc, r_a = r_a_free +
        # tau0): the usual step's fold reuses it
        X = np.linalg.solve(S_free + B, np.column_stack([-C, r_a_free + tau0]))
        return tau0, B, home, turn, GHG, C, b_add, S_free, r_a_free, X

    def fold(self, model, state, sub: ArmState, inp, dt: float, prep: ArmPrep, blocks) -> ArmFold:
        """The arm folded into the held body's block (in place), on its active set."""
        arm, i = self.arm, self.body
        if prep.terms is None:
            prep.terms = self._terms(sub, inp, dt, prep)
        tau0, B, home, turn, GHG, C, b_add, S_free, r_a_free, X = prep.terms
        A_p = blocks.A[i] + GHG
        b_p = blocks.b[i] + b_add
        JHG = -C
        # the body's free velocity with the arm's controller, then the arm's active set there
        Ap_eff = A_p - JHG.T @ X[:, :-1]
        bp_eff = b_p + JHG.T @ X[:, -1]
        V_guess = np.linalg.solve(Ap_eff, bp_eff)
        act: dict = {}
        control.solve_limited(arm, sub.q, sub.qd, dt, S_free, r_a_free + JHG @ V_guess, tau0, B, active=act)
        fixed, v_fix, sat = act["fixed"], act["v_fix"], act["sat"]
        # with that active set: saturated joints get a constant torque, stopped joints a fixed
        # velocity; the free joints are folded into the body (Schur complement)
        S = S_free + np.where(sat[:, None], 0.0, B)
        r_a = r_a_free + np.where(sat, act["tau_sat"], tau0)
        blocks.A[i], blocks.b[i], folded = couplings.fold(A_p, b_p, S, r_a, C, fixed, v_fix,
                                                          X=None if sat.any() else X)
        e = prep.e
        return ArmFold(folded, sat, act["tau_sat"], tau0, B, math.sqrt(float(e[:3].dot(e[:3]))), home, turn)

    def advance(self, model, sub: ArmState, fd: ArmFold, V_next, dt: float):
        """The joints after the step, and the step's motor torques and grasp error."""
        qd = couplings.recover(fd.folded, V_next[self.body])
        tau = np.where(fd.sat, fd.tau_sat, fd.tau0 - fd.B @ qd)
        q = self.arm.advance(sub.q, sub.qd, qd, dt)
        return ArmState(q, qd, fd.flange_home, fd.grip_turn), {"tau": tau, "grasp_error": fd.grasp_error}


def grasp_pose(sys: ArmSystem, R_wb, p_w):
    """World pose of the grasp frame on the held body (also the tool's set pose that puts the
    body at (R_wb, p_w))."""
    return R_wb @ sys.grasp_R, p_w + R_wb @ sys.grasp_p


def arm_start(sys: ArmSystem, R_wb, p_w, angles0=None) -> np.ndarray:
    """The arm's configuration q that holds the body at (R_wb, p_w) (inverse kinematics)."""
    R_g, p_g = grasp_pose(sys, R_wb, p_w)
    if angles0 is None:
        angles0 = HOME + ([0.0] if sys.arm.gripper_joint else [])
    return sys.arm.solve_ik(R_g, p_g, angles0)


def arm_of(model):
    """(index in Model.systems, ArmSystem) of the world's arm, or None (for the readers that
    draw, log or replay its joints)."""
    for k, s in enumerate(model.systems):
        if isinstance(s, ArmSystem):
            return k, s
    return None


def arm_state(model, state) -> ArmState | None:
    """The arm's sub-state in ``state``, or None."""
    got = arm_of(model)
    return None if got is None or len(state.systems) <= got[0] else state.systems[got[0]]


def with_arm_state(model, state, sub: ArmState):
    """``state`` with the arm's sub-state replaced."""
    k = arm_of(model)[0]
    return replace(state, systems=state.systems[:k] + (sub,) + state.systems[k + 1:])


def joints(state) -> tuple[np.ndarray, np.ndarray]:
    """(q, qd) of the arm in ``state.systems`` (empty arrays without one): what the logs,
    snapshots and replays record of it."""
    for sub in state.systems:
        if isinstance(sub, ArmState):
            return sub.q, sub.qd
    return np.zeros(0), np.zeros(0)
