"""The complete simulation (seed 000 Sec. V.A, V.D): the Panda arm holds the part, the arm's
tool follows the scenario's set pose by admittance control, and the part meets the static
part through the whole contact pipeline.

Per step, at T = 10 ms:
  broad phase -> detection -> clustering -> (C-space) -> solving of the coupled system ->
  integration of the part (PMI, seed 000 eq. (1)) and the arm (generalized PMI).

Arm-part coupling: the grasp is a stiff potential between the tool frame and the part's
grasp frame, psi = 1/2 e^T K_c e with e the pose error tool - grasp (world axes), applied in
the PMI potential-action form of seed 002 eq. (2): its force is evaluated at the step's
midpoint, so it is linear in both velocities at k+1, stable at any stiffness, and its work
over the step matches the potential's change to second order.  A damper D_c rides along.
With G the map from the part's twist [v_w; w_b] to the grasp frame's [v; w] (world) and J the
tool Jacobian, the coupling force on the part is  G^T F_g  and on the arm  -J^T F_g,
    F_g = K_c e_k + H (J qd_mid2 - G V_mid2),   H = (K_c T / 2 + D_c) / 2,  x_mid2 = x_k + x_k+1,
so the step is one linear system in (qd+, V+) plus the contact forces on the part.  The arm
block is eliminated (Schur complement): the part's system seen by the contact solver is
    (A_p + G^T H G - G^T H J S^-1 J^T H G) V+ = b_p + G^T F0 + G^T H J S^-1 r_a + contacts,
with S the arm's own system (PMI + controller + coupling) and r_a its right-hand side; then
qd+ = S^-1 (r_a + J^T H G V+).  The arm's torque limits are set by an active set from a
contact-free pre-solve; its joint stops and speed limits act the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import cspace, pipeline, pmi
from .math3d import log_so3, skew
from .model import Model, State
from .robot import control
from .robot.arm import Arm


@dataclass
class ArmSetup:
    """The arm of a scenario: where it stands, how it holds the part, its gains."""
    arm: Arm
    grasp_R: np.ndarray            # (3,3) tool frame in the part's body frame
    grasp_p: np.ndarray            # (3,) m, tool point in the part's body frame (from the COM)
    gains: control.AdmittanceGains
    K_c: np.ndarray                # (6,) coupling stiffness [N/m x3, N m/rad x3]
    D_c: np.ndarray                # (6,) coupling damping


@dataclass
class FullState:
    part: State
    q: np.ndarray
    qd: np.ndarray


@dataclass
class FullInfo:
    step: pipeline.StepInfo
    tau: np.ndarray = field(default_factory=lambda: np.zeros(0))   # motor torques
    grasp_error: float = 0.0       # m, tool-grasp distance at the start of the step
    times: dict = field(default_factory=dict)


def grasp_pose(setup: ArmSetup, R_wb, p_w):
    """World pose of the grasp frame on the part."""
    return R_wb @ setup.grasp_R, p_w + R_wb @ setup.grasp_p


def tool_set_pose(setup: ArmSetup, R_set, p_set):
    """The tool's set pose that puts the part at (R_set, p_set)."""
    return grasp_pose(setup, R_set, p_set)


HOME = [0.0, -0.3, 0.0, -2.2, 0.0, 1.9, 0.785]     # rad: IK starts here (tool pointing down)


def start(setup: ArmSetup, part: State, angles0=None) -> FullState:
    """The arm in the configuration that holds the part where it starts, at rest."""
    R_g, p_g = grasp_pose(setup, part.R_wb, part.p_w)
    if angles0 is None:
        angles0 = HOME + ([0.0] if setup.arm.gripper_joint else [])
    setup.arm.flange_home = None            # the wrist holds the orientation it starts with
    q = setup.arm.solve_ik(R_g, p_g, angles0)
    return FullState(part, q, np.zeros(setup.arm.nv))


def make_setup(cfg: dict, model: Model) -> ArmSetup:
    """The arm of a validated scenario config: a Panda (with the infinite-turn gripper for
    bolting) at the configured base, holding the part at its axis, tool pointing down it;
    the [drive] gains become the tool's admittance gains."""
    from .math3d import rot_axis_angle
    a = cfg["arm"]
    arm = Arm(gripper_joint=(model.task == "bolting"), base_p=np.array(a["base_position"], float))
    ks, kd = a["coupling_stiffness"], a["coupling_damping"]
    return ArmSetup(arm=arm, grasp_R=rot_axis_angle([1.0, 0.0, 0.0], np.pi),
                    grasp_p=np.array([0.0, 0.0, a["grasp_offset"]]),
                    gains=control.AdmittanceGains(K=model.K.copy(), D=model.D.copy()),
                    K_c=np.array([ks[0]] * 3 + [ks[1]] * 3), D_c=np.array([kd[0]] * 3 + [kd[1]] * 3))


def _grasp_map(R_wb, r_b):
    """G (6,6): part twist [v_w; w_b] -> grasp frame twist [v; w] (world)."""
    G = np.zeros((6, 6))
    G[:3, :3] = np.eye(3)
    G[:3, 3:] = -R_wb @ skew(r_b)
    G[3:, 3:] = R_wb
    return G


def step(model: Model, setup: ArmSetup, st: FullState, inp) -> tuple[FullState, FullInfo]:
    """One step of the complete simulation; `inp` carries the part's set pose (the arm's
    tool follows the matching tool pose)."""
    arm, T = setup.arm, model.dt
    part = st.part
    laps = pipeline._Laps()
    # the grasp's pull on the part now: the learned clustering's external-wrench input
    J = arm.tcp_jacobian(st.q)
    R_t, p_t = arm.tcp_pose(st.q)
    R_g, p_g = grasp_pose(setup, part.R_wb, part.p_w)
    e = np.concatenate([p_t - p_g, R_g @ log_so3(R_g.T @ R_t)])
    G = _grasp_map(part.R_wb, setup.grasp_p)
    e_dot = J @ st.qd - G @ part.V
    # as the drive's wrench F0 - B V_k: the spring plus the midpoint damping K T / 2 + D
    f_grasp = G.T @ (setup.K_c * e + (setup.K_c * T / 2 + setup.D_c) * e_dot) + inp.f_ext
    laps.lap("arm")
    reps, n_cand, n_cont, d_all, laps = pipeline.contacts_at(model, part, f_grasp, laps)
    row = cspace.row_for(model, part) if model.contact.solver == "sor" else None
    laps.lap("cspace")
    # --- arm: PMI system, controller, coupling ---------------------------------------------
    A_a, b_a = arm.system(st.q, st.qd, T, np.zeros(arm.nv), np.zeros((arm.nv, arm.nv)))
    R_ts, p_ts = tool_set_pose(setup, inp.R_set_w, inp.p_set_w)
    V_set = np.concatenate([inp.v_set_w, inp.w_set_w])
    tau0, B = control.linearize(arm, st.q, st.qd, T, R_ts, p_ts, V_set, setup.gains)
    H = np.diag(0.5 * (setup.K_c * T / 2 + setup.D_c))
    F0 = setup.K_c * e + H @ e_dot
    # arm's torque limits: active set from a contact-free coupled pre-solve
    # Coriolis term at the midpoint of the part's own contact-free system (pmi module docstring):
    # the energy balance is exact for any point; momentum is not conserved under the grasp and
    # contact impulses anyway
    w_bar = pmi.coriolis_point(model.mass, model.inertia_b, part.V, T, inp.f_ext, np.zeros((6, 6)))
    A_p, b_p = pmi.system(model.mass, model.inertia_b, part.V, T, inp.f_ext, np.zeros((6, 6)), w_bar)
    A_p = A_p + G.T @ H @ G
    b_p = b_p + G.T @ F0
    S_free = A_a + J.T @ H @ J
    r_a_free = b_a - J.T @ F0
    JHG = J.T @ H @ G
    # the part's free velocity with the arm's controller, then the arm's active set there
    Sc = S_free + B
    Ap_eff = A_p - JHG.T @ np.linalg.solve(Sc, JHG)
    bp_eff = b_p + JHG.T @ np.linalg.solve(Sc, r_a_free + tau0)
    V_guess = np.linalg.solve(Ap_eff, bp_eff)
    act: dict = {}
    control.solve_limited(arm, st.q, st.qd, T, S_free, r_a_free + JHG @ V_guess, tau0, B, active=act)
    fixed, v_fix, sat = act["fixed"], act["v_fix"], act["sat"]
    # with that active set: saturated joints get a constant torque, stopped joints a fixed
    # velocity; the free joints are eliminated (Schur complement)
    S = S_free + np.where(sat[:, None], 0.0, B)
    r_a = r_a_free + np.where(sat, act["tau_sat"], tau0)
    f, F = ~fixed, fixed
    S_ff = S[np.ix_(f, f)]
    r_f = r_a[f] - S[np.ix_(f, F)] @ v_fix[F]
    JHG_f = JHG[f]
    X = np.linalg.solve(S_ff, np.column_stack([JHG_f, r_f]))
    A_eff = A_p - JHG_f.T @ X[:, :-1]
    b_eff = b_p + JHG[F].T @ v_fix[F] + JHG_f.T @ X[:, -1]
    laps.lap("arm")
    # --- contact solving on the part, with the arm folded in ------------------------------
    V_next, wrench, sweeps, forces_w, warm = pipeline.solve_contacts(model, part, reps, A_eff, b_eff, row)
    laps.lap("solving")
    # the arm with the part's velocity known, on the same active set
    qd_next = v_fix.copy()
    qd_next[f] = X[:, -1] + X[:, :-1] @ V_next
    tau_cmd = np.where(sat, act["tau_sat"], tau0 - B @ qd_next)
    # --- integration -----------------------------------------------------------------------
    p_next, R_next = pmi.advance(part.p_w, part.R_wb, part.V, V_next, T)
    q_next = arm.advance(st.q, st.qd, qd_next, T)
    laps.lap("integration")
    info = pipeline.step_info(model, reps, d_all, n_cand, n_cont, wrench, sweeps, forces_w, laps)
    nxt = FullState(State(part.t + T, p_next, R_next, V_next, warm), q_next, qd_next)
    return nxt, FullInfo(step=info, tau=tau_cmd, grasp_error=float(np.linalg.norm(e[:3])), times=laps.times)
