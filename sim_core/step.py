"""The step: ``step(model, state, inputs, dt) -> (state, info)``, the one function everything
that simulates calls -- the headless runner, the real-time session's physics loop, replay, the
benches, reference-data generation and training (ARCHITECTURE sec. 4).

It reads as its stages:

1. **loads** -- each body's drive (or the arm's grasp) at the start of the step (``dynamics``);
2. **collision** -- per contact pair, broad phase and detection (``collision.DETECTORS``);
3. **clustering** -- per pair, the configured reduction to representatives
   (``clustering.CLUSTERINGS``);
4. **C-space** -- the pair's C-space constraint row, when a network is configured (``cspace``);
5. **blocks** -- every body's PMI block, the arm folded in (``dynamics.assemble``);
6. **solving** -- the configured solver on the Delassus operator of the contacts, island by
   island (``contact_solve.SOLVERS``, ``islands``);
7. **integration** -- poses and the arm's joints (``dynamics.integrate``).

``dt`` is an argument (the model's is only the default), so a variable step needs nothing else.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from sim_core import shapes
from sim_core.collision import detectors as collision
from sim_core.contact import clustering, cspace
from sim_core.contact.solver_pgs import world_jacobians
from sim_core.contact.solvers import SOLVERS, Solution
from sim_core.dynamics import blocks as dynamics
from sim_core.types import WORLD, Contacts, Inputs, Model, State, Warm

STAGES = ("broadphase", "detection", "clustering", "cspace", "arm", "solving", "integration")


class Laps:
    """Wall time per stage of one step (s)."""

    def __init__(self):
        self.times: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.times[stage] = self.times.get(stage, 0.0) + now - self._t   # a stage may lap twice
        self._t = now


@dataclass
class Found:
    """The contacts of every pair at a state."""
    contacts: Contacts             # the representatives of all pairs, each on its body
    d_all: np.ndarray              # (k,) m, signed distances of all candidates
    n_candidates: int
    n_contacts: int                # detected nodes, all pairs
    fallback: bool                 # some pair's clustering safety net acted


@dataclass
class StepInfo:
    n_candidates: int
    n_contacts: int                # detected nodes
    n_clusters: int                # representatives handed to the solver
    max_penetration: float         # m, deepest candidate (>= 0)
    mean_penetration: float        # m, mean over penetrating candidates
    fallback: bool                 # the clustering's safety net acted
    contact_wrench: np.ndarray     # (B,6) per body [f world N; tau body N m]
    sweeps: int
    contacts: Contacts
    forces_w: np.ndarray           # (m,3) N at the contacts, world
    times: dict = field(default_factory=dict)
    tau: np.ndarray = field(default_factory=lambda: np.zeros(0))   # (nv,) N m, the arm's motor torques
    grasp_error: float = 0.0       # m, tool-grasp distance at the start of the step
    dt: float = 0.0                # s, the step's length (what a replay must step with)


def collide(model: Model, state: State, dt: float, pull: np.ndarray | None = None,
            laps: Laps | None = None) -> Found:
    """Stages 2-3 for every pair: detection (``collision.detect``, by the pair's shape kinds)
    and, for node sets, clustering, at a state; each contact carries its pair and both bodies
    (``body``: shape a's, pushed along +n; ``other``: shape b's, or WORLD).  `pull` (B,6): the
    wrench on each body now (the learned clustering's input; zero when not given)."""
    laps = Laps() if laps is None else laps
    sets, d_all, n_cand, n_cont, fell = [], [], 0, 0, False
    cluster = clustering.CLUSTERINGS[model.contact.clustering]
    for k, pair in enumerate(model.pairs):
        a, b = model.shapes[pair.a], model.shapes[pair.b]
        pose_a, pose_b = shapes.pose(state, a.body), shapes.pose(state, b.body)
        det = collision.detect(a, b, model.contact, pose_a, pose_b, dt, laps)
        laps.lap("detection")
        if det.manifold:
            found = det.nodes
        else:                      # a node set against a signed distance, in either order
            (nodes, at), (sdf, at_b) = ((a, pose_a), (b, pose_b)) if a.kind == "nodes" else ((b, pose_b), (a, pose_a))
            f = np.zeros(6) if pull is None or nodes.body == WORLD else pull[nodes.body]
            out = cluster(nodes, shapes.placed(sdf, at_b), pair, model.contact, det.nodes, at, f)
            found = out.contacts
            fell |= out.fallback
        laps.lap("clustering")
        sets.append(found.on(a.body, b.body, k))
        d_all.append(det.d_all)
        n_cand += det.n_candidates
        n_cont += len(det.nodes)
    d = d_all[0] if len(d_all) == 1 else np.concatenate(d_all) if d_all else np.zeros(0)
    return Found(Contacts.concat(sets), d, n_cand, n_cont, fell)


def cspace_row(model: Model, state: State):
    """The configured C-space constraint as a row over all n velocity coordinates, or None."""
    if model.contact.solver != "sor":
        return None
    for pair in model.pairs:
        if pair.cspace is not None:
            i, shape = model.shapes[pair.a].body, model.shapes[pair.b]
            row = cspace.row_for(pair.cspace, model.bodies[i], shape, state.body(i))
            if row is None:
                return None
            N = np.zeros(6 * model.n_bodies)
            N[6 * i:6 * i + 6] = row[0]
            return N, row[1]
    return None


def step(model: Model, state: State, inp: Inputs, dt: float | None = None) -> tuple[State, StepInfo]:
    dt = model.dt if dt is None else float(dt)
    laps = Laps()
    loads = dynamics.loads(model, state, inp, dt)
    laps.lap("arm")
    found = collide(model, state, dt, loads.pull, laps)
    row = cspace_row(model, state)
    laps.lap("cspace")
    system = dynamics.assemble(model, state, inp, dt, loads)
    laps.lap("arm")
    c = found.contacts
    on = c.bodies()
    sol = solve(model, state, c, on, system, row, dt)
    laps.lap("solving")
    warm = Warm(c.x_w, sol.forces_w, on, sol.lam_c, c.idx, sol.budget)
    if system.arm is None:
        nxt, tau, grasp = dynamics.integrate(model, state, sol.V, dt, warm), np.zeros(0), 0.0
    else:
        qd, tau = dynamics.arm_after(system.arm, sol.V.reshape(-1, 6)[model.arm.body])
        nxt = dynamics.integrate(model, state, sol.V, dt, warm, qd, system.arm.flange_home,
                                 system.arm.grip_turn)
        grasp = system.arm.grasp_error
    laps.lap("integration")
    return nxt, info_of(model, found, sol, laps, tau, grasp, dt)


def islands(n_bodies: int, on: np.ndarray, other: np.ndarray) -> list[np.ndarray]:
    """Groups of bodies that share a constraint: contacts between two bodies join them (a
    body's contacts with the world and its own couplings -- the arm's grasp -- do not).  Each
    island is solved on its own, so a body's solution does not depend on what else is in the
    world: the same arithmetic as a world of that island alone (the one-world test checks
    two pegs in two holes against their single runs)."""
    parent = list(range(n_bodies))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for a, b in zip(on[other >= 0], other[other >= 0]):
        parent[root(int(a))] = root(int(b))
    groups: dict[int, list[int]] = {}
    for i in range(n_bodies):
        groups.setdefault(root(i), []).append(i)
    return [np.array(g, np.int64) for g in groups.values()]


def solve(model: Model, state: State, c: Contacts, on: np.ndarray, system, row, dt: float):
    """Stage 6: the configured solver per island (``islands``), assembled into one solution."""
    solver = SOLVERS[model.contact.solver]
    other = c.others()
    V_prev = state.V.reshape(-1)
    if model.n_bodies == 1:
        G, Cf = world_jacobians(c.x_w, c.n_w, on, other, state.p_w, state.R_wb)
        return solver(model.contact, c, G, Cf, system.A, system.b, V_prev, dt, state.warm, row)
    groups = islands(model.n_bodies, on, other)
    n, m = 6 * model.n_bodies, len(c)
    V, gen = np.empty(n), np.zeros(n)
    lam, forces = np.zeros((m, 3)), np.zeros((m, 3))
    sweeps, lam_c = 0, 0.0
    old = None if state.warm is None else state.warm.budget
    budget = np.zeros(model.n_bodies) if old is None else old.copy()
    local = np.full(model.n_bodies, -1, np.int64)
    for g in groups:
        local[:] = -1
        local[g] = np.arange(g.size)
        cols = (6 * g[:, None] + np.arange(6)).ravel()
        rows = np.flatnonzero(local[on] >= 0)
        # the island as a world of its own: its bodies renumbered from 0
        sub = Contacts(c.x_w[rows], c.n_w[rows], c.d[rows], None, local[on[rows]],
                       np.where(other[rows] >= 0, local[np.maximum(other[rows], 0)], other[rows]))
        G, Cf = world_jacobians(sub.x_w, sub.n_w, sub.body, sub.other, state.p_w[g], state.R_wb[g])
        warm = None
        if state.warm is not None:
            keep = local[state.warm.body] >= 0
            warm = Warm(state.warm.x_w[keep], state.warm.f_w[keep], local[state.warm.body[keep]], state.warm.lam_c,
                        budget=budget[g])
        row_g = None
        if row is not None and np.any(row[0][cols]):
            row_g = (row[0][cols], row[1])
        s = solver(model.contact, sub, G, Cf, system.A[np.ix_(cols, cols)], system.b[cols], V_prev[cols], dt,
                   warm, row_g)
        V[cols], gen[cols] = s.V, s.generalized
        lam[rows], forces[rows] = s.lam, s.forces_w
        sweeps, lam_c = max(sweeps, s.sweeps), lam_c + s.lam_c
        if s.budget is not None:
            budget[g] = s.budget
    return Solution(V, lam, forces, gen, sweeps, lam_c, budget)


def info_of(model: Model, found: Found, sol, laps: Laps, tau=None, grasp_error: float = 0.0,
            dt: float = 0.0) -> StepInfo:
    """What a step reports, from its contacts, the candidates' depths and the solve."""
    tau = np.zeros(0) if tau is None else tau
    pen = -found.d_all[found.d_all < 0.0]
    return StepInfo(n_candidates=found.n_candidates, n_contacts=found.n_contacts, n_clusters=len(found.contacts),
                    max_penetration=float(pen.max()) if pen.size else 0.0,
                    mean_penetration=float(pen.mean()) if pen.size else 0.0,
                    fallback=found.fallback, contact_wrench=sol.generalized.reshape(model.n_bodies, 6),
                    sweeps=sol.sweeps, contacts=found.contacts, forces_w=sol.forces_w, times=laps.times,
                    tau=tau, grasp_error=grasp_error, dt=dt)


def start(model: Model, state: State) -> State:
    """A start state made whole: the arm (if any) at the configuration holding its body, at
    rest, with no controller latch yet."""
    if model.arm is None:
        return state
    from dataclasses import replace
    i = model.arm.body
    q = dynamics.arm_start(model.arm, state.R_wb[i], state.p_w[i])
    return replace(state, q=q, qd=np.zeros(model.arm.arm.nv), flange_home=None, grip_turn=None)
