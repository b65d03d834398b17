"""Cable winding (seed 002 Sec. V-B): the Panda holds one end of the seed's cable and winds it
round a fixed vertical drum at a constant pitch while keeping it stretched.

The world: the cable of ``scenarios.cable`` (links 0 .. n-1, Cosserat couplings, shapes 0 ..
n-1 its capsules), its link 0 clamped to the drum's surface at the start of the helix, the
drum (``shapes.Cylinder``, a world shape, axis world z) and one contact pair per link with the
drum, of the cable's material (seed 002 eq. (8): kappa, N from [cable]).  The Panda holds the
last link (body n-1, ``Model.hand_body``) through its infinite-turn gripper: a winding turns
the held link once round the vertical per turn of the drum, more than the wrist's range.

The helix.  A point at wrap angle phi (rad, from the clamp) lies on the circle of radius
rho = R + r about the drum's axis (R the drum's radius, r the cable's) and climbs the pitch p
per turn:  h(phi) = c + rho (cos(phi + phi_c), sin(phi + phi_c), 0) + (z_0 + p phi / 2 pi) e_z,
its unit tangent t(phi) = (-sin, cos, b) / sqrt(1 + b^2), b = p / (2 pi rho), and its length
per radian s' = rho sqrt(1 + b^2).  A cable wrapped to phi and taut leaves the drum along
t(phi) at h(phi); its free end is a distance L_f = L (1 + eps) - s' phi further on (eps the
stretch the arm keeps).  The run starts ``start_turns`` wound (the links along that shape,
spaced by L (1 + eps): the tension E A eps holds the coil from the first step), holds still
for ``settle`` s, then winds ``turns`` more at a constant rate over ``wind_time`` s: the held
link's set pose is the last link of that shape at the present wrap angle, its free span
lengthened by the tension loop's ``extra`` (below).  phi_c puts the free end along world +x at
the start (away from the arm's base).

The tension loop.  The path is a perfectly flexible cable's: it assumes the cable leaves the
drum where the tangent from the held end touches it.  The seed's cable, with bending
stiffness, lays on over a boundary layer ~ sqrt(E I / T) (1 cm at 0.5 N), so the real departure
lags the path's (~13 deg measured, 5 mm of cable) -- more than the 1.9 mm of stretch 1 %
keeps in the free span: on the path alone the tension fell to 0.02-0.1 N and the slack coil
sprang off the drum.  The seed's robot keeps the cable stretched by admittance control on its
F/T sensor; here the held end's free span is lengthened by ``extra``, an integral of the
missing tension (E A eps minus the tip force), ``tension_gain`` m per newton-second: the free
span's axial stiffness E A / L_f ~ 300 N/m makes the loop's time constant ~0.1 s, ten steps.

Numerics the scene needs at T = 10 ms (docs/cable.md "The winding task"): the links' twist
inertia resolved (``[cable] twist_inertia = 0``), joint damping D = 0.01 s K, the contact
kernel ``pgs_subspace`` (PGS leaves the coil millimetres in the drum), and a winding slow enough
for the Panda to track (one turn in 10 s: in 4 s it lagged its path by 14 mm and whipped the
free span).  The drum reaches ``DRUM_BELOW`` below the clamp so the coil never sits at its edge.

What the run measures (``WindingLoop.measure``): the tip force (the last joint's elastic
force on the held link, world), the pitch of the wound part (a line fitted to the height of
the links on the drum against their unwrapped angle) and the wrap angle, the solver's
iterations and whether the cap was hit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from sim_core import config as config_mod
from sim_core import step as step_mod
from sim_core.math.so3 import cross, log_so3
from sim_core.scenarios import cable as cable_mod
from sim_core.scenarios.common import arm_system, contact_params, drive_gains
from sim_core.shapes import Cylinder
from sim_core.types import ContactPair, Inputs, Material, Model, State

FD_STEP = 1e-4              # s, the central difference of the set pose's twist
# m: a link counts as wound when its centre lies within this of the helix radius rho (the
# contact's band plus the links' sag between contacts)
ON_DRUM = 1.0e-3
TARGET_PITCH = 0.10         # the wound part's pitch within 10 % of the set pitch
DRUM_BELOW = 0.02           # m, the drum reaches this far below the clamp (the coil cannot slip off its end)


@dataclass(frozen=True)
class Winding:
    """The [winding] table: the drum and the arm's path (module docstring)."""
    drum_radius: float             # m, R
    drum_length: float             # m, along world z
    centre: np.ndarray             # (3,) m, the drum's axis point at the clamp's height (world)
    pitch: float                   # m per turn, p
    start_turns: float             # turns wound at the start
    turns: float                   # turns wound by the arm
    stretch: float                 # eps, the cable's stretch the arm keeps
    settle: float                  # s, held still before winding
    wind_time: float               # s, the winding's length
    tension_gain: float            # m/(N s), the tension loop's integral gain (module docstring)
    cable_radius: float            # m, r
    length: float                  # m, the cable's length L

    @property
    def rho(self) -> float:
        return self.drum_radius + self.cable_radius

    @property
    def b(self) -> float:
        return self.pitch / (2.0 * math.pi * self.rho)

    @property
    def ds(self) -> float:
        """m per radian of wrap along the helix, s'."""
        return self.rho * math.sqrt(1.0 + self.b * self.b)

    @property
    def phi_c(self) -> float:
        """rad: the clamp's angle about the axis that puts the free end along +x at the start."""
        return -0.5 * math.pi - 2.0 * math.pi * self.start_turns

    def phi(self, t: float) -> float:
        """rad, the wrap angle of the path at time t (constant rate, C1 ramps at both ends)."""
        u = min(max((t - self.settle) / self.wind_time, 0.0), 1.0)
        smooth = u * u * (3.0 - 2.0 * u)
        return 2.0 * math.pi * (self.start_turns + self.turns * smooth)

    def helix(self, phi: float) -> tuple[np.ndarray, np.ndarray]:
        """(point (3,), unit tangent (3,)) of the helix at wrap angle phi (world)."""
        a = phi + self.phi_c
        p = self.centre + np.array([self.rho * math.cos(a), self.rho * math.sin(a), self.pitch * phi / (2 * math.pi)])
        t = np.array([-math.sin(a), math.cos(a), self.b]) / math.sqrt(1.0 + self.b * self.b)
        return p, t

    def point(self, s: float, phi: float) -> tuple[np.ndarray, np.ndarray]:
        """(point, tangent) at arc length s from the clamp of the taut cable wrapped to phi."""
        sw = self.ds * phi
        if s <= sw:
            return self.helix(s / self.ds)
        p, t = self.helix(phi)
        return p + (s - sw) * t, t


def link_frame(t: np.ndarray) -> np.ndarray:
    """(3,3) a link's frame with its axis x along t and z as near world up as that allows."""
    x = t / np.linalg.norm(t)
    z = np.array([0.0, 0.0, 1.0]) - x[2] * x
    z /= np.linalg.norm(z)
    return np.column_stack([x, cross(z, x), z])


def winding(cfg: dict) -> Winding:
    w, c = cfg["winding"], cfg["cable"]
    return Winding(w["drum_radius"], w["drum_length"], np.array(w["drum_centre"], float), w["pitch"],
                   w["start_turns"], w["turns"], w["stretch"], w["settle"], w["wind_time"], w["tension_gain"],
                   c["radius"], c["length"])


def check(cfg: dict, src: str) -> None:
    """One-line errors for what the single tables cannot check alone."""
    w, c = winding(cfg), cfg["cable"]
    free = w.length * (1.0 + w.stretch) - w.ds * 2.0 * math.pi * (w.start_turns + w.turns)
    link = c["length"] / c["links"]
    if free < 2.0 * link:
        need = w.ds * 2 * math.pi * (w.start_turns + w.turns)
        raise config_mod.ConfigError(
            f"{src}: winding.turns: {w.start_turns + w.turns:g} turns need {need:.3f} m of the {w.length:g} m "
            f"cable, leaving {free:.3f} m free (at least two links, {2 * link:.3f} m)")
    if w.pitch < 2.0 * w.cable_radius:
        raise config_mod.ConfigError(f"{src}: winding.pitch: {w.pitch:g} m is less than the cable's diameter "
                                     f"{2 * w.cable_radius:g} m (the turns would overlap)")


def start_poses(w: Winding, n: int, phi: float) -> tuple[np.ndarray, np.ndarray]:
    """(p (n,3), R (n,3,3)): the links along the taut cable wrapped to phi, spaced L (1 + eps)."""
    L = w.length / n * (1.0 + w.stretch)
    P, R = np.zeros((n, 3)), np.zeros((n, 3, 3))
    for i in range(n):
        P[i], t = w.point((i + 0.5) * L, phi)
        R[i] = link_frame(t)
    return P, R


def build(cfg: dict, src: str = "<config>") -> tuple[Model, State]:
    """The winding world and its start State (module docstring)."""
    check(cfg, src)
    c = cfg["cable"]
    w = winding(cfg)
    n = c["links"]
    spec = cable_mod.spec_from_config(cfg)
    cp_cfg = cfg["contact"]
    mat = Material(c["friction_kappa"], cp_cfg["penetration_gain"], cp_cfg["band"],
                   friction_exponent=c["friction_exponent"])
    drum = Cylinder(name=cfg["parts"]["static"], R_bs=np.eye(3),
                    p_bs=w.centre + np.array([0.0, 0.0, 0.5 * w.drum_length - DRUM_BELOW]),
                    radius=w.drum_radius, half_length=0.5 * w.drum_length)
    pairs = tuple(ContactPair(i, n, material=mat) for i in range(n))
    model, _ = cable_mod.build(n, spec, cfg["scenario"]["dt"], contact_params(cp_cfg), shapes=(drum,), pairs=pairs,
                               anchor="clamp")
    P, R = start_poses(w, n, w.phi(0.0))
    # the clamp (the last coupling): link 0's -x end held where the helix starts, in its frame
    # (at s = 0: link 0's end lies L eps / 2 beyond it, the clamp's half segment stretched as
    # the joints are, so it pulls with the same tension)
    cp = model.couplings
    x0, t0 = w.point(0.0, w.phi(0.0))
    r_a, R_a = cp.r_a.copy(), cp.R_a.copy()
    r_a[-1], R_a[-1] = x0, link_frame(t0)
    model = replace(model, couplings=replace(cp, r_a=r_a, R_a=R_a), hand_body=n - 1)
    K, D = drive_gains(cfg)
    drive_K, drive_D = np.zeros((n, 6)), np.zeros((n, 6))
    drive_K[n - 1], drive_D[n - 1] = K, D
    model = replace(model, drive=replace(model.drive, K=drive_K, D=drive_D))
    if cfg["arm"]["robot"] == "panda":
        model = replace(model, systems=(arm_system(cfg, K, D, body=n - 1),))
    state = relaxed(model, w, n, State(0.0, P, R, np.zeros((n, 6))))
    return model, step_mod.start(model, state)


def relaxed(model: Model, w: Winding, n: int, state: State) -> State:
    """The start with its free span in static equilibrium (``cable.statics``): the wound links
    and the held one kept where they are, the links between them under the couplings and
    gravity.  Laid out as the taut tangent, the span meets the coil with a kink -- the wound
    links' bending (theta = L / rho a joint) next to a straight link -- and a link of 0.1 g and
    a bending stiffness E I / L turned 0.44 rad in the first step (44 rad/s) and rang there;
    in equilibrium the span leaves the drum over a boundary layer ~ sqrt(E I / T) long."""
    L = w.length / n * (1.0 + w.stretch)
    free = (np.arange(n) + 0.5) * L > w.ds * w.phi(0.0)
    fixed = ~free
    fixed[n - 1] = True
    g = np.asarray(model.gravity, float)
    m = np.array([b.mass for b in model.bodies])

    def weight(p, R):
        f = np.zeros((n, 6))
        f[:, :3] = m[:, None] * g[None, :]
        return f
    out, _ = cable_mod.statics(model, state, weight, fixed)
    return out


@dataclass(frozen=True)
class WindingControl:
    """The path's constants; ``start()`` gives a fresh ``WindingLoop``."""
    w: Winding
    n: int                         # links
    tension: float                 # N, the tension the stretch asks for: E A eps (the joints' axial gain x L)

    def start(self) -> WindingLoop:
        return WindingLoop(self)


class WindingLoop:
    """The held link's set pose along the path, and what each step measured."""

    def __init__(self, spec: WindingControl):
        self.spec = spec
        self.t: list = []
        self.tip_force: list = []   # (3,) N, world: the cable's pull on the held link
        self.phi: list = []         # rad, the path's wrap angle
        self.sweeps: list = []      # the solve's iterations
        self.capped: list = []      # whether the solve stopped at its cap (``StepInfo.capped``)
        self.extra = 0.0            # m, the free span's length added by the tension loop
        self.by_hand = False        # the session's hand drives the held end (``hand``)

    def set_pose(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        w, n = self.spec.w, self.spec.n
        phi = w.phi(t)
        L = w.length / n * (1.0 + w.stretch)
        p, tan = w.point((n - 0.5) * L + self.extra, phi)
        return p, link_frame(tan)

    def inputs(self, model: Model, state: State, dt: float) -> Inputs:
        self.model = model
        t, i = state.t, model.hand_body
        p, R = self.set_pose(t)
        (pa, Ra), (pb, Rb) = self.set_pose(t - FD_STEP), self.set_pose(t + FD_STEP)
        v = (pb - pa) / (2 * FD_STEP)
        w = Ra @ log_so3(Ra.T @ Rb) / (2 * FD_STEP)
        P, Rs = state.p_w.copy(), state.R_wb.copy()
        V, W = np.zeros_like(P), np.zeros_like(P)
        P[i], Rs[i], V[i], W[i] = p, R, v, w
        return Inputs(P, Rs, V, W)

    def hand(self, model: Model, state: State, inp: Inputs, dt: float) -> Inputs:
        """By hand: the proxy's set pose as it is (the hand winds; no path, no tension loop)."""
        self.model = model
        self.by_hand = True
        return inp

    def measure(self, state: State, info) -> None:
        self.t.append(state.t)
        self.tip_force.append(tip_force(self.model, state))
        w = self.spec.w
        if w.tension_gain > 0.0 and not self.by_hand:     # the tension loop (module docstring)
            missing = self.spec.tension - float(np.linalg.norm(self.tip_force[-1]))
            dt = state.t - (self.t[-2] if len(self.t) > 1 else 0.0)
            self.extra += w.tension_gain * missing * dt
        self.phi.append(self.spec.w.phi(state.t))
        self.sweeps.append(int(info.sweeps))
        self.capped.append(bool(getattr(info, "capped", False)))


def control(cfg: dict, src: str = "<config>") -> WindingControl:
    w, n = winding(cfg), cfg["cable"]["links"]
    spec = cable_mod.spec_from_config(cfg)
    return WindingControl(w, n, float(spec.gains(n)[0]) * spec.length / n * w.stretch)


def tip_force(model: Model, state: State) -> np.ndarray:
    """(3,) N, world: the last joint's elastic force on the held link (the cable's pull on the
    arm's end, quasi-statically; ``couplings.FRAME_ANCHOR`` errors in link n-2's frame)."""
    cp = model.couplings
    k = len(cp) - 2                # the joints come first, the clamp last
    a, b = int(cp.a[k]), int(cp.b[k])
    xa = state.p_w[a] + state.R_wb[a] @ cp.r_a[k]
    xb = state.p_w[b] + state.R_wb[b] @ cp.r_b[k]
    Ra = state.R_wb[a] @ cp.R_a[k]
    e = Ra.T @ (xa - xb)
    return Ra @ (cp.K[k, :3] * e)


def wound(w: Winding, P: np.ndarray) -> np.ndarray:
    """bool (n,): the links whose centre lies on the helix's cylinder."""
    d = np.hypot(P[:, 0] - w.centre[0], P[:, 1] - w.centre[1])
    return np.abs(d - w.rho) < ON_DRUM


def pitch_of(w: Winding, P: np.ndarray) -> float:
    """m per turn: the slope of the wound links' height against their unwrapped angle, 2 pi
    times (nan with fewer than a quarter turn on the drum)."""
    on = wound(w, P)
    if on.sum() < 3:
        return math.nan
    ang = np.unwrap(np.arctan2(P[on, 1] - w.centre[1], P[on, 0] - w.centre[0]))
    if abs(ang[-1] - ang[0]) < 0.5 * math.pi:
        return math.nan
    slope = np.polyfit(ang, P[on, 2], 1)[0]
    return abs(slope) * 2.0 * math.pi


def dims(cfg: dict, src: str = "<config>") -> tuple[dict, dict]:
    w = winding(cfg)
    return ({"drum_radius": w.drum_radius, "drum_length": w.drum_length},
            {"radius": w.cable_radius, "length": w.length, "links": cfg["cable"]["links"],
             "com_part": [0.0, 0.0, 0.0]})


def figures(res) -> dict:
    """The tip force, the wound pitch against the set one, the wrap and the solver's
    iterations (``WindingLoop``)."""
    loop = getattr(res, "control", None)
    w = loop.spec.w if loop is not None else None
    if loop is None or not loop.t:
        return {"task_target": f"pitch within {100 * TARGET_PITCH:g} %", "task_target_met": False}
    F = np.array(loop.tip_force)
    pitch = pitch_of(w, res.final.p_w)
    sweeps = np.array(loop.sweeps)
    out = {"tip_force_N": float(np.linalg.norm(F[-1])), "tip_force_max_N": float(np.linalg.norm(F, axis=1).max()),
           "pitch_m": pitch, "pitch_set_m": w.pitch, "wrap_turns": float(loop.phi[-1] / (2 * math.pi)),
           "wound_links": int(wound(w, res.final.p_w).sum()),
           "iterations_mean": float(sweeps.mean()), "iterations_max": int(sweeps.max()),
           "iteration_cap_hits": int(np.sum(loop.capped))}
    out["task_target"] = f"pitch within {100 * TARGET_PITCH:g} % of {w.pitch * 1e3:g} mm"
    out["task_target_met"] = bool(math.isfinite(pitch) and abs(pitch - w.pitch) <= TARGET_PITCH * w.pitch)
    return out


def meshes(cfg: dict, src: str = "<config>") -> dict:
    """The view's meshes, by name: the drum (its shape frame: axis z, centred), and each link
    as a capsule along its body x -- drawn end to end, overlapping at the joints, the links
    read as one tube."""
    from sim_core.geometry.mesh import TriMesh, mesh_revolution
    w, c = winding(cfg), cfg["cable"]
    r, h = w.cable_radius, 0.5 * c["length"] / c["links"]
    th = np.linspace(-0.5 * math.pi, 0.5 * math.pi, 9)
    # a capsule's half profile (radius, height) about z: cap, cylinder, cap; the poles on the axis
    prof = np.concatenate([np.column_stack([r * np.cos(th[:5]), -h + r * np.sin(th[:5])]),
                           np.column_stack([r * np.cos(th[4:]), h + r * np.sin(th[4:])])])
    prof[0, 0] = prof[-1, 0] = 0.0
    cap = mesh_revolution(prof, 12, max(r, h))
    x_along = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])   # z -> x
    link = TriMesh(cap.vertices @ x_along.T, cap.faces)
    R, H = w.drum_radius, 0.5 * w.drum_length
    drum = mesh_revolution(np.array([[0.0, -H], [R, -H], [R, H], [0.0, H]]), 48, 0.2 * R)
    out = {cfg["parts"]["static"]: drum}
    out.update({f"link{i}": link for i in range(c["links"])})
    return out


# ---- the summary and HUD lines (``tasks.Task.line``, ``numbers``, ``hud``) --------------------

def task_line(fig: dict, verdict: str) -> str:
    if "pitch_m" not in fig:
        return f"winding             no step yet ({verdict})"
    return (f"winding             {fig['wrap_turns']:.2f} turns, pitch {fig['pitch_m'] * 1e3:.2f} mm "
            f"(set {fig['pitch_set_m'] * 1e3:g}), tip force {fig['tip_force_N']:.2f} N (max "
            f"{fig['tip_force_max_N']:.2f}), iterations mean {fig['iterations_mean']:.1f} max {fig['iterations_max']}, "
            f"{fig['iteration_cap_hits']} at the cap ({verdict})")


def hud_numbers(fig: dict) -> tuple[float, float]:
    """(the tip force N, the wound pitch m)."""
    return fig.get("tip_force_N", math.nan), fig.get("pitch_m", math.nan)


def hud(value: float, aux: float, met: bool) -> str:
    pitch = f"pitch {aux * 1e3:.2f} mm" if math.isfinite(aux) else "pitch --"
    return f"tension {value:.2f} N, {pitch} ({'target met' if met else 'target not met'})"
