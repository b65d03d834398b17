"""Dynamics as blocks: each body's PMI block, the drives, and the arm folded into the body it
holds, assembled into the one linear system the contact solvers take.

**A body's block** (seed 000 eq. (1), ``pmi.system``): with the wrench F0 - B V+ acting on it
besides the contacts, A_i V_i+ = b_i,  A_i = M/T + C(w_bar)/2 + B,  b_i = (M/T - C/2) V_i + F0,
the Coriolis matrix at the contact-free midpoint w_bar (``pmi.coriolis_point``: it keeps a free
body's world momentum; the energy balance is exact at any point).

**Drives** (``drive_terms``): the spring-damper pulling a body to its set pose (the arm's stand-in
and the law protocols' load frame), evaluated at the step's midpoint so a stiff drive stays
stable and passive at T = 10 ms:
    F = K e(t_k+1/2) + D (V_set - V_mid),   e(t_k+1/2) ~ e_k + T/2 (V_set - V_mid),
with e_k = [p_set - p (world); log(R^T R_set) (body)].  Linear in V+: F0 - B V+ with
    B = K T/4 + D/2,    F0 = K e_k + (K T/2 + D) V_set - B V_k  (+ the external wrench).

**The arm** (seed 000 Sec. V.A, V.D; ``ArmSystem``): the Panda's tool follows the held body's
set pose by admittance control (``systems.arm.control``); the grasp is a stiff potential between the
tool frame and the body's grasp frame, psi = 1/2 e^T K_c e with e the pose error tool - grasp
(world axes), in the PMI potential-action form of seed 002 eq. (2): its force is evaluated at
the step's midpoint, so it is linear in both velocities at k+1, stable at any stiffness, and
its work over the step matches the potential's change to second order.  A damper D_c rides
along.  With G the map from the body's twist to the grasp frame's [v; w] (world) and J the
tool Jacobian, the coupling force on the body is G^T F_g and on the arm -J^T F_g,
    F_g = K_c e_k + H (J qd_mid2 - G V_mid2),   H = (K_c T / 2 + D_c) / 2,  x_mid2 = x_k + x_k+1.
The arm's block is eliminated (Schur complement), so the held body's block seen by the contact
solver is
    (A_p + G^T H G - G^T H J S^-1 J^T H G) V+ = b_p + G^T F0 + G^T H J S^-1 r_a + contacts,
with S the arm's own system (PMI + controller + coupling) and r_a its right-hand side; after
the solve  qd+ = S^-1 (r_a + J^T H G V+).  The arm's torque limits, joint stops and speed
limits are an active set from a contact-free coupled pre-solve.  This is the block mechanism's
first coupling; a cable's links or FEM segments join blocks the same way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim_core.dynamics import pmi
from sim_core.math.so3 import log_so3, skew
from sim_core.systems.arm import control
from sim_core.systems.arm.arm import Arm
from sim_core.types import Inputs, Model, State


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


HOME = [0.0, -0.3, 0.0, -2.2, 0.0, 1.9, 0.785]     # rad: IK starts here (tool pointing down)


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


def _grasp_map(R_wb, r_b):
    """G (6,6): body twist [v_w; w_b] -> grasp frame twist [v; w] (world)."""
    G = np.zeros((6, 6))
    G[:3, :3] = np.eye(3)
    G[:3, 3:] = -R_wb @ skew(r_b)
    G[3:, 3:] = R_wb
    return G


def drive_terms(K, D, dt, p_w, R_wb, V, p_set, R_set, v_set, w_set, f_ext):
    """(F0 (6,), B (6,6)) of a body's drive wrench F0 - B V+, plus the external wrench."""
    e = np.concatenate([p_set - p_w, log_so3(R_wb.T @ R_set)])
    V_set = np.concatenate([v_set, R_wb.T @ w_set])
    Bd = K * dt / 4 + D / 2
    F0 = K * e + (K * dt / 2 + D) * V_set - Bd * V + f_ext
    return F0, np.diag(Bd)


@dataclass(frozen=True)
class Loads:
    """What acts on each body besides the contacts, linear in V+: F0 - B V+ (for the held body:
    the external wrench only; the grasp is in ``grasp``)."""
    F0: np.ndarray                 # (B,6)
    B: np.ndarray                  # (B,6,6)
    pull: np.ndarray               # (B,6) the wrench on each body now, [f world; tau body]:
                                   # the learned clustering's input
    grasp: tuple | None = None     # the arm's (J, e, G, e_dot) at the start of the step


def loads(model: Model, state: State, inp: Inputs, dt: float) -> Loads:
    """Drive and grasp terms of every body at the start of the step."""
    nb = model.n_bodies
    F0 = np.zeros((nb, 6))
    B = np.zeros((nb, 6, 6))
    pull = np.zeros((nb, 6))
    held = model.arm.body if model.arm is not None else -1
    for i in range(nb):
        if i == held:
            continue
        F0[i], B[i] = drive_terms(model.drive.K[i], model.drive.D[i], dt, state.p_w[i], state.R_wb[i],
                                  state.V[i], inp.p_set_w[i], inp.R_set_w[i], inp.v_set_w[i], inp.w_set_w[i],
                                  inp.f_ext[i])
        F0[i, :3] += model.bodies[i].mass * model.gravity   # gravity: a constant force at the COM
        pull[i] = F0[i] - B[i] @ state.V[i]          # the drive's pull now
    grasp = None
    if held >= 0:
        sys, arm = model.arm, model.arm.arm
        J = arm.tcp_jacobian(state.q)
        R_t, p_t = arm.tcp_pose(state.q)
        R_g, p_g = grasp_pose(sys, state.R_wb[held], state.p_w[held])
        e = np.concatenate([p_t - p_g, R_g @ log_so3(R_g.T @ R_t)])
        G = _grasp_map(state.R_wb[held], sys.grasp_p)
        e_dot = J @ state.qd - G @ state.V[held]
        F0[held] = inp.f_ext[held]
        F0[held, :3] += model.bodies[held].mass * model.gravity
        # as a drive's F0 - B V_k: the spring plus the midpoint damping K T / 2 + D
        pull[held] = G.T @ (sys.K_c * e + (sys.K_c * dt / 2 + sys.D_c) * e_dot) + F0[held]
        grasp = (J, e, G, e_dot)
    return Loads(F0, B, pull, grasp)


@dataclass(frozen=True)
class ArmFold:
    """What recovers the arm's velocities once the held body's is known (``arm_after``)."""
    X: np.ndarray                  # (nf, 6 + 1): S_ff^-1 [J^T H G | r_f] over the free joints
    free: np.ndarray               # (nv,) bool
    v_fix: np.ndarray              # (nv,) rad/s, the stopped joints' velocities
    sat: np.ndarray                # (nv,) bool, torque-saturated joints
    tau_sat: np.ndarray            # (nv,) N m
    tau0: np.ndarray               # (nv,) N m, the controller's torque tau0 - B qd+
    B: np.ndarray                  # (nv,nv)
    grasp_error: float             # m, tool-grasp distance at the start of the step
    flange_home: np.ndarray | None  # the controller's latch after this step
    grip_turn: np.ndarray | None = None  # the gripper spring's latch after this step


@dataclass(frozen=True)
class System:
    """The world's linear system  A V+ = b + contact terms  over all bodies' twists (n = 6 B)."""
    A: np.ndarray                  # (n,n)
    b: np.ndarray                  # (n,)
    arm: ArmFold | None = None


def _body_block(model: Model, state: State, i: int, F0, B, dt):
    body = model.bodies[i]
    w_bar = pmi.coriolis_point(body.mass, body.inertia_b, state.V[i], dt, F0, B)
    return pmi.system(body.mass, body.inertia_b, state.V[i], dt, F0, B, w_bar)


def assemble(model: Model, state: State, inp: Inputs, dt: float, ld: Loads) -> System:
    """Every body's PMI block, the arm folded into the held body's (module docstring)."""
    nb = model.n_bodies
    if nb == 1 and model.arm is None:          # the common case, without the block copies
        A, b = _body_block(model, state, 0, ld.F0[0], ld.B[0], dt)
        return System(A, b)
    A = np.zeros((6 * nb, 6 * nb))
    b = np.zeros(6 * nb)
    fold = None
    for i in range(nb):
        Ai, bi = _body_block(model, state, i, ld.F0[i], ld.B[i], dt)
        if model.arm is not None and i == model.arm.body:
            Ai, bi, fold = _fold_arm(model.arm, state, inp, dt, ld, Ai, bi)
        A[6 * i:6 * i + 6, 6 * i:6 * i + 6] = Ai
        b[6 * i:6 * i + 6] = bi
    return System(A, b, fold)


def _fold_arm(sys: ArmSystem, state: State, inp: Inputs, dt: float, ld: Loads, A_p, b_p):
    """The held body's block with the arm eliminated, and what recovers the arm."""
    arm, i = sys.arm, sys.body
    J, e, G, e_dot = ld.grasp
    A_a, b_a = arm.system(state.q, state.qd, dt, np.zeros(arm.nv), np.zeros((arm.nv, arm.nv)))
    R_ts, p_ts = grasp_pose(sys, inp.R_set_w[i], inp.p_set_w[i])
    V_set = np.concatenate([inp.v_set_w[i], inp.w_set_w[i]])
    tau0, B, home, turn = control.linearize(arm, state.q, state.qd, dt, R_ts, p_ts, V_set, sys.gains,
                                            state.flange_home, state.grip_turn)
    H = np.diag(0.5 * (sys.K_c * dt / 2 + sys.D_c))
    F0 = sys.K_c * e + H @ e_dot
    A_p = A_p + G.T @ H @ G
    b_p = b_p + G.T @ F0
    S_free = A_a + J.T @ H @ J
    r_a_free = b_a - J.T @ F0
    JHG = J.T @ H @ G
    # the body's free velocity with the arm's controller, then the arm's active set there
    Sc = S_free + B
    Ap_eff = A_p - JHG.T @ np.linalg.solve(Sc, JHG)
    bp_eff = b_p + JHG.T @ np.linalg.solve(Sc, r_a_free + tau0)
    V_guess = np.linalg.solve(Ap_eff, bp_eff)
    act: dict = {}
    control.solve_limited(arm, state.q, state.qd, dt, S_free, r_a_free + JHG @ V_guess, tau0, B, active=act)
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
    fold = ArmFold(X, f, v_fix, sat, act["tau_sat"], tau0, B, float(np.linalg.norm(e[:3])), home, turn)
    return A_eff, b_eff, fold


def arm_after(fold: ArmFold, V_held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(qd+, commanded motor torques) once the held body's V+ is known, on the same active set."""
    qd = fold.v_fix.copy()
    qd[fold.free] = fold.X[:, -1] + fold.X[:, :-1] @ V_held
    tau = np.where(fold.sat, fold.tau_sat, fold.tau0 - fold.B @ qd)
    return qd, tau


def integrate(model: Model, state: State, V_next: np.ndarray, dt: float, warm, qd_next=None,
              flange_home=None, grip_turn=None) -> State:
    """Every body's pose by its midpoint twist (``pmi.advance``); the arm's joints likewise
    (``qd_next``: its velocities after the step, from ``arm_after``)."""
    nb = model.n_bodies
    Vn = V_next.reshape(nb, 6)
    p = np.empty((nb, 3))
    R = np.empty((nb, 3, 3))
    for i in range(nb):
        p[i], R[i] = pmi.advance(state.p_w[i], state.R_wb[i], state.V[i], Vn[i], dt)
    if qd_next is None:
        return State(state.t + dt, p, R, Vn, warm, state.q, state.qd, state.flange_home, state.grip_turn)
    q = model.arm.arm.advance(state.q, state.qd, qd_next, dt)
    return State(state.t + dt, p, R, Vn, warm, q, qd_next, flange_home, grip_turn)
