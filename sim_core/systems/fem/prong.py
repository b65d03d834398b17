"""A socket prong's models for seed 003's ladder (Fig. 5): the whole FEM (Models 1-2), the
segmented one with the coupling eliminated (Model 3), and the segmented, reduced one (Model 4),
built from one ``ProngSpec`` and mesh level.  ``sim_core.systems.fem`` holds the pieces
(``assembly``: the FEM, ``segments``: the cut, ``reduction``: the basis, ``pmi``: the steps).

Contact nodes: the contact segment's boundary nodes on the prong's inner side (x <= 0: the hook's
lead ramp, land, return face and the blunted top in front of the beam) -- the only faces the plug
can touch.  They and the cut's nodes are the reduction's input nodes (Sec. III-B).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim_core.geometry.connector import LEVELS, ProngSpec, prong_mesh
from sim_core.systems.fem.assembly import FemModel, Material
from sim_core.systems.fem.pmi import CoupledPmi, LinearPmi, Segment
from sim_core.systems.fem.reduction import Basis, balanced_basis
from sim_core.systems.fem.segments import Split, selection, split

INNER_SIDE = 1e-9        # m: a node at x <= this is on the prong's inner side (the plug's)
K_COUPLING = 1e8         # N/m per node and axis: the cut's spring (static error ~ 1/k_c: 5e-6 of
                         # the tip deflection at 1e8, docs/snap.md; PMI keeps it stable at any k_c)
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
        return np.concatenate([self.contact, self.split.couple[0]]) if i == 0 else self.split.couple[1]

    def whole_pmi(self, T: float) -> LinearPmi:
        w = self.whole
        return LinearPmi.build(w.M, w.D, w.K, T)

    def coupled_pmi(self, T: float, reduced: bool, d_c: float = 0.0) -> CoupledPmi:
        segs = []
        for i, (p, H) in enumerate(zip(self.split.parts, self.split.H)):
            Q = self.bases[i].Q if reduced else np.eye(p.dof)
            segs.append(Segment(p.M.toarray(), p.D.toarray(), p.K.toarray(), H.toarray(), Q))
        return CoupledPmi.build(segs[0], segs[1], self.k_c, d_c, T)


def build(spec: ProngSpec | None = None, material: Material | None = None, level: str = "coarse",
          element: str = "p2", k_c: float = K_COUPLING, orders: tuple[int, int] | None = None) -> ProngModels:
    """The prong's models at mesh `level` (``connector.LEVELS``); `orders` the reduced orders
    (default: each segment's static shapes + ``EXTRA_ORDER``)."""
    spec, material = spec or ProngSpec(), material or Material()
    if level not in LEVELS:
        raise ValueError(f"mesh level: must be one of {sorted(LEVELS)}, got {level!r}")
    mesh = prong_mesh(spec, *LEVELS[level])
    sp_ = split(mesh, material, element, spec.hook_bottom)
    p1 = sp_.parts[0]
    contact = np.flatnonzero(p1.surface & (p1.X[:, 0] <= INNER_SIDE) & ~np.isin(np.arange(p1.n), sp_.couple[0]))
    models = ProngModels(spec, material, mesh, sp_, contact, (None, None), float(k_c))
    bases = []
    for i, (p, H) in enumerate(zip(sp_.parts, sp_.H)):
        B = selection(models.inputs(i), p.n).toarray().T
        K = p.K.toarray() + (k_c * (H.T @ H)).toarray() if i == 0 else p.K.toarray()
        order = B.shape[1] + EXTRA_ORDER if orders is None else orders[i]   # 3 columns a node
        bases.append(balanced_basis(p.M.toarray(), K, B, min(order, p.dof)))
    return ProngModels(spec, material, mesh, sp_, contact, tuple(bases), float(k_c))
