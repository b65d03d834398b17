"""Scenarios: from a validated config to a Model, the set-pose trajectory, and a headless run.

A scenario builds a world (``types.Model``: one moving part, its shapes -- the static part's
signed distance (shape 0, on the world) and the moving part's contact nodes (shape 1) -- their
contact pair, the arm or the drive) by its task's builder in the table ``tasks.TASKS``
(``mesh_parts`` for bolting and peg in hole, ``docking``), and keeps what is not physics -- the
task, the waypoints, the parts' dimensions, the duration -- in a ``Scenario`` record.  The
moving part follows the waypoints (through the arm, or the spring-damper drive of
``dynamics``); what the run measures -- penetration, axial advance, rotation about the axis,
and the task figure (the task's ``figures`` in the table) -- is computed from the trajectory,
never prescribed by it: the bolting drive pushes down with a soft spring and turns the nut,
and only the thread contact can make it advance.  ``scene`` puts several scenarios' parts in
one world.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from sim_core import config as config_mod
from sim_core import step as step_mod
from sim_core.collision import broadphase
from sim_core.contact import interaction_networks as clustering_in
from sim_core.geometry import profiles
from sim_core.io.progress import compile_watch
from sim_core.math.so3 import matrix_to_quat, rot_axis_angle
from sim_core.paths import scenario_path
from sim_core.scenarios import tasks
from sim_core.scenarios.common import arm_system, contact_params, set_rotation  # noqa: F401 (re-exported)
from sim_core.scenarios.mesh_parts import ADVANCE_TOLERANCE, MIN_INSERTION  # noqa: F401 (re-exported)
from sim_core.shapes import SDF
from sim_core.shapes import check as check_shapes
from sim_core.systems.arm.system import joints
from sim_core.types import WORLD, Drive, Inputs, Model, State

STATIC_KINDS, MOVING_KINDS = profiles.STATIC_KINDS, profiles.MOVING_KINDS
# (set_rotation, contact_params, arm_system: the builders' shared pieces, in ``common``;
# ADVANCE_TOLERANCE, MIN_INSERTION: the seed 000 tasks' targets, in ``mesh_parts``)


@dataclass(frozen=True)
class Scenario:
    """What a scenario is besides its physics: the task, the set-pose waypoints, the parts'
    dimensions (for the figures), the run's length."""
    name: str
    task: str                      # a key of tasks.TASKS: "peg_in_hole" | "bolting" | "docking"
    duration: float                # s
    waypoints_t: np.ndarray        # (W,) s
    waypoints_p: np.ndarray        # (W,3) m, set COM position (world)
    waypoints_rot: np.ndarray      # (W,3) rad: yaw about z, tilt about x, tilt about y
    static_dims: dict              # the static part's dimensions (profiles.*Spec.dimensions)
    moving_dims: dict              # the moving part's
    seat_tolerance: float = 5e-4   # m, docking: a pin's tip this close to its hole's bottom is seated
    control: object = None         # the task's controller spec (``tasks.Task.control``): it makes the set
                                   # poses in place of the waypoints; None: the waypoints


def record(cfg: dict, src: str = "<config>") -> Scenario:
    """The scenario record of a validated config."""
    task = tasks.task(cfg)
    wps = cfg["waypoints"]
    rot = np.radians([[w["yaw_deg"], *w["tilt_deg"]] for w in wps])
    pos = np.array([w["position"] for w in wps])
    static_dims, moving_dims = task.dims(cfg, src)
    if task.set_point is not None:                 # positions name another point than the COM
        com = tasks.set_point_offset(cfg, src)
        pos = pos + np.array([set_rotation(*q) @ com for q in rot])
    return Scenario(name=cfg["scenario"]["name"], task=cfg["scenario"]["task"],
                    duration=float(cfg["scenario"]["duration"]),
                    waypoints_t=np.array([w["t"] for w in wps]), waypoints_p=pos, waypoints_rot=rot,
                    static_dims=static_dims, moving_dims=moving_dims,
                    seat_tolerance=float(cfg["docking"]["seat_tolerance"]),
                    control=None if task.control is None else task.control(cfg, src))


def pair_name(model: Model, k: int) -> str:
    """Pair k's name in [pairs]: "MOVING/STATIC", its body's and its shape's names."""
    p = model.pairs[k]
    return f"{model.shapes[p.a].name}{config_mod.PAIR_SEPARATOR}{model.shapes[p.b].name}"


def with_materials(model: Model, cfg: dict, src: str) -> Model:
    """The world with each pair's material of a validated config: the [materials.NAME] its
    [pairs] entry names, or none ([contact]'s, the default); a [pairs] entry naming no pair
    of the world, or a law the solver does not solve, is a one-line ConfigError."""
    from sim_core.contact import materials
    names = [pair_name(model, k) for k in range(len(model.pairs))]
    for key in cfg.get("pairs", {}):
        if key not in names:
            raise config_mod.ConfigError(f'{src}: pairs."{key}": no such pair (this world\'s: {", ".join(names)})')
    pairs = tuple(replace(p, material=materials.from_table(cfg["materials"][cfg["pairs"][name]]))
                  if name in cfg.get("pairs", {}) else p for p, name in zip(model.pairs, names))
    model = replace(model, pairs=pairs)
    try:
        materials.check_solver(model)
    except ValueError as e:
        raise config_mod.ConfigError(f"{src}: contact.solver = {model.contact.solver!r}: {e}") from None
    return model


def build(cfg: dict, src: str = "<config>") -> tuple[Model, State]:
    """The world (Model) and its start State of a validated scenario config: the builder of
    its task in the table (``tasks.TASKS``), each pair with its material (``with_materials``)."""
    model, state = tasks.task(cfg).build(cfg, src)
    return with_materials(model, cfg, src), state


def load(name_or_path: str) -> tuple[Model, State, dict]:
    """Load, validate and build a scenario by name (``bolting``) or TOML path."""
    path = scenario_path(name_or_path)
    if not Path(path).exists():
        raise config_mod.ConfigError(f"{path}: scenario file not found")
    cfg = config_mod.load(path)
    model, state = build(cfg, str(path))
    return model, state, cfg


PERTURB_OFFSET = (0.2e-3, 1.0e-3)   # m: bolting lateral sigma; the peg's largest set-point offset (default 0.6 mm)
PERTURB_TILT = 0.7                   # deg: the peg's largest start tilt about x and y


def perturbed(cfg: dict, seed: int) -> dict:
    """A copy of a scenario config with a seeded variation of its start and waypoints (the same
    shift for all of them): bolting -- the nut's yaw uniform over a turn (the thread's phase at
    landing) and a lateral offset (sigma ``PERTURB_OFFSET[0]``); peg in hole -- the offset in a
    random direction at a radius in ``PERTURB_OFFSET[1]``'s range and tilts up to
    ``PERTURB_TILT``.  Seed 0 is the config itself.  For closed-loop robustness checks."""
    import copy
    out = copy.deepcopy(cfg)
    if seed == 0:
        return out
    rng = np.random.default_rng(seed)
    poses = [out["start"]] + out["waypoints"]
    if out["scenario"]["task"] == "bolting":
        yaw, off = float(rng.uniform(0.0, 360.0)), rng.normal(0.0, PERTURB_OFFSET[0], 2)
        for d in poses:
            d["yaw_deg"] = d.get("yaw_deg", 0.0) + yaw
            d["position"] = [d["position"][0] + off[0], d["position"][1] + off[1], d["position"][2]]
    else:
        r, a = rng.uniform(0.2e-3, PERTURB_OFFSET[1]), rng.uniform(0.0, 2 * math.pi)
        tilt = [float(t) for t in rng.uniform(-PERTURB_TILT, PERTURB_TILT, 2)]
        for d in poses:
            d["position"] = [r * math.cos(a), r * math.sin(a), d["position"][2]]
            d["tilt_deg"] = tilt
    return out


def inputs_at(scen: Scenario, t: float) -> Inputs:
    """Set pose and twist at time t: piecewise-linear waypoints, held after the last one."""
    ts, P, Q = scen.waypoints_t, scen.waypoints_p, scen.waypoints_rot
    if t <= ts[0]:
        k, s = 0, 0.0
    elif t >= ts[-1]:
        k, s = len(ts) - 2, 1.0
    else:
        k = int(np.searchsorted(ts, t, side="right") - 1)
        s = (t - ts[k]) / (ts[k + 1] - ts[k])
    p = (1 - s) * P[k] + s * P[k + 1]
    q = (1 - s) * Q[k] + s * Q[k + 1]
    moving = ts[0] <= t < ts[-1]
    span = ts[k + 1] - ts[k]
    v = (P[k + 1] - P[k]) / span if moving else np.zeros(3)
    qd = (Q[k + 1] - Q[k]) / span if moving else np.zeros(3)
    R = set_rotation(*q)
    # angular velocity of R(t) (world axes): yaw rate about z plus tilt rates about the
    # yawed/tilted x and y axes
    Rz = rot_axis_angle([0, 0, 1], q[0])
    Rzy = Rz @ rot_axis_angle([0, 1, 0], q[2])
    w = qd[0] * np.array([0.0, 0.0, 1.0]) + qd[2] * (Rz @ [0.0, 1.0, 0.0]) + qd[1] * (Rzy @ [1.0, 0.0, 0.0])
    return Inputs(p, R, v, w)


@dataclass
class RunResult:
    model: Model
    scen: Scenario
    steps: int = 0
    step_times: list = field(default_factory=list)     # s per step (whole pipeline, compilation included)
    compile_times: list = field(default_factory=list)  # s of each step spent compiling numba kernels (first run)
    stage_times: dict = field(default_factory=dict)    # stage -> list of s
    t: list = field(default_factory=list)              # s, after each step
    p_w: list = field(default_factory=list)            # (3,) the moving part's COM position after each step
    rot_axis: list = field(default_factory=list)       # rad, accumulated rotation about the axis
    max_pen: list = field(default_factory=list)        # m per step
    mean_pen: list = field(default_factory=list)       # m per step (0 when no penetration)
    force: list = field(default_factory=list)          # N, |contact force| per step
    exact_max_pen: list = field(default_factory=list)  # m per step, by the exact SDF (neural runs)
    fallback: list = field(default_factory=list)       # per step: the clustering's safety net acted
    n_contacts: list = field(default_factory=list)     # detected nodes per step
    arm_q: list = field(default_factory=list)          # the arm's configuration after each step
    control: object = None                             # the task controller's loop (its record), if any
    wall: float = 0.0
    final: State | None = None


def true_penetration(model: Model, state: State) -> float:
    """Deepest penetration (m, >= 0) of the moving parts' nodes by the exact SDF: what a
    neural detector's own depths are checked against."""
    deepest = 0.0
    from sim_core import shapes
    from sim_core.collision.detectors import detect
    for pair in model.pairs:
        a, b = model.shapes[pair.a], model.shapes[pair.b]
        pose_a, pose_b = shapes.pose(state, a.body), shapes.pose(state, b.body)
        if {a.kind, b.kind} != {"nodes", "sdf"}:     # an analytic detector's gaps are exact already
            d = detect(a, b, model.contact, pose_a, pose_b, 0.0).d_all
            deepest = max(deepest, float(-d.min(initial=0.0)))
            continue
        (nodes, at), (sdf, at_b) = ((a, pose_a), (b, pose_b)) if a.kind == "nodes" else ((b, pose_b), (a, pose_a))
        shape = shapes.placed(sdf, at_b)
        _, x_s = broadphase.candidates(nodes, shape, at, model.contact.broadphase_margin)
        if len(x_s):
            deepest = max(deepest, float(-shape.sdf_exact.query(x_s)[0].min()))
    return deepest


def static_axis(model: Model) -> np.ndarray:
    """(3,) the static part's axis, world: the z of the first shape fixed to the world (shape 0
    in the seed 000 and 004 worlds; a cable's links come first), world z without one."""
    for s in model.shapes:
        if s.body == WORLD:
            return s.R_ws[:, 2]
    return np.array([0.0, 0.0, 1.0])


def simulate(model: Model, scen: Scenario, state: State, duration: float | None = None, on_step=None,
             dt: float | None = None) -> RunResult:
    """Run the step for `duration` seconds of simulated time (default: the scenario's),
    following the waypoints, recording the figures of the moving part (body 0)."""
    res = RunResult(model=model, scen=scen, stage_times={s: [] for s in step_mod.STAGES})
    dt = model.dt if dt is None else dt
    n = int(round((scen.duration if duration is None else duration) / dt))
    axis_w = static_axis(model)
    neural = any(isinstance(s, SDF) and s.sdf is not s.sdf_exact for s in model.shapes)
    rot = 0.0
    loop = res.control = None if scen.control is None else scen.control.start()
    compiling = compile_watch()          # a first run compiles kernels inside its first steps
    w0 = time.perf_counter()
    for _ in range(n):
        inp = inputs_at(scen, state.t) if loop is None else loop.inputs(model, state, dt)
        c0, t0 = compiling.seconds, time.perf_counter()
        prev = state
        nxt, info = step_mod.step(model, state, inp, dt)
        res.step_times.append(time.perf_counter() - t0)
        res.compile_times.append(compiling.seconds - c0)
        # rotation about the static axis, integrated with the midpoint angular velocity
        w_mid_w = 0.5 * (state.R_wb[0] @ state.V[0, 3:] + nxt.R_wb[0] @ nxt.V[0, 3:])
        rot += dt * float(w_mid_w @ axis_w)
        state = nxt
        if loop is not None:
            loop.measure(state, info)
        for s in step_mod.STAGES:
            res.stage_times[s].append(info.times.get(s, 0.0))
        res.t.append(state.t)
        res.p_w.append(state.p_w[0].copy())
        res.rot_axis.append(rot)
        res.max_pen.append(info.max_penetration)
        res.mean_pen.append(info.mean_penetration)
        res.fallback.append(info.fallback)
        res.n_contacts.append(info.n_contacts)
        res.force.append(float(np.linalg.norm(info.contact_wrench[0, :3])))
        if model.systems:
            res.arm_q.append(joints(state)[0].copy())
        if neural:
            res.exact_max_pen.append(true_penetration(model, state))   # outside the timing
        if on_step is not None:
            on_step(prev, inp, state, info)
        if not np.all(np.isfinite(state.V)):
            raise FloatingPointError(f"{scen.name}: simulation diverged at t = {state.t:.3f} s")
    res.wall = time.perf_counter() - w0
    res.steps = n
    res.final = state
    return res


def summarize(res: RunResult, start: State) -> dict:
    """The headless summary figures (SI units; also written by --summary-json).

    Step times are compute times: the steps in which a first run compiled numba kernels
    (``compile_times`` > 0; compiling and writing the cache) are left out of them and
    reported as ``compile_steps`` and ``compile_s`` (their wall time).  The real-time factor
    is the simulated time of the counted steps / their summed step time: how much faster
    than real time the step runs on one free core.  ``wall_s`` is the run's wall-clock time,
    compilation and bookkeeping (such as the exact-SDF check of a neural run) included."""
    m, sc = res.model, res.scen
    every = np.array(res.step_times) * 1e3
    compiled = np.array(res.compile_times) > 0.0 if len(res.compile_times) == len(every) else np.zeros(len(every), bool)
    st = every[~compiled] if not compiled.all() else every
    axis = static_axis(m)
    final = res.final
    pen = np.array(res.mean_pen)
    dt = res.t[0] - start.t if res.t else m.dt
    out = {
        "scenario": sc.name, "task": sc.task, "steps": res.steps, "dt": dt,
        "simulated_s": res.steps * dt, "wall_s": res.wall,
        "compile_steps": int(compiled.sum()), "compile_s": float(every[compiled].sum() / 1e3),
        "step_ms_mean": float(st.mean()), "step_ms_median": float(np.median(st)),
        "step_ms_p99": float(np.percentile(st, 99)),
        "real_time_factor": len(st) * dt / (st.sum() / 1e3),
        "max_penetration_m": float(max(res.max_pen)),
        "mean_penetration_m": float(pen[pen > 0].mean()) if np.any(pen > 0) else 0.0,
        "final_position_m": [float(x) for x in final.p_w[0]],
        "final_quaternion_wxyz": [float(x) for x in matrix_to_quat(final.R_wb[0])],
        "axial_advance_m": float((start.p_w[0] - final.p_w[0]) @ axis),
        "rotation_about_axis_rad": float(res.rot_axis[-1]),
        "rotation_about_axis_rev": float(res.rot_axis[-1] / (2 * math.pi)),
        "max_contact_force_N": float(max(res.force)),
        "clustering": m.contact.clustering,
    }
    if m.contact.clustering in ("learned", "patches"):
        least = clustering_in.M_C if m.contact.clustering == "learned" else 0
        clustered = int(sum(n > least for n in res.n_contacts))
        out["learned_fallback_steps"] = int(sum(res.fallback))
        out["clustered_steps"] = clustered
    if res.exact_max_pen:
        out["max_penetration_exact_sdf_m"] = float(max(res.exact_max_pen))
    out.update(task_figures(res))
    return out


def task_figures(res: RunResult) -> dict:
    """The task figure of a run (peg: insertion depth; bolting: advance per engaged turn;
    docking: seated; ...), with its target: ``task_target`` (text) and ``task_target_met``
    (bool), and ``task`` (its name), from the task's entry in ``tasks.TASKS``.  The batch and
    the session summaries both take it from here."""
    fig = tasks.TASKS[res.scen.task].figures(res)
    fig["task"] = res.scen.task
    return fig


def task_line(fig: dict) -> str:
    """The task figure set against its target, one summary line (figures of ``task_figures``;
    the task's own part from its ``tasks.Task.line``)."""
    verdict = f"target {fig['task_target']}: {'met' if fig['task_target_met'] else 'NOT met'}"
    return tasks.TASKS[fig["task"]].line(fig, verdict)


class LiveFigures:
    """The task figure during a session, step by step, from the same ``task_figures`` the
    batch summary uses: ``update(before, after)`` after every physics step records the part's
    trajectory (its COM and its rotation about the static axis, as ``simulate`` does) and
    every ``every`` steps recomputes the figure over the whole trajectory so far (a few tens
    of microseconds on a 10-minute session; ``every`` = 10 refreshes a 100 Hz session's HUD
    at 10 Hz).  ``fields()`` packs the latest figure into the snapshot record's task fields
    (``records.SNAPSHOT``); ``hud_text`` reads them back."""

    def __init__(self, model: Model, scen: Scenario, every: int = 10, control=None):
        self.model, self.scen, self.every = model, scen, max(1, int(every))
        self.control = control         # the task's controller loop in the session (its record: the figure)
        self.axis_w = static_axis(model)
        self.n, self.rot = 0, 0.0
        self._t, self._p, self._r = np.empty(256), np.empty((256, 3)), np.empty(256)
        self.figures: dict | None = None

    def update(self, before: State, after: State) -> dict | None:
        w_mid_w = 0.5 * (before.R_wb[0] @ before.V[0, 3:] + after.R_wb[0] @ after.V[0, 3:])
        self.rot += (after.t - before.t) * float(w_mid_w @ self.axis_w)
        if self.n == len(self._t):                        # grow by doubling
            self._t, self._r = (np.concatenate([a, np.empty_like(a)]) for a in (self._t, self._r))
            self._p = np.concatenate([self._p, np.empty_like(self._p)])
        self._t[self.n], self._p[self.n], self._r[self.n] = after.t, after.p_w[0], self.rot
        self.n += 1
        if self.n % self.every == 0 or self.figures is None:
            n = self.n
            run = RunResult(model=self.model, scen=self.scen, t=self._t[:n], p_w=self._p[:n],
                            rot_axis=self._r[:n], final=after, control=self.control)
            self.figures = task_figures(run)
        return self.figures

    def fields(self) -> dict:
        """The snapshot record's task fields (``records.SNAPSHOT``) of the latest figure."""
        return task_fields(self.scen.task, self.figures)


# SNAPSHOT "task": each task's code (``tasks.Task.code``); 0: none yet
TASK_CODES = {name: t.code for name, t in tasks.TASKS.items()}


def task_fields(task: str, fig: dict | None) -> dict:
    """``task_figures``' figure as the snapshot's numbers: ``task`` (TASK_CODES), ``task_value``
    and ``task_aux`` (the task's ``tasks.Task.numbers``), ``task_met`` (1 when the target is
    met; docking: seated)."""
    if not fig:
        return {"task": 0.0, "task_value": math.nan, "task_aux": math.nan, "task_met": 0.0}
    value, aux = tasks.TASKS[task].numbers(fig)
    return {"task": TASK_CODES[task], "task_value": float(value), "task_aux": float(aux),
            "task_met": float(bool(fig["task_target_met"]))}


def hud_text(code: float, value: float, aux: float, met: float) -> str:
    """The HUD's task line from the snapshot's task fields (see ``task_fields``; the task's
    ``tasks.Task.hud``); "" when the snapshot carries no figure yet."""
    for t in tasks.TASKS.values():
        if code == t.code:
            return t.hud(value, aux, met > 0.5)
    return ""


# --- scenes: several scenarios' parts in one world -------------------------------------------
@dataclass(frozen=True)
class Scene:
    """Several scenarios' parts side by side in one world: body i and shape i are scenario
    i's moving and static part, shifted by ``offsets[i]`` (the bodies' contact nodes follow
    the static parts in ``model.shapes``); each body follows its own
    scenario's waypoints (shifted the same way)."""
    model: Model
    start: State
    parts: tuple                   # (Scenario, ...) per body
    offsets: np.ndarray            # (B,3) m, where each scenario's world origin sits


def scene(cfgs: list[dict], offsets, src: str = "<scene>") -> Scene:
    """One world of the parts of several validated scenario configs (arm off: the drive moves
    each part), scenario i's origin at ``offsets[i]``.  Their [contact] tables must agree but
    for the material keys (``config.MATERIAL_KEYS``: one set of solver settings per world);
    each pair keeps its scenario's material (its [pairs] entry, or its [contact]'s)."""
    offsets = np.asarray(offsets, dtype=np.float64).reshape(len(cfgs), 3)
    models, starts = [], []
    for k, cfg in enumerate(cfgs):
        if cfg["arm"]["robot"] != "off":
            raise config_mod.ConfigError(f"{src}: scenario {k}: arm.robot = {cfg['arm']['robot']!r}: "
                                         "a scene moves its parts by their drives (arm.robot = \"off\")")
        differ = [key for key in cfg["contact"] if key not in config_mod.MATERIAL_KEYS
                  and cfg["contact"][key] != cfgs[0]["contact"][key]]
        if differ:
            raise config_mod.ConfigError(f"{src}: scenario {k}: its [contact] table differs from scenario 0's in "
                                         f"{', '.join(differ)} (only the material keys may: "
                                         f"{', '.join(config_mod.MATERIAL_KEYS)})")
        m, s = build(cfg, f"{src} (scenario {k})")
        models.append(m)
        starts.append(s)
    # the world shapes first (scenario i's static part is shape i), shifted; then the bodies' shapes
    fixed, moving, where = [], [], []
    for k, (m, o) in enumerate(zip(models, offsets)):
        at = {}
        for j, sh in enumerate(m.shapes):
            if sh.body == WORLD:
                at[j] = ("fixed", len(fixed))
                fixed.append(replace(sh, p_bs=sh.p_bs + o))
            else:
                at[j] = ("moving", len(moving))
                moving.append(replace(sh, body=sh.body + k))
        where.append(at)

    def index(k: int, j: int) -> int:
        side, i = where[k][j]
        return i if side == "fixed" else len(fixed) + i
    default = models[0].contact.material

    def own(m: Model, p):    # the pair's material in its own world, None where it is the scene's default
        mat = m.contact.material if p.material is None else p.material
        return None if mat == default else mat
    pairs = tuple(replace(p, a=index(k, p.a), b=index(k, p.b), material=own(m, p))
                  for k, m in enumerate(models) for p in m.pairs)
    model = Model(bodies=tuple(m.bodies[0] for m in models), shapes=tuple(fixed + moving), pairs=pairs,
                  contact=models[0].contact, drive=Drive(np.vstack([m.drive.K for m in models]),
                                                         np.vstack([m.drive.D for m in models])),
                  dt=models[0].dt, hand_body=0)          # a session's hand holds scenario 0's part
    check_shapes(model, src)
    start = State(0.0, np.vstack([s.p_w for s in starts]) + offsets, np.concatenate([s.R_wb for s in starts]),
                  np.vstack([s.V for s in starts]))
    return Scene(model, start, tuple(record(c) for c in cfgs), offsets)


def scene_inputs(sc: Scene, t: float) -> Inputs:
    """Every body's set pose at time t: its scenario's waypoints, shifted by its offset."""
    each = [inputs_at(s, t) for s in sc.parts]
    return Inputs(np.vstack([i.p_set_w for i in each]) + sc.offsets, np.concatenate([i.R_set_w for i in each]),
                  np.vstack([i.v_set_w for i in each]), np.vstack([i.w_set_w for i in each]))
