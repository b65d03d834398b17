"""Linear FEM of a deformable part (seed 003 Sec. II-A): stiffness and mass assembled by
scikit-fem on a tetrahedral mesh, the fixed (foot) nodes removed (eq. (2)).

**Nodes.**  A node is a point the displacement field is interpolated from: the mesh's vertices,
and with the quadratic element its edges' midpoints too.  Coordinates are node-major: node i
owns rows 3i, 3i + 1, 3i + 2 (x, y, z), metres in the part's frame, and every matrix here
uses that order (scikit-fem numbers a vector element's degrees of freedom that way for the
vertices and then the edges; ``assemble`` checks it).

**The element** (issue 27, deliver 2).  The seed uses linear tetrahedra (P1).  A P1 tetrahedron
has constant strain, so a beam one or two elements thick cannot bend without shearing (shear
locking).  Measured on the shipped prong's tip compliance against P2 refined until it stopped
changing (docs/snap.md): P1 with the coarse P2 mesh's 648 coordinates is 2.0x too stiff, P1 on
the coarse cells 4.6x; the quadratic tetrahedron (P2, linear strain: exact for pure bending
across the thickness) is 3.8 % stiff on the coarse mesh and 2.1 % on the fine one
(``tests/sim_core/fem/test_fem.py``).
The scenario therefore ships P2; ``element = "p1"`` is kept for the comparison.

**Damping** is Rayleigh, D = alpha M + beta K (seed 003 Sec. V-A's form; zero by default: PMI
is passive without it, Prop. 1).

**Floor reaction** (eq. (29) corrected).  The printed eq. (29) solves a PMI velocity for the
fixed nodes as if they moved.  They do not: the floor's force on them is what keeps them
still, the fixed rows of the full equation, r = M_af a + D_af v + K_af x with (a, v, x) the
free nodes' (the fixed nodes' own terms vanish).  In the step that is r_k = M_af (v_k+1 -
v_k) / T + D_af v_hat + K_af x_hat (``FemModel.floor_force``): the sum of r_k balances the
applied force in a static state exactly (tested).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

ELEMENTS = ("p1", "p2")
FIXED_TOL = 1e-12        # m: a node at z <= this (the foot plane z = 0) is fixed


@dataclass(frozen=True)
class Material:
    """A linear elastic solid."""
    E: float = 1.6476e8          # Pa, Young's modulus (seed 003 Sec. V-C: ABS; Sec. V-A's "164.7 Pa" is a misprint)
    nu: float = 0.35             # Poisson's ratio (ABS)
    density: float = 1040.0      # kg/m^3 (ABS; the seed gives none)
    alpha: float = 0.0           # 1/s, Rayleigh mass-proportional damping
    beta: float = 0.0            # s, Rayleigh stiffness-proportional damping

    def __post_init__(self):
        if not self.E > 0.0:
            raise ValueError(f"E: must be > 0 Pa, got {self.E!r}")
        if not -1.0 < self.nu < 0.5:
            raise ValueError(f"nu: must be in (-1, 0.5) for a solid (0.5 is incompressible: no finite "
                             f"bulk modulus), got {self.nu!r}")
        if not self.density > 0.0:
            raise ValueError(f"density: must be > 0, got {self.density!r}")
        if self.alpha < 0.0 or self.beta < 0.0:
            raise ValueError(f"alpha, beta: Rayleigh damping must be >= 0, got {self.alpha!r}, {self.beta!r}")

    @property
    def lame(self) -> tuple[float, float]:
        """(lambda, mu) Pa."""
        lam = self.E * self.nu / ((1.0 + self.nu) * (1.0 - 2.0 * self.nu))
        return lam, self.E / (2.0 * (1.0 + self.nu))


@dataclass(frozen=True)
class FemModel:
    """A part's linear FEM with its fixed nodes removed (eq. (2)).  Constant.

    ``X``  (n, 3) m, the free nodes' rest positions (part frame); node i is rows 3i..3i+2 below.
    ``M``, ``K``, ``D``  (3n, 3n) sparse CSR: mass kg, stiffness N/m, damping N s/m.
    ``M_af``, ``K_af``, ``D_af``  (3 n_fixed, 3n): the fixed rows against the free columns
    (the floor reaction).  ``X_fixed`` (n_fixed, 3).  ``surface`` (n,) bool: free nodes on the
    boundary.  ``free_of_all`` (n,) the free nodes' indices among all the mesh's nodes.
    """
    X: np.ndarray
    M: sp.csr_matrix
    K: sp.csr_matrix
    D: sp.csr_matrix
    M_af: sp.csr_matrix
    K_af: sp.csr_matrix
    D_af: sp.csr_matrix
    X_fixed: np.ndarray
    surface: np.ndarray
    free_of_all: np.ndarray
    element: str
    material: Material

    @property
    def n(self) -> int:
        return len(self.X)

    @property
    def dof(self) -> int:
        return 3 * len(self.X)

    def floor_force(self, v0, v1, x_hat, T: float) -> np.ndarray:
        """(n_fixed, 3) N, the floor's force on each fixed node over the step (the module's text)."""
        v_hat = 0.5 * (v0 + v1)
        r = self.M_af @ ((v1 - v0) / T) + self.D_af @ v_hat + self.K_af @ x_hat
        return r.reshape(-1, 3)

    def energy(self, x, v) -> float:
        """J, 1/2 v^T M v + 1/2 x^T K x (eq. (6)'s E)."""
        return 0.5 * float(v @ (self.M @ v)) + 0.5 * float(x @ (self.K @ x))


def _element(name: str):
    from skfem import ElementTetP1, ElementTetP2, ElementVector
    if name not in ELEMENTS:
        raise ValueError(f"element: must be one of {ELEMENTS}, got {name!r}")
    return ElementVector(ElementTetP2() if name == "p2" else ElementTetP1())


def assemble(mesh, material: Material, element: str = "p2", fix_foot: bool = True) -> FemModel:
    """The FEM of `mesh` (a ``skfem.MeshTet``, metres), nodes on z <= FIXED_TOL fixed (none with
    ``fix_foot=False``: a floating segment, K singular)."""
    from skfem import Basis, BilinearForm, asm
    from skfem.helpers import dot
    from skfem.models.elasticity import linear_elasticity

    basis = Basis(mesh, _element(element))
    n_all = basis.N // 3
    order = np.concatenate([basis.nodal_dofs.T] + ([basis.edge_dofs.T] if element == "p2" else []))
    if not np.array_equal(order.ravel(), np.arange(basis.N)):
        raise RuntimeError("scikit-fem's degrees of freedom are not node-major: the FEM's node order breaks")
    X_all = basis.doflocs[:, order[:, 0]].T

    rho = material.density

    @BilinearForm
    def mass(u, v, w):
        return rho * dot(u, v)

    K = asm(linear_elasticity(*material.lame), basis).tocsr()
    M = asm(mass, basis).tocsr()
    fixed = X_all[:, 2] <= FIXED_TOL if fix_foot else np.zeros(n_all, bool)
    if fix_foot and not fixed.any():
        raise ValueError("mesh: no node on the foot plane z = 0 to fix")
    free = ~fixed
    df = np.repeat(free, 3)
    da = ~df
    surf_all = np.zeros(n_all, bool)
    bf = mesh.boundary_facets()
    surf_all[np.unique(mesh.facets[:, bf])] = True               # vertices on the boundary
    if element == "p2":                                          # and the boundary edges' midpoints
        be = np.unique(mesh.f2e[:, bf])
        surf_all[mesh.nvertices + be] = True

    def part(A, rows, cols):
        return A[rows][:, cols].tocsr()

    D = material.alpha * M + material.beta * K
    return FemModel(X=X_all[free], M=part(M, df, df), K=part(K, df, df), D=part(D, df, df).tocsr(),
                    M_af=part(M, da, df), K_af=part(K, da, df), D_af=part(D, da, df).tocsr(),
                    X_fixed=X_all[fixed], surface=surf_all[free], free_of_all=np.flatnonzero(free),
                    element=element, material=material)


def face_load(model: FemModel, mesh, where, force) -> np.ndarray:
    """(3n,) N, the consistent nodal load of a total `force` (3,) spread as a uniform traction
    over the boundary facets whose centres satisfy `where` (x: (3, k) -> (k,) bool)."""
    from skfem import FacetBasis, LinearForm, asm
    from skfem.helpers import dot

    facets = mesh.facets_satisfying(where, boundaries_only=True)
    if len(facets) == 0:
        raise ValueError("face_load: no boundary facet satisfies the selection")
    fb = FacetBasis(mesh, _element(model.element), facets=facets)
    # the shape functions sum to one: their integrals sum to the area
    area = float(asm(LinearForm(lambda v, w: v), FacetBasis(mesh, _element_scalar(model.element), facets=facets)).sum())
    t = np.asarray(force, float) / area
    f = asm(LinearForm(lambda v, w: dot(np.array(t)[:, None, None] + 0.0 * w.x, v)), fb)
    free = np.repeat(_free_mask(model, mesh), 3)
    return f[free]


def _element_scalar(name: str):
    from skfem import ElementTetP1, ElementTetP2
    return ElementTetP2() if name == "p2" else ElementTetP1()


def _free_mask(model: FemModel, mesh) -> np.ndarray:
    n_all = mesh.nvertices + (mesh.nedges if model.element == "p2" else 0)
    m = np.zeros(n_all, bool)
    m[model.free_of_all] = True
    return m
