"""Bolting and peg in hole: a moving part's mesh nodes against a static part's signed distance.

The builder of the two seed 000 tasks (``tasks.TASKS``): the static part (``hole``,
``bolt_M48x5``, ...) is fixed at the world origin, detected against through its exact or
neural signed distance; the moving part (``peg``, ``nut_M48x5``, ...) is one rigid body whose
contact nodes are its mesh vertices, held by the Panda (or pulled by the spring-damper drive).
Positions in ``[start]`` and ``[[waypoints]]`` are the moving part's centre of mass.

The task figures, computed from the trajectory, never prescribed by it: peg in hole -- the
insertion depth; bolting -- the advance per revolution while the nut is engaged (the drive
pushes down with a soft spring and turns the nut, and only the thread can make it advance).
"""
from __future__ import annotations

import math

import numpy as np

from sim_core import config as config_mod
from sim_core import step as step_mod
from sim_core.contact import clustering
from sim_core.contact import interaction_networks as clustering_in
from sim_core.geometry import profiles
from sim_core.geometry.assets import check_part_mesh, load_mesh
from sim_core.geometry.mesh import mass_properties, mesh_part
from sim_core.geometry.sdf import exact_sdf
from sim_core.paths import assets_dir
from sim_core.scenarios.common import arm_system, contact_params, drive_gains, set_rotation
from sim_core.shapes import SDF, Nodes
from sim_core.shapes import check as check_shapes
from sim_core.types import ContactPair, Drive, Model, RigidBody, State

STATIC_KINDS, MOVING_KINDS = profiles.STATIC_KINDS, profiles.MOVING_KINDS

# The task figures' targets: issue 1's acceptance, which tests/sim_core/scenarios checks too.
ADVANCE_TOLERANCE = 0.05     # bolting: advance per engaged turn within +-5 % of the thread's pitch
MIN_INSERTION = 30e-3        # m, peg in hole: insertion depth at least this


def _part(name: str, src: str, key: str, kinds) -> object:
    parts = profiles.all_parts()
    spec = parts.get(name)
    if spec is None or not isinstance(spec, kinds):
        allowed = ", ".join(n for n, s in parts.items() if isinstance(s, kinds))
        raise config_mod.ConfigError(f"{src}: {key}: unknown part {name!r} (one of: {allowed})")
    return spec


def _part_mesh(name: str, spec, src: str, key: str):
    """The part's mesh file in assets/parts, checked against the part before anything is
    computed from it (a stray vertex, millimetres, a collapsed mesh: one line naming the file,
    what is wrong and the config key); None when there is no file."""
    path = assets_dir() / "parts" / f"{name}.ply"
    if not path.exists():
        return None
    try:
        mesh = load_mesh(path)
        check_part_mesh(mesh, spec, str(path))
    except ValueError as e:
        raise config_mod.ConfigError(f"{e}; {key} = {name!r} in {src}") from None
    return mesh


def dims(cfg: dict, src: str = "<config>") -> tuple[dict, dict]:
    """(static, moving) dimensions of the parts (``profiles.*Spec.dimensions``, m)."""
    return (profiles.all_parts()[cfg["parts"]["static"]].dimensions(),
            profiles.all_parts()[cfg["parts"]["moving"]].dimensions())


def build(cfg: dict, src: str = "<config>") -> tuple[Model, State]:
    """The world (Model) and its start State of a validated bolting or peg-in-hole config."""
    static = _part(cfg["parts"]["static"], src, "parts.static", STATIC_KINDS)
    moving = _part(cfg["parts"]["moving"], src, "parts.moving", MOVING_KINDS)
    task = cfg["scenario"]["task"]
    want = (profiles.HoleSpec, profiles.PegSpec) if task == "peg_in_hole" else (profiles.BoltSpec, profiles.NutSpec)
    if not (isinstance(static, want[0]) and isinstance(moving, want[1])):
        raise config_mod.ConfigError(f"{src}: parts: {cfg['parts']['static']} / {cfg['parts']['moving']} "
                                     f"do not make a {task} task")
    _part_mesh(cfg["parts"]["static"], static, src, "parts.static")    # the view draws it (physics: its exact SDF)
    mesh = _part_mesh(cfg["parts"]["moving"], moving, src, "parts.moving")
    if mesh is None:                                                      # no file: the same mesh, generated
        mesh = mesh_part(moving)
    mass, com, J = mass_properties(mesh, cfg["parts"]["density"])
    sdf = exact = exact_sdf(static)
    bounds = tuple(sdf.bounds)
    if cfg["contact"]["detector"] == "neural":
        from sim_core.collision.neural_sdf import WeightsError
        from sim_core.collision.neural_sdf import load as load_weights
        name = cfg["parts"]["static"]
        try:
            sdf = load_weights(assets_dir() / "sdf" / f"{name}.npz", spec=static, part=name, probe=True)
        except WeightsError as e:
            raise config_mod.ConfigError(f"{src}: contact.detector = \"neural\": {e}") from None
    c = cfg["contact"]
    cs = None
    if c["solver"] == "sor" and c["cspace"] == "on":
        from sim_core.collision.neural_sdf import WeightsError
        from sim_core.contact import cspace
        pair = f"{cfg['parts']['static']}__{cfg['parts']['moving']}"
        try:
            cs = cspace.load(assets_dir() / "cspace" / f"{pair}.npz", digest=cspace.pair_digest(static, moving))
        except WeightsError as e:
            raise config_mod.ConfigError(f"{src}: contact.cspace = \"on\": {e}") from None
    net = None
    if c["clustering"] == "learned":
        from sim_core.io.weights import WeightsError
        try:
            net = clustering_in.load(assets_dir() / "clustering" / f"{task}.npz", task=task)
        except WeightsError as e:
            raise config_mod.ConfigError(f"{src}: contact.clustering = \"learned\": {e}") from None
    nodes = np.ascontiguousarray(mesh.vertices - com)
    body = RigidBody(name=cfg["parts"]["moving"], mass=mass, inertia_b=J, com_part=com)
    touch = Nodes(name=cfg["parts"]["moving"], body=0, nodes_b=nodes,
                  node_radius=float(np.linalg.norm(nodes, axis=1).max()),
                  node_nb=clustering_in.node_table(nodes),
                  node_patch=clustering.patch_labels(nodes, c["clusters"]) if c["clustering"] == "patches" else None)
    shape = SDF(name=cfg["parts"]["static"], sdf=sdf, sdf_exact=exact, bounds_s=bounds,
                inner_radius_s=0.5 * static.bore if isinstance(static, profiles.HoleSpec) else 0.0)
    K, D = drive_gains(cfg)
    model = Model(bodies=(body,), shapes=(shape, touch), pairs=(ContactPair(a=1, b=0, cspace=cs, clustering_net=net),),
                  contact=contact_params(c), drive=Drive(K[None], D[None]), dt=cfg["scenario"]["dt"],
                  hand_body=0)                                           # the one moving part
    check_shapes(model, src)
    if cfg["arm"]["robot"] == "panda":
        from dataclasses import replace
        model = replace(model, systems=(arm_system(cfg, K, D, body=model.hand_body),))
    st = cfg["start"]
    yaw, (tx, ty) = math.radians(st["yaw_deg"]), np.radians(st["tilt_deg"])
    state = State(0.0, np.array(st["position"], dtype=np.float64), set_rotation(yaw, tx, ty), np.zeros(6))
    return model, step_mod.start(model, state)


def peg_figures(res) -> dict:
    """Insertion depth: the hole's top face (static z = 0) minus the peg's lowest axis point,
    with its target (``MIN_INSERTION``).  `res`: a ``scenario.RunResult``."""
    body, shape = res.model.bodies[0], res.model.shapes[0]
    half = res.scen.moving_dims["length"] / 2
    R = res.final.R_wb[0]
    bottom_w = res.final.p_w[0] + R @ (np.array([0.0, 0.0, -half]) - body.com_part)
    bottom_s = shape.R_ws.T @ (bottom_w - shape.p_ws)
    depth = float(-bottom_s[2])
    return {"insertion_depth_m": depth, "task_target": f">= {MIN_INSERTION * 1e3:g} mm",
            "task_target_met": depth >= MIN_INSERTION}


def bolting_figures(res, revolutions: float = 3.0) -> dict:
    """Advance per revolution over `revolutions` turns from the moment the nut is engaged,
    with its target (the pitch +-``ADVANCE_TOLERANCE``).  `res`: a ``scenario.RunResult``.

    Engaged: the nut's lower face is at least one pitch below the bolt's end, so a full turn
    of thread is in mesh.  Advance is measured along -z (fastening) per turn of rotation.
    """
    sc = res.scen
    p = sc.static_dims["p"]
    h = sc.moving_dims["height"]
    top = sc.static_dims["length"]
    z = np.array(res.p_w)[:, 2] - res.model.bodies[0].com_part[2]        # nut frame centre height
    rot = np.array(res.rot_axis)
    engaged = np.nonzero(z - h / 2 <= top - p)[0]
    out = {"engaged_at_s": None, "advance_per_rev_m": None, "revolutions_measured": 0.0}
    if engaged.size:
        i0 = int(engaged[0])
        turned = np.abs(rot - rot[i0]) / (2 * math.pi)
        out["engaged_at_s"] = float(res.t[i0])
        after = np.nonzero(turned >= revolutions)[0]
        i1 = int(after[0]) if after.size else len(rot) - 1
        out["revolutions_measured"] = float(turned[i1])
        if turned[i1] > 0:
            out["advance_per_rev_m"] = float((z[i0] - z[i1]) / turned[i1])
    a = out["advance_per_rev_m"]
    out["task_target"] = f"{p * 1e3:g} mm/rev +-{ADVANCE_TOLERANCE * 100:g} %"
    out["task_target_met"] = a is not None and abs(a - p) <= ADVANCE_TOLERANCE * p
    return out


# ---- the summary and HUD lines (``tasks.Task.line``, ``numbers``, ``hud``) --------------------

def peg_line(fig: dict, verdict: str) -> str:
    return f"insertion depth     {fig['insertion_depth_m'] * 1e3:.2f} mm ({verdict})"


def peg_numbers(fig: dict) -> tuple[float, float]:
    """(insertion depth m, unused)."""
    return fig["insertion_depth_m"], math.nan


def peg_hud(value: float, aux: float, met: bool) -> str:
    return f"insertion {value * 1e3:.2f} mm ({'target met' if met else 'target not met'})"


def bolting_line(fig: dict, verdict: str) -> str:
    if fig["advance_per_rev_m"] is None:
        return f"engaged advance     n/a: the nut never engaged the thread ({verdict})"
    return (f"engaged advance     {fig['advance_per_rev_m'] * 1e3:.4f} mm/rev over {fig['revolutions_measured']:.2f} "
            f"rev from t = {fig['engaged_at_s']:.2f} s ({verdict})")


def bolting_numbers(fig: dict) -> tuple[float, float]:
    """(advance per revolution m, NaN before the nut engages; revolutions measured)."""
    a = fig["advance_per_rev_m"]
    return (math.nan if a is None else a), fig["revolutions_measured"]


def bolting_hud(value: float, aux: float, met: bool) -> str:
    if not math.isfinite(value):
        return "advance -- (the nut has not engaged the thread)"
    return f"advance {value * 1e3:.3f} mm/rev over {aux:.2f} rev ({'target met' if met else 'target not met'})"
