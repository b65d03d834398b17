"""The comparison of seed 003 Sec. V-A / Fig. 4: a corotational FEM (geometric nonlinearity,
linear material; Mueller and Gross 2004) integrated by PMI linearized at each step's start,
against the linear FEM the simulator uses.

Linear tetrahedra (P1: the rotation of an element is its deformation gradient's polar factor,
one per element).  Per element e with rest vertex matrix D_m (edges from vertex 0) and 12x12
rest stiffness K_e: F = D_s D_m^-1, R = polar(F) (by SVD, det +1), internal force
f_e = R_b K_e (R_b^T x_e - X_e) with R_b = blockdiag(R, R, R, R), tangent R_b K_e R_b^T.  The step
linearizes f_int at the step's start, f_int(x_hat) ~ f_int(x) + K(x) T v_hat / 2:

    (2M/T + D + (T/2) K(x)) v_hat = f_ext + (2/T) M v - f_int(x),

the linear model's eq. (4) with K(x), f_int(x) refreshed each step -- "the linearized dynamics of
the nonlinear FEM" the seed reports diverging at high stiffness.  Unlike the linear model it has
no exact discrete energy balance: the linearization leaves an O(T^2) error per step that need
not be dissipative (``energy`` is the rest-frame strain energy plus the kinetic).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from sim_core.systems.fem.assembly import FIXED_TOL, Material


@dataclass(frozen=True)
class Corotational:
    """Constant: rest positions X (n, 3) of the P1 mesh's vertices, tets (4, ne), free mask,
    per element D_m^-1 (ne, 3, 3) and K_e (ne, 12, 12), the lumped-free consistent mass M
    (3n x 3n, sparse), Rayleigh alpha, beta."""
    X: np.ndarray
    tets: np.ndarray
    free: np.ndarray
    Dm_inv: np.ndarray
    Ke: np.ndarray
    M: sp.csr_matrix
    alpha: float
    beta: float

    @classmethod
    def build(cls, mesh, material: Material, alpha: float = 0.0, beta: float = 0.0) -> Corotational:
        from skfem import Basis, BilinearForm, ElementTetP1, ElementVector, asm
        from skfem.helpers import dot

        X = mesh.p.T.copy()
        tets = mesh.t
        lam, mu = material.lame
        C = np.zeros((6, 6))
        C[:3, :3] = lam
        C[np.arange(3), np.arange(3)] += 2 * mu
        C[np.arange(3, 6), np.arange(3, 6)] = mu
        ne = tets.shape[1]
        Dm_inv = np.zeros((ne, 3, 3))
        Ke = np.zeros((ne, 12, 12))
        for e in range(ne):
            v = X[tets[:, e]]
            Dm = (v[1:] - v[0]).T
            Dm_inv[e] = np.linalg.inv(Dm)
            vol = abs(np.linalg.det(Dm)) / 6.0
            G = np.vstack([-Dm_inv[e].sum(axis=0), Dm_inv[e]])      # (4, 3) shape function gradients
            B = np.zeros((6, 12))
            for a in range(4):
                gx, gy, gz = G[a]
                B[:, 3 * a:3 * a + 3] = [[gx, 0, 0], [0, gy, 0], [0, 0, gz], [gy, gx, 0], [0, gz, gy], [gz, 0, gx]]
            Ke[e] = vol * B.T @ C @ B
        rho = material.density

        @BilinearForm
        def mass(u, v, w):
            return rho * dot(u, v)

        M = asm(mass, Basis(mesh, ElementVector(ElementTetP1()))).tocsr()
        return cls(X, tets, X[:, 2] > FIXED_TOL, Dm_inv, Ke, M, float(alpha), float(beta))

    def forces(self, x: np.ndarray) -> tuple[np.ndarray, sp.csr_matrix, float]:
        """(f_int (3n,), tangent K(x) sparse, strain energy J) at nodal positions x (n, 3)."""
        n = len(self.X)
        v = x[self.tets.T]                                        # (ne, 4, 3)
        F = np.einsum("eji,ejk->eik", v[:, 1:] - v[:, :1], self.Dm_inv)   # (D_s)^T rows -> F = D_s D_m^-1
        U, _, Vt = np.linalg.svd(F)
        R = U @ Vt
        flip = np.linalg.det(R) < 0
        U[flip, :, -1] *= -1
        R = U @ Vt                                                # (ne, 3, 3)
        X0 = self.X[self.tets.T]                                  # (ne, 4, 3)
        u = np.einsum("eji,eaj->eai", R, v) - X0                 # R^T v_a - X_a, (ne, 4, 3)
        ue = u.reshape(-1, 12)
        Ku = np.einsum("eij,ej->ei", self.Ke, ue)                 # (ne, 12) rest-frame forces
        fe = np.einsum("eij,eaj->eai", R, Ku.reshape(-1, 4, 3)).reshape(-1, 12)
        energy = 0.5 * float(np.einsum("ei,ei->", ue, Ku))
        dof = (3 * self.tets.T[:, :, None] + np.arange(3)).reshape(-1, 12)
        f = np.bincount(dof.ravel(), weights=fe.ravel(), minlength=3 * n)
        Rb = np.zeros((len(R), 12, 12))
        for a in range(4):
            Rb[:, 3 * a:3 * a + 3, 3 * a:3 * a + 3] = R
        Kr = Rb @ self.Ke @ Rb.transpose(0, 2, 1)
        K = sp.csr_matrix((Kr.ravel(), (np.repeat(dof, 12, axis=1).ravel(), np.tile(dof, (1, 12)).ravel())),
                          shape=(3 * n, 3 * n))
        return f, K, energy

    def step(self, x: np.ndarray, v: np.ndarray, T: float, f_ext=None) -> tuple[np.ndarray, np.ndarray, float]:
        """One linearized PMI step: (x+ (n, 3), v+ (3n,), strain energy at x)."""
        fint, K, energy = self.forces(x)
        df = np.repeat(self.free, 3)
        A = (2.0 / T + self.alpha) * self.M + (self.beta + 0.5 * T) * K
        rhs = (2.0 / T) * (self.M @ v) - fint
        if f_ext is not None:
            rhs = rhs + f_ext
        vh = np.zeros(3 * len(self.X))
        vh[df] = spla.spsolve(A[df][:, df].tocsc(), rhs[df])
        return x + T * vh.reshape(-1, 3), 2.0 * vh - v, energy

    def energy(self, x: np.ndarray, v: np.ndarray) -> float:
        return self.forces(x)[2] + 0.5 * float(v @ (self.M @ v))
