"""The capstan law (Euler-Eytelwein) on the discrete cable: a cable wrapped theta round a fixed
drum with Coulomb friction mu holds a load T0 against a pull up to T0 e^(mu theta); beyond it
the whole wrap slides.  The must-show of issue 26 ("holds a load T0 against T0 e^(mu theta)
within 5 % at the slip threshold, independent of T0 and of the drum radius"), measured with
the shipped solver (``step.solve``'s coupled-island path, ``contact.solver`` "sor" or "pgs"),
the couplings' turns solved with the contacts (``TURN_PASSES``, as the shipped winding).

The scene (``build``).  The drum: a world ``shapes.Cylinder`` of radius R, axis world z through
the origin.  The cable (``scenarios.cable``, anchor "free", gravity off): ``n_in`` straight
links, ``n_wrap`` links on the drum, ``n_out`` straight links.  The wrap is the polygon that
circumscribes the helix of radius rho = R + r (r the cable's radius) and pitch p: vertex j at
angle j phi (phi = theta / n_wrap), radius rho / cos(phi/2), height p j phi / 2 pi, so each wrap
link's middle touches the drum and its ends stand rho (1/cos(phi/2) - 1) ~ rho phi^2/8 off it.
Consecutive turns are a pitch ``PITCH_DIAMETERS`` cable diameters apart (a gap of
PITCH_DIAMETERS - 1 diameters: the turns never touch; there are no link-link pairs anyway).
The straight ends leave vertices 0 and n_wrap along the helix's tangents there, t(0) and
t(theta) (t(phi) = (-sin phi, cos phi, b) / sqrt(1 + b^2), b = p / (2 pi rho)); the links are
placed with the stretch T0 / EA of the start's tension, at rest.

The loads (``Inputs.f_ext``, a force at the link's centre, world axes): link 0 (the load end)
is pulled back along -t(0) by T0, constant; the last link along t(theta) by T(t): T0 while the
cable settles (``SETTLE`` s), then the ramp T0 exp(s (t - SETTLE)), s = ``RAMP_RATE``.  An
exponential ramp gives every ratio T/T0 the same relative resolution s dt per step.  It is
quasi-static: s = 2 /s is 2 % of the slowest axial wave's rate round the wrap (c / L_cable,
c = sqrt(E / density) = 28 m/s for ``STRING``, L_cable <= 0.3 m up to 2 pi on the 40 mm drum
and 4 pi on the 20 mm one), 4 % at 4 pi on the 40 mm drum (0.53 m): the pull grows that much
while a wave crosses the cable, a bound on a lag that would read high (that drum's 4 pi, mu 0.1
row is the grid's highest, +2.6 %, docs/cable.md).  The joints' damping
(D = 1e-3 s K) adds a force ~1e-3 K v per joint, far below 1e-3 T0 at the creep speeds
before the slip (measured |v| < 1e-5 m/s).  Slip: link 0 has moved
``SLIP_TRAVEL`` along t(0) since the ramp began, and the ratio is T/T0 where that motion began
(its speed above ``SLIP_SPEED`` from then on).  Before gross slip the load end's part of the
wrap sticks: the slip zone of an extensible belt grows from the pulled end and reaches the load
end only at T0 e^(mu theta).

The law's theta is the turning of the tension.  On the helix the tension turns by theta cos(alpha)
(its curvature rho / (rho^2 + c^2), c = p / 2 pi, over the length theta sqrt(rho^2 + c^2)),
alpha the helix angle: at the default pitch (4 diameters, 1 mm, over rho = 20.125 mm) 1 -
cos(alpha) = 3.1e-5, a change of e^(mu theta) by at most 0.02 % (mu theta = 2 pi): ``reference``
gives both.

The string (``STRING``): r = 0.125 mm, E = 16 GPa (a stiff fibre, below aramid's ~70 GPa:
EA = 785 N, EI = 3.1e-6 N m^2), made heavy (2e7 kg/m^3) and damped (``STRING``'s comment says
why: the step must resolve the links' modes; neither changes the statics).  Bending: a rod of
stiffness EI on a drum changes the capstan ratio by ~EI / (T R^2) (the moment EI / rho is
constant along the wrap; only the entry and exit carry it); with T >= T0 >= 1 N and R >= 20 mm
that is <= 0.8 %.  Stretch: T/EA <= 0.06 for mu theta <= pi (23 T0, T0 <= 2 N); at mu theta =
2 pi (535 T0) it would stretch by 70-140 %, so that case (4 pi, mu 0.5) takes ``STIFF_STRING``
(r / 2, E and density x16 again: EA 3,140 N, EI the same) at loads T0 = 0.5 N on the 20 mm
drum and 1 N on the 40 mm one (``STIFF_CASES``): strain <= 0.17, bending <= 1.6 %.  The law
holds for an extensible belt at gross slip (it is local: dT = mu T dtheta), but the discrete
string departs from it when stretched far: its links are rigid and keep their length, so each
joint opens by the strain times a link, and with r = 0.25 mm and E = 1 GPa (EA = 196 N, the
string before 2026-11-27) 2 pi, mu 0.5, T0 = 2 N, R = 40 mm (46 N, 24 % strain) held 21.6 T0
against 23.1 (-6.5 %; measured).  The string was made thinner and stiffer with EI unchanged --
EA 4x, so 6 % strain there -- because the law is one of an inextensible, perfectly flexible
string: 4x stiffer in both (E 4 GPa) met that case (-0.8 %) but moved the bending's share at
T0 = 1 N, R = 20 mm to -4 % (measured; docs/cable.md "The capstan law").
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from sim_core import step as step_mod
from sim_core.scenarios import cable as cable_mod
from sim_core.shapes import Cylinder
from sim_core.types import ContactPair, ContactParams, Inputs, Material, Model, State

# The string (module docstring): its density is 16,000 times a polymer's and its joints are
# damped (D = 1e-3 s K): at a polymer's 1250 kg/m^3 and no damping the links' axial and twist
# modes (omega T ~ 450 at T = 1 ms) are far beyond what the step resolves -- the free string
# alone blew up in 20 steps (measured on r = 0.25 mm, E = 1 GPa), and 1000x heavy but undamped it
# chattered on the drum (the load end crept from 0.7 e^(mu theta) on).  Neither changes the
# statics, which is all the law is about.  Against that measured string (r = 0.25 mm, E = 1 GPa,
# 1.25e6 kg/m^3) this one has r / 2, E and density x16: EA, GA and the mass per length x4, EI,
# GJ and the section's rotary inertia per length x1 -- the links' axial, shear and twist modes
# and the wave speed sqrt(E / density) = 28 m/s as they were; their bending modes run at half
# their frequency (a link's transverse inertia ~ m L^2 / 12 grows 4x at EI / L unchanged),
# better resolved by the step.
STRING = cable_mod.CableSpec(radius=1.25e-4, length=1.0, density=2.0e7, E=1.6e10, nu=0.4, damping=1.0e-3)
# 4 pi at mu 0.5 (535 T0): STRING scaled as STRING was from the string before it (r / 2, E and
# density x16: EA 4x, EI, the modes' frequencies and the wave speed unchanged), so the pull
# stretches it <= 17 % (T0 = 1 N; 8.5 % at 0.5 N).  The loads keep the bending's share EI /
# (T0 R^2) at 1.6 % (0.5 N, R = 20 mm) and 0.2 % (1 N, 40 mm).  Measured (2026-11-28): -2.49 %
# and +1.70 % (docs/cable.md "The capstan law").
STIFF_STRING = replace(STRING, radius=STRING.radius / 2, E=16 * STRING.E, density=16 * STRING.density)
STIFF_CASES = ((0.5, 0.02), (1.0, 0.04))    # (T0 N, R m) of 4 pi, mu 0.5 on STIFF_STRING
PITCH_DIAMETERS = 4.0      # the helix's pitch in cable diameters (turns 3 diameters apart)
MAX_LINK_TURN = 0.1        # rad: the most a wrap link turns the cable (the chord's angle phi)
STRAIGHT_LINKS = 3         # links on each straight end
DT = 1.0e-3                # s
SETTLE = 0.02              # s at T = T0 before the ramp
RAMP_RATE = 2.0            # 1/s: T = T0 exp(s t) (0.2 % a step)
# Gross slip: link 0 has travelled SLIP_TRAVEL along t(0) since the ramp began; the threshold is
# the ramp's ratio where that run began, the first step after which link 0's speed along t(0)
# stayed above SLIP_SPEED.  A bare distance of 20 um was fooled: the wrap can sink into the drum
# by ~50 um in a few steps (measured at pi, mu 0.3, R = 40 mm, T ~ 0.52 T0 e^(mu theta)), which
# moves the load end by up to the sink times theta and then holds (its speed pulses +-6e-3 m/s
# and turns back); in gross slip the speed only grows (1e-2 -> 0.6 m/s over 40 steps, measured).
SLIP_TRAVEL = 1.0e-3       # m
SLIP_SPEED = 1.0e-3        # m/s
BAND = 2.0e-4              # m, the link-drum pairs' detection band
# beta of the link-drum pairs: none.  With 0.2 the SOR solver's budgeted push-out
# (``contact.solvers.push_out``: penetrations pushed out at beta d / T, paid from the energy the
# friction dissipated) lifts links that rest ~40 um deep while friction holds them, and the wrap
# creeps from 0.83 T0 e^(mu theta) on (pi/2, mu 0.3, T0 = 2 N, R = 40 mm: the slip read 7.6 %
# low, converged at 2000 sweeps; beta = 0: +0.3 %; PGS, whose targets are capped, at 0.2: -0.3 %;
# measured).  The depth stays < 1e-4 m, a 0.5 % change of the drum's radius that the law ignores.
PENETRATION_GAIN = 0.0


# The couplings' turns solved with the contacts (``step.turn_passes``), as the shipped winding
# does: with the turns predicted without the contacts (0), 4 pi, mu 0.3, T0 = 2 N, R = 40 mm blew up
# at the wrap's exit after a correct slip onset and read +16 %; with them -0.19 % (docs/cable.md)
TURN_PASSES = 4


@dataclass(frozen=True)
class Capstan:
    """One case of the law."""
    theta: float                   # rad, the wrap angle
    mu: float                      # Coulomb friction of the link-drum pairs
    T0: float = 1.0                # N, the load
    R: float = 0.02                # m, the drum's radius
    solver: str = "sor"            # contact.solver
    iterations: int = 400          # the solver's sweep cap (sor_iterations and pgs_iterations)
    spec: cable_mod.CableSpec = STRING
    turn_passes: int = TURN_PASSES  # contact.turn_passes: the couplings' turns solved with the contacts


@dataclass(frozen=True)
class Scene:
    model: Model
    state: State
    t_in: np.ndarray               # (3,) world unit: the cable's direction at the load end, toward the drum
    t_out: np.ndarray              # (3,) world unit: its direction at the pulled end, away from the drum
    n_wrap: int
    phi: float                     # rad, each wrap link's turn
    b: float                       # the helix's slope p / (2 pi rho)


def _tangent(phi: float, b: float) -> np.ndarray:
    return np.array([-math.sin(phi), math.cos(phi), b]) / math.sqrt(1.0 + b * b)


def _frame(ex: np.ndarray) -> np.ndarray:
    """A rotation whose x is ex (its y as near world z x ex as may be)."""
    ey = np.cross([0.0, 0.0, 1.0], ex)
    ey /= np.linalg.norm(ey)
    return np.column_stack([ex, ey, np.cross(ex, ey)])


def build(case: Capstan) -> Scene:
    """The scene of the module docstring for one case."""
    if not (case.theta > 0 and case.mu >= 0 and case.T0 > 0 and case.R > 0):
        raise ValueError(f"capstan.build: need theta > 0, mu >= 0, T0 > 0, R > 0, got {case}")
    spec = case.spec
    r = spec.radius
    rho = case.R + r
    n_wrap = max(1, math.ceil(case.theta / MAX_LINK_TURN - 1e-9))
    phi = case.theta / n_wrap
    pitch = PITCH_DIAMETERS * 2.0 * r
    b = pitch / (2.0 * math.pi * rho)
    A = spec.sections()[0]
    eps0 = case.T0 / (spec.E * A)
    rv = rho / math.cos(phi / 2.0)
    verts = np.array([(rv * math.cos(j * phi), rv * math.sin(j * phi), pitch * j * phi / (2 * math.pi))
                      for j in range(n_wrap + 1)])
    chord = float(np.linalg.norm(verts[1] - verts[0]))
    L = chord / (1.0 + eps0)       # a link and its joint's stretch span a chord
    t_in, t_out = _tangent(0.0, b), _tangent(case.theta, b)
    n_in = n_out = STRAIGHT_LINKS
    centres, axes = [], []
    for i in range(n_in):          # link n_in - 1 ends at vertex 0
        centres.append(verts[0] - t_in * chord * (n_in - i - 0.5))
        axes.append(t_in)
    for j in range(n_wrap):
        centres.append(0.5 * (verts[j] + verts[j + 1]))
        axes.append((verts[j + 1] - verts[j]) / chord)
    for i in range(n_out):
        centres.append(verts[-1] + t_out * chord * (i + 0.5))
        axes.append(t_out)
    n = len(centres)
    spec_n = replace(spec, length=L * n)
    drum = Cylinder(name="drum", R_bs=np.eye(3), p_bs=np.zeros(3), radius=case.R,
                    half_length=pitch * case.theta / (2 * math.pi) + 0.05)
    mat = Material(case.mu, PENETRATION_GAIN, BAND)
    contact = ContactParams(friction=case.mu, clusters=12, band=BAND, broadphase_margin=2e-3, normal_scale=0.01,
                            penetration_gain=PENETRATION_GAIN, pgs_iterations=case.iterations,
                            pgs_tolerance=1e-10, solver=case.solver, sor_iterations=case.iterations,
                            sor_tolerance=1e-10, clustering="none", turn_passes=case.turn_passes)
    model, _ = cable_mod.build(n, spec_n, DT, contact, shapes=(drum,),
                               pairs=tuple(ContactPair(i, n, material=mat) for i in range(n)),
                               anchor="free", gravity=np.zeros(3))
    p = np.array(centres)
    R = np.array([_frame(a) for a in axes])
    return Scene(model, State(0.0, p, R, np.zeros((n, 6))), t_in, t_out, n_wrap, phi, b)


def reference(case: Capstan, b: float) -> tuple[float, float]:
    """(e^(mu theta), e^(mu theta cos alpha)): the law, and the law on the helix of slope b."""
    return math.exp(case.mu * case.theta), math.exp(case.mu * case.theta / math.sqrt(1.0 + b * b))


def polygon_growth(mu: float, phi: float) -> float:
    """The tension's growth per link at the slip threshold of rigid links, pin-jointed, each a
    chord turning phi and touching the drum at its middle (no bending stiffness): the larger
    eigenvalue of the map (T_-, N) of one link to the next's.  A link's moments about its
    middle make its two joint forces' normal parts equal, N/2 each; its axial balance at the
    slip is T_+ = T_- + mu N; the joint turns the force by phi into the next link's frame:
        T'_- = T_+ cos phi + (N / 2) sin phi,    N' = 2 T_+ sin phi - N cos phi.
    (Frictionless: N = 2 T tan(phi/2).)  It tends to e^(mu phi) as phi -> 0; at phi = 0.1 its
    log is short of mu phi by 0.17 % (mu 0.1) to 0.21 % (mu 0.5): e^(mu theta) less 0.2 % at
    theta = 4 pi, mu 0.1 and 1.3 % at mu 0.5."""
    c, s = math.cos(phi), math.sin(phi)
    M = np.array([[c, mu * c + 0.5 * s], [2.0 * s, 2.0 * mu * s - c]])
    return float(np.max(np.linalg.eigvals(M).real))


@dataclass
class Result:
    ratio: float                   # T / T0 at the slip threshold (nan: no slip up to the cap)
    steps: int
    max_sweeps: int                # the solver's most sweeps in a step
    capped: int                    # steps whose solve reached the sweep cap
    end_share: float               # the end contacts' share of the wrap's normal force at the threshold
    contacts: float                # contacts per wrap link at the threshold
    penetration: float             # m, the deepest at the threshold


def run(case: Capstan, cap: float = 1.3) -> Result:
    """Settle at T = T0, ramp T until link 0 slips (``SLIP_TRAVEL``) or T / T0 reaches `cap`
    e^(mu theta); the ratio where the slip began (``SLIP_SPEED``), the contacts' figures there."""
    sc = build(case)
    model, st = sc.model, step_mod.start(sc.model, sc.state)
    n = model.n_bodies
    f = np.zeros((n, 6))
    f[0, :3] = -case.T0 * sc.t_in
    eye = np.tile(np.eye(3), (n, 1, 1))
    zero = np.zeros((n, 3))
    top = cap * math.exp(case.mu * case.theta)
    x0, onset = None, None
    steps, max_sweeps, capped = 0, 0, 0
    cap_sweeps = case.iterations
    while True:
        t = st.t
        ratio = 1.0 if t < SETTLE else math.exp(RAMP_RATE * (t - SETTLE))
        if ratio > top:
            return Result(float("nan"), steps, max_sweeps, capped, float("nan"), float("nan"), float("nan"))
        f[-1, :3] = case.T0 * ratio * sc.t_out
        st, info = step_mod.step(model, st, Inputs(st.p_w, eye, zero, zero, f))
        steps += 1
        max_sweeps = max(max_sweeps, info.sweeps)
        capped += info.sweeps >= cap_sweeps
        if x0 is None and st.t >= SETTLE - 1e-12:
            x0 = float(st.p_w[0] @ sc.t_in)
        if x0 is None:
            continue
        if onset is None or float(st.V[0, :3] @ sc.t_in) <= SLIP_SPEED:
            onset = (ratio, _contact_stats(sc, info))        # the last pull the load end held
        if float(st.p_w[0] @ sc.t_in) - x0 > SLIP_TRAVEL:
            return Result(onset[0], steps, max_sweeps, capped, *onset[1])


def _contact_stats(sc: Scene, info) -> tuple[float, float, float]:
    """The end contacts' share of the wrap links' normal force, contacts per wrap link, and the
    deepest penetration (``analytic.capsule_cylinder``: key 0 the closest point, 1 and 2 the ends)."""
    c = info.contacts
    lam_n = np.einsum("mi,mi->m", info.forces_w, c.n_w)
    wrap = (c.body >= STRAIGHT_LINKS) & (c.body < STRAIGHT_LINKS + sc.n_wrap)
    end = wrap & (c.idx % 3 != 0) if c.idx is not None else np.zeros(len(c), bool)
    total = lam_n[wrap].sum()
    share = float(lam_n[end].sum() / total) if total > 0 else float("nan")
    return share, float(wrap.sum() / sc.n_wrap), float(info.max_penetration)


THETAS = (0.5 * math.pi, math.pi, 2 * math.pi, 4 * math.pi)
MUS = (0.1, 0.3, 0.5)


def table(cases) -> list[tuple]:
    """Rows (theta, mu, T0, R, measured ratio, e^(mu theta), relative error, sweeps) of ``run``."""
    rows = []
    for case in cases:
        res = run(case)
        law = math.exp(case.mu * case.theta)
        rows.append((case.theta, case.mu, case.T0, case.R, res.ratio, law, res.ratio / law - 1.0, res))
    return rows


if __name__ == "__main__":          # python -m sim_core.scenarios.capstan [sor|pgs]: docs/cable.md's table
    import sys
    solver = sys.argv[1] if len(sys.argv) > 1 else "sor"
    # 4 pi at mu 0.5 (535 T0) would stretch STRING by 70-140 %: it takes STIFF_STRING (docstring)
    cases = [Capstan(th, mu, T0, R, solver) for th in THETAS for mu in MUS for T0, R in ((1.0, 0.02), (2.0, 0.04))
             if mu * th < 2 * math.pi - 1e-9]
    cases += [Capstan(4 * math.pi, 0.5, T0, R, solver, spec=STIFF_STRING) for T0, R in STIFF_CASES]
    print("| theta | mu | T0 N | R m | T/T0 at slip | e^(mu theta) | error | steps capped | end | deepest um |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for th, mu, T0, R, ratio, law, err, res in table(cases):
        print(f"| {th / math.pi:.2g} pi | {mu} | {T0:g} | {R} | {ratio:.4f} | {law:.4f} | {err:+.2%} | "
              f"{res.capped}/{res.steps} | {res.end_share:.2f} | {res.penetration * 1e6:.0f} |", flush=True)
