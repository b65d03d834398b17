"""Model (fixed for a run) and State (changes every step) -- brax/MJX style.

Frames: ``_w`` world, ``_b`` moving body (origin at its centre of mass, axes of the part's
mesh frame), ``_s`` static part (its mesh frame).  Units SI.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class ContactParams:
    mu: float                 # Coulomb friction coefficient
    clusters: int             # M_c
    band: float               # m, candidate if signed distance < band
    margin: float             # m, broad-phase slack
    normal_scale: float       # m, k-means feature weight of normals
    beta: float               # penetration-correction gain per step, [0, 1]
    pgs_iterations: int
    pgs_tolerance: float      # N
    solver: str = "sor"       # "sor" (seed 000 Algorithm 1) | "pgs" (baseline)
    sor_relaxation: float = 1.0
    sor_iterations: int = 100
    sor_tolerance: float = 1e-6   # N
    clustering: str = "patches"   # "patches" | "none" (every node) | "learned" (Model.clustering_net) | "kmeans" | "kmeans_centroid"
    fallback_depth: float = 1e-4  # m: learned clustering hands a step this deep to k-means (deepest)
    speculative: str = "predicted"  # "predicted" | "current": where a gap d > 0 is linearized (detection.predict)


@dataclass(frozen=True)
class Model:
    """Everything constant during a run."""
    name: str
    task: str                 # "peg_in_hole" | "bolting"
    dt: float                 # s, physics step T
    mass: float               # kg
    inertia_b: np.ndarray     # (3,3) kg m^2 about the COM, body axes
    nodes_b: np.ndarray       # (N,3) m, contact nodes (moving-part vertices) from the COM, body axes
    com_part: np.ndarray      # (3,) m, COM in the moving part's mesh frame
    sdf: object               # SDF the detector uses (exact or neural), static frame
    bounds_s: tuple           # (r_max, z_min, z_max) m, static part's bounding cylinder
    R_ws: np.ndarray          # (3,3) static part orientation in world
    p_ws: np.ndarray          # (3,) m, static part origin in world
    contact: ContactParams
    K: np.ndarray             # (6,) drive stiffness [N/m x3 (world), N m/rad x3 (body)]
    D: np.ndarray             # (6,) drive damping   [N s/m x3, N m s/rad x3]
    waypoints_t: np.ndarray   # (W,) s
    waypoints_p: np.ndarray   # (W,3) m, set COM position (world)
    waypoints_rot: np.ndarray  # (W,3) rad: yaw about z, tilt about x, tilt about y
    node_radius: float = 0.0  # m, largest |nodes_b| (bounds node speed from the twist)
    static_dims: dict = field(default_factory=dict)
    moving_dims: dict = field(default_factory=dict)
    sdf_exact: object = None  # the exact SDF, to report true penetration when `sdf` is neural
    inner_radius_s: float = 0.0  # m, the static part has no material inside this radius
    cspace: object = None     # cspace.CSpaceNet of the part pair (None: no C-space constraint)
    arm: object = None        # complete.ArmSetup: the Panda holding the part (None: the drive)
    node_nb: np.ndarray | None = None  # (N, P) int32: each node's P nearest nodes, body frame, nearest first
    clustering_net: object = None  # clustering_in.INClustering when contact.clustering = "learned"
    node_patch: np.ndarray | None = None  # (N,) int64: each node's body-frame patch (clustering "patches")


@dataclass(frozen=True)
class State:
    """The moving part at time t."""
    t: float                  # s
    p_w: np.ndarray           # (3,) m, COM position, world
    R_wb: np.ndarray          # (3,3) body orientation in world
    V: np.ndarray             # (6,) [v_w m/s (COM velocity, world axes); w_b rad/s (body axes)]
    warm: tuple | None = None  # the solver's forces of the step that led here (x_w, f_w, lambda^C)


@dataclass(frozen=True)
class Inputs:
    """Set pose and twist of the drive at this step."""
    p_set_w: np.ndarray       # (3,) m
    R_set_w: np.ndarray       # (3,3)
    v_set_w: np.ndarray       # (3,) m/s, world
    w_set_w: np.ndarray       # (3,) rad/s, world
    f_ext: np.ndarray = field(default_factory=lambda: np.zeros(6))  # (6,) [N world; N m body]


@dataclass(frozen=True)
class Contacts:
    """Contact set in world axes (nodes after detection, or representatives after clustering)."""
    x_w: np.ndarray           # (n,3) m, contact point
    n_w: np.ndarray           # (n,3) unit normal, out of the static part (pushes the moving part)
    d: np.ndarray             # (n,) m, signed distance (negative = penetration)
    idx: np.ndarray | None = None  # (n,) the nodes' rows in Model.nodes_b (detection sets it)

    @staticmethod
    def empty() -> "Contacts":
        return Contacts(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))

    def __len__(self) -> int:
        return int(self.d.shape[0])
