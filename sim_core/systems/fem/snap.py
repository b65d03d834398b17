"""The snap fit (seed 003 Secs. II-IV): a rigid plug under admittance control pushed down
between two FEM prongs until their hooks click over its head, with maximum-dissipation contact.

**The step** (``step``), stage by stage:

1. free motion -- each prong's PMI step with no contact force (in the coupled, reduced model's
   modes, ``pmi.ModalPmi``), the plug's admittance PMI step towards its set point (eq. (5));
2. detection -- the prongs' surface points (``prong.surface_samples``, interpolated from the
   FEM nodes, eq. (23)) in the plug's frame against its signed distance
   (``connector.plug_sdf`` as a kernel, or the plug's trained network ``SnapModel.sdf``:
   seed 003's Model 2 onwards), kept within ``band``; the plug's bottom against the socket's seat;
3. representatives -- per prong, k-means on (position, normal) with the deepest member of each
   cluster (Sec. IV-A), when more than ``clusters`` nodes touch;
4. Delassus operator (eq. (27)) -- contact frames [n t1 t2] (n the plug's outward normal), the
   prongs' end-of-step admittance (2 x eq. (14)'s A: v_+ = 2 v_hat - v) plus the plug's;
5. contact solve -- the project's maximum-dissipation solver (``contact.solver_sor``: per
   contact bisection, block SOR; seed 003 Sec. IV-B adopts the same method) with Coulomb's
   cone ||lambda_t|| <= mu lambda_n and Signorini on the end-of-step gap -- the printed
   eq. (28) has the cone reversed (mu ||f_n|| <= ||f_t||) and Signorini as an equality (a
   contact that may only push cannot be held to a target velocity); implemented is the
   physics: 0 <= lambda_n _|_ u_n - b_n >= 0;
6. integration -- the prongs' modal PMI with the contact forces, the plug's admittance.

**Contact on the midpoint velocity.**  The laws hold on the step's midpoint relative velocity
u_hat = (u_k + u_k+1) / 2, the velocity PMI moves positions with (g_k+1 = g_k + T u_hat_n) and
whose product with the force is the work in PMI's energy balance (eq. (6)).  Signorini:
0 <= lambda_n _|_ u_hat_n - b_n >= 0 with b_n = min(0, -g / T): a gap seen in the band closes
exactly, a penetration is held, never pushed out; Coulomb with maximum dissipation on u_hat_t.
So every contact force does work T lambda . u_hat = T lambda_n b_n + T lambda_t . u_hat_t <= 0:
the contact is passive in the same discrete sense as the FEM, and the whole step's energy can
only fall (tested).  Why not the end-of-step velocity (the rigid tasks' choice,
``contact.solver_sor``): the prongs' stiffest modes run at w T ~ 1e4 at T = 1 ms (the first
bending mode itself at w T ~ 7), where the midpoint rule maps a mode to nearly -1 a step: a
contact's impulse leaves them ringing, undamped, with the surface velocity flipping sign every
step -- measured 20 mm/s at the hook, twice the plug's speed -- and an end-of-step target chases
that ringing (contacts opening and closing each step, then a blow-up within 0.4 s).  The
midpoint velocity averages a ringing mode out (u_hat = u_k (1 + lambda) / 2, lambda ~ -1).
Its price: a contact arriving at speed stops in the midpoint sense, u_k+1 = -u_k -- an elastic
impact (seed 003's restitution epsilon = 1 in its v_eps = v_k+1 + eps v_k); the energy goes
back into the bodies, to be dissipated by the admittance and any material damping.  The seat
(the plug, rigid and resolved by the step, on the rigid base) is plastic once it touches slowly:
while its gap is at most ``SEAT_TOUCH`` and stopping it within the step leaves it at most that far
in (g + T u / 2 >= -SEAT_TOUCH), the target is b_n = min(0, u / 2) -- the plug at rest at the
step's end, u_k+1 >= 0; otherwise b_n = min(0, -g / T): it lands exactly and rebounds (at
|u| - 2 g / T < |u|, and the admittance's damper takes the rest) until it touches slowly.  Never
positive, so no positive work.  Tried and dropped: the plastic target from a distance (it held
the plug hovering 65 um above the seat: a force at a distance), plastic at any speed (the stop
left it T |u| / 2 = 34 um in, held), and elastic throughout -- the plug bounced on the seat
every step (a contact of infinite stiffness runs at w T = infinity:
eigenvalue -1, undamped), and the
floor read 6 N and 10 N on alternate steps.

**The floor's reaction** (eq. (29), corrected in ``assembly``) is the prongs' fixed rows plus the
seat's force on the plug: what a force sensor under the socket reads (seed 003 Fig. 7).

The plug moves in x, y, z (no rotation: the arm holds it; the seed's eq. (5) is 6-D).  The
prongs are one model, mirrored: the right prong's frame is x_w = a + x, the left one's
x_w = -(a + x).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np
from numba import njit

from sim_core.contact import solver_sor
from sim_core.contact.clustering import kmeans_labels
from sim_core.contact.frames import contact_frames
from sim_core.geometry.connector import PlugSpec, packed_polygons, union_sdf
from sim_core.systems.fem.pmi import LinearPmi, ModalPmi
from sim_core.systems.fem.prong import ProngModels, surface_samples

SIDES = (1.0, -1.0)          # right prong (x_w = a + x), left prong (mirrored)
MAX_LLOYD = 30               # k-means iterations per step
SOLVER_ITERATIONS = 200
SEAT_TOUCH = 10e-6           # m: the plug touches the seat within this gap, and its plastic stop may
                             # leave it this far in (module text)
MISSED_DEPTH = 1e-6          # m: a point left out of the candidates that the solved step carries
                             # deeper than this into the plug is added (``_missed``); the
                             # candidates' own linearization leaves them ~0.1-1 um in
SOLVER_TOL = 1e-6            # N: natural residual (the forces are ~1-100 N)


@dataclass(frozen=True)
class Admittance:
    """The plug's admittance (eq. (5)): mass kg; damping N s/m and stiffness N/m per world axis."""
    mass: float = 0.5
    damping: tuple = (40.0, 40.0, 40.0)
    stiffness: tuple = (2000.0, 2000.0, 2000.0)

    @property
    def D(self) -> np.ndarray:
        return np.asarray(self.damping, float)

    @property
    def K(self) -> np.ndarray:
        return np.asarray(self.stiffness, float)


@dataclass(frozen=True)
class SnapModel:
    """Constant.  ``modal`` the prongs' coupled, reduced model (``CoupledPmi.modal``), its ``P``
    over the contact segment's nodes; ``Ps`` (k, 3, r) the surface points' motion per modal
    coordinate (prong frame), ``X_contact`` (k, 3) m their rest positions; ``foot_K``,
    ``foot_M`` (3, r): the floor's summed force on a prong's fixed nodes per modal coordinate."""
    prong: ProngModels
    plug: PlugSpec
    modal: ModalPmi | LinearPmi   # the prongs' dynamics (LinearPmi: the "nodal" Model 1)
    Ps: np.ndarray
    X_contact: np.ndarray
    foot_K: np.ndarray
    foot_M: np.ndarray
    tip_row: int                 # row of P: the hook tip node's x (its deflection is reported)
    spacing: float               # m, the prongs' inner faces at x = +-spacing
    seat_z: float                # m, the socket's seat (the plug's head bottom rests on it)
    admittance: Admittance
    mu: float
    T: float
    plug_polygons: tuple = ()    # ``connector.packed_polygons(plug)``, for the detection kernel
    band: float = 0.2e-3         # m, points this close to the plug are contact candidates (plus twice
                                 # the plug's travel in the step: it lands at up to ~0.4 m/s after the click)
    clusters: int = 16           # representatives per prong (8 let a prong twist past one: 93 um)
    vertex_P: np.ndarray | None = None   # (nv, 3, r) the prong mesh's vertices' motion per modal
                                         # coordinate, prong frame (zero at the fixed foot): the view's
    sdf: object | None = None    # the plug's trained network (``neural_sdf.NeuralSDF``, plug frame): the
                                 # detection's distance and normal; None: the exact profile's kernel
    PsT: np.ndarray | None = None    # (r, 3k) Ps's rows as columns: the detection's product streams it
                                     # (q (2, r) @ PsT: 36 us where Ps (3k, r) @ q^T took 122, fine mesh)
    gram: np.ndarray | None = None   # (3k, 3k) s/kg: Ps diag(1/mhat) Ps^T, the midpoint admittance
                                     # between every two surface points of a prong (prong frame): the
                                     # Delassus operator's prong part is gathered from it (``_delassus``)

    @property
    def A_plug(self) -> np.ndarray:
        a = self.admittance
        return a.mass / self.T + 0.5 * a.D + 0.25 * a.K * self.T


@dataclass
class SnapState:
    t: float
    q: np.ndarray                # (2, r) the prongs' modal coordinates
    qd: np.ndarray               # (2, r) their rates
    p: np.ndarray                # (3,) m, the plug frame's origin, world
    V: np.ndarray                # (3,) m/s, the plug's velocity
    speed: np.ndarray | None = None  # (2, k) m/s, the surface points' speeds over the last step (its
                                     # travel / T: the midpoint rates'; None: at rest)
    u: np.ndarray | None = None      # (2, k, 3) m, prong frame: the surface points' displacements at q,
                                     # carried from step to step (``surface_u``; None: computed from q --
                                     # what a state given another q must carry)


@dataclass
class SnapInfo:
    plug_force: np.ndarray       # (3,) N, the contacts' force on the plug (seat included)
    floor_force: np.ndarray      # (3,) N, the floor's force on the socket (prong feet + seat; eq. (29))
    max_penetration: float       # m
    n_contacts: int
    sweeps: int
    residual: float              # N, the contact solve's natural residual
    deflection: np.ndarray = field(default_factory=lambda: np.zeros(2))   # m, each hook tip's outward x


# seed 003 Fig. 5's Models 1 (2), 3 and 4, and Model 1 in node coordinates as the seed ran it
MODELS = ("whole", "segmented", "reduced", "nodal")

# The step's stages as ``step`` laps them (``laps``: any object with ``lap(stage)``, such as
# ``sim_core.step.Laps``; ``bench/snap.py`` prints them per model).  "solve" is the block SOR alone;
# "check" is the work after it: the forces' modal loads and the prongs' midpoint rates, the surface
# points' velocities and speeds (the next step's reach), and ``_missed``'s check -- a second solve's
# frames, operator and sweeps lap as "delassus" and "solve" again.
STAGES = ("free", "detection", "representatives", "delassus", "solve", "check", "integration")
# the stages whose cost grows with the prongs' modal coordinates r (products with Ps, PsT or the
# modes); the others -- the k-means and the contact solve -- cost the same in every model
STAGES_IN_R = ("free", "detection", "delassus", "check", "integration")


class _NoLaps:
    def lap(self, stage: str) -> None:
        pass


_NO_LAPS = _NoLaps()


def _prong_dynamics(prong: ProngModels, T: float, model: str):
    """(ModalPmi with P over the contact segment's nodes, foot_K, foot_M, the prong mesh's vertices'
    motion per modal coordinate (nv, 3, r), zero at the fixed foot) for `model`: the whole FEM in
    its modes, the segmented one (both segments full, the cut's spring) in the coupled modes, or
    the segmented, reduced one (``CoupledPmi.modal``); or "nodal", the whole FEM in its node
    coordinates with the precalculated M_hat^-1 (``LinearPmi``: dense products of n^2 a step, the
    seed's Model 1 -- the same motion as "whole" while the material is undamped, the default:
    "whole" steps M and K alone, "nodal" M, D and K; ``test_fem.py -k nodal_fem``), "modal" then
    meaning the free nodes' coordinates."""
    if model not in MODELS:
        raise ValueError(f"model: must be one of {MODELS}, got {model!r}")
    w = prong.whole
    if model == "nodal":
        rows = (3 * prong.split.whole_of[0][:, None] + np.arange(3)).ravel()   # segment 1's nodes
        eye = np.eye(w.dof)
        mp = LinearPmi.build(w.M, w.D, w.K, T, P=eye[rows])
        fixed, M_af, K_af, nodal = w.X_fixed, w.M_af, w.K_af, eye
        every = eye.reshape(w.n, 3, -1)
    elif model == "whole":
        full = ModalPmi.build(w.M, w.K, T)
        rows = (3 * prong.split.whole_of[0][:, None] + np.arange(3)).ravel()   # segment 1's nodes
        mp = ModalPmi(full.P[rows], full.w2, full.mhat, full.T)
        fixed, M_af, K_af, nodal = w.X_fixed, w.M_af, w.K_af, full.P
        every = full.P.reshape(w.n, 3, -1)                   # the whole model's free nodes
    else:
        c = prong.coupled_pmi(T, reduced=model == "reduced")
        mp, R = c.modal()
        r1 = c.Mr[0].shape[0]
        p2 = prong.split.parts[1]
        fixed, M_af, K_af = p2.X_fixed, p2.M_af, p2.K_af
        nodal = c.seg[1].Q @ R[r1:]                      # segment 2's nodal coordinates per mode
        every = np.zeros((w.n, 3, mp.size))
        for part, P in ((1, nodal), (0, mp.P)):          # a cut node: the contact segment's copy
            every[prong.split.whole_of[part]] = P.reshape(-1, 3, P.shape[1])
    nf = len(fixed)
    vertex = np.zeros((prong.mesh.nvertices, 3, mp.size))
    on = w.free_of_all < prong.mesh.nvertices            # free nodes that are the mesh's vertices
    vertex[w.free_of_all[on]] = every[on]
    return (mp, (K_af @ nodal).reshape(nf, 3, -1).sum(axis=0), (M_af @ nodal).reshape(nf, 3, -1).sum(axis=0),
            vertex)


def build(prong: ProngModels, plug: PlugSpec | None = None, spacing: float = 3.5e-3, seat_z: float = 7.0e-3,
          admittance: Admittance | None = None, mu: float = 0.163, T: float = 1e-3, model: str = "reduced",
          **kw) -> SnapModel:
    """The snap model; `model` picks the prongs' dynamics (``MODELS``; default Model 4)."""
    mp, foot_K, foot_M, vertex_P = _prong_dynamics(prong, T, model)
    X, nodes, w = surface_samples(prong)
    Ps = np.einsum("kn,knar->kar", w, mp.P.reshape(-1, 3, mp.P.shape[1])[nodes])
    Xc = prong.split.parts[0].X[prong.contact]
    tip = prong.contact[np.lexsort((-Xc[:, 2], Xc[:, 0]))[0]]   # the hook's innermost node, the highest
    plug = plug or PlugSpec()
    P2 = Ps.reshape(-1, Ps.shape[2])
    return SnapModel(prong, plug, mp, Ps, X, foot_K, foot_M, int(3 * tip), spacing, seat_z,
                     admittance or Admittance(), mu, T, packed_polygons(plug), vertex_P=vertex_P,
                     PsT=np.ascontiguousarray(P2.T), gram=mp.admit(P2) @ P2.T, **kw)


def start(model: SnapModel, p0) -> SnapState:
    r = model.modal.size
    return SnapState(0.0, np.zeros((2, r)), np.zeros((2, r)), np.asarray(p0, float).copy(), np.zeros(3))


def surface_u(model: SnapModel, q: np.ndarray) -> np.ndarray:
    """(2, k, 3) m, prong frame: the surface points' displacements at modal coordinates q (2, r)."""
    return (q @ model.PsT).reshape(2, len(model.X_contact), 3)       # one BLAS product


def _surface(model: SnapModel, state: SnapState) -> np.ndarray:
    """The state's surface displacements: carried (``SnapState.u``), or formed from its q."""
    return surface_u(model, state.q) if state.u is None else state.u


def _distances(model: SnapModel, u: np.ndarray, p: np.ndarray, reach: float, among: np.ndarray | None = None):
    """The surface points' signed distances to the plug with the prongs' surface displaced by u
    (2, k, 3) m (``surface_u``) and the plug's origin at p (3,): (d (2, k) m, inf beyond `reach`
    of the plug's box -- or, given `among` (flat indices into 2k), inf but there; outward
    normals in the profile's plane g (2, k, 2) [x z]; positions in the plug's frame rel (2, k, 3))."""
    k = len(model.X_contact)
    rel, rel_xz = np.empty((2 * k, 3)), np.empty((2 * k, 2))
    near_box = _relative(u, model.X_contact, model.spacing, p, *model.plug_polygons, reach, rel, rel_xz)
    if among is not None:
        near_box = among
    d, g = np.full(2 * k, np.inf), np.zeros((2 * k, 2))   # beyond reach of the plug's box: d >= reach
    d[near_box], g[near_box] = _plug_sdf(model, rel, rel_xz, near_box, reach)
    return d.reshape(2, k), g.reshape(2, k, 2), rel.reshape(2, k, 3)


def _plug_sdf(model: SnapModel, rel: np.ndarray, rel_xz: np.ndarray, idx: np.ndarray, band: float):
    """(d (n,), g (n, 2)) of the plug's signed distance at the points idx of rel (2k, 3) / rel_xz."""
    if model.sdf is None:
        dc, gc = np.empty(len(idx)), np.empty((len(idx), 2))
        union_sdf(rel_xz[idx], *model.plug_polygons, dc, gc)         # = plug_sdf
        return dc, gc
    dc, gc = model.sdf.query(rel[idx], band=band)  # the network: normals only within band (NaN beyond)
    return dc, gc[:, [0, 2]]                       # the profile does not change along y: no y part


def _detect(model: SnapModel, state: SnapState):
    """``_detected``'s candidates: (side (n,) int, node index (n,) int, gap (n,) m, outward normal
    (n, 3) world)."""
    return _detected(model, state, _reach(model, state), _surface(model, state))[:4]


def _detected(model: SnapModel, state: SnapState, reach_pt: np.ndarray, u: np.ndarray, laps=_NO_LAPS):
    """The candidate points, side 0's then side 1's, and every point's distance: (side (n,) int,
    node index (n,) int, gap (n,) m, outward normal (n, 3) world, d (2, k) m (inf beyond reach of
    the plug's box)), the prongs' surface displaced by u (2, k, 3) (``_surface``).

    A point is a candidate within the band plus twice what the two sides may travel this step:
    the plug at its speed, and the point itself as far as it went in the last step
    (``SnapState.speed``).  The points' own part matters once the prongs ring: after a fast click,
    or the plug's blow on the hooks from below after a rebound off the seat, a point of the
    hooks moves up to ~1 mm a step, far past the 0.2 mm band; with the plug's travel alone it
    was first found inside the plug, up to 447 um deep (the batch insertion at 475 mm/s).  Not
    the step's free travel (stage 1): for a prong held deflected by the plug it is the stiff
    modes' swing through their loaded shape, ~1 mm a step while nothing moves, and that reach
    spread the representatives over the whole prong (3 -> 23-55 um deep at the shipped speed).
    A point that starts moving within the step (a hook let go by the head) is caught after the
    solve (``_missed``)."""
    d, g, rel = _distances(model, u, state.p, float(np.max(reach_pt)))
    laps.lap("detection")
    found = _candidates(_pick(model, d < reach_pt, rel, g, d), d, g)
    laps.lap("representatives")
    return (*found, d)


def _reach(model: SnapModel, state: SnapState) -> np.ndarray:
    """(2, k) m: each surface point's reach (``_detect``)."""
    k = len(model.X_contact)
    reach = np.full((2, k), model.band + 2.0 * model.T * float(np.linalg.norm(state.V)))   # the plug's travel, and more
    if state.speed is not None:                                   # each point's own
        reach += 2.0 * model.T * state.speed
    return reach


def _speeds(model: SnapModel, qh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the surface points' velocities (2, k, 3) m/s, prong frame, and speeds (2, k) m/s) at the
    prongs' modal rates qh (2, r)."""
    uh = surface_u(model, qh)
    return uh, np.sqrt(np.einsum("ski,ski->sk", uh, uh))     # np.linalg.norm's, in a third of its time


def _pick(model: SnapModel, near: np.ndarray, rel: np.ndarray, g: np.ndarray, depth: np.ndarray) -> list:
    """Per side, the indices of the points `near` (2, k) bool -- all of them, or where more than
    ``clusters``, the deepest by `depth` (2, k) of each cluster (``_representatives``)."""
    picked = []
    for s in (0, 1):
        idx = np.flatnonzero(near[s])
        if len(idx) > model.clusters:
            idx = idx[_representatives(rel[s, idx], g[s, idx], depth[s, idx], model.clusters)]
        picked.append(idx)
    return picked


def _candidates(picked, d, g):
    """(side, node, gap, normal (n, 3) world) of the points picked per side [(n0,), (n1,)]."""
    side = np.repeat(np.arange(2), [len(picked[0]), len(picked[1])])
    node = np.concatenate(picked)
    gn = g[side, node]
    return side, node, d[side, node], np.stack([gn[:, 0], np.zeros(len(node)), gn[:, 1]], axis=1)


def _missed(model: SnapModel, state: SnapState, u0: np.ndarray, u1: np.ndarray, p1: np.ndarray, side, node):
    """The points the detection left out that end the step inside the plug (the surface displaced
    by u1 (2, k, 3), the plug at p1): (side, node, gap, normal) at the step's start (displaced by
    u0), as ``_detect``'s, at most ``clusters`` per side (the deepest at the end of each cluster),
    or None when there are none."""
    d1, _, _ = _distances(model, u1, p1, 0.0)
    inside = d1 < -MISSED_DEPTH
    inside[side, node] = False
    if not inside.any():
        return None
    d0, g0, rel0 = _distances(model, u0, state.p, np.inf, np.flatnonzero(inside))   # theirs alone
    return _candidates(_pick(model, inside, rel0, g0, d1), d0, g0)


@njit(cache=True)
def _relative(u, X0, spacing, p, V, counts, reach, rel, rel_xz):
    """The surface points in the plug's frame, side 0's then side 1's: rel (2k, 3) [x y z] and
    rel_xz (2k, 2) [x z] (the profile's plane) from the prongs' displacements u (2, k, 3) at the
    rest positions X0 (k, 3) -- the right prong's x_w = spacing + x, the left one's mirrored
    (``SIDES``) -- less the plug's origin p (3,); the same operations in the same order as the
    NumPy temporaries it replaces, so the same bits.  Returns the indices of the points within
    `reach` (m) of the box around the plug's profile (V (pieces, v_max, 2), counts: ``union_sdf``'s
    polygons): only they can lie within reach of the plug (three quarters of the fine mesh's 850
    points do not: their distance is not needed, the detection keeps d < reach alone).  With the
    plug's network, a point beyond the box is out even where the network's error (~1 um RMS in
    the band, more off it) would have put it within reach."""
    lo_x = lo_z = np.inf
    hi_x = hi_z = -np.inf
    for c in range(V.shape[0]):
        for e in range(counts[c]):
            lo_x, hi_x = min(lo_x, V[c, e, 0]), max(hi_x, V[c, e, 0])
            lo_z, hi_z = min(lo_z, V[c, e, 1]), max(hi_z, V[c, e, 1])
    k = X0.shape[0]
    near = np.empty(2 * k, np.int64)
    n = 0
    for s in range(2):
        sg = SIDES[s]
        for i in range(k):
            j = s * k + i
            x = sg * (spacing + (X0[i, 0] + u[s, i, 0])) - p[0]
            z = (X0[i, 2] + u[s, i, 2]) - p[2]
            rel[j, 0], rel[j, 1], rel[j, 2] = x, (X0[i, 1] + u[s, i, 1]) - p[1], z
            rel_xz[j, 0], rel_xz[j, 1] = x, z
            if lo_x - reach < x < hi_x + reach and lo_z - reach < z < hi_z + reach:
                near[n] = j
                n += 1
    return near[:n]


def _representatives(x, g, d, k: int) -> np.ndarray:
    """Indices (into x) of the deepest member of each of k clusters (seed 003 Sec. IV-A), in the
    clusters' order."""
    F = np.ascontiguousarray(np.hstack([x / 1e-3, g]))                  # mm and normals: comparable
    return _deepest(kmeans_labels(F, k, int(np.argmin(d)), MAX_LLOYD), np.ascontiguousarray(d), k)


@njit(cache=True)
def _deepest(labels, d, k):
    """Per label 0..k-1 that has members, its member with the smallest d (the first on a tie), in
    label order: the loop over clusters with argmin it replaces took ~0.2 ms of a 1.3 ms step."""
    best = np.full(k, -1, np.int64)
    for i in range(labels.shape[0]):
        c = labels[i]
        if best[c] < 0 or d[i] < d[best[c]]:
            best[c] = i
    return best[best >= 0]


@dataclass
class Solved:
    """Stages 2-5 of a step: the contacts' forces and what they do."""
    F_plug: np.ndarray           # (3,) N, the contacts' force on the plug (seat included), world
    phi: np.ndarray              # (2, r) the contact forces' modal loads on the prongs
    seat: float                  # N, the seat's normal force on the plug
    penetration: float           # m, the deepest candidate (>= 0)
    m: int                       # contacts solved (representatives and the seat)
    sweeps: int
    residual: float              # N
    speed: np.ndarray | None = None   # (2, k) m/s, the surface points' speeds over the step
    u: np.ndarray | None = None       # (2, k, 3) m, prong frame: the surface points' displacements at
                                      # the step's end, u + T u_hat (= surface_u(q1) to round-off)
    qh: np.ndarray | None = None      # (2, r) the prongs' midpoint rates with these forces (None: not
                                      # formed yet; ``advance_prongs`` forms it)


def free_rates(model: SnapModel, state: SnapState) -> np.ndarray:
    """Stage 1 for the prongs: (2, r) their midpoint modal rates with no contact force."""
    return np.stack([model.modal.free_rate(state.q[s], state.qd[s]) for s in (0, 1)])


def solve_contacts(model: SnapModel, state: SnapState, qh_free: np.ndarray, A_inv: np.ndarray,
                   V_free: np.ndarray, laps=_NO_LAPS) -> Solved:
    """Stages 2-5: detection, representatives, the Delassus operator and the solve, for a plug
    whose end-of-step velocity is V_free + A_inv F (A_inv (3, 3) m/(N s): how a force on it moves
    it -- the admittance's here, the core's body block (with the arm folded in, if it holds the
    plug) in ``socket.SnapSocket``).  Then the check: a point the detection left out that the
    solved step carries inside the plug joins the candidates, and the step is solved again, once
    (``_missed``: a hook let go by the head springs in within the step, up to ~0.5 mm, and was
    found 24 um inside the neck the next step at 300-950 mm/s insertions).  `laps`: the stages'
    wall time (``STAGES``)."""
    u0 = _surface(model, state)
    side, node, gap, nrm, d = _detected(model, state, _reach(model, state), u0, laps)
    sol = _solve(model, state, side, node, gap, nrm, qh_free, A_inv, V_free, laps)
    qh, V1, uh, speed = _moved(model, sol, qh_free, A_inv, V_free)
    T = model.T
    u1 = u0 + T * uh                              # the surface at q1 = q + T q_hat (advance_prongs')
    closest = d - T * (speed + float(np.linalg.norm(0.5 * (state.V + V1))))   # each point's end distance, at least
    closest[side, node] = np.inf
    if closest.min() > -MISSED_DEPTH:               # no point left out can end that deep in
        laps.lap("check")
        return replace(sol, speed=speed, u=u1, qh=qh)
    p1 = state.p + 0.5 * T * (state.V + V1)       # the plug's end, the core's midpoint
    extra = _missed(model, state, u0, u1, p1, side, node)
    if extra is None:
        laps.lap("check")
        return replace(sol, speed=speed, u=u1, qh=qh)
    side, node, gap, nrm = (np.concatenate([a, b]) for a, b in zip((side, node, gap, nrm), extra))
    laps.lap("check")
    again = _solve(model, state, side, node, gap, nrm, qh_free, A_inv, V_free, laps)
    qh, _, uh, speed = _moved(model, again, qh_free, A_inv, V_free)
    laps.lap("check")
    return replace(again, penetration=sol.penetration, speed=speed, u=u0 + T * uh, qh=qh)


def _moved(model: SnapModel, sol: Solved, qh_free, A_inv, V_free):
    """What the solved forces do over the step: (the prongs' midpoint rates (2, r), the plug's end
    velocity (3,) m/s, the surface points' midpoint velocities (2, k, 3) m/s, prong frame, and
    their speeds (2, k) m/s)."""
    qh = model.modal.admit(sol.phi) + qh_free
    return (qh, V_free + np.asarray(A_inv, float) @ sol.F_plug, *_speeds(model, qh))


def _solve(model: SnapModel, state: SnapState, side, node, gap, nrm, qh_free, A_inv, V_free,
           laps=_NO_LAPS) -> Solved:
    """Stages 4-5 for the candidates (side, node, gap, nrm) of ``_detect`` and the seat."""
    mp, T = model.modal, model.T
    nc = len(node)
    seat_gap = state.p[2] - model.seat_z
    m = nc + (1 if seat_gap < model.band + 2.0 * T * max(0.0, -state.V[2]) else 0)
    pen = max(0.0, -min(float(gap.min()) if nc else np.inf, seat_gap))
    r = mp.size
    if not m:
        return Solved(np.zeros(3), np.zeros((2, r)), 0.0, pen, 0, 0, 0.0)
    # 4. frames and the Delassus operator W (3m, 3m) of the midpoint velocities
    if m > nc:
        nrm = np.vstack([nrm, [[0.0, 0.0, -1.0]]])
    C = contact_frames(nrm)
    sign = np.array(SIDES)[side]
    W, u_free = _delassus(model.gram, model.Ps, node, side, sign, C, qh_free, 0.5 * np.asarray(A_inv, float),
                          0.5 * (state.V + V_free))
    gaps = np.append(gap, seat_gap) if m > nc else gap
    bn = np.minimum(0.0, -gaps / T)
    if m > nc:                                        # the seat: rigid on rigid, plastic (module text)
        u_seat = -C[-1, :, 0] @ state.V
        plastic = seat_gap <= SEAT_TOUCH and seat_gap + 0.5 * T * u_seat >= -SEAT_TOUCH
        bn[-1] = min(0.0, 0.5 * u_seat if plastic else -seat_gap / T)
    G = np.eye(3 * m).reshape(m, 3, 3 * m)            # contact space: the solver's identity rows
    mu = np.full(m, model.mu)
    mu[nc:] = 0.0                                     # the seat: frictionless
    laps.lap("delassus")
    # 5. the contact solve
    lam, _, _, sweeps, resid, _ = solver_sor.sor(G, np.ascontiguousarray(W), u_free, bn, mu, 1.0,
                                                 SOLVER_ITERATIONS, SOLVER_TOL, np.zeros((m, 3)),
                                                 np.zeros(3 * m), 0.0, 0.0)
    laps.lap("solve")                                 # the loads below, O(m r), are the caller's "check"
    f_w = (C @ lam[:, :, None])[:, :, 0]              # on side A, world
    seat = float(lam[-1, 0]) if m > nc else 0.0
    return Solved(-f_w.sum(axis=0), _modal_loads(model.Ps, node, side, sign, f_w, r), seat, pen, m, int(sweeps),
                  float(resid))


@njit(cache=True)
def _delassus(gram, Ps, node, side, sign, C, qh, Ah, Vh):
    """Stage 4 in contact space: (W (3m, 3m), u_free (3m,)) of the midpoint velocities of the m
    contacts (the first nc = len(node) on the prongs' surface points, any after them on the plug
    alone: the seat), side A (the prong) minus side B (the plug), in each contact's frame C (m,3,3)
    [n t1 t2].  A point's world velocity is S_s (prong frame) with S_s = diag(sign, 1, 1) (the left
    prong mirrored), so  W_ij = C_i^T (S gram[n_i, n_j] S [same prong] + Ah) C_j  -- gram the
    points' midpoint admittance (``SnapModel.gram``), Ah = A_inv / 2 the plug's (V_hat = (V + V+)/2,
    dV+/dF = A_inv) -- and u_free,i = C_i^T (S Ps[n_i] qh_s - Vh).  The same numbers as the
    contact Jacobian's product (J diag(1/mhat) J^T, ``delassus_numpy``) to round-off, in O(m^2 + m r)
    instead of O(m^2 r): the rows of the other prong's modes are zero."""
    m, nc, r = C.shape[0], node.shape[0], Ps.shape[2]
    W = np.empty((3 * m, 3 * m))
    u = np.empty(3 * m)
    B = np.empty((3, 3))
    T1 = np.empty((3, 3))
    v = np.empty(3)
    for i in range(m):
        for j in range(m):
            for a in range(3):
                for b in range(3):
                    B[a, b] = Ah[a, b]
            if i < nc and j < nc and side[i] == side[j]:
                gi, gj = 3 * node[i], 3 * node[j]
                for a in range(3):
                    sa = sign[i] if a == 0 else 1.0
                    for b in range(3):
                        sb = sign[j] if b == 0 else 1.0
                        B[a, b] += sa * sb * gram[gi + a, gj + b]
            for a in range(3):
                for b in range(3):
                    T1[a, b] = B[a, 0] * C[j, 0, b] + B[a, 1] * C[j, 1, b] + B[a, 2] * C[j, 2, b]
            for a in range(3):
                for b in range(3):
                    W[3 * i + a, 3 * j + b] = C[i, 0, a] * T1[0, b] + C[i, 1, a] * T1[1, b] + C[i, 2, a] * T1[2, b]
        for a in range(3):
            v[a] = -Vh[a]
        if i < nc:
            s, n = side[i], node[i]
            for a in range(3):
                acc = 0.0
                for q in range(r):
                    acc += Ps[n, a, q] * qh[s, q]
                v[a] += sign[i] * acc if a == 0 else acc
        for a in range(3):
            u[3 * i + a] = C[i, 0, a] * v[0] + C[i, 1, a] * v[1] + C[i, 2, a] * v[2]
    return W, u


@njit(cache=True)
def _modal_loads(Ps, node, side, sign, f_w, r):
    """(2, r): the contact forces' modal loads on the prongs, sum_i Ps[n_i]^T S f_i over each
    prong's contacts (f_w (m,3) the forces on side A, world; the seat's rows after the prongs' are
    the plug's alone)."""
    phi = np.zeros((2, r))
    for i in range(node.shape[0]):
        s, n = side[i], node[i]
        f0, f1, f2 = sign[i] * f_w[i, 0], f_w[i, 1], f_w[i, 2]
        for q in range(r):
            phi[s, q] += Ps[n, 0, q] * f0 + Ps[n, 1, q] * f1 + Ps[n, 2, q] * f2
    return phi


def delassus_numpy(model: SnapModel, side, node, C, qh, A_inv, Vh):
    """``_delassus`` as the contact Jacobian's products (the reference it is tested against): J
    (m, 3, 2r) the contacts' world velocity per modal rate of both prongs, in frame rows Jc;
    W = Jc diag(1/mhat) Jc^T + C_p (A_inv/2) C_p^T, u_free = Jc qh - C_p Vh; also Jc."""
    m, nc, r = C.shape[0], len(node), model.Ps.shape[2]
    J = np.zeros((m, 3, 2, r))
    rows = np.arange(nc)
    J[rows, :, side] = model.Ps[node]
    J[rows, 0, side] *= np.array(SIDES)[side][:, None]
    Jc = np.matmul(C.transpose(0, 2, 1), J.reshape(m, 3, 2 * r)).reshape(3 * m, 2 * r)
    W = np.hstack([model.modal.admit(Jc[:, :r]), model.modal.admit(Jc[:, r:])]) @ Jc.T
    Cp = C.transpose(0, 2, 1).reshape(3 * m, 3)
    W += (Cp @ (0.5 * A_inv)) @ Cp.T
    return W, Jc @ qh.ravel() - Cp @ Vh, Jc


def advance_prongs(model: SnapModel, state: SnapState, qh_free: np.ndarray, sol: Solved):
    """Stage 6 for the prongs: (q1, qd1, the floor's force on the socket (3,) N, each hook tip's
    outward deflection (2,) m) after the step with the contact loads ``sol.phi``."""
    mp, T = model.modal, model.T
    qh = mp.admit(sol.phi) + qh_free if sol.qh is None else sol.qh    # ``solve_contacts`` formed it
    q1, qd1 = state.q + T * qh, 2.0 * qh - state.qd
    floor = np.zeros(3)                                   # the floor's force on the socket
    for s, side in enumerate(SIDES):
        foot = model.foot_M @ ((qd1[s] - state.qd[s]) / T) + model.foot_K @ (0.5 * (state.q[s] + q1[s]))
        floor += foot * np.array([side, 1.0, 1.0])
    floor[2] += sol.seat                                  # the seat's load, carried by the floor
    return q1, qd1, floor, mp.P[model.tip_row] @ q1.T


def step(model: SnapModel, state: SnapState, p_set, laps=_NO_LAPS) -> tuple[SnapState, SnapInfo]:
    """One step of T towards the plug's set point `p_set` (3,) m, world: the stages above with the
    plug's own admittance (eq. (5)); ``socket.SnapSocket`` runs the same stages inside the core's
    step, the plug a body of the core.  `laps`: each stage's wall time (``STAGES``)."""
    T = model.T
    qh_free = free_rates(model, state)                   # 1. free motion
    a = model.admittance
    A_pl = model.A_plug
    b_pl = (a.mass / T - 0.5 * a.D - 0.25 * a.K * T) * state.V - a.K * (state.p - p_set)
    laps.lap("free")
    sol = solve_contacts(model, state, qh_free, np.diag(1.0 / A_pl), b_pl / A_pl, laps)    # 2-5
    q1, qd1, floor, tip = advance_prongs(model, state, qh_free, sol)                  # 6. integration
    V1 = (b_pl + sol.F_plug) / A_pl
    p1 = state.p + 0.5 * T * (state.V + V1)
    laps.lap("integration")
    return (SnapState(state.t + T, q1, qd1, p1, V1, sol.speed, sol.u),
            SnapInfo(sol.F_plug, floor, sol.penetration, sol.m, sol.sweeps, sol.residual, tip))


@dataclass
class Trace:
    """Per step of ``run``: time s, plug z m, the contacts' force on the plug (3,) N, the floor's
    force (3,) N, deepest penetration m, contacts, sweeps, residual N, hook deflections (2,) m,
    the prongs' modal energy J, the plug's set point z m, the wall clock after the step s."""
    t: list = field(default_factory=list)
    z: list = field(default_factory=list)
    plug_force: list = field(default_factory=list)
    floor_force: list = field(default_factory=list)
    penetration: list = field(default_factory=list)
    contacts: list = field(default_factory=list)
    sweeps: list = field(default_factory=list)
    residual: list = field(default_factory=list)
    deflection: list = field(default_factory=list)
    prong_energy: list = field(default_factory=list)
    z_set: list = field(default_factory=list)
    wall: list = field(default_factory=list)         # s, perf_counter after the step

    def arrays(self) -> dict:
        return {k: np.array(v) for k, v in self.__dict__.items()}


def prong_energy(model: SnapModel, state: SnapState) -> float:
    """J, both prongs' elastic and kinetic energy (the coupled model's, in its modes)."""
    return sum(model.modal.energy(state.q[s], state.qd[s]) for s in (0, 1))


def record(tr: Trace, model: SnapModel, state: SnapState, info: SnapInfo, z_set: float) -> None:
    """Append one step to `tr`."""
    for name, v in (("t", state.t), ("z", state.p[2]), ("plug_force", info.plug_force),
                    ("floor_force", info.floor_force), ("penetration", info.max_penetration),
                    ("contacts", info.n_contacts), ("sweeps", info.sweeps), ("residual", info.residual),
                    ("deflection", info.deflection), ("prong_energy", prong_energy(model, state)),
                    ("z_set", z_set), ("wall", time.perf_counter())):
        getattr(tr, name).append(v)


def descent(p0, speed: float, z_end: float):
    """The scripted insertion's set point: from `p0` straight down at `speed` m/s to `z_end`, then
    held; a function of time."""
    p0 = np.asarray(p0, float)
    return lambda t: np.array([p0[0], p0[1], max(p0[2] - speed * t, z_end)])


def run(model: SnapModel, p0, set_point, duration: float, on_step=None) -> tuple[SnapState, Trace]:
    """Step from rest at `p0` for `duration` s, the plug's set point `set_point(t)` at each step's
    end; each step recorded (``record``) and handed to `on_step(state, info)`."""
    state, tr = start(model, p0), Trace()
    for _ in range(int(round(duration / model.T))):
        p_set = set_point(state.t + model.T)
        state, info = step(model, state, p_set)
        record(tr, model, state, info, p_set[2])
        if on_step is not None:
            on_step(state, info)
    return state, tr
