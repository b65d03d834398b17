"""Shapes: typed, frozen records of contact geometry, each attached to a body or to the world.

A shape belongs to one body (``body``, an index in ``Model.bodies``) or to the world
(``types.WORLD``), and has a frame of its own given in that body's frame -- origin at the
body's centre of mass, body axes -- or in the world's: ``R_bs`` (3,3) and ``p_bs`` (3,) m.
``Model.shapes`` holds them all; a ``types.ContactPair`` joins two of them, and
``collision.DETECTORS`` holds a detector for each pair of kinds (``kind``, a class constant).

| kind | record | geometry (shape frame) |
|---|---|---|
| ``nodes`` | ``Nodes`` | a body's contact nodes (its mesh vertices), with their neighbour table and patches |
| ``sdf`` | ``SDF`` | a signed distance (exact or neural), its bounding cylinder about z, inner radius |
| ``pins`` | ``Pins`` | seed 004's capsule pins standing on a plate (``geometry.docking.PinPlate``) |
| ``holes`` | ``Holes`` | seed 004's capsule holes in a box, top face at z = 0 (``geometry.docking.HoleBlock``) |
| ``sphere`` | ``Sphere`` | a ball of ``radius`` about the origin |
| ``plane`` | ``Plane`` | the half-space z <= 0 (material below, its face the xy plane); world only |
| ``capsule`` | ``Capsule`` | the points within ``radius`` of the segment z in [-half_length, half_length] |
| ``cylinder`` | ``Cylinder`` | the solid cylinder rho <= ``radius``, abs(z) <= ``half_length`` (caps included) |
| ``workpiece`` | ``Workpiece`` | seed 001 grinding: a bar along x with a weld bead (``geometry.grinding``) |

The node set and the pins are a body's own points: their coordinates are in the body frame
(``nodes_b``, ``segments_b``) and their frame is the body's (``R_bs`` = I, ``p_bs`` = 0).
Every shape on a body bounds its material's distance from the body's origin (``extent``, m):
what the speculative reach of a detector (``collision.detection.reach``) needs to bound a
point's speed from the body's twist.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sim_core.types import WORLD, BodyPose, SignedDistance

if TYPE_CHECKING:
    from sim_core.geometry.docking import HoleBlock, PinPlate
    from sim_core.geometry.grinding import Workpiece as WorkpieceGeometry
    from sim_core.types import Model, State


def _eye() -> np.ndarray:
    return np.eye(3)


def _zero() -> np.ndarray:
    return np.zeros(3)


@dataclass(frozen=True, kw_only=True)
class Shape:
    """What every shape has: a name, the body it is on, its frame there."""
    kind: ClassVar[str] = ""
    name: str = ""
    body: int = WORLD              # index in Model.bodies, or WORLD
    R_bs: np.ndarray = field(default_factory=_eye)   # (3,3) shape frame in the body's frame (world's for WORLD)
    p_bs: np.ndarray = field(default_factory=_zero)  # (3,) m, shape origin from the body's COM, body axes (or world)

    def __post_init__(self):
        object.__setattr__(self, "R_bs", np.asarray(self.R_bs, dtype=np.float64))
        object.__setattr__(self, "p_bs", np.asarray(self.p_bs, dtype=np.float64))
        if self.R_bs.shape != (3, 3) or self.p_bs.shape != (3,):
            raise ValueError(f"shape {self.name!r}: R_bs must be (3,3) and p_bs (3,), "
                             f"got {self.R_bs.shape} and {self.p_bs.shape}")
        if self.body < WORLD:
            raise ValueError(f"shape {self.name!r}: body {self.body} is neither a body index nor WORLD")

    @property
    def R_ws(self) -> np.ndarray:
        """(3,3) the frame in the world -- of a world shape only (a body's moves: ``frame_w``)."""
        self._world_only("R_ws")
        return self.R_bs

    @property
    def p_ws(self) -> np.ndarray:
        """(3,) m, the origin in the world -- of a world shape only (a body's moves: ``frame_w``)."""
        self._world_only("p_ws")
        return self.p_bs

    def _world_only(self, what: str) -> None:
        if self.body != WORLD:
            raise ValueError(f"shape {self.name!r} is on body {self.body}: its {what} changes with the "
                             "body's pose (shapes.frame_w / shapes.placed)")

    def extent(self) -> float:
        """m: no material of the shape lies farther than this from its body's origin."""
        raise NotImplementedError

    def _frame_identity(self) -> None:
        if not (np.array_equal(self.R_bs, np.eye(3)) and not np.any(self.p_bs)):
            raise ValueError(f"shape {self.name!r} ({self.kind}): its points are in the body frame; "
                             "R_bs must be the identity and p_bs zero")


@dataclass(frozen=True, kw_only=True)
class Nodes(Shape):
    """A body's contact nodes (mesh vertices)."""
    kind: ClassVar[str] = "nodes"
    nodes_b: np.ndarray            # (N,3) m, from the body's COM, body axes
    node_radius: float = -1.0      # m, largest |nodes_b| (bounds a node's speed); < 0: computed
    node_nb: np.ndarray | None = None     # (N,P) int32: each node's P nearest nodes, nearest first
    node_patch: np.ndarray | None = None  # (N,) int64: each node's body-frame patch (clustering "patches")

    def __post_init__(self):
        super().__post_init__()
        self._frame_identity()
        nodes = np.ascontiguousarray(self.nodes_b, dtype=np.float64)
        if nodes.ndim != 2 or nodes.shape[1] != 3:
            raise ValueError(f"shape {self.name!r}: nodes_b must be (N,3), got {nodes.shape}")
        object.__setattr__(self, "nodes_b", nodes)
        if self.node_radius < 0.0:
            r = float(np.linalg.norm(nodes, axis=1).max()) if len(nodes) else 0.0
            object.__setattr__(self, "node_radius", r)

    def extent(self) -> float:
        return self.node_radius


@dataclass(frozen=True, kw_only=True)
class SDF(Shape):
    """A signed distance in the shape frame, bounded by the upright cylinder ``bounds_s``."""
    kind: ClassVar[str] = "sdf"
    sdf: SignedDistance            # what detection queries (exact or neural), shape frame
    sdf_exact: SignedDistance | None = None   # the exact geometry (true penetration of a neural run); None: sdf
    bounds_s: tuple = (0.0, 0.0, 0.0)         # (r_max, z_min, z_max) m: the upright cylinder bounding it
    inner_radius_s: float = 0.0    # m, no material inside this radius (a hole's bore)

    def __post_init__(self):
        super().__post_init__()
        if self.sdf_exact is None:
            object.__setattr__(self, "sdf_exact", self.sdf)
        object.__setattr__(self, "bounds_s", tuple(float(b) for b in self.bounds_s))

    def extent(self) -> float:
        r, z0, z1 = self.bounds_s
        return float(np.linalg.norm(self.p_bs)) + math.hypot(r, max(abs(z0), abs(z1)))


@dataclass(frozen=True, kw_only=True)
class Pins(Shape):
    """Seed 004's capsule pins standing on a plate (detector against ``Holes``)."""
    kind: ClassVar[str] = "pins"
    plate: PinPlate                # the pins' radius and layout, the plate's part frame
    segments_b: np.ndarray         # (P,2,3) m: each pin's [tip centre, base centre] from the COM, body axes

    def __post_init__(self):
        super().__post_init__()
        self._frame_identity()
        object.__setattr__(self, "segments_b", np.ascontiguousarray(self.segments_b, dtype=np.float64))

    def extent(self) -> float:
        return float(np.linalg.norm(self.segments_b.reshape(-1, 3), axis=1).max()) + self.plate.radius


@dataclass(frozen=True, kw_only=True)
class Holes(Shape):
    """Seed 004's capsule holes in a box; the shape frame is the block's (top face z = 0)."""
    kind: ClassVar[str] = "holes"
    block: HoleBlock

    def extent(self) -> float:
        a, b, c = self.block.box
        return float(np.linalg.norm(self.p_bs)) + math.sqrt(0.25 * a * a + 0.25 * b * b + c * c)


@dataclass(frozen=True, kw_only=True)
class Sphere(Shape):
    """A ball of ``radius`` about the shape origin."""
    kind: ClassVar[str] = "sphere"
    radius: float                  # m

    def __post_init__(self):
        super().__post_init__()
        _positive(self, "radius", self.radius)

    def extent(self) -> float:
        return float(np.linalg.norm(self.p_bs)) + self.radius


@dataclass(frozen=True, kw_only=True)
class Plane(Shape):
    """The half-space below the shape frame's xy plane (outward normal: its +z).  World only:
    a moving plane's points have no bounded speed."""
    kind: ClassVar[str] = "plane"

    def __post_init__(self):
        super().__post_init__()
        if self.body != WORLD:
            raise ValueError(f"shape {self.name!r}: a plane is fixed to the world (body = WORLD), got body {self.body}")

    def extent(self) -> float:
        return math.inf


@dataclass(frozen=True, kw_only=True)
class Capsule(Shape):
    """The points within ``radius`` of the segment from (0, 0, -half_length) to (0, 0, +half_length)."""
    kind: ClassVar[str] = "capsule"
    radius: float                  # m
    half_length: float             # m, half the segment's length (0: a sphere)

    def __post_init__(self):
        super().__post_init__()
        _positive(self, "radius", self.radius)
        if not self.half_length >= 0.0:
            raise ValueError(f"shape {self.name!r}: half_length must be >= 0, got {self.half_length}")

    def extent(self) -> float:
        return float(np.linalg.norm(self.p_bs)) + self.half_length + self.radius


@dataclass(frozen=True, kw_only=True)
class Cylinder(Shape):
    """The solid cylinder rho <= ``radius``, abs(z) <= ``half_length`` (lateral face, flat caps, rims)."""
    kind: ClassVar[str] = "cylinder"
    radius: float                  # m
    half_length: float             # m

    def __post_init__(self):
        super().__post_init__()
        _positive(self, "radius", self.radius)
        _positive(self, "half_length", self.half_length)

    def extent(self) -> float:
        return float(np.linalg.norm(self.p_bs)) + math.hypot(self.radius, self.half_length)


@dataclass(frozen=True, kw_only=True)
class Workpiece(Shape):
    """Seed 001's grinding workpiece (``geometry.grinding.Workpiece``): the union of a bar and a
    weld bead, two solid cylinders along the shape frame's x axis."""
    kind: ClassVar[str] = "workpiece"
    workpiece: WorkpieceGeometry

    def extent(self) -> float:
        return float(np.linalg.norm(self.p_bs)) + self.workpiece.extent()


def _positive(s: Shape, what: str, v: float) -> None:
    if not v > 0.0:
        raise ValueError(f"shape {s.name!r}: {what} must be > 0, got {v}")


KINDS = {c.kind: c for c in (Nodes, SDF, Pins, Holes, Sphere, Plane, Capsule, Cylinder, Workpiece)}

def pose(state: State, body: int) -> BodyPose:
    """The pose of `body` at a state; the world's (identity, at rest) for WORLD."""
    if body == WORLD:
        return BodyPose(state.t, _ORIGIN, _IDENTITY, _AT_REST)
    return state.body(body)


_ORIGIN, _IDENTITY, _AT_REST = np.zeros(3), np.eye(3), np.zeros(6)     # the world's pose (read-only)
for _a in (_ORIGIN, _IDENTITY, _AT_REST):
    _a.flags.writeable = False


def frame_w(shape: Shape, at: BodyPose) -> tuple[np.ndarray, np.ndarray]:
    """(R_ws (3,3), p_ws (3,) m): the shape's frame in the world with its body at pose `at`."""
    if shape.body == WORLD:
        return shape.R_bs, shape.p_bs
    return at.R_wb @ shape.R_bs, at.p_w + at.R_wb @ shape.p_bs


def placed(shape: Shape, at: BodyPose) -> Shape:
    """The shape as a world shape where its body is at pose `at` (a world shape: itself), for
    the stages that read a frame fixed in the world (broad phase, SDF queries, clustering)."""
    if shape.body == WORLD:
        return shape
    R, p = frame_w(shape, at)
    return replace(shape, body=WORLD, R_bs=R, p_bs=p)


def nodes_of(model: Model, body: int = 0) -> Nodes:
    """The (first) node set on `body`."""
    for s in model.shapes:
        if isinstance(s, Nodes) and s.body == body:
            return s
    raise LookupError(f"body {body} has no contact nodes (shape kind 'nodes')")


def check(model: Model, src: str = "<model>") -> None:
    """A world's shapes and pairs are consistent: each shape on an existing body or the world,
    each pair joining two shapes not on the same body (one line naming what is wrong)."""
    nb = len(model.bodies)
    for i, s in enumerate(model.shapes):
        if not (s.body == WORLD or 0 <= s.body < nb):
            raise ValueError(f"{src}: shapes[{i}] ({s.name!r}): body {s.body} not in 0..{nb - 1} or WORLD")
    for k, p in enumerate(model.pairs):
        for end in (p.a, p.b):
            if not 0 <= end < len(model.shapes):
                raise ValueError(f"{src}: pairs[{k}]: shape {end} not in 0..{len(model.shapes) - 1}")
        on = model.shapes[p.a].body
        if on == model.shapes[p.b].body:
            where = "the world" if on == WORLD else f"body {on}"
            raise ValueError(f"{src}: pairs[{k}]: shapes {p.a} and {p.b} are both on {where}")
