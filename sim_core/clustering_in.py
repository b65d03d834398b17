"""Learned contact clustering with Interaction Networks (seed 000 Sec. III.B, eqs. (4)-(6),
Sec. V.B): N_c contact nodes -> M_c = 12 representatives, at run time in NumPy (no torch).

Per contact node i the input is X_i = [x; q; v; w; f; tau] in R^19 (eq. (4)): the node's
position (world), the part's orientation (quaternion w, x, y, z), the node's velocity and
the part's angular velocity (world), and the external force and its moment about the node
(world) -- each scaled to about [-1, 1] by fixed ``SCALES``.

* eq. (5): Y_i = f_O1(X_i, sum_{l in S_i} f_R1(X_i, X_l)), S_i the k = 10 nearest contact
  nodes; f_R1: 38 -> 16 -> 16 -> 4 (ReLU), f_O1: 23 -> 8 -> 12 (ReLU hidden).  The 12
  outputs are softmax-normalized over the nodes, one distribution per representative j, so
  x_j = sum_i W_i^j x_i is a weighted average (eq. above (4)).
* Each average is put back on the contact surface with the static part's SDF: moved along
  the SDF gradient to the level set of its weighted-average depth d_j = sum_i W_i^j d_i
  (the SDF gives the projection; the representative keeps the depth its nodes have).
* eq. (6): the representatives' normals n_j (weighted averages, then normalized) are turned
  by (theta1, theta2) = f_O2(Xbar_j, sum_{l != j} f_R2(Xbar_j, Xbar_l)), Xbar_j = [X_j; n_j]
  in R^22; f_R2: 44 -> 16 -> 16 -> 4, f_O2: 26 -> 8 -> 2, angles = ``MAX_ANGLE`` tanh(.):
  n <- R_n(theta1) R_t(theta2) n (tilt by theta2 about a tangent, then about n by theta1).

Pair sums are taken without forming the 38-wide pair inputs: the first layer of f_R1 splits
into W_a X_i + W_b X_l, and the last layer is linear, so only the second hidden layer is
evaluated per pair (one GEMM).  ``cluster_reference`` is the same network written plainly,
pair by pair, for the tests.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .model import Contacts

FORMAT = "tightsim-in-clustering-1"
K_NEIGHBOURS = 10
M_C = 12
MAX_ANGLE = 0.2          # rad, the largest normal rotation eq. (6) may apply
PROJECTION_STEPS = 3     # Newton steps onto the representative's level set
# scales of X = [x (m); q; v (m/s); w (rad/s); f (N); tau (N m)]: x relative to the static frame
SCALES = np.array([0.06] * 3 + [1.0] * 4 + [0.05] * 3 + [7.0] * 3 + [30.0] * 3 + [1.5] * 3)
SHAPES = {  # name -> shape; the order is the flat parameter vector's (CMA-ES works on it)
    "r1_Wa": (19, 16), "r1_Wb": (19, 16), "r1_b1": (16,), "r1_W2": (16, 16), "r1_b2": (16,),
    "r1_W3": (16, 4), "r1_b3": (4,),
    "o1_W1": (23, 8), "o1_b1": (8,), "o1_W2": (8, M_C), "o1_b2": (M_C,),
    "r2_Wa": (22, 16), "r2_Wb": (22, 16), "r2_b1": (16,), "r2_W2": (16, 16), "r2_b2": (16,),
    "r2_W3": (16, 4), "r2_b3": (4,),
    "o2_W1": (26, 8), "o2_b1": (8,), "o2_W2": (8, 2), "o2_b2": (2,),
}
N_PARAMS = int(sum(np.prod(s) for s in SHAPES.values()))


@dataclass
class INClustering:
    """The two interaction networks' weights (float64)."""
    w: dict

    @staticmethod
    def from_vector(theta: np.ndarray) -> "INClustering":
        theta = np.asarray(theta, float)
        if theta.shape != (N_PARAMS,):
            raise ValueError(f"clustering weights: expected {N_PARAMS} numbers, got {theta.shape}")
        out, k = {}, 0
        for name, shape in SHAPES.items():
            n = int(np.prod(shape))
            out[name] = theta[k:k + n].reshape(shape)
            k += n
        return INClustering(out)

    def vector(self) -> np.ndarray:
        return np.concatenate([self.w[n].ravel() for n in SHAPES])

    @staticmethod
    def initial(seed: int = 0, scale: float = 0.05, sharpness: float = 80.0) -> "INClustering":
        """Seeded start for CMA-ES that already clusters: f_O1's hidden layer passes the
        node's position through ReLU(+-x) and its output scores node i for representative j
        by  sharpness * u_j . x_i  with 12 directions u_j spread over the sphere, so each
        representative starts on the nodes farthest along its direction (a spatial
        partition, like k-means' farthest-point start); every other weight is small seeded
        noise (`scale`) and the normal rotation starts near zero."""
        rng = np.random.default_rng(seed)
        w = {}
        for name, shape in SHAPES.items():
            w[name] = (np.zeros(shape) if len(shape) == 1
                       else rng.normal(0.0, scale * math.sqrt(2.0 / shape[0]), shape))
        k = np.arange(M_C) + 0.5                              # Fibonacci sphere directions
        zc = 1 - 2 * k / M_C
        ph = math.pi * (1 + 5 ** 0.5) * k
        U = np.stack([np.sqrt(1 - zc ** 2) * np.cos(ph), np.sqrt(1 - zc ** 2) * np.sin(ph), zc], 1)
        W1 = w["o1_W1"]
        W1[:, :6] = 0.0
        for a in range(3):                                     # hidden 2a, 2a+1: relu(+x_a), relu(-x_a)
            W1[a, 2 * a], W1[a, 2 * a + 1] = 1.0, -1.0
        W2 = w["o1_W2"]
        W2[:6] = 0.0
        for a in range(3):
            W2[2 * a], W2[2 * a + 1] = sharpness * U[:, a], -sharpness * U[:, a]
        return INClustering(w)


def node_features(x_w, state, f_ext, model) -> np.ndarray:
    """X (n, 19) of contact points x_w (n, 3) on the moving part (eq. (4)), scaled."""
    from .math3d import matrix_to_quat
    n = x_w.shape[0]
    R = state.R_wb
    w_w = R @ state.V[3:]
    r = x_w - state.p_w
    v_node = state.V[:3] + _cross(np.broadcast_to(w_w, r.shape), r)
    f = np.asarray(f_ext[:3], float)
    tau_c = R @ np.asarray(f_ext[3:], float)                     # about the centre, world
    tau_node = tau_c[None, :] - _cross(r, np.broadcast_to(f, r.shape))   # moved to the node
    X = np.empty((n, 19))
    X[:, 0:3] = (x_w - model.p_ws) @ model.R_ws
    X[:, 3:7] = matrix_to_quat(R)
    X[:, 7:10] = v_node
    X[:, 10:13] = w_w
    X[:, 13:16] = f
    X[:, 16:19] = tau_node
    return X / SCALES


def _neighbours(x: np.ndarray, k: int) -> np.ndarray:
    """Indices (n, k) of the k nearest other nodes (fewer nodes: all of them).  A k-d tree:
    measured on 701 engaged bolting nodes it takes 1.0 ms against 1.25 ms for a numba brute
    force."""
    n = x.shape[0]
    kk = min(k, n - 1)
    if kk <= 0:
        return np.zeros((n, 0), np.int64)
    from scipy.spatial import cKDTree
    _, idx = cKDTree(x).query(x, k=kk + 1)
    return np.asarray(idx[:, 1:], np.int64)


def _relu(a):
    return np.maximum(a, 0.0)


@njit(cache=True, fastmath=True)
def _pair_sums(A, B, nb, W2, b2):
    """sum over the neighbours l of node i of relu(W2^T relu(A_i + B_l) + b2): f_R1's hidden
    layers for every pair, summed, without materializing the (n, k, 16) pair arrays."""
    n, k = nb.shape
    h = A.shape[1]
    o = W2.shape[1]
    out = np.zeros((n, o))
    h1 = np.empty(h)
    for i in range(n):
        for kk in range(k):
            l = nb[i, kk]
            for a in range(h):
                v = A[i, a] + B[l, a]
                h1[a] = v if v > 0.0 else 0.0
            for c in range(o):
                s = b2[c]
                for a in range(h):
                    s += h1[a] * W2[a, c]
                if s > 0.0:
                    out[i, c] += s
    return out


def _cross(a, b):
    """Row-wise cross product of (m, 3) arrays (np.cross's axis handling costs more than the
    arithmetic at these sizes)."""
    return np.stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1], a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                     a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], axis=1)


def _rotate_all(n: np.ndarray, th1: np.ndarray, th2: np.ndarray) -> np.ndarray:
    """R_n(th1) R_t(th2) n for unit rows n (m, 3): tilt by th2 toward a tangent t (from the
    least-aligned world axis), then turn the result about n by th1 (Rodrigues)."""
    a = np.where((np.abs(n[:, 0]) < 0.6)[:, None], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    t = a - np.sum(a * n, axis=1, keepdims=True) * n
    t /= np.linalg.norm(t, axis=1, keepdims=True)
    b = _cross(n, t)
    m = np.cos(th2)[:, None] * n + np.sin(th2)[:, None] * b
    c, s = np.cos(th1)[:, None], np.sin(th1)[:, None]
    return c * m + s * _cross(n, m) + (1 - c) * np.sum(n * m, axis=1, keepdims=True) * n


def _rotate(n: np.ndarray, th1: float, th2: float) -> np.ndarray:
    """One normal: ``_rotate_all`` on a single row."""
    return _rotate_all(n[None, :], np.array([th1]), np.array([th2]))[0]


def _finish(net, X, W, nodes: Contacts, sdf, R_ws, p_ws, state, f_ext, model) -> Contacts:
    """Weighted averages -> surface projection -> normal rotation (shared by both paths)."""
    xr = W.T @ nodes.x_w                                   # (M, 3)
    dr = W.T @ nodes.d
    nr = W.T @ nodes.n_w
    nr /= np.maximum(np.linalg.norm(nr, axis=1, keepdims=True), 1e-12)
    # onto the static part's level set of the representative's depth, along the SDF gradient
    for _ in range(PROJECTION_STEPS):       # Newton steps along the gradient to d = d_r
        xs = (xr - p_ws) @ R_ws
        d_here, g = sdf.query(xs)
        xr = xr - ((d_here - dr)[:, None] * g) @ R_ws.T
    # eq. (6): turn the normals
    Xr = np.hstack([node_features(xr, state, f_ext, model), nr])          # (M, 22)
    w = net.w
    A, B = Xr @ w["r2_Wa"], Xr @ w["r2_Wb"] + w["r2_b1"]
    M = Xr.shape[0]
    H1 = _relu(A[:, None, :] + B[None, :, :])                               # (M, M, 16)
    H2 = _relu(H1 @ w["r2_W2"] + w["r2_b2"])
    mask = 1.0 - np.eye(M)
    S = np.einsum("jl,jlh->jh", mask, H2) @ w["r2_W3"] + (M - 1) * w["r2_b3"]
    O = _relu(np.hstack([Xr, S]) @ w["o2_W1"] + w["o2_b1"]) @ w["o2_W2"] + w["o2_b2"]
    ang = MAX_ANGLE * np.tanh(O)
    nr = _rotate_all(nr, ang[:, 0], ang[:, 1])
    return Contacts(xr, nr, dr)


def cluster(net: INClustering, nodes: Contacts, state, f_ext, model, k: int = K_NEIGHBOURS) -> Contacts:
    """M_c representatives of the contact nodes (fast path).

    The networks average the *penetrating* nodes (d < 0: the seed's original contact nodes
    X^o): eq. (4)'s input has no depth, so averaging in the detector's speculative band too
    would give representatives that float above the surface and push nothing (measured: the
    learned model then predicted no force at all).  When at most M_c nodes penetrate, they
    are kept as they are, topped up with the nearest speculative ones."""
    pen = nodes.d < 0.0
    if int(pen.sum()) <= M_C:
        keep = np.argsort(nodes.d)[:M_C]
        return Contacts(nodes.x_w[keep], nodes.n_w[keep], nodes.d[keep])
    nodes = Contacts(nodes.x_w[pen], nodes.n_w[pen], nodes.d[pen])
    X = node_features(nodes.x_w, state, f_ext, model)
    W = cluster_weights(net, X, _neighbours(nodes.x_w, k))
    return _finish(net, X, W, nodes, model.sdf, model.R_ws, model.p_ws, state, f_ext, model)


def cluster_weights(net: INClustering, X: np.ndarray, nb: np.ndarray) -> np.ndarray:
    """W (n, M_c) of eq. (5), softmax over the nodes for each representative."""
    w = net.w
    A = X @ w["r1_Wa"]                                      # (n, 16): W_a X_i
    B = X @ w["r1_Wb"] + w["r1_b1"]                         # (n, 16): W_b X_l + b
    S = _pair_sums(A, B, nb, w["r1_W2"], w["r1_b2"])        # sum_l relu(W2 relu(A_i + B_l) + b2)
    E = S @ w["r1_W3"] + nb.shape[1] * w["r1_b3"]           # sum_l f_R1(X_i, X_l), (n, 4)
    Y = _relu(np.hstack([X, E]) @ w["o1_W1"] + w["o1_b1"]) @ w["o1_W2"] + w["o1_b2"]   # (n, 12)
    Y -= Y.max(axis=0, keepdims=True)
    W = np.exp(Y)
    W /= W.sum(axis=0, keepdims=True)                       # softmax over the nodes, per j
    return W


def weights_reference(net: INClustering, X: np.ndarray, nb: np.ndarray) -> np.ndarray:
    """eq. (5) written plainly: every pair's 38-wide input through f_R1, then f_O1 and the
    softmax over nodes.  For tests against the fast path."""
    w = net.w
    n = X.shape[0]
    W1 = np.vstack([w["r1_Wa"], w["r1_Wb"]])
    Y = np.empty((n, M_C))
    for i in range(n):
        e = np.zeros(4)
        for l in nb[i]:
            z = np.concatenate([X[i], X[l]])
            h = _relu(z @ W1 + w["r1_b1"])
            h = _relu(h @ w["r1_W2"] + w["r1_b2"])
            e += h @ w["r1_W3"] + w["r1_b3"]
        h = _relu(np.concatenate([X[i], e]) @ w["o1_W1"] + w["o1_b1"])
        Y[i] = h @ w["o1_W2"] + w["o1_b2"]
    E = np.exp(Y - Y.max(axis=0))
    return E / E.sum(axis=0)


def save(path, net: INClustering, task: str) -> None:
    from .weights import save_npz
    save_npz(path, {"format": np.array(FORMAT), "task": np.array(task), "theta": net.vector()})


def load(path, task: str | None = None) -> INClustering:
    """Read and check a clustering weight file (one-line WeightsError naming file and field)."""
    from .weights import read_npz
    f = read_npz(path, f"train it: tightsim train clustering --task {task or 'TASK'}")
    f.expect("format", FORMAT)
    f.same("task", task, "task")
    return INClustering.from_vector(f.array("theta", (N_PARAMS,)))
