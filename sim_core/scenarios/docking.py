"""Docking (seed 004): a plate with N centering pins docks into a block with N capsule holes.

The plate (``geometry.docking.PinPlate``) is the moving body, held by the Panda through its
grasp (or by the spring-damper drive), its pins the shape ``shapes.Pins`` (shape 1); the
block (``HoleBlock``, the shape ``shapes.Holes``, shape 0) is fixed, its top face at
world z = 0, centred on the world's z axis.  Contact is seed 004's analytic manifold (the
detector ``("pins", "holes")``), solved by the project's block SOR (or PGS) with maximum
dissipation, PMI integration, admittance control.  Gravity is off by default (a space servicer), ``[docking]
gravity = "on"`` adds 9.81 m/s^2 along world -z (the arm itself ignores gravity, as in seed
000).

Positions in ``[start]`` and ``[[waypoints]]`` are the plate's **lower-face centre** (where
the pins stand), not its centre of mass: a user places pins, not a COM; the record converts
them to the COM set points the rest of the project uses (p_com = p + R com_part).

The task figure: seated or not (every pin's tip within ``seat_tolerance`` of its hole's
bottom and within the clearance of its axis), the final lateral offset and tilt of the
plate, the height still to go.
"""
from __future__ import annotations

import math

import numpy as np

from sim_core import config as config_mod
from sim_core import step as step_mod
from sim_core.geometry.docking import (
    HoleBlock,
    PinPlate,
    block_mass_properties,
    check_layout,
    plate_mass_properties,
)
from sim_core.scenarios.common import arm_system, contact_params, drive_gains, set_rotation
from sim_core.shapes import Holes, Pins
from sim_core.shapes import check as check_shapes
from sim_core.types import ContactPair, Drive, Model, RigidBody, State

GRAVITY = 9.81                      # m/s^2, when [docking] gravity = "on"


def layout(d: dict, src: str) -> np.ndarray:
    """(N,2) m pin (and hole) positions of a validated [docking] table, centred on the origin."""
    n, s = d["pins"], d["spacing"]
    if d["layout"] == "grid":
        rows, cols = d["grid"]
        if rows != int(rows) or cols != int(cols):
            raise config_mod.ConfigError(f"{src}: docking.grid: rows and columns must be whole numbers, "
                                         f"got {d['grid']}")
        rows, cols = int(rows), int(cols)
        if n > rows * cols:
            raise config_mod.ConfigError(f"{src}: docking.pins: {n} pins, but the {rows} x {cols} grid "
                                         f"(docking.grid) has {rows * cols} positions")
        pos = np.array([(c * s, -r * s) for r in range(rows) for c in range(cols)][:n], dtype=np.float64)
        return pos - 0.5 * (pos.min(axis=0) + pos.max(axis=0))   # centred on the origin, used rows only
    if n == 1:
        return np.zeros((1, 2))
    R = s / (2.0 * math.sin(math.pi / n))
    a = 2.0 * math.pi * np.arange(n) / n
    return np.stack([R * np.cos(a), R * np.sin(a)], 1)


def parts(cfg: dict, src: str) -> tuple[PinPlate, HoleBlock]:
    """The plate and the block of a validated docking config (one-line errors naming the key)."""
    d = cfg["docking"]
    rho, r = 0.5 * d["pin_diameter"], 0.5 * d["hole_diameter"]
    if rho > r:
        raise config_mod.ConfigError(f"{src}: docking.pin_diameter: {d['pin_diameter']:g} m is wider than "
                                     f"docking.hole_diameter {d['hole_diameter']:g} m (zero clearance is allowed)")
    if d["block_height"] < d["hole_depth"] + r:
        raise config_mod.ConfigError(f"{src}: docking.block_height: {d['block_height']:g} m is less than "
                                     f"hole_depth + hole radius = {d['hole_depth'] + r:g} m")
    xy = layout(d, src)
    span = np.ptp(xy, axis=0) + 2.0 * d["border"]
    plate = PinPlate(xy, rho, d["pin_length"], (float(span[0]), float(span[1]), d["plate_thickness"]))
    block = HoleBlock(xy.copy(), r, d["hole_depth"], (float(span[0]), float(span[1]), d["block_height"]))
    try:
        check_layout(block, plate)
    except ValueError as e:
        key = "docking.border" if "edge" in str(e) else "docking.spacing"
        raise config_mod.ConfigError(f"{src}: {key}: {e}") from None
    return plate, block


def dims(plate: PinPlate, block: HoleBlock) -> tuple[dict, dict]:
    """(static, moving) dimensions for the scenario record (m)."""
    com = plate_mass_properties(plate, 1.0)[1]          # uniform density: the COM does not depend on it
    return ({"hole_radius": block.radius, "hole_depth": block.depth, "box": block.box, "holes": len(block.holes_xy)},
            {"pin_radius": plate.radius, "pin_length": plate.length, "plate": plate.plate,
             "pins": len(plate.pins_xy), "com_part": [float(x) for x in com],
             "lowest_part": [0.0, 0.0, -(plate.length + plate.radius)]})


def com_part(cfg: dict, src: str = "<config>") -> np.ndarray:
    """(3,) m, the plate's centre of mass in its part frame (uniform density: any density)."""
    return np.array(dims(*parts(cfg, src))[1]["com_part"])


def build(cfg: dict, src: str = "<config>") -> tuple[Model, State]:
    """The docking world and its start State (through the arm's IK when it holds the plate)."""
    c = cfg["contact"]
    if c["clustering"] != "none":
        raise config_mod.ConfigError(f"{src}: contact.clustering: docking contacts are already a manifold "
                                     f"(at most 6 a pin): use \"none\", got {c['clustering']!r}")
    if c["detector"] != "exact":
        raise config_mod.ConfigError(f"{src}: contact.detector: docking detects analytically (seed 004): "
                                     f"use \"exact\", got {c['detector']!r}")
    plate, block = parts(cfg, src)
    mass, com, J = plate_mass_properties(plate, cfg["parts"]["density"])
    body = RigidBody(name=cfg["parts"]["moving"], mass=mass, inertia_b=J, com_part=com)
    pins = Pins(name=cfg["parts"]["moving"], body=0, plate=plate, segments_b=plate.segments - com)
    shape = Holes(name=cfg["parts"]["static"], block=block)
    K, D = drive_gains(cfg)
    g = np.array([0.0, 0.0, -GRAVITY]) if cfg["docking"]["gravity"] == "on" else np.zeros(3)
    model = Model(bodies=(body,), shapes=(shape, pins), pairs=(ContactPair(a=1, b=0),),
                  contact=contact_params(c), drive=Drive(K[None], D[None]), dt=cfg["scenario"]["dt"],
                  gravity=g, hand_body=0)                            # the plate
    check_shapes(model, src)
    if cfg["arm"]["robot"] == "panda":
        from dataclasses import replace
        model = replace(model, systems=(arm_system(cfg, K, D, body=model.hand_body),))
    st = cfg["start"]
    R = set_rotation(math.radians(st["yaw_deg"]), *np.radians(st["tilt_deg"]))
    state = State(0.0, np.array(st["position"], dtype=np.float64) + R @ com, R, np.zeros(6))
    return model, step_mod.start(model, state)


def task_figures(res) -> dict:
    """``figures`` at the scenario's seat tolerance, with its target (every pin seated).
    `res`: a ``scenario.RunResult``."""
    out = figures(res, res.scen.seat_tolerance)
    out["task_target"] = "every pin seated"
    out["task_target_met"] = out["seated"]
    return out


def meshes(cfg: dict, src: str = "<config>") -> dict:
    """The parts' meshes the view draws (generated from the [docking] geometry: there are no
    asset files), by the names the config gives them."""
    from sim_core.geometry.docking_mesh import block_mesh, plate_mesh
    plate, block = parts(cfg, src)
    return {cfg["parts"]["static"]: block_mesh(block), cfg["parts"]["moving"]: plate_mesh(plate)}


def figures(res, seat_tolerance: float) -> dict:
    """Seated or not, final lateral offset and tilt, the height still to go (m, deg)."""
    body, shape, pins = res.model.bodies[0], res.model.shapes[0], res.model.shapes[1]
    plate, block = pins.plate, shape.block
    st = res.final
    R, p = st.R_wb[0], st.p_w[0]
    R_sw = shape.R_ws.T
    tips = (R_sw @ (R @ pins.segments_b[:, 0, :].T + (p - shape.p_ws)[:, None])).T     # (N,3) block frame
    bottom = -block.depth - (block.radius - plate.radius)          # the lowest a tip's centre can go
    # each tip against its nearest hole (as the detector takes it: a plate may seat turned)
    near = np.linalg.norm(tips[:, None, :2] - block.holes_xy[None, :, :], axis=2).min(axis=1)
    lateral = near
    to_go = float((tips[:, 2] - bottom).max())
    origin = R_sw @ (p - R @ body.com_part - shape.p_ws)          # the plate's lower-face centre
    tilt = math.degrees(math.acos(max(-1.0, min(1.0, float((R_sw @ R)[2, 2])))))
    seated = bool(to_go <= seat_tolerance and np.all(lateral <= block.radius - plate.radius + seat_tolerance))
    return {"seated": seated, "height_to_seat_m": to_go, "lateral_offset_m": float(np.hypot(*origin[:2])),
            "tilt_deg": tilt, "pins": int(len(plate.pins_xy)),
            "clearance_m": float(block.radius - plate.radius)}


def with_pins(cfg: dict, n: int) -> dict:
    """A copy of a docking config with n pins (the grid grown to hold them)."""
    import copy
    out = copy.deepcopy(cfg)
    out["docking"]["pins"] = int(n)
    if out["docking"]["layout"] == "grid":
        cols = math.ceil(math.sqrt(n))
        out["docking"]["grid"] = (float(math.ceil(n / cols)), float(cols))
    return out


def block_mass(cfg: dict, density: float, src: str = "<config>") -> tuple[float, np.ndarray, np.ndarray]:
    """The block's mass properties (seed 004 eqs. (1)-(10)) at `density` (reported, not simulated:
    the block is fixed)."""
    return block_mass_properties(parts(cfg, src)[1], density)


# ---- the summary and HUD lines (``tasks.Task.line``, ``numbers``, ``hud``) --------------------

def task_line(fig: dict, verdict: str) -> str:
    return (f"docking             {'seated' if fig['seated'] else 'not seated'}: {fig['pins']} pins, "
            f"{fig['lateral_offset_m'] * 1e3:.3f} mm off the axis, tilt {fig['tilt_deg']:.3f} deg, "
            f"{fig['height_to_seat_m'] * 1e3:.3f} mm to go ({verdict})")


def hud_numbers(fig: dict) -> tuple[float, float]:
    """(the worst pin tip's height above its seat m, the lateral offset m)."""
    return fig["height_to_seat_m"], fig["lateral_offset_m"]


def hud(value: float, aux: float, met: bool) -> str:
    return (f"{'seated' if met else 'not seated'}, worst tip {value * 1e3:.2f} mm from its seat, "
            f"offset {aux * 1e3:.2f} mm")
