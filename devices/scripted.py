"""A scripted device: the handle follows a fixed, seeded trajectory -- for tests and benchmarks.

A ``Trajectory`` maps script time t (s, from the first read) to the pose and its rates,
``(p, q, v, w)`` in the device frame (``v``, ``w`` are the exact time derivatives of ``p`` and
of the orientation, ``w`` in the device frame, so a consumer may check them against finite
differences).  The device ignores the forces written to it (an infinitely stiff hand) but
records every one, with the script time of the read before it, for the tests.

Built-ins, all inside the device workspace (radius 0.1 m):

* ``approach_and_turn`` (bolting): from above and off the bolt axis (the device z axis, bolt
  top at z = 0), move onto the axis, descend onto the bolt top, press down, then turn
  clockwise seen from above (tightening a right-hand thread) while advancing one pitch per
  revolution -- at every instant, since yaw and z share one blend -- the set point kept
  ``press`` below the thread so the coupling pushes down.
* ``insert`` (peg-in-hole): move over the hole axis, descend into the hole.
* ``adversarial(seed, kind)``: inputs meant to break a coupling (passivity tests):
  ``random`` -- Ornstein-Uhlenbeck velocity random walk, reflected at the workspace boundary;
  ``impulsive`` -- steps: the handle jumps (within one 1 ms sample) to random poses at random
  times and rests between jumps; ``high_frequency`` -- sums of 100-400 Hz sinusoids in
  position and about one axis in orientation, on top of a random centre.
  The same (seed, kind) gives bit-identical trajectories.

Every segment uses the quintic min-jerk blend s(tau) = 10 tau^3 - 15 tau^4 + 6 tau^5 (zero
velocity and acceleration at both ends, peak speed 1.875 times the mean), so velocities are
continuous: no built-in hand starts or stops with a step in velocity.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from devices.base import (
    Capability,
    Device,
    DeviceSample,
    clamp_to_ball,
    quat_about_z,
    quat_from_rotvec,
    quat_mul,
    quat_to_rotvec,
    register,
)

SCRIPTED_CAPABILITY = Capability(
    name="scripted", dof_in=6, dof_out=6, max_force=20.0, max_torque=1.0, max_stiffness=5000.0,
    max_damping=50.0, workspace_radius=0.1, rate_hz=1000.0)

# Finite-difference step for trajectories given as a bare pose function (central difference:
# error ~ h^2 |p'''| ~ 1e-12 m/s for the motions here, far below float noise at 1 kHz).
FD_STEP_S = 1e-6
# Grid of the sampled adversarial trajectories (random, impulsive): one haptic period.
GRID_DT_S = 1e-3
# Adversarial trajectories stay inside this fraction of the workspace radius.
BOUND_FRACTION = 0.9

ADVERSARIAL_KINDS = ("random", "impulsive", "high_frequency")

Pose = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]   # p, q, v, w


@dataclass(frozen=True)
class Trajectory:
    """A pose over script time: ``traj(t) -> (p, q, v, w)``; held still after ``duration``."""
    name: str
    duration: float                         # s; the pose is held (v = w = 0) after it
    fn: Callable[[float], Pose]

    def __call__(self, t: float) -> Pose:
        if t >= self.duration:
            p, q, _, _ = self.fn(self.duration)
            return p, q, np.zeros(3), np.zeros(3)
        return self.fn(max(t, 0.0))

    @staticmethod
    def from_pose(fn: Callable[[float], tuple], duration: float = math.inf,
                  name: str = "custom") -> Trajectory:
        """Wrap ``fn(t) -> (p, q)``; rates by central differences (``FD_STEP_S``)."""
        def full(t: float) -> Pose:
            p, q = (np.asarray(x, dtype=np.float64) for x in fn(t))
            p0, q0 = (np.asarray(x, dtype=np.float64) for x in fn(t - FD_STEP_S))
            p1, q1 = (np.asarray(x, dtype=np.float64) for x in fn(t + FD_STEP_S))
            v = (p1 - p0) / (2.0 * FD_STEP_S)
            # spatial angular velocity: q1 = exp(w 2h) q0  =>  w = log(q1 q0^-1) / 2h
            q0inv = q0 * np.array([1.0, -1.0, -1.0, -1.0])
            w = quat_to_rotvec(quat_mul(q1, q0inv)) / (2.0 * FD_STEP_S)
            return p, q / np.linalg.norm(q), v, w
        return Trajectory(name, duration, full)


# -- built-in trajectories -----------------------------------------------------------------

def _minjerk(tau: float) -> tuple[float, float]:
    """s(tau) and ds/dtau of the quintic blend, tau clipped to [0, 1]."""
    tau = min(max(tau, 0.0), 1.0)
    return (tau ** 3 * (10.0 - 15.0 * tau + 6.0 * tau * tau),
            30.0 * tau * tau * (1.0 - tau) ** 2)


def _keyframes(name: str, keys: list[tuple[float, tuple, float]]) -> Trajectory:
    """Min-jerk segments through (time, position, yaw) keys; rotation about the device z."""
    ts = np.array([k[0] for k in keys])
    ps = np.array([k[1] for k in keys], dtype=np.float64)
    yaws = np.array([k[2] for k in keys])

    def fn(t: float) -> Pose:
        i = int(np.searchsorted(ts, t, side="right"))
        if i == 0:
            return ps[0].copy(), quat_about_z(yaws[0]), np.zeros(3), np.zeros(3)
        if i >= len(ts):
            return ps[-1].copy(), quat_about_z(yaws[-1]), np.zeros(3), np.zeros(3)
        T = ts[i] - ts[i - 1]
        tau = (t - ts[i - 1]) / T
        s, ds = _minjerk(tau)
        dp, dyaw = ps[i] - ps[i - 1], yaws[i] - yaws[i - 1]
        yaw = yaws[i - 1] + s * dyaw
        return (ps[i - 1] + s * dp, quat_about_z(yaw), dp * (ds / T),
                np.array([0.0, 0.0, dyaw * ds / T]))
    return Trajectory(name, float(ts[-1]), fn)


def approach_and_turn(start=(0.04, 0.03, 0.06), above: float = 0.015, press: float = 0.002,
                      pitch: float = 0.005, turns: float = 3.0, turn_rate: float = math.pi,
                      move_time: float = 1.0) -> Trajectory:
    """Bolting: onto the axis, down onto the bolt top (z = 0), press, turn ``turns`` times.

    Turning is clockwise seen from above (yaw decreasing), advancing ``pitch`` (m) per
    revolution down the axis; ``turn_rate`` (rad/s) is the mean rate of the turning segment.
    """
    t_turn = 2.0 * math.pi * turns / turn_rate
    t1, t2, t3 = move_time, 2.0 * move_time, 2.5 * move_time
    keys = [
        (0.0, tuple(start), 0.0),
        (t1, (0.0, 0.0, above), 0.0),                      # over the bolt axis
        (t2, (0.0, 0.0, 0.0), 0.0),                        # onto the bolt top
        (t3, (0.0, 0.0, -press), 0.0),                     # press down
        (t3 + t_turn, (0.0, 0.0, -press - pitch * turns), -2.0 * math.pi * turns),   # fasten
    ]
    return _keyframes("approach_and_turn", keys)


def insert(start=(-0.03, 0.02, 0.06), above: float = 0.01, depth: float = 0.06,
           speed: float = 0.01, move_time: float = 1.0) -> Trajectory:
    """Peg-in-hole: over the hole axis (device z, hole top at z = 0), then straight down
    ``depth`` (m) at mean ``speed`` (m/s)."""
    t1, t2 = move_time, 1.5 * move_time
    keys = [
        (0.0, tuple(start), 0.0),
        (t1, (0.0, 0.0, above), 0.0),                      # over the hole axis
        (t2, (0.0, 0.0, 0.0), 0.0),                        # at the entry
        (t2 + depth / speed, (0.0, 0.0, -depth), 0.0),     # inserted
    ]
    return _keyframes("insert", keys)


def _sampled(name: str, P: np.ndarray, Q: np.ndarray, dt: float) -> Trajectory:
    """Trajectory through grid poses: p piecewise linear; rotation at a constant spatial rate
    over each interval (q(t) = exp(w_k (t - t_k)) q_k), so v, w are exact derivatives."""
    V = np.diff(P, axis=0) / dt
    W = np.array([quat_to_rotvec(quat_mul(Q[k + 1], Q[k] * [1.0, -1.0, -1.0, -1.0])) / dt
                  for k in range(len(Q) - 1)])
    n = len(P) - 1

    def fn(t: float) -> Pose:
        k = min(int(t / dt), n - 1)
        s = t - k * dt
        q = quat_mul(quat_from_rotvec(W[k] * s), Q[k])
        return P[k] + V[k] * s, q / np.linalg.norm(q), V[k].copy(), W[k].copy()
    return Trajectory(name, n * dt, fn)


def adversarial(seed: int, kind: str, duration: float = 2.0, radius: float = 0.1) -> Trajectory:
    """Seeded inputs that try to break the coupling; bounded to ``BOUND_FRACTION * radius``."""
    if kind not in ADVERSARIAL_KINDS:
        raise ValueError(f"adversarial kind {kind!r}: expected one of {', '.join(ADVERSARIAL_KINDS)}")
    rng = np.random.default_rng([int(seed), ADVERSARIAL_KINDS.index(kind)])
    R = BOUND_FRACTION * radius
    name = f"adversarial:{kind}:{seed}"
    if kind == "high_frequency":
        return _high_frequency(rng, R, duration, name)
    n = int(round(duration / GRID_DT_S))
    P = np.empty((n + 1, 3))
    Q = np.empty((n + 1, 4))
    if kind == "random":
        # Ornstein-Uhlenbeck velocity (correlation time 0.1 s, rms speed ~0.3 m/s), with
        # the radial velocity reflected at the boundary; angular velocity likewise (~2 rad/s)
        tau, s_v, s_w = 0.1, 0.3, 2.0
        a = math.exp(-GRID_DT_S / tau)
        b = math.sqrt(1.0 - a * a)
        p, q = rng.uniform(-0.3, 0.3, 3) * R, np.array([1.0, 0.0, 0.0, 0.0])
        v, w = rng.normal(0.0, s_v, 3), rng.normal(0.0, s_w, 3)
        for k in range(n + 1):
            P[k], Q[k] = p, q
            v = a * v + b * rng.normal(0.0, s_v, 3)
            w = a * w + b * rng.normal(0.0, s_w, 3)
            p = p + v * GRID_DT_S
            r = np.linalg.norm(p)
            if r > R:                                   # reflect off the sphere
                nrm = p / r
                p = nrm * (2.0 * R - r)
                v = v - 2.0 * (v @ nrm) * nrm if v @ nrm > 0 else v
            q = quat_mul(quat_from_rotvec(w * GRID_DT_S), q)
            q /= np.linalg.norm(q)
    else:  # impulsive: rest, then jump within one grid step; ~20 jumps per second
        p = rng.uniform(-0.5, 0.5, 3) * R
        q = np.array([1.0, 0.0, 0.0, 0.0])
        for k in range(n + 1):
            P[k], Q[k] = p, q
            if rng.random() < 20.0 * GRID_DT_S:
                p = clamp_to_ball(p + rng.uniform(-0.5, 0.5, 3) * R, R)
                q = quat_mul(quat_from_rotvec(rng.uniform(-0.5, 0.5, 3)), q)
                q /= np.linalg.norm(q)
    return _sampled(name, P, Q, GRID_DT_S)


def _high_frequency(rng: np.random.Generator, R: float, duration: float, name: str) -> Trajectory:
    m = 4                                           # sinusoids in position
    f = rng.uniform(100.0, 400.0, m)                # Hz
    amp = rng.uniform(0.2e-3, 2.0e-3, m)            # m
    ph = rng.uniform(0.0, 2.0 * math.pi, m)
    dirs = rng.normal(size=(m, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    c = clamp_to_ball(rng.uniform(-0.5, 0.5, 3) * R, R - amp.sum())
    g = rng.uniform(100.0, 400.0, 2)                # Hz, rotation about one fixed axis
    b = rng.uniform(0.005, 0.05, 2)                 # rad
    psi = rng.uniform(0.0, 2.0 * math.pi, 2)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    om, gm = 2.0 * math.pi * f, 2.0 * math.pi * g

    def fn(t: float) -> Pose:
        s, co = np.sin(om * t + ph), np.cos(om * t + ph)
        p = c + (amp * s) @ dirs
        v = (amp * om * co) @ dirs
        th = float(b @ np.sin(gm * t + psi))
        thd = float((b * gm) @ np.cos(gm * t + psi))
        return p, quat_from_rotvec(th * axis), v, thd * axis
    return Trajectory(name, duration, fn)


def press(start=(0.04, 0.03, 0.06), depth: float = 0.03, move_time: float = 1.0) -> Trajectory:
    """What a keyboard user leaning on the part does: over the static part's axis, down onto
    its top (z = 0), then on down to ``depth`` (m) below it -- far past where the coupling's
    force reaches the device's limit -- and held still there."""
    keys = [
        (0.0, tuple(start), 0.0),
        (move_time, (0.0, 0.0, 0.01), 0.0),               # over the axis
        (2.0 * move_time, (0.0, 0.0, 0.0), 0.0),          # onto the top
        (2.5 * move_time, (0.0, 0.0, -depth), 0.0),       # leaning on it: held from here on
    ]
    return _keyframes("press", keys)


BUILTINS = {"approach_and_turn": approach_and_turn, "insert": insert, "press": press}


# -- the device ------------------------------------------------------------------------------

class ScriptedDevice(Device):
    """Plays a ``Trajectory`` (or a bare ``fn(t) -> (p, q)``); records the forces written.

    Script time is ``now - t0``; ``t0`` defaults to the ``now`` of the first read.
    ``forces`` holds ``(script time of the last read, clamped wrench)`` for every write.
    """

    def __init__(self, trajectory: Trajectory | Callable, capability: Capability = SCRIPTED_CAPABILITY,
                 t0: float | None = None, buttons: Callable[[float], int] | None = None):
        super().__init__(capability)
        if not isinstance(trajectory, Trajectory):
            trajectory = Trajectory.from_pose(trajectory)
        self.trajectory = trajectory
        self.t0 = t0
        self._buttons = buttons
        self._t = 0.0
        self.forces: list[tuple[float, np.ndarray]] = []

    @property
    def finished(self) -> bool:
        return self._t >= self.trajectory.duration

    def read(self, now: float) -> DeviceSample:
        self._require_open()
        if self.t0 is None:
            self.t0 = now
        self._t = now - self.t0
        p, q, v, w = self.trajectory(self._t)
        return DeviceSample(t=now, p=p, q=q, v=v, w=w,
                            buttons=self._buttons(self._t) if self._buttons else 0)

    def _apply_force(self, wrench: np.ndarray) -> None:
        self.forces.append((self._t, wrench.copy()))

    def forces_array(self) -> np.ndarray:
        """(N, 7): script time, then the wrench."""
        if not self.forces:
            return np.zeros((0, 7))
        return np.array([np.concatenate(([t], f)) for t, f in self.forces])


def scripted_device(name: str, **kw) -> ScriptedDevice:
    """``"approach_and_turn"``, ``"insert"``, ``"press"`` or ``"adversarial:KIND[:SEED]"``; keyword
    arguments ``capability``, ``t0`` and ``buttons`` go to the device, the rest to the
    trajectory builder."""
    dev_kw = {k: kw.pop(k) for k in ("capability", "t0", "buttons") if k in kw}
    parts = name.split(":")
    if parts[0] == "adversarial" and len(parts) in (2, 3):
        seed = kw.pop("seed", 0)
        if len(parts) == 3:
            try:
                seed = int(parts[2])
            except ValueError:
                raise ValueError(f"scripted device {name!r}: seed {parts[2]!r} is not an integer") from None
        traj = adversarial(seed, parts[1], **kw)
    elif len(parts) == 1 and name in BUILTINS:
        traj = BUILTINS[name](**kw)
    else:
        raise ValueError(f"scripted device {name!r}: expected approach_and_turn, insert, press or "
                         f"adversarial:KIND[:SEED] with KIND in {', '.join(ADVERSARIAL_KINDS)}")
    return ScriptedDevice(traj, **dev_kw)


@register("scripted", "scripted:NAME (approach_and_turn, insert, press, adversarial:KIND[:SEED])")
def _open_scripted(arg: str, **kw) -> ScriptedDevice:
    return scripted_device(arg, **kw)
