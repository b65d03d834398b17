"""One physics step, ``step(model, state, inputs) -> (state, info)``: a flat list of stages.

Baseline pipeline of seed 000 Sec. V.C (ARCHITECTURE sec. 4):
  broad phase -> exact-SDF detection -> k-means clustering -> PGS -> PMI integration.
Each stage lives in its own module; this file only wires them and times them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import broadphase, clustering, detection, drive, pmi, solver_pgs
from .model import Inputs, Model, State

STAGES = ("broadphase", "detection", "clustering", "solving", "integration")


@dataclass
class StepInfo:
    """What a step measured (for summaries, benchmarks and tests)."""
    n_candidates: int = 0
    n_contacts: int = 0            # nodes with d < band
    n_clusters: int = 0
    max_penetration: float = 0.0   # m, deepest node at the start of the step (>= 0)
    mean_penetration: float = 0.0  # m, mean depth over penetrating nodes (0 if none)
    contact_wrench: np.ndarray = field(default_factory=lambda: np.zeros(6))
    sweeps: int = 0
    times: dict = field(default_factory=dict)   # stage -> seconds


def step(model: Model, state: State, inp: Inputs) -> tuple[State, StepInfo]:
    info = StepInfo()
    clock = time.perf_counter
    t0 = clock()
    reach = detection.reach(model, state)
    idx, x_s = broadphase.candidates(model, state, reach)
    t1 = clock()
    nodes, d_all = detection.detect(model, x_s, reach)
    t2 = clock()
    reps = clustering.kmeans(nodes, model.contact.clusters, model.contact.normal_scale)
    t3 = clock()
    F0, B = drive.linearize(model, state, inp)
    A, b = pmi.system(model.mass, model.inertia_b, state.V, model.dt, F0, B)
    A_inv = np.linalg.inv(A)
    V_free = A_inv @ b
    if len(reps):
        G, _ = solver_pgs.contact_jacobians(reps.x_w, reps.n_w, state.p_w, state.R_wb)
        c = model.contact
        lam, V_next, info.sweeps = solver_pgs.pgs(G, A_inv, V_free, state.V, reps.d, model.dt, c.mu, c.beta,
                                                  c.pgs_iterations, c.pgs_tolerance,
                                                  np.zeros((len(reps), 3)))
        info.contact_wrench = solver_pgs.contact_wrench(G, lam)
    else:
        V_next = V_free
    t4 = clock()
    p_next, R_next = pmi.advance(state.p_w, state.R_wb, state.V, V_next, model.dt)
    t5 = clock()

    info.times = dict(zip(STAGES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)))
    info.n_candidates = int(idx.shape[0])
    info.n_contacts = len(nodes)
    info.n_clusters = len(reps)
    pen = -d_all[d_all < 0.0]
    if pen.size:
        info.max_penetration = float(pen.max())
        info.mean_penetration = float(pen.mean())
    return State(state.t + model.dt, p_next, R_next, V_next), info
