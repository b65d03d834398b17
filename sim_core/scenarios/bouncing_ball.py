"""Seed 001's bouncing ball (Sec. 4.1): a ball dropped onto rigid ground under gravity, its
contact the compliant law (``contact.compliant``) or today's rigid complementarity.

The seed's ball: m = 1.0 kg, R = 0.1 m, I = 0.1 kg m^2, its centre dropped from 1.0 m,
g = 9.81 m/s^2, K = 140e6 N/m.  ``drop`` runs it through the project's model and step, with
the variable step's policy (``dynamics.variable_step``) or a fixed step, and returns the
trajectory; ``bounces`` reads the apexes and restitutions off it; ``build`` makes the world of
``config/bouncing_ball.toml`` for ``tightsim run bouncing_ball``.
"""
from __future__ import annotations

import math

import numpy as np

from sim_core import step as step_mod
from sim_core.contact import compliant
from sim_core.dynamics import variable_step
from sim_core.scenarios.common import contact_params
from sim_core.shapes import Plane, Sphere
from sim_core.types import WORLD, ContactPair, ContactParams, Drive, Inputs, Material, Model, RigidBody, State

MASS = 1.0                 # kg
RADIUS = 0.1               # m
INERTIA = 0.1              # kg m^2 (the seed's, about every axis)
HEIGHT = 1.0               # m, the centre's start height
GRAVITY = 9.81             # m/s^2, along world -z
STIFFNESS = 140e6          # N/m
BAND = 1e-4                # m, the detection band (the step's reach adds |v| dt)
MODEL_OF = {"compliant": compliant.KELVIN_VOIGT}


def ball_contact() -> ContactParams:
    return ContactParams(friction=0.0, clusters=1, band=BAND, broadphase_margin=1e-3, normal_scale=0.01,
                         penetration_gain=0.2, pgs_iterations=50, pgs_tolerance=1e-10, solver="sor",
                         clustering="none")


def world(material: Material, dt: float, contact: ContactParams | None = None) -> tuple[Model, State]:
    """The ball over the ground plane, the pair with `material`, at rest at HEIGHT."""
    body = RigidBody("ball", MASS, INERTIA * np.eye(3), np.zeros(3))
    # the ground first: shape 0 is the static part's (the run's axis, world z)
    shapes = (Plane(name="ground", body=WORLD), Sphere(name="ball", body=0, radius=RADIUS))
    model = Model(bodies=(body,), shapes=shapes, pairs=(ContactPair(1, 0, material=material),),
                  contact=ball_contact() if contact is None else contact,
                  drive=Drive(np.zeros((1, 6)), np.zeros((1, 6))), dt=dt, gravity=np.array([0.0, 0.0, -GRAVITY]))
    state = State(0.0, np.array([[0.0, 0.0, HEIGHT]]), np.eye(3)[None].copy(), np.zeros((1, 6)))
    return model, step_mod.start(model, state)


def compliant_band(dt: float) -> float:
    """m: a compliant pair's detection band for steps up to dt: the step's own reach, band +
    |v| dt, misses a touchdown within the step where the fall under gravity, g dt^2 / 2, is
    longer than the band (measured: at a fixed 128 ms step the ball then sinks centimetres
    before it is seen).  A compliant contact found with a gap costs nothing (the stage flies
    it to touchdown, or not at all within the step), so the band covers the fall twice over."""
    return max(BAND, GRAVITY * dt * dt)


def compliant_material(restitution: float, clamped: bool = False, stiffness: float = STIFFNESS,
                       friction: float = 0.0, model: int | None = None, band: float = BAND) -> Material:
    law = (compliant.KELVIN_VOIGT_CLAMPED if clamped else compliant.KELVIN_VOIGT) if model is None else model
    return Material(friction, 0.2, band, "compliant",
                    (("model", float(law)), ("restitution", float(restitution)), ("stiffness", float(stiffness))))


def energy(state: State, material: Material | None = None) -> float:
    """J: kinetic + gravity potential (zero at z = 0) + the spring's K delta^2 / 2."""
    V = state.V[0]
    e = 0.5 * MASS * float(V[:3] @ V[:3]) + 0.5 * INERTIA * float(V[3:] @ V[3:]) + MASS * GRAVITY * state.p_w[0, 2]
    pen = max(RADIUS - state.p_w[0, 2], 0.0)
    if material is not None and material.law == "compliant":
        law = dict(material.law_params)
        n = compliant.EXPONENT.get(int(law["model"]), 1.0)
        e += law["stiffness"] * pen ** (n + 1.0) / (n + 1.0)
    return float(e)


def _still(n: int = 1) -> Inputs:
    return Inputs(np.zeros((n, 3)), np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 3)), np.zeros((n, 3)))


def drop(restitution: float, dt_max: float, law: str = "compliant", duration: float = 3.0, clamped: bool = False,
         variable: bool = True, split: bool = True, model: int | None = None) -> dict:
    """The seed's drop: arrays "t" s, "z" m (centre height), "vz" m/s, "energy" J (kinetic +
    gravity + spring), "contact" (bool: in contact at the step's end or during it), "pen" m
    (penetration at the step's end), "dt" s (each step's length), one entry per state (the
    start first).  law "compliant": Kelvin-Voigt with D from `restitution` (reading (a), or
    (b) when `clamped`), the variable step unless `variable` is False (then fixed dt_max);
    law "complementarity": today's rigid law at the fixed step dt_max.  `model`: the compliant
    law's model (``contact.compliant``: 2, 3 Hunt-Crossley; None: Kelvin-Voigt by `clamped`)."""
    if not 0.0 < restitution <= 1.0:
        raise ValueError(f"drop: restitution must be in (0, 1], got {restitution!r}")
    if not dt_max > 0.0:
        raise ValueError(f"drop: dt_max must be > 0 s, got {dt_max!r}")
    if law == "compliant":
        K = 1e10 if model == compliant.HUNT_CROSSLEY_HERTZ else STIFFNESS   # N/m^1.5: the same depth scale
        mat = compliant_material(restitution, clamped, stiffness=K, model=model, band=compliant_band(dt_max))
    elif law == "complementarity":
        mat = Material(0.0, 0.2, BAND, "complementarity")
        variable = False
    else:
        raise ValueError(f"drop: unknown law {law!r} (compliant, complementarity)")
    model, state = world(mat, dt_max)
    rec = {k: [] for k in ("t", "z", "vz", "energy", "contact", "pen", "dt")}

    def keep(s, touched, dt):
        rec["t"].append(s.t)
        rec["z"].append(s.p_w[0, 2])
        rec["vz"].append(s.V[0, 2])
        rec["energy"].append(energy(s, mat))
        rec["pen"].append(max(RADIUS - s.p_w[0, 2], 0.0))
        rec["contact"].append(touched)
        rec["dt"].append(dt)

    keep(state, False, 0.0)

    def on(prev, inp, s, info):
        keep(s, bool(len(info.contacts)) and bool(np.any(info.forces_w[:, 2] != 0.0)), info.dt)

    inp = _still()
    if variable:
        variable_step.run(model, state, lambda t: inp, duration, dt_max, split=split, on_step=on)
    else:
        for _ in range(int(round(duration / dt_max))):
            prev = state
            state, info = step_mod.step(model, state, inp, dt_max)
            on(prev, inp, state, info)
    return {k: np.array(v) for k, v in rec.items()}


def bounces(run: dict) -> dict:
    """From a drop: the apexes (m, centre height; exact from each free-flight state, z +
    vz^2 / 2 g while rising), the contact intervals (start, end s: the contact steps' first
    start and last end), the restitution of each bounce sqrt((apex_k+1 - R) / (apex_k - R)), the
    first contact's speed ratio and the deepest penetration."""
    t, z, vz, con = run["t"], run["z"], run["vz"], run["contact"]
    intervals, i = [], 1
    while i < len(t):
        if con[i]:
            j = i
            while j + 1 < len(t) and con[j + 1]:
                j += 1
            intervals.append((t[i - 1], t[j]))
            i = j + 1
        else:
            i += 1
    apex = [HEIGHT]
    for _start, b in intervals:
        k = int(np.searchsorted(t, b))
        if k < len(t) and vz[k] > 0:
            apex.append(z[k] + vz[k] ** 2 / (2 * GRAVITY))
    h = np.array(apex) - RADIUS
    h = h[:int(np.argmax(h <= 0.0))] if np.any(h <= 0.0) else h     # up to the ball's coming to rest
    rest = np.sqrt(h[1:] / h[:-1]) if len(h) > 1 else np.zeros(0)
    return {"apex_m": np.array(apex), "contacts_s": np.array(intervals), "restitution": rest,
            "max_penetration_m": float(np.max(run["pen"]))}


# --- tightsim run bouncing_ball ---------------------------------------------------------------

def build(cfg: dict, src: str = "<config>") -> tuple[Model, State]:
    """The world of a validated bouncing_ball config: the seed's ball at [start] position, the
    [contact] table, the material of the "ball/ground" pair from [pairs]
    (``scenario.with_materials``); the ball's dimensions are the seed's, not configured."""
    model, _ = world(None, cfg["scenario"]["dt"], contact_params(cfg["contact"]))
    p = np.array([[float(x) for x in cfg["start"]["position"]]])
    return model, step_mod.start(model, State(0.0, p, np.eye(3)[None].copy(), np.zeros((1, 6))))


def dims(cfg: dict, src: str = "<config>") -> tuple[dict, dict]:
    return {"plane_z": 0.0}, {"radius": RADIUS, "mass": MASS}


GROUND_RADIUS = 0.6       # m, the view's ground disc (the plane itself is unbounded)
GROUND_THICKNESS = 0.02   # m


def meshes(cfg: dict, src: str = "<config>") -> dict:
    """The view's meshes, by the config's part names: the ground as a disc slab with its top at
    z = 0 (the plane's frame), the ball (its body frame, about the centre)."""
    from sim_core.geometry.mesh import mesh_revolution
    th = np.linspace(-0.5 * math.pi, 0.5 * math.pi, 25)
    arc = np.column_stack([RADIUS * np.cos(th), RADIUS * np.sin(th)])
    arc[0, 0] = arc[-1, 0] = 0.0             # the poles on the axis: fans
    ground = np.array([[0.0, -GROUND_THICKNESS], [GROUND_RADIUS, -GROUND_THICKNESS], [GROUND_RADIUS, 0.0],
                       [0.0, 0.0]])
    return {cfg["parts"]["static"]: mesh_revolution(ground, 64, 0.1),
            cfg["parts"]["moving"]: mesh_revolution(arc, 32, 0.05)}


def figures(res) -> dict:
    """The bounce apexes, the measured restitution and the deepest penetration of the run
    (fixed-step headless run: apexes from each rising free-flight state; the penetration at
    the step ends, which a ~0.3 ms contact falls between, and the first contact's deepest
    point by the law's closed form from the start height)."""
    t = np.array(res.t)
    z = np.array([p[2] for p in res.p_w])
    pair = res.model.pairs[0]
    mat = pair.material
    e_req = dict(mat.law_params).get("restitution", math.nan) if mat is not None else math.nan
    dt = t[1] - t[0] if len(t) > 1 else res.model.dt
    vz = np.gradient(z, dt) if len(z) > 2 else np.zeros_like(z)
    pen = np.maximum(RADIUS - z, 0.0)
    touching = pen > 0.0
    apexes = [HEIGHT]
    for k in range(1, len(z) - 1):
        if z[k] >= z[k - 1] and z[k] > z[k + 1] and not touching[k]:
            apexes.append(float(z[k] + 0.5 * vz[k] ** 2 / GRAVITY))
    h = np.array(apexes) - RADIUS
    rest = np.sqrt(h[1:] / h[:-1]) if len(h) > 1 else np.zeros(0)
    measured = float(rest[0]) if rest.size else math.nan
    met = bool(rest.size and abs(measured - e_req) <= 1e-2)
    deepest = math.nan                       # the first contact's, by the law's closed form
    if mat is not None and mat.law == "compliant":
        law = dict(mat.law_params)
        if int(law.get("model", 0)) in (compliant.KELVIN_VOIGT, compliant.KELVIN_VOIGT_CLAMPED):
            v_in = math.sqrt(2.0 * GRAVITY * (HEIGHT - RADIUS))     # the seed's drop (as apexes[0])
            kv = compliant.kelvin_voigt(MASS, law["stiffness"], law["restitution"], MASS * GRAVITY, 0.0, v_in)
            deepest = kv.max_penetration()[1]
    return {"bounce_apexes_m": [float(x) for x in apexes[:11]], "restitution_requested": float(e_req),
            "restitution_measured": measured, "ball_max_penetration_m": float(pen.max()),
            "first_contact_max_penetration_closed_form_m": float(deepest),
            "task_target": "first bounce's restitution within 0.01 of the material's (fixed step; "
                           "bench/variable step: 1e-3)", "task_target_met": met}


# ---- the summary and HUD lines (``tasks.Task.line``, ``numbers``, ``hud``) --------------------

def task_line(fig: dict, verdict: str) -> str:
    return (f"bounces             restitution {fig['restitution_measured']:.4f} (requested "
            f"{fig['restitution_requested']:.4f}), {len(fig['bounce_apexes_m']) - 1} apexes, deepest "
            f"{fig['ball_max_penetration_m'] * 1e6:.1f} um ({verdict})")


def hud_numbers(fig: dict) -> tuple[float, float]:
    """(the measured restitution, the requested one)."""
    return fig["restitution_measured"], fig["restitution_requested"]


def hud(value: float, aux: float, met: bool) -> str:
    if not math.isfinite(value):
        return f"restitution: requested {aux:g} (no bounce yet)"
    return f"restitution {value:.4f} of {aux:g} ({'target met' if met else 'target not met'})"
