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
down.  ``build`` adds no pairs: a world adds them (a drum, a floor) with a few lines -- the
link capsules are shapes 0 .. N-1, the world's own shapes come after them.  ``draped`` is
such a world: the chain falls onto a fixed horizontal drum and drapes over it, every link
against the drum with friction (``Drum``), optionally each link against its neighbour but one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from sim_core.dynamics import couplings
from sim_core.dynamics.couplings import Couplings
from sim_core.shapes import Capsule, Cylinder
from sim_core.types import WORLD, ContactPair, ContactParams, Drive, Material, Model, RigidBody, State

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


@dataclass(frozen=True)
class Drum:
    """A fixed horizontal drum under the chain, its axis along world y (the chain swings in the
    xz plane, so it meets the lateral face only): its top a ``gap`` below the links' underside,
    ``at`` of the chain's length out from the anchor."""
    radius: float = 0.025          # m
    half_length: float = 0.02      # m, along world y
    at: float = 0.5                # fraction of the chain's length N L from the anchor (x of the axis)
    gap: float = 5e-4              # m, the drum's top below the straight chain's underside at the start
    friction: float = 0.3          # mu of the link-drum pairs
    penetration_gain: float = 0.2  # beta of the link-drum pairs
    band: float = 2e-4             # m, the link-drum pairs' detection band


# ball joints: stiff translational springs between the link ends, no rotational spring, so the
# chain bends freely and drapes (with LinkSpec's rotational springs it is a stiff rod)
BALL = LinkSpec(K=(2.0e3,) * 3 + (0.0,) * 3)
# the draped world's chain: ball joints with a light bending damper (N m s/rad).  Undamped, a
# ball-joint chain of 160 links at T = 1 ms gains energy without bound within 0.2 s, drum or
# no drum (measured; the offset-anchor couplings' energy balance holds only to O(T^3) per step,
# ``couplings``); 1e-5 keeps it bounded (measured: 1e-3 of M g N L over 0.4 s, hanging).
DRAPE = LinkSpec(K=(2.0e3,) * 3 + (0.0,) * 3, D=(0.0,) * 3 + (1.0e-5,) * 3)
# zero-length springs between the centres of mass, no rotational spring: e linear in the poses,
# the discrete energy exact (``couplings``) -- the string of ``belt``.  Softer than the links'
# 2e3 N/m: a zero-length spring's tension is K s (s ~ 1 cm the spacing), and at 2e3 N/m the
# 20 N it presses the links onto the drum with sinks them ~3 mm into it (measured: the solver's
# sweeps reach their cap); at 20 N/m, 0.2 N, the links sink 0.3 mm (measured, N = 10)
STRING = LinkSpec(K=(20.0,) * 3 + (0.0,) * 3, anchors="com")

# the drum's axis (the shape's z) along world y: a quarter turn about x
DRUM_R_WS = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


def drum_shape(n: int, spec: LinkSpec, drum: Drum) -> Cylinder:
    """The drum (a world shape) for a chain of `n` links: axis along world y through
    (at N L, 0, -(r + gap + R))."""
    centre = np.array([drum.at * n * spec.length, 0.0, -(spec.radius + drum.gap + drum.radius)])
    return Cylinder(name="drum", R_bs=DRUM_R_WS.copy(), p_bs=centre, radius=drum.radius,
                    half_length=drum.half_length)


def draped(n: int, spec: LinkSpec = DRAPE, drum: Drum = Drum(), dt: float = 1e-3,
           self_contact: bool = False, contact: ContactParams | None = None) -> tuple[Model, State]:
    """The chain of `n` links (``build``: anchored at the origin, straight along +x, at rest)
    over a fixed drum (``Drum``, shape n): pairs 0 .. n-1 join link i to the drum with the
    drum's material (mu 0.3); with `self_contact`, pairs n .. 2n-3 join link i to link i + 2
    (the neighbour but one: adjacent links overlap at their joint by construction) with the
    world's default material.  The chain falls onto the drum and drapes over it: the part
    beyond the drum swings down, the part before it sags between the anchor and the drum."""
    mat = Material(drum.friction, drum.penetration_gain, drum.band)
    pairs = [ContactPair(i, n, material=mat) for i in range(n)]
    if self_contact:
        pairs += [ContactPair(i, i + 2) for i in range(n - 2)]
    return build(n, spec, dt, contact, shapes=(drum_shape(n, spec, drum),), pairs=tuple(pairs))


def belt(n: int, spec: LinkSpec = STRING, drum: Drum = Drum(), span: float = 0.045, dt: float = 1e-3,
         contact: ContactParams | None = None) -> tuple[Model, State]:
    """A string of `n` links laid over the drum like a belt over a pulley: both ends anchored to
    the world at (-span, 0, 0) and (+span, 0, 0), the drum's axis through the origin (``Drum``'s
    radius R, friction; its ``at`` and ``gap`` unused).  The links' centres of mass lie evenly
    along the tight path -- the tangent from each anchor to the circle of radius R + r about the
    axis, and the arc over the top between them -- at rest, each link's x axis along the path;
    pairs 0 .. n-1 join link i to the drum (mu 0.3).  With ``STRING`` (zero-length springs between
    the centres of mass, n + 1 of them with the two anchors) the tension is K s (s the spacing) and
    the discrete energy is exact (``couplings``): what the contacts do is all that changes it."""
    if spec.anchors != "com":
        raise ValueError(f"chain.belt: the string's springs join the centres of mass (anchors = 'com'), "
                         f"got anchors = {spec.anchors!r}")
    rho = drum.radius + spec.radius
    if not span > rho:
        raise ValueError(f"chain.belt: span {span} m must exceed the drum's radius + the link's, {rho} m")
    model, _ = build(n, spec, dt, contact, shapes=(Cylinder(name="drum", R_bs=DRUM_R_WS.copy(), radius=drum.radius,
                                                            half_length=drum.half_length),))
    alpha = math.acos(rho / span)              # the tangent points at angles alpha, pi - alpha (xz plane)
    tangent = math.sqrt(span * span - rho * rho)
    arc = rho * (math.pi - 2.0 * alpha)
    s_i = (np.arange(n) + 1.0) * (2.0 * tangent + arc) / (n + 1)    # each COM's arclength from the left anchor
    p, R = np.zeros((n, 3)), np.zeros((n, 3, 3))
    for i, si in enumerate(s_i):
        if si <= tangent:                      # the left tangent, rising to the right
            x = np.array([-span, 0.0]) + si * np.array([math.sin(alpha), math.cos(alpha)])
            u = np.array([math.sin(alpha), math.cos(alpha)])
        elif si <= tangent + arc:              # over the top, clockwise seen from +y
            phi = math.pi - alpha - (si - tangent) / rho
            x, u = rho * np.array([math.cos(phi), math.sin(phi)]), np.array([math.sin(phi), -math.cos(phi)])
        else:                                  # the right tangent, falling to the right
            x = np.array([span, 0.0]) + (2.0 * tangent + arc - si) * np.array([-math.sin(alpha), math.cos(alpha)])
            u = np.array([math.sin(alpha), -math.cos(alpha)])
        p[i] = (x[0], 0.0, x[1])
        ex, ey = np.array([u[0], 0.0, u[1]]), np.array([0.0, 1.0, 0.0])
        R[i] = np.column_stack([ex, ey, np.cross(ex, ey)])
    cp = model.couplings
    eye = np.eye(3)[None]
    end = Couplings(np.array([WORLD], np.int64), np.array([n - 1], np.int64), np.array([[span, 0.0, 0.0]]), eye,
                    np.zeros((1, 3)), eye.copy(), np.array([spec.K], float), np.array([spec.D], float))
    r_a0 = cp.r_a.copy()
    r_a0[0] = (-span, 0.0, 0.0)
    joined = Couplings(*(np.concatenate([getattr(cp, f), getattr(end, f)]) for f in
                         ("a", "b")), np.concatenate([r_a0, end.r_a]), np.concatenate([cp.R_a, end.R_a]),
                       np.concatenate([cp.r_b, end.r_b]), np.concatenate([cp.R_b, end.R_b]),
                       np.concatenate([cp.K, end.K]), np.concatenate([cp.D, end.D]))
    mat = Material(drum.friction, drum.penetration_gain, drum.band)
    model = replace(model, couplings=joined, pairs=tuple(ContactPair(i, n, material=mat) for i in range(n)))
    return model, State(0.0, p, R, np.zeros((n, 6)))


def energy(model: Model, state: State) -> float:
    """Kinetic + coupling + gravity energy (J); gravity's zero at z = 0."""
    E = 0.0
    for i, body in enumerate(model.bodies):
        v, w = state.V[i, :3], state.V[i, 3:]
        E += 0.5 * body.mass * float(v @ v) + 0.5 * float(w @ body.inertia_b @ w)
        E -= body.mass * float(model.gravity @ state.p_w[i])
    return E + couplings.energy(model.couplings, state.p_w, state.R_wb)
