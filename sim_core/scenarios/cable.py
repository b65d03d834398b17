"""Seed 002's long flexible cable: n rigid cylindrical links joined by Cosserat-rod potentials
in PMI, as couplings of the core (``dynamics.couplings``, FRAME_ANCHOR: the gains diagonal in
link j's frame).  docs/cable.md "The model" derives the strains and gains.

Links lie along their body x (as ``chain``): link j's COM at ((j + 1/2) L, 0, 0), L = length / n,
its capsule shape (``chain.link_shapes``) for contact; coupling j (j = 0 .. n-2) joins link j's
+x end (a = link j) to link j+1's -x end (b = link j+1), the anchor frames the links' own.  Its
error, in link j's frame (``couplings``, FRAME_ANCHOR):
    e_1 = R_j^T (x_j+ - x_j+1-)            extension (x) and shear (y, z), m
    e_2 = log(R_j+1^T R_j)                 torsion (x) and bending (y, z), rad
and psi = 1/2 e_1^T K_1 e_1 + 1/2 e_2^T K_2 e_2 with (our link axis is x; the seed's is d_3)
    K_1 = diag(E A, k G A, k G A) / L,     K_2 = diag(G J, E I, E I) / L,
A = pi r^2, I = pi r^4 / 4, J = 2 I, G = E / 2(1 + nu), k Timoshenko's shear factor of a solid
circle 6(1 + nu) / (7 + 6 nu) (``CableSpec.shear_factor``).  Where this differs from the print
(seed 002 Sec. III-A): e_2 there is Vec(q*(R_j) q(R_j+1)) = sin(theta/2) axis ~ theta/2, so
K_2 = EI/L on it stores 1/2 EI/L (theta/2)^2, a quarter of the rod's 1/2 EI kappa^2 L
(kappa = theta / L): the log map stores exactly the continuum's.  With ``anchor = "clamp"``
coupling n-1 holds link 0's -x end at the world origin, axes the world's, with 2 K_1, 2 K_2: it
stands for the rod between the wall and link 0's centre, half a link (an interior joint's
segment runs centre to centre, a whole link) -- which makes the cantilever's discrete
deflection the trapezoid rule of the rod's (error 1/(2 n^2)) instead of an end-point rule
(3/(2n): 3.8 % at 40 links).  The links' bodies are the cylinders (mass rho A L, a solid
cylinder's inertia): the capsules' caps overlap their neighbours' and would count twice.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim_core.dynamics.couplings import FRAME_ANCHOR, Couplings
from sim_core.scenarios import chain
from sim_core.types import WORLD, ContactParams, Drive, Model, RigidBody, State

ANCHORS = ("clamp", "free")


class CableError(ValueError):
    """A bad cable parameter (one line naming it)."""


@dataclass(frozen=True)
class CableSpec:
    """The cable's material and geometry (defaults: seed 002's identified cable)."""
    radius: float = 0.002          # m
    length: float = 0.4            # m, the whole cable
    density: float = 1250.0        # kg/m^3 (the seed gives none: a PVC-jacketed cable)
    E: float = 4.462e6             # Pa, Young's modulus (seed 002 Sec. V-A)
    nu: float = 0.5012             # Poisson's ratio (seed 002: just above 1/2; a rod uses only G)
    damping: float = 0.0           # s, stiffness-proportional: D = damping * K (each coupling)
    shear_factor: float | None = None   # k of K_1's shear rows; None: Timoshenko's 6(1+nu)/(7+6nu)

    def check(self, where: str = "CableSpec") -> None:
        """One-line CableError naming the first bad field."""
        for key, v, ok, need in (("radius", self.radius, self.radius > 0, "> 0"),
                                 ("length", self.length, self.length > 0, "> 0"),
                                 ("density", self.density, self.density > 0, "> 0"),
                                 ("E", self.E, self.E > 0, "> 0"),
                                 ("nu", self.nu, self.nu > -1, "> -1 (G = E / 2(1 + nu) > 0)"),
                                 ("damping", self.damping, self.damping >= 0, ">= 0")):
            if not (math.isfinite(v) and ok):
                raise CableError(f"{where}.{key}: must be {need}, got {v!r}")
        if self.shear_factor is not None and not self.shear_factor > 0:
            raise CableError(f"{where}.shear_factor: must be > 0, got {self.shear_factor!r}")

    @property
    def G(self) -> float:
        """Pa, shear modulus E / 2(1 + nu)."""
        return self.E / (2.0 * (1.0 + self.nu))

    @property
    def k(self) -> float:
        """Shear correction factor (Timoshenko's for a solid circle unless set)."""
        if self.shear_factor is not None:
            return self.shear_factor
        return 6.0 * (1.0 + self.nu) / (7.0 + 6.0 * self.nu)

    def sections(self) -> tuple[float, float, float]:
        """(A m^2, I m^4, J m^4) of the solid circular section."""
        r = self.radius
        return math.pi * r * r, math.pi * r ** 4 / 4.0, math.pi * r ** 4 / 2.0

    def gains(self, n_links: int) -> np.ndarray:
        """(6,) one joint's K in the link frame: [EA, kGA, kGA, GJ, EI, EI] / L, L = length / n."""
        A, Ib, J = self.sections()
        E, G, L = self.E, self.G, self.length / n_links
        return np.array([E * A, self.k * G * A, self.k * G * A, G * J, E * Ib, E * Ib]) / L


def link_body(spec: CableSpec, L: float, name: str) -> RigidBody:
    """A cylinder of length L along body x, its COM at the origin."""
    r = spec.radius
    m = spec.density * math.pi * r * r * L
    return RigidBody(name, m, np.diag([m * r * r / 2, m * (3 * r * r + L * L) / 12, m * (3 * r * r + L * L) / 12]),
                     np.zeros(3))


def check_links(n_links) -> int:
    if isinstance(n_links, bool) or not isinstance(n_links, (int, np.integer)) or n_links < 1:
        raise CableError(f"n_links: must be an integer >= 1, got {n_links!r}")
    return int(n_links)


def build(n_links: int, spec: CableSpec = CableSpec(), dt: float = 0.01, contact: ContactParams | None = None,
          shapes: tuple = (), pairs: tuple = (), anchor: str = "clamp",
          gravity: np.ndarray | None = None) -> tuple[Model, State]:
    """The cable of `n_links` links straight along +x from the origin, at rest, and its couplings
    (module docstring): n-1 joints, then (``anchor = "clamp"``) the clamp of link 0 to the world.
    Shapes 0 .. n-1 are the links' capsules, `shapes` follow; gravity defaults to chain's."""
    n = check_links(n_links)
    spec.check()
    if anchor not in ANCHORS:
        raise CableError(f"anchor: expected one of {', '.join(ANCHORS)}, got {anchor!r}")
    L = spec.length / n
    bodies = tuple(link_body(spec, L, f"link{i}") for i in range(n))
    K = spec.gains(n)
    half = np.array([L / 2, 0.0, 0.0])
    a = list(range(n - 1))
    b = list(range(1, n))
    r_a, r_b = [half] * (n - 1), [-half] * (n - 1)
    Ks = [K] * (n - 1)
    if anchor == "clamp":
        a.append(WORLD)
        b.append(0)
        r_a.append(np.zeros(3))
        r_b.append(-half)
        Ks.append(2.0 * K)
    c = len(a)
    Karr = np.array(Ks, float).reshape(c, 6)
    eye = np.tile(np.eye(3), (c, 1, 1))
    cp = Couplings(np.array(a, np.int64), np.array(b, np.int64), np.array(r_a, float).reshape(c, 3), eye,
                   np.array(r_b, float).reshape(c, 3), eye.copy(), Karr, spec.damping * Karr,
                   np.full(c, FRAME_ANCHOR, np.int64))
    link = chain.LinkSpec(length=L, radius=spec.radius, density=spec.density)
    model = Model(bodies=bodies, shapes=chain.link_shapes(link, n) + tuple(shapes), pairs=tuple(pairs),
                  contact=chain.default_contact() if contact is None else contact,
                  drive=Drive(np.zeros((n, 6)), np.zeros((n, 6))), dt=dt, couplings=cp,
                  gravity=chain.GRAVITY.copy() if gravity is None else np.asarray(gravity, float))
    p = np.zeros((n, 3))
    p[:, 0] = (np.arange(n) + 0.5) * L
    return model, State(0.0, p, np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 6)))


def from_config(cfg: dict, **kw) -> tuple[Model, State]:
    """``build`` from a validated config's [cable] section (``config.validate``)."""
    c = cfg["cable"]
    spec = CableSpec(radius=c["radius"], length=c["length"], density=c["density"], E=c["E"], nu=c["nu"])
    return build(c["links"], spec, **kw)
