"""The simulator's data: a constant ``Model`` and a changing ``State`` (the brax / MJX split).

A world holds rigid **bodies** (index 0 .. B-1), **shapes** (typed contact geometry, each on
a body or on the world: ``shapes``), **contact pairs**, each joining two shapes through the
detector of their kinds (``collision.DETECTORS``), each of a contact ``Material`` (its own, or
the world's default from ``[contact]``; ``contact.materials``), **couplings** between bodies
(``dynamics.couplings``) and **systems** with coordinates of their own (``systems.base``: the
Panda holding one body through a grasp coupling).  Everything that changes during a run lives
in ``State`` (poses, twists, each system's sub-state, the solver's warm start); everything in
``Model`` is fixed.  Scenario data (waypoints, part dimensions, figures) lives in
``scenario.Scenario``, not here.

Frames: ``_w`` world, ``_b`` a body's frame (origin at its centre of mass, axes of its mesh),
``_s`` a shape's frame.  Units SI.  Shapes below: B bodies, N a body's nodes, m contacts,
n = 6 B the bodies' velocity coordinates.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:                  # types only: this module imports no stage
    from sim_core.contact.cspace import CSpaceNet
    from sim_core.contact.interaction_networks import INClustering
    from sim_core.dynamics.couplings import Couplings
    from sim_core.shapes import Shape

WORLD = -1      # the body of a world-fixed shape (and the "other body" of its contacts)


class SignedDistance(Protocol):
    """A signed distance in its shape's frame (exact geometry or a network)."""

    def query(self, p: np.ndarray, band: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(d (k,) m, gradient (k,3)) at points p (k,3); normals only where d < band."""
        ...


@dataclass(frozen=True)
class Material:
    """What a contact pair's contacts obey (``contact.materials``): the kernels take friction
    and penetration gain per contact under their equations' symbols (mu, beta)."""
    friction: float           # Coulomb friction coefficient mu, >= 0
    penetration_gain: float   # beta: the fraction of a penetration removed per step, [0, 1]
    band: float               # m, a node is a contact candidate if its signed distance < band
    law: str = "complementarity"   # key of contact.materials.LAWS
    law_params: tuple[tuple[str, float], ...] = ()  # the law's own parameters (name, value), by name
    # N of the generalized friction law ||f_t|| <= mu f_n^N (seed 002 eq. (8), made a law on forces:
    # ``solver_pgs``), mu then in N^(1-N); 1: Coulomb (the kernels' arithmetic unchanged)
    friction_exponent: float = 1.0


@dataclass(frozen=True)
class ContactParams:
    """The [contact] table of a scenario, one field per TOML key (``config.py`` documents
    each): the world's solver settings and its default material (friction, band,
    penetration_gain, law: ``material``), which every pair without its own material uses."""
    friction: float           # Coulomb friction coefficient mu
    clusters: int             # M_c
    band: float               # m, candidate if signed distance < band
    broadphase_margin: float  # m, broad-phase slack
    normal_scale: float       # m, k-means feature weight of normals
    penetration_gain: float   # beta: the fraction of a penetration removed per step, [0, 1]
    pgs_iterations: int
    pgs_tolerance: float      # N
    solver: str = "sor"       # key of contact.SOLVERS: "sor" (seed 000 Algorithm 1) | "pgs" (baseline) | "pgs_subspace"
    sor_relaxation: float = 1.0
    sor_iterations: int = 100
    sor_tolerance: float = 1e-6   # N
    # key of clustering.CLUSTERINGS: "patches" | "none" | "learned" | "kmeans" | "kmeans_centroid"
    clustering: str = "patches"
    fallback_depth: float = 1e-4  # m: the clustering's safety net acts on a step this deep
    speculative: str = "predicted"  # "predicted" | "current": where a gap d > 0 is linearized (detection.predict)
    law: str = "complementarity"    # the default material's contact law (key of contact.materials.LAWS)
    # a coupled island's solver (key of contact.island_solvers.ISLAND_SOLVERS): "direct" (the whole
    # island factorized on its blocks) | "direct_dense" (dense A^-1) | "subsystems" (seed 002 Alg. 1)
    # | "subsystems_regulated" (Alg. 1 with the post-regulation, eq. (16))
    island_solver: str = "direct"
    subsystems: int = 8             # n_s: consecutive-body subsystems of a coupled island (subsystem solvers)
    subsystem_split: str = "links"  # "links" (the seed's even runs) | "balanced" (links + contacts even)
    island_iterations: int = 100    # l_max of the subsystem iteration (seed 002 Sec. V-B)
    island_tolerance: float = 1e-6  # N: stop when no cut coupling's force and no contact force changes more
    regulation_xi: float = 1.0      # N (N m): xi of eq. (16), how far the contacts' first sweep may move a cut force
    regulation_alpha: float = 0.7   # alpha of eq. (16), (0, 1): the allowed change shrinks by it per iteration
    friction_exponent: float = 1.0  # N of the default material's friction law (Material.friction_exponent)
    impact_splits: int = 0          # levels a step may be halved when a contact arrives fast (contact.impacts)
    impact_tolerance: float = 1e-5  # m: a step in which a detected node gains more penetration is halved
    # passes a step may take solving the couplings' turns together with the contacts (``step.turn_passes``;
    # 0: the turns predicted without them, ``couplings.turns``)
    turn_passes: int = 0

    @property
    def material(self) -> Material:
        """The default material: what a pair without its own (``ContactPair.material``) obeys."""
        return Material(self.friction, self.penetration_gain, self.band, self.law,
                        friction_exponent=self.friction_exponent)


@dataclass(frozen=True)
class RigidBody:
    """A moving rigid part: its inertial data (its contact geometry: shapes on it, ``shapes``)."""
    name: str
    mass: float                    # kg
    inertia_b: np.ndarray          # (3,3) kg m^2 about the COM, body axes
    com_part: np.ndarray           # (3,) m, the COM in the part's mesh frame


@dataclass(frozen=True)
class ContactPair:
    """Two shapes (indices in ``Model.shapes``) that may touch: the detector of their kinds
    (``collision.DETECTORS``) finds the contacts, whose normals push shape ``a``'s body (the
    contacts' ``body``) away from shape ``b``'s (``other``).  ``cspace`` and
    ``clustering_net`` are the pair's trained networks when the configuration uses them."""
    a: int                         # index in Model.shapes: the shape whose body the normal pushes
    b: int                         # index in Model.shapes: the other side
    cspace: CSpaceNet | None = None
    clustering_net: INClustering | None = None
    material: Material | None = None   # the pair's contact material; None: the world's default (Model.contact)


@dataclass(frozen=True)
class Drive:
    """Spring-damper drives pulling bodies to their set poses (the arm's stand-in, and the law
    protocols' load frame).  A body held by the arm has no drive."""
    K: np.ndarray                  # (B,6) [N/m x3 (world), N m/rad x3 (body)]
    D: np.ndarray                  # (B,6) [N s/m x3, N m s/rad x3]


@dataclass(frozen=True)
class Model:
    """Everything constant during a run."""
    bodies: tuple[RigidBody, ...]
    shapes: tuple[Shape, ...]      # every shape, on a body or the world (``shapes``)
    pairs: tuple[ContactPair, ...]
    contact: ContactParams
    drive: Drive
    dt: float                      # s, the default step T (``step`` takes any)
    systems: tuple = ()            # systems with coordinates of their own (``systems.base.System``:
                                   # the Panda holding a body), folded into the bodies' blocks
    couplings: Couplings | None = None  # spring-dampers between bodies' anchor frames (``dynamics.couplings``)
    gravity: np.ndarray = field(default_factory=lambda: np.zeros(3))  # (3,) m/s^2, world; zero: the
                                   # seed's (and a space servicer's) setting; the arm ignores it
    hand_body: int = 0             # index in bodies of the part the hand holds in a session: the haptic
                                   # proxy's part (its set pose is the proxy's), the one the arm grasps,
                                   # the view's ghost; set by the scenario builder (scenarios/tasks.py)
    rigid_kernel: str = "general"  # key of systems.rigid.KERNELS: the bodies' blocks' kernel ("general" the
                                   # recorded scenarios' arithmetic; "structured" the cable's, many bodies)

    @property
    def n_bodies(self) -> int:
        return len(self.bodies)


@dataclass(frozen=True)
class BodyPose:
    """One body's kinematic state: what a per-pair stage reads."""
    t: float                       # s
    p_w: np.ndarray                # (3,) m, COM position, world
    R_wb: np.ndarray               # (3,3) body orientation in world
    V: np.ndarray                  # (6,) [v_w m/s (COM velocity, world axes); w_b rad/s (body axes)]


@dataclass(frozen=True)
class Warm:
    """The solver's forces of the step that led to a state (its warm start)."""
    x_w: np.ndarray                # (m,3) m, contact points
    f_w: np.ndarray                # (m,3) N, forces on the bodies, world axes
    body: np.ndarray               # (m,) int64, the body each acted on
    lam_c: float = 0.0             # N s, the C-space constraint's impulse
    node: np.ndarray | None = None  # (m,) int64, each contact's node row (every-node contacts), else None
    budget: np.ndarray | None = None  # (bodies,) J, the energy each body's contacts dissipated and
                                      # have not given back: what a penetration push-out may still spend
    cut: np.ndarray | None = None     # (c,6) [N; N m] per coupling of Model.couplings: the force a subsystem
                                      # solver found in a cut coupling (contact.island_solvers), else zero
    # (J (B,6,6), J_ab (c,6,6), J_ba (c,6,6), its factorization): the couplings' last Newton matrix
    # (``couplings.turns``), which the next step's passes start with; None: formed afresh
    newton: tuple | None = None
    turns: np.ndarray | None = None   # (B,3) rad, body axes: the step's turns (``couplings.turns``), where the
                                      # next step's first fixed-turn solve starts; None: at T w_k
    turn_gap: float = 0.0             # rad: how far the step's solve moved the turns from ``turns`` (the largest
                                      # |T (w_k + w+)/2 - turns|): the contacts' share, what the next step's
                                      # prediction need not beat (``couplings.TURN_GAP_FRACTION``)
    push_need: np.ndarray | None = None  # (bodies,) J: what each body's last refused push-out asked of its
                                         # budget, not offered again below it (``solvers.push_out``)


def _batched(a, tail: tuple) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    return a.reshape((1,) + tail) if a.shape == tail else a


@dataclass(frozen=True)
class State:
    """The world at time t.  One body's arrays may be given unbatched ((3,), (3,3), (6,))."""
    t: float                       # s
    p_w: np.ndarray                # (B,3) m, COM positions, world
    R_wb: np.ndarray               # (B,3,3) body orientations in world
    V: np.ndarray                  # (B,6) [v_w m/s; w_b rad/s] per body
    warm: Warm | None = None
    systems: tuple = ()            # one sub-state per Model.systems entry (the arm's: systems.arm.system.ArmState)

    def __post_init__(self):
        object.__setattr__(self, "p_w", _batched(self.p_w, (3,)))
        object.__setattr__(self, "R_wb", _batched(self.R_wb, (3, 3)))
        object.__setattr__(self, "V", _batched(self.V, (6,)))

    def body(self, i: int) -> BodyPose:
        return BodyPose(self.t, self.p_w[i], self.R_wb[i], self.V[i])


@dataclass(frozen=True)
class Inputs:
    """Per body: the set pose and twist its drive (or the arm holding it) follows, and an
    external wrench.  One body's arrays may be given unbatched."""
    p_set_w: np.ndarray            # (B,3) m
    R_set_w: np.ndarray            # (B,3,3)
    v_set_w: np.ndarray            # (B,3) m/s, world
    w_set_w: np.ndarray            # (B,3) rad/s, world
    f_ext: np.ndarray | None = None  # (B,6) [N world; N m body]; None: zero

    def __post_init__(self):
        object.__setattr__(self, "p_set_w", _batched(self.p_set_w, (3,)))
        object.__setattr__(self, "R_set_w", _batched(self.R_set_w, (3, 3)))
        object.__setattr__(self, "v_set_w", _batched(self.v_set_w, (3,)))
        object.__setattr__(self, "w_set_w", _batched(self.w_set_w, (3,)))
        f = np.zeros((self.p_set_w.shape[0], 6)) if self.f_ext is None else _batched(self.f_ext, (6,))
        object.__setattr__(self, "f_ext", f)


@dataclass(frozen=True)
class Contacts:
    """A contact set in world axes (nodes after detection, or representatives after
    clustering), each joining ``body`` to ``other`` (``WORLD`` for a fixed shape) through the
    contact pair ``pair``."""
    x_w: np.ndarray                # (m,3) m, contact point
    n_w: np.ndarray                # (m,3) unit normal, pushing `body` (out of the other side)
    d: np.ndarray                  # (m,) m, signed distance (negative = penetration)
    idx: np.ndarray | None = None  # (m,) the nodes' rows in their node set (detection sets it), or a detector's keys
    body: np.ndarray | None = None  # (m,) int64, the body pushed; None: body 0
    other: np.ndarray | None = None  # (m,) int64, the other side (WORLD or a body); None: WORLD
    pair: np.ndarray | None = None  # (m,) int64, the contact's pair in Model.pairs (its material); None: pair 0

    @staticmethod
    def empty() -> Contacts:
        return Contacts(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))

    def __len__(self) -> int:
        return int(self.d.shape[0])

    def bodies(self) -> np.ndarray:
        return np.zeros(len(self), np.int64) if self.body is None else self.body

    def others(self) -> np.ndarray:
        return np.full(len(self), WORLD, np.int64) if self.other is None else self.other

    def pairs(self) -> np.ndarray:
        return np.zeros(len(self), np.int64) if self.pair is None else self.pair

    def on(self, body: int, other: int = WORLD, pair: int | None = None) -> Contacts:
        """The same contacts, labelled as joining `body` and `other` (found by `pair`, when given)."""
        m = len(self)
        return Contacts(self.x_w, self.n_w, self.d, self.idx, np.full(m, body, np.int64),
                        np.full(m, other, np.int64), self.pair if pair is None else np.full(m, pair, np.int64))

    def rows(self, sel) -> Contacts:
        """The contacts `sel` (an index array or a boolean mask), every field carried."""
        def cut(a):
            return None if a is None else a[sel]
        return Contacts(self.x_w[sel], self.n_w[sel], self.d[sel], cut(self.idx), cut(self.body),
                        cut(self.other), cut(self.pair))

    @staticmethod
    def concat(sets: list[Contacts]) -> Contacts:
        sets = [c for c in sets if len(c)]
        if not sets:
            return Contacts.empty()
        if len(sets) == 1:
            return sets[0]
        idx = None if any(c.idx is None for c in sets) else np.concatenate([c.idx for c in sets])
        return Contacts(np.vstack([c.x_w for c in sets]), np.vstack([c.n_w for c in sets]),
                        np.concatenate([c.d for c in sets]), idx,
                        np.concatenate([c.bodies() for c in sets]), np.concatenate([c.others() for c in sets]),
                        None if all(c.pair is None for c in sets) else np.concatenate([c.pairs() for c in sets]))
