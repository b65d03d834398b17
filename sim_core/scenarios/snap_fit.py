"""Scenario ``snap_fit`` (issue 27, seed 003): the config's socket and plug as a world of the core
(``world``: the plug a rigid body under the drive, the prongs the system
``systems.fem.snap_socket.SnapSocket``), the run, its summary and the plot of the insertion force
over depth with the floor's reaction (the seed's Figs. 7-8), and the task figure -- the head
caught under the hooks and seated -- for the summaries and the session's HUD.  ``tightsim run
snap_fit --headless`` runs ``snap_run.simulate``; a session (``--device``) and its log and replay go
through the core like every other task.  The prongs' physics is ``systems.fem.snap``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from sim_core import config as config_mod
from sim_core import step as step_mod
from sim_core.config import ConfigError
from sim_core.geometry.connector import PlugSpec, ProngSpec
from sim_core.paths import assets_dir, scenario_path
from sim_core.scenarios.common import arm_system, contact_params, drive_gains, set_rotation
from sim_core.systems.fem import prong as prong_mod
from sim_core.systems.fem import snap
from sim_core.systems.fem.assembly import Material
from sim_core.systems.fem.snap_socket import SnapSocket
from sim_core.types import Drive, Model, RigidBody, State

CLICK_LET_GO = 0.5      # the click: the hooks' mean deflection falls by this share of its peak so far
CLICK_WITHIN = 5        # steps (5 ms): ... this fast (the prongs' first mode, ~1 kHz, takes a quarter period)
SEATED_GAP = 50e-6      # m: the head's bottom this close to the seat is seated (the batch's plastic stop
                        # leaves it within snap.SEAT_TOUCH = 10 um; a hand pushing through the keyboard
                        # rests a few um above it at a light push)


def click_step(a: dict) -> int:
    """The step the hooks let go (``CLICK_LET_GO`` of their peak deflection lost within
    ``CLICK_WITHIN`` steps), or -1.  The plug's own fall is no test: a soft socket lets it follow
    its set point, with no jump."""
    d = a["deflection"].mean(axis=1)
    peak = np.maximum.accumulate(d)
    for k in range(len(d) - CLICK_WITHIN):
        if peak[k] > 0.0 and d[k] >= 0.8 * peak[k] and d[k + CLICK_WITHIN] < (1.0 - CLICK_LET_GO) * peak[k]:
            return k
    return -1


def dims(cfg: dict, src: str = "config") -> tuple[dict, dict]:
    """(socket, plug) dimensions, m."""
    so, pl = cfg["socket"], cfg["plug"]
    return ({"prong_length": so["length"], "prong_width": so["width"], "prong_thickness": so["thickness"],
             "hook_depth": so["hook_depth"], "spacing": so["spacing"], "seat": so["seat"],
             "catch": catch_height(cfg, src),
             "length": so["length"]},     # the socket's top (the prongs' tips): where scripted devices' z = 0 is
            {"head_half": pl["head_half"], "head_height": pl["head_height"], "neck_half": pl["neck_half"]})


def prong_spec(cfg: dict, src: str = "config") -> ProngSpec:
    """The [socket] table's prong; a bad one is a one-line ``ConfigError``."""
    so = cfg["socket"]
    try:
        return ProngSpec(length=so["length"], width=so["width"], thickness=so["thickness"],
                         hook_depth=so["hook_depth"], hook_top=0.2 * so["hook_depth"],
                         lead_angle=so["lead_angle"], return_angle=so["return_angle"])
    except ValueError as e:
        raise ConfigError(f"{src}: socket.{e}") from None


def plug_spec(cfg: dict, src: str = "config") -> PlugSpec:
    """The [plug] table's plug; a bad one is a one-line ``ConfigError``."""
    pl = cfg["plug"]
    try:
        return PlugSpec(head_half=pl["head_half"], head_height=pl["head_height"], chamfer=pl["chamfer"],
                        neck_half=pl["neck_half"], top=4.0 * pl["head_height"])
    except ValueError as e:
        raise ConfigError(f"{src}: plug.{e}") from None


def build(cfg: dict, src: str = "config") -> snap.SnapModel:
    """The snap model of a validated config; bad combinations as one-line ``ConfigError``s."""
    so, pl = cfg["socket"], cfg["plug"]
    spec, plug = prong_spec(cfg, src), plug_spec(cfg, src)
    if not pl["head_half"] > so["spacing"] - so["hook_depth"]:
        raise ConfigError(f"{src}: plug.head_half: {pl['head_half']:g} m does not reach the hooks "
                          f"(socket.spacing - socket.hook_depth = {so['spacing'] - so['hook_depth']:g} m): no snap")
    mat = Material(E=so["E"], nu=so["nu"], density=so["density"])
    orders = None if so["order_contact"] == 0 and so["order_foot"] == 0 else (so["order_contact"], so["order_foot"])
    try:
        pm = prong_mod.build(spec, mat, so["mesh"], orders=orders if orders is None else
                             tuple(o if o > 0 else None for o in orders))
    except ValueError as e:
        key = "socket.order_contact / socket.order_foot" if "order" in str(e) else "socket"
        raise ConfigError(f"{src}: {key}: {e}") from None
    d = cfg["drive"]
    adm = snap.Admittance(pl["mass"], tuple(d["damping_linear"]), tuple(d["stiffness_linear"]))
    return snap.build(pm, plug, spacing=so["spacing"], seat_z=so["seat"], admittance=adm,
                      mu=cfg["contact"]["friction"], T=cfg["scenario"]["dt"], sdf=plug_sdf(cfg, src))


# the connectors whose plugs ship a trained network (assets/sdf/plug_NAME.npz, ``plugs``)
SHIPPED = ("snap_fit", "snap_fit_lan", "snap_fit_cap")


def plugs() -> dict[str, PlugSpec]:
    """The shipped connectors' plugs by part name (``plug_snap_fit``, ...): what ``tightsim train
    sdf --part`` takes besides the static parts, and whose networks ``plug_sdf`` loads."""
    out = {}
    for name in SHIPPED:
        path = scenario_path(name)
        out[f"plug_{name}"] = plug_spec(config_mod.load(path), str(path))
    return out


def write_prong_meshes(folder) -> list:
    """``tightsim assets build``: the shipped connectors' prong meshes at every level, cached
    under `folder` (``connector.write_prong_mesh``); their paths."""
    from sim_core.geometry.connector import LEVELS, write_prong_mesh
    out = []
    for name in SHIPPED:
        path = scenario_path(name)
        spec = prong_spec(config_mod.load(path), str(path))
        out.extend(write_prong_mesh(folder, spec, level) for level in LEVELS)
    return out


def plug_sdf(cfg: dict, src: str = "config"):
    """The plug's signed distance as ``[contact] detector`` says: None for the exact profile (the
    detection kernel's own), else the trained network of the shipped plug of this geometry
    (seed 003's Model 2 onwards).  No network for this plug, or a bad weight file: a one-line
    ``ConfigError``."""
    if cfg["contact"]["detector"] == "exact":
        return None
    from sim_core.collision.neural_sdf import WeightsError
    from sim_core.collision.neural_sdf import load as load_weights
    spec = plug_spec(cfg, src)
    name = next((n for n, s in plugs().items() if s == spec), None)
    if name is None:
        raise ConfigError(f"{src}: contact.detector = \"neural\": no trained network for this plug (networks "
                          f"ship for the plugs of {', '.join(SHIPPED)}); use \"exact\"")
    try:
        return load_weights(assets_dir() / "sdf" / f"{name}.npz", spec=spec, part=name, probe=True)
    except WeightsError as e:
        raise ConfigError(f"{src}: contact.detector = \"neural\": {e}") from None


def world(cfg: dict, src: str = "config") -> tuple[Model, State]:
    """``tasks.TASKS``' builder: the plug a rigid body (the admittance's mass, a box's inertia of
    the plug's outline; its frame's origin at the head's bottom centre, which is also its centre of
    mass: the mass is the admittance's, not the part's) under the [drive] spring-damper -- seed 003
    eq. (5) in translation -- and the prongs as the system ``SnapSocket``."""
    sock = SnapSocket(build(cfg, src))
    pl, so = cfg["plug"], cfg["socket"]
    m, a, b, c = pl["mass"], 2.0 * pl["head_half"], so["width"], 4.0 * pl["head_height"]
    body = RigidBody("plug", m, m / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b]), np.zeros(3))
    K, D = drive_gains(cfg)
    systems = (sock,)
    if cfg["arm"]["robot"] == "panda":                     # folded first: the socket solves against the
        systems = (arm_system(cfg, K, D, body=0), sock)    # plug's block with the arm in it
    model = Model(bodies=(body,), shapes=(), pairs=(), contact=contact_params(cfg["contact"]),
                  drive=Drive(K[None], D[None]), dt=cfg["scenario"]["dt"], systems=systems, hand_body=0)
    st = cfg["start"]
    R0 = set_rotation(np.radians(st["yaw_deg"]), *np.radians(st["tilt_deg"]))
    state = State(0.0, np.array(st["position"], dtype=np.float64), R0, np.zeros(6))
    return model, step_mod.start(model, state)


def meshes(cfg: dict, src: str = "config") -> dict:
    """The view's meshes (``tasks.Task.meshes``): the plug (its frame) and the socket at rest
    (world; the view moves its prongs' vertices, ``SnapSocket.view_parts``).  Geometry only: the
    prongs' FEM is not built for it."""
    from sim_core.geometry import connector
    from sim_core.geometry.mesh import TriMesh
    so = cfg["socket"]
    spec = prong_spec(cfg, src)
    V, F, _, _ = connector.socket_surface(connector.cached_prong_mesh(spec, so["mesh"]), spec, so["spacing"],
                                          so["seat"])
    plug = connector.plug_surface(plug_spec(cfg, src), 0.6 * so["width"])
    return {SnapSocket.VIEW_NAME: TriMesh(V, F), "plug": TriMesh(*plug)}


def socket_of(model: Model) -> SnapSocket:
    """The world's ``SnapSocket``."""
    return next(s for s in model.systems if isinstance(s, SnapSocket))


def summarize(model: snap.SnapModel, tr: snap.Trace, wall: float) -> dict:
    a = tr.arrays()
    k = click_step(a)
    Fz = a["plug_force"][:, 2]
    peak = int(np.argmax(Fz[:k])) if k > 0 else int(np.argmax(Fz))
    seated = abs(a["z"][-1] - model.seat_z) <= snap.SEAT_TOUCH     # the seat's plastic stop leaves it that close
    return {
        "steps": len(a["t"]),
        "clicked": bool(k > 0),
        "click_time_s": float(a["t"][k]) if k > 0 else None,
        "peak_insertion_force_N": float(Fz[peak]),
        "peak_at_depth_m": float(a["z"][0] - a["z"][peak]),
        "max_hook_deflection_m": float(a["deflection"].max()),
        "seated": bool(seated),
        "final_plug_force_N": float(Fz[-1]),
        "final_floor_force_N": float(a["floor_force"][-1, 2]),
        "max_penetration_m": float(a["penetration"].max()),
        "max_sweeps": int(a["sweeps"].max()),
        "step_median_ms": float(np.median(np.diff(np.r_[0.0, a["wall"]])) * 1e3) if len(a["wall"]) else 0.0,
        "wall_s": wall,
    }


def catch_height(cfg: dict, src: str = "config") -> float:
    """m, world z of the hooks' catch: the top of their return faces, where they reach full depth
    (the prongs' feet are at z = 0).  The head's top below it: the hooks have closed over it."""
    spec = prong_spec(cfg, src)
    return spec.hook_bottom + spec.return_height


def figures(res) -> dict:
    """The task figure (``tasks.Task.figures``) of a run of the core (`res` a
    ``scenario.RunResult``): how far the head's top went under the hooks' catch (> 0: caught) and
    the head's bottom above the seat at the end; target: caught and seated (``SEATED_GAP``)."""
    dims_s, dims_m = res.scen.static_dims, res.scen.moving_dims
    z = np.asarray(res.p_w)[:, 2] if len(res.p_w) else np.array([res.final.p_w[0, 2]])
    under = float(dims_s["catch"] - (z.min() + dims_m["head_height"]))
    gap = float(res.final.p_w[0, 2] - dims_s["seat"])
    caught = float(dims_s["catch"] - (res.final.p_w[0, 2] + dims_m["head_height"])) > 0.0
    return {"head_under_catch_m": under, "seat_gap_m": gap, "caught": bool(caught),
            "task_target": f"head under the hooks' catch, within {SEATED_GAP * 1e6:.0f} um of the seat",
            "task_target_met": bool(caught and gap <= SEATED_GAP)}


def task_line(fig: dict, verdict: str) -> str:
    return (f"snap                head {fig['head_under_catch_m'] * 1e3:.3f} mm under the hooks' catch at its "
            f"deepest, {fig['seat_gap_m'] * 1e6:+.1f} um from the seat at the end ({verdict})")


def hud_numbers(fig: dict) -> tuple[float, float]:
    """(the head under the catch m, its gap to the seat m)."""
    return fig["head_under_catch_m"], fig["seat_gap_m"]


def hud(value: float, aux: float, met: bool) -> str:
    if met:
        return "snap: clicked and seated"
    if value <= 0.0:
        return f"snap: head {-value * 1e3:.2f} mm above the hooks' catch"
    return f"snap: clicked; {aux * 1e3:.2f} mm above the seat"


def summary_lines(s: dict) -> list[str]:
    click = f"click at {s['click_time_s']:.3f} s" if s["clicked"] else "no click"
    return [f"snap fit            {click}; {'seated' if s['seated'] else 'not seated'}",
            f"insertion force     peak {s['peak_insertion_force_N']:.2f} N at {s['peak_at_depth_m'] * 1e3:.2f} mm "
            f"of travel; hooks bent {s['max_hook_deflection_m'] * 1e3:.3f} mm",
            f"seated forces       plug {s['final_plug_force_N']:.3f} N, floor {s['final_floor_force_N']:.3f} N",
            f"penetration         max {s['max_penetration_m'] * 1e6:.2f} um; solver sweeps max {s['max_sweeps']}",
            f"steps               {s['steps']} in {s['wall_s']:.2f} s"]


def _panel(img, top: int, height: int, x, y, colour, x_grid: float, y_grid: float, pad: int = 10,
           y_top: float | None = None) -> None:
    """A line plot of y over x into rows [top, top + height) of img: 0 to `y_top` (default the
    largest y; larger values run into the top edge), grey gridlines every x_grid and y_grid,
    black axes."""
    w = img.shape[1]
    x_lo, x_hi = float(np.min(x)), float(np.max(x))
    x_hi = x_hi if x_hi > x_lo else x_lo + 1e-9
    y_hi = max(float(np.max(y)) if y_top is None else y_top, 1e-9)

    def px(xv, yv):
        c = pad + (w - 2 * pad - 1) * np.clip((np.asarray(xv) - x_lo) / (x_hi - x_lo), 0, 1)
        r = top + height - pad - 1 - (height - 2 * pad - 1) * np.clip(np.asarray(yv) / y_hi, 0, 1)
        return np.round(c).astype(int), np.round(r).astype(int)

    for g in np.arange(x_lo, x_hi, x_grid):
        img[top + pad:top + height - pad, px(g, 0.0)[0]] = 220
    for g in np.arange(0.0, y_hi, y_grid):
        img[px(x_lo, g)[1], pad:w - pad] = 220
    xs, ys = px(x, y)
    for i in range(len(xs) - 1):                          # segments, sampled densely
        n = max(abs(xs[i + 1] - xs[i]), abs(ys[i + 1] - ys[i]), 1)
        t = np.linspace(0.0, 1.0, n + 1)
        img[np.round(ys[i] + t * (ys[i + 1] - ys[i])).astype(int),
            np.round(xs[i] + t * (xs[i + 1] - xs[i])).astype(int)] = colour
    img[top + height - pad - 1, pad:w - pad] = 0
    img[top + pad:top + height - pad, pad] = 0


def plot_png(tr: snap.Trace, path: Path | str, size=(480, 480)) -> None:
    """Two panels: above, the contacts' force on the plug (z, blue) over its travel, grey lines
    every 1 mm and 5 N; below, the floor's reaction (z, red) over time, every 0.1 s and 5 N.
    Both scaled to 1.5x the insertion's peak (before the click): the plug's landing on the seat
    is an impulse many times larger, which runs off the top instead of flattening the curve."""
    from sim_core.io.png import write_png

    a = tr.arrays()
    w, h = size
    k = click_step(a)
    Fz = a["plug_force"][:, 2]
    top = 1.5 * max(float(Fz[:k].max()) if k > 0 else float(Fz.max()), float(Fz[-1]), 1e-9)
    img = np.full((h, w, 3), 255, np.uint8)
    _panel(img, 0, h // 2, a["z"][0] - a["z"], Fz, (40, 90, 220), 1e-3, 5.0, y_top=top)
    _panel(img, h // 2, h - h // 2, a["t"], a["floor_force"][:, 2], (220, 60, 40), 0.1, 5.0, y_top=top)
    write_png(path, img)
