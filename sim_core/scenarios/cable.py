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

Twist inertia (``CableSpec.twist_inertia``, a factor on m r^2 / 2).  A link's twist about its
own axis has the least inertia of all its motions: for the seed's cable at 40 links, G J / L =
3.7e-3 N m/rad against m r^2 / 2 = 3.1e-10 kg m^2, the alternating twist of a link between
its neighbours at omega = sqrt(4 G J / L / I) = 6.9e3 rad/s, omega T = 69 at T = 10 ms.  The
midpoint rule carries such a mode as a rate that flips sign every step with a midpoint rate
near zero, which no damper on the midpoint velocity sees (docs/cable.md, the winding); it
survives for seconds and, on a wound coil, grew.  Scaling the twist inertia to
``resolved_twist_inertia`` (omega T = 1) makes the step resolve it and the joints' damping
take it out; PMI's energy balance holds for the scaled body as for any other (its kinetic
energy counts the scaled inertia), the statics are unchanged (no inertia in them), and what
changes is how fast a twist evens out along the cable -- within a few steps instead of a
fraction of one, which nothing at a 10 ms step resolves anyway.  Bending and stretch are
left alone: there the links' translations carry the inertia that matters.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

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
    twist_inertia: float = 1.0     # factor on the links' inertia about their own axis (module docstring)

    def check(self, where: str = "CableSpec") -> None:
        """One-line CableError naming the first bad field."""
        for key, v, ok, need in (("radius", self.radius, self.radius > 0, "> 0"),
                                 ("length", self.length, self.length > 0, "> 0"),
                                 ("density", self.density, self.density > 0, "> 0"),
                                 ("E", self.E, self.E > 0, "> 0"),
                                 ("nu", self.nu, self.nu > -1, "> -1 (G = E / 2(1 + nu) > 0)"),
                                 ("damping", self.damping, self.damping >= 0, ">= 0"),
                                 ("twist_inertia", self.twist_inertia, self.twist_inertia > 0, "> 0")):
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
    Ix = spec.twist_inertia * (m * r * r / 2)
    return RigidBody(name, m, np.diag([Ix, m * (3 * r * r + L * L) / 12, m * (3 * r * r + L * L) / 12]),
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
                  gravity=chain.GRAVITY.copy() if gravity is None else np.asarray(gravity, float),
                  rigid_kernel="structured")
    p = np.zeros((n, 3))
    p[:, 0] = (np.arange(n) + 0.5) * L
    return model, State(0.0, p, np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 6)))


def resolved_twist_inertia(spec: CableSpec, n_links: int, dt: float, omega_t: float = 1.0) -> float:
    """The ``CableSpec.twist_inertia`` factor that puts a link's alternating twist between its
    neighbours, omega = sqrt(4 G J / L / I_x), at omega dt = omega_t (never below 1): I_x =
    4 (G J / L) dt^2 / omega_t^2 against the cylinder's m r^2 / 2."""
    cylinder = link_body(replace(spec, twist_inertia=1.0), spec.length / check_links(n_links), "link")
    need = 4.0 * spec.gains(n_links)[3] * dt * dt / (omega_t * omega_t)
    return max(1.0, need / cylinder.inertia_b[0, 0])


def spec_from_config(cfg: dict) -> CableSpec:
    """The CableSpec of a validated config's [cable] section; twist_inertia 0 is
    ``resolved_twist_inertia`` at its links and [scenario] dt."""
    c = cfg["cable"]
    spec = CableSpec(radius=c["radius"], length=c["length"], density=c["density"], E=c["E"], nu=c["nu"],
                     damping=c["damping"])
    twist = c["twist_inertia"] or resolved_twist_inertia(spec, c["links"], cfg["scenario"]["dt"])
    return replace(spec, twist_inertia=twist)


def from_config(cfg: dict, **kw) -> tuple[Model, State]:
    """``build`` from a validated config's [cable] section (``config.validate``)."""
    return build(cfg["cable"]["links"], spec_from_config(cfg), **kw)


# ---- statics against rod theory -----------------------------------------------------------------

# The static solve stops when a Newton pass moves no link by more than this, relative to the
# first pass (m, and rad times the link length); rounding of the stiff axial rows leaves ~1e-13.
STATIC_TOL = 1e-10
STATIC_MAX_ITER = 30


def equilibrium(model: Model, state: State, force_w, torque_w) -> tuple[State, int]:
    """The clamped cable's static equilibrium under a force (N, world) at the tip (link n-1's
    +x end) and a torque (N m, world) on the last link (``statics``).  Returns (state, passes)."""
    n = model.n_bodies
    L = float(np.abs(model.couplings.r_b[0, 0])) * 2.0
    r_tip = np.array([L / 2, 0.0, 0.0])
    force_w, torque_w = np.asarray(force_w, float), np.asarray(torque_w, float)

    def load(p, R):
        f = np.zeros((n, 6))
        f[-1, :3] = force_w
        f[-1, 3:] = np.cross(r_tip, R[-1].T @ force_w) + R[-1].T @ torque_w
        return f
    return statics(model, state, load)


def statics(model: Model, state: State, load=None, fixed: np.ndarray | None = None) -> tuple[State, int]:
    """The cable's static equilibrium: Newton's method on the poses of the bodies not `fixed`
    ((n,) bool; they keep theirs), the couplings' own generalized forces (``couplings.apply`` at
    rest, theta = 0) plus ``load(p, R)`` ((n,6) [N world; N m body], e.g. gravity or a tip
    force) as the residual, and their G^T K G (T = 4 makes H = K T / 4 = K) as the
    (Gauss-Newton) stiffness; a pass moves each link by T v and turns it by exp(S(w)) (body
    axes).  Returns (state at rest, passes)."""
    from sim_core.dynamics import couplings
    from sim_core.math.so3 import exp_so3
    cp, n = model.couplings, model.n_bodies
    L = float(np.abs(cp.r_b[0, 0])) * 2.0
    fixed = np.zeros(n, bool) if fixed is None else np.asarray(fixed, bool)
    tied = fixed[np.maximum(cp.a, 0)] & (cp.a >= 0) | fixed[cp.b]     # couplings with a fixed end
    p, R = state.p_w.copy(), state.R_wb.copy()
    first = None
    for it in range(STATIC_MAX_ITER):
        A, f = np.zeros((n, 6, 6)), np.zeros((n, 6))
        Aab, _ = couplings.apply(cp, p, R, np.zeros((n, 6)), 4.0, A, f, np.zeros((n, 3)))
        if load is not None:
            f += load(p, R)
        A[fixed], f[fixed] = np.eye(6), 0.0                             # held: no move
        Aab[tied] = 0.0
        x = couplings.block_solve(cp, A, Aab, Aab.transpose(0, 2, 1), f)
        p = p + x[:, :3]
        R = np.array([R[i] @ exp_so3(x[i, 3:]) for i in range(n)])
        moved = max(np.abs(x[:, :3]).max(), np.abs(x[:, 3:]).max() * L)
        first = moved if first is None else first
        if moved <= STATIC_TOL * first:
            return State(state.t, p, R, np.zeros((n, 6))), it + 1
    return State(state.t, p, R, np.zeros((n, 6))), STATIC_MAX_ITER


# the loads of ``closed_forms``: small, so the rod's answers are linear (deflection ~1e-3 of the
# length; the geometric nonlinearity is of its square, 1e-6)
AXIAL_FORCE = 1e-3        # N (extension 2.5e-6 of the length)
TIP_TORQUE = 1e-6         # N m (twist 1.5e-3 rad)
TIP_FORCE = 1e-6          # N (tip deflection 3.8e-4 m, 1e-3 of the length)


def closed_forms(n_links: int, spec: CableSpec = CableSpec()) -> dict:
    """The clamped cable's static answers against rod theory, relative errors (signed):
    axial (tip extension vs F L / EA), torsion (last link's twist vs M L / GJ) and the
    tip-loaded cantilever with shear (Timoshenko: F L^3 / 3EI + F L / kGA)."""
    from sim_core.math.so3 import log_so3
    model, st = build(n_links, spec, anchor="clamp", gravity=np.zeros(3))
    A, Ib, J = spec.sections()
    Lt = spec.length
    L = Lt / n_links
    tip = np.array([L / 2, 0.0, 0.0])
    out = {}
    s, _ = equilibrium(model, st, np.array([AXIAL_FORCE, 0.0, 0.0]), np.zeros(3))
    out["axial"] = (s.p_w[-1] + s.R_wb[-1] @ tip)[0] - Lt
    out["axial"] = out["axial"] / (AXIAL_FORCE * Lt / (spec.E * A)) - 1.0
    s, _ = equilibrium(model, st, np.zeros(3), np.array([TIP_TORQUE, 0.0, 0.0]))
    out["torsion"] = log_so3(s.R_wb[-1])[0] / (TIP_TORQUE * Lt / (spec.G * J)) - 1.0
    s, _ = equilibrium(model, st, np.array([0.0, 0.0, -TIP_FORCE]), np.zeros(3))
    exact = TIP_FORCE * Lt ** 3 / (3 * spec.E * Ib) + TIP_FORCE * Lt / (spec.k * spec.G * A)
    out["cantilever"] = -(s.p_w[-1] + s.R_wb[-1] @ tip)[2] / exact - 1.0
    return out


if __name__ == "__main__":          # python -m sim_core.scenarios.cable: docs/cable.md's table
    for n in (40, 80, 160):
        got = closed_forms(n)
        print(f"{n:4d} links: " + ", ".join(f"{k} {v:+.3e}" for k, v in got.items()))
