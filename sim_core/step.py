"""The step: ``step(model, state, inputs, dt) -> (state, info)``, the one function everything
that simulates calls -- the headless runner, the real-time session's physics loop, replay, the
benches, reference-data generation and training (ARCHITECTURE sec. 4).

It reads as its stages:

1. **loads** -- every body's drive and PMI block in one kernel (``systems.rigid``), and each
   system's state at the start of the step (``System.prepare``: the arm's grasp);
2. **collision** -- per contact pair, broad phase and detection (``collision.DETECTORS``);
3. **clustering** -- per pair, the configured reduction to representatives
   (``clustering.CLUSTERINGS``);
4. **C-space** -- the pair's C-space constraint row, when a network is configured (``cspace``);
5. **blocks** -- the couplings' terms (``dynamics.couplings``) and each system folded into the
   bodies' blocks (``System.fold``);
6. **solving** -- contacts of a compliant pair get seed 001's analytic normal force over the
   step and a displacement correction (``contact.compliant_stage``); the others, the
   configured solver on the Delassus operator of the contacts, island by
   island, islands joined by couplings and body-body contacts (``contact.solvers.SOLVERS``,
   ``islands``, ``solve``), each contact with its pair's material (``contact.materials``); an
   island with a contact between two bodies keeps their total momentum (``contact.body_body``);
   6a. **turns with the contacts** -- with ``[contact] turn_passes``, the couplings taken again
   at the turns the solve reached and the contacts solved again until the coupled system holds
   with them (``turn_passes``; a cable wound under tension);
   6b. **impact refinement** -- a step in which a rigid contact would gain more penetration
   than ``impact_tolerance`` is taken again as two halves (``contact.impacts``, ``halves``);
7. **integration** -- every body's pose in one kernel (``systems.rigid.advance``) and each
   system's own state (``System.advance``).

The step loops over ``Model.systems`` through one interface (``systems.base``) and names none.

``dt`` is an argument (the model's is only the default), so a variable step needs nothing else.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, fields, replace

import numpy as np

from sim_core import shapes
from sim_core.collision import batch
from sim_core.collision import detectors as collision
from sim_core.contact import (
    body_body,
    clustering,
    compliant_stage,
    cspace,
    frames,
    impacts,
    island_solvers,
    materials,
    solver_sor,
)
from sim_core.contact.solvers import SOLVERS, Solution
from sim_core.dynamics import blocktree, couplings, pmi
from sim_core.systems import rigid
from sim_core.types import WORLD, Contacts, Inputs, Model, State, Warm

_NO_COUPLINGS = np.zeros((0, 6, 6))    # A_ab of a world without couplings
_NO_COUPLINGS.flags.writeable = False

STAGES = ("broadphase", "detection", "clustering", "cspace", "systems", "solving", "integration")


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
    nodes: Contacts | None = None  # every detected node before clustering, each on its body (the
                                   # impact check's: a node no representative stands for can arrive too)


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
    capped: bool = False           # a coupled island's subsystem iteration stopped at its cap (island_solvers)
    grasp_error: float = 0.0       # m, tool-grasp distance at the start of the step
    dt: float = 0.0                # s, the step's length (what a replay must step with)
    substeps: int = 1              # steps of dt / 2^k it was taken as (contact.impacts; 1: not split)
    contact_work: float = 0.0      # J, the contacts' work over the step as PMI books it: the impulse
                                   # dt contact_wrench on the midpoint twist (V_k + V_k+1) / 2, every body
    turn_passes: int = 0           # contact passes taken solving the couplings' turns with the contacts (6a)
    turn_residual: float = 0.0     # [N; N m] largest row of the coupled system's residual at the step's
                                   # solution, the contacts in (6a; 0 where no passes are configured)


def collide(model: Model, state: State, dt: float, pull: np.ndarray | None = None,
            laps: Laps | None = None) -> Found:
    """Stages 2-3 for every pair: detection (``collision.detect``, by the pair's shape kinds)
    and, for node sets, clustering, at a state; each contact carries its pair and both bodies
    (``body``: shape a's, pushed along +n; ``other``: shape b's, or WORLD).  `pull` (B,6): the
    wrench on each body now (the learned clustering's input; zero when not given)."""
    laps = Laps() if laps is None else laps
    sets, raw, d_all, n_cand, n_cont, fell = [], [], [], 0, 0, False
    cluster = clustering.CLUSTERINGS[model.contact.clustering]
    groups, grouped = batch.plan(model)           # many capsules against one world shape: one call
    for g in groups:
        found = batch.detect(model, state, g, dt)
        sets.append(found)
        raw.append(found)
        d_all.append(found.d)
        n_cand += g.body.shape[0]
        n_cont += len(found)
    if groups:
        laps.lap("detection")
    for k in np.flatnonzero(~grouped).tolist():   # the pairs no group holds
        pair = model.pairs[k]
        a, b = model.shapes[pair.a], model.shapes[pair.b]
        pose_a, pose_b = shapes.pose(state, a.body), shapes.pose(state, b.body)
        # the pair's material: its band at detection (materials.pair_params), its index on the contacts
        params = materials.pair_params(model.contact, pair)
        det = collision.detect(a, b, params, pose_a, pose_b, dt, laps)
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
        raw.append(det.nodes.on(a.body, b.body, k))
        d_all.append(det.d_all)
        n_cand += det.n_candidates
        n_cont += len(det.nodes)
    d = d_all[0] if len(d_all) == 1 else np.concatenate(d_all) if d_all else np.zeros(0)
    found = Contacts.concat(sets)
    if groups and len(sets) > 1:                  # the pairs' contacts in the model's pair order
        found = found.rows(np.argsort(found.pairs(), kind="stable"))
    return Found(found, d, n_cand, n_cont, fell, Contacts.concat(raw))


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


def fold_systems(model: Model, state: State, inp: Inputs, dt: float, preps, blk) -> list:
    """Each system folded into the bodies' blocks `blk` (in place): its ``System.fold`` results."""
    return [s.fold(model, state, sub, inp, dt, prep, blk) for s, sub, prep in zip(model.systems, state.systems, preps)]


def step(model: Model, state: State, inp: Inputs, dt: float | None = None,
         splits: int | None = None) -> tuple[State, StepInfo]:
    """One step of `dt` (the model's by default).  `splits`: how many more times it may be
    halved at an impact (``contact.impacts``; the model's ``impact_splits`` by default)."""
    dt = model.dt if dt is None else float(dt)
    splits = model.contact.impact_splits if splits is None else splits
    laps = Laps()
    blk = rigid.blocks(model, state, inp, dt)
    preps = [s.prepare(model, state, sub, inp, dt, blk) for s, sub in zip(model.systems, state.systems)]
    laps.lap("systems")
    found = collide(model, state, dt, blk.pull, laps)
    row = cspace_row(model, state)
    laps.lap("cspace")
    cp = model.couplings
    # theta (B,3) rad: the bodies' turns over the step, what a subsystem solver needs to take a cut
    # coupling's terms out (island_solvers); newton: the turns' Newton matrix, kept for the next step
    theta = newton = turned = None
    passes = model.contact.turn_passes if cp is not None and len(cp) else 0
    bodies = (blk.A.copy(), blk.b.copy()) if passes else None      # the bodies' blocks, no couplings yet
    if cp is None or len(cp) == 0:
        A_ab = _NO_COUPLINGS
    else:                          # the couplings' terms at the turns, from the last step's Newton matrix
        turned, _, (blk.A[...], blk.b[...], A_ab, _), newton = couplings.turns(
            cp, state.p_w, state.R_wb, state.V, dt, blk.A, blk.b,
            newton=None if state.warm is None else state.warm.newton,
            start=None if state.warm is None else state.warm.turns,
            atol=0.0 if state.warm is None else couplings.TURN_GAP_FRACTION * state.warm.turn_gap)
        if model.contact.island_solver in island_solvers.NEEDS_TURNS:
            theta = turned
    lin = (blk.A.copy(), blk.b.copy(), A_ab) if passes else None   # the system the solve sees, systems not in
    folds = fold_systems(model, state, inp, dt, preps, blk)
    laps.lap("systems")
    c = found.contacts
    on = c.bodies()
    sol = solve(model, state, c, on, blk, A_ab, row, dt, theta)
    turned_with = (0, 0.0)
    if passes and len(c):          # 6a: the turns solved with the contacts
        sol, folds, turned_with = turn_passes(model, state, inp, c, on, blk, bodies, lin, row, dt, sol, folds, preps)
    laps.lap("solving")
    if impacts.should_split(model, found.nodes, state, sol.V, dt, splits):
        return halves(model, state, inp, dt, splits - 1)
    Vn = sol.V.reshape(model.n_bodies, 6)
    gap = 0.0 if turned is None else float(np.abs(0.5 * dt * (state.V[:, 3:] + Vn[:, 3:]) - turned).max())
    warm = Warm(c.x_w, sol.forces_w, on, sol.lam_c, c.idx, sol.budget, getattr(sol, "cut", None), newton, turned, gap,
                sol.push_need)
    p, R = rigid.advance(state, Vn, dt)
    if sol.shift is not None:              # compliant contacts: the closed form's displacement
        p, R = compliant_stage.apply_shift(p, R, sol.shift)
    subs, report = [], {}
    for s, sub, fd in zip(model.systems, state.systems, folds):
        nxt_sub, rep = s.advance(model, sub, fd, Vn, dt)
        subs.append(nxt_sub)
        report.update(rep)
    nxt = State(state.t + dt, p, R, Vn, warm, tuple(subs))
    laps.lap("integration")
    info = info_of(model, found, sol, laps, dt=dt, **report)
    work = dt * float(np.sum(info.contact_wrench * (0.5 * (state.V + Vn))))
    return nxt, replace(info, contact_work=work, turn_passes=turned_with[0], turn_residual=turned_with[1])


# The contact passes stop when the coupled system's residual with the contacts (``turn_passes``)
# is below this fraction of the contacts' largest generalized force: the contact kernels' own
# accuracy at their sweep caps (PGS with subspace steps on the winding: the friction rows still
# move ~1e-4 of the forces a sweep at 100 sweeps, "Holding a coil").  Measured on the 40-link
# winding by hand (docs/cable.md "Turns with the contacts"): 2.6 passes a step, against 3.5 at 1e-8
# (the cap of 4 on 344 of 500 steps); the batch winding, under less tension, ~2.1.
TURN_PASS_TOL = 1e-3


def turn_passes(model: Model, state: State, inp: Inputs, c: Contacts, on: np.ndarray, blk, bodies, lin, row,
                dt: float, sol, folds, preps):
    """Stage 6a: the couplings' turns and the contacts solved together -- (sol, folds,
    (passes, residual)).  The solve linearized the couplings at the turns predicted without the
    contacts (``couplings.turns``); at its V+ the coupled system, taken at the turns V+ itself
    makes, is off by R = r(V+) - l(V+) (``couplings.residual_at``; l the residual of the linear
    system that was solved; the arm's fold adds terms independent of the turns, so its rows hold
    exactly).  Each pass takes the
    couplings at the last iterate (``couplings.contact_system``: the Newton matrix's positive
    semi-definite part, the right-hand side with the exact residual), folds the systems in again
    and solves the contacts, warm-started from the last forces, until |R| <= TURN_PASS_TOL of the
    contacts' largest generalized force, at most ``turn_passes`` passes; a pass whose residual
    grew ends them.  The iterate with the smallest |R| is the step's.  `bodies`: the bodies'
    blocks before the couplings; `lin`: the couplings' (A, rhs, A_ab) the first solve saw."""
    cp, B = model.couplings, model.n_bodies
    if model.contact.island_solver in island_solvers.NEEDS_TURNS:
        raise ValueError(f"step: contact.turn_passes needs island_solver direct or direct_dense, not "
                         f"{model.contact.island_solver!r} (its cut couplings are taken at the predicted turns)")
    budget = None if state.warm is None else state.warm.budget
    need = None if state.warm is None else state.warm.push_need
    best, done = None, 0
    for k in range(model.contact.turn_passes + 1):
        Vb = sol.V.reshape(B, 6)
        r = couplings.residual_at(cp, state.p_w, state.R_wb, state.V, Vb, dt, *bodies)
        R = r - couplings._residual(*lin[:2], cp.a, cp.b, lin[2], Vb)
        res = float(np.abs(R).max()) if np.all(np.isfinite(R)) else np.inf
        if best is None or res < best[0]:
            best = (res, sol, folds)
        gmax = float(np.abs(sol.generalized).max())
        if (k == model.contact.turn_passes or res <= TURN_PASS_TOL * gmax or res > best[0]
                or not math.isfinite(res) or (k == 0 and gmax == 0.0)):
            break
        M, rhs, M_ab = couplings.contact_system(cp, state.p_w, state.R_wb, state.V, Vb, dt, bodies[0], r)
        lin = (M, rhs, M_ab)
        blk.A[...], blk.b[...] = M, rhs
        folds = fold_systems(model, state, inp, dt, preps, blk)
        warm = Warm(c.x_w, sol.forces_w, on, sol.lam_c, c.idx, budget, push_need=need)
        sol = solve(model, replace(state, warm=warm), c, on, blk, M_ab, row, dt)
        done = k + 1
    return best[1], best[2], (done, best[0])


def halves(model: Model, state: State, inp: Inputs, dt: float, splits: int) -> tuple[State, StepInfo]:
    """Stage 6b: the step taken again as two steps of dt / 2 with the same inputs
    (``contact.impacts``); it ends at exactly t + dt and reports the second half's contacts and
    their forces, the halves' mean contact wrench (the step's impulse over dt), their work and
    stage times summed, the deeper penetration of the two, and its substeps."""
    mid, first = step(model, state, inp, 0.5 * dt, splits)
    end, second = step(model, mid, inp, 0.5 * dt, splits)
    times = {k: first.times.get(k, 0.0) + second.times.get(k, 0.0) for k in {*first.times, *second.times}}
    info = replace(second, dt=dt, times=times, substeps=first.substeps + second.substeps,
                   max_penetration=max(first.max_penetration, second.max_penetration),
                   contact_wrench=0.5 * (first.contact_wrench + second.contact_wrench),   # the step's impulse / dt
                   contact_work=first.contact_work + second.contact_work,
                   sweeps=max(first.sweeps, second.sweeps), capped=first.capped or second.capped,
                   turn_passes=first.turn_passes + second.turn_passes,
                   turn_residual=max(first.turn_residual, second.turn_residual))
    return replace(end, t=state.t + dt), info


def islands(n_bodies: int, on: np.ndarray, other: np.ndarray, ca: np.ndarray | None = None,
            cb: np.ndarray | None = None) -> list[np.ndarray]:
    """Groups of bodies that share a constraint: contacts between two bodies (`on`, `other`)
    and couplings between two bodies (`ca`, `cb`) join them (a body's contacts and couplings
    with the world and the systems folded into it -- the arm's grasp -- do not).  Each island
    is solved on its own, so a body's solution does not depend on what else is in the world:
    the same arithmetic as a world of that island alone (the one-world test checks two pegs
    in two holes against their single runs)."""
    a = on[other >= 0]
    b = other[other >= 0]
    if ca is not None and len(ca):
        a = np.concatenate([a, ca[ca >= 0]])
        b = np.concatenate([b, cb[ca >= 0]])
    if a.size == 0:
        return [np.array([i], np.int64) for i in range(n_bodies)]
    label, count = blocktree.components(n_bodies, a.astype(np.int64), b.astype(np.int64))
    if count == 1:
        return [np.arange(n_bodies, dtype=np.int64)]
    by = np.argsort(label, kind="stable")
    return np.split(by, np.cumsum(np.bincount(label))[:-1])



# An island of at most this many bodies and no couplings is solved in velocity space: its
# block-diagonal A inverted (6 B_i x 6 B_i, today's arithmetic) and the dense G (m,3,6 B_i).
# Larger or coupled islands are solved in contact space (``_contact_space``): A factorized on its
# blocks where the couplings form a tree (``dynamics.blocktree``), else by a sparse LU.
SMALL_ISLAND = 4


_CONTACT_FIELDS = tuple(f.name for f in fields(Contacts))


def _take(c: Contacts, rows: np.ndarray, body: np.ndarray, other: np.ndarray) -> Contacts:
    """Contacts `rows` of `c`, relabelled (body, other): every per-contact array is sliced, so a
    new per-contact field needs nothing here."""
    m = len(c)
    kw = {}
    for k in _CONTACT_FIELDS:
        v = getattr(c, k)
        kw[k] = v[rows] if isinstance(v, np.ndarray) and v.ndim and v.shape[0] == m else v
    kw.update(body=body, other=other)
    return Contacts(**kw)


def solve(model: Model, state: State, c: Contacts, on: np.ndarray, blk, A_ab, row, dt: float, theta=None):
    """Stage 6: the configured solver per island (``islands``), assembled into one solution.
    `blk` the bodies' blocks (``systems.rigid.Blocks``, the systems and couplings' diagonal
    terms in), `A_ab` (c,6,6) the couplings' off-diagonal blocks, `theta` (B,3) the turns they
    were taken at (a subsystem island solver needs them; ``contact.island_solvers``).  Contacts of a compliant
    pair get seed 001's analytic force first (``contact.compliant_stage``; a world without
    one never takes that branch)."""
    soft = compliant_stage.rows(model, c)
    if soft is not None:
        return compliant_stage.solve(model, state, c, on, blk, A_ab, row, dt, soft, solve)
    solver = SOLVERS[model.contact.solver]
    other = c.others()
    V_prev = state.V.reshape(-1)
    cp = model.couplings
    ca = cb = None
    if cp is not None and len(cp):
        ca, cb = cp.a, cp.b
    if model.n_bodies == 1 and (ca is None or not (ca >= 0).any()):
        G, Cf = frames.world_jacobians(c.x_w, c.n_w, on, other, state.p_w, state.R_wb)
        mu, beta = materials.per_contact(model, c)
        return solver(model.contact, c, G, Cf, blk.A[0], blk.b[0], V_prev, dt, state.warm, row, mu=mu, beta=beta,
                      nexp=materials.exponents(model, c))
    groups = islands(model.n_bodies, on, other, ca, cb)
    n, m = 6 * model.n_bodies, len(c)
    V, gen = np.empty(n), np.zeros(n)
    lam, forces = np.zeros((m, 3)), np.zeros((m, 3))
    sweeps, lam_c, capped, cut = 0, 0.0, False, None
    island = island_solvers.ISLAND_SOLVERS[model.contact.island_solver]
    old = None if state.warm is None else state.warm.budget
    budget = np.zeros(model.n_bodies) if old is None else old.copy()
    old = None if state.warm is None else state.warm.push_need
    need = np.full(model.n_bodies, -np.inf) if old is None or len(old) != model.n_bodies else old.copy()
    local = np.full(model.n_bodies, -1, np.int64)
    for g in groups:
        local[:] = -1
        local[g] = np.arange(g.size)
        cols = (6 * g[:, None] + np.arange(6)).ravel()
        rows = np.flatnonzero(local[on] >= 0)
        # the island as a world of its own: its bodies renumbered from 0
        sub = _take(c, rows, local[on[rows]],
                    np.where(other[rows] >= 0, local[np.maximum(other[rows], 0)], other[rows]))
        warm = None
        if state.warm is not None:
            keep = local[state.warm.body] >= 0
            node = None if state.warm.node is None else state.warm.node[keep]   # the node rows: the warm
            warm = Warm(state.warm.x_w[keep], state.warm.f_w[keep], local[state.warm.body[keep]], state.warm.lam_c,
                        node, budget[g], push_need=need[g])                  # start a world of the island has
        row_g = None
        if row is not None and np.any(row[0][cols]):
            row_g = (row[0][cols], row[1])
        kc = np.zeros(0, np.int64) if ca is None else np.flatnonzero((local[cb] >= 0) & (ca >= 0))
        if kc.size == 0 and g.size <= SMALL_ISLAND and body_body.applies(sub):
            # body-body contacts: rows that keep the total momentum (contact.body_body)
            s = body_body.solve(model, state, solver, sub, g, blk, V_prev[cols], dt, warm, row_g)
            V[cols], gen[cols] = s.V, s.generalized
        elif kc.size == 0 and g.size <= SMALL_ISLAND:
            A = np.zeros((cols.size, cols.size))
            for j in range(g.size):
                A[6 * j:6 * j + 6, 6 * j:6 * j + 6] = blk.A[g[j]]
            G, Cf = frames.world_jacobians(sub.x_w, sub.n_w, sub.body, sub.other, state.p_w[g], state.R_wb[g])
            mu, beta = materials.per_contact(model, sub)
            s = solver(model.contact, sub, G, Cf, A, blk.b[g].ravel(), V_prev[cols], dt, warm, row_g, mu=mu, beta=beta,
                       nexp=materials.exponents(model, sub))
            V[cols], gen[cols] = s.V, s.generalized
        else:
            if row_g is not None:
                raise ValueError("step.solve: a C-space row on a coupled or large island is not supported")
            s, V[cols], gen[cols] = island(model, state, solver, sub, g, blk, local[ca[kc]], local[cb[kc]],
                                           A_ab[kc], V_prev[cols], dt, warm, kc, theta)
            if s.cut is not None:          # this island's cut couplings' forces, by the couplings' index
                cut = np.zeros((len(cp), 6)) if cut is None else cut
                cut[kc] = s.cut
        lam[rows], forces[rows] = s.lam, s.forces_w
        sweeps, lam_c, capped = max(sweeps, s.sweeps), lam_c + s.lam_c, capped or s.capped
        if s.budget is not None:
            budget[g] = s.budget
        if s.push_need is not None:
            need[g] = s.push_need
    return Solution(V, lam, forces, gen, sweeps, lam_c, budget, capped=capped, cut=cut, push_need=need)


def info_of(model: Model, found: Found, sol, laps: Laps, tau=None, grasp_error: float = 0.0,
            dt: float = 0.0, wrench=None, max_penetration: float = 0.0, n_contacts: int = 0,
            sweeps: int = 0) -> StepInfo:
    # what the systems report (``systems.base.System.advance``): tau, grasp_error (the arm's);
    # a system with contacts of its own (the snap socket's): their wrench (B,6) on the bodies,
    # deepest penetration m, contacts, sweeps -- joined to the core's own
    """What a step reports, from its contacts, the candidates' depths and the solve."""
    tau = np.zeros(0) if tau is None else tau
    pen = -found.d_all[found.d_all < 0.0]
    gen = sol.generalized.reshape(model.n_bodies, 6)
    return StepInfo(n_candidates=found.n_candidates, n_contacts=found.n_contacts + n_contacts,
                    n_clusters=len(found.contacts) + n_contacts,
                    max_penetration=max(float(pen.max()) if pen.size else 0.0, max_penetration),
                    mean_penetration=float(pen.mean()) if pen.size else 0.0,
                    fallback=found.fallback, contact_wrench=gen if wrench is None else gen + wrench,
                    sweeps=max(sol.sweeps, sweeps), contacts=found.contacts, forces_w=sol.forces_w,
                    times=laps.times, tau=tau, grasp_error=grasp_error, dt=dt,
                    capped=getattr(sol, "capped", False))


def start(model: Model, state: State) -> State:
    """A start state made whole: each system's sub-state at the bodies' start poses (the arm:
    the configuration holding its body, at rest, no controller latch yet).  It also loads the
    kernels a step first calls from Python only later in a run (``pmi.advance``, the edge
    prediction's look-ahead, ``detection.predict``; the warm start's node match at the second
    step in contact): a cached kernel is loaded on its first call, ~10 ms, which would land in
    a step mid-run (the peg's step 31) instead of here."""
    if model.n_bodies:
        pmi.advance(state.p_w[0], state.R_wb[0], state.V[0], state.V[0], float(model.dt))
        solver_sor.warm_start_kernels()
    if not model.systems:
        return state
    return replace(state, systems=tuple(s.start(model, state) for s in model.systems))
