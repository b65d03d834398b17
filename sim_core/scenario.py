"""Scenarios: from a validated config to a Model, the set-pose trajectory, and a headless run.

The moving part follows waypoints through the spring-damper drive (``drive.py``); what the
run measures -- penetration, axial advance, rotation about the axis, and the task figures
(peg insertion depth; nut advance per revolution while engaged) -- is computed here from the
trajectory, never prescribed by it: the bolting drive pushes down with a soft spring and
turns the nut, and only the thread contact can make it advance.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from . import config as config_mod
from . import broadphase, clustering, clustering_in, pipeline
from .geometry import profiles
from .geometry.assets import load_mesh
from .geometry.mesh import mass_properties, mesh_part
from .geometry.sdf import exact_sdf
from .math3d import matrix_to_quat, rot_axis_angle
from .model import ContactParams, Inputs, Model, State
from .paths import assets_dir, scenario_path

STATIC_KINDS, MOVING_KINDS = profiles.STATIC_KINDS, profiles.MOVING_KINDS


def set_rotation(yaw: float, tilt_x: float, tilt_y: float) -> np.ndarray:
    """R = Rz(yaw) Ry(tilt_y) Rx(tilt_x) (radians)."""
    return (rot_axis_angle([0, 0, 1], yaw) @ rot_axis_angle([0, 1, 0], tilt_y)
            @ rot_axis_angle([1, 0, 0], tilt_x))


def _part(name: str, src: str, key: str, kinds) -> object:
    parts = profiles.all_parts()
    spec = parts.get(name)
    if spec is None or not isinstance(spec, kinds):
        allowed = ", ".join(n for n, s in parts.items() if isinstance(s, kinds))
        raise config_mod.ConfigError(f"{src}: {key}: unknown part {name!r} (one of: {allowed})")
    return spec


def _moving_mesh(name: str, spec):
    """The shipped mesh if present, else the same mesh generated in memory."""
    path = assets_dir() / "parts" / f"{name}.ply"
    if path.exists():
        return load_mesh(path)
    return mesh_part(spec)


def build(cfg: dict, src: str = "<config>") -> tuple[Model, State]:
    """Model and initial State of a validated scenario config."""
    static = _part(cfg["parts"]["static"], src, "parts.static", STATIC_KINDS)
    moving = _part(cfg["parts"]["moving"], src, "parts.moving", MOVING_KINDS)
    task = cfg["scenario"]["task"]
    want = (profiles.HoleSpec, profiles.PegSpec) if task == "peg_in_hole" else (profiles.BoltSpec, profiles.NutSpec)
    if not (isinstance(static, want[0]) and isinstance(moving, want[1])):
        raise config_mod.ConfigError(f"{src}: parts: {cfg['parts']['static']} / {cfg['parts']['moving']} "
                                     f"do not make a {task} task")
    mesh = _moving_mesh(cfg["parts"]["moving"], moving)
    mass, com, J = mass_properties(mesh, cfg["parts"]["density"])
    sdf = exact = exact_sdf(static)
    bounds = tuple(sdf.bounds)
    if cfg["contact"]["detector"] == "neural":
        from .neural_sdf import WeightsError, load as load_weights
        name = cfg["parts"]["static"]
        try:
            sdf = load_weights(assets_dir() / "sdf" / f"{name}.npz", spec=static, part=name)
        except WeightsError as e:
            raise config_mod.ConfigError(f"{src}: contact.detector = \"neural\": {e}") from None
    c = cfg["contact"]
    cs = None
    if c["solver"] == "sor" and c["cspace"] == "on":
        from . import cspace
        from .neural_sdf import WeightsError
        pair = f"{cfg['parts']['static']}__{cfg['parts']['moving']}"
        try:
            cs = cspace.load(assets_dir() / "cspace" / f"{pair}.npz", digest=cspace.pair_digest(static, moving))
        except WeightsError as e:
            raise config_mod.ConfigError(f"{src}: contact.cspace = \"on\": {e}") from None
    net = None
    if c["clustering"] == "learned":
        from .weights import WeightsError
        try:
            net = clustering_in.load(assets_dir() / "clustering" / f"{task}.npz", task=task)
        except WeightsError as e:
            raise config_mod.ConfigError(f"{src}: contact.clustering = \"learned\": {e}") from None
    dr = cfg["drive"]
    wps = cfg["waypoints"]
    model = Model(
        name=cfg["scenario"]["name"], task=task, dt=cfg["scenario"]["dt"],
        mass=mass, inertia_b=J, nodes_b=np.ascontiguousarray(mesh.vertices - com), com_part=com,
        sdf=sdf, sdf_exact=exact, bounds_s=bounds,
        inner_radius_s=0.5 * static.bore if isinstance(static, profiles.HoleSpec) else 0.0, R_ws=np.eye(3), p_ws=np.zeros(3),
        contact=ContactParams(mu=c["friction"], clusters=c["clusters"], band=c["band"],
                              margin=c["broadphase_margin"], normal_scale=c["normal_scale"],
                              beta=c["penetration_gain"], pgs_iterations=c["pgs_iterations"],
                              pgs_tolerance=c["pgs_tolerance"], solver=c["solver"],
                              sor_relaxation=c["sor_relaxation"], sor_iterations=c["sor_iterations"],
                              sor_tolerance=c["sor_tolerance"], clustering=c["clustering"],
                              fallback_depth=c["learned_fallback_depth"], speculative=c["speculative"]),
        K=np.array([*dr["stiffness_linear"], *dr["stiffness_angular"]]),
        D=np.array([*dr["damping_linear"], *dr["damping_angular"]]),
        waypoints_t=np.array([w["t"] for w in wps]),
        waypoints_p=np.array([w["position"] for w in wps]),
        waypoints_rot=np.radians([[w["yaw_deg"], *w["tilt_deg"]] for w in wps]),
        node_radius=float(np.linalg.norm(mesh.vertices - com, axis=1).max()),
        static_dims=static.dimensions(), moving_dims=moving.dimensions(), cspace=cs,
        node_nb=clustering_in.node_table(mesh.vertices - com), clustering_net=net,
        node_patch=(clustering.patch_labels(mesh.vertices - com, c["clusters"])
                    if c["clustering"] == "patches" else None),
    )
    if cfg["arm"]["robot"] == "panda":
        from .complete import make_setup
        model = replace(model, arm=make_setup(cfg, model))
    st = cfg["start"]
    yaw, (tx, ty) = math.radians(st["yaw_deg"]), np.radians(st["tilt_deg"])
    state = State(0.0, np.array(st["position"], dtype=np.float64), set_rotation(yaw, tx, ty), np.zeros(6))
    return model, state


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


def inputs_at(model: Model, t: float) -> Inputs:
    """Set pose and twist at time t: piecewise-linear waypoints, held after the last one."""
    ts, P, Q = model.waypoints_t, model.waypoints_p, model.waypoints_rot
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
    steps: int = 0
    step_times: list = field(default_factory=list)     # s per step (whole pipeline)
    stage_times: dict = field(default_factory=dict)    # stage -> list of s
    t: list = field(default_factory=list)              # s, after each step
    p_w: list = field(default_factory=list)            # (3,) COM position after each step
    rot_axis: list = field(default_factory=list)       # rad, accumulated rotation about the axis
    max_pen: list = field(default_factory=list)        # m per step
    mean_pen: list = field(default_factory=list)       # m per step (0 when no penetration)
    force: list = field(default_factory=list)          # N, |contact force| per step
    exact_max_pen: list = field(default_factory=list)  # m per step, by the exact SDF (neural runs)
    fallback: list = field(default_factory=list)       # per step: learned clustering handed it to k-means
    n_contacts: list = field(default_factory=list)     # detected nodes per step
    arm_q: list = field(default_factory=list)          # the arm's configuration after each step
    wall: float = 0.0
    final: State | None = None


def true_penetration(model: Model, state: State) -> float:
    """Deepest penetration (m, >= 0) of the moving part's nodes by the exact SDF: what a
    neural detector's own depths are checked against."""
    _, x_s = broadphase.candidates(model, state)
    if not len(x_s):
        return 0.0
    return float(max(0.0, -model.sdf_exact.query(x_s)[0].min()))


def simulate(model: Model, state: State, duration: float, on_step=None) -> RunResult:
    """Run the pipeline for `duration` seconds of simulated time, recording the figures."""
    res = RunResult(model=model, stage_times={s: [] for s in pipeline.STAGES})
    n = int(round(duration / model.dt))
    axis_w = model.R_ws[:, 2]
    rot = 0.0
    full = None
    if model.arm is not None:
        from . import complete
        full = complete.start(model.arm, state)
    w0 = time.perf_counter()
    for _ in range(n):
        inp = inputs_at(model, state.t)
        t0 = time.perf_counter()
        prev = state
        if full is not None:
            full, finfo = complete.step(model, model.arm, full, inp)
            nxt, info = full.part, finfo.step
            res.arm_q.append(full.q.copy())
        else:
            nxt, info = pipeline.step(model, state, inp)
        res.step_times.append(time.perf_counter() - t0)
        # rotation about the static axis, integrated with the midpoint angular velocity
        w_mid_w = 0.5 * (state.R_wb @ state.V[3:] + nxt.R_wb @ nxt.V[3:])
        rot += model.dt * float(w_mid_w @ axis_w)
        state = nxt
        for s in pipeline.STAGES:
            res.stage_times[s].append(info.times.get(s, 0.0))
        res.t.append(state.t)
        res.p_w.append(state.p_w.copy())
        res.rot_axis.append(rot)
        res.max_pen.append(info.max_penetration)
        res.mean_pen.append(info.mean_penetration)
        res.fallback.append(info.fallback)
        res.n_contacts.append(info.n_contacts)
        res.force.append(float(np.linalg.norm(info.contact_wrench[:3])))
        if model.sdf is not model.sdf_exact and model.sdf_exact is not None:
            res.exact_max_pen.append(true_penetration(model, state))   # outside the timing
        if on_step is not None:
            on_step(prev, inp, state, info)
        if not np.all(np.isfinite(state.V)):
            raise FloatingPointError(f"{model.name}: simulation diverged at t = {state.t:.3f} s")
    res.wall = time.perf_counter() - w0
    res.steps = n
    res.final = state
    return res


def summarize(res: RunResult, start: State) -> dict:
    """The headless summary figures (SI units; also written by --summary-json)."""
    m = res.model
    st = np.array(res.step_times) * 1e3
    P = np.array(res.p_w)
    axis = m.R_ws[:, 2]
    final = res.final
    pen = np.array(res.mean_pen)
    out = {
        "scenario": m.name, "task": m.task, "steps": res.steps, "dt": m.dt,
        "simulated_s": res.steps * m.dt, "wall_s": res.wall,
        "step_ms_mean": float(st.mean()), "step_ms_median": float(np.median(st)),
        "step_ms_p99": float(np.percentile(st, 99)),
        "real_time_factor": res.steps * m.dt / res.wall,
        "max_penetration_m": float(max(res.max_pen)),
        "mean_penetration_m": float(pen[pen > 0].mean()) if np.any(pen > 0) else 0.0,
        "final_position_m": [float(x) for x in final.p_w],
        "final_quaternion_wxyz": [float(x) for x in matrix_to_quat(final.R_wb)],
        "axial_advance_m": float((start.p_w - final.p_w) @ axis),
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
    if m.task == "peg_in_hole":
        out.update(_peg_figures(res))
    else:
        out.update(_bolting_figures(res))
    return out


def _peg_figures(res: RunResult) -> dict:
    """Insertion depth: the hole's top face (static z = 0) minus the peg's lowest axis point."""
    m = res.model
    half = m.moving_dims["length"] / 2
    R = res.final.R_wb
    bottom_w = res.final.p_w + R @ (np.array([0.0, 0.0, -half]) - m.com_part)
    bottom_s = m.R_ws.T @ (bottom_w - m.p_ws)
    return {"insertion_depth_m": float(-bottom_s[2])}


def _bolting_figures(res: RunResult, revolutions: float = 3.0) -> dict:
    """Advance per revolution over `revolutions` turns from the moment the nut is engaged.

    Engaged: the nut's lower face is at least one pitch below the bolt's end, so a full turn
    of thread is in mesh.  Advance is measured along -z (fastening) per turn of rotation.
    """
    m = res.model
    p = m.static_dims["p"]
    h = m.moving_dims["height"]
    top = m.static_dims["length"]
    z = np.array(res.p_w)[:, 2] - m.com_part[2]        # nut frame centre height
    rot = np.array(res.rot_axis)
    engaged = np.nonzero(z - h / 2 <= top - p)[0]
    out = {"engaged_at_s": None, "advance_per_rev_m": None, "revolutions_measured": 0.0}
    if engaged.size == 0:
        return out
    i0 = int(engaged[0])
    turned = np.abs(rot - rot[i0]) / (2 * math.pi)
    out["engaged_at_s"] = float(res.t[i0])
    after = np.nonzero(turned >= revolutions)[0]
    i1 = int(after[0]) if after.size else len(rot) - 1
    out["revolutions_measured"] = float(turned[i1])
    if turned[i1] > 0:
        out["advance_per_rev_m"] = float((z[i0] - z[i1]) / turned[i1])
    return out
