"""Law protocols: the shipped pipeline checked against textbook laws under load.

Each protocol builds a scenario's parts with the arm off (``[arm] robot = "off"``), drives
only what the law needs through the spring-damper drive (``dynamics.drive_terms``) and applies the load
as an external wrench (``Inputs.f_ext``), then runs the ordinary step (``step.step``)
and returns what it measured next to the closed form.  ``VARIANTS`` are the contact
pipelines compared: every contact node with the exact SDF (the reference), k-means with the
exact SDF, and the shipped defaults.  Used by ``tests/sim_core/scenarios/test_fidelity.py`` and
``bench/fidelity.py``.

Closed forms (derived here, not taken from a print):

* **Power screw** (a single-start 60 deg thread, flank half-angle alpha = 30 deg, lead l,
  pitch radius r2 = d2 / 2, lead angle tan(lam) = l / (2 pi r2)).  The flank normal seen in
  the plane normal to the helix leans by alpha_n, tan(alpha_n) = tan(alpha) cos(lam), so
  Coulomb friction on the flank acts like mu' = mu / cos(alpha_n) on a square thread.
  Torque to turn the nut against an axial load F (raising) and with it (lowering):
      T_raise = F r2 (tan lam + mu') / (1 - mu' tan lam),
      T_lower = F r2 (mu' - tan lam) / (1 + mu' tan lam).
  Self-locking: T_lower > 0, i.e. mu > tan(lam) cos(alpha_n).
* **Running down an unlocked thread** (no torque, axial load F): with the nut's polar
  inertia J, mass m and c = l / (2 pi), the thread's torque on the nut is the lowering
  relation with the axial force the thread carries, F - m a:  J a / c = (F - m a) r2 k,
  k = (tan lam - mu') / (1 + mu' tan lam), so  a = F r2 k / (J / c + m r2 k)  (mu = 0:
  a = F / (m + J / c^2), the energy balance).
* **Peg on the bore wall**: pressed sideways with N and pushed along the axis with F, the
  peg sticks for F < mu N and slides at a = (F - mu N) / m above it.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from sim_core import config as config_mod
from sim_core import shapes
from sim_core import step as step_mod
from sim_core.math.so3 import rot_axis_angle, twist_about_z
from sim_core.paths import scenario_path
from sim_core.scenarios import scenario
from sim_core.types import Drive, Inputs, Model, State

# contact keys of each compared pipeline (on top of the scenario's own [contact] table)
VARIANTS = {
    "every+exact": {"detector": "exact", "clustering": "none"},
    "kmeans+exact": {"detector": "exact", "clustering": "kmeans"},
    "defaults": {},
    "learned": {"clustering": "learned"},   # the previous default: the seed's interaction networks
}

ALPHA = math.radians(30.0)        # flank half-angle of the 60 deg metric thread
YAW_STIFFNESS = 200.0             # N m/rad: the wrench that turns the nut at a set rate
YAW_DAMPING = 1.0                 # N m s/rad: about critical with the nut's polar inertia
PEG_TILT_STIFFNESS = 5.0          # N m/rad: holds the peg upright (no force along any axis)
PEG_TILT_DAMPING = 0.08           # N m s/rad


def build(task: str, variant: str, mu: float, **contact) -> tuple[Model, State, scenario.Scenario]:
    """The task's parts with the arm off, friction mu and the variant's contact pipeline."""
    path = scenario_path(task)
    cfg = config_mod.load(path)
    cfg["arm"]["robot"] = "off"
    cfg["contact"].update(VARIANTS[variant])
    cfg["contact"].update(contact)
    cfg["contact"]["friction"] = float(mu)
    model, state = scenario.build(cfg, str(path))
    return model, state, scenario.record(cfg)


def with_drive(model: Model, K, D) -> Model:
    """The model with the part's drive gains K, D (6,) replaced."""
    return replace(model, drive=Drive(np.asarray(K, float)[None], np.asarray(D, float)[None]))


# --- power screw ------------------------------------------------------------------------------
def screw_torque(F: float, mu: float, raising: bool, d2: float, lead: float) -> float:
    """Textbook torque (N m) to turn a 60 deg thread under axial load F (module docstring)."""
    tl = lead / (math.pi * d2)
    an = math.atan(math.tan(ALPHA) * math.cos(math.atan(tl)))
    mp = mu / math.cos(an)
    if raising:
        return F * d2 / 2 * (tl + mp) / (1.0 - mp * tl)
    return F * d2 / 2 * (mp - tl) / (1.0 + mp * tl)


def self_locking_mu(d2: float, lead: float) -> float:
    """The friction above which an axially loaded thread cannot turn by itself."""
    tl = lead / (math.pi * d2)
    an = math.atan(math.tan(ALPHA) * math.cos(math.atan(tl)))
    return tl * math.cos(an)


def rundown_acceleration(F: float, mu: float, m: float, J: float, d2: float, lead: float) -> float:
    """Axial acceleration (m/s^2) of a free nut running down an unlocked thread under F."""
    tl = lead / (math.pi * d2)
    an = math.atan(math.tan(ALPHA) * math.cos(math.atan(tl)))
    mp = mu / math.cos(an)
    k = (tl - mp) / (1.0 + mp * tl)
    c = lead / (2 * math.pi)
    return F * d2 / 2 * k / (J / c + m * d2 / 2 * k)


NUT_CENTRE_Z = 0.066   # m: the nut's centre mid-way along the bolt's full thread


@lru_cache(maxsize=4)
def _engaged_height(z_nominal: float) -> float:
    """Nut-centre height (yaw 0) within one pitch of z_nominal where the bolting scenario's
    nut floats in the middle of its thread clearance (largest smallest gap, exact SDF); made
    once per process (a scan of 100 heights)."""
    model, _, scen = build("bolting", "kmeans+exact", 0.0)
    body, shape = shapes.nodes_of(model, 0), model.shapes[0]
    p = scen.static_dims["p"]
    zs = z_nominal + np.linspace(0.0, p, 101)[:-1]
    gaps = []
    for z in zs:
        x_s = np.array([0.0, 0.0, z]) + body.nodes_b
        r = np.hypot(x_s[:, 0], x_s[:, 1])
        x_s = x_s[r < shape.bounds_s[0] + 1e-3]
        gaps.append(float(shape.sdf_exact.query(x_s)[0].min()))
    gaps = np.array(gaps)
    i = int(np.argmax(gaps))
    # refine on a parabola through the neighbours
    g0, g1, g2 = gaps[i - 1], gaps[i], gaps[(i + 1) % len(gaps)]
    den = g0 - 2 * g1 + g2
    off = 0.5 * (g0 - g2) / den if den < 0 else 0.0
    return float(zs[i] + off * (zs[1] - zs[0]))


def nut_start(model: Model) -> State:
    """The nut engaged on the bolt's full thread, centred in its clearance, at rest."""
    z = _engaged_height(NUT_CENTRE_Z)
    return State(0.0, np.array([0.0, 0.0, z]), np.eye(3), np.zeros(6))


@dataclass
class Run:
    """A protocol's trajectory: times, positions, yaw about the static axis, axial contact
    force and torque (world, about the axis), and step times."""
    t: np.ndarray
    z: np.ndarray
    x: np.ndarray
    yaw: np.ndarray
    fz: np.ndarray
    tz: np.ndarray
    step_s: np.ndarray
    max_pen: float


def _roll(model: Model, state: State, n: int, inputs) -> Run:
    """n steps with inputs(k, state) -> Inputs; records the contact wrench about the axis."""
    t, z, x, yaw, fz, tz, dt = [], [], [], [], [], [], []
    turned = 0.0
    pen = 0.0
    for k in range(n):
        inp = inputs(k, state)
        t0 = time.perf_counter()
        nxt, info = step_mod.step(model, state, inp)
        dt.append(time.perf_counter() - t0)
        w = info.contact_wrench[0]
        f_w = w[:3]
        p_w, R_wb = state.p_w[0], state.R_wb[0]
        tau_w = R_wb @ w[3:] + np.cross(p_w - model.shapes[0].p_ws, f_w)   # about the axis point
        turned += twist_about_z(R_wb.T @ nxt.R_wb[0])
        state = nxt
        if not np.all(np.isfinite(state.V)):
            raise FloatingPointError(f"{model.bodies[0].name}: protocol diverged at t = {state.t:.3f} s")
        t.append(state.t)
        z.append(state.p_w[0, 2])
        x.append(state.p_w[0, 0])
        yaw.append(turned)
        fz.append(f_w[2])
        tz.append(tau_w[2])
        pen = max(pen, info.max_penetration)
    a = np.asarray
    return Run(a(t), a(z), a(x), a(yaw), a(fz), a(tz), a(dt), pen)


def _hold_inputs(p, f_ext, yaw_of_t=None, dt=0.01, w_z=0.0, ramp_steps=0):
    """Inputs holding the set pose p (and a yaw ramp), with the external wrench f_ext reached
    linearly over the first `ramp_steps` steps (a quasi-static load, not an impact on the
    thread's axial play)."""
    def inputs(k, state):
        R = np.eye(3) if yaw_of_t is None else rot_axis_angle([0, 0, 1], yaw_of_t((k + 0.5) * dt))
        s = min(1.0, (k + 1) / ramp_steps) if ramp_steps else 1.0
        return Inputs(p, R, np.zeros(3), np.array([0.0, 0.0, w_z]), s * f_ext)
    return inputs


@dataclass
class ScrewResult:
    torque: float          # N m, mean drive torque the thread resisted (contact torque, sign-corrected)
    torque_law: float      # N m, power-screw relation
    advance_per_rev: float  # m, axial advance per turn of the nut
    lead: float            # m
    max_pen: float         # m
    step_ms: float         # median step time
    left_thread: bool      # the nut ended off its thread (moved more than a lead from the helix)

    @property
    def torque_error(self) -> float:
        return (self.torque - self.torque_law) / self.torque_law

    @property
    def lead_error(self) -> float:
        return (self.advance_per_rev - self.lead) / self.lead


def power_screw(variant: str, mu: float, load: float, raising: bool, rev_per_s: float = 0.5,
                settle: float = 0.4, turns: float = 1.0, **contact) -> ScrewResult:
    """Turn the loaded nut at a set rate for `turns` turns after `settle` seconds: the mean
    contact torque about the axis against the power-screw relation, and the advance per
    turn against the lead.  The load F pushes the nut down the bolt (-z); raising turns it
    up the thread (counter-clockwise from above, the right-hand thread), lowering down.
    Only the yaw is driven (``YAW_STIFFNESS``); the nut is otherwise free on its thread.  The
    load ramps up over the first half of `settle` (quasi-static: dropped at once onto the
    thread's axial play, 1 kN is an impact, not the law)."""
    model, _, scen = build("bolting", variant, mu, **contact)
    T = model.dt
    model = with_drive(model, [0, 0, 0, 0, 0, YAW_STIFFNESS], [0, 0, 0, 0, 0, YAW_DAMPING])
    start = nut_start(model)
    w = (1.0 if raising else -1.0) * 2 * math.pi * rev_per_s
    f_ext = np.array([0.0, 0.0, -load, 0.0, 0.0, 0.0])
    n_settle = round(settle / T)
    n = n_settle + round(turns / rev_per_s / T)
    run = _roll(model, start, n, _hold_inputs(start.p_w[0], f_ext, lambda t: w * t, T, w, n_settle // 2))
    s = slice(n_settle, n)
    torque = -float(np.mean(run.tz[s])) * np.sign(w)       # the drive's torque = -(contact torque)
    dz = run.z[n - 1] - run.z[n_settle - 1]
    dturn = (run.yaw[n - 1] - run.yaw[n_settle - 1]) / (2 * math.pi)
    lead = scen.static_dims["p"]
    adv = float(dz / dturn) if dturn != 0 else math.nan
    left = bool(abs(run.z[-1] - (start.p_w[0, 2] + lead * run.yaw[-1] / (2 * math.pi))) > lead)
    return ScrewResult(torque, screw_torque(load, mu, raising, scen.static_dims["d2"], lead), adv, lead,
                       run.max_pen, float(np.median(run.step_s) * 1e3), left)


@dataclass
class HoldResult:
    descent: float         # m, how far the nut went down the axis over the measured span
    turned: float          # rad, its rotation about the axis over the span
    accel: float           # m/s^2, fitted axial acceleration (down positive) over the span
    accel_law: float       # m/s^2, running-down law (0 when self-locking)
    locking_mu: float
    step_ms: float


def axial_hold(variant: str, mu: float, load: float, seconds: float = 5.0, settle: float = 0.3,
               **contact) -> HoldResult:
    """A nut on its thread under a pure axial load (no torque, no drive; the load ramps up
    over the first half of `settle`): how far it runs down the thread in the `seconds` after
    `settle`, and its fitted axial acceleration there.  (An unlocked nut runs ~0.2 m/s^2 or
    less: keep `seconds` short enough that it stays on the bolt's full thread, ~20 mm.)"""
    model, _, scen = build("bolting", variant, mu, **contact)
    T = model.dt
    model = with_drive(model, np.zeros(6), np.zeros(6))
    start = nut_start(model)
    f_ext = np.array([0.0, 0.0, -load, 0.0, 0.0, 0.0])
    n_settle = round(settle / T)
    n = n_settle + round(seconds / T)
    run = _roll(model, start, n, _hold_inputs(start.p_w[0], f_ext, None, T, n_settle // 2))
    s = slice(n_settle, n)
    tt = run.t[s] - run.t[n_settle]
    down = -(run.z[s] - run.z[n_settle - 1])
    a = 2.0 * float(np.polyfit(tt, down, 2)[0])
    d2, lead = scen.static_dims["d2"], scen.static_dims["p"]
    lock = self_locking_mu(d2, lead)
    nut = model.bodies[0]
    law = 0.0 if mu >= lock else rundown_acceleration(load, mu, nut.mass, float(nut.inertia_b[2, 2]), d2, lead)
    return HoldResult(float(down[-1]), float(run.yaw[n - 1] - run.yaw[n_settle - 1]), a, law, lock,
                      float(np.median(run.step_s) * 1e3))


# --- peg on the bore wall ----------------------------------------------------------------------
PEG_CENTRE_Z = -0.025    # m: the peg's centre mid-way down the 50 mm bore (its 80 mm span covers it)


@dataclass
class WallResult:
    velocity: float        # m/s, mean axial velocity over the second half of the span (down positive)
    accel: float           # m/s^2, fitted axial acceleration (down positive)
    accel_law: float       # m/s^2, (F - mu N) / m, or 0 when F <= mu N
    axial_force: float     # N, mean axial contact force (world +z)
    max_pen: float
    step_ms: float


def peg_on_wall(variant: str, mu: float, normal: float, axial: float, seconds: float = 1.0,
                settle: float = 0.2, **contact) -> WallResult:
    """The peg in the bore, pressed sideways against the wall with `normal` N (+x) and pushed
    down the axis with `axial` N; only its tilt and yaw are held (``PEG_TILT_STIFFNESS``), so
    nothing but the wall acts along the axis.  After `settle` seconds: its mean axial velocity
    (second half of the span) and fitted acceleration over `seconds`, and the mean axial contact force.  It starts
    touching the wall and is pressed alone during `settle`; the axial push starts after."""
    model, _, scen = build("peg_in_hole", variant, mu, **contact)
    T = model.dt
    k, d = PEG_TILT_STIFFNESS, PEG_TILT_DAMPING
    model = with_drive(model, [0, 0, 0, k, k, k], [0, 0, 0, d, d, d])
    clear = scen.static_dims["radial_clearance_to_peg"]
    peg = model.bodies[0]
    p0 = np.array([clear, 0.0, PEG_CENTRE_Z]) + peg.com_part      # touching the wall
    start = State(0.0, p0, np.eye(3), np.zeros(6))
    f_side = np.array([normal, 0.0, 0.0, 0.0, 0.0, 0.0])
    f_ext = np.array([normal, 0.0, -axial, 0.0, 0.0, 0.0])
    n_settle = round(settle / T)
    n = n_settle + round(seconds / T)
    hold = _hold_inputs(p0, f_ext, None, T)
    press = _hold_inputs(p0, f_side, None, T)
    run = _roll(model, start, n, lambda k, s: press(k, s) if k < n_settle else hold(k, s))
    s = slice(n_settle, n)
    tt = run.t[s] - run.t[n_settle]
    down = -(run.z[s] - run.z[n_settle - 1])
    a = 2.0 * float(np.polyfit(tt, down, 2)[0])
    law = max(0.0, (axial - mu * normal) / peg.mass)
    half = len(down) // 2                  # steady creep: the second half of the span
    v = float((down[-1] - down[half - 1]) / (tt[-1] - tt[half - 1]))
    return WallResult(v, a, law, float(np.mean(run.fz[s])), run.max_pen,
                      float(np.median(run.step_s) * 1e3))
