"""Learned contact clustering with Interaction Networks (seed 000 Sec. III.B, eqs. (4)-(6),
Sec. V.B): N_c contact nodes -> M_c = 12 representatives, at run time in NumPy (no torch).

Per contact node i the input is X_i = [x; q; v; w; f; tau] in R^19 (eq. (4)): the node's
position (in the static part's frame), the part's orientation (quaternion w, x, y, z), the node's velocity and
the part's angular velocity (world), and the external force and its moment about the node
(world) -- each scaled to about [-1, 1] by fixed ``SCALES``.

* eq. (5): Y_i = f_O1(X_i, sum_{l in S_i} f_R1(X_i, X_l)), S_i the k = 10 nearest contact
  nodes; f_R1: 38 -> 16 -> 16 -> 4 (ReLU), f_O1: 23 -> 8 -> 12 (ReLU hidden).  The 12
  outputs are softmax-normalized over the nodes, one distribution W^j per representative.
* Representative j is the *depth-tilted* weighted average of the nodes (``depth_tilted``):
  weights W_ij e^(-d_i / delta), normalized, at the soft-min depth -delta log sum_i W_ij
  e^(-d_i / delta).  The static part's SDF gives its normal, the gradient at that point.
  (Deviations from the seed's plain average projected onto the surface, each measured in
  closed loop: see ``depth_tilted`` and ``_finish``.)
* eq. (6): the normals are turned by (theta1, theta2) = f_O2(Xbar_j, sum_{l != j}
  f_R2(Xbar_j, Xbar_l)), Xbar_j = [X_j; n_j] in R^22; f_R2: 44 -> 16 -> 16 -> 4, f_O2:
  26 -> 8 -> 2, angles = ``MAX_ANGLE`` tanh(.): n <- R_n(theta1) R_t(theta2) n (lean by
  theta2 toward the static part's axis, then turn about n by theta1; ``_rotate_all``).

Pair sums are taken without forming the 38-wide pair inputs: the first layer of f_R1 splits
into W_a X_i + W_b X_l, and the last layer is linear, so only the second hidden layer is
evaluated per pair (one float32 GEMM per block of 64 nodes' pairs).  ``weights_reference`` is
eq. (5) written plainly, pair by pair, for the tests.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from sim_core.types import Contacts

FORMAT = "tightsim-in-clustering-2"
K_NEIGHBOURS = 10
M_C = 12
MAX_ANGLE = 0.2          # rad, the largest normal rotation eq. (6) may apply
SOFT_MIN_DEPTH = 1e-6   # m: default delta of the soft-min depth (each weight file carries its own)
DELTA_GRID = (1e-6, 2e-6, 3e-6, 5e-6, 1e-5)   # m: deltas training chooses from on validation
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
    delta: float = SOFT_MIN_DEPTH   # m, the depth tilt's scale (``depth_tilted``)

    def __post_init__(self):
        for a in self.w.values():          # read-only: the float32 copies below cannot go stale
            a.flags.writeable = False

    @staticmethod
    def from_vector(theta: np.ndarray) -> INClustering:
        theta = np.asarray(theta, float)
        if theta.shape != (N_PARAMS,):
            raise ValueError(f"clustering weights: expected {N_PARAMS} numbers, got {theta.shape}")
        out, k = {}, 0
        for name, shape in SHAPES.items():
            n = int(np.prod(shape))
            out[name] = np.ascontiguousarray(theta[k:k + n].reshape(shape))
            k += n
        return INClustering(out)

    def float32(self) -> dict:
        """f_R1's first two layers in float32 (the pair block's precision), made once."""
        c = self.__dict__.get("_w32")
        if c is None:
            c = {n: np.ascontiguousarray(self.w[n], dtype=np.float32)
                 for n in ("r1_Wa", "r1_Wb", "r1_b1", "r1_W2", "r1_b2")}
            self.__dict__["_w32"] = c
        return c

    def vector(self) -> np.ndarray:
        return np.concatenate([self.w[n].ravel() for n in SHAPES])

    @staticmethod
    def initial(seed: int = 0, scale: float = 0.05, sharpness: float = 200.0) -> INClustering:
        """Seeded start for CMA-ES that already clusters: f_O1's hidden layer passes the
        node's position across the axis through ReLU(+-x), ReLU(+-y) and its output scores
        node i for representative j by  sharpness * u_j . x_i  with u_j = (cos 30j deg,
        sin 30j deg, 0): twelve sectors around the static part's axis, along which both
        tasks' contact sets run (a spatial partition like k-means' spread start; with the
        depth tilt each representative then sits on its sector's deepest nodes).  At a
        radius of 24 mm, sharpness 200 halves a node's weight about 10 deg off its sector's
        centre.  Measured in the bolting run with the untrained start: sharpness 30 lets the
        nut sink 2.5 mm and skip the thread, 80 sinks 1.4 mm, 200 engages at 1.78 s with
        4.997 mm/rev and 183 um (k-means: 131 um).  Every other weight is small seeded noise
        (`scale`); the normal rotation starts near zero."""
        rng = np.random.default_rng(seed)
        w = {}
        for name, shape in SHAPES.items():
            w[name] = (np.zeros(shape) if len(shape) == 1
                       else rng.normal(0.0, scale * math.sqrt(2.0 / shape[0]), shape))
        ph = 2.0 * math.pi * np.arange(M_C) / M_C
        U = np.stack([np.cos(ph), np.sin(ph)], 1)
        W1 = w["o1_W1"]
        W1[:, :4] = 0.0
        for a in range(2):                                     # hidden 2a, 2a+1: relu(+x_a), relu(-x_a)
            W1[a, 2 * a], W1[a, 2 * a + 1] = 1.0, -1.0
        W2 = w["o1_W2"]
        W2[:4] = 0.0
        for a in range(2):
            W2[2 * a], W2[2 * a + 1] = sharpness * U[:, a], -sharpness * U[:, a]
        return INClustering(w)


def node_features(x_w, state, f_ext, shape) -> np.ndarray:
    """X (n, 19) of contact points x_w (n, 3) on the moving part (eq. (4)), scaled."""
    from sim_core.math.so3 import matrix_to_quat
    R = np.ascontiguousarray(state.R_wb, dtype=np.float64)
    return _features(np.ascontiguousarray(x_w, dtype=np.float64), np.asarray(state.p_w, float), R,
                     np.asarray(state.V, float), np.asarray(f_ext, float), shape.p_ws, shape.R_ws,
                     matrix_to_quat(R), 1.0 / SCALES)


@njit(cache=True)
def _features(x_w, p_w, R, V, f_ext, p_ws, R_ws, q, inv_scale):
    """eq. (4) per node: [x (static frame); q; v_node; w (world); f; tau about the node]."""
    n = x_w.shape[0]
    X = np.empty((n, 19))
    w = R @ V[3:]
    tc = R @ f_ext[3:]                         # moment about the centre, world
    f = f_ext[:3]
    for i in range(n):
        r0, r1, r2 = x_w[i, 0] - p_w[0], x_w[i, 1] - p_w[1], x_w[i, 2] - p_w[2]
        for a in range(3):
            X[i, a] = ((x_w[i, 0] - p_ws[0]) * R_ws[0, a] + (x_w[i, 1] - p_ws[1]) * R_ws[1, a]
                       + (x_w[i, 2] - p_ws[2]) * R_ws[2, a])
        for a in range(4):
            X[i, 3 + a] = q[a]
        X[i, 7] = V[0] + w[1] * r2 - w[2] * r1             # v + w x r
        X[i, 8] = V[1] + w[2] * r0 - w[0] * r2
        X[i, 9] = V[2] + w[0] * r1 - w[1] * r0
        for a in range(3):
            X[i, 10 + a] = w[a]
            X[i, 13 + a] = f[a]
        X[i, 16] = tc[0] - (r1 * f[2] - r2 * f[1])         # tau - r x f
        X[i, 17] = tc[1] - (r2 * f[0] - r0 * f[2])
        X[i, 18] = tc[2] - (r0 * f[1] - r1 * f[0])
        for a in range(19):
            X[i, a] *= inv_scale[a]
    return X


def node_features_reference(x_w, state, f_ext, shape) -> np.ndarray:
    """``node_features`` written with NumPy cross products, for the tests."""
    from sim_core.math.so3 import matrix_to_quat
    R = state.R_wb
    w_w = R @ state.V[3:]
    r = x_w - state.p_w
    f = np.asarray(f_ext[:3], float)
    X = np.empty((x_w.shape[0], 19))
    X[:, 0:3] = (x_w - shape.p_ws) @ shape.R_ws
    X[:, 3:7] = matrix_to_quat(R)
    X[:, 7:10] = state.V[:3] + np.cross(w_w, r)
    X[:, 10:13] = w_w
    X[:, 13:16] = f
    X[:, 16:19] = R @ np.asarray(f_ext[3:], float) - np.cross(r, f)
    return X / SCALES


TABLE_NEIGHBOURS = 32      # P: each mesh node's nearest nodes kept in the part's table


def node_table(nodes_b: np.ndarray, p: int = TABLE_NEIGHBOURS) -> np.ndarray:
    """(N, P) int32: for every node of the moving part its P nearest other nodes (body frame,
    nearest first).  Distances between nodes of one rigid part never change, so the k nearest
    *engaged* nodes of an engaged node are the first k engaged entries of its row whenever the
    row holds k of them (``_knn_table``)."""
    from scipy.spatial import cKDTree
    n = nodes_b.shape[0]
    p = min(p, n - 1)
    if p <= 0:
        return np.zeros((n, 0), np.int32)
    _, idx = cKDTree(nodes_b).query(nodes_b, k=p + 1)
    return np.ascontiguousarray(idx[:, 1:], dtype=np.int32)


def _neighbours(x: np.ndarray, k: int, idx: np.ndarray | None = None, table: np.ndarray | None = None) -> np.ndarray:
    """Indices (n, k) of the k nearest other contact nodes (fewer nodes: all of them), exact.
    With the nodes' mesh rows and the part's ``node_table`` (every contact set the pipeline
    detects carries them): a numba walk along the table, with a brute-force scan for the few
    nodes whose row holds fewer than k engaged nodes.  Otherwise (a contact set built by
    hand) scipy's k-d tree, which took 1.2 ms on 945 engaged bolting nodes against 0.03 ms
    for the table."""
    n = x.shape[0]
    kk = min(k, n - 1)
    if kk <= 0:
        return np.zeros((n, 0), np.int64)
    x = np.ascontiguousarray(x, dtype=np.float64)
    if idx is not None and table is not None:
        return _knn_table(x, np.asarray(idx, np.int64), table, kk)
    from scipy.spatial import cKDTree
    nb = cKDTree(x).query(x, k=kk + 1)[1]
    keep = nb != np.arange(n)[:, None]          # drop the node itself (not always first: duplicates)
    keep[keep.all(axis=1), -1] = False
    return np.ascontiguousarray(nb[keep].reshape(n, kk), dtype=np.int64)


@njit(cache=True)
def _knn_table(x, idx, table, k):
    n = x.shape[0]
    pos = np.full(table.shape[0], -1, np.int64)
    for a in range(n):
        pos[idx[a]] = a
    out = np.empty((n, k), np.int64)
    bd = np.empty(k)
    bi = np.empty(k, np.int64)
    for a in range(n):
        m = 0
        row = table[idx[a]]
        for q in range(row.shape[0]):
            b = pos[row[q]]
            if b >= 0:
                out[a, m] = b
                m += 1
                if m == k:
                    break
        if m < k:                          # too few engaged in the row: scan them all
            m = 0
            for b in range(n):
                if b != a:
                    m = _insert(x, a, b, bd, bi, m, k)
            for q in range(k):
                out[a, q] = bi[q]
    return out


@njit(cache=True)
def _insert(x, i, j, bd, bi, m, k):
    """Point j into point i's distance-sorted k-best list (bd squared distances, bi indices,
    m entries so far); returns the new length."""
    d = 0.0
    for a in range(3):
        t = x[j, a] - x[i, a]
        d += t * t
    if m < k:
        q = m
        m += 1
    elif d < bd[k - 1]:
        q = k - 1
    else:
        return m
    while q > 0 and bd[q - 1] > d:
        bd[q] = bd[q - 1]
        bi[q] = bi[q - 1]
        q -= 1
    bd[q] = d
    bi[q] = j
    return m


def _relu(a):
    return np.maximum(a, 0.0)


@njit(cache=True, fastmath=True)
def _normal_angles(Xr, Wa, Wb, b1, W2, b2, W3, b3, oW1, ob1, oW2, ob2, max_angle):
    """eq. (6): (theta1, theta2)_j = max_angle tanh(f_O2(Xbar_j, sum_{l != j} f_R2(Xbar_j, Xbar_l)))."""
    m, f = Xr.shape
    h = Wa.shape[1]
    A = Xr @ Wa
    B = Xr @ Wb
    out = np.empty((m, 2))
    acc = np.empty(h)
    h1 = np.empty(h)
    for j in range(m):
        acc[:] = 0.0
        for i in range(m):
            if i == j:
                continue
            for c in range(h):
                v = A[j, c] + B[i, c] + b1[c]
                h1[c] = v if v > 0.0 else 0.0
            for c in range(h):
                v = b2[c]
                for a in range(h):
                    v += h1[a] * W2[a, c]
                if v > 0.0:
                    acc[c] += v
        e = acc @ W3 + (m - 1) * b3
        z = np.empty(oW1.shape[1])
        for c in range(oW1.shape[1]):
            v = ob1[c]
            for a in range(f):
                v += Xr[j, a] * oW1[a, c]
            for a in range(e.shape[0]):
                v += e[a] * oW1[f + a, c]
            z[c] = v if v > 0.0 else 0.0
        for c in range(2):
            v = ob2[c]
            for a in range(z.shape[0]):
                v += z[a] * oW2[a, c]
            out[j, c] = max_angle * math.tanh(v)
    return out


def _normal_angles_reference(net: INClustering, Xr: np.ndarray) -> np.ndarray:
    """eq. (6) with NumPy broadcasting over all (j, l) pairs, for the tests."""
    w = net.w
    A, B = Xr @ w["r2_Wa"], Xr @ w["r2_Wb"] + w["r2_b1"]
    M = Xr.shape[0]
    H2 = _relu(_relu(A[:, None, :] + B[None, :, :]) @ w["r2_W2"] + w["r2_b2"])
    S = np.einsum("jl,jlh->jh", 1.0 - np.eye(M), H2) @ w["r2_W3"] + (M - 1) * w["r2_b3"]
    Y = _relu(np.hstack([Xr, S]) @ w["o2_W1"] + w["o2_b1"]) @ w["o2_W2"] + w["o2_b2"]
    return MAX_ANGLE * np.tanh(Y)


@njit(cache=True)
def _rotate_all(n, th1, th2, axis):
    """R_n(th1) R_t(th2) n for unit rows n (m, 3): tilt by th2 toward b = n x t, where
    t = axis x n / |axis x n| is the direction around the static part's axis (so b is the
    axis' direction within n's tangent plane: a positive th2 leans the normal toward +axis,
    the same on every side of the part), then turn the result about n by th1 (Rodrigues).
    A normal along the axis takes t from the world x (or y) direction instead."""
    m = n.shape[0]
    out = np.empty((m, 3))
    for j in range(m):
        nx, ny, nz = n[j, 0], n[j, 1], n[j, 2]
        tx, ty, tz = axis[1] * nz - axis[2] * ny, axis[2] * nx - axis[0] * nz, axis[0] * ny - axis[1] * nx
        tl = math.sqrt(tx * tx + ty * ty + tz * tz)
        if tl < 1e-6:                           # along the axis: any tangent will do
            ax, ay = (1.0, 0.0) if abs(nx) < 0.6 else (0.0, 1.0)
            dot = ax * nx + ay * ny
            tx, ty, tz = ax - dot * nx, ay - dot * ny, -dot * nz
            tl = math.sqrt(tx * tx + ty * ty + tz * tz)
        tx, ty, tz = tx / tl, ty / tl, tz / tl
        bx, by, bz = ny * tz - nz * ty, nz * tx - nx * tz, nx * ty - ny * tx
        c2, s2 = math.cos(th2[j]), math.sin(th2[j])
        mx, my, mz = c2 * nx + s2 * bx, c2 * ny + s2 * by, c2 * nz + s2 * bz
        c1, s1 = math.cos(th1[j]), math.sin(th1[j])
        nm = nx * mx + ny * my + nz * mz
        cx, cy, cz = ny * mz - nz * my, nz * mx - nx * mz, nx * my - ny * mx
        out[j, 0] = c1 * mx + s1 * cx + (1 - c1) * nm * nx
        out[j, 1] = c1 * my + s1 * cy + (1 - c1) * nm * ny
        out[j, 2] = c1 * mz + s1 * cz + (1 - c1) * nm * nz
    return out


def _rotate(n: np.ndarray, th1: float, th2: float, axis=(0.0, 0.0, 1.0)) -> np.ndarray:
    """One normal: ``_rotate_all`` on a single row."""
    return _rotate_all(n[None, :], np.array([th1]), np.array([th2]), np.asarray(axis, float))[0]


def _finish(net, xr, dr, shape, state, f_ext) -> Contacts:
    """Averages -> the static surface's normal there -> normal rotation (eq. (6)).

    The representative stays at its depth-tilted average, at its soft-min depth, and takes
    the static part's SDF gradient at that point as its normal before eq. (6) turns it.
    Measured in the bolting run with the exact detector and the trained networks: moving the
    average onto its depth's level set along the gradient (Newton steps) let the nut sink
    2.3 mm and skip the thread (11.4 mm/rev), 0.85 mm with the gradient normal; averaged
    node normals mix the two thread flanks.  Without the move and with the gradient normal
    it holds: 368 um, 4.996 mm/rev."""
    xs = (xr - shape.p_ws) @ shape.R_ws
    _, g = shape.sdf.query(xs)
    nr = g @ shape.R_ws.T
    # eq. (6): turn the normals
    Xr = np.hstack([node_features(xr, state, f_ext, shape), nr])          # (M, 22)
    w = net.w
    ang = _normal_angles(Xr, w["r2_Wa"], w["r2_Wb"], w["r2_b1"], w["r2_W2"], w["r2_b2"], w["r2_W3"],
                         w["r2_b3"], w["o2_W1"], w["o2_b1"], w["o2_W2"], w["o2_b2"], MAX_ANGLE)
    nr = _rotate_all(nr, ang[:, 0], ang[:, 1], np.ascontiguousarray(shape.R_ws[:, 2]))
    return Contacts(xr, nr, dr)


def soft_min_depth(W: np.ndarray, d: np.ndarray, delta: float | None = None) -> np.ndarray:
    """Representative depths d_j = -delta log sum_i W_ij exp(-d_i / delta): a soft minimum
    of the member depths, weighted by the softmax weights.  It lies between the deepest
    member's depth and the weighted mean (Jensen), and a node enters with a penalty of
    delta |log W_ij|, so only nodes the network really weights can set the depth."""
    return depth_tilted(W, d, delta)[1]


def depth_tilted(W: np.ndarray, d: np.ndarray, delta: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(P, d_r): the softmax weights tilted toward depth, P_ij = W_ij e^(-d_i/delta) / Z_j, and
    the soft-min depths d_j = -delta log Z_j (``soft_min_depth``).  A representative is the
    P-weighted average of its nodes: within the region the network gives it, the deepest
    nodes dominate, so it pushes where its region penetrates most (as k-means' deepest
    member does) while staying a smooth function of the weights.  Measured: plain W
    averages let the nut sink 0.5 mm and miss the thread in the bolting run."""
    delta = SOFT_MIN_DEPTH if delta is None else delta
    dmin = float(d.min())
    E = W * np.exp(-(d - dmin) / delta)[:, None]
    Z = np.maximum(E.sum(axis=0), 1e-300)
    return E / Z, dmin - delta * np.log(Z)


def cluster(net: INClustering, nodes: Contacts, state, f_ext, shape, node_nb=None, k: int = K_NEIGHBOURS) -> Contacts:
    """M_c representatives of the detected contact nodes (eqs. (4)-(6)).

    Every detected node takes part, the speculative band included: at the simulator's 10 ms
    step most contact sets have fewer than 12 penetrating nodes, and the band is where the
    next step's contacts come from.  Each representative is the depth-tilted average
    (``depth_tilted``) of the nodes its softmax weights select, at its soft-min depth, with
    the static SDF's normal there turned by eq. (6).  At most M_c
    detected nodes are the representatives themselves."""
    if len(nodes) <= M_C:
        return nodes
    X = node_features(nodes.x_w, state, f_ext, shape)
    Y = cluster_scores(net, X, _neighbours(nodes.x_w, k, nodes.idx, node_nb))
    # (its averaged normals: the seed's, unused)
    xr, _, dr = _tilted_averages(Y, nodes.x_w, nodes.n_w, nodes.d, net.delta)
    return _finish(net, xr, dr, shape, state, f_ext)


@njit(cache=True)
def _tilted_averages(Y, x, nrm, d, delta):
    """From the scores Y (n, M_c) in one pass per representative: the depth-tilted averages
    of positions and normals and the soft-min depths: ``depth_tilted`` of the exact softmax
    of Y, without forming W.  Terms below e^-SOFTMAX_CUT of the largest term of their own sum
    are skipped (``_softmax_columns``' cut, applied before the tilt, would drop a deep node
    whose score is far down; this pass does not)."""
    n, m = Y.shape
    dmin = d.min()
    xr = np.zeros((m, 3))
    nr = np.zeros((m, 3))
    dr = np.empty(m)
    for c in range(m):
        mx = -np.inf
        mv = -np.inf
        for i in range(n):
            mx = max(mx, Y[i, c])
            mv = max(mv, Y[i, c] - (d[i] - dmin) / delta)
        s1 = 0.0
        s2 = 0.0
        for i in range(n):
            u = Y[i, c] - mx
            if u > -SOFTMAX_CUT:
                s1 += math.exp(u)
            v = Y[i, c] - (d[i] - dmin) / delta - mv
            if v > -SOFTMAX_CUT:
                e = math.exp(v)
                s2 += e
                for a in range(3):
                    xr[c, a] += e * x[i, a]
                    nr[c, a] += e * nrm[i, a]
        ln = 0.0
        for a in range(3):
            xr[c, a] /= s2
            ln += nr[c, a] * nr[c, a]
        ln = max(math.sqrt(ln), 1e-12)
        for a in range(3):
            nr[c, a] /= ln
        dr[c] = dmin - delta * ((mv + math.log(s2)) - (mx + math.log(s1)))
    return xr, nr, dr


def cluster_weights(net: INClustering, X: np.ndarray, nb: np.ndarray) -> np.ndarray:
    """W (n, M_c) of eq. (5), softmax over the nodes for each representative."""
    return _softmax_columns(cluster_scores(net, X, nb))


def cluster_scores(net: INClustering, X: np.ndarray, nb: np.ndarray) -> np.ndarray:
    """Y (n, M_c): f_O1's outputs of eq. (5), before the softmax over the nodes.

    f_R1's first layer splits into Wa^T X_i + (Wb^T X_l + b1), one product per node; the
    pairs' second hidden layer and its sum over each node's k neighbours are
    ``_pair_layer`` (float32 blocks, one BLAS product each); f_R1's last layer is linear, so
    it acts on that sum.  The pair block and its sums are float32 from f_R1's first layer on
    (its product is half the cost in single precision); everything after is float64."""
    w, w32 = net.w, net.float32()
    n, k = nb.shape
    X32 = X.astype(np.float32)
    S = _pair_layer(X32 @ w32["r1_Wa"], X32 @ w32["r1_Wb"] + w32["r1_b1"], nb, w32["r1_W2"], w32["r1_b2"],
                    PAIR_CHUNK)
    E = S @ w["r1_W3"] + k * w["r1_b3"]                     # sum_l f_R1(X_i, X_l), (n, 4)
    W1 = w["o1_W1"]
    H = X @ W1[:X.shape[1]] + E @ W1[X.shape[1]:] + w["o1_b1"]  # f_O1 on [X_i; E_i]
    return np.maximum(H, 0.0, out=H) @ w["o1_W2"] + w["o1_b2"]


PAIR_CHUNK = 64   # nodes per block of the pair layer: its (64 k, 16) float32 blocks stay in L1/L2


@njit(cache=True, fastmath=True)
def _pair_layer(A, B, nb, W2, b2, chunk):
    """sum_p relu(relu(A_i + B_l) W2 + b2), l = nb[i, p], per node i: f_R1's second hidden
    layer summed over each node's neighbours.  Block by block of `chunk` nodes, the pairs'
    first ReLU is gathered into one (chunk k, 16) float32 block, the 16x16 layer is one BLAS
    product on it, and its ReLU is summed per node (float32, branch-free: the loops
    vectorize).  Measured on 945 engaged bolting nodes: 0.11 ms, against 0.18 ms with the
    whole (n k, 16) block at once and a float64 sum, and 0.44 ms for a plain numba loop over
    the pairs (which did not vectorize)."""
    n, k = nb.shape
    h = A.shape[1]
    zero = np.float32(0.0)
    acc = np.zeros((n, h), np.float32)
    H1 = np.empty((chunk * k, h), np.float32)
    Z = np.empty((chunk * k, h), np.float32)
    for i0 in range(0, n, chunk):
        i1 = min(n, i0 + chunk)
        m = (i1 - i0) * k
        for i in range(i0, i1):
            for p in range(k):
                j = nb[i, p]
                r = (i - i0) * k + p
                for c in range(h):
                    H1[r, c] = max(A[i, c] + B[j, c], zero)
        np.dot(H1[:m], W2, Z[:m])
        for i in range(i0, i1):
            for p in range(k):
                r = (i - i0) * k + p
                for c in range(h):
                    acc[i, c] += max(Z[r, c] + b2[c], zero)
    return acc


SOFTMAX_CUT = 40.0     # scores this far below a column's best get weight 0 (e^-40 = 4e-18)


@njit(cache=True)
def _softmax_columns(Y):
    """Softmax over the rows (nodes), per column (representative); the exponential is skipped
    where it is below e^-SOFTMAX_CUT relative to the column's largest term."""
    n, m = Y.shape
    W = np.empty((n, m))
    for c in range(m):
        mx = Y[0, c]
        for i in range(1, n):
            mx = max(mx, Y[i, c])
        tot = 0.0
        for i in range(n):
            t = Y[i, c] - mx
            W[i, c] = math.exp(t) if t > -SOFTMAX_CUT else 0.0
            tot += W[i, c]
        for i in range(n):
            W[i, c] /= tot
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
        for j in nb[i]:
            z = np.concatenate([X[i], X[j]])
            h = _relu(z @ W1 + w["r1_b1"])
            h = _relu(h @ w["r1_W2"] + w["r1_b2"])
            e += h @ w["r1_W3"] + w["r1_b3"]
        h = _relu(np.concatenate([X[i], e]) @ w["o1_W1"] + w["o1_b1"])
        Y[i] = h @ w["o1_W2"] + w["o1_b2"]
    E = np.exp(Y - Y.max(axis=0))
    return E / E.sum(axis=0)


def save(path, net: INClustering, task: str) -> None:
    from sim_core.io.weights import save_npz
    save_npz(path, {"format": np.array(FORMAT), "task": np.array(task), "theta": net.vector(),
                    "delta": np.array(float(net.delta))})


def load(path, task: str | None = None) -> INClustering:
    """Read and check a clustering weight file (one-line WeightsError naming file and field)."""
    from sim_core.io.weights import read_npz
    f = read_npz(path, f"train it: tightsim train clustering --task {task or 'TASK'}")
    f.expect("format", FORMAT)
    f.same("task", task, "task")
    net = INClustering.from_vector(f.array("theta", (N_PARAMS,)))
    net.delta = f.number("delta", lo=1e-9, hi=1e-3, why="the depth tilt's scale, in m")
    bad = probe_problem(net)
    if bad:
        raise f.error(f"field 'theta': the networks give {bad} on a probe contact set: retrain with "
                      f"tightsim train clustering --task {task or 'TASK'}")
    return net


PROBE_NODES = 64     # a seeded probe contact set, features of the scale the networks see


def probe_problem(net: INClustering) -> str:
    """'' if the networks' scores and normal turns are finite on a seeded probe contact set,
    else what is not (weights that pass the format checks but are scaled by 1e30 overflow
    here instead of dividing by zero mid-run)."""
    rng = np.random.default_rng(20261124)
    X = rng.normal(0.0, 1.0, (PROBE_NODES, 19))
    x = rng.normal(0.0, 0.01, (PROBE_NODES, 3))
    try:
        with np.errstate(all="ignore"):
            Y = cluster_scores(net, X, _neighbours(x, K_NEIGHBOURS))
            W = _softmax_columns(Y)
    except (ArithmeticError, ValueError) as e:      # overflowing weights fail inside the kernels
        return f"no scores ({type(e).__name__})"
    if not (np.all(np.isfinite(Y)) and np.all(np.isfinite(W))):
        return "non-finite scores"
    return ""
