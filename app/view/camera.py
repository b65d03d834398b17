"""Camera and transform matrices for the OpenGL view (NumPy only, no GL).

Conventions: column vectors, ``p_clip = P @ V @ M @ [p; 1]``; matrices are float64 here and
converted to float32 row-major with ``transpose=True`` at upload.  World z is up.  Pixel
coordinates returned by :meth:`OrbitCamera.project` are image coordinates of a screenshot
array: column from the left, row from the *top*.

The orbit camera looks at ``target`` from ``distance`` metres, at azimuth ``azimuth_deg``
(about world z, from +x) and elevation ``elevation_deg`` (above the xy plane).  Scenes here
are ~0.2 m across, so the near plane sits at 1 % of the distance (a few mm) and the far plane
at 20 times it: 24-bit depth then resolves well below a millimetre.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


def perspective(fovy_deg: float, aspect: float, near: float, far: float) -> np.ndarray:
    """OpenGL perspective projection (right-handed eye space, camera looks along -z)."""
    f = 1.0 / math.tan(math.radians(fovy_deg) / 2.0)
    P = np.zeros((4, 4))
    P[0, 0] = f / aspect
    P[1, 1] = f
    P[2, 2] = (far + near) / (near - far)
    P[2, 3] = 2.0 * far * near / (near - far)
    P[3, 2] = -1.0
    return P


def look_at(eye, target, up=(0.0, 0.0, 1.0)) -> np.ndarray:
    """World -> eye transform: eye at the origin, looking along -z, `up` roughly +y."""
    eye, target, up = (np.asarray(a, dtype=float) for a in (eye, target, up))
    f = target - eye
    f /= np.linalg.norm(f)
    s = np.cross(f, up)
    if np.linalg.norm(s) < 1e-9:                 # looking straight along `up`
        s = np.cross(f, [0.0, 1.0, 0.0])
    s /= np.linalg.norm(s)
    u = np.cross(s, f)
    V = np.eye(4)
    V[0, :3], V[1, :3], V[2, :3] = s, u, -f
    V[:3, 3] = -V[:3, :3] @ eye
    return V


def pose_matrix(p_w, R_wb, scale=(1.0, 1.0, 1.0)) -> np.ndarray:
    """X_wb @ diag(scale): body (scaled) -> world, 4x4."""
    M = np.eye(4)
    M[:3, :3] = np.asarray(R_wb, dtype=float) * np.asarray(scale, dtype=float)[None, :]
    M[:3, 3] = np.asarray(p_w, dtype=float)
    return M


def normal_matrix(R_wb, scale=(1.0, 1.0, 1.0)) -> np.ndarray:
    """Inverse transpose of R diag(scale) (maps normals under non-uniform scale) = R diag(1/s)."""
    return np.asarray(R_wb, dtype=float) / np.asarray(scale, dtype=float)[None, :]


def frame_from_axis(z_axis) -> np.ndarray:
    """Rotation(s) whose third column is the unit vector along `z_axis`: (3,) -> (3, 3),
    (N, 3) -> (N, 3, 3)."""
    z = np.asarray(z_axis, dtype=float)
    z = z / np.linalg.norm(z, axis=-1, keepdims=True)
    helper = np.where((np.abs(z[..., :1]) < 0.9), [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    return np.stack([x, np.cross(z, x), z], axis=-1)


@dataclass
class OrbitCamera:
    """Perspective camera orbiting a target point (metres, degrees)."""
    target: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 0.07]))
    distance: float = 0.35
    azimuth_deg: float = -60.0
    elevation_deg: float = 30.0
    fovy_deg: float = 35.0
    width: int = 1280
    height: int = 720

    def eye(self) -> np.ndarray:
        az, el = math.radians(self.azimuth_deg), math.radians(self.elevation_deg)
        d = np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
        return np.asarray(self.target, dtype=float) + self.distance * d

    def view(self) -> np.ndarray:
        return look_at(self.eye(), self.target)

    def projection(self) -> np.ndarray:
        aspect = self.width / max(self.height, 1)
        return perspective(self.fovy_deg, aspect, 0.01 * self.distance, 20.0 * self.distance)

    def view_projection(self) -> np.ndarray:
        return self.projection() @ self.view()

    def project(self, p_w) -> np.ndarray:
        """Pixel (column, row from the top) of world point(s) `p_w` (..., 3) -> (..., 2)."""
        p = np.asarray(p_w, dtype=float)
        h = np.concatenate([p, np.ones(p.shape[:-1] + (1,))], axis=-1)
        c = h @ self.view_projection().T
        ndc = c[..., :2] / c[..., 3:4]
        col = (ndc[..., 0] + 1.0) * 0.5 * self.width
        row = (1.0 - ndc[..., 1]) * 0.5 * self.height
        return np.stack([col, row], axis=-1)

    def fit(self, center, radius: float, margin: float = 1.15) -> None:
        """Aim at a bounding sphere and back off until it fills the narrower field of view."""
        self.target = np.asarray(center, dtype=float).copy()
        half = math.radians(self.fovy_deg) / 2.0
        aspect = self.width / max(self.height, 1)
        half = min(half, math.atan(math.tan(half) * aspect))
        self.distance = margin * max(radius, 1e-4) / math.sin(half)

    def fit_points(self, points, margin: float = 1.08) -> None:
        """Keep the direction; aim at the middle of the points' bounding box and back off
        just far enough that every point lies inside the picture, `margin` times inside its
        edges (exact for the pinhole: a point at offset (x, y) across and b toward the eye
        from the target is in view at distance d when max(|x| / tan hx, |y| / tan hy) <= d - b)."""
        pts = np.asarray(points, dtype=float).reshape(-1, 3)
        self.target = 0.5 * (pts.min(axis=0) + pts.max(axis=0))
        ty = math.tan(math.radians(self.fovy_deg) / 2.0)
        tx = ty * self.width / max(self.height, 1)
        for i in range(5):          # and centre the picture's extent (perspective shifts it)
            V = look_at(self.eye(), self.target)
            rel = pts - self.target
            x, y, back = rel @ V[0, :3], rel @ V[1, :3], rel @ V[2, :3]
            need = back + margin * np.maximum(np.abs(x) / tx, np.abs(y) / ty)
            self.distance = float(max(need.max(), 1e-3))
            if i == 4:
                break
            depth = self.distance - back                 # each point's distance along the view
            u, v = x / (depth * tx), y / (depth * ty)    # its place in the picture, -1 .. 1
            du, dv = 0.5 * (u.min() + u.max()), 0.5 * (v.min() + v.max())
            self.target = self.target + self.distance * (du * tx * V[0, :3] + dv * ty * V[1, :3])

    # -- interaction (right-drag orbit, middle-drag pan, ctrl-scroll zoom) ----------------
    def orbit(self, dx_px: float, dy_px: float, deg_per_px: float = 0.3) -> None:
        self.azimuth_deg = (self.azimuth_deg - deg_per_px * dx_px) % 360.0
        self.elevation_deg = float(np.clip(self.elevation_deg - deg_per_px * dy_px, -89.0, 89.0))

    def pan(self, dx_px: float, dy_px: float) -> None:
        V = self.view()
        right, up = V[0, :3], V[1, :3]
        metres_per_px = 2.0 * self.distance * math.tan(math.radians(self.fovy_deg) / 2) / self.height
        self.target = self.target - metres_per_px * (dx_px * right + dy_px * up)

    def zoom(self, steps: float) -> None:
        self.distance = float(np.clip(self.distance * 0.9 ** steps, 0.01, 10.0))
