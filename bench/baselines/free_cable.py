"""The common test case of issue 26 deliverable 6: seed 002's cable, clamped horizontally at one
end, released from straight at rest under gravity -- and the reference for its static sag.

    python -m bench.baselines.free_cable          # prints the reference tip and its checks

The cable (seed 002 Sec. V; the density is not in the seed, 1250 kg/m^3 is a PVC-jacketed cable):
radius 2 mm, length 0.4 m, E = 4.462 MPa, nu = 0.5012 (a rod uses only G = E / 2(1 + nu)),
g = 9.81 along -y.  The clamp holds the end s = 0 at the origin with the tangent along +x.

Reference (`elastica`): the planar heavy elastica -- a Reissner (extensible, shearable) rod in
the x-y plane, material coordinate s in [0, L] of the straight cable, centreline r(s) = (x, y),
tangent angle theta(s).  Balance of a piece [s, L] under its weight q (L - s), q = rho A g,
gives the internal force (the pull of [s, L] on [0, s]) in closed form,
    n(s) = (0, -q (L - s)),
and the moment balance m' + r' x n = 0 with the constitutive laws
    m = EI theta',   r' = (1 + eps) t + gam b,   t = (cos th, sin th),  b = (-sin th, cos th),
    eps = n.t / EA,  gam = n.b / (kappa_s GA)
leaves the two-point problem
    x' = (1 + eps) cos th - gam sin th,   y' = (1 + eps) sin th + gam cos th,
    th' = m / EI,                         m' = -(x' n_y - y' n_x) = q (L - s) x',
    x(0) = y(0) = th(0) = 0,  m(L) = 0,
solved by scipy's solve_bvp (continuation in g from a tenth of it, tolerance BVP_TOL).  Small
deflection: th ~ y', EI y'' = -q (L - s)^2 / 2 and gam = -q (L - s) / GA add up to the tip
deflection w = q L^4 / (8 EI) + q L^2 / (2 kappa_s GA) (Euler-Bernoulli plus Timoshenko's shear
term) -- the closed form the tests check.  kappa_s = 1 here, as seed 002's K_1 = GA / L (no shear
correction); PyElastica uses 27/28 (2.4e-6 m in the tip here, printed by main).

Does extensibility/shear matter at this stiffness?  q L^3 / EI = 176 (a floppy cable: it bends
over in the first ~(EI/q)^(1/3) = 7 cm and hangs), EA = 56 N against a largest tension
q L = 0.062 N (strain 1.1e-3), GA = 18.7 N: `python -m bench.baselines.free_cable` prints the
tip with and without them: they move the tip by 0.26 mm of its 0.382 m drop (the shape by at
most 0.26 mm) -- small, but of the order of a 160-link engine's discretisation error, so the
reference keeps them.  The shear factor 27/28 instead of 1 moves the tip by 2.4e-6 m.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

GRAVITY = 9.81            # m/s^2, along -y
BVP_TOL = 1e-10           # solve_bvp's residual tolerance: the reference's tip to ~1e-10 m


@dataclass(frozen=True)
class Cable:
    """Seed 002's cable (the issue's values; density 1250 kg/m^3 the named default)."""
    radius: float = 2e-3        # m
    length: float = 0.4         # m, whole cable
    E: float = 4.462e6          # Pa, Young's modulus (seed 002 Sec. V)
    nu: float = 0.5012          # Poisson's ratio as identified by the seed; only G uses it
    density: float = 1250.0     # kg/m^3 (not in the seed: a PVC-jacketed cable)
    gravity: float = GRAVITY    # m/s^2 along -y
    kappa_s: float = 1.0        # shear correction of GA (seed 002's K_1 has none)

    @property
    def G(self) -> float:       # Pa, shear modulus G = E / 2(1 + nu)
        return self.E / (2.0 * (1.0 + self.nu))

    @property
    def A(self) -> float:       # m^2, cross-section pi r^2
        return math.pi * self.radius ** 2

    @property
    def I(self) -> float:       # m^4, second moment pi r^4 / 4 (both bending axes)  # noqa: E743
        return 0.25 * math.pi * self.radius ** 4

    @property
    def J(self) -> float:       # m^4, polar moment pi r^4 / 2
        return 0.5 * math.pi * self.radius ** 4

    @property
    def q(self) -> float:       # N/m, weight per unit length rho A g
        return self.density * self.A * self.gravity

    @property
    def mass(self) -> float:    # kg, whole cable
        return self.density * self.A * self.length


SEED_CABLE = Cable()


def small_deflection_tip(c: Cable, shear: bool = True) -> float:
    """Tip deflection (m, downward positive) of the linear cantilever under its own weight:
    q L^4 / 8 EI, plus Timoshenko's shear term q L^2 / (2 kappa_s G A) when `shear`."""
    w = c.q * c.length ** 4 / (8.0 * c.E * c.I)
    if shear:
        w += c.q * c.length ** 2 / (2.0 * c.kappa_s * c.G * c.A)
    return w


@dataclass
class Elastica:
    """The reference solution: `r(s)` -> (2, len(s)) centreline (m) at material coordinates s
    (m, of the straight cable), `theta(s)` (rad); `tip` = r(L) (m); `tip_deflection` = -y(L)."""
    sol: object
    cable: Cable

    def r(self, s) -> np.ndarray:
        return self.sol.sol(np.asarray(s, dtype=float))[:2]

    def theta(self, s) -> np.ndarray:
        return self.sol.sol(np.asarray(s, dtype=float))[2]

    @property
    def tip(self) -> np.ndarray:
        return self.r(self.cable.length)

    @property
    def tip_deflection(self) -> float:
        return float(-self.tip[1])


def _rhs_factory(c: Cable, g: float, extensible: bool):
    q, L, EI = c.density * c.A * g, c.length, c.E * c.I
    EA, GA = c.E * c.A, c.kappa_s * c.G * c.A

    def rhs(s, Y):
        x, y, th, m = Y
        ny = -q * (L - s)                       # n = (0, ny): the weight of [s, L]
        ct, st = np.cos(th), np.sin(th)
        if extensible:
            eps, gam = ny * st / EA, ny * ct / GA   # n.t / EA, n.b / GA
        else:
            eps, gam = 0.0 * s, 0.0 * s
        xp = (1.0 + eps) * ct - gam * st
        yp = (1.0 + eps) * st + gam * ct
        return np.vstack((xp, yp, m / EI, -xp * ny))

    return rhs


def _bc(Ya, Yb):
    return np.array([Ya[0], Ya[1], Ya[2], Yb[3]])


@functools.lru_cache(maxsize=16)
def elastica(c: Cable = SEED_CABLE, extensible: bool = True, tol: float = BVP_TOL,
             steps: int = 12) -> Elastica:
    """Solve the heavy elastica (see the module docstring) by solve_bvp with continuation in g
    over `steps` geometric steps from g / 1000; raises RuntimeError if a step fails."""
    from scipy.integrate import solve_bvp
    s = np.linspace(0.0, c.length, 401)
    Y = np.zeros((4, s.size))
    Y[0] = s
    sol = None
    for g in np.geomspace(c.gravity * 1e-3, c.gravity, steps):
        sol = solve_bvp(_rhs_factory(c, g, extensible), _bc, s, Y, tol=tol, max_nodes=200000)
        if sol.status != 0:
            raise RuntimeError(f"elastica: solve_bvp failed at g = {g:.4g}: {sol.message}")
        s, Y = sol.x, sol.y
    return Elastica(sol, c)


def shape_error(ref: Elastica, s: np.ndarray, xy: np.ndarray) -> float:
    """Largest distance (m) between an engine's centreline points xy (2, k) at material
    coordinates s (k,) and the reference's points at the same s (material-point distance,
    stricter than the distance between the curves)."""
    return float(np.max(np.linalg.norm(xy - ref.r(s), axis=0)))


def main() -> None:
    c = SEED_CABLE
    print(f"q L^3/EI = {c.q * c.length ** 3 / (c.E * c.I):.1f}, EA = {c.E * c.A:.2f} N, "
          f"GA = {c.G * c.A:.2f} N, qL = {c.q * c.length:.4f} N")
    full, inext = elastica(c), elastica(c, extensible=False)
    k2728 = elastica(Cable(kappa_s=27.0 / 28.0))
    print(f"tip (extensible, shearable): x = {full.tip[0]:.6f} m, deflection = {full.tip_deflection:.6f} m")
    print(f"tip (inextensible):          x = {inext.tip[0]:.6f} m, deflection = {inext.tip_deflection:.6f} m")
    print(f"shape distance inextensible vs full: "
          f"{shape_error(full, full.sol.x, inext.r(full.sol.x)):.2e} m")
    print(f"tip change with kappa_s = 27/28: {abs(k2728.tip_deflection - full.tip_deflection):.2e} m")
    print(f"small-deflection formula (would-be): {small_deflection_tip(c):.4f} m (invalid here)")


if __name__ == "__main__":
    main()
