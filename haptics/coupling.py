"""Four-channel passive virtual coupling between the haptic device and the proxy (6-DOF).

The coupling is a two-port: the device port (wrench out, velocity in, device base axes) and
the proxy port (a wrench F - B V+ for the proxy's PMI step).  Per tick, in this order:

1. **Workspace map.**  Device pose and twist (device base axes) go to a *handle* pose in the
   world: p_h = p_h0 + s R_map (p_dev - p_dev0),  R_h = exp(s_r log(R_d R_d0^T)) R_h0 with
   R_d = R_map R_dev; v_h = s R_map v_dev, w_h = s_r R_map w_dev (exact for s_r = 1 and for
   rotation about a fixed axis).  The device wrench is mapped back power-consistently,
   f_dev = s R_map^T f_h, tau_dev = s_r R_map^T tau_h, so f_dev . v_dev = f_h . v_h and the
   device feels the stiffness s^2 K (this is what ``max_stiffness`` clamps).
   The anchor (p_dev0, R_d0) -> (p_h0, R_h0) is set on the first tick to the proxy pose
   (zero initial stretch).
2. **Clutch / indexing.**  Pressing the clutch freezes the handle where it is (the proxy
   stays coupled to that still handle) and ramps the device output down; the device then
   moves freely.  On release the map is re-anchored so the handle continues from the frozen
   pose (the proxy's wrench is continuous) and the device output ramps back up from zero over
   ``clutch_ramp`` -- no force jump either way.
3. **Channels** (Lawrence's four-channel architecture as a virtual coupling; Kim & Lee,
   seed 000 refs. [37], [43]).  The spring-damper  f_vc = K e + B (V_h - V_p)  with
   e = [p_h - p_p (world); log(R_p^T R_h) (proxy body)] is the position/velocity channel
   both ways (C1 on the proxy, its reaction -f_vc on the device = C4).  C2 feeds the
   proxy's contact wrench f_env forward to the device, C3 feeds the operator's wrench
   estimate f_h^ forward to the proxy:
       device:  f_d = (1 - c2) (-f_vc) + c2 f_env,
       proxy:   F_p = (1 - c3) f_vc     + c3 f_h^,   f_h^ = low-pass(-f_d as sent).
   c2 = c3 = 0 is the classic two-channel coupling.  In static contact f_env = -F_p, and
   then f_d = f_env for any gains (no double counting); in free space the drag felt is
   (1 - c2) / (1 - c2 c3) of the two-channel drag.  c2 c3 < 1 is required (at c2 = c3 = 1
   no channel would hold the proxy to the handle).
   f_env is the environment's wrench on the proxy over its last tick (the one passed in,
   ``Proxy.env_wrench``: its contacts and the held body's couplings' pull, a cable's
   tension), so C2 renders it one tick (1 ms) late; the spring part is evaluated at the
   current samples.  (With the contacts alone, a pull that is no contact reached the hand
   only through the spring's 1 - c2 share: a wound cable's 0.64 N as 0.13 N.)
   Why c3 defaults to 0: without a force sensor the operator's wrench can only be estimated
   from what the device renders (optionally plus a device-mass model, ``device_mass``), and
   then, up to the estimator's filter and one tick, F_p = f_vc - c2 c3 (f_vc + f_env), i.e.
   M a_p = (1 - c2 c3)(f_vc + f_env): the proxy answers as if it weighed M / (1 - c2 c3).
   bench/transparency.py measures it: C2 alone cuts the sustained contact-force error ~2.6x
   and the free-space drag ~5x; adding c3 = 0.3 gives back part of both.  With a measured
   operator force (a device with a force sensor) C3 is the channel that makes the proxy's
   contact force follow the hand.
   The proxy side is evaluated at the tick's midpoint, as the drive of the physics loop
   (sim_core.dynamics.blocks.drive_terms): F0 - B_p V+ with B_p = (1 - c3)(K T/4 + B/2) --
   implicit and passive for any stiffness.
   3a. **Rotational slip.**  The rotation error is the shortest rotation from the proxy to
   the handle (``log_so3``), so it turns round as the handle passes 180 deg from a blocked
   proxy: a keyboard session held a docking plate at the torque limit, the error passed
   180 deg, the torque reversed in one tick and the plate rose 22 mm and spun 134 deg.  The
   handle is never allowed to wind that far: beyond ``rot_slip`` -- the angle at which
   the spring's torque reaches what the device can render, max_torque / (s_r k_rot), at most
   90 deg -- the map's rotation anchor slips with the hand, so the spring holds the proxy
   at the device's torque limit however far the hand turns on, and lets go as soon as the
   hand turns back.  (The slip only removes stored spring energy: passive.)
4. **Output shaping.**  Start-up ramp (0 -> 1 linearly over ``startup_ramp``), clutch ramp,
   the caller's output scale (the haptic loop's physics watchdog), then the device's force
   and torque limits (the wrench is scaled down, direction kept).
5. **Passivity observer / controller** (Hannaford & Ryu, discrete time) on the device port,
   with the energy counted as it really flows.  The device holds each tick's wrench until the
   next one (zero-order hold), so the energy the coupling received over tick k-1 -> k is
       E_k = E_{k-1} - f_{k-1} . (x_k - x_{k-1}) - tau_{k-1} . log(R_k R_{k-1}^T)
   (J; f, tau the wrench finally sent, device base axes; x, R the device pose samples): the
   held wrench against the motion that actually happened under it.  (The textbook observer
   charges f_k . v_k T instead -- the new force against the last tick's motion.  Measured
   against the held force that let the coupling deliver net energy: 0.75 J in position steps,
   up to 81 J in 500 Hz chirps; issue 16.)  The rotational term is exact for rotation about
   a fixed axis within the tick, second order otherwise.
   The controller must choose f_k before x_{k+1} exists, so it predicts the tick's travel as
   v_k T: if E_k - T f_k . v_k would be negative, a damper -alpha v dissipates exactly the
   predicted deficit: alpha is shared between the translational and rotational sub-ports that
   inject energy, and capped at ``max_damping`` / ``max_rot_damping``; if a cap binds, the
   rest is removed by scaling the whole output wrench down (energy bounding).  Both only
   shrink the output, so limits still hold.  What no controller can see in advance is the
   tick's own travel: the settled E can fall below zero by at most |f| |x_{k+1} - x_k - v_k T|
   in one tick, and the next ticks' controller repays it.  Prediction fails against motion
   it cannot see (a device jumping between still ticks, vibration near the sampling rate), so
   a **deficit cap** makes the bound hard: with a deficit D = -E_k > 0 the wrench sent is
   scaled by 1 - D / W*, W* = max over the ticks so far of (f_max |dx| + tau_max |dtheta|),
   the most work the limits allow in the largest one-tick travel seen.  By induction
   D <= W* at every tick, whatever the motion: if the next travel is within W*'s, D grows by
   at most (1 - D/W*) W*; if it is larger, W* grows with it.  The hand can never receive more
   than what it put in plus the limits' work over one tick's travel -- the tick no controller
   can see in advance.  (A deficit fades the output; energy the hand puts in restores it.)
   tests/haptics/test_zoh_passivity.py checks it over 200 adversarial runs with a simulated
   hand.
6. **Rate limit** (last, on the wrench actually sent): the force and the torque change by at
   most ``max_force_rate`` T and ``max_torque_rate`` T per tick (the device's rated rate of
   change; a 20 N reversal takes 8 ms at 5 N/ms).  A stall or a contact model that jumps can
   no longer reverse the force in one tick (35-39 N in one tick were seen in a stalled bolting
   session).  Only a shrink toward zero bypasses it -- the deficit cap, or a fault (zero
   force at once); neither reverses the force.  The energy settled on the next
   tick is that of the rate-limited wrench, so the controller sees whatever the limit added.

Conventions: device inputs in device base axes, quaternions [w, x, y, z]; twists of the
proxy [v_w; w_b], wrenches [f_w; tau_b]; the device wrench is [f; tau] in device base axes,
the wrench the device applies to the operator's hand.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numba import njit

from sim_core.math.so3 import exp_so3, log_so3

# slots of CouplingState.scal
T_ELAPSED, ENERGY, CLUTCHED, CLUTCH_GAIN, ANCHORED, PC_ALPHA_LIN, PC_ALPHA_ROT, PC_BOUNDED, \
    NONFINITE, HELD, RATE_LIMITED, WORK_CAP, DEFICIT_SCALE, SLIPPED = range(14)
# NONFINITE counts ticks refused (non-zero: off until reset); HELD is 1 once a wrench is held over
# a valid device pose (the next tick settles its energy); RATE_LIMITED counts rate-limited
# ticks; WORK_CAP (J) is the largest one-tick work the limits allow over the travel seen so
# far, max_k (f_max |dx_k| + tau_max |dtheta_k|); DEFICIT_SCALE the last tick's deficit factor;
# SLIPPED counts ticks on which the rotational slip moved the map (step 3a)
N_SCAL = 14


@dataclass(frozen=True)
class DeviceLimits:
    """The device's capability record (what it can render safely), device units."""
    max_force: float = 8.0           # N
    max_torque: float = 0.5          # N m
    max_stiffness: float = 3000.0    # N/m, translational stiffness felt at the device
    max_rot_stiffness: float = 5.0   # N m/rad
    max_damping: float = 20.0        # N s/m, cap of the passivity controller's damper
    max_rot_damping: float = 0.05    # N m s/rad
    max_force_rate: float = 5000.0   # N/s: 5 N per 1 ms tick.  At the rated stiffness
                                     # (3000 N/m) a hand at 1.5 m/s changes the force 4.5 N/ms,
                                     # so legitimate contact is not blunted; a reversal at
                                     # the 8 N limit takes 3.2 ms instead of one tick
    max_torque_rate: float = 300.0   # N m/s: 0.3 N m per tick (the same for 0.5 N m at 5 N m/rad)


@dataclass(frozen=True)
class CouplingGains:
    """Spring-damper (world units, proxy side) and the feed-forward channel gains."""
    k_lin: float = 2000.0            # N/m
    k_rot: float = 2.0               # N m/rad
    b_lin: float = 20.0              # N s/m
    b_rot: float = 0.01              # N m s/rad
    c2: float = 0.8                  # contact wrench -> device (0: two-channel)
    c3: float = 0.0                  # operator wrench estimate -> proxy (0: two-channel); see
                                     # the module docstring for why the default is 0

    @staticmethod
    def two_channel(**kw) -> CouplingGains:
        return CouplingGains(c2=0.0, c3=0.0, **kw)


@dataclass(frozen=True)
class Workspace:
    """Device -> world map."""
    scale: float = 1.0               # world m per device m
    rot_scale: float = 1.0           # world rad per device rad
    R_map: np.ndarray = field(default_factory=lambda: np.eye(3))   # device base axes -> world axes


# the rotational slip never lets the spring's rotation error come near pi, where the shortest
# rotation -- the error the spring pulls along -- turns round (a torque reversal in one tick)
MAX_ROT_SLIP = math.pi / 2


def rot_slip_angle(max_torque_world: float, k_rot: float) -> float:
    """rad: the rotation error at which the spring's torque reaches what the device can render
    (``max_torque`` in world units); winding past it would store torque the hand never feels.
    At most ``MAX_ROT_SLIP``; a device without torque output gets ``MAX_ROT_SLIP``."""
    if max_torque_world > 0.0 and k_rot > 0.0:
        return min(MAX_ROT_SLIP, max_torque_world / k_rot)
    return MAX_ROT_SLIP


class CouplingParams(NamedTuple):
    """Everything the kernel needs that is fixed between re-configurations."""
    K: np.ndarray            # (6,) [N/m x3; N m/rad x3], after the max_stiffness clamp
    B: np.ndarray            # (6,) [N s/m x3; N m s/rad x3]
    c2: float
    c3: float
    scale: float
    rot_scale: float
    R_map: np.ndarray        # (3,3)
    max_force: float         # N
    max_torque: float        # N m
    max_damping: float       # N s/m
    max_rot_damping: float   # N m s/rad
    max_force_rate: float    # N/s
    max_torque_rate: float   # N m/s
    startup_ramp: float      # s
    clutch_ramp: float       # s
    est_alpha: float         # low-pass factor of the operator-wrench estimate per tick
    device_mass: float       # kg, model of the device's moving mass in the estimate (0: none)
    pc_enabled: bool
    rot_slip: float = math.pi / 2   # rad, the most rotational stretch the spring keeps (slip beyond)


class CouplingState(NamedTuple):
    """Mutable arrays, changed in place by the kernel."""
    anchor_p: np.ndarray     # (3,3) m: device position at the anchor (world axes), handle at
                             #   the anchor, frozen handle (clutch) -- rows
    anchor_R: np.ndarray     # (3,3,3) the same for orientations
    scal: np.ndarray         # (N_SCAL,) t, E (J), clutched, clutch gain, anchored, PC alphas, ...
    f_est: np.ndarray        # (6,) operator wrench estimate [N world; N m world]
    v_prev: np.ndarray       # (3,) m/s, device velocity of the last tick (base axes)
    handle_p: np.ndarray     # (3,) m, handle position of the last tick (world)
    handle_R: np.ndarray     # (3,3)
    f_held: np.ndarray       # (6,) [N; N m] device base axes: the wrench sent last tick, held now
    dev_p: np.ndarray        # (3,) m, device position of the last valid sample (base axes)
    dev_R: np.ndarray        # (3,3) device orientation of the last valid sample (base axes)


def new_state() -> CouplingState:
    scal = np.zeros(N_SCAL)
    scal[CLUTCH_GAIN] = 1.0
    return CouplingState(np.zeros((3, 3)), np.tile(np.eye(3), (3, 1, 1)), scal,
                         np.zeros(6), np.zeros(3), np.zeros(3), np.eye(3), np.zeros(6),
                         np.zeros(3), np.eye(3))


@njit(cache=True)
def quat_to_R(q):
    """[w, x, y, z] (normalized here) -> 3x3."""
    n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    if not (n > 0.0 and math.isfinite(n)):       # no rotation: the kernel's non-finite path refuses it
        return np.full((3, 3), np.nan)
    w, x, y, z = q[0] / n, q[1] / n, q[2] / n, q[3] / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


@njit(cache=True)
def _finite(a):
    for x in a.ravel():
        if not math.isfinite(x):
            return False
    return True


@njit(cache=True)
def _clamp_norm(v, lim):
    n = math.sqrt(v @ v)
    if n > lim:
        return v * (lim / n)
    return v


@njit(cache=True)
def passivity_control(f, v, E_prev, T, max_damping, max_rot_damping):
    """Hannaford-Ryu controller on a 6-D port.  f (6,) wrench sent to the device, v (6,) its
    twist, E_prev >= 0 the observer total.  Returns (f', E, alpha_lin, alpha_rot, bounded J)
    with E = E_prev - T f'.v >= 0 (to rounding)."""
    E = E_prev - T * (f @ v)
    if E >= 0.0:
        return f, E, 0.0, 0.0, 0.0
    deficit = -E
    i_lin = max(0.0, f[0] * v[0] + f[1] * v[1] + f[2] * v[2])    # power injected per sub-port
    i_rot = max(0.0, f[3] * v[3] + f[4] * v[4] + f[5] * v[5])
    if i_lin + i_rot <= 0.0:           # nothing injects by the prediction: the deficit (at most
        return f, E, 0.0, 0.0, 0.0     # W*, a past tick's travel) is left to the deficit cap
    share = min(1.0, deficit / (T * (i_lin + i_rot)))
    vl = v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
    vr = v[3] * v[3] + v[4] * v[4] + v[5] * v[5]
    # (|v|^2 can underflow to 0 while f.v > 0 does not: then no damper, the bounding below acts)
    a_lin = min(share * i_lin / vl, max_damping) if (i_lin > 0.0 and vl > 0.0) else 0.0
    a_rot = min(share * i_rot / vr, max_rot_damping) if (i_rot > 0.0 and vr > 0.0) else 0.0
    g = f.copy()
    g[:3] -= a_lin * v[:3]
    g[3:] -= a_rot * v[3:]
    q = g @ v
    E = E_prev - T * q
    bounded = 0.0
    if E < 0.0 and q > 0.0:
        # a damper cap bound: scale the whole wrench so that T sigma q = E_prev exactly
        sigma = max(0.0, E_prev) / (T * q)
        bounded = (1.0 - sigma) * T * q
        g *= sigma
        E = E_prev - T * (g @ v)
    return g, E, a_lin, a_rot, bounded


@njit(cache=True, nogil=True)
def coupling_kernel(P, S, p_dev, R_dev, v_dev, w_dev, clutch, p_p, R_p, V_p, W_env, T, out_scale):
    """One tick.  Device sample (base axes), proxy state (p_w, R_wb, V=[v_w; w_b]), its last
    contact wrench W_env [f_w; tau_b], and a factor in [0, 1] on the device output (the
    watchdog's; applied before the limits and the observer, so the energy counted is the
    energy sent).  Returns (device wrench (6,), F (6,), B (6,6)); the observer total and the
    rest of the state are updated in S."""
    sc = S.scal
    Rm = P.R_map
    if sc[NONFINITE] != 0.0 or not (
            _finite(p_dev) and _finite(R_dev) and _finite(v_dev) and _finite(w_dev)
            and _finite(p_p) and _finite(R_p) and _finite(V_p) and _finite(W_env)
            and math.isfinite(out_scale)):
        # never pass garbage on: no wrench either way, and the coupling stays off until
        # ``reset()`` (the haptic loop ends the session at once).  The wrench held over the
        # tick that ended at the bad sample cannot be settled (no pose to settle against):
        # that one tick's work is the ledger's only gap.  Staying off -- rather than settling
        # zero against the whole gap at the next good sample -- keeps a device that sends
        # garbage every other sample from switching the observer off (0.40 J delivered
        # against a 0.008 J bound, measured) and a dropout's travel out of W*.
        sc[NONFINITE] += 1.0
        sc[T_ELAPSED] += T
        S.f_held[:] = 0.0
        return np.zeros(6), np.zeros(6), np.zeros((6, 6))
    # zero-order-hold settlement: the wrench held since the last sample, against the motion
    if sc[HELD] != 0.0:
        dx = p_dev - S.dev_p
        dth = log_so3(R_dev @ S.dev_R.T)
        sc[ENERGY] -= S.f_held[:3] @ dx + S.f_held[3:] @ dth
        sc[WORK_CAP] = max(sc[WORK_CAP], P.max_force * math.sqrt(dx @ dx)
                           + P.max_torque * math.sqrt(dth @ dth))
    S.dev_p[:] = p_dev
    S.dev_R[:] = R_dev
    sc[HELD] = 1.0
    p_d = Rm @ p_dev
    R_d = Rm @ R_dev
    if sc[ANCHORED] == 0.0:
        S.anchor_p[0] = p_d
        S.anchor_R[0] = R_d
        S.anchor_p[1] = p_p
        S.anchor_R[1] = R_p
        sc[ANCHORED] = 1.0
    # clutch release: re-anchor the map so that the handle continues from the frozen pose
    if (not clutch) and sc[CLUTCHED] != 0.0:
        S.anchor_p[0] = p_d
        S.anchor_R[0] = R_d
        S.anchor_p[1] = S.anchor_p[2]
        S.anchor_R[1] = S.anchor_R[2]
        sc[CLUTCHED] = 0.0
    V_hw = np.zeros(6)                 # handle twist, world axes
    dR = np.eye(3)
    if sc[CLUTCHED] == 0.0:
        p_h = S.anchor_p[1] + P.scale * (p_d - S.anchor_p[0])
        dR = R_d @ S.anchor_R[0].T
        if P.rot_scale != 1.0:
            dR = exp_so3(P.rot_scale * log_so3(dR))
        R_h = dR @ S.anchor_R[1]
        V_hw[:3] = P.scale * (Rm @ v_dev)
        V_hw[3:] = P.rot_scale * (Rm @ w_dev)
        if clutch:                     # clutch pressed: freeze the handle where it is now
            S.anchor_p[2] = p_h
            S.anchor_R[2] = R_h
            sc[CLUTCHED] = 1.0
    if sc[CLUTCHED] != 0.0:
        p_h = S.anchor_p[2].copy()
        R_h = S.anchor_R[2].copy()
        V_hw[:] = 0.0
    S.handle_p[:] = p_h
    S.handle_R[:] = R_h
    # ramps
    target = 0.0 if sc[CLUTCHED] != 0.0 else 1.0
    rate = T / P.clutch_ramp if P.clutch_ramp > 0.0 else 1.0
    if sc[CLUTCH_GAIN] < target:
        sc[CLUTCH_GAIN] = min(target, sc[CLUTCH_GAIN] + rate)
    else:
        sc[CLUTCH_GAIN] = max(target, sc[CLUTCH_GAIN] - rate)
    g_start = min(1.0, sc[T_ELAPSED] / P.startup_ramp) if P.startup_ramp > 0.0 else 1.0
    gain = g_start * sc[CLUTCH_GAIN] * min(1.0, max(0.0, out_scale))
    # C1/C4: spring-damper, proxy side at the tick's start (explicit, for the device)
    e = np.empty(6)
    e[:3] = p_h - p_p
    e[3:] = log_so3(R_p.T @ R_h)
    # rotational slip (step 3a): the handle never winds more than ``rot_slip`` ahead of the
    # proxy; beyond it the map's rotation anchor follows the hand (as a clutch would)
    th = math.sqrt(e[3:] @ e[3:])
    if th > P.rot_slip:
        e[3:] *= P.rot_slip / th
        R_h = R_p @ exp_so3(e[3:])
        if sc[CLUTCHED] != 0.0:
            S.anchor_R[2] = R_h
        else:
            S.anchor_R[1] = dR.T @ R_h
        S.handle_R[:] = R_h
        sc[SLIPPED] += 1.0
    V_h = np.empty(6)                  # handle twist in the proxy's convention [v_w; w in body]
    V_h[:3] = V_hw[:3]
    V_h[3:] = R_p.T @ V_hw[3:]
    f_vc = P.K * e + P.B * (V_h - V_p)
    # device side, world axes at the handle: (1 - c2) (-f_vc) + c2 f_env   (C4, C2)
    fw = np.empty(6)
    fw[:3] = -(1.0 - P.c2) * f_vc[:3] + P.c2 * W_env[:3]
    fw[3:] = R_p @ (-(1.0 - P.c2) * f_vc[3:] + P.c2 * W_env[3:])
    f = np.empty(6)
    f[:3] = gain * P.scale * (Rm.T @ fw[:3])
    f[3:] = gain * P.rot_scale * (Rm.T @ fw[3:])
    f[:3] = _clamp_norm(f[:3], P.max_force)
    f[3:] = _clamp_norm(f[3:], P.max_torque)
    v = np.empty(6)
    v[:3] = v_dev
    v[3:] = w_dev
    # passivity controller on the device port, on the predicted travel v T (module docstring)
    if P.pc_enabled:
        f, _, a_l, a_r, bnd = passivity_control(f, v, sc[ENERGY], T, P.max_damping, P.max_rot_damping)
        sc[PC_ALPHA_LIN], sc[PC_ALPHA_ROT], sc[PC_BOUNDED] = a_l, a_r, bnd
    # rate limit on what is sent: the device's rated rate of change
    df = _clamp_norm(f[:3] - S.f_held[:3], P.max_force_rate * T)
    dt_ = _clamp_norm(f[3:] - S.f_held[3:], P.max_torque_rate * T)
    g = np.empty(6)
    g[:3] = S.f_held[:3] + df
    g[3:] = S.f_held[3:] + dt_
    if np.any(g != f):
        sc[RATE_LIMITED] += 1.0
    # deficit cap (the hard bound): with a deficit D = -E > 0 the wrench is scaled by
    # 1 - D / WORK_CAP, so that even the worst motion in the coming tick leaves D <= WORK_CAP
    sigma = 1.0
    if P.pc_enabled and sc[ENERGY] < 0.0:
        sigma = max(0.0, 1.0 - (-sc[ENERGY]) / sc[WORK_CAP]) if sc[WORK_CAP] > 0.0 else 0.0
        g *= sigma
    sc[DEFICIT_SCALE] = sigma
    f = g
    S.f_held[:] = f
    # C3: operator wrench estimate, world axes: the hand balances what the device renders
    # plus (with a device model) the handle's inertial force m_d a_d
    meas = np.empty(6)
    a_dev = (v_dev - S.v_prev) / T if sc[T_ELAPSED] > 0.0 else np.zeros(3)
    S.v_prev[:] = v_dev
    meas[:3] = (Rm @ (P.device_mass * a_dev - f[:3])) / P.scale
    meas[3:] = -(Rm @ f[3:]) / P.rot_scale
    S.f_est[:] = S.f_est + P.est_alpha * (meas - S.f_est)
    # proxy side: midpoint spring-damper (dynamics.blocks.drive_terms form) + C3 feed-forward
    Bd = P.K * (T / 4.0) + P.B / 2.0
    F0 = P.K * e + (P.K * (T / 2.0) + P.B) * V_h - Bd * V_p
    F = (1.0 - P.c3) * F0
    F[:3] += P.c3 * S.f_est[:3]
    F[3:] += P.c3 * (R_p.T @ S.f_est[3:])
    Bm = np.zeros((6, 6))
    for i in range(6):
        Bm[i, i] = (1.0 - P.c3) * Bd[i]
    sc[T_ELAPSED] += T
    return f, F, Bm


class Coupling:
    """Stateful wrapper around ``coupling_kernel``; one per device."""

    def __init__(self, gains: CouplingGains = CouplingGains(), limits: DeviceLimits = DeviceLimits(),
                 workspace: Workspace = Workspace(), *, startup_ramp: float = 0.5,
                 clutch_ramp: float = 0.1, estimator_cutoff: float = 30.0, device_mass: float = 0.0,
                 T: float = 1e-3, controller_enabled: bool = True):
        if not (0.0 <= gains.c2 <= 1.0 and 0.0 <= gains.c3 <= 1.0 and gains.c2 * gains.c3 < 1.0):
            raise ValueError(f"CouplingGains: c2={gains.c2}, c3={gains.c3}; need 0 <= c <= 1, c2 c3 < 1")
        if workspace.scale <= 0.0 or workspace.rot_scale <= 0.0:
            raise ValueError("Workspace: scale and rot_scale must be positive")
        s, sr = workspace.scale, workspace.rot_scale
        # the device feels s^2 K (power-consistent map): clamp K to the device's capability
        k_lin = min(gains.k_lin, limits.max_stiffness / (s * s))
        k_rot = min(gains.k_rot, limits.max_rot_stiffness / (sr * sr))
        self.gains, self.limits, self.workspace = gains, limits, workspace
        self.params = CouplingParams(
            K=np.array([k_lin] * 3 + [k_rot] * 3), B=np.array([gains.b_lin] * 3 + [gains.b_rot] * 3),
            c2=float(gains.c2), c3=float(gains.c3), scale=float(s), rot_scale=float(sr),
            R_map=np.ascontiguousarray(workspace.R_map, dtype=np.float64),
            max_force=float(limits.max_force), max_torque=float(limits.max_torque),
            max_damping=float(limits.max_damping), max_rot_damping=float(limits.max_rot_damping),
            max_force_rate=float(limits.max_force_rate), max_torque_rate=float(limits.max_torque_rate),
            startup_ramp=float(startup_ramp), clutch_ramp=float(clutch_ramp),
            est_alpha=float(1.0 - math.exp(-2.0 * math.pi * estimator_cutoff * T)),
            device_mass=float(device_mass), pc_enabled=bool(controller_enabled),
            rot_slip=rot_slip_angle(limits.max_torque / sr, k_rot))
        self.state = new_state()

    # --- observer and controller ------------------------------------------------------
    @property
    def observer_energy(self) -> float:
        """J, energy the coupling has received from the device up to the last sample: every
        held wrench against the motion under it (>= 0 when passive, to one tick's travel)."""
        return float(self.state.scal[ENERGY])

    @property
    def controller_enabled(self) -> bool:
        return bool(self.params.pc_enabled)

    @controller_enabled.setter
    def controller_enabled(self, on: bool) -> None:
        self.params = self.params._replace(pc_enabled=bool(on))

    @property
    def pc_damping(self) -> tuple[float, float]:
        """(N s/m, N m s/rad) damping the controller added on the last tick."""
        return float(self.state.scal[PC_ALPHA_LIN]), float(self.state.scal[PC_ALPHA_ROT])

    @property
    def clutched(self) -> bool:
        return bool(self.state.scal[CLUTCHED])

    @property
    def handle_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """(p_w, R_wb) of the scaled device (the proxy's set pose) on the last tick."""
        return self.state.handle_p.copy(), self.state.handle_R.copy()

    def reset(self) -> None:
        """Forget anchor, ramps and energy (re-anchors on the next tick, ramps up again)."""
        self.state = new_state()

    def step(self, sample_p, sample_q, sample_v, sample_w, proxy, contact_wrench, T: float,
             clutch: bool = False, out_scale: float = 1.0):
        """One tick.

        sample_p (3,) m, sample_q (4,) [w, x, y, z], sample_v (3,) m/s, sample_w (3,) rad/s: the
        device sample in its base axes; proxy: anything with p_w, R_wb, V (a ``Proxy``) or a
        tuple (p_w, R_wb, V); contact_wrench (6,) [f_w; tau_b] the proxy's contact wrench of its
        last tick; out_scale in [0, 1] scales the device output (a watchdog's ramp) before
        the limits and the passivity observer.  Returns (device wrench (6,) [N; N m] base axes, F (6,), B (6,6)) -- the
        proxy's coupling wrench is F - B V+ (``Proxy.step``).
        """
        if isinstance(proxy, tuple):
            p_p, R_p, V_p = (np.asarray(a, dtype=np.float64) for a in proxy)
        else:
            p_p, R_p, V_p = proxy.p_w, proxy.R_wb, proxy.V
        R_dev = quat_to_R(np.asarray(sample_q, dtype=np.float64))
        return coupling_kernel(self.params, self.state, np.asarray(sample_p, dtype=np.float64), R_dev,
                               np.asarray(sample_v, dtype=np.float64), np.asarray(sample_w, dtype=np.float64),
                               bool(clutch), p_p, R_p, V_p, np.asarray(contact_wrench, dtype=np.float64),
                               float(T), float(out_scale))
