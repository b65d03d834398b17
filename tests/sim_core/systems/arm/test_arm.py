"""The Panda model and its PMI dynamics against independent kinematics, mechanics' laws and
the admittance controller's linear prediction."""
from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("pinocchio")

from sim_core.systems.arm import (
    control,  # noqa: E402
    panda,
)
from sim_core.systems.arm.arm import Arm  # noqa: E402

ENERGY_REL = 1e-6      # the bound over 10,000 free steps at T = 10 ms
FK_TOL = 1e-12         # m: two evaluations of the same DH chain differ by rounding only
JAC_TOL = 1e-6         # central differences with 1e-6 rad steps: O(h^2) ~ 1e-12, rounding ~1e-10
OVERSHOOT_SLACK = 0.5  # % of the step: the nonlinear arm against its linearization at the start
Q0 = [0.0, -0.3, 0.0, -2.2, 0.0, 1.9, 0.785]


def _dh_fk(angles):
    """TCP pose from the modified DH table alone (numpy, no Pinocchio)."""
    T = np.eye(4)
    for (a, d, alpha), th in zip(panda.DH, angles[:7]):
        ca, sa, ct, st = math.cos(alpha), math.sin(alpha), math.cos(th), math.sin(th)
        T = T @ np.array([[ct, -st, 0, a], [st * ca, ct * ca, -sa, -d * sa],
                          [st * sa, ct * sa, ca, d * ca], [0, 0, 0, 1]])
    gr = angles[7] if len(angles) > 7 else 0.0
    c, s = math.cos(gr), math.sin(gr)
    T = T @ np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, panda.FLANGE_D], [0, 0, 0, 1]])
    T = T @ np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, panda.TCP_D], [0, 0, 0, 1]])
    return T[:3, :3], T[:3, 3]


@pytest.fixture(scope="module", params=[False, True], ids=["7 joints", "8 joints (gripper)"])
def arm(request):
    return Arm(gripper_joint=request.param)


def _random_angles(arm, rng):
    lo = np.where(np.isfinite(arm.q_min), arm.q_min, -np.pi)
    hi = np.where(np.isfinite(arm.q_max), arm.q_max, np.pi)
    return rng.uniform(lo, hi)


def test_published_data_reach_the_model(arm):
    assert arm.nv == (8 if arm.gripper_joint else 7)
    masses = sum(arm.model.inertias[i].mass for i in range(arm.model.njoints))
    assert abs(masses - (sum(m for m, _, _ in panda.LINKS) + panda.GRIPPER[0])) < 1e-12
    assert np.allclose(arm.tau_max[:7], [87, 87, 87, 87, 12, 12, 12])
    assert np.allclose(arm.model.upperPositionLimit[:7], panda.Q_MAX)


def test_forward_kinematics_matches_the_dh_table(arm):
    rng = np.random.default_rng(0)
    for _ in range(50):
        a = _random_angles(arm, rng)
        R, p = arm.tcp_pose(arm.q_from_angles(a))
        R2, p2 = _dh_fk(a)
        assert np.abs(p - p2).max() < FK_TOL and np.abs(R - R2).max() < FK_TOL


def test_jacobian_matches_finite_differences(arm):
    rng = np.random.default_rng(1)
    h = 1e-6
    for _ in range(10):
        a = _random_angles(arm, rng)
        q = arm.q_from_angles(a)
        J = arm.tcp_jacobian(q)
        R0, _ = arm.tcp_pose(q)
        for j in range(arm.nv):
            dq = np.zeros(arm.nv)
            dq[j] = h
            Rp, pp = arm.tcp_pose(arm.integrate(q, dq))
            Rm, pm = arm.tcp_pose(arm.integrate(q, -dq))
            assert np.abs((pp - pm) / (2 * h) - J[:3, j]).max() < JAC_TOL
            W = (Rp - Rm) / (2 * h) @ R0.T                       # S(w) in world axes
            assert np.abs(np.array([W[2, 1], W[0, 2], W[1, 0]]) - J[3:, j]).max() < JAC_TOL


def test_mass_matrix_and_coriolis_obey_the_passivity_property(arm):
    """M = M^T > 0 and  dM/dt - 2 C  skew-symmetric (what makes the kinetic energy's rate
    tau^T qd)."""
    rng = np.random.default_rng(2)
    for _ in range(10):
        q = arm.q_from_angles(_random_angles(arm, rng))
        v = rng.normal(0, 1, arm.nv)
        M = arm.mass(q)
        assert np.allclose(M, M.T) and np.linalg.eigvalsh(M).min() > 0
        h = 1e-6
        Mdot = (arm.mass(arm.integrate(q, h * v)) - arm.mass(arm.integrate(q, -h * v))) / (2 * h)
        S = Mdot - 2 * arm.coriolis(q, v)
        assert np.abs(S + S.T).max() < 1e-6 * max(1.0, np.abs(Mdot).max())


def test_free_arm_keeps_its_energy_over_10000_steps(arm):
    rng = np.random.default_rng(3)
    q = arm.q_from_angles(Q0 + ([0.4] if arm.gripper_joint else []))
    v = rng.normal(0, 0.3, arm.nv)
    E0 = arm.energy(q, v)
    worst = 0.0
    for k in range(10_000):
        q, v = arm.step_free(q, v, 0.01)
        if k % 50 == 0:
            worst = max(worst, abs(arm.energy(q, v) / E0 - 1))
    assert worst < ENERGY_REL and abs(arm.energy(q, v) / E0 - 1) < ENERGY_REL
    assert np.abs(v).max() > 0.05          # it really moved the whole time


def _linear_overshoot(arm, q, gains, step, T=0.01, steps=400):
    """Overshoot (% of the step) of the closed loop linearized at q: M qdd + (J^T D J + d I) qd
    + J^T K J dq = J^T K step, integrated exactly (matrix exponential)."""
    from scipy.linalg import expm
    n = arm.nv
    J, M = arm.tcp_jacobian(q), arm.mass(q)
    Mi = np.linalg.inv(M)
    A = np.zeros((2 * n, 2 * n))
    A[:n, n:] = np.eye(n)
    A[n:, :n] = -Mi @ J.T @ np.diag(gains.K) @ J
    A[n:, n:] = -Mi @ (J.T @ np.diag(gains.D) @ J + gains.null_damping * np.eye(n))
    f = np.zeros(2 * n)
    f[n:] = Mi @ J.T @ (gains.K * step)
    Ad = expm(A * T)
    Bd = np.linalg.lstsq(A, (Ad - np.eye(2 * n)) @ f, rcond=None)[0]
    x, peak = np.zeros(2 * n), 0.0
    k = int(np.argmax(np.abs(step)))
    for _ in range(steps):
        x = Ad @ x + Bd
        peak = max(peak, float((J @ x[:n])[k] / step[k]))
    return 100 * (peak - 1)


@pytest.mark.parametrize("axis,size", [(0, 0.01), (2, -0.02), (1, 0.005)])
def test_admittance_settles_without_overshoot_beyond_the_linear_prediction(axis, size):
    arm = Arm()
    q = arm.q_from_angles(Q0)
    v = np.zeros(7)
    R0, p0 = arm.tcp_pose(q)
    gains = control.AdmittanceGains()
    step6 = np.zeros(6)
    step6[axis] = size
    predicted = _linear_overshoot(arm, q, gains, step6)
    xs = []
    for _ in range(300):
        q, v, _, _, _ = control.step(arm, q, v, 0.01, R0, p0 + step6[:3], np.zeros(6), gains)
        xs.append(arm.tcp_pose(q)[1][axis] - p0[axis])
    overshoot = 100 * (max(x / size for x in xs) - 1)
    assert overshoot <= predicted + OVERSHOOT_SLACK, (overshoot, predicted)
    R, p = arm.tcp_pose(q)
    assert np.abs(p - (p0 + step6[:3])).max() < 1e-6                # settled within 1 um
    assert np.abs(control.pose_error(R, p, R0, p)[3:]).max() < 1e-6  # and kept its orientation


def test_torque_and_joint_limits_hold_for_an_unreachable_set_pose():
    arm = Arm()
    q = arm.q_from_angles(Q0)
    v = np.zeros(7)
    R0, p0 = arm.tcp_pose(q)
    gains = control.AdmittanceGains()
    far = p0 + np.array([0.0, 0.0, 2.0])                         # 2 m up: out of reach
    worst_tau, worst_lim, worst_v = 0.0, -np.inf, 0.0
    for _ in range(300):
        q, v, tau, _, _ = control.step(arm, q, v, 0.01, R0, far, np.zeros(6), gains)
        worst_tau = max(worst_tau, float(np.max(np.abs(tau) / arm.tau_max)))
        worst_v = max(worst_v, float(np.max(np.abs(v) / arm.v_max)))
        a = arm.angles(q)
        worst_lim = max(worst_lim, float(np.max(np.maximum(a - arm.q_max, arm.q_min - a))))
    assert worst_tau <= 1.0 + 1e-12
    assert worst_v <= 1.0 + 2e-3                # the energy projection scales by O(T^2) < 2e-3
    assert worst_lim < 0.02                     # at most T qd_max / 2 = 13 mrad past a limit


def test_bad_robot_files_give_one_line_errors(tmp_path):
    from sim_core.systems.arm.arm import RobotFileError
    cases = {"missing.urdf": None, "junk.urdf": "<robot name='x'><link", "short.urdf":
             panda.urdf_text(False).replace('<joint name="joint7"', '<joint name="jointX"')}
    for name, text in cases.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        with pytest.raises(RobotFileError) as e:
            Arm(urdf=path)
        assert str(path) in str(e.value) and "\n" not in str(e.value)


def test_the_shipped_urdf_is_the_one_the_model_describes():
    from sim_core.paths import assets_dir
    for name, joint in (("panda", False), ("panda_gripper", True)):
        assert (assets_dir() / "robots" / f"{name}.urdf").read_text() == panda.urdf_text(joint)


def test_infinite_turn_gripper_turns_the_tool_while_the_wrist_holds_still():
    """Bolting: five turns of the tool about its axis at one per second come from the gripper
    joint alone; the tool point stays put and joints 1-7 keep their angles."""
    from sim_core.math.so3 import rot_axis_angle
    arm = Arm(gripper_joint=True, base_p=np.array([-0.45, 0.0, -0.2]))
    R0, p0 = rot_axis_angle([1, 0, 0], np.pi), np.array([0.0, 0.0, 0.15])
    q = arm.solve_ik(R0, p0, Q0 + [0.0])
    a0 = arm.angles(q)
    v = np.zeros(8)
    gains = control.AdmittanceGains()
    w = -2 * np.pi
    turned, prev = 0.0, a0[7]
    home = turn = None               # the controller's latches, kept from step to step
    for k in range(500):
        R_set = rot_axis_angle([0, 0, 1], w * (k + 1) * 0.01) @ R0
        q, v, _, home, turn = control.step(arm, q, v, 0.01, R_set, p0, np.array([0, 0, 0, 0, 0, w]), gains,
                                           flange_home=home, grip_turn=turn)
        a = arm.angles(q)
        turned += math.remainder(a[7] - prev, 2 * np.pi)
        prev = a[7]
    R, p = arm.tcp_pose(q)
    assert abs(turned - 5 * 2 * np.pi) < 0.1                     # five turns, within 6 deg
    assert np.abs(p - p0).max() < 1e-4
    assert np.abs(arm.angles(q)[:7] - a0[:7]).max() < 0.01


TURN_TOL = 1e-9        # rad: the carried error is sums of float increments over ~1,000 steps


def test_gripper_turn_error_does_not_wrap_and_slips_at_the_torque_limit():
    """The gripper spring's turn error across +-180 deg and several turns: from readings known
    only modulo a turn it is the continuous error (no wrap, either sign); held at the cap it
    slips with the set turn, and turning back releases it at once."""
    true = np.concatenate([np.linspace(0.0, 3.3 * 2 * np.pi, 400), np.linspace(3.3 * 2 * np.pi, -2.6 * 2 * np.pi, 700)])
    latch = None
    for x in true:                                   # no cap in reach: the continuous error
        e, latch = control.turn_error(control.wrap(x), latch, 1e3)
        assert abs(e - x) < TURN_TOL, (e, x)
    cap, latch, es = 0.375, None, []
    up = np.linspace(0.0, np.radians(400.0), 200)
    for x in up:                                     # the set runs 400 deg ahead of a held joint
        e, latch = control.turn_error(control.wrap(x), latch, cap)
        es.append(e)
    es = np.array(es)
    assert np.all(np.diff(es) >= 0.0) and es.min() >= 0.0 and abs(es[-1] - cap) < TURN_TOL
    for x in up[-1] - np.linspace(0.0, 2 * cap, 50):  # and turns back: released after cap, not 400 deg
        e, latch = control.turn_error(control.wrap(x), latch, cap)
        assert abs(e - max(-cap, cap - (up[-1] - x))) < TURN_TOL


def test_gripper_torque_keeps_its_sign_as_the_set_turns_past_180_degrees():
    """linearize at a held gripper (the nut jammed) while the set turn runs on to 400 deg, in
    0.5 deg steps: the gripper's spring torque never reverses (the old wrapped error did past
    180 deg), stays at the torque limit, and is zero once the set turns back by the slip angle."""
    from sim_core.math.so3 import rot_axis_angle
    arm = Arm(gripper_joint=True, base_p=np.array([-0.45, 0.0, -0.2]))
    R0, p0 = rot_axis_angle([1, 0, 0], np.pi), np.array([0.0, 0.0, 0.15])
    q = arm.solve_ik(R0, p0, Q0 + [0.0])
    v = np.zeros(8)
    gains = control.AdmittanceGains()
    cap = arm.tau_max[7] / gains.gripper_K
    home = turn = None
    taus = []
    # world yaw -theta turns the tool (pointing down) by +theta about its own axis
    for deg in np.arange(0.0, 400.5, 0.5):
        R_set = rot_axis_angle([0, 0, 1], -np.radians(deg)) @ R0
        tau0, _, home, turn = control.linearize(arm, q, v, 0.01, R_set, p0, np.zeros(6), gains, home, turn)
        taus.append(tau0[7])
    taus = np.array(taus)
    assert taus.min() >= 0.0, taus.argmin() * 0.5          # deg of set turn
    assert abs(taus[-1] - arm.tau_max[7]) < 1e-9
    for deg in np.arange(400.0, 400.0 - np.degrees(cap), -0.5):
        R_set = rot_axis_angle([0, 0, 1], -np.radians(deg)) @ R0
        tau0, _, home, turn = control.linearize(arm, q, v, 0.01, R_set, p0, np.zeros(6), gains, home, turn)
    R_set = rot_axis_angle([0, 0, 1], -np.radians(400.0) + cap) @ R0
    tau0, _, home, turn = control.linearize(arm, q, v, 0.01, R_set, p0, np.zeros(6), gains, home, turn)
    assert abs(tau0[7]) < 1e-9
