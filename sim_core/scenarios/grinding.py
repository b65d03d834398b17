"""Grinding (seed 001 Sec. 4.3): the Panda holds a grinder with a spherical tip against a curved
aluminium workpiece with a weld bead, follows a tool path generated from the surface's
positions and normals, and holds a set normal force under force control.

**World.**  Shape 0 is the workpiece (``shapes.Workpiece``, ``geometry.grinding``) on the
world: the bar's axis along world x at z = -R, so the bar's top is at the world origin and the
bead's crest at z = h.  Body 0 is the grinder (a solid cylinder of ``tool_mass`` about its
axis, body z), held by the Panda (or the drive, ``[arm] robot = "off"``); its tip, shape 1, is
a ball of ``tip_radius`` whose centre is ``tool_length`` below the COM along body -z.  The
pair "grinder/workpiece" takes its material by name from ``[pairs]`` (``config/grinding.toml``:
aluminium, law "complementarity" today; the compliant law of seed 001 is set there by its
stiffness and restitution keys once the law is in ``contact.materials.LAWS``).  Gravity is off:
the arm carries the grinder's weight, as an industrial arm's gravity compensation does.

**Path** (``Path``, ``make_path``): the passes of ``geometry.grinding.path`` -- parallel to
the bead's crest line, ``spacing`` apart, zig-zag -- in time: ``approach`` seconds down the
normal from ``clearance`` above the first point, then every pass at ``speed``, each step-over
between passes along the offset surface (64 chart samples, so a step-over over the bead rides
it instead of cutting a chord through it), ``approach`` seconds up at the end.  The offset
surface has a concave crease where the bead meets the bar, and its normal jumps there (37 deg
with the defaults): the tool turns about its tip's centre from one face's normal to the other's
(``_step_over``).  Each segment takes the longer of the centre's travel at ``speed`` and the
normal's turn at ``turn_rate``: with the tool axis along the normal, the COM swings by
tool_length times the turn, and a turn at the feed's pace (26 deg in 0.2 s up the bead's flank)
moved it at 0.2 m/s and threw the force to 0 and 14 N (47 % RMS).  The set pose is the COM's: tip centre +
tool_length n, tool axis along n.

**Force control** (``ForceLoop``): an outer loop on the admittance the arm renders.  The
contact force measured last step along the path normal (the wrench a sensor between flange and
tool reads, ``StepInfo.contact_wrench``) sets the set pose's offset into the surface:
    delta = F_set / K_n + k_p e + k_i sum(e dt),   e = F_set - F_n,
K_n = n^T diag(K) n the rendered stiffness along n (the feed-forward: a rigid contact under
the spring K compressed by F_set / K presses with F_set), the integral frozen while the tool is
off the surface (approach, lift), delta clamped to ``max_offset`` (anti-windup) and changing at
most ``offset_rate`` (a touch by hand ramps the press in instead of throwing the set pose
2.5 mm into the surface in one step: the first touch peaked at 28 N without it).  The loop
lives in the scenario record (``Scenario.control``), not in the physics: ``scenario.simulate``
asks it for each step's inputs and tells it each step's result; the real-time session's physics
loop does the same (``app.physics_loop.run``), the hand's proxy replacing the path's tangential
motion.  The log holds the inputs it produced, so a replay re-runs the step without it.

**Figure**: the RMS of the normal-force error over the path once in contact (from the first
step whose normal force reaches the set force, to the end of the last pass), in % of the set
force; target 5 %.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from sim_core import config as config_mod
from sim_core import step as step_mod
from sim_core.geometry import grinding as geo
from sim_core.geometry.mesh import TriMesh
from sim_core.scenarios.common import arm_system, contact_params, drive_gains
from sim_core.shapes import Sphere, Workpiece
from sim_core.shapes import check as check_shapes
from sim_core.types import ContactPair, Drive, Inputs, Model, RigidBody, State

TARGET_RMS = 0.05          # the task figure's target: RMS normal-force error / F_set once in contact
FD_STEP = 1e-4             # s: the set twist is the path's central difference over +-this
ENGAGE_GAP = 1e-3          # m: by hand, the loop presses while the hand's tip is this close to the
                           # surface (farther: no offset, the integral frozen -- the hand lifts off)


def workpiece(cfg: dict, src: str = "<config>") -> geo.Workpiece:
    g = cfg["grinding"]
    try:
        return geo.Workpiece(radius=g["bar_radius"], length=g["length"], bead_radius=g["bead_radius"],
                             bead_height=g["bead_height"])
    except ValueError as e:
        key = "grinding.bead_height" if "bead_height" in str(e) else "grinding.bead_radius"
        raise config_mod.ConfigError(f"{src}: {key}: {str(e).removeprefix('workpiece: ')}") from None


def frame(wp: geo.Workpiece) -> tuple[np.ndarray, np.ndarray]:
    """(R_ws, p_ws): the workpiece frame in the world (the bar's top at the origin)."""
    return np.eye(3), np.array([0.0, 0.0, -wp.radius])


@dataclass(frozen=True)
class Path:
    """The tool path in time (world): knots of the tip centre, its normal's angle about the
    bar's axis and the lift above the surface, linear between knots."""
    tool_length: float             # m, tip centre to COM along the tool axis
    t: np.ndarray                  # (K,) s, knot times
    centre: np.ndarray             # (K,3) m, the tip centre on the offset surface (world)
    phi: np.ndarray                # (K,) rad, the normal (0, sin phi, cos phi) in the workpiece frame
    lift: np.ndarray               # (K,) m, above the surface along the normal
    path_end: float                # s, the last pass ends here (the lift begins)
    R_ws: np.ndarray = field(default_factory=lambda: np.eye(3))

    def _at(self, t: float) -> tuple[int, float]:
        k = min(max(int(np.searchsorted(self.t, t, side="right")) - 1, 0), len(self.t) - 2)
        return k, min(max((t - self.t[k]) / (self.t[k + 1] - self.t[k]), 0.0), 1.0)

    def tip(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(tip centre (3,) m, unit normal (3,)) at time t, world: the offset surface plus the lift."""
        k, s = self._at(t)
        phi = (1 - s) * self.phi[k] + s * self.phi[k + 1]
        n = self.R_ws @ np.array([0.0, math.sin(phi), math.cos(phi)])
        c = (1 - s) * self.centre[k] + s * self.centre[k + 1]
        return c + ((1 - s) * self.lift[k] + s * self.lift[k + 1]) * n, n

    def on_surface(self, t: float) -> bool:
        k, s = self._at(t)
        return (1 - s) * self.lift[k] + s * self.lift[k + 1] == 0.0


STEP_OVER_SAMPLES = 64     # chart samples a step-over: 0.07 mm apart on the 4 mm default, a chord
                           # sagitta of 1e-7 m on the bead's 9 mm offset circle


def _offset_point(wp: geo.Workpiece, r: float, x: float, th: float) -> tuple[np.ndarray, float]:
    """(tip centre (3,) m, normal angle phi rad) on the offset surface at (x, theta), workpiece frame."""
    s, nyz, _ = geo._boundary(np.array([th]), wp.radius + r, wp.bead_z, wp.bead_radius + r)
    return np.array([x, s[0] * math.sin(th), s[0] * math.cos(th)]), math.atan2(nyz[0, 0], nyz[0, 1])


def crease_angles(wp: geo.Workpiece, r: float) -> tuple[float, float]:
    """(theta rad, its normal angle on the bead's face rad) of the +y crease of the offset
    surface, where the inflated bar (R + r) and bead (r_b + r) circles cross (the -y one is
    its mirror); the bar's face there has phi = theta."""
    A, B, zb = wp.radius + r, wp.bead_radius + r, wp.bead_z
    z = (A * A - B * B + zb * zb) / (2.0 * zb)
    y = math.sqrt(A * A - z * z)
    return math.atan2(y, z), math.atan2(y, z - zb)


def _step_over(wp: geo.Workpiece, r: float, x: float, th0: float, th1: float) -> list[tuple[np.ndarray, float]]:
    """Knots (centre, phi) from theta th0 to th1 along the offset surface at x (excluding th0):
    chart samples, and at a crease the tool turning about its tip's centre from one face's
    normal to the other's (the offset surface's normal cone there)."""
    ths = list(np.linspace(th0, th1, STEP_OVER_SAMPLES + 1)[1:])
    tc, pc = crease_angles(wp, r)
    out = []
    for sgn in (1.0, -1.0):
        c = sgn * tc
        if min(th0, th1) < c < max(th0, th1):
            ths.append(c)
    ths.sort(reverse=th1 < th0)
    for th in ths:
        centre, phi = _offset_point(wp, r, x, th)
        if abs(abs(th) - tc) < 1e-15:                     # the crease: both faces' normals, in the order met
            bar, bead = math.copysign(tc, th), math.copysign(pc, th)
            first, second = (bar, bead) if abs(th1) < abs(th0) else (bead, bar)
            out += [(centre, first), (centre, second)]
        else:
            out.append((centre, phi))
    return out


def make_path(cfg: dict, wp: geo.Workpiece) -> Path:
    """The passes of ``geometry.grinding.path`` in time (module docstring): each knot-to-knot
    segment takes the longer of its centre's travel at ``speed`` and its normal's turn at
    ``turn_rate``."""
    g = cfg["grinding"]
    r, (x0, x1) = g["tip_radius"], g["x_range"]
    if not -0.5 * wp.length <= x0 < x1 <= 0.5 * wp.length:
        raise config_mod.ConfigError(f"grinding.x_range: {g['x_range']} must increase and lie within the "
                                     f"bar's +-{0.5 * wp.length:g} m")
    tp = geo.path(wp, r, g["spacing"], g["passes"], (x0, x1), 2)     # each pass's two ends
    c0, phi0 = _offset_point(wp, r, x0, float(tp.theta[0]))
    knots = [(0.0, c0, phi0, g["clearance"]), (g["approach"], c0, phi0, 0.0)]

    def add(c, phi):
        t_prev, c_prev, phi_prev, _ = knots[-1]
        dt = max(float(np.linalg.norm(c - c_prev)) / g["speed"], abs(phi - phi_prev) / g["turn_rate"])
        knots.append((t_prev + dt, c, phi, 0.0))

    for k in range(g["passes"]):
        x_end = float(tp.centre[2 * k + 1, 0])
        add(*_offset_point(wp, r, x_end, float(tp.theta[2 * k])))
        if k + 1 < g["passes"]:
            for c, phi in _step_over(wp, r, x_end, float(tp.theta[2 * k]), float(tp.theta[2 * k + 2])):
                add(c, phi)
    end = knots[-1][0]
    knots.append((end + g["approach"], knots[-1][1], knots[-1][2], g["clearance"]))
    R_ws, p_ws = frame(wp)
    t = np.array([k[0] for k in knots])
    centre = np.array([R_ws @ k[1] + p_ws for k in knots])
    return Path(g["tool_length"], t, centre, np.array([k[2] for k in knots]), np.array([k[3] for k in knots]),
                end, R_ws)


def path_duration(cfg: dict, src: str = "<config>") -> float:
    """s: the whole path, approach and lift included (the run's duration should cover it)."""
    return float(make_path(cfg, workpiece(cfg, src)).t[-1])


@dataclass(frozen=True)
class ForceControl:
    """The force loop's constants (``[grinding]``); ``start()`` gives a fresh ``ForceLoop``."""
    path: Path
    force: float                   # N, the set normal force
    kp: float                      # m/N
    ki: float                      # m/(N s)
    K: np.ndarray                  # (3,) N/m, the rendered linear stiffness (world axes)
    max_offset: float              # m, |delta| at most
    rate: float                    # m/s, delta changes at most this fast
    body: int = 0

    def start(self) -> ForceLoop:
        return ForceLoop(self)


class ForceLoop:
    """The PI loop's changing part: the integral, the last measured normal force, and what it
    measured step by step (``t``, ``force``, ``on_surface``, ``contact`` points) for the figure."""

    def __init__(self, spec: ForceControl):
        self.spec = spec
        self.integral = 0.0        # m
        self.fn = 0.0              # N, last measured normal force
        self.n = np.array([0.0, 0.0, 1.0])
        self.engaged = False       # whether the last inputs pressed on the surface (the figure's steps)
        self.delta = None          # m, the last offset (None: none yet, the first is not slew-limited)
        self.t: list = []
        self.force: list = []
        self.on: list = []
        self.where: list = []

    def offset(self, dt: float, on_surface: bool) -> float:
        """delta (m): into the surface along -n (module docstring); advances the integral."""
        sp = self.spec
        Kn = float(self.n @ (sp.K * self.n))
        e = sp.force - self.fn
        if on_surface:
            self.integral = min(max(self.integral + sp.ki * e * dt, -sp.max_offset), sp.max_offset)
        d = min(max(sp.force / Kn + (sp.kp * e + self.integral if on_surface else 0.0), -sp.max_offset),
                sp.max_offset)
        if self.delta is not None:                    # slew-limited: a touch by hand ramps in
            d = min(max(d, self.delta - sp.rate * dt), self.delta + sp.rate * dt)
        self.delta = d
        return d

    def inputs(self, model: Model, state: State, dt: float) -> Inputs:
        """This step's set pose and twist of every body (the grinder's from the path and the loop)."""
        sp, t = self.spec, state.t
        c, n = sp.path.tip(t)
        self.n = n
        on = sp.path.on_surface(t)
        self.engaged = on and t < sp.path.path_end
        d = self.offset(dt, on)
        h = FD_STEP
        (ca, na), (cb, nb) = sp.path.tip(t - h), sp.path.tip(t + h)
        L = sp.path.tool_length
        v = ((cb + L * nb) - (ca + L * na)) / (2 * h)
        w = np.cross(n, (nb - na) / (2 * h))
        p = c + (L - d) * n
        return self.held(model, state, p, geo.tool_rotation(n), v, w)

    def hand(self, model: Model, state: State, inp: Inputs, dt: float) -> Inputs:
        """By hand (the real-time session): the hand's set pose (the haptic proxy's) with the same
        loop's offset along the workpiece's normal under the hand's tip, while that tip is
        within ``ENGAGE_GAP`` of the surface -- the hand guides, the loop holds the force.  The
        proxy's own contacts stay at the hand's pose (``app.physics_loop.run``)."""
        i = self.spec.body
        tip_shape, wp_shape = model.shapes[model.pairs[0].a], model.shapes[model.pairs[0].b]
        tip = inp.p_set_w[i] + inp.R_set_w[i] @ tip_shape.p_bs
        q = wp_shape.R_bs.T @ (tip - wp_shape.p_bs)
        d, g = geo.signed_distance(wp_shape.workpiece, q[None])
        self.n = wp_shape.R_bs @ g[0]
        self.engaged = bool(d[0] - tip_shape.radius < ENGAGE_GAP)
        if not self.engaged:                          # the hand lifted off: no offset, ramp in from 0
            self.delta = 0.0
            return inp
        delta = self.offset(dt, True)
        P = inp.p_set_w.copy()
        P[i] = P[i] - delta * self.n
        return Inputs(P, inp.R_set_w, inp.v_set_w, inp.w_set_w, inp.f_ext)

    def held(self, model: Model, state: State, p, R, v, w) -> Inputs:
        i = self.spec.body
        P, Rs = state.p_w.copy(), state.R_wb.copy()
        V, W = np.zeros_like(P), np.zeros_like(P)
        P[i], Rs[i], V[i], W[i] = p, R, v, w
        return Inputs(P, Rs, V, W)

    def measure(self, state: State, info) -> None:
        """After a step: the contact force on the grinder along the path normal."""
        i = self.spec.body
        self.fn = float(info.contact_wrench[i, :3] @ self.n)
        self.t.append(state.t)
        self.force.append(self.fn)
        self.on.append(self.engaged)
        self.where.append(state.p_w[i].copy())


def control(cfg: dict, src: str = "<config>") -> ForceControl:
    g = cfg["grinding"]
    wp = workpiece(cfg, src)
    try:
        path = make_path(cfg, wp)
    except config_mod.ConfigError as e:
        raise config_mod.ConfigError(f"{src}: {e}") from None
    K, _ = drive_gains(cfg)
    return ForceControl(path, g["normal_force"], g["force_kp"], g["force_ki"], K[:3].copy(), g["max_offset"],
                        g["offset_rate"])


def grinder_mass(cfg: dict) -> tuple[float, np.ndarray]:
    """(mass kg, inertia (3,3) kg m^2 about the COM, body axes): a solid cylinder of the tool's
    radius and of length 2 tool_length about body z."""
    g = cfg["grinding"]
    m, a, L = g["tool_mass"], g["tool_radius"], 2.0 * g["tool_length"]
    Ixx = m * (3 * a * a + L * L) / 12.0
    return m, np.diag([Ixx, Ixx, 0.5 * m * a * a])


def build(cfg: dict, src: str = "<config>") -> tuple[Model, State]:
    """The grinding world and its start State (the tool at the path's first point, in the air)."""
    c = cfg["contact"]
    if c["clustering"] != "none":
        raise config_mod.ConfigError(f"{src}: contact.clustering: the tip's contacts are exact already "
                                     f"(at most 2): use \"none\", got {c['clustering']!r}")
    g = cfg["grinding"]
    wp = workpiece(cfg, src)
    R_ws, p_ws = frame(wp)
    mass, J = grinder_mass(cfg)
    body = RigidBody(name=cfg["parts"]["moving"], mass=mass, inertia_b=J, com_part=np.zeros(3))
    shapes = (Workpiece(name=cfg["parts"]["static"], R_bs=R_ws, p_bs=p_ws, workpiece=wp),
              Sphere(name=cfg["parts"]["moving"], body=0, p_bs=np.array([0.0, 0.0, -g["tool_length"]]),
                     radius=g["tip_radius"]))
    K, D = drive_gains(cfg)
    model = Model(bodies=(body,), shapes=shapes, pairs=(ContactPair(a=1, b=0),), contact=contact_params(c),
                  drive=Drive(K[None], D[None]), dt=cfg["scenario"]["dt"], gravity=np.zeros(3), hand_body=0)
    check_shapes(model, src)
    if cfg["arm"]["robot"] == "panda":
        from dataclasses import replace
        model = replace(model, systems=(arm_system(cfg, K, D, body=0),))
    path = control(cfg, src).path
    tip, n = path.tip(0.0)
    state = State(0.0, (tip + g["tool_length"] * n)[None], geo.tool_rotation(n)[None], np.zeros((1, 6)))
    return model, step_mod.start(model, state)


def dims(cfg: dict, src: str = "<config>") -> tuple[dict, dict]:
    g = cfg["grinding"]
    return ({"bar_radius": g["bar_radius"], "length": g["length"], "bead_radius": g["bead_radius"],
             "bead_height": g["bead_height"]},
            {"tip_radius": g["tip_radius"], "tool_length": g["tool_length"], "tool_radius": g["tool_radius"],
             "com_part": [0.0, 0.0, 0.0], "lowest_part": [0.0, 0.0, -(g["tool_length"] + g["tip_radius"])]})


def figures(res) -> dict:
    """The RMS normal-force error once in contact (module docstring), from the loop's record
    (``RunResult.control``); its target."""
    loop = getattr(res, "control", None)
    if loop is None or not loop.force:
        return {"task_target": f"normal force within {100 * TARGET_RMS:g} % RMS", "task_target_met": False,
                "normal_force_rms_error_pct": math.nan, "normal_force_set_N": math.nan}
    out = force_figures(loop)
    out["task_target"] = f"normal force within {100 * TARGET_RMS:g} % RMS of {loop.spec.force:g} N once in contact"
    out["task_target_met"] = bool(out["normal_force_rms_error_pct"] <= 100 * TARGET_RMS)
    return out


def force_figures(loop: ForceLoop) -> dict:
    F = np.array(loop.force)
    on = np.array(loop.on, bool)
    F_set = loop.spec.force
    reached = np.flatnonzero(on & (F >= F_set))
    if not len(reached):
        return {"normal_force_rms_error_pct": math.inf, "normal_force_set_N": F_set, "contact_from_s": None,
                "normal_force_mean_N": math.nan, "normal_force_min_N": math.nan, "normal_force_max_N": math.nan,
                "measured_steps": 0}
    sel = on.copy()
    sel[:reached[0]] = False
    e = F[sel] - F_set
    return {"normal_force_rms_error_pct": float(100 * np.sqrt(np.mean(e * e)) / F_set),
            "normal_force_set_N": F_set, "contact_from_s": float(loop.t[reached[0]]),
            "normal_force_mean_N": float(F[sel].mean()), "normal_force_min_N": float(F[sel].min()),
            "normal_force_max_N": float(F[sel].max()), "measured_steps": int(sel.sum())}


def grinder_mesh(cfg: dict, segments: int = 32) -> TriMesh:
    """The view's grinder (body frame, origin at the COM): a cylinder of the tool's radius from
    the COM's height + tool_length down to the tip's centre, and the tip's ball."""
    g = cfg["grinding"]
    a, L, r = g["tool_radius"], g["tool_length"], g["tip_radius"]
    th = np.linspace(0.0, 2 * math.pi, segments, endpoint=False)
    ring = np.column_stack([np.cos(th), np.sin(th)])
    V, F = [], []
    top, bot = L, -L + r          # the shank stops where the ball starts
    rs = min(a, 0.6 * r)          # the shank narrows to a spindle above the tip
    V += [np.column_stack([a * ring, np.full(segments, top)]), np.column_stack([a * ring, np.full(segments, 0.0)]),
          np.column_stack([rs * ring, np.full(segments, bot)])]
    for k in range(2):
        o = k * segments
        for j in range(segments):
            j1 = (j + 1) % segments
            F += [(o + j, o + segments + j, o + j1), (o + j1, o + segments + j, o + segments + j1)]
    c0 = 3 * segments
    V.append(np.array([[0.0, 0.0, top]]))
    F += [(c0, j, (j + 1) % segments) for j in range(segments)]
    # the ball: latitude rings
    lat = np.linspace(0.0, math.pi, segments // 2 + 1)[1:-1]
    base = c0 + 1
    for phi in lat:
        V.append(np.column_stack([r * math.sin(phi) * ring, np.full(segments, -L + r * math.cos(phi))]))
    nl = len(lat)
    for i in range(nl - 1):
        o = base + i * segments
        for j in range(segments):
            j1 = (j + 1) % segments
            F += [(o + j, o + segments + j, o + j1), (o + j1, o + segments + j, o + segments + j1)]
    V.append(np.array([[0.0, 0.0, -L + r], [0.0, 0.0, -L - r]]))
    n0, n1 = base + nl * segments, base + nl * segments + 1
    F += [(n0, base + (j + 1) % segments, base + j) for j in range(segments)]
    last = base + (nl - 1) * segments
    F += [(n1, last + j, last + (j + 1) % segments) for j in range(segments)]
    return TriMesh(np.concatenate(V), np.array(F, np.int64))


def meshes(cfg: dict, src: str = "<config>") -> dict:
    """The view's meshes: the workpiece (its frame) and the grinder (its body frame)."""
    return {cfg["parts"]["static"]: geo.mesh(workpiece(cfg, src)), cfg["parts"]["moving"]: grinder_mesh(cfg)}


# ---- the summary and HUD lines (``tasks.Task.line``, ``numbers``, ``hud``) --------------------

def task_line(fig: dict, verdict: str) -> str:
    return (f"normal force        RMS error {fig['normal_force_rms_error_pct']:.2f} % of "
            f"{fig['normal_force_set_N']:g} N once in contact, {fig.get('normal_force_min_N', math.nan):.3f} .. "
            f"{fig.get('normal_force_max_N', math.nan):.3f} N ({verdict})")


def hud_numbers(fig: dict) -> tuple[float, float]:
    """(the normal force's RMS error %, the set force N)."""
    return fig["normal_force_rms_error_pct"], fig["normal_force_set_N"]


def hud(value: float, aux: float, met: bool) -> str:
    if not math.isfinite(value):
        return f"normal force: set {aux:g} N (not pressing yet)"
    return f"normal force RMS error {value:.1f} % of {aux:g} N ({'target met' if met else 'target not met'})"
