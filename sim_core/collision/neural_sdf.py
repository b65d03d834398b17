"""Neural signed distance of a static part (seed 000 Sec. III.A, V.B), inference without torch.

The network is the seed's: two hidden layers of 64 with ReLU and a tanh output scaled to a
distance band, d = D tanh(y).  Its input is a symmetry-reduced coordinate of the query point
in the part frame, so the 64-64 network spends its capacity on the profile instead of on
re-learning a rotation it cannot break:

* ``axial`` (hole, any body of revolution): (r, z), scaled to about [-1, 1];
* ``prism`` (a snap fit's plug, ``connector.PlugSpec``: a profile in x-z extruded along y,
  symmetric about x = 0): (|x|, z), scaled as ``axial``'s;
* ``helical`` (bolt): (r, z, cos psi, sin psi) with the helix phase psi = 2 pi (z - c theta)/p.
  A thread's radius depends on theta and z only through z - c theta (``profiles``), except
  near the run-out and the tip, which z still tells apart.

The contact normal is the analytic gradient of the network, back-propagated by hand through
the two layers and then through the feature map's Jacobian (``features``), not a finite
difference.  Inference is batched: the layers are float32 matrix products (BLAS), the
feature map and its Jacobian a numba kernel; the gradient is taken only for the nodes whose
distance is below the caller's band (the contacts), since the rest are dropped anyway.

Weights live in ``.npz`` files (``assets/sdf/PART.npz``) written by ``tightsim train sdf``;
:func:`load` checks every field and names the file and field in a one-line error.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from sim_core.io.weights import WeightsError, read_npz, save_npz  # noqa: F401 - WeightsError re-exported

FORMAT = "tightsim-neural-sdf-1"
HIDDEN = 64
KINDS = {"axial": 2, "helical": 4, "thread": 4, "bore": 3, "prism": 2}     # feature kind -> input width
# r0, rs, z0, zs [, helix c, pitch[, z_a, z_b, ends]]; bore: r0, rs, z0, zs, z_a, z_b, ends
# prism: x0, xs, z0, zs
N_PARAMS = {"axial": 4, "helical": 6, "thread": 9, "bore": 7, "prism": 4}
_KIND_CODE = {"axial": 0, "helical": 1, "thread": 2, "bore": 3, "prism": 4}
# the indices of rs, zs, pitch, ends in params: the features divide by them
_DIVISORS = {"axial": [1, 3], "helical": [1, 3, 5], "thread": [1, 3, 5, 8], "bore": [1, 3, 6], "prism": [1, 3]}
MAX_SCALE = 1.0               # m: the distance band D of a part a few cm across is mm (shipped: 4 mm)


def spec_digest(spec) -> str:
    """Short digest of a part specification: weights trained for another geometry are refused."""
    return hashlib.sha256(repr(spec).encode()).hexdigest()[:16]


# --- the symmetry-reduced input and its Jacobian -------------------------------------------

@njit(cache=True)
def _features(p, kind, fp, want_jac):
    """Features F (n, k) and, if want_jac, dF/dp (n, k, 3).  fp: r0, rs, z0, zs[, c, p[, z_a,
    z_b, ends]].  kind 0 axial (r, z); 4 prism (|x|, z); 1 helical (r, z, cos psi, sin psi); 2 thread (r, u,
    below, above): u the helix phase folded about the crest centre, in [-1, 1]; below / above
    how far z lies under z_a / over z_b (the full thread's ends), in units of `ends`; 3 bore
    (r, below, above), with z_a, z_b where the straight bore ends."""
    n = p.shape[0]
    k = 2 if kind == 0 or kind == 4 else (3 if kind == 3 else 4)
    F = np.empty((n, k))
    J = np.zeros((n if want_jac else 0, k, 3))
    r0, rs, z0, zs = fp[0], fp[1], fp[2], fp[3]
    for i in range(n):
        x, y, z = p[i, 0], p[i, 1], p[i, 2]
        if kind == 4:
            # the plug's profile does not change along y and is mirrored about x = 0
            F[i, 0] = (abs(x) - r0) / rs
            F[i, 1] = (z - z0) / zs
            if want_jac:
                J[i, 0, 0] = (1.0 if x >= 0.0 else -1.0) / rs
                J[i, 1, 2] = 1.0 / zs
            continue
        r = math.sqrt(x * x + y * y)
        F[i, 0] = (r - r0) / rs
        F[i, 1] = (z - z0) / zs
        if want_jac:
            rr = max(r, 1e-12)
            J[i, 0, 0], J[i, 0, 1] = x / rr / rs, y / rr / rs
            J[i, 1, 2] = 1.0 / zs
        if kind == 0:
            continue
        if kind == 3:
            # a straight bore: between its end chamfers the part is invariant along z, so
            # there the distance depends on r alone; z enters only beyond z_a / z_b
            za, zb, ends = fp[4], fp[5], fp[6]
            F[i, 1] = min(z - za, 0.0) / ends
            F[i, 2] = max(z - zb, 0.0) / ends
            if want_jac:
                J[i, 1, 2] = (1.0 / ends) if z < za else 0.0
                J[i, 2, 2] = (1.0 / ends) if z > zb else 0.0
            continue
        c, pitch = fp[4], fp[5]
        th = math.atan2(y, x)
        zeta = z - c * th                        # the thread's axial phase (m)
        psi = 2.0 * math.pi * zeta / pitch
        cp, sp = math.cos(psi), math.sin(psi)
        j = 2
        r2 = max(x * x + y * y, 1e-24)
        dzx, dzy = c * y / r2, -c * x / r2       # d zeta / d(x, y); d zeta / dz = 1
        if kind == 2:
            # distance in phase from the nearest crest centre, 0 .. p/2: along its full length
            # the thread is symmetric about its crest (a half-turn about a radial line maps
            # it onto itself), so there the distance depends on (r, u) alone
            w = (zeta + 0.5 * pitch) % pitch - 0.5 * pitch
            q = 0.25 * pitch
            F[i, 1] = (abs(w) - q) / q
            za, zb, ends = fp[6], fp[7], fp[8]
            F[i, 2] = min(z - za, 0.0) / ends
            F[i, 3] = max(z - zb, 0.0) / ends
            if want_jac:
                sg = (1.0 if w >= 0.0 else -1.0) / q
                J[i, 1, 0], J[i, 1, 1], J[i, 1, 2] = sg * dzx, sg * dzy, sg
                J[i, 2, 2] = (1.0 / ends) if z < za else 0.0
                J[i, 3, 2] = (1.0 / ends) if z > zb else 0.0
            continue
        j = 2
        F[i, j], F[i, j + 1] = cp, sp
        if want_jac:
            k2 = 2.0 * math.pi / pitch
            J[i, j, 0], J[i, j, 1], J[i, j, 2] = -sp * k2 * dzx, -sp * k2 * dzy, -sp * k2
            J[i, j + 1, 0], J[i, j + 1, 1], J[i, j + 1, 2] = cp * k2 * dzx, cp * k2 * dzy, cp * k2
    return F, J


@njit(cache=True, fastmath=True)
def _layer1(F, W1t, b1):
    """relu(F W1^T + b1) in float32: k <= 4 inputs, too narrow for a GEMM to pay."""
    n, k = F.shape
    h = W1t.shape[1]
    out = np.empty((n, h), np.float32)
    for i in range(n):
        for j in range(h):
            out[i, j] = b1[j]
        for a in range(k):
            f = np.float32(F[i, a])
            for j in range(h):
                out[i, j] += f * W1t[a, j]
        for j in range(h):
            out[i, j] = max(out[i, j], np.float32(0.0))
    return out


@njit(cache=True, fastmath=True)
def _head(z2, b2, w3, b3, scale, band, every, want_grad):
    """From the second layer's pre-activation z2 (n, 64): the distance d = D tanh(y) of every
    node and, for the nodes with d < band (all with ``every``), their indices and the output's
    gradient with respect to the second hidden layer, mask2 * w3, in a compact (m, 64) array."""
    n, h = z2.shape
    d = np.empty(n)
    sel = np.empty(n, np.int64)
    g2 = np.empty((n if want_grad else 0, h), np.float32)
    m = 0
    for i in range(n):
        y = b3
        for j in range(h):
            v = z2[i, j] + b2[j]
            if v > 0.0:
                y += v * w3[j]
        d[i] = scale * math.tanh(y)
        if want_grad and (every or d[i] < band):
            for j in range(h):
                g2[m, j] = w3[j] if z2[i, j] + b2[j] > 0.0 else np.float32(0.0)
            sel[m] = i
            m += 1
    return d, sel[:m], g2[:m]


@njit(cache=True, fastmath=True)
def _normals_out(g1, h1, sel, W1, J, out):
    """Chain rule back to the point: gF = (mask1 * g1) W1, then the unit vector along J^T gF,
    written to out[sel]."""
    m, h = g1.shape
    k = W1.shape[1]
    gF = np.empty(k)
    for r in range(m):
        i = sel[r]
        for a in range(k):
            gF[a] = 0.0
        for j in range(h):
            if h1[i, j] > 0.0:
                w = g1[r, j]
                for a in range(k):
                    gF[a] += w * W1[j, a]
        a0 = a1 = a2 = 0.0
        for a in range(k):
            a0 += gF[a] * J[i, a, 0]
            a1 += gF[a] * J[i, a, 1]
            a2 += gF[a] * J[i, a, 2]
        s = max(math.sqrt(a0 * a0 + a1 * a1 + a2 * a2), 1e-30)
        out[i, 0], out[i, 1], out[i, 2] = a0 / s, a1 / s, a2 / s


def features(kind: str, params: np.ndarray, p: np.ndarray, jacobian: bool = False):
    """Symmetry-reduced network input of points p (n, 3) in the part frame: F (n, k) and,
    with ``jacobian``, dF/dp (n, k, 3).  Training uses this same function, so the network
    is evaluated at run time on exactly the coordinates it was trained on."""
    p = np.ascontiguousarray(p, dtype=np.float64).reshape(-1, 3)
    return _features(p, _KIND_CODE[kind], np.asarray(params, dtype=np.float64), jacobian)


# --- the network -----------------------------------------------------------------------------

@dataclass
class NeuralSDF:
    """A trained network for one part: ``query(p) -> (d, unit normal)`` like the exact SDF."""
    part: str
    kind: str
    params: np.ndarray            # feature scaling (and helix c, p)
    scale: float                  # D: d = D tanh(y)
    W1: np.ndarray                # (64, k) float32
    b1: np.ndarray
    W2: np.ndarray                # (64, 64)
    b2: np.ndarray
    W3: np.ndarray                # (1, 64)
    b3: np.ndarray
    bounds: tuple                 # (r_max, z_min, z_max) of the part, as the exact SDF's
    digest: str = ""
    source: str = "<memory>"

    def __post_init__(self):
        for name in ("W1", "b1", "W2", "b2", "W3", "b3"):
            setattr(self, name, np.ascontiguousarray(getattr(self, name), dtype=np.float32))
        # transposed once, so the batched products below are plain row-major GEMMs
        self._W1t, self._W2t, self._w3 = self.W1.T.copy(), self.W2.T.copy(), self.W3[0].copy()
        self._b3 = np.float32(self.b3[0])

    def _run(self, p, band, want_grad):
        """Forward pass (and the backward pass for the nodes with d < band): the two 64 x 64
        products are float32 GEMMs (BLAS), everything elementwise is fused in numba kernels,
        and the backward product runs only over the nodes that need a normal."""
        p = np.ascontiguousarray(p, dtype=np.float64).reshape(-1, 3)
        n = p.shape[0]
        g = np.full((n, 3), np.nan)
        if n == 0:
            return np.zeros(0), g
        F, J = features(self.kind, self.params, p, jacobian=want_grad)
        h1 = _layer1(F, self._W1t, self.b1)
        z2 = h1 @ self._W2t
        d, sel, g2 = _head(z2, self.b2, self._w3, self._b3, self.scale,
                           0.0 if band is None else band, band is None, want_grad)
        if sel.size:
            # back-propagation by hand through y = w3 . relu(W2 relu(W1 F + b1) + b2) + b3;
            # the output's factor D (1 - tanh^2) is positive and common to all three
            # components, so the unit normal does not need it
            _normals_out(g2 @ self.W2, h1, sel, self.W1, J, g)
        return d, g

    def distance(self, p: np.ndarray) -> np.ndarray:
        """Signed distance only (m), (n,)."""
        return self._run(p, None, False)[0]

    def query(self, p: np.ndarray, band: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Signed distance (n,) and unit outward normal (n, 3) at points p (n, 3).  With
        ``band``, normals are computed only where d < band (NaN elsewhere)."""
        return self._run(p, None if band is None else float(band), True)

    def __call__(self, p: np.ndarray) -> np.ndarray:
        return self.distance(p)

    def arrays(self) -> dict:
        """Everything a weight file holds."""
        return {"format": np.array(FORMAT), "part": np.array(self.part), "kind": np.array(self.kind),
                "params": np.asarray(self.params, dtype=np.float64), "scale": np.array(self.scale),
                "bounds": np.asarray(self.bounds, dtype=np.float64), "digest": np.array(self.digest),
                "W1": self.W1, "b1": self.b1, "W2": self.W2, "b2": self.b2, "W3": self.W3, "b3": self.b3}

    def save(self, path) -> None:
        save_npz(path, self.arrays())


def load(path, spec=None, part: str | None = None, probe: bool = False) -> NeuralSDF:
    """Read and check a weight file.  ``spec``/``part``: refuse weights trained for another
    part or another geometry; ``probe`` (with ``spec``): also refuse weights whose distances
    disagree with that geometry (``probe_problem``; what a simulation loads).  Errors:
    :class:`WeightsError`, one line naming file and field."""
    f = read_npz(path, f"train it: tightsim train sdf --part {part or Path(path).stem}")
    f.expect("format", FORMAT)
    name, kind = f.same("part", part, "part"), f.choice("kind", KINDS)
    digest = f.str("digest")
    if spec is not None and digest != spec_digest(spec):
        raise f.error(f"field 'digest' {digest} does not match the geometry of part {name!r} "
                      f"({spec_digest(spec)}): retrain with tightsim train sdf --part {name}")
    k = KINDS[kind]
    # the feature map divides by rs, zs, the pitch and `ends` (``_features``): each > 0
    params = f.bounded("params", (N_PARAMS[kind],), above=0.0, index=_DIVISORS[kind],
                       why="a scale the features divide by")
    bounds = f.array("bounds", (3,))
    f.bounded("bounds", (3,), above=0.0, index=[0], why="the part's radius")
    if not bounds[1] < bounds[2]:
        raise f.error(f"field 'bounds' must have z_min < z_max (got {bounds[1]:g}, {bounds[2]:g})")
    net = NeuralSDF(part=name, kind=kind, params=params,
                    scale=f.number("scale", above=0.0, hi=MAX_SCALE, why="the band D of d = D tanh(y), in m"),
                    W1=f.array("W1", (HIDDEN, k)),
                    b1=f.array("b1", (HIDDEN,)), W2=f.array("W2", (HIDDEN, HIDDEN)),
                    b2=f.array("b2", (HIDDEN,)), W3=f.array("W3", (1, HIDDEN)),
                    b3=f.array("b3", (1,)), bounds=tuple(bounds),
                    digest=digest, source=str(path))
    if spec is not None and probe:
        bad = _probe_verdict(net, spec)
        if bad:
            raise f.error(f"the network disagrees with the geometry of part {name!r} it claims ({bad}): "
                          f"retrain with tightsim train sdf --part {name}")
    return net


# A trained network's distance is within ~10 um of the exact one near the surface (assets/sdf/
# PART.json: 2-7 um RMS); weights that pass every format check but are wrong (a layer scaled
# by 1e30, a negated output) are off by millimetres or have the wrong sign.  PROBE_RMS_TOL
# sits between the two.
PROBE_POINTS = 4000           # seeded points in the part's bounding cylinder, grown by PROBE_BAND
PROBE_BAND = 2e-3             # m: the probes kept are within this of the surface
PROBE_RMS_TOL = 2e-4          # m
PROBE_SIGN_DEPTH = 5e-4       # m: beyond this depth or height the sign must agree
PROBE_SIGN_FRACTION = 0.01    # of those probes


_PROBED: dict = {}      # (geometry digest, weights' hash) -> verdict: a scenario builds many times


def _probe_verdict(net: NeuralSDF, spec) -> str:
    """``probe_problem``, once per weights and geometry (the probe costs ~150 ms)."""
    import hashlib
    h = hashlib.sha1()
    for a in (net.params, net.W1, net.b1, net.W2, net.b2, net.W3, net.b3, np.asarray(net.bounds)):
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    h.update(repr(float(net.scale)).encode())
    key = (spec_digest(spec), h.hexdigest())
    if key not in _PROBED:
        _PROBED[key] = probe_problem(net, spec)
    return _PROBED[key]


def probe_problem(net: NeuralSDF, spec) -> str:
    """'' if the network matches the exact geometry of `spec` at seeded probe points near the
    surface, else what is wrong (the distances' RMS error, wrong signs, non-finite output)."""
    from sim_core.geometry.sdf import exact_sdf
    rng = np.random.default_rng(20261124)
    r_max, z_lo, z_hi = net.bounds
    r = (r_max + PROBE_BAND) * np.sqrt(rng.random(PROBE_POINTS))
    a = rng.uniform(0.0, 2.0 * np.pi, PROBE_POINTS)
    z = rng.uniform(z_lo - PROBE_BAND, z_hi + PROBE_BAND, PROBE_POINTS)
    p = np.column_stack([r * np.cos(a), r * np.sin(a), z])
    d_true = exact_sdf(spec).query(p)[0]
    near = np.abs(d_true) < PROBE_BAND
    if near.sum() < 50:
        return ""                     # too few probes near this surface to judge
    with np.errstate(all="ignore"):
        d = net.query(p[near])[0]
    if not np.all(np.isfinite(d)):
        return "non-finite distances"
    rms = float(np.sqrt(np.mean((d - d_true[near]) ** 2)))
    if rms > PROBE_RMS_TOL:
        return f"distance RMS {rms * 1e3:.3g} mm at {int(near.sum())} probes near the surface"
    deep = np.abs(d_true[near]) > PROBE_SIGN_DEPTH
    wrong = np.mean(np.sign(d[deep]) != np.sign(d_true[near][deep])) if deep.any() else 0.0
    if wrong > PROBE_SIGN_FRACTION:
        return f"wrong sign at {100 * wrong:.1f} % of the probes"
    return ""


class TorchBackend:
    """The same network evaluated by torch (CPU, or CUDA when present) for large batches --
    offline studies, dataset labelling; the physics loop uses :class:`NeuralSDF`'s own
    inference.  ``query`` has NeuralSDF's interface and results (float32 layers on both)."""

    def __init__(self, net: NeuralSDF, device: str | None = None):
        import torch
        self.torch = torch
        self.net = net
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        t = lambda a: torch.as_tensor(np.asarray(a, np.float32), device=self.device)  # noqa: E731
        self.W1, self.b1, self.W2, self.b2 = t(net.W1), t(net.b1), t(net.W2), t(net.b2)
        self.w3, self.b3 = t(net.W3[0]), t(net.b3)

    def query(self, p: np.ndarray, band: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        torch = self.torch
        p = np.ascontiguousarray(p, dtype=np.float64).reshape(-1, 3)
        F, J = features(self.net.kind, self.net.params, p, jacobian=True)
        Ft = torch.as_tensor(F, dtype=torch.float32, device=self.device).requires_grad_(True)
        h = torch.relu(Ft @ self.W1.T + self.b1)
        h = torch.relu(h @ self.W2.T + self.b2)
        y = h @ self.w3 + self.b3
        (gF,) = torch.autograd.grad(y.sum(), Ft)           # d y / d F; tanh's factor is > 0
        d = self.net.scale * np.tanh(y.detach().cpu().numpy().astype(np.float64))
        grad = np.einsum("nk,nkj->nj", gF.cpu().numpy().astype(np.float64), J)
        g = grad / np.maximum(np.linalg.norm(grad, axis=1, keepdims=True), 1e-30)
        if band is not None:
            g[d >= band] = np.nan
        return d, g
