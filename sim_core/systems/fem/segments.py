"""Segmentation of a prong (seed 003 Sec. III-A, Fig. 2): the mesh cut at a grid plane z = z_s
into the contact segment (above: the hook, where the plug touches) and the foot segment
(below, fixed at z = 0), each assembled on its own elements.  The nodes on the cut belong to
both; the two copies are joined by the coupling spring of ``pmi.CoupledPmi``.

The seed's wording ("nodes with possible contact (e.g. on the surface)" vs "internal nodes")
would make segment 1 the whole boundary layer; its Fig. 2 and Table I cut the connector
geometrically, which is what keeps segment 1 small: the plug only ever touches the hook's
faces, and a cut below the hook makes the contact segment the few elements it needs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sim_core.systems.fem.assembly import FemModel, Material, assemble

MATCH_DECIMALS = 12      # m rounding that identifies a node's two copies on the cut (1 pm)


@dataclass(frozen=True)
class Split:
    """The two segments of a mesh and their shared nodes.

    ``parts``  (contact segment: floating, foot segment: foot fixed) ``FemModel``s.
    ``couple``  ((n_c,), (n_c,)) the cut's node indices in each part, pairwise the same point.
    ``H``  ((3n_c, 3n_1), (3n_c, 3n_2)) selections of those nodes' coordinates.
    ``whole_of``  ((n_1,), (n_2,)): each part's nodes as indices of the unsegmented model's
    free nodes (``whole``), for comparisons.
    """
    parts: tuple[FemModel, FemModel]
    couple: tuple[np.ndarray, np.ndarray]
    H: tuple[sp.csr_matrix, sp.csr_matrix]
    whole: FemModel
    whole_of: tuple[np.ndarray, np.ndarray]
    z_cut: float
    meshes: tuple = ()          # (contact segment, foot segment) ``skfem.MeshTet``s


def _keys(X: np.ndarray) -> list[tuple]:
    return [tuple(r) for r in np.round(X, MATCH_DECIMALS)]


def selection(idx: np.ndarray, n: int) -> sp.csr_matrix:
    """(3k, 3n) rows picking nodes `idx`' coordinates."""
    cols = (3 * np.asarray(idx)[:, None] + np.arange(3)).ravel()
    return sp.csr_matrix((np.ones(len(cols)), (np.arange(len(cols)), cols)), shape=(len(cols), 3 * n))


def split(mesh, material: Material, element: str, z_cut: float) -> Split:
    """Cut `mesh` at the grid plane nearest `z_cut` (the elements above it are the contact segment)."""
    zs = np.unique(np.round(mesh.p[2], MATCH_DECIMALS))
    inner = zs[(zs > zs[0]) & (zs < zs[-1])]
    if len(inner) == 0:
        raise ValueError("z_cut: the mesh has no inner grid plane to cut at")
    z = float(inner[np.argmin(np.abs(inner - z_cut))])
    centre = mesh.p[2, mesh.t].mean(axis=0)
    top = mesh.restrict(np.flatnonzero(centre > z))
    foot = mesh.restrict(np.flatnonzero(centre < z))
    parts = (assemble(top, material, element, fix_foot=False), assemble(foot, material, element))
    whole = assemble(mesh, material, element)
    key = [{k: i for i, k in enumerate(_keys(p.X))} for p in parts]
    on_cut = [i for i, k in enumerate(_keys(parts[0].X)) if abs(k[2] - round(z, MATCH_DECIMALS)) == 0.0]
    c1 = np.array(on_cut)
    c2 = np.array([key[1][_keys(parts[0].X[i:i + 1])[0]] for i in c1])
    wk = {k: i for i, k in enumerate(_keys(whole.X))}
    whole_of = tuple(np.array([wk[k] for k in _keys(p.X)]) for p in parts)
    return Split(parts, (c1, c2), (selection(c1, parts[0].n), selection(c2, parts[1].n)), whole, whole_of, z,
                 (top, foot))
