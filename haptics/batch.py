"""The haptic loop compiled end to end, for tests and benchmarks (not for the live device).

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

from haptics.coupling import ENERGY, Coupling, CouplingState, coupling_kernel
from haptics.local_contact import LocalContact
from haptics.proxy import Proxy, proxy_kernel


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
    f_dev: np.ndarray        # (N,6) device wrench sent [N; N m], device base axes
    w_env: np.ndarray        # (N,6) proxy contact wrench of the tick [N world; N m world]
    p_proxy: np.ndarray      # (N,3) m, proxy COM after the tick
    min_gap: np.ndarray      # (N,) m, smallest contact gap at the start of the tick


@njit(cache=True, nogil=True)
def _run(P, S, m, J, p, R, V, W, beta, iterations, tol, dp, dR, dv, dw, clutch,
         r_b, n_w, d, p_ref, R_ref, mu, nc, dc, use_nc, T):
    n = dp.shape[0]
    energy = np.empty(n)
    f_dev = np.empty((n, 6))
    w_env = np.empty((n, 6))
    p_out = np.empty((n, 3))
    gaps = np.empty(n)
    lam = np.zeros((r_b.shape[0], 3))
    for k in range(n):
        f, F, B = coupling_kernel(P, S, dp[k], dR[k], dv[k], dw[k], clutch[k], p, R, V, W, T)
        R0 = R
        p, R, V, W, lam, lam_c, sweeps, gmin, _, _ = proxy_kernel(
            m, J, p, R, V, F, B, T, r_b, n_w, d, p_ref, R_ref, mu, nc, dc, use_nc, beta,
            iterations, tol, lam)
        energy[k] = S.scal[ENERGY]
        f_dev[k] = f
        w_env[k, :3] = W[:3]
        w_env[k, 3:] = R0 @ W[3:]
        p_out[k] = p
        gaps[k] = gmin
    return p, R, V, W, energy, f_dev, w_env, p_out, gaps


_ZERO6 = np.zeros(6)


def run(coupling: Coupling, proxy: Proxy, lc: LocalContact | None, trace: DeviceTrace, T: float) -> Trace:
    """Run the loop over ``trace``; ``coupling`` and ``proxy`` end in the final state."""
    if lc is None:
        lc = LocalContact.empty(0.0, proxy.p_w, proxy.R_wb)
    use_nc = lc.nc_w is not None
    p, R, V, W, energy, f_dev, w_env, p_out, gaps = _run(
        coupling.params, coupling.state, proxy.mass, proxy.inertia_b, proxy.p_w, proxy.R_wb,
        proxy.V, proxy.contact_wrench, proxy.beta, proxy.iterations, proxy.tol,
        np.ascontiguousarray(trace.p, dtype=np.float64), np.ascontiguousarray(trace.R, dtype=np.float64),
        np.ascontiguousarray(trace.v, dtype=np.float64), np.ascontiguousarray(trace.w, dtype=np.float64),
        np.ascontiguousarray(trace.clutch, dtype=np.bool_), lc.r_b, lc.n_w, lc.d, lc.p_ref_w,
        lc.R_ref_wb, lc.mu, lc.nc_w if use_nc else _ZERO6, lc.dc, use_nc, T)
    proxy.p_w, proxy.R_wb, proxy.V, proxy.contact_wrench = p, R, V, W
    return Trace(energy, f_dev, w_env, p_out, gaps)


def run_many(coupling: Coupling, proxy: Proxy, lcs: list[LocalContact], traces: list[DeviceTrace],
             T: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Many independent runs, each from copies of ``coupling``'s and ``proxy``'s current state
    (neither is changed) with its own local contact and trace, all traces of one length.
    Returns (observer energy (B,N) J, min gap (B,N) m, largest device force (B,) N)."""
    energy = np.empty((len(traces), len(traces[0])))
    gaps = np.empty_like(energy)
    fmax = np.empty(len(traces))
    for i, (lc, tr) in enumerate(zip(lcs, traces)):
        cp = copy.copy(coupling)
        cp.state = CouplingState(*(a.copy() for a in coupling.state))
        pr = copy.deepcopy(proxy)
        out = run(cp, pr, lc, tr, T)
        energy[i], gaps[i] = out.energy, out.min_gap
        fmax[i] = np.linalg.norm(out.f_dev[:, :3], axis=1).max()
    return energy, gaps, fmax
