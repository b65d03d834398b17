"""Training the contact clustering networks with CMA-ES on the contact-wrench error (seed 000
Sec. III.B, V.C): ``tightsim train clustering --task TASK --data FILE``.

Loss of a weight vector: over a batch of samples of the wrench data (``wrench_data``), the
contact wrench the simulator computes from the logged state -- detection at the logged pose
(cached: it does not depend on the weights), the learned clustering, and the seed's solver
on one PMI step with the logged external wrench, at the data's sampling period -- against
the logged contact wrench.  Error = RMS over samples of |f_sim - f_data| (N) and
|tau_sim - tau_data| / ``TORQUE_ARM`` (N), combined.

Closed loop (``--rollouts N``): every loss also runs the task's scenario from N perturbed
starts with the candidate networks alone (no safety net) and adds ``rollout_weight`` times
the mean depth past ``ROLLOUT_ALLOWANCE`` its deepest node reached (``rollout_excess``);
model selection uses N other starts.  The losses reported then include that term
(``validation_replay_loss_N`` is the replay alone).

Model selection: the training split's last episodes (``VALIDATION_FRACTION``) are kept out of
the fitting as a validation set.  At every checkpoint the distribution's mean is scored on
it, and the weights written are the best so far -- the starting point included.  (The
per-generation best is the winner of one noisy batch; measured on the peg, it got worse on
unseen episodes as its batch loss fell.)  The held-out 30 % is never seen by training.

CMA-ES (``cma``), seeded.  The population is evaluated in parallel: local processes by
default (each holds the model and the cached contact sets), or a Ray cluster when
``--ray ADDRESS`` is given (``ray_cluster``: ``auto`` joins a running one or starts a local
one; the same seed gives the same weights either way).  Every ``checkpoint_every``
generations the optimizer's state is written next to the weights, and ``--resume``
continues from it.  A progress bar shows the generation and the current best loss.
"""
from __future__ import annotations

import json
import os
import pickle
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sim_core import shapes
from sim_core.collision import broadphase, detection
from sim_core.contact import interaction_networks as clustering_in
from sim_core.contact import solvers as contact_solve
from sim_core.types import BodyPose, Contacts

ROLLOUT_ALLOWANCE = 1e-4    # m: rollout penetration up to this costs nothing (the default fallback_depth)
ROLLOUT_FIT_SEEDS = 10      # rollouts fit on perturbed starts 10, 11, ... and validate on 20, 21, ...
ROLLOUT_VAL_SEEDS = 20      # (bench/closed_loop_clustering.py uses 0-5: neither)
ROLLOUT_ABORT = 3e-3        # m: a rollout this deep has failed (the nut is through the thread); stop it there
TORQUE_ARM = 0.03          # m: torque errors count as force errors at 3 cm (the parts' radius)
VALIDATION_FRACTION = 0.15  # of the training split's samples, whole episodes, for model selection
VALIDATION_SAMPLES = 400    # evenly spread samples in contact of the validation episodes


@dataclass
class ClusteringSettings:
    generations: int = 200
    popsize: int = 0           # 0: CMA-ES's default, 4 + 3 ln n
    sigma0: float = 0.05
    batch: int = 256           # samples per loss evaluation (redrawn each generation, seeded)
    seed: int = 0
    workers: int = 0           # local processes (or Ray workers, at most the cluster's CPUs); 0: one per CPU
    checkpoint_every: int = 10
    ray: str | None = None     # Ray cluster address: auto, HOST:PORT, ray://HOST:PORT (ray_cluster)
    replay_dt: float = 0.0      # s, the step of the replay (0: the scenario's, the simulator's own step)
    detector: str | None = None  # "exact" | "neural" (None: the scenario's)
    penetration: float = 0.0    # N/m: loss weight on how much deeper a step leaves a detected node
    init: str | None = None     # weight file to start from (None: the seeded sector start)
    rollouts: int = 0           # closed-loop runs of the task's scenario per loss evaluation (perturbed starts)
    rollout_weight: float = 1e4  # N/m: loss per metre a rollout's deepest node goes past ROLLOUT_ALLOWANCE
    rollout_seconds: float = 2.5  # s of each rollout (landing, the rest on the thread, the first turns)


def model_for(data, dt: float = 0.0, detector: str | None = None):
    """The task's model stepping at `dt` (0: the scenario's step, 10 ms, which is what the
    simulator runs), with the shipped detection (or `detector`), the seed's solver, no arm
    (the part's logged state is the input)."""
    from sim_core import config as config_mod
    from sim_core.paths import scenario_path
    from sim_core.scenarios import scenario
    cfg = config_mod.load(scenario_path(data.meta["task"]))
    cfg["arm"]["robot"] = "off"
    if dt:
        cfg["scenario"]["dt"] = float(dt)
    if detector is not None:
        cfg["contact"]["detector"] = detector
    cfg["contact"]["clustering"] = "kmeans"     # the networks under test are passed in, not loaded
    cfg["parts"]["static"], cfg["parts"]["moving"] = data.meta["static"], data.meta["moving"]
    model, _ = scenario.build(cfg, f"{data.source} ({data.meta['task']})")
    return model


def prepare(model, data, idx) -> list:
    """Per sample: (state, f_ext, contact nodes, logged wrench); only samples in contact.

    When the model steps slower than the data were sampled (T = 10 ms against 1 ms), each
    sample starts a window of T / dt samples of one episode, and its external and contact
    wrenches are the window's means: one simulator step from the logged state is compared
    with the impulse the reference saw over the same time (how the seed compares its 10 ms
    simulation with measurements)."""
    from sim_core.math.so3 import quat_to_matrix
    w = max(1, int(round(model.dt / float(data.meta["dt"]))))
    out = []
    for i in idx:
        j = i + w
        if j > len(data) or data.episode[j - 1] != data.episode[i]:
            continue
        st = BodyPose(float(data.t[i]), data.p_w[i].copy(), quat_to_matrix(data.q_wb[i]),
                      np.concatenate([data.v_w[i], data.w_b[i]]))
        nodes = detected(model, st)
        if len(nodes):
            out.append((st, data.f_ext[i:j].mean(0), nodes, data.wrench[i:j].mean(0)))
    return out


def detected(model, st) -> Contacts:
    """The body's contact nodes at pose `st` (broad phase and detection, as the replay data
    were compared with before speculative prediction existed)."""
    body, shape = shapes.nodes_of(model, 0), model.shapes[0]
    reach = detection.reach(body, model.contact, st, model.dt)
    ci, x_s = broadphase.candidates(body, shape, st, model.contact.broadphase_margin, reach)
    return detection.detect(shape, x_s, reach, ci)[0]


def spread(samples: list, n: int) -> list:
    """At most n of the samples, evenly over the list (not its first n: those would be the
    earliest episodes only)."""
    if len(samples) <= n:
        return samples
    return [samples[i] for i in np.linspace(0, len(samples) - 1, n).round().astype(int)]


def wrench_errors(model, samples, clusterer) -> np.ndarray:
    """(n, 3) per sample: force error (N), torque error / TORQUE_ARM (N), and how much deeper
    the step leaves its deepest-going detected node than it was (m, first order: d + T n.v+;
    zero when no node goes deeper) -- what the representatives left free."""
    out = np.empty((len(samples), 3))
    for k, s in enumerate(samples):
        st, _, nodes, ref = s
        reps = clusterer(s)
        sol = contact_solve.solve_body(model.contact, reps, model.bodies[0], st, s[1], np.zeros((6, 6)), model.dt)
        V1, w = sol.V, sol.generalized
        e = w - ref
        r = nodes.x_w - st.p_w
        v = V1[:3] + np.cross(st.R_wb @ V1[3:], r)
        d1 = nodes.d + model.dt * np.einsum("ij,ij->i", nodes.n_w, v)
        deeper = np.maximum(np.minimum(nodes.d, 0.0) - d1, 0.0)
        out[k] = np.linalg.norm(e[:3]), np.linalg.norm(e[3:]) / TORQUE_ARM, deeper.max(initial=0.0)
    return out


def loss(model, samples, theta, pen: float = 0.0) -> float:
    return loss_of(model, samples, clustering_in.INClustering.from_vector(theta), pen)


def loss_of(model, samples, net, pen: float = 0.0) -> float:
    """RMS of the force and torque errors (N), plus `pen` (N/m) times the deepening."""
    e = wrench_errors(model, samples,
                      lambda s: clustering_in.cluster(net, s[2], s[0], s[1], model.shapes[0],
                                                                 shapes.nodes_of(model, 0).node_nb))
    return float(np.sqrt(np.mean(e[:, 0] ** 2 + e[:, 1] ** 2 + (pen * e[:, 2]) ** 2) / 2))


# --- closed-loop rollouts --------------------------------------------------------------------------

def rollout_models(task: str, seeds, seconds: float, parts: tuple[str, str] | None = None) -> list:
    """(model, start, steps) of the task's scenario from each seeded perturbed start
    (``scenario.perturbed``), the complete simulation with the default detector, for
    ``rollout_excess``.  The safety net is off there: the networks alone are judged.
    `parts`: the (static, moving) parts the networks are trained for; the scenario must
    have them."""
    from sim_core import config as config_mod
    from sim_core.paths import scenario_path
    from sim_core.scenarios import scenario
    base = config_mod.load(scenario_path(task))
    own = (base["parts"]["static"], base["parts"]["moving"])
    if seeds and parts is not None and tuple(parts) != own:
        raise ValueError(f"--rollouts runs the {task} scenario, whose parts are {own[0]} / {own[1]}, "
                         f"not {parts[0]} / {parts[1]}")
    out = []
    for seed in seeds:
        cfg = scenario.perturbed(base, int(seed))
        cfg["contact"]["clustering"] = "kmeans"          # the candidate networks are passed in
        cfg["contact"]["fallback_depth"] = 1.0   # m: never
        cfg["contact"]["impact_splits"] = 0      # nor the step's impact refinement (contact.impacts): the
                                                 # network pays for the depth it lets nodes reach at T
        model, state = scenario.build(cfg, f"{task} (rollout, perturbed start {seed})")
        out.append((model, scenario.record(cfg), state, int(round(seconds / model.dt))))
    return out


def rollout_excess(rollouts: list, net) -> float:
    """Mean over the rollouts of how far (m) the deepest detected node went past
    ``ROLLOUT_ALLOWANCE`` in closed loop with the networks `net`: what the replay loss cannot
    see, since the drift states of a closed-loop run are not in the reference data."""
    from dataclasses import replace

    from sim_core import step as step_mod
    from sim_core.scenarios import scenario
    if not rollouts:
        return 0.0
    tot = 0.0
    for model, scen, state, n in rollouts:
        m = replace(model, pairs=tuple(replace(p, clustering_net=net) for p in model.pairs),
                    contact=replace(model.contact, clustering="learned"))
        st, worst = state, 0.0
        try:
            for _ in range(n):
                inp = scenario.inputs_at(scen, st.t)
                st, info = step_mod.step(m, st, inp)
                worst = max(worst, info.max_penetration)
                if worst > ROLLOUT_ABORT or not np.all(np.isfinite(st.V)):
                    worst = max(worst, ROLLOUT_ABORT)
                    break
        except (FloatingPointError, ValueError, np.linalg.LinAlgError):   # a wild candidate broke the run
            worst = ROLLOUT_ABORT
        tot += max(0.0, worst - ROLLOUT_ALLOWANCE)
    return tot / len(rollouts)


def _full_loss(model, samples, theta, pen: float, rollouts: list, weight: float) -> float:
    """The replay loss plus `weight` (N/m) times the rollouts' mean excess penetration."""
    net = clustering_in.INClustering.from_vector(theta)
    return loss_of(model, samples, net, pen) + (weight * rollout_excess(rollouts, net) if rollouts else 0.0)


# --- parallel evaluation -------------------------------------------------------------------------

_W: dict = {}     # a worker's model and cached samples (_set_worker)


def _worker_loss(args) -> float:
    theta, pick = args
    s = _W["samples"]
    return _full_loss(_W["model"], [s[i] for i in pick], theta, _W["pen"], _W["rollouts"], _W["rollout_weight"])


def import_cma():
    """The cma package, without the warning it prints at import when matplotlib is missing
    (matplotlib serves only its ``cma.plot``, which training does not use); other warnings
    still show."""
    import warnings
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Could not import matplotlib.pyplot", category=UserWarning)
        import cma
    return cma


def train(data_path, out: Path, settings: ClusteringSettings, resume: bool = False, progress: bool = True):
    """CMA-ES on the training split of the data file; writes OUT.npz (weights), OUT.json
    (report) and OUT.cmaes (checkpoint).  Returns the report."""
    from sim_core.io.progress import Progress
    from sim_core.learning import wrench_data
    cma = import_cma()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = wrench_data.load(data_path)
    train_set, _ = data.split(0.7)
    fit_set, val_set = train_set.split(1.0 - VALIDATION_FRACTION)
    idx = np.flatnonzero(np.isin(data.episode, np.unique(fit_set.episode)))
    vidx = np.flatnonzero(np.isin(data.episode, np.unique(val_set.episode)))
    if len(vidx) == 0:
        vidx = idx                                   # a single training episode: validate on it
    model = model_for(data, settings.replay_dt, settings.detector)
    samples = prepare(model, data, idx)             # in the parent: how many touch, for batching
    val = spread(prepare(model, data, vidx[:: max(1, len(vidx) // (3 * VALIDATION_SAMPLES))]), VALIDATION_SAMPLES)
    if not samples or not val:
        raise ValueError(f"{data_path}: no training or validation sample has contact")
    rng = np.random.default_rng(settings.seed)
    pen = settings.penetration
    x0 = (clustering_in.load(settings.init, task=data.meta["task"]) if settings.init
          else clustering_in.INClustering.initial(settings.seed)).vector()
    nr, rw = settings.rollouts, settings.rollout_weight
    if nr > ROLLOUT_VAL_SEEDS - ROLLOUT_FIT_SEEDS:
        raise ValueError(f"--rollouts {nr}: at most {ROLLOUT_VAL_SEEDS - ROLLOUT_FIT_SEEDS} "
                         "(the fitting and the validation starts would overlap)")
    parts = (data.meta["static"], data.meta["moving"])
    try:
        fit_roll = rollout_models(data.meta["task"], range(ROLLOUT_FIT_SEEDS, ROLLOUT_FIT_SEEDS + nr),
                                  settings.rollout_seconds, parts)
        val_roll = rollout_models(data.meta["task"], range(ROLLOUT_VAL_SEEDS, ROLLOUT_VAL_SEEDS + nr),
                                  settings.rollout_seconds, parts)
    except ValueError as e:
        raise ValueError(f"{data_path}: {e}") from None

    def vloss(theta):       # model selection: the validation replay plus the validation rollouts
        return _full_loss(model, val, theta, pen, val_roll, rw)
    start_loss = vloss(x0)
    ckpt = out.with_suffix(".cmaes")
    if resume and ckpt.exists():
        try:                                          # a damaged checkpoint: one line, not a traceback
            es = pickle.loads(ckpt.read_bytes())
            rng = es.tightsim_rng
        except Exception as e:  # noqa: BLE001 - unpickling raises anything: all mean "not a checkpoint"
            raise ValueError(f"{ckpt}: not a readable CMA-ES checkpoint ({type(e).__name__}); delete it, "
                             "or run without --resume") from None
        prev = getattr(es, "tightsim_best", None)     # re-scored: the data, the validation samples
        best = (vloss(prev[1]), prev[1], prev[2]) if prev else (start_loss, x0, 0)
        # or the model may have changed since the checkpoint, and losses are only compared on one set
    else:
        best = (start_loss, x0, 0)    # (validation loss, weights, generation)
        opts = {"seed": settings.seed + 1, "verbose": -9}
        if settings.popsize:
            opts["popsize"] = settings.popsize
        es = cma.CMAEvolutionStrategy(x0, settings.sigma0, opts)
    n = len(samples)
    evaluate, pool = _evaluator(settings, model, samples, fit_roll)
    bar = Progress(settings.generations, f"train clustering ({data.meta['task']})") if progress else None
    t0 = time.perf_counter()
    try:
        while es.countiter < settings.generations:
            pick = rng.choice(n, size=min(settings.batch, n), replace=False)
            X = es.ask()
            f = evaluate([(np.asarray(x), pick) for x in X])
            es.tell(X, f)
            if bar:
                bar(es.countiter, f"loss {min(f):.3f} N")
            if es.countiter % settings.checkpoint_every == 0 or es.countiter >= settings.generations:
                v = vloss(np.asarray(es.mean))
                if v < best[0]:
                    best = (v, np.array(es.mean), int(es.countiter))
                es.tightsim_rng, es.tightsim_best = rng, best
                ckpt.write_bytes(pickle.dumps(es))
    finally:
        if pool is not None:
            pool.close()
    net = clustering_in.INClustering.from_vector(best[1])
    parts_by_delta = {}                          # delta -> (replay loss, rollouts' excess)
    for d in clustering_in.DELTA_GRID:           # the depth tilt's scale: a hyperparameter, on validation
        net.delta = d
        parts_by_delta[d] = (loss_of(model, val, net, pen), rollout_excess(val_roll, net))
    deltas = {d: r + rw * x for d, (r, x) in parts_by_delta.items()}
    net.delta = min(deltas, key=deltas.get)
    replay_loss, val_excess = parts_by_delta[net.delta]
    clustering_in.save(out.with_suffix(".npz"), net, data.meta["task"])
    rep = {"task": data.meta["task"], "data": str(data_path), "train_samples_in_contact": n,
           "validation_samples": len(val), "generations": int(es.countiter), "popsize": int(es.popsize),
           "best_batch_loss_N": float(es.result.fbest), "best_loss_N": float(best[0]),
           "best_generation": best[2], "start_validation_loss_N": float(start_loss),
           "penetration_weight_N_per_m": pen, "init": settings.init,
           "validation_replay_loss_N": float(replay_loss),
           "rollouts": nr, "rollout_weight_N_per_m": rw, "rollout_seconds": settings.rollout_seconds,
           "rollout_excess_m": {"fit": rollout_excess(fit_roll, net), "validation": val_excess,
                                "start_fit": rollout_excess(fit_roll,
                                                            clustering_in.INClustering.from_vector(x0)),
                                "start_validation": rollout_excess(val_roll,
                                                                   clustering_in.INClustering.from_vector(x0))}
           if nr else None,
           "delta_m": net.delta, "validation_loss_N": float(deltas[net.delta]),
           "validation_loss_by_delta_N": {f"{d:g}": round(v, 5) for d, v in deltas.items()},
           "replay_dt_s": model.dt, "detector": model.shapes[0].sdf.__class__.__name__,
           "seed": settings.seed, "seconds": round(time.perf_counter() - t0, 1)}
    out.with_suffix(".json").write_text(json.dumps(rep, indent=1) + "\n")
    return rep


def _evaluator(settings, model, samples, rollouts=()):
    """A function mapping [(theta, pick)] to losses (in the jobs' order), and what to close
    after (or None).  The model, the cached samples and the rollouts reach each worker once:
    handed to each local process as it starts, or as one Ray object each actor is built from
    (the cluster joined here unless the caller already is: ``ray_cluster.session``)."""
    pen, rw = settings.penetration, settings.rollout_weight
    if settings.ray:
        from contextlib import ExitStack

        from sim_core.learning import ray_cluster
        after = ExitStack()
        ray = after.enter_context(ray_cluster.session(settings.ray, settings.workers))
        try:
            shared = ray.put({"model": model, "samples": samples, "pen": pen, "rollouts": list(rollouts),
                              "rollout_weight": rw})
            pool = ray_cluster.ActorMap(ray, _LossActor, shared, ray_cluster.cpus(ray, settings.workers), "loss")
        except BaseException:
            after.close()
            raise
        after.callback(pool.close)         # the actors go first, then a session begun here
        return pool, after
    workers = settings.workers or os.cpu_count() or 1
    if workers <= 1:
        return (lambda jobs: [_full_loss(model, [samples[i] for i in pk], th, pen, list(rollouts), rw)
                              for th, pk in jobs]), None
    import multiprocessing as mp
    # spawned, not forked: the exact SDF's kernels run on GNU OpenMP (numba's threading layer
    # without TBB), after which a forked child is killed at its first parallel kernel; each
    # worker is handed the shared context once, as it starts
    pool = mp.get_context("spawn").Pool(workers, _set_worker, ({"model": model, "samples": samples, "pen": pen,
                                                               "rollouts": list(rollouts), "rollout_weight": rw},))
    return (lambda jobs: pool.map(_worker_loss, jobs)), pool


def _set_worker(shared: dict) -> None:
    _W.update(shared)


class _LossActor:
    """A Ray worker: holds what ``_W`` holds in a local one (``shared``, received once)."""

    def __init__(self, shared: dict):
        _set_worker(shared)

    def loss(self, theta, pick) -> float:
        return _worker_loss((theta, pick))
