"""Vertex data for the view: crease-aware normals for part meshes and unit primitives.

Everything returns *unindexed* float32 arrays ``(3F, 6)`` = ``[x y z nx ny nz]`` per triangle
corner, drawn with ``glDrawArrays(GL_TRIANGLES)``.  Unindexing lets one vertex carry a
different normal on each side of a sharp edge (thread crests, hex corners, chamfers) while
smooth surfaces (the cylinder of a bolt) are shaded smoothly: a corner averages the normals
of the faces around its vertex that lie within ``crease_deg`` of its own face.

Unit primitives (metres are applied by the model matrix):
* ``unit_box``: the cube [-0.5, 0.5]^3 (so scale = edge lengths);
* ``unit_cylinder``: radius 1, z from 0 to 1, with caps;
* ``unit_cone``: base radius 1 at z = 0, apex at z = 1, with a base cap;
* ``unit_sphere``: radius 1.
"""
from __future__ import annotations

import math

import numpy as np


def face_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Area-weighted face normals (|n| = 2 * area), outward for CCW faces."""
    v = vertices[faces]
    return np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])


def crease_normals(vertices: np.ndarray, faces: np.ndarray, crease_deg: float = 35.0) -> np.ndarray:
    """Per-corner unit normals (3F, 3): mean of the incident faces within `crease_deg`."""
    faces = np.asarray(faces, dtype=np.int64)
    fn = face_normals(np.asarray(vertices, dtype=float), faces)
    fu = fn / np.maximum(np.linalg.norm(fn, axis=1, keepdims=True), 1e-300)
    vid = faces.ravel()                                   # corner c lies on face c // 3
    order = np.argsort(vid, kind="stable")
    sv = vid[order]
    starts = np.flatnonzero(np.r_[True, sv[1:] != sv[:-1]])
    counts = np.diff(np.r_[starts, len(sv)])
    group = np.repeat(np.arange(len(starts)), counts)     # vertex group of each sorted corner
    size = counts[group]
    a = np.repeat(np.arange(len(sv)), size)               # every ordered pair (a, b) of
    first = np.repeat(np.cumsum(size) - size, size)       # corners sharing a vertex
    b = starts[group][a] + (np.arange(len(a)) - first)
    ca, cb = order[a], order[b]
    fa, fb = ca // 3, cb // 3
    keep = np.einsum("ij,ij->i", fu[fa], fu[fb]) >= math.cos(math.radians(crease_deg))
    acc = np.zeros((len(vid), 3))
    np.add.at(acc, ca[keep], fn[fb[keep]])
    norm = np.linalg.norm(acc, axis=1, keepdims=True)
    flat = np.repeat(fu, 3, axis=0)                       # degenerate fallback
    return np.where(norm > 1e-300, acc / np.maximum(norm, 1e-300), flat)


def interleave(vertices: np.ndarray, faces: np.ndarray, crease_deg: float = 35.0) -> np.ndarray:
    """(3F, 6) float32 [position, normal] per triangle corner."""
    pos = np.asarray(vertices, dtype=float)[np.asarray(faces).ravel()]
    return np.hstack([pos, crease_normals(vertices, faces, crease_deg)]).astype(np.float32)


def _revolve(profile_rz: list[tuple[float, float]], segments: int):
    """Indexed surface of revolution about z of a polyline (r, z); r = 0 ends are poles."""
    th = np.linspace(0.0, 2.0 * math.pi, segments, endpoint=False)
    verts, rings = [], []
    for r, z in profile_rz:
        if r == 0.0:
            rings.append([len(verts)])
            verts.append((0.0, 0.0, z))
        else:
            rings.append(list(range(len(verts), len(verts) + segments)))
            verts.extend((r * math.cos(t), r * math.sin(t), z) for t in th)
    faces = []
    for lo, hi in zip(rings[:-1], rings[1:]):
        for k in range(segments):
            k1 = (k + 1) % segments
            if len(lo) == 1:
                faces.append((lo[0], hi[k1], hi[k]))
            elif len(hi) == 1:
                faces.append((lo[k], lo[k1], hi[0]))
            else:
                faces += [(lo[k], lo[k1], hi[k1]), (lo[k], hi[k1], hi[k])]
    return np.array(verts), np.array(faces, dtype=np.int64)


def unit_cylinder(segments: int = 24) -> np.ndarray:
    # duplicate rim rings so the caps get their own (flat) normals via the crease test
    v, f = _revolve([(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)], segments)
    return interleave(v, f)


def unit_cone(segments: int = 24) -> np.ndarray:
    v, f = _revolve([(0.0, 0.0), (1.0, 0.0), (0.0, 1.0)], segments)
    return interleave(v, f, crease_deg=60.0)


def unit_sphere(segments: int = 20, stacks: int = 12) -> np.ndarray:
    phi = np.linspace(-math.pi / 2, math.pi / 2, stacks + 1)
    prof = [(0.0, -1.0)] + [(math.cos(p), math.sin(p)) for p in phi[1:-1]] + [(0.0, 1.0)]
    v, f = _revolve(prof, segments)
    return interleave(v, f, crease_deg=89.0)


def unit_box() -> np.ndarray:
    c = np.array([[x, y, z] for z in (-0.5, 0.5) for y in (-0.5, 0.5) for x in (-0.5, 0.5)])
    f = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6],      # -z, +z
                  [0, 1, 4], [1, 5, 4], [2, 6, 3], [3, 6, 7],      # -y, +y
                  [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]])     # -x, +x
    return interleave(c, f, crease_deg=10.0)


def place(unit: np.ndarray, p_w: np.ndarray, R_wb: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Copies of a unit primitive (V, 6) posed per instance -> (N * V, 6) float32, world.

    p_w (N, 3), R_wb (N, 3, 3), scale (N, 3): x_w = p + R diag(s) x, n_w ~ R diag(1/s) n."""
    N = len(p_w)
    if N == 0:
        return np.zeros((0, 6), np.float32)
    A = (R_wb * scale[:, None, :]).astype(np.float32)    # (N, 3, 3)
    B = (R_wb / scale[:, None, :]).astype(np.float32)
    out = np.empty((N, len(unit), 6), np.float32)
    out[..., :3] = unit[:, :3] @ A.transpose(0, 2, 1)     # (V, 3) @ (N, 3, 3) -> (N, V, 3)
    out[..., :3] += p_w[:, None, :].astype(np.float32)
    nrm = unit[:, 3:] @ B.transpose(0, 2, 1)
    out[..., 3:] = nrm / np.linalg.norm(nrm, axis=-1, keepdims=True)
    return out.reshape(-1, 6)


def grid_lines(half: float, step: float, z: float = 0.0) -> np.ndarray:
    """(2N, 6) float32 line endpoints of a square grid in the plane z; normals +z."""
    ticks = np.arange(-half, half + 0.5 * step, step)
    seg = []
    for t in ticks:
        seg += [(t, -half, z), (t, half, z), (-half, t, z), (half, t, z)]
    p = np.array(seg, dtype=float)
    n = np.tile([0.0, 0.0, 1.0], (len(p), 1))
    return np.hstack([p, n]).astype(np.float32)
