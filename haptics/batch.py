"""The haptic loop compiled end to end, for tests and benchmarks (not for the live device).

Two drivers: ``run`` plays a device trace (the device's motion prescribed: an infinitely
stiff hand), ``run_hand`` closes the loop through a simulated hand that the held device
wrench acts on, and books the energy the device delivers to it.

``run`` feeds a recorded or scripted device trace through exactly the kernels that
``Coupling.step`` and ``Proxy.step`` call (``coupling_kernel``, ``proxy_kernel``), in the
order of the live tick -- coupling (device sample, proxy state, last contact wrench) -> proxy
step -> next tick -- with one fixed ``LocalContact``, without the Python overhead of the
classes (tens of simulated seconds per wall second), which is what the passivity tests
need; the tests check it against the classes tick by tick.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
from numba import njit

from haptics.coupling import ENERGY, WORK_CAP, Coupling, CouplingState, coupling_kernel
from haptics.local_contact import LocalContact
from haptics.proxy import Proxy, proxy_kernel
from sim_core.math.so3 import exp_so3


@dataclass(frozen=True)
class DeviceTrace:
    """A device's samples at the haptic rate, in its base axes."""
    p: np.ndarray            # (N,3) m
    R: np.ndarray            # (N,3,3) stylus orientation
    v: np.ndarray            # (N,3) m/s
    w: np.ndarray            # (N,3) rad/s (base axes)
    clutch: np.ndarray       # (N,) bool

    def __len__(self) -> int:
        return int(self.p.shape[0])


@dataclass(frozen=True)
class Trace:
    """What the loop did, one row per tick."""
    energy: np.ndarray       # (N,) J, passivity observer total after the tick
    work_cap: np.ndarray     # (N,) J, the observer's one-tick work bound W* after the tick
    f_dev: np.ndarray        # (N,6) device wrench sent [N; N m], device base axes
    w_env: np.ndarray        # (N,6) proxy contact wrench of the tick [N world; N m world]
    p_proxy: np.ndarray      # (N,3) m, proxy COM after the tick
    min_gap: np.ndarray      # (N,) m, smallest contact gap at the start of the tick


@njit(cache=True, nogil=True)
def _run(P, S, m, J, p, R, V, W, budget, beta, iterations, tol, dp, dR, dv, dw, clutch,
         r_b, n_w, d, p_ref, R_ref, mu, nc, dc, use_nc, T):
    n = dp.shape[0]
    energy = np.empty(n)
    work_cap = np.empty(n)
    f_dev = np.empty((n, 6))
    w_env = np.empty((n, 6))
    p_out = np.empty((n, 3))
    gaps = np.empty(n)
    lam = np.zeros((r_b.shape[0], 3))
    for k in range(n):
        f, F, B = coupling_kernel(P, S, dp[k], dR[k], dv[k], dw[k], clutch[k], p, R, V, W, T, 1.0)
        R0 = R
        p, R, V, W, lam, lam_c, sweeps, gmin, _, _, budget = proxy_kernel(
            m, J, p, R, V, F, B, T, r_b, n_w, d, p_ref, R_ref, mu, nc, dc, use_nc, beta,
            iterations, tol, lam, budget)
        energy[k] = S.scal[ENERGY]
        work_cap[k] = S.scal[WORK_CAP]
        f_dev[k] = f
        w_env[k, :3] = W[:3]
        w_env[k, 3:] = R0 @ W[3:]
        p_out[k] = p
        gaps[k] = gmin
    return p, R, V, W, budget, energy, work_cap, f_dev, w_env, p_out, gaps


_ZERO6 = np.zeros(6)


def run(coupling: Coupling, proxy: Proxy, lc: LocalContact | None, trace: DeviceTrace, T: float) -> Trace:
    """Run the loop over ``trace``; ``coupling`` and ``proxy`` end in the final state."""
    if lc is None:
        lc = LocalContact.empty(0.0, proxy.p_w, proxy.R_wb)
    use_nc = lc.nc_w is not None
    p, R, V, W, budget, energy, work_cap, f_dev, w_env, p_out, gaps = _run(
        coupling.params, coupling.state, proxy.mass, proxy.inertia_b, proxy.p_w, proxy.R_wb,
        proxy.V, proxy.contact_wrench, proxy.budget, proxy.beta, proxy.iterations, proxy.tol,
        np.ascontiguousarray(trace.p, dtype=np.float64), np.ascontiguousarray(trace.R, dtype=np.float64),
        np.ascontiguousarray(trace.v, dtype=np.float64), np.ascontiguousarray(trace.w, dtype=np.float64),
        np.ascontiguousarray(trace.clutch, dtype=np.bool_), lc.r_b, lc.n_w, lc.d, lc.p_ref_w,
        lc.R_ref_wb, lc.mu, lc.nc_w if use_nc else _ZERO6, lc.dc, use_nc, T)
    proxy.p_w, proxy.R_wb, proxy.V, proxy.contact_wrench, proxy.budget = p, R, V, W, budget
    return Trace(energy, work_cap, f_dev, w_env, p_out, gaps)


def run_many(coupling: Coupling, proxy: Proxy, lcs: list[LocalContact], traces: list[DeviceTrace],
             T: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Many independent runs, each from copies of ``coupling``'s and ``proxy``'s current state
    (neither is changed) with its own local contact and trace, all traces of one length.
    Returns (observer energy (B,N) J, its one-tick work bound W* (B,N) J, min gap (B,N) m,
    largest device force (B,) N)."""
    energy = np.empty((len(traces), len(traces[0])))
    work_cap = np.empty_like(energy)
    gaps = np.empty_like(energy)
    fmax = np.empty(len(traces))
    for i, (lc, tr) in enumerate(zip(lcs, traces)):
        cp = copy.copy(coupling)
        cp.state = CouplingState(*(a.copy() for a in coupling.state))
        pr = copy.deepcopy(proxy)
        out = run(cp, pr, lc, tr, T)
        energy[i], work_cap[i], gaps[i] = out.energy, out.work_cap, out.min_gap
        fmax[i] = np.linalg.norm(out.f_dev[:, :3], axis=1).max()
    return energy, work_cap, gaps, fmax


# --- a simulated hand on the device ---------------------------------------------------

@dataclass(frozen=True)
class Hand:
    """An operator's hand holding the handle (the device's moving mass included).  Translation:
    a mass on a spring and damper to a set point that moves as the operator wills; rotation: a
    hinge about a fixed unit axis (the wrist), the same on the angle.  The device's wrench is
    held over each tick (zero-order hold) and acts on it; torque across the hinge does no work."""
    mass: float              # kg
    k: float                 # N/m, grip stiffness to the set point
    b: float                 # N s/m
    axis: np.ndarray         # (3,) unit, device base axes
    inertia: float           # kg m^2 about the axis
    k_rot: float             # N m/rad
    b_rot: float             # N m s/rad


@dataclass
class HandState:
    """The hand's state, device base axes."""
    x: np.ndarray            # (3,) m, handle position
    xd: np.ndarray           # (3,) m/s
    phi: float = 0.0         # rad, about Hand.axis
    phid: float = 0.0        # rad/s
    x_prev: np.ndarray | None = None   # (3,) m, last tick's sample (backward differences)
    phi_prev: float = 0.0


@dataclass(frozen=True)
class HandRun:
    """Per tick of a run with a hand."""
    delivered: np.ndarray    # (N,) J, energy the device has delivered to the hand so far
    energy: np.ndarray       # (N,) J, the coupling's observer total (settled up to the tick)
    work_cap: np.ndarray     # (N,) J, the observer's one-tick work bound W*
    f_dev: np.ndarray        # (N,6) [N; N m] device wrench sent (held over the next tick)
    x: np.ndarray            # (N,3) m, hand position at the tick's sample
    contact_work: np.ndarray  # (N,) J, the proxy's contacts' work over the tick (T W_c . V_mid)


@njit(cache=True)
def _hand_acc(x, xd, phi, phid, xs, phis, f, tau, m_h, k_h, b_h, I_h, kr_h, br_h):
    a = (f + k_h * (xs - x) - b_h * xd) / m_h
    al = (tau + kr_h * (phis - phi) - br_h * phid) / I_h
    return a, al


@njit(cache=True, nogil=True)
def _run_hand(P, S, m, J, p, R, V, W, budget, beta, iterations, tol, m_h, k_h, b_h, axis, I_h, kr_h, br_h,
              x, xd, phi, phid, x_prev, phi_prev, backward, R0, xs, phis, k0, nticks, ns,
              r_b, n_w, d, p_ref, R_ref, mu, nc, dc, use_nc, T):
    delivered = np.empty(nticks)
    energy = np.empty(nticks)
    work_cap = np.empty(nticks)
    f_dev = np.empty((nticks, 6))
    xs_out = np.empty((nticks, 3))
    work_c = np.empty(nticks)
    lam = np.zeros((r_b.shape[0], 3))
    h = T / ns
    total = 0.0
    for j in range(nticks):
        k = k0 + j
        R_dev = exp_so3(axis * phi) @ R0
        if backward:
            v_dev = (x - x_prev) / T
            w_dev = axis * ((phi - phi_prev) / T)
        else:
            v_dev = xd.copy()
            w_dev = axis * phid
        # np.bool_(False): a literal False is a second specialization of the kernel (~10 s cold)
        f, F, B = coupling_kernel(P, S, x, R_dev, v_dev, w_dev, np.bool_(False), p, R, V, W, T, 1.0)
        energy[j] = S.scal[ENERGY]
        work_cap[j] = S.scal[WORK_CAP]
        f_dev[j] = f
        xs_out[j] = x
        p, R, V, W, lam, _, _, _, _, work_c[j], budget = proxy_kernel(
            m, J, p, R, V, F, B, T, r_b, n_w, d, p_ref, R_ref, mu, nc, dc, use_nc, beta,
            iterations, tol, lam, budget)
        # the hand over the tick under the held wrench (RK4; the set point linear in a substep)
        fl = f[:3]
        ta = axis @ f[3:]
        x0, phi0 = x.copy(), phi
        for i in range(ns):
            s0, s1 = xs[k * ns + i], xs[k * ns + i + 1]
            q0, q1 = phis[k * ns + i], phis[k * ns + i + 1]
            sm, qm = 0.5 * (s0 + s1), 0.5 * (q0 + q1)
            a1, l1 = _hand_acc(x, xd, phi, phid, s0, q0, fl, ta, m_h, k_h, b_h, I_h, kr_h, br_h)
            a2, l2 = _hand_acc(x + 0.5 * h * xd, xd + 0.5 * h * a1, phi + 0.5 * h * phid,
                               phid + 0.5 * h * l1, sm, qm, fl, ta, m_h, k_h, b_h, I_h, kr_h, br_h)
            a3, l3 = _hand_acc(x + 0.5 * h * (xd + 0.5 * h * a1), xd + 0.5 * h * a2,
                               phi + 0.5 * h * (phid + 0.5 * h * l1), phid + 0.5 * h * l2, sm, qm,
                               fl, ta, m_h, k_h, b_h, I_h, kr_h, br_h)
            a4, l4 = _hand_acc(x + h * (xd + 0.5 * h * a2), xd + h * a3,
                               phi + h * (phid + 0.5 * h * l2), phid + h * l3, s1, q1,
                               fl, ta, m_h, k_h, b_h, I_h, kr_h, br_h)
            x = x + h * xd + (h * h / 6.0) * (a1 + a2 + a3)
            xd = xd + (h / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
            phi = phi + h * phid + (h * h / 6.0) * (l1 + l2 + l3)
            phid = phid + (h / 6.0) * (l1 + 2.0 * l2 + 2.0 * l3 + l4)
        # the held wrench's work on the hand over the tick: exact for whatever path it took
        total += fl @ (x - x0) + ta * (phi - phi0)
        delivered[j] = total
        x_prev, phi_prev = x0, phi0
    return p, R, V, W, budget, x, xd, phi, phid, x_prev, phi_prev, delivered, energy, work_cap, f_dev, xs_out, work_c


def run_hand(coupling: Coupling, proxy: Proxy, hand: Hand, hs: HandState, R0: np.ndarray,
             set_x: np.ndarray, set_phi: np.ndarray, substeps: int, segments: list[tuple[int, LocalContact]],
             T: float, backward: bool) -> HandRun:
    """Run the haptic loop against ``hand`` whose set point is ``set_x`` (N*substeps+1, 3) m and
    ``set_phi`` (N*substeps+1,) rad, sampled every T/substeps; the device reads the hand's pose
    (orientation exp(axis phi) R0) and either its exact velocity or, with ``backward``,
    backward differences as a driver does.  ``segments``: (number of ticks, local contact) in
    order -- the contact model may jump between segments.  ``coupling``, ``proxy`` and ``hs``
    end in the final state."""
    out = []
    k0 = 0
    base = 0.0
    x_prev = hs.x.copy() if hs.x_prev is None else hs.x_prev
    for nticks, lc in segments:
        use_nc = lc.nc_w is not None
        (proxy.p_w, proxy.R_wb, proxy.V, proxy.contact_wrench, proxy.budget, hs.x, hs.xd, hs.phi, hs.phid, x_prev,
         hs.phi_prev, delivered, energy, work_cap, f_dev, xs, work_c) = _run_hand(
            coupling.params, coupling.state, proxy.mass, proxy.inertia_b, proxy.p_w, proxy.R_wb,
            proxy.V, proxy.contact_wrench, proxy.budget, proxy.beta, proxy.iterations, proxy.tol, hand.mass,
            hand.k, hand.b, np.asarray(hand.axis, dtype=np.float64), hand.inertia, hand.k_rot,
            hand.b_rot, hs.x, hs.xd, hs.phi, hs.phid, x_prev, hs.phi_prev, backward, R0,
            set_x, set_phi, k0, nticks, substeps, lc.r_b, lc.n_w, lc.d, lc.p_ref_w, lc.R_ref_wb, lc.mu,
            lc.nc_w if use_nc else _ZERO6, lc.dc, use_nc, T)
        out.append((delivered + base, energy, work_cap, f_dev, xs, work_c))
        base += delivered[-1]
        k0 += nticks
    hs.x_prev = x_prev
    return HandRun(*(np.concatenate([o[i] for o in out]) for i in range(6)))
