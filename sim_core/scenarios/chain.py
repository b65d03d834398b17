"""A chain of N rigid links joined by PMI spring-dampers (``dynamics.couplings``), hanging from
a world anchor under gravity: the building block of seed 002's cable, and the test world of
the solve on blocks (one coupled island of 6 N coordinates, ``step.solve``).

Links are capsule-like rods along their body x axis: length L between the cap centres, radius
r, uniform density; shape i is link i's capsule (``shapes.Capsule`` on body i, its axis along
the body's x).  Coupling k joins link k-1's +x cap centre to link k's -x cap centre
(``anchors = "ends"``: ball joints, with bending springs as the rotational rows of K), the
first one to the world anchor at the origin; ``anchors = "com"`` joins the centres of mass
instead (zero-length translational springs).  Without damping both keep the discrete energy
to rounding (``couplings``: the turned maps and the turns' Newton solve) -- where the step
resolves the links' turns: a ball-joint chain (no bending springs) at T = 10 ms turns its
links ~1 rad a step, the Newton passes stop converging and its energy grows; at 1 ms it is
exact (the chain tests).  The chain starts straight along world +x, at rest, so it swings
down.  No pairs: a world adds them (a drum, a floor) with a few lines -- the link capsules
are shapes 0 .. N-1, the world's own shapes come after them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim_core.dynamics import couplings
from sim_core.dynamics.couplings import Couplings
from sim_core.shapes import Capsule
from sim_core.types import WORLD, ContactParams, Drive, Model, RigidBody, State

GRAVITY = np.array([0.0, 0.0, -9.81])     # m/s^2, world


@dataclass(frozen=True)
class LinkSpec:
    length: float = 0.010          # m, between the cap centres
    radius: float = 0.001          # m
    density: float = 7800.0        # kg/m^3 (steel)
    K: tuple = (2.0e3, 2.0e3, 2.0e3, 0.05, 0.05, 0.05)   # [N/m x3, N m/rad x3]: stiff (f = sqrt(K/m)/2pi ~ 0.4 kHz)
    D: tuple = (0.0,) * 6          # [N s/m x3, N m s/rad x3]
    anchors: str = "ends"          # "ends" | "com"


def default_contact() -> ContactParams:
    """The world's default material for a chain (a pair may later bring its own)."""
    return ContactParams(friction=0.3, clusters=12, band=2e-4, broadphase_margin=2e-3, normal_scale=0.01,
                         penetration_gain=0.2, pgs_iterations=50, pgs_tolerance=1e-10, solver="sor",
                         clustering="none")


def link_body(spec: LinkSpec, name: str) -> RigidBody:
    """A capsule link (cylinder + two half spheres) along body x, its COM at the origin."""
    L, r, rho = spec.length, spec.radius, spec.density
    m_c, m_s = rho * np.pi * r * r * L, rho * 4.0 / 3.0 * np.pi * r ** 3
    ixx = m_c * r * r / 2 + m_s * 2 * r * r / 5
    # the cylinder about a diameter, and the two half spheres at +-L/2 (parallel axis, their
    # own COM 3r/8 beyond the cap centre; 83/320 m r^2 about the centre of the half sphere's COM)
    iyy = m_c * (3 * r * r + L * L) / 12 + m_s * (83.0 / 320.0 * r * r + (L / 2 + 3 * r / 8) ** 2)
    return RigidBody(name, m_c + m_s, np.diag([ixx, iyy, iyy]), np.zeros(3))


# a link's capsule axis (the shape's z) along the body's x: a quarter turn about y
CAPSULE_R_BS = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])


def link_shapes(spec: LinkSpec, n: int) -> tuple:
    """Each link's capsule (shape i on body i), for the pairs a world adds."""
    return tuple(Capsule(name=f"link{i}", body=i, R_bs=CAPSULE_R_BS.copy(), radius=spec.radius,
                         half_length=0.5 * spec.length) for i in range(n))


def build(n: int, spec: LinkSpec = LinkSpec(), dt: float = 0.01, contact: ContactParams | None = None,
          shapes: tuple = (), pairs: tuple = ()) -> tuple[Model, State]:
    """The chain of `n` links and its start state (straight along +x from the world anchor)."""
    L = spec.length
    bodies = tuple(link_body(spec, f"link{i}") for i in range(n))
    a = np.arange(-1, n - 1, dtype=np.int64)
    a[0] = WORLD
    b = np.arange(n, dtype=np.int64)
    half = np.array([L / 2, 0.0, 0.0]) if spec.anchors == "ends" else np.zeros(3)
    r_a = np.tile(half, (n, 1))
    r_a[0] = 0.0                   # the world anchor point: the origin
    r_b = np.tile(-half, (n, 1))
    eye = np.tile(np.eye(3), (n, 1, 1))
    cp = Couplings(a, b, r_a, eye, r_b, eye.copy(), np.tile(np.array(spec.K, float), (n, 1)),
                   np.tile(np.array(spec.D, float), (n, 1)))
    model = Model(bodies=bodies, shapes=link_shapes(spec, n) + tuple(shapes), pairs=tuple(pairs),
                  contact=default_contact() if contact is None else contact,
                  drive=Drive(np.zeros((n, 6)), np.zeros((n, 6))), dt=dt, couplings=cp, gravity=GRAVITY.copy())
    p = np.zeros((n, 3))
    p[:, 0] = (np.arange(n) + 0.5) * L
    return model, State(0.0, p, np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 6)))


def energy(model: Model, state: State) -> float:
    """Kinetic + coupling + gravity energy (J); gravity's zero at z = 0."""
    E = 0.0
    for i, body in enumerate(model.bodies):
        v, w = state.V[i, :3], state.V[i, 3:]
        E += 0.5 * body.mass * float(v @ v) + 0.5 * float(w @ body.inertia_b @ w)
        E -= body.mass * float(model.gravity @ state.p_w[i])
    return E + couplings.energy(model.couplings, state.p_w, state.R_wb)
