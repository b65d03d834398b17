"""Small SO(3) helpers shared by the physics kernels.

Conventions (ARCHITECTURE.md sec. 5): rotations are 3x3 matrices inside kernels; at the
boundaries (configs, summaries, logs) quaternions are written **[w, x, y, z]** (scalar
first) -- this is the one place that order is defined.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def skew(a):
    """S(a) with S(a) b = a x b."""
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def cross(a, b) -> np.ndarray:
    """a x b of two 3-vectors: np.cross's products and differences, bit for bit, without its
    broadcasting set-up (16 us against 2 us a call, measured; the arm's controller calls it
    every step)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


@njit(cache=True)
def exp_so3(w):
    """Rotation matrix exp(S(w)) (Rodrigues), accurate for small |w|."""
    out = np.empty((3, 3))
    exp_so3_into(w, out)
    return out


@njit(cache=True, inline="always")
def exp_so3_into(w, out):
    """``exp_so3`` into out (3,3), nothing allocated (a kernel's loop over bodies)."""
    th2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    if th2 < 1e-16:
        a, b = 1.0 - th2 / 6.0, 0.5 - th2 / 24.0
    else:
        th = math.sqrt(th2)
        a, b = math.sin(th) / th, (1.0 - math.cos(th)) / th2
    poly_into(w, a, b, out)


@njit(cache=True, inline="always")
def poly_into(th, x, y, out):
    """out = I + x S(th) + y S(th)^2 (3x3), S(th)^2 = th th^T - |th|^2 I: Rodrigues' form, which
    with the right coefficients is exp(S(th)) (``exp_so3_into``) or its Jacobians
    (``dynamics.couplings``)."""
    t2 = th[0] * th[0] + th[1] * th[1] + th[2] * th[2]
    for i in range(3):
        for j in range(3):
            out[i, j] = y * th[i] * th[j]
        out[i, i] += 1.0 - y * t2
    out[0, 1] -= x * th[2]
    out[1, 0] += x * th[2]
    out[0, 2] += x * th[1]
    out[2, 0] -= x * th[1]
    out[1, 2] -= x * th[0]
    out[2, 1] += x * th[0]


@njit(cache=True)
def cayley(a):
    """Cayley map  cay(a) = (I - S(a)/2)^-1 (I + S(a)/2)  (an exact rotation for every a).

    Closed form: I + 4 / (4 + |a|^2) (S(a) + S(a)^2 / 2).  cay(a)^-1 = cay(a)^T = cay(-a), and
    cay(a) = exp(S(a)) + O(|a|^3): the rotation by 2 atan(|a|/2) about a, so
    exp(S(a)) = cay(tan(|a|/2) / (|a|/2) a).  The midpoint momentum update of PMI is a Cayley
    rotation (``pmi`` module docstring)."""
    K = skew(a)
    c = 4.0 / (4.0 + a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
    return np.eye(3) + c * (K + 0.5 * (K @ K))


@njit(cache=True)
def exp_so3_batch(W):
    """exp(S(w)) for every row of W (n, 3): (n, 3, 3)."""
    out = np.empty((W.shape[0], 3, 3))
    for i in range(W.shape[0]):
        out[i] = exp_so3(W[i])
    return out


@njit(cache=True)
def log_so3(R):
    """Rotation vector w with exp(S(w)) = R (|w| <= pi)."""
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    c = min(1.0, max(-1.0, c))
    th = math.acos(c)
    v = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if th < 1e-6:
        return 0.5 * (1.0 + th * th / 6.0) * v
    if math.pi - th < 1e-4:
        # near pi: axis from the symmetric part, sign from v
        B = 0.5 * (R + R.T) - c * np.eye(3)
        k = 0
        for i in range(3):
            if B[i, i] > B[k, k]:
                k = i
        # B = (1 - c) a a^T: column k is (1 - c) a_k a; normalize it (dividing by
        # sqrt(B[k, k]) alone left a factor sqrt(1 - c) ~ sqrt(2): a 180 deg error read 255 deg)
        axis = B[:, k] / math.sqrt(max(B[0, k] ** 2 + B[1, k] ** 2 + B[2, k] ** 2, 1e-300))
        if axis @ v < 0.0:
            axis = -axis
        return th * axis
    return th / (2.0 * math.sin(th)) * v


def quat_to_matrix(q) -> np.ndarray:
    """[w, x, y, z] -> 3x3 rotation (normalizes q)."""
    w, x, y, z = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def matrix_to_quat(R) -> np.ndarray:
    """3x3 rotation -> [w, x, y, z] with w >= 0."""
    R = np.asarray(R, dtype=np.float64)
    t = np.trace(R)
    if t > 0:
        s = 2.0 * math.sqrt(t + 1.0)
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = [0.0] * 4
        q[0] = (R[k, j] - R[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + k] = (R[k, i] + R[i, k]) / s
    q = np.array(q)
    return q if q[0] >= 0 else -q


def rot_axis_angle(axis, angle) -> np.ndarray:
    """Rotation about a (not necessarily unit) axis by angle [rad]."""
    a = np.asarray(axis, dtype=np.float64)
    return exp_so3(a / np.linalg.norm(a) * angle)


def twist_about_z(R) -> float:
    """Angle of rotation about world z contained in R (swing-twist split, rad in (-pi, pi])."""
    return math.atan2(R[1, 0] - R[0, 1], R[0, 0] + R[1, 1])
