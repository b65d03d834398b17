"""The local contact model the physics loop publishes for the 1 kHz haptic loop (every 10 ms).

Multirate 6-DOF rendering: the 100 Hz physics pipeline (broad phase -> detection ->
clustering) runs at the proxy pose of its step and hands the haptic loop its clustered
contacts; between two publications the haptic loop moves the proxy 10 times and updates each
gap to first order in the pose change,

    x_i = p + R r_i,        d_i(p, R) = d_i,ref + n_i . (x_i - x_i,ref),

which is exact for a planar patch translated or rotated (the normal is held fixed) and first
order for curved ones.  The proxy then solves the contacts on its own PMI system
(``haptics.proxy``).

Frames (ARCHITECTURE sec. 5): ``_w`` world, ``_b`` proxy body (origin at its COM).  Normals
push the proxy out of the static part.  A C-space normal (seed 000 Sec. IV, eq. (8), a later
issue) has a slot: ``nc_w`` is a 6-vector [n_lin (world); n_ang (world axes)] with its gap
``dc`` at the reference pose; it is one more unilateral constraint  dc + nc_w . dq >= 0  with
dq = [p - p_ref; log(R R_ref^T)] (rotation vector in world axes).

Each contact carries its own friction coefficient mu (its pair's material,
``contact.materials``), so a proxy touching two parts of different materials feels each.

Besides the contacts, ``f_ext`` carries what the held body's couplings pull it with at the
physics state (a cable's tension on the end the hand holds, ``app.physics_loop.held_pull``):
the proxy feels it as a constant wrench until the next publication.  Its stiffness is the
cable's, seen through the physics step (a few hundred N/m for the winding's free length), far
below what the coupling to the device renders, so the 10 ms hold costs no stability.

Shared memory: ``to_array`` packs everything into ``PACKED_SIZE`` float64 values with room
for ``MAX_CONTACTS`` contacts, ``from_array`` checks and unpacks (a bad buffer is a
``ValueError``, never silent garbage).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from sim_core.math.so3 import log_so3

MAX_CONTACTS = 32
FORMAT_VERSION = 3.0                      # 3: f_ext (2: mu per contact; 1: one mu in the header)
# layout of the packed buffer: header, then the fixed-size blocks
_HDR = 5                                  # version, t, M, has_nc, dc
_P = _HDR                                 # p_ref_w (3)
_R = _P + 3                               # R_ref_wb (9, row-major)
_NC = _R + 9                              # nc_w (6)
_RB = _NC + 6                             # r_b (MAX_CONTACTS * 3)
_NW = _RB + 3 * MAX_CONTACTS              # n_w (MAX_CONTACTS * 3)
_D = _NW + 3 * MAX_CONTACTS               # d (MAX_CONTACTS)
_MU = _D + MAX_CONTACTS                   # mu (MAX_CONTACTS)
_FX = _MU + MAX_CONTACTS                  # f_ext (6): [f_w; tau_b]
PACKED_SIZE = _FX + 6                     # 285 float64 values
# a unit normal must be unit to this (the physics loop normalizes SDF gradients in float64)
UNIT_TOL = 1e-6
# a rotation matrix must be orthonormal to this
ROT_TOL = 1e-6


@dataclass(frozen=True)
class LocalContact:
    """Clustered contacts of the proxy at a reference pose (one physics step)."""
    t: float                  # s, physics time at which it was computed
    p_ref_w: np.ndarray       # (3,) m, proxy COM position it was computed at, world
    R_ref_wb: np.ndarray      # (3,3) proxy orientation it was computed at
    r_b: np.ndarray           # (M,3) m, contact points from the COM, body axes
    n_w: np.ndarray           # (M,3) unit normals, world, pushing the proxy out
    d: np.ndarray             # (M,) m, signed gaps at the reference pose (negative = penetration)
    mu: np.ndarray            # (M,) Coulomb friction coefficient of each contact (a number: all of them)
    nc_w: np.ndarray | None = None   # (6,) C-space normal [lin world; ang world] or None
    dc: float = 0.0           # C-space gap at the reference pose (units of nc_w . dq)
    f_ext: np.ndarray | None = None  # (6,) [N (world), N m (body axes)]: the held body's couplings'
                                     # pull at the physics state; None: none (zeros)

    def __post_init__(self):
        for name, shape in (("p_ref_w", (3,)), ("R_ref_wb", (3, 3))):
            object.__setattr__(self, name, np.ascontiguousarray(getattr(self, name), dtype=np.float64))
            if getattr(self, name).shape != shape:
                raise ValueError(f"LocalContact.{name}: shape {getattr(self, name).shape}, expected {shape}")
        r = np.ascontiguousarray(self.r_b, dtype=np.float64).reshape(-1, 3)
        n = np.ascontiguousarray(self.n_w, dtype=np.float64).reshape(-1, 3)
        d = np.ascontiguousarray(self.d, dtype=np.float64).reshape(-1)
        if not (len(r) == len(n) == len(d)):
            raise ValueError(f"LocalContact: {len(r)} points, {len(n)} normals, {len(d)} gaps")
        mu = np.asarray(self.mu, dtype=np.float64)
        if mu.ndim == 0:
            mu = np.full(len(d), float(mu))
        if mu.shape != (len(d),):
            raise ValueError(f"LocalContact.mu: shape {mu.shape}, expected ({len(d)},) or a number")
        object.__setattr__(self, "mu", np.ascontiguousarray(mu))
        object.__setattr__(self, "r_b", r)
        object.__setattr__(self, "n_w", n)
        object.__setattr__(self, "d", d)
        if self.nc_w is not None:
            nc = np.ascontiguousarray(self.nc_w, dtype=np.float64)
            if nc.shape != (6,):
                raise ValueError(f"LocalContact.nc_w: shape {nc.shape}, expected (6,)")
            object.__setattr__(self, "nc_w", nc)
        f = np.zeros(6) if self.f_ext is None else np.ascontiguousarray(self.f_ext, dtype=np.float64)
        if f.shape != (6,):
            raise ValueError(f"LocalContact.f_ext: shape {f.shape}, expected (6,)")
        object.__setattr__(self, "f_ext", f)

    def __len__(self) -> int:
        return int(self.d.shape[0])

    @staticmethod
    def empty(t: float, p_ref_w, R_ref_wb, mu: float = 0.0) -> LocalContact:
        """No contact near the proxy (the physics loop still publishes, so the age is known)."""
        return LocalContact(t, p_ref_w, R_ref_wb, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), mu)

    def to_array(self, out: np.ndarray | None = None) -> np.ndarray:
        """Pack into ``PACKED_SIZE`` float64 values (into ``out`` when given)."""
        m = len(self)
        if m > MAX_CONTACTS:
            raise ValueError(f"LocalContact: {m} contacts, at most {MAX_CONTACTS} fit the buffer")
        a = np.zeros(PACKED_SIZE) if out is None else out
        if a.shape != (PACKED_SIZE,):
            raise ValueError(f"LocalContact.to_array: buffer shape {a.shape}, expected ({PACKED_SIZE},)")
        a[:] = 0.0
        a[:_HDR] = (FORMAT_VERSION, self.t, m, 0.0 if self.nc_w is None else 1.0, self.dc)
        a[_P:_P + 3] = self.p_ref_w
        a[_R:_R + 9] = self.R_ref_wb.reshape(9)
        if self.nc_w is not None:
            a[_NC:_NC + 6] = self.nc_w
        a[_RB:_RB + 3 * m] = self.r_b.reshape(-1)
        a[_NW:_NW + 3 * m] = self.n_w.reshape(-1)
        a[_D:_D + m] = self.d
        a[_MU:_MU + m] = self.mu
        a[_FX:_FX + 6] = self.f_ext
        return a

    @classmethod
    def from_array(cls, a) -> LocalContact:
        """Unpack a ``to_array`` buffer; ValueError naming the field if it is not valid."""
        a = np.asarray(a, dtype=np.float64)
        if a.shape != (PACKED_SIZE,):
            raise ValueError(f"LocalContact buffer: shape {a.shape}, expected ({PACKED_SIZE},)")
        if a[0] != FORMAT_VERSION:
            raise ValueError(f"LocalContact buffer: version {a[0]!r}, expected {FORMAT_VERSION}")
        m = a[2]
        if not (m == int(m) and 0 <= m <= MAX_CONTACTS):
            raise ValueError(f"LocalContact buffer: contact count {m!r} not in 0..{MAX_CONTACTS}")
        m = int(m)
        mu = a[_MU:_MU + m].copy()
        used = np.concatenate([a[:_RB], a[_RB:_RB + 3 * m], a[_NW:_NW + 3 * m], a[_D:_D + m], mu, a[_FX:_FX + 6]])
        if not np.all(np.isfinite(used)):
            raise ValueError("LocalContact buffer: non-finite value")
        if m and not mu.min() >= 0.0:
            raise ValueError(f"LocalContact buffer: friction mu {mu.min()!r} < 0")
        R = a[_R:_R + 9].reshape(3, 3).copy()
        if np.abs(R.T @ R - np.eye(3)).max() > ROT_TOL:
            raise ValueError("LocalContact buffer: R_ref_wb is not a rotation")
        n = a[_NW:_NW + 3 * m].reshape(m, 3).copy()
        if m and np.abs(np.linalg.norm(n, axis=1) - 1.0).max() > UNIT_TOL:
            raise ValueError("LocalContact buffer: normal n_w is not unit")
        nc = a[_NC:_NC + 6].copy() if a[3] != 0.0 else None
        return cls(float(a[1]), a[_P:_P + 3].copy(), R, a[_RB:_RB + 3 * m].reshape(m, 3).copy(), n,
                   a[_D:_D + m].copy(), mu, nc, float(a[4]), a[_FX:_FX + 6].copy())


@njit(cache=True)
def gaps_kernel(r_b, n_w, d_ref, p_ref, R_ref, p, R):
    """x_i = p + R r_i and  d_i = d_ref,i + n_i . (x_i - x_i,ref);  returns (x_w (M,3), d (M,))."""
    m = r_b.shape[0]
    x = np.empty((m, 3))
    d = np.empty(m)
    for i in range(m):
        xi = p + R @ r_b[i]
        x0 = p_ref + R_ref @ r_b[i]
        x[i] = xi
        d[i] = d_ref[i] + n_w[i] @ (xi - x0)
    return x, d


@njit(cache=True)
def cspace_gap_kernel(nc, dc, p_ref, R_ref, p, R):
    """dc + nc . [p - p_ref; log(R R_ref^T)] (first-order C-space gap)."""
    dq = np.empty(6)
    dq[:3] = p - p_ref
    dq[3:] = log_so3(R @ R_ref.T)
    return dc + nc @ dq


def gaps_at(lc: LocalContact, p_w, R_wb) -> tuple[np.ndarray, np.ndarray]:
    """Contact points (M,3) world and first-order gaps (M,) at the proxy pose (p_w, R_wb)."""
    return gaps_kernel(lc.r_b, lc.n_w, lc.d, lc.p_ref_w, lc.R_ref_wb,
                       np.asarray(p_w, dtype=np.float64), np.asarray(R_wb, dtype=np.float64))
