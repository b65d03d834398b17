"""One physics step, ``step(model, state, inputs) -> (state, info)``: a flat list of stages.

Pipeline of seed 000 (ARCHITECTURE sec. 4):
  broad phase -> neural (or exact) SDF detection -> learned (or k-means) clustering -> block SOR with maximum
  dissipation (or the PGS baseline, config ``contact.solver``) -> PMI integration.
Each stage lives in its own module; this file only wires them and times them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import (
    broadphase,
    clustering,
    clustering_in,
    cspace,
    detection,
    drive,
    pmi,
    solver_pgs,
    solver_sor,
)
from .model import Contacts, Inputs, Model, State

# The patch clustering's last resort: a step deeper than this many times
# contact.learned_fallback_depth (0.5 mm) is clustered by k-means (deepest members) instead.
# Measured (bench/closed_loop_clustering.py, bench/fidelity.py): one of six perturbed bolting
# landings (seed 3) jams the nut's crest into the thread's start with patches alone (5.3 mm,
# skipped); k-means from 0.1 or 0.3 mm holds it, but under a 1 kN load the switch's jump
# (36 representatives to 12, warm start lost) threw the nut off its thread; from 0.5 mm both
# hold (seed 3 lands 1.4 mm deep and recovers).
PATCH_KMEANS_FACTOR = 5.0
STAGES = ("broadphase", "detection", "clustering", "cspace", "arm", "solving", "integration")


@dataclass
class StepInfo:
    """What a step measured (for summaries, benchmarks and tests)."""
    n_candidates: int = 0
    n_contacts: int = 0            # nodes closer than the speculative reach
    n_clusters: int = 0
    max_penetration: float = 0.0   # m, deepest node at the start of the step (>= 0)
    mean_penetration: float = 0.0  # m, mean depth over penetrating nodes (0 if none)
    contact_wrench: np.ndarray = field(default_factory=lambda: np.zeros(6))
    sweeps: int = 0
    contacts: Contacts | None = None   # the clustered contacts the solver used (world)
    fallback: bool = False         # learned clustering was configured, k-means clustered this step
    forces_w: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))  # (M,3) N, at each
    times: dict = field(default_factory=dict)   # stage -> seconds


class _Laps:
    """Seconds spent in each stage, measured between consecutive ``lap`` calls."""

    def __init__(self):
        self.times: dict = {}
        self._t = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.times[stage] = self.times.get(stage, 0.0) + now - self._t   # a stage may lap twice
        self._t = now


def falls_back(model: Model, n_contacts: int, max_penetration: float) -> bool:
    """The safety net, on a step whose deepest detected node is deeper than
    ``contact.learned_fallback_depth``.  Learned clustering (with more nodes than
    representatives): the step is clustered by k-means with each cluster's deepest member
    (measured, README: from a few such states the networks alone let the nut sink through the
    thread in closed loop).  Patch clustering: each group that deep adds its deepest member
    as a contact of its own (``clustering.patches``), and beyond ``PATCH_KMEANS_FACTOR``
    times that depth k-means takes the step."""
    c = model.contact
    if c.clustering == "learned":
        ok = model.clustering_net is not None and n_contacts > clustering_in.M_C
    else:
        ok = c.clustering == "patches" and model.node_patch is not None and n_contacts > 0
    return ok and max_penetration > c.fallback_depth


def cluster(model: Model, nodes: Contacts, state: State, f_ext: np.ndarray) -> Contacts:
    """The configured clustering of a detected contact set (``contact.clustering``); f_ext is
    the part's external wrench [f_w; tau_b], an input of the learned networks."""
    c = model.contact
    if c.clustering == "none":
        return nodes
    deepest = -float(nodes.d.min(initial=0.0))
    if (c.clustering == "patches" and model.node_patch is not None
            and deepest <= PATCH_KMEANS_FACTOR * c.fallback_depth):
        return clustering.patches(nodes, model.node_patch, c.clusters, model.R_ws, model.p_ws, c.fallback_depth)
    if c.clustering == "learned" and model.clustering_net is not None and not falls_back(model, len(nodes), deepest):
        return clustering_in.cluster(model.clustering_net, nodes, state, f_ext, model)   # (<= M_C nodes: themselves)
    return clustering.kmeans(nodes, c.clusters, c.normal_scale,
                             "centroid" if c.clustering == "kmeans_centroid" else "deepest")


def contacts_at(model: Model, state: State, f_ext: np.ndarray | None = None,
                laps: _Laps | None = None) -> tuple[Contacts, int, int, np.ndarray, _Laps]:
    """Broad phase, detection and clustering at a pose: (representatives, candidates, contact
    nodes, signed distances of the candidates, stage times).  f_ext: the external wrench on
    the part at this state (the learned clustering's input; zero when not given).  `laps`:
    go on timing a step whose stages began before."""
    laps = _Laps() if laps is None else laps
    reach = detection.reach(model, state)
    idx, x_s = broadphase.candidates(model, state, reach)
    laps.lap("broadphase")
    nodes, d_all = detection.detect(model, x_s, reach, idx)
    nodes = detection.predict(model, state, nodes)
    laps.lap("detection")
    reps = cluster(model, nodes, state, np.zeros(6) if f_ext is None else f_ext)
    laps.lap("clustering")
    return reps, int(idx.shape[0]), len(nodes), d_all, laps


def step_with_contacts(model: Model, state: State, inp: Inputs, reps: Contacts, d_all: np.ndarray,
                       laps: _Laps, n_candidates: int = 0, n_contacts: int = 0,
                       lin: tuple | None = None) -> tuple[State, StepInfo]:
    """The dynamics half of a step: drive, contact solving, PMI integration.  `lin`: the
    drive's (F0, B) when the caller already has it (``drive.linearize``)."""
    F0, B = drive.linearize(model, state, inp) if lin is None else lin
    # Coriolis term at the contact-free midpoint (pmi module docstring): the energy balance is
    # exact for any point; momentum is not conserved under contact impulses anyway
    w_bar = pmi.coriolis_point(model.mass, model.inertia_b, state.V, model.dt, F0, B)
    A, b = pmi.system(model.mass, model.inertia_b, state.V, model.dt, F0, B, w_bar)
    row = cspace.row_for(model, state) if model.contact.solver == "sor" else None
    laps.lap("cspace")
    V_next, wrench, sweeps, forces_w, warm = solve_contacts(model, state, reps, A, b, row)
    laps.lap("solving")
    p_next, R_next = pmi.advance(state.p_w, state.R_wb, state.V, V_next, model.dt)
    laps.lap("integration")
    info = step_info(model, reps, d_all, n_candidates, n_contacts, wrench, sweeps, forces_w, laps)
    return State(state.t + model.dt, p_next, R_next, V_next, warm), info


def solve_contacts(model: Model, state: State, reps: Contacts, A: np.ndarray, b: np.ndarray, row=None):
    """The configured solver on the part's system  A V+ = b + contact terms  (the part alone,
    or with the arm folded in): (V+, contact wrench, sweeps, forces (world), warm start for
    the next step)."""
    if model.contact.solver == "sor":
        V_next, wrench, sweeps, forces_w, lamC = solver_sor.solve_system(model, state, reps, A, b,
                                                                         warm=state.warm, cspace=row)
        return V_next, wrench, sweeps, forces_w, (reps.x_w, forces_w, lamC)
    V_next, wrench, sweeps, forces_w = solver_pgs.solve_system(model, state, reps, A, b)
    return V_next, wrench, sweeps, forces_w, None


def step_info(model: Model, reps: Contacts, d_all: np.ndarray, n_candidates: int, n_contacts: int, wrench, sweeps,
              forces_w, laps: _Laps) -> StepInfo:
    """What a step reports, from its contacts, the candidates' depths and the solve."""
    pen = -d_all[d_all < 0.0]
    deepest = float(pen.max()) if pen.size else 0.0
    return StepInfo(n_candidates=n_candidates, n_contacts=n_contacts, n_clusters=len(reps),
                    max_penetration=deepest, fallback=falls_back(model, n_contacts, deepest),
                    mean_penetration=float(pen.mean()) if pen.size else 0.0,
                    contact_wrench=wrench, sweeps=sweeps, contacts=reps, forces_w=forces_w,
                    times=laps.times)


def step(model: Model, state: State, inp: Inputs) -> tuple[State, StepInfo]:
    F0, B = drive.linearize(model, state, inp)
    reps, n_cand, n_cont, d_all, laps = contacts_at(model, state, F0 - B @ state.V)   # the drive's pull now
    return step_with_contacts(model, state, inp, reps, d_all, laps, n_cand, n_cont, (F0, B))
