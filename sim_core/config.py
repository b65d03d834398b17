"""Scenario configuration: TOML files validated on load against one schema.

Every error is one line naming the file and the dotted key, e.g.
``config/bolting.toml: contact.friction: must be >= 0, got -0.1``.
The schema below is also the configuration reference (README.md prints the same table).
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """A one-line, file-and-key-naming configuration error."""


@dataclass(frozen=True)
class Field:
    kind: str                 # "float", "int", "str", "vec3", "vec2", "enum"
    default: Any = None       # None: required
    lo: float | None = None   # inclusive lower bound
    hi: float | None = None   # inclusive upper bound
    gt: float | None = None   # exclusive lower bound
    choices: tuple = ()
    unit: str = ""
    doc: str = ""


# Bounds, each with its reason (a legal but absurd value either never ends or fails deep
# inside with an error that names nothing):
MAX_DURATION = 3600.0     # s: an hour of simulated time; longer studies are several runs
MAX_STEPS = 10_000_000    # duration / dt: ~3 h of stepping at the bolting step's 1 ms (headless)
REACH = 1.5               # m: every position within 1.5 m of the static part (the Panda reaches 0.855 m
                          # from its base; a part further away is a unit error, mm for m say)
MAX_TURN_DEG = 36_000.0   # deg: a hundred turns of yaw (a nut needs five)
MAX_TILT_DEG = 90.0       # deg: beyond that the part is upside down
MAX_DT = 1.0              # s: seed 001's Table 1 steps at 128 ms and more; PMI takes any step (its
                          # Coriolis point converges while T |w| < ~2, dynamics/pmi.py), a longer
                          # one is a unit error (ms for s)
MAX_PINS = 20             # seed 004's real-time figure is for 20 pins
MAX_CABLE_LINKS = 1000    # seed 002's real time is at 160 links (4.7 ms a 10 ms step on 4 cores); the
                          # work grows linearly, so 1000 links cannot keep a 10 ms step on 2 cores
MAX_CABLE_LENGTH = 10.0   # m: ten times the Panda's reach; longer is a unit error (mm for m)
_WAYPOINT = {
    "t": Field("float", lo=0.0, hi=MAX_DURATION, unit="s", doc="time of the waypoint"),
    "position": Field("vec3", lo=-REACH, hi=REACH, unit="m", doc="set position of the moving part's centre (world)"),
    "yaw_deg": Field("float", 0.0, lo=-MAX_TURN_DEG, hi=MAX_TURN_DEG, unit="deg", doc="set rotation about world z"),
    "tilt_deg": Field("vec2", (0.0, 0.0), lo=-MAX_TILT_DEG, hi=MAX_TILT_DEG, unit="deg",
                      doc="set tilt about x then y"),
}

SCHEMA: dict[str, dict[str, Field]] = {
    "scenario": {
        "name": Field("str", doc="label printed in the summary"),
        "task": Field("enum", choices=("peg_in_hole", "bolting", "docking", "bouncing_ball", "grinding",
                                       "cable_winding", "snap_fit"),
                      doc="which task metrics apply"),
        "duration": Field("float", gt=0.0, hi=MAX_DURATION, unit="s", doc="simulated time of a run"),
        "dt": Field("float", 0.01, lo=1e-4, hi=MAX_DT, unit="s",
                    doc="physics step T (0.1 ms .. 1 s; at most 10 million steps a run)"),
    },
    "parts": {
        "static": Field("str", doc="asset name of the fixed part (hole, bolt_M48x5, ...; docking: a label, "
                                   "the block is built from [docking])"),
        "moving": Field("str", doc="asset name of the moving part (peg, nut_M48x5, ...; docking: a label, "
                                   "the pin plate is built from [docking])"),
        "density": Field("float", lo=100.0, hi=25000.0, unit="kg/m^3",
                         doc="density of the moving part (foams to osmium)"),
    },
    "contact": {
        "friction": Field("float", 0.15, lo=0.0, hi=2.0, doc="Coulomb coefficient mu (clean metals 0.1-1)"),
        "clusters": Field("int", 12, lo=1, hi=10_000, doc="M_c: k-means clusters, or the body patches of the patch "
                                                 "clustering (each gives one representative per normal "
                                                 "direction it touches)"),
        "clustering": Field("enum", "patches", choices=("patches", "none", "learned", "kmeans", "kmeans_centroid"),
                            doc="contact clustering: fixed body patches split by normal direction "
                                "(depth-weighted centroids; docs/fidelity.md), none (every "
                                "detected node its own contact: the reference), the trained "
                                "interaction networks (assets/clustering/TASK.npz, 12 representatives), "
                                "k-means with each cluster's deepest member, or k-means centroids (the "
                                "seed's baseline)"),
        "fallback_depth": Field("float", 1e-4, gt=0.0, unit="m",
                                        doc="safety net: learned clustering hands a step whose deepest "
                                            "detected node is deeper than this to k-means (deepest "
                                            "members); patch clustering adds each group's deepest member "
                                            "that deep, and k-means takes steps 5x deeper (docs/clustering.md)"),
        "detector": Field("enum", "neural", choices=("exact", "neural"),
                          doc="static part's (snap_fit: the plug's) signed distance: exact geometry or the trained "
                              "network (assets/sdf/PART.npz)"),
        "band": Field("float", 2e-4, lo=0.0, hi=0.01, unit="m",
                      doc="nodes with signed distance below this are contact candidates"),
        "speculative": Field("enum", "predicted", choices=("predicted", "current"),
                             doc="a node not yet touching is linearized where it will be at the end "
                                 "of the step (its depth and normal there; it slides past a convex "
                                 "edge) or where it is now (the edge's plane stops it: ghost contact; "
                                 "docs/fidelity.md)"),
        "broadphase_margin": Field("float", 2e-3, lo=0.0, hi=0.05, unit="m",
                                   doc="slack around the static part's bounding volume"),
        "normal_scale": Field("float", 0.01, gt=0.0, unit="m",
                              doc="weight of the normal in k-means features [x, s n]"),
        "law": Field("str", "complementarity",
                     doc="the contact law (key of contact.materials.LAWS): complementarity (rigid contact: "
                         "Signorini and Coulomb); friction, penetration_gain, band and law are the world's "
                         "default material, which [materials.NAME] tables and [pairs] override per pair"),
        "penetration_gain": Field("float", 0.2, lo=0.0, hi=1.0,
                                  doc="fraction of a penetration removed per step (Signorini bias), paid from "
                                  "the energy the contacts took from the body: they do no net positive work"),
        "solver": Field("enum", "sor", choices=("sor", "pgs", "pgs_subspace"),
                        doc="contact solver: the seed's block SOR with maximum dissipation, the "
                            "projected Gauss-Seidel baseline, or PGS warm-started with subspace steps "
                            "(holds a stiff chain; seed 002's friction law)"),
        "cspace": Field("enum", "off", choices=("on", "off"),
                        doc="C-space constraint of the seed solver (assets/cspace/STATIC__MOVING.npz); "
                            "off by default: measured, it does not lower penetration here (docs/contact_solving.md)"),
        "sor_relaxation": Field("float", 1.0, gt=0.0, hi=1.0,
                                doc="SOR relaxation alpha (<= 1 keeps every iterate in the cone)"),
        "sor_iterations": Field("int", 100, lo=1, hi=100_000, doc="block SOR sweeps (max)"),
        "sor_tolerance": Field("float", 1e-6, gt=0.0, unit="N",
                               doc="stop when no contact's force is further than this from its "
                                   "single-contact solution"),
        "pgs_iterations": Field("int", 50, lo=1, hi=100_000, doc="projected Gauss-Seidel sweeps (max)"),
        "pgs_tolerance": Field("float", 1e-10, gt=0.0, unit="N",
                               doc="stop when no force changes by more than this"),
        "island_solver": Field("enum", "direct", choices=("direct", "direct_dense", "subsystems",
                                                          "subsystems_regulated"),
                               doc="a coupled island (a chain, a cable): factorized whole on its blocks, "
                                   "or dense (seed 002 Solver 1), or cut into subsystems solved in "
                                   "parallel (Solver 2, Algorithm 1; with the post-regulation: Solver 3; "
                                   "with solver pgs_subspace these end on the island's normal forces "
                                   "solved at once, which holds a wound coil; docs/cable.md)"),
        "subsystems": Field("int", 8, lo=1, hi=10_000, doc="n_s: subsystems of consecutive bodies a coupled "
                                                           "island is cut into (subsystem solvers)"),
        "subsystem_split": Field("enum", "links", choices=("links", "balanced"),
                                 doc="the runs' lengths: the same links each (seed 002), or about the same "
                                     "links + contacts each (faster: a run's sweep costs its contacts squared; "
                                     "on the winding Solver 3 then freezes sooner, docs/cable.md)"),
        "island_iterations": Field("int", 100, lo=1, hi=100_000, doc="l_max of the subsystem iteration"),
        "island_tolerance": Field("float", 1e-6, gt=0.0, unit="N",
                                  doc="subsystem iteration: stop when no cut coupling's force and no contact "
                                      "force changes by more than this"),
        "regulation_xi": Field("float", 1.0, gt=0.0, hi=1e6, unit="N",
                               doc="xi of the post-regulation (seed 002 eq. (16), on forces): how far the "
                                   "contacts' sweep at the first iteration may move a cut coupling's force; "
                                   "a sweep that moves one further is undone"),
        "regulation_alpha": Field("float", 0.7, gt=0.0, hi=0.999,
                                  doc="alpha of eq. (16): the allowed change shrinks by this factor per iteration"),
        "friction_exponent": Field("float", 1.0, gt=0.0, hi=2.0,
                                   doc="N of the friction law: tangential force <= friction f_n^N (seed 002 "
                                       "eq. (8), on forces, so independent of the step; 1: Coulomb; != 1 needs "
                                       "solver pgs)"),
        "impact_splits": Field("int", 3, lo=0, hi=6,
                               doc="a step in which a rigid contact arrives fast is taken again as two halves, "
                                   "at most this many levels (2: quarter steps; 0: never): the overshoot of an "
                                   "impact at speed u is T u / 2 (docs/contact_solving.md)"),
        "turn_passes": Field("int", 0, lo=0, hi=50,
                             doc="a cable's couplings and its contacts solved together: after the contact solve, "
                                 "up to this many passes re-take the couplings at the turns the solve reached "
                                 "and solve the contacts again, until the coupled system holds with the "
                                 "contacts (0: the turns predicted without the contacts; island_solver direct "
                                 "or direct_dense; docs/cable.md \"Turns with the contacts\")"),
        "impact_tolerance": Field("float", 1e-5, gt=0.0, hi=1e-2, unit="m",
                                  doc="the penetration a rigid contact may gain in one step before the step "
                                      "is halved"),
    },
    "arm": {
        "robot": Field("enum", "panda", choices=("panda", "off"),
                       doc="the Panda holds the part and its tool follows the set pose by admittance "
                           "control (gains: [drive]); off: the spring-damper drive acts on the part"),
        "gripper": Field("enum", "fixed", choices=("fixed", "turning"),
                         doc="fixed: the Panda's 7 joints hold the part; turning: an infinite-turn gripper "
                             "joint turns it without end (fastening a nut) while the wrist holds still"),
        "base_position": Field("vec3", (-0.45, 0.0, -0.2), lo=-REACH, hi=REACH, unit="m",
                               doc="the arm's base (world)"),
        "grasp_offset": Field("float", 0.03, lo=-0.2, hi=0.2, unit="m",
                              doc="tool point from the part's centre along its axis (the tool points down it)"),
        "coupling_stiffness": Field("vec2", (1e5, 200.0), lo=0.0, hi=1e8, unit="N/m, N m/rad",
                                    doc="grasp: stiff potential between tool and part (linear, angular)"),
        "coupling_damping": Field("vec2", (300.0, 0.5), lo=0.0, hi=1e6, unit="N s/m, N m s/rad",
                                  doc="grasp damping (linear, angular)"),
    },
    "drive": {
        # an industrial arm's admittance stays far below these; beyond them the step's linear
        # system loses its digits (a 1e12 N/m drive gave "Singular matrix")
        "stiffness_linear": Field("vec3", unit="N/m", lo=0.0, hi=1e7, doc="spring to the set position (world x y z)"),
        "damping_linear": Field("vec3", unit="N s/m", lo=0.0, hi=1e6, doc="damper to the set velocity"),
        "stiffness_angular": Field("vec3", unit="N m/rad", lo=0.0, hi=1e5,
                                   doc="spring to the set rotation (body axes)"),
        "damping_angular": Field("vec3", unit="N m s/rad", lo=0.0, hi=1e4,
                                 doc="damper to the set angular velocity"),
    },
    "docking": {
        # seed 004: a servicer's plate with centering pins (capsules) docks into a block of
        # capsule holes.  Read only when scenario.task = "docking".
        "pins": Field("int", 4, lo=1, hi=MAX_PINS, doc="number of pins (and holes), 1 to 20"),
        "layout": Field("enum", "grid", choices=("grid", "circle"),
                        doc="grid: rows x cols positions (docking.grid), filled row by row; "
                            "circle: the pins evenly on a circle"),
        "grid": Field("vec2", (2.0, 2.0), lo=1.0, hi=float(MAX_PINS), doc="rows and columns of the grid layout"),
        "spacing": Field("float", 0.06, gt=0.0, hi=0.5, unit="m",
                         doc="distance between neighbouring pin axes (grid pitch; chord on the circle)"),
        "pin_diameter": Field("float", 0.035, gt=0.0, hi=0.2, unit="m", doc="pin (capsule) diameter; the seed's 35 mm"),
        "hole_diameter": Field("float", 0.0352, gt=0.0, hi=0.2, unit="m",
                               doc="hole diameter, >= the pin's (zero clearance allowed); 0.2 mm of play by default"),
        "pin_length": Field("float", 0.045, gt=0.0, hi=0.5, unit="m",
                            doc="pin cylinder below the plate (the tip's hemisphere is under it)"),
        "hole_depth": Field("float", 0.04, gt=0.0, hi=0.5, unit="m",
                            doc="hole cylinder under the top face (its hemisphere is under it)"),
        "block_height": Field("float", 0.07, gt=0.0, hi=1.0, unit="m", doc="block thickness, >= hole depth + radius"),
        "plate_thickness": Field("float", 0.012, gt=0.0, hi=0.2, unit="m", doc="the pin plate's thickness"),
        "border": Field("float", 0.03, gt=0.0, hi=0.5, unit="m",
                        doc="plate and block material beyond the outer pins' axes"),
        "gravity": Field("enum", "off", choices=("off", "on"),
                         doc="off: a space servicer (and the seed's simulation); on: 9.81 m/s^2 along world -z"),
        "seat_tolerance": Field("float", 5e-4, gt=0.0, hi=0.01, unit="m",
                                doc="seated: every pin's tip within this of its hole's bottom"),
    },
    "grinding": {
        "bar_radius": Field("float", 0.1, gt=0.0, hi=1.0, unit="m", doc="the workpiece bar's radius (its convex face)"),
        "length": Field("float", 0.2, gt=0.0, hi=1.0, unit="m", doc="the bar's (and bead's) length along world x"),
        "bead_radius": Field("float", 0.004, gt=0.0, hi=0.05, unit="m", doc="the weld bead's cross-section radius"),
        "bead_height": Field("float", 0.002, gt=0.0, hi=0.05, unit="m",
                             doc="the bead's crest above the bar's top, below bead_radius"),
        "tip_radius": Field("float", 0.005, gt=0.0, hi=0.05, unit="m", doc="the grinder's spherical tip"),
        "tool_length": Field("float", 0.1, gt=0.0, hi=0.5, unit="m", doc="from the grinder's COM to its tip's centre"),
        "tool_radius": Field("float", 0.025, gt=0.0, hi=0.2, unit="m", doc="the grinder body's radius (its inertia)"),
        "tool_mass": Field("float", 1.0, gt=0.0, hi=50.0, unit="kg", doc="the grinder's mass"),
        "normal_force": Field("float", 5.0, gt=0.0, hi=500.0, unit="N", doc="the set normal force (seed 001: 5 N)"),
        "force_kp": Field("float", 0.0, lo=0.0, hi=1.0, unit="m/N",
                          doc="force loop: set-pose offset per newton of normal-force error"),
        "force_ki": Field("float", 0.01, lo=0.0, hi=10.0, unit="m/(N s)",
                          doc="force loop: integral gain on the normal-force error"),
        "max_offset": Field("float", 0.005, gt=0.0, hi=0.05, unit="m",
                            doc="force loop: the set pose's offset into the surface at most (anti-windup)"),
        "offset_rate": Field("float", 0.02, gt=0.0, hi=1.0, unit="m/s",
                             doc="force loop: the offset changes at most this fast (a touch ramps in)"),
        "spacing": Field("float", 0.004, gt=0.0, hi=0.1, unit="m", doc="arc length between neighbouring passes"),
        "passes": Field("int", 5, lo=1, hi=100, doc="passes parallel to the bead's crest line (zig-zag)"),
        "x_range": Field("vec2", (-0.025, 0.025), lo=-REACH, hi=REACH, unit="m",
                         doc="each pass from/to these x along the bar (within its length)"),
        "speed": Field("float", 0.02, gt=0.0, hi=1.0, unit="m/s", doc="feed along a pass and a step-over"),
        "turn_rate": Field("float", 0.5, gt=0.0, hi=10.0, unit="rad/s",
                           doc="the tool axis turns at most this fast (step-overs, the bead's crease)"),
        "approach": Field("float", 0.5, gt=0.0, hi=60.0, unit="s",
                          doc="time down to the first point (and up at the end)"),
        "clearance": Field("float", 0.003, lo=0.0, hi=0.1, unit="m",
                           doc="start height above the first point, along n"),
    },
    "cable": {
        "links": Field("int", 80, lo=1, hi=MAX_CABLE_LINKS,
                       doc="n: rigid cylindrical links of the cable (seed 002: 40 to 160; scenarios/cable.py)"),
        "radius": Field("float", 0.002, gt=0.0, hi=0.1, unit="m", doc="the cable's radius (seed 002: 2 mm)"),
        "length": Field("float", 0.4, gt=0.0, hi=MAX_CABLE_LENGTH, unit="m",
                        doc="the whole cable's length (seed 002: 0.4 m); a link is length / links"),
        "density": Field("float", 1250.0, lo=100.0, hi=25000.0, unit="kg/m^3",
                         doc="the cable's density (the seed gives none: a PVC-jacketed cable)"),
        "E": Field("float", 4.462e6, gt=0.0, unit="Pa", doc="Young's modulus (seed 002: 4.462 MPa, identified)"),
        "nu": Field("float", 0.5012, gt=-1.0, doc="Poisson's ratio; a rod uses only G = E / 2(1 + nu), so any "
                                                  "nu > -1 (seed 002's identified 0.5012 included)"),
        "damping": Field("float", 0.0, lo=0.0, hi=1.0, unit="s",
                         doc="stiffness-proportional damping of the joints: D = damping * K"),
        "twist_inertia": Field("float", 1.0, lo=0.0, hi=1e6,
                               doc="factor on the links' inertia about their own axis: > 1 lets the step "
                                   "resolve the twist; 0: the factor that resolves it at the scenario's links "
                                   "and step (cable.resolved_twist_inertia; docs/cable.md)"),
        "friction_kappa": Field("float", 1.296, lo=0.0, hi=10.0,
                                doc="kappa of seed 002 eq. (8), |lambda_t| <= kappa |lambda_n|^N (seed: 1.296)"),
        "friction_exponent": Field("float", 0.7616, gt=0.0, hi=2.0,
                                   doc="N of seed 002 eq. (8) (seed: 0.7616; 1 is Coulomb's law)"),
    },
    "winding": {
        "drum_radius": Field("float", 0.02, gt=0.0, hi=0.5, unit="m", doc="the fixed drum's radius (axis world z)"),
        "drum_length": Field("float", 0.08, gt=0.0, hi=1.0, unit="m", doc="the drum's length along its axis"),
        "drum_centre": Field("vec3", (0.05, 0.0, 0.05), lo=-REACH, hi=REACH, unit="m",
                             doc="the drum's axis point at the clamp's height (world)"),
        "pitch": Field("float", 0.008, gt=0.0, hi=0.1, unit="m", doc="the helix's rise per turn (at least the "
                                                                    "cable's diameter)"),
        "start_turns": Field("float", 1.5, lo=0.0, hi=20.0, doc="turns wound at the start"),
        "turns": Field("float", 1.0, lo=0.0, hi=20.0, doc="turns the arm winds"),
        "stretch": Field("float", 0.01, lo=0.0, hi=0.2, doc="the cable's stretch the arm keeps (strain)"),
        "settle": Field("float", 0.3, lo=0.0, hi=60.0, unit="s", doc="held still before winding"),
        "wind_time": Field("float", 10.0, gt=0.0, hi=600.0, unit="s", doc="the winding's length"),
        "tension_gain": Field("float", 0.03, lo=0.0, hi=1.0, unit="m/(N s)",
                              doc="the held end's free span lengthens by this per newton of missing tension "
                                  "per second (integral; 0: the geometric path alone)"),
    },
    "socket": {
        "length": Field("float", 0.012, gt=0.0, hi=0.2, unit="m", doc="snap_fit: a prong's height, foot to tip"),
        "width": Field("float", 0.008, gt=0.0, hi=0.2, unit="m", doc="snap_fit: a prong's width (y)"),
        "thickness": Field("float", 0.0025, gt=0.0, hi=0.05, unit="m", doc="snap_fit: a prong's thickness (x)"),
        "hook_depth": Field("float", 0.001, gt=0.0, hi=0.05, unit="m", doc="snap_fit: how far a hook reaches in"),
        "lead_angle": Field("float", 30.0, gt=0.0, hi=90.0, unit="deg",
                            doc="snap_fit: the hook's lead ramp from the insertion axis"),
        "return_angle": Field("float", 60.0, gt=0.0, hi=90.0, unit="deg",
                              doc="snap_fit: the hook's return face from the insertion axis (90: never lets go)"),
        "spacing": Field("float", 0.0035, gt=0.0, hi=0.1, unit="m",
                         doc="snap_fit: the prongs' inner faces at x = +-spacing"),
        "E": Field("float", 1.6476e8, gt=0.0, unit="Pa",
                   doc="snap_fit: Young's modulus (seed 003: ABS 1.6476e8 Pa; its \"164.7 Pa\" is a misprint)"),
        "nu": Field("float", 0.35, gt=-1.0, doc="snap_fit: Poisson's ratio, below 0.5 (a solid)"),
        "density": Field("float", 1040.0, lo=100.0, hi=25000.0, unit="kg/m^3", doc="snap_fit: the socket's density"),
        "mesh": Field("enum", "coarse", choices=("coarse", "fine"),
                      doc="snap_fit: the prong's mesh (quadratic tetrahedra; 648 / 1260 coordinates)"),
        "order_contact": Field("int", 0, lo=0, hi=100000,
                               doc="snap_fit: the contact segment's reduced order (0: its static shapes + 10)"),
        "order_foot": Field("int", 0, lo=0, hi=100000,
                            doc="snap_fit: the foot segment's reduced order (0: its static shapes + 10)"),
        "seat": Field("float", 0.007, lo=0.0, hi=0.2, unit="m", doc="snap_fit: height of the seat the plug lands on"),
    },
    "plug": {
        "head_half": Field("float", 0.0031, gt=0.0, hi=0.1, unit="m", doc="snap_fit: the plug head's half-width"),
        "head_height": Field("float", 0.002, gt=0.0, hi=0.1, unit="m", doc="snap_fit: the plug head's height"),
        "chamfer": Field("float", 0.0008, lo=0.0, hi=0.1, unit="m", doc="snap_fit: the head's 45 deg lower chamfer"),
        "neck_half": Field("float", 0.0023, gt=0.0, hi=0.1, unit="m", doc="snap_fit: the neck's half-width"),
        "mass": Field("float", 0.5, gt=0.0, hi=100.0, unit="kg",
                      doc="snap_fit: the admittance's mass (seed 003 eq. (5)); its spring and damper are [drive]'s"),
    },
    "start": {
        "position": Field("vec3", lo=-REACH, hi=REACH, unit="m", doc="initial centre of the moving part (world)"),
        "yaw_deg": Field("float", 0.0, lo=-MAX_TURN_DEG, hi=MAX_TURN_DEG, unit="deg",
                         doc="initial rotation about world z"),
        "tilt_deg": Field("vec2", (0.0, 0.0), lo=-MAX_TILT_DEG, hi=MAX_TILT_DEG, unit="deg",
                          doc="initial tilt about x then y"),
    },
}
ARRAYS = {"waypoints": _WAYPOINT}   # [[waypoints]] tables, at least two, times increasing

# [materials.NAME]: a contact material, named; a key left out takes [contact]'s value.  The
# keys are [contact]'s material keys (bounds and meaning as there) and the parameters of the
# material's law (contact.materials.LAWS[law].params).
MATERIAL_KEYS = ("friction", "penetration_gain", "band", "law", "friction_exponent")
# [pairs]: "MOVING/STATIC" = "NAME" -- the pair of those two parts (their [parts] names: the
# moving part's and the static part's) takes material NAME; a pair not listed, [contact]'s.
PAIR_SEPARATOR = "/"


def _check_law(where: str, law: str) -> None:
    from sim_core.contact.materials import LAWS  # here: materials imports types, not config
    if law not in LAWS:
        raise ConfigError(f"{where}: unknown contact law {law!r} (known: {', '.join(LAWS)})")


def _check_material(where: str, table: Any, contact: dict) -> dict:
    """A [materials.NAME] table, its left-out keys from [contact]; the law's own parameters
    checked against its row of contact.materials.LAWS."""
    from sim_core.contact.materials import LAWS
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table, got {type(table).__name__}")
    law = table.get("law", contact["law"])
    _check_value(f"{where}.law", SCHEMA["contact"]["law"], law)
    _check_law(f"{where}.law", law)
    own = LAWS[law].params
    out = {}
    for k, v in table.items():
        if k in MATERIAL_KEYS:
            out[k] = _check_value(f"{where}.{k}", SCHEMA["contact"][k], v)
        elif k in own:
            p = own[k]
            out[k] = _check_value(f"{where}.{k}", Field(p.kind, lo=p.lo, hi=p.hi, gt=p.gt, unit=p.unit), v)
        else:
            raise ConfigError(f"{where}.{k}: unknown key (known: {', '.join([*MATERIAL_KEYS, *own])})")
    for k in MATERIAL_KEYS:
        out.setdefault(k, contact[k])
    for k in own:
        if k not in out and own[k].default is not None:
            out[k] = own[k].default
        if k not in out:
            raise ConfigError(f"{where}.{k}: required key missing (a parameter of law {law!r})")
    return out


def _check_pairs(table: Any, materials: dict) -> dict:
    if not isinstance(table, dict):
        raise ConfigError(f"pairs: expected a table, got {type(table).__name__}")
    for k, v in table.items():
        where = f'pairs."{k}"'
        parts = k.split(PAIR_SEPARATOR)
        if len(parts) != 2 or not all(parts):
            raise ConfigError(f'{where}: a pair is named "MOVING{PAIR_SEPARATOR}STATIC" (its parts\' names)')
        if not isinstance(v, str) or v not in materials:
            raise ConfigError(f"{where}: unknown material {v!r} (defined: {', '.join(materials) or 'none'}; "
                              "a [materials.NAME] table defines NAME)")
    return dict(table)


def _check_value(where: str, f: Field, v: Any) -> Any:
    def num(x):
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {x!r}")
        x = float(x)
        if not math.isfinite(x):
            raise ConfigError(f"{where}: must be finite, got {x!r}")
        if f.lo is not None and x < f.lo:
            raise ConfigError(f"{where}: must be >= {f.lo:g}, got {x:g}")
        if f.gt is not None and x <= f.gt:
            raise ConfigError(f"{where}: must be > {f.gt:g}, got {x:g}")
        if f.hi is not None and x > f.hi:
            raise ConfigError(f"{where}: must be <= {f.hi:g}, got {x:g}")
        return x

    if f.kind == "str":
        if not isinstance(v, str) or not v:
            raise ConfigError(f"{where}: expected a non-empty string, got {v!r}")
        return v
    if f.kind == "enum":
        if v not in f.choices:
            raise ConfigError(f"{where}: expected one of {', '.join(f.choices)}, got {v!r}")
        return v
    if f.kind == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            raise ConfigError(f"{where}: expected an integer, got {v!r}")
        return int(num(v))
    if f.kind == "float":
        return num(v)
    n = 3 if f.kind == "vec3" else 2
    if not isinstance(v, (list, tuple)) or len(v) != n:
        raise ConfigError(f"{where}: expected a list of {n} numbers, got {v!r}")
    return tuple(num(x) for x in v)


def _check_table(where: str, schema: dict[str, Field], table: Any) -> dict:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table, got {type(table).__name__}")
    for k in table:
        if k not in schema:
            raise ConfigError(f"{where}.{k}: unknown key (known: {', '.join(schema)})")
    out = {}
    for k, f in schema.items():
        if k in table:
            out[k] = _check_value(f"{where}.{k}", f, table[k])
        elif f.default is None:
            raise ConfigError(f"{where}.{k}: required key missing")
        else:
            out[k] = f.default
    return out


def validate(raw: dict, src: str) -> dict:
    """Validate a parsed TOML document; returns a dict with every default filled in."""
    def err(msg):
        return ConfigError(f"{src}: {msg}")

    try:
        for k in raw:
            if k not in SCHEMA and k not in ARRAYS and k not in ("materials", "pairs"):
                raise ConfigError(f"{k}: unknown key (known: {', '.join([*SCHEMA, *ARRAYS, 'materials', 'pairs'])})")
        cfg = {sec: _check_table(sec, schema, raw.get(sec, {})) for sec, schema in SCHEMA.items()}
        _check_law("contact.law", cfg["contact"]["law"])
        if cfg["scenario"]["task"] == "cable_winding" and cfg["contact"]["subsystems"] > cfg["cable"]["links"]:
            raise ConfigError(f"contact.subsystems: must be <= cable.links ({cfg['cable']['links']}), "
                              f"got {cfg['contact']['subsystems']}")
        from sim_core.contact.island_solvers import NEEDS_TURNS  # here, as _check_law: config loads without the solvers
        if cfg["contact"]["turn_passes"] and cfg["contact"]["island_solver"] in NEEDS_TURNS:
            raise ConfigError(f"contact.turn_passes: must be 0 with island_solver "
                              f"{cfg['contact']['island_solver']!r} (its cut couplings are taken at the predicted "
                              f"turns), got {cfg['contact']['turn_passes']}")
        if not cfg["socket"]["nu"] < 0.5:
            raise ConfigError("socket.nu: must be < 0.5 for a solid (0.5 is incompressible), "
                              f"got {cfg['socket']['nu']:g}")
        mats = raw.get("materials", {})
        if not isinstance(mats, dict):
            raise ConfigError(f"materials: expected tables [materials.NAME], got {type(mats).__name__}")
        cfg["materials"] = {name: _check_material(f"materials.{name}", t, cfg["contact"]) for name, t in mats.items()}
        cfg["pairs"] = _check_pairs(raw.get("pairs", {}), cfg["materials"])
        wps = raw.get("waypoints")
        if not isinstance(wps, list) or len(wps) < 2:
            raise ConfigError("waypoints: need at least two [[waypoints]] tables")
        cfg["waypoints"] = [_check_table(f"waypoints[{i}]", _WAYPOINT, w) for i, w in enumerate(wps)]
        ts = [w["t"] for w in cfg["waypoints"]]
        for i in range(1, len(ts)):
            if ts[i] <= ts[i - 1]:
                raise ConfigError(f"waypoints[{i}].t: times must increase, got {ts[i]:g} after {ts[i-1]:g}")
        steps = cfg["scenario"]["duration"] / cfg["scenario"]["dt"]
        if steps > MAX_STEPS:
            raise ConfigError(f"scenario.duration / scenario.dt: {steps:.3g} steps, at most {MAX_STEPS:.0e} "
                              "a run (split the study)")
    except ConfigError as e:
        raise err(str(e)) from None
    return cfg


def load(path: Path | str) -> dict:
    """Read and validate a scenario TOML file (one-line ConfigError on any problem)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read ({e.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text (TOML) file") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML ({e})") from None
    return validate(raw, str(path))


def reference_markdown() -> str:
    """The configuration reference as a Markdown table (kept in README.md)."""
    rows = ["| key | type | default | unit | meaning |", "|---|---|---|---|---|"]
    for sec, schema in [*SCHEMA.items(), *[(f"[[{k}]]", v) for k, v in ARRAYS.items()]]:
        for k, f in schema.items():
            d = "required" if f.default is None else repr(f.default)
            kind = f.kind if f.kind != "enum" else " / ".join(f.choices)
            rows.append(f"| `{sec}.{k}` | {kind} | {d} | {f.unit} | {f.doc} |")
    for k in MATERIAL_KEYS:
        f = SCHEMA["contact"][k]
        rows.append(f"| `materials.NAME.{k}` | {f.kind} | `contact.{k}` | {f.unit} | material NAME's {k} "
                    "(bounds as `contact`'s) |")
    rows.append(f'| `pairs."MOVING{PAIR_SEPARATOR}STATIC"` | str | | | the material (a [materials.NAME]) of the pair '
                "of these two parts (their [parts] names); a pair not listed has [contact]'s |")
    return "\n".join(rows)
