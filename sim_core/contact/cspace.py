"""C-space contact model (seed 000 Sec. IV): a learned surface h(q) = 0 of the collision
volume in the moving part's configuration space, the nearest contact configuration by SQP
in the inertia metric, and the C-space normal N^C for the solver's virtual wrench.

Network (Sec. V.B): input -> 64 tanh -> 64 tanh -> 1, sigmoid output s(q); h = 2 s - 1 is
+1 for collision-free configurations and -1 for colliding ones, 0 on the surface.  The SQP
works on the logit y (h = tanh(y / 2) has the same zero set, and the logit does not
saturate away from the surface, so its gradient still points the way).

Configuration q: the moving part's centre of mass p and rotation R, both relative to the
static part's frame.  Its input is symmetry-reduced, so 64-64 units are spent on the shape
of the obstacle instead of on symmetries the parts have:

* ``peg`` (peg in hole, both bodies of revolution): rotating the whole configuration about
  the hole's axis, turning the peg about its own axis, or mirroring in a plane through the
  hole's axis changes nothing.  What is left is (z, r, theta, p_xy . a_xy): height, radial
  offset, tilt of the peg's axis a = R e_z, and how the tilt leans relative to the offset.
* ``nut`` (nut on bolt, both helical with the same lead c = pitch / 2 pi): a screw motion of
  the whole configuration about the bolt's axis, or of the nut about its own axis, changes
  nothing except at the thread's ends.  So the nut's twist psi about z (swing-twist
  decomposition) matters only through the thread phase zeta = z - c psi, and the offset
  and tilt only through their sizes and how they lean on each other, with sign (a thread
  has a hand): (cos 2 pi zeta / P, sin 2 pi zeta / P, r, theta, p_xy . a_xy, p_xy x a_xy, z),
  z kept for the ends.  (The nut's own screw is exact for an upright nut; tilted, its twist
  about z is only approximately its own.)

Features are standardized with the training set's mean and spread (stored with the weights).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from sim_core.io.weights import read_npz, save_npz
from sim_core.math.so3 import exp_so3_batch, log_so3

FORMAT = "tightsim-cspace-1"
HIDDEN = 64
KINDS = {"peg": 4, "nut": 7}          # feature kind -> input width
TASK_KIND = {"peg_in_hole": "peg", "bolting": "nut"}
SQP_ITERATIONS = 2     # SQP refinements after the first surface point
SQP_REACH = (5e-4, 1.2e-2)  # m, rad: a nearest contact configuration further than this is not
                          # trusted (the network only knows configurations near the task's)
RAY_POINTS = 32        # configurations per batched network call along a ray
FD_STEP = (1e-6, 1e-5)  # twist steps (m, rad) of the central differences of the feature map


def pair_digest(static_spec, moving_spec) -> str:
    """Short digest of the two parts' geometry: weights for other parts are refused."""
    return hashlib.sha256((repr(static_spec) + "|" + repr(moving_spec)).encode()).hexdigest()[:16]


def features(kind: str, lead: float, pitch: float, P: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Symmetry-reduced inputs (n, k) of configurations: P (n, 3) centres of mass and R (n, 3, 3)
    rotations of the moving part, both in the static part's frame."""
    P = np.asarray(P, float).reshape(-1, 3)
    R = np.asarray(R, float).reshape(-1, 3, 3)
    a = R[:, :, 2]                                        # the moving part's axis
    if kind == "peg":
        theta = np.arctan2(np.hypot(a[:, 0], a[:, 1]), a[:, 2])
        r = np.hypot(P[:, 0], P[:, 1])
        lean = P[:, 0] * a[:, 0] + P[:, 1] * a[:, 1]
        return np.stack([P[:, 2], r, theta, lean], 1)
    # twist about z of the decomposition R = Rz(psi) S, S a swing about a horizontal axis
    psi = 2.0 * np.arctan2(R[:, 1, 0] - R[:, 0, 1], 1.0 + R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2])
    ph = 2.0 * np.pi * (P[:, 2] - lead * psi) / pitch
    theta = np.arctan2(np.hypot(a[:, 0], a[:, 1]), a[:, 2])
    r = np.hypot(P[:, 0], P[:, 1])
    lean = P[:, 0] * a[:, 0] + P[:, 1] * a[:, 1]
    side = P[:, 0] * a[:, 1] - P[:, 1] * a[:, 0]         # a thread has a hand: no mirror
    return np.stack([np.cos(ph), np.sin(ph), r, theta, lean, side, P[:, 2]], 1)


@dataclass
class CSpaceNet:
    """A trained C-space surface for one task (static part, moving part)."""
    task: str
    kind: str
    lead: float                   # m/rad, helix lead c of a thread (0 for the peg)
    pitch: float                  # m (1 for the peg: unused)
    mean: np.ndarray              # (k,) feature standardization
    std: np.ndarray
    W1: np.ndarray                # (64, k)
    b1: np.ndarray
    W2: np.ndarray                # (64, 64)
    b2: np.ndarray
    W3: np.ndarray                # (1, 64)
    b3: np.ndarray
    digest: str = ""
    source: str = "<memory>"

    def logit(self, P, R) -> np.ndarray:
        """Pre-sigmoid output y (n,): > 0 collision-free, < 0 colliding."""
        F = (features(self.kind, self.lead, self.pitch, P, R) - self.mean) / self.std
        h = np.tanh(F @ self.W1.T + self.b1)
        h = np.tanh(h @ self.W2.T + self.b2)
        return h @ self.W3[0] + self.b3[0]

    def h(self, P, R) -> np.ndarray:
        """h(q) = 2 sigmoid(y) - 1 in (-1, 1): +1 free, -1 colliding (seed 000 Sec. IV.A)."""
        return np.tanh(0.5 * self.logit(P, R))

    def arrays(self) -> dict:
        return {"format": np.array(FORMAT), "task": np.array(self.task), "kind": np.array(self.kind),
                "lead": np.array(self.lead), "pitch": np.array(self.pitch), "mean": self.mean,
                "std": self.std, "digest": np.array(self.digest), "W1": self.W1, "b1": self.b1,
                "W2": self.W2, "b2": self.b2, "W3": self.W3, "b3": self.b3}

    def save(self, path) -> None:
        save_npz(path, self.arrays())


def load(path, digest: str | None = None, task: str | None = None) -> CSpaceNet:
    """Read and check a C-space weight file (one-line WeightsError naming file and field)."""
    f = read_npz(path, f"train it: tightsim train cspace --task {task or 'TASK'}, or set contact.cspace = \"off\"")
    f.expect("format", FORMAT)
    name, kind = f.same("task", task, "task"), f.choice("kind", KINDS)
    dg = f.str("digest")
    if digest is not None and dg != digest:
        raise f.error(f"field 'digest' {dg} does not match the parts of this task ({digest}): "
                      f"retrain with tightsim train cspace --task {name}")
    k = KINDS[kind]
    std = f.bounded("std", (k,), above=0.0, why="the features are divided by it")
    return CSpaceNet(task=name, kind=kind, lead=float(f.array("lead", ())),
                     pitch=f.number("pitch", above=0.0, why="the thread phase is divided by it"),
                     mean=f.array("mean", (k,)), std=std, W1=f.array("W1", (HIDDEN, k)),
                     b1=f.array("b1", (HIDDEN,)), W2=f.array("W2", (HIDDEN, HIDDEN)),
                     b2=f.array("b2", (HIDDEN,)), W3=f.array("W3", (1, HIDDEN)), b3=f.array("b3", (1,)),
                     digest=dg, source=str(path))


# --- nearest contact configuration (SQP) and the C-space normal -----------------------------

def aligned(p, R):
    """The pose with the moving part's axis on the static axis and upright, same height and
    twist about z (so the same thread phase): the middle of the free region of both tasks."""
    psi = 2.0 * np.arctan2(R[1, 0] - R[0, 1], 1.0 + R[0, 0] + R[1, 1] + R[2, 2])
    c, s = np.cos(psi), np.sin(psi)
    return np.array([0.0, 0.0, p[2]]), np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _configs(p, R, Vs):
    """Configurations moved(p, R, V) for the rows of Vs (n, 6): (P (n,3), R (n,3,3))."""
    return p[None, :] + Vs[:, :3], R[None] @ exp_so3_batch(np.ascontiguousarray(Vs[:, 3:]))


def _logit_and_grad(net: CSpaceNet, p, R, V):
    """y(q(V)) and dy/dV (6,), central differences of the configuration map (13 configs, one
    batched network call)."""
    E = np.zeros((13, 6))
    for j in range(6):
        h = FD_STEP[0] if j < 3 else FD_STEP[1]
        E[1 + 2 * j, j], E[2 + 2 * j, j] = h, -h
    y = net.logit(*_configs(p, R, V[None, :] + E))
    g = np.array([(y[1 + 2 * j] - y[2 + 2 * j]) / (2 * (FD_STEP[0] if j < 3 else FD_STEP[1]))
                  for j in range(6)])
    return y[0], g


def _surface_on_ray(net: CSpaceNet, p, R, d):
    """Smallest t > 0 with y(q(t d)) >= 0, t <= the reach along d (or None): a geometric grid,
    then two uniform refinements of the bracket (batched network calls)."""
    t_max = min(SQP_REACH[0] / max(np.linalg.norm(d[:3]), 1e-300),
                SQP_REACH[1] / max(np.linalg.norm(d[3:]), 1e-300))
    ts = t_max * np.geomspace(1e-4, 1.0, RAY_POINTS)
    y = net.logit(*_configs(p, R, ts[:, None] * d[None, :]))
    hit = np.flatnonzero(y >= 0.0)
    if hit.size == 0:
        return None
    hi = ts[hit[0]]
    lo = ts[hit[0] - 1] if hit[0] > 0 else 0.0
    for _ in range(2):
        ts = np.linspace(lo, hi, RAY_POINTS)
        y = net.logit(*_configs(p, R, ts[:, None] * d[None, :]))
        k = int(np.flatnonzero(y >= 0.0)[0]) if (y >= 0.0).any() else RAY_POINTS - 1
        lo, hi = (ts[k - 1] if k > 0 else lo), ts[k]
    return hi


def nearest_contact(net: CSpaceNet, M: np.ndarray, p, R):
    """Nearest contact configuration: min 1/2 V^T M V subject to h(q(V)) = 0 (seed 000
    Sec. IV.B), from a colliding configuration.  The learned logit is far from linear inside
    the obstacle (its level sets crowd near the surface), so full SQP steps from V = 0
    overshoot; instead every candidate is put on the surface along its own ray from the
    current configuration:  first the steepest-ascent direction in the metric, M^-1 grad y,
    and its translation and rotation parts; then up to SQP_ITERATIONS times the QP solution
    linearized at the current surface point,
        V* = nu M^-1 g,  nu = (g^T V - y) / (g^T M^-1 g),
    kept while its surface point is nearer in the metric.  Returns (V_C (6,), found)."""
    M_inv = np.linalg.inv(M)
    y, g = _logit_and_grad(net, p, R, np.zeros(6))
    if y >= 0.0:
        return np.zeros(6), True
    best, cost = None, np.inf
    # starting rays: steepest ascent in the metric, and its translation and rotation parts
    # alone (the metric weighs rotation so lightly that M^-1 g is nearly a pure rotation,
    # which a tight fit may not allow at all); and the way to the aligned pose, the middle of
    # the free region of a coaxial fit, which a wedged part needs (turn and shift together)
    d = M_inv @ g
    pa, Ra = aligned(p, R)
    starts = [d, np.concatenate([d[:3], np.zeros(3)]), np.concatenate([np.zeros(3), d[3:]]),
              np.concatenate([pa - p, log_so3(R.T @ Ra)])]
    for d in starts:
        if not np.any(d):
            continue
        t = _surface_on_ray(net, p, R, d)
        if t is not None and float((t * d) @ M @ (t * d)) < cost:
            best, cost = t * d, float((t * d) @ M @ (t * d))
    for _ in range(SQP_ITERATIONS):
        if best is None:
            break
        y, g = _logit_and_grad(net, p, R, best)
        Mg = M_inv @ g
        den = float(g @ Mg)
        if not den > 0.0:
            break
        d = (float(g @ best) - y) / den * Mg
        if not np.all(np.isfinite(d)) or not np.any(d):
            break
        t = _surface_on_ray(net, p, R, d)
        if t is None or float((t * d) @ M @ (t * d)) >= cost:
            break
        best, cost = t * d, float((t * d) @ M @ (t * d))
    return (best, True) if best is not None else (np.zeros(6), False)


def cspace_row(net: CSpaceNet, M: np.ndarray, p, R):
    """The C-space constraint for this step, or None where the network says the configuration
    is collision-free or no trusted surface point is found: (N^C (6,), b^C = 0).  N^C is the
    unit wrench whose motion under M^-1 is along V_C (N^C^T M^-1 null(V_C) = 0, i.e.
    N^C ~ M V_C), and v^C = N^C^T V+ >= 0 keeps the part from moving deeper into the
    obstacle (eq. (8), Algorithm 1 lines 7-13).  A push-out target b^C = beta N^C.V_C / T,
    like the N-space term, was tried: in the disturbance bench it did not lower the
    penetration and in the peg scenario it raised the largest one (77 against 36 um)."""
    y = float(net.logit(p[None, :], R[None])[0])
    if y >= 0.0:
        return None
    V_C, ok = nearest_contact(net, M, p, R)
    n = M @ V_C
    nn = float(np.linalg.norm(n))
    if not ok or not nn > 0.0:
        return None
    return n / nn, 0.0


def row_for(net, body, shape, pose):
    """The C-space constraint of a body-shape pair at this pose, in the body's twist
    coordinates [v world; w body]: (N^C (6,), b^C), or None (a collision-free configuration)."""
    p_s = shape.R_ws.T @ (pose.p_w - shape.p_ws)
    R_sb = shape.R_ws.T @ pose.R_wb
    M = np.zeros((6, 6))
    M[:3, :3] = body.mass * np.eye(3)
    M[3:, 3:] = body.inertia_b
    row = cspace_row(net, M, p_s, R_sb)
    if row is None:
        return None
    NC, bC = row
    NC = np.concatenate([shape.R_ws @ NC[:3], NC[3:]])   # linear part: static -> world axes
    return NC, bC
