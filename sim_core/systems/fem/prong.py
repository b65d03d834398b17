"""A socket prong's models for seed 003's ladder (Fig. 5): the whole FEM (Models 1-2), the
segmented one with the coupling eliminated (Model 3), and the segmented, reduced one (Model 4),
built from one ``ProngSpec`` and mesh level.  ``sim_core.systems.fem`` holds the pieces
(``assembly``: the FEM, ``segments``: the cut, ``reduction``: the basis, ``pmi``: the steps).

Contact nodes: the contact segment's boundary nodes on the prong's inner side (x <= 0: the hook's
lead ramp, land, return face and the blunted top in front of the beam) -- the only faces the plug
can touch.  They and the cut's nodes are the reduction's input nodes (Sec. III-B).

Contact points (``surface_samples``): the nodes alone leave the faces between them blind -- the
plug's edge slid through the lead ramp between two node rows and went 0.44 mm in before a node
met it (measured on the coarse mesh).  As in seed 003 Sec. IV-A the detection points are
interpolated on the surface from the FEM nodes (eq. (23)): a barycentric grid on each inner-side
boundary triangle, each point's motion the quadratic triangle's six-node interpolation (exact
for the P2 field).  A force at a point is spread on the same weights, so the inputs stay the
contact nodes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim_core.geometry.connector import LEVELS, ProngSpec, cached_prong_mesh
from sim_core.systems.fem.assembly import FemModel, Material
from sim_core.systems.fem.pmi import CoupledPmi, Segment
from sim_core.systems.fem.reduction import Basis, balanced_basis
from sim_core.systems.fem.segments import Split, selection, split

INNER_SIDE = 1e-9        # m: a node at x <= this is on the prong's inner side (the plug's)
K_COUPLING = 1e8         # N/m per node and axis: the cut's spring (static error ~ 1/k_c: 2.8e-5 at
                         # the contact nodes at 1e8, docs/snap.md; PMI keeps it stable at any k_c)
EXTRA_ORDER = 10         # balanced states beyond a segment's static shapes (docs/snap.md)


@dataclass(frozen=True)
class ProngModels:
    """``mesh`` (skfem.MeshTet), ``split`` (``Split``), ``contact`` (segment 1's contact node
    indices), ``bases`` (segment 1, segment 2 ``Basis``) -- all constant."""
    spec: ProngSpec
    material: Material
    mesh: object
    split: Split
    contact: np.ndarray
    bases: tuple[Basis, Basis]
    k_c: float

    @property
    def whole(self) -> FemModel:
        return self.split.whole

    def inputs(self, i: int) -> np.ndarray:
        """Segment i's input nodes (contact nodes first for segment 0, then the cut's)."""
        return _inputs(self.split, self.contact, i)

    def basis_stiffness(self, i: int) -> np.ndarray:
        """The stiffness segment i's basis is computed on (``reduction``): the contact segment's
        with its cut's springs to ground (it floats), the foot segment's own."""
        return _basis_stiffness(self.split, self.k_c, i)

    def coupled_pmi(self, T: float, reduced: bool, d_c: float = 0.0) -> CoupledPmi:
        segs = []
        for i, (p, H) in enumerate(zip(self.split.parts, self.split.H)):
            Q = self.bases[i].Q if reduced else np.eye(p.dof)
            segs.append(Segment(p.M.toarray(), p.D.toarray(), p.K.toarray(), H.toarray(), Q))
        return CoupledPmi.build(segs[0], segs[1], self.k_c, d_c, T)


def _inputs(sp_: Split, contact: np.ndarray, i: int) -> np.ndarray:
    return np.concatenate([contact, sp_.couple[0]]) if i == 0 else sp_.couple[1]


def _basis_stiffness(sp_: Split, k_c: float, i: int) -> np.ndarray:
    K, H = sp_.parts[i].K, sp_.H[i]
    return (K + k_c * (H.T @ H)).toarray() if i == 0 else K.toarray()


def build(spec: ProngSpec | None = None, material: Material | None = None, level: str = "coarse",
          element: str = "p2", k_c: float = K_COUPLING, orders: tuple[int, int] | None = None) -> ProngModels:
    """The prong's models at mesh `level` (``connector.LEVELS``); `orders` the reduced orders
    (default, or an entry None: the segment's static shapes + ``EXTRA_ORDER``)."""
    spec, material = spec or ProngSpec(), material or Material()
    if level not in LEVELS:
        raise ValueError(f"mesh level: must be one of {sorted(LEVELS)}, got {level!r}")
    mesh = cached_prong_mesh(spec, level)       # assets/fem/, or built: the same mesh
    sp_ = split(mesh, material, element, spec.hook_bottom)
    p1 = sp_.parts[0]
    contact = np.flatnonzero(p1.surface & (p1.X[:, 0] <= INNER_SIDE) & ~np.isin(np.arange(p1.n), sp_.couple[0]))
    bases = []
    for i, p in enumerate(sp_.parts):
        B = selection(_inputs(sp_, contact, i), p.n).toarray().T
        K = _basis_stiffness(sp_, k_c, i)
        if orders is None or orders[i] is None:
            order = min(B.shape[1] + EXTRA_ORDER, p.dof)                # 3 columns a node
        else:
            order = orders[i]
        bases.append(balanced_basis(p.M.toarray(), K, B, order))
    return ProngModels(spec, material, mesh, sp_, contact, tuple(bases), float(k_c))


SAMPLES_PER_EDGE = 8        # barycentric subdivisions of each inner-side triangle (0.06-0.2 mm along z coarse)


def _p2_weights(lam: np.ndarray) -> np.ndarray:
    """(k, 6) the quadratic triangle's shape functions at barycentric points lam (k, 3): corners
    0, 1, 2 then the edges (0, 1), (1, 2), (2, 0)."""
    a, b, c = lam.T
    return np.stack([a * (2 * a - 1), b * (2 * b - 1), c * (2 * c - 1), 4 * a * b, 4 * b * c, 4 * c * a], axis=1)


def surface_samples(pm: ProngModels, per_edge: int = SAMPLES_PER_EDGE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Detection points on the contact segment's inner-side faces: (X (k, 3) rest positions, nodes
    (k, 6) segment-1 node indices, weights (k, 6)); duplicates on shared edges removed."""
    mesh = pm.split.meshes[0]
    if pm.whole.element != "p2":
        raise ValueError("surface_samples: needs the quadratic element's edge nodes")
    P = mesh.p
    bf = mesh.boundary_facets()
    grid = np.array([(i, j, per_edge - i - j) for i in range(per_edge + 1) for j in range(per_edge + 1 - i)],
                    float) / per_edge
    Wq = _p2_weights(grid)
    edges = {tuple(sorted(e)): k for k, e in enumerate(mesh.edges.T)}
    X, N, Wt, seen = [], [], [], set()
    for f in bf:
        v = mesh.facets[:, f]
        xv = P[:, v].T
        if np.any(xv[:, 0] > INNER_SIDE) or np.allclose(xv[:, 2], pm.split.z_cut):
            continue                                       # the outer side, the beam face, the cut
        nrm = np.cross(xv[1] - xv[0], xv[2] - xv[0])
        if abs(nrm[1]) > 0.9 * np.linalg.norm(nrm):
            continue                                       # the hook's y-end faces: the prism plug's faces cover them
        en = [mesh.nvertices + edges[tuple(sorted((v[a], v[b])))] for a, b in ((0, 1), (1, 2), (2, 0))]
        nodes = np.array(list(v) + en)
        for lam, w in zip(grid, Wq):
            x = lam @ xv
            key = tuple(np.round(x, 12))
            if key in seen:
                continue
            seen.add(key)
            X.append(x)
            N.append(nodes)
            Wt.append(w)
    return np.array(X), np.array(N), np.array(Wt)
