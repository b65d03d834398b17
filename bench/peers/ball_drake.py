"""The seed's bouncing ball in Drake (issue 25 part 4: a third peer beside MuJoCo and PyBullet;
the seed's Table 1 has no Drake row).

    python -c "from bench.peers.ball_drake import drop; print(drop(1e-4, 1.0)['z'].max())"

The ball of `bench.peers` (m = 1 kg, R = 0.1 m, the seed's I = 0.1 kg m^2 on every axis -- a
solid sphere would have 0.004, which a straight drop never feels) as a free body of a
MultibodyPlant, dropped from rest with its centre at 1.0 m onto a half space, g = 9.81, no
friction (a straight drop has nothing to resist tangentially).

The plant is discrete at time_step = dt (the sweep is about the fixed step); the simulator is
advanced one step at a time and the state read at each step end.  Drake's continuous plant
(continuous=True: time_step 0, Drake's default error-controlled RK3 integrator, sampled every
dt) was tried too and is not in the table, since its step is not dt: it bounces back to
0.99995 m (accuracy 1e-4), the check that this model and its properties are the seed's ball.

Why the discrete plant loses energy (measured; docs/peers.md).  Every discrete approximation
computes the contact impulse from the penetration predicted at the END of the step,
phi + dt v_next, i.e. the spring is backward Euler: each step scales the oscillator's
energy by 1 / (1 + (w dt)^2), w = sqrt(K/m) = 11 832 rad/s, over the pi / (w dt) steps of
a contact -- about exp(-pi w dt) of the energy kept per bounce (0.69 at dt = 10 us).  The
apex is within 5 % only for w dt < 0.016, dt < 1.4 us, below the sweep's 1/64 ms.  With
no friction and no dissipation the four approximations give the same trajectory.

What Drake can express.  Two contact models of a rigid-ish ball on rigid ground:
  * point contact (ContactModel.kPoint), chosen here: a penetration-based force with a
    linear stiffness in N/m ("material", "point_contact_stiffness") -- the seed's K, the
    quantity every other row of Table 1 holds -- and a dissipation whose form depends on
    the discrete approximation (below).  The stiffnesses of the two geometries combine in
    series, k1 k2 / (k1 + k2), so ball and ground each carry 2 K to give K = 140e6 N/m;
  * hydroelastic: a pressure field over a contact surface, parameterised by an elastic
    modulus (Pa) and a geometry resolution, not by a stiffness in N/m; for a sphere on a
    half space its force grows like the penetration squared, not K delta.  Not used: it
    cannot hold the seed's linear K.
The discrete contact approximation (set_discrete_contact_approximation), both run:
  * "lagged" -- Drake 1.51's default (MultibodyPlantConfig), solved by SAP with the
    Hunt-Crossley dissipation evaluated at the previous step's state;
    hunt_crossley_dissipation = 0 (restitution 1);
  * "tamsi" -- Drake's older default, the two-stage semi-implicit Hunt-Crossley scheme,
    hunt_crossley_dissipation = 0.
  ("sap" takes the linear Kelvin-Voigt relaxation_time instead, set to 0 here too: no
  dissipation; "similar" is the lagged scheme's variant.  Both are accepted by `drop` and
  gave the same ball; the table runs lagged and tamsi.)
SAP (behind lagged, similar and sap) saturates a contact stiffer than the step can resolve
("near rigid" regime, sap_near_rigid_threshold, default 1.0): kept at its default, Drake's
own choice; near_rigid=0 turns it off, which changed no apex measured (0.01 to 0.1 ms).
"""
from __future__ import annotations

import numpy as np

from bench.peers import GRAVITY, INERTIA, MASS, RADIUS, STIFFNESS, Z0, record

APPROXIMATIONS = ("lagged", "tamsi", "sap", "similar")
GEOM_STIFFNESS = 2.0 * STIFFNESS   # N/m per geometry: two in series give the seed's K


def _properties():
    from pydrake.geometry import ProximityProperties
    from pydrake.multibody.plant import CoulombFriction
    props = ProximityProperties()
    props.AddProperty("material", "point_contact_stiffness", GEOM_STIFFNESS)
    props.AddProperty("material", "hunt_crossley_dissipation", 0.0)   # s/m: restitution 1
    props.AddProperty("material", "relaxation_time", 0.0)             # s: used only by "sap"
    props.AddProperty("material", "coulomb_friction", CoulombFriction(0.0, 0.0))
    return props


def drop(dt: float, duration: float, approximation: str = "lagged",
         near_rigid: float | None = None, continuous: bool = False) -> dict:
    """Drop the ball for `duration` s at the fixed step `dt` (s): arrays "t" (s), "z" (m, centre
    height) and "vz" (m/s), one entry per step end, the initial state first.  approximation:
    Drake's discrete contact approximation (APPROXIMATIONS); near_rigid: SAP's near-rigid
    threshold (None: Drake's default); continuous: a continuous plant (time_step 0, Drake's
    error-controlled integrator) sampled every dt instead -- not a fixed-step run."""
    if approximation not in APPROXIMATIONS:
        raise ValueError(f"ball_drake.drop: approximation must be one of {APPROXIMATIONS}, "
                         f"got {approximation!r}")
    from pydrake.geometry import HalfSpace, Sphere
    from pydrake.math import RigidTransform
    from pydrake.multibody.plant import AddMultibodyPlantSceneGraph, ContactModel, DiscreteContactApproximation
    from pydrake.multibody.tree import RotationalInertia, SpatialInertia
    from pydrake.systems.analysis import Simulator
    from pydrake.systems.framework import DiagramBuilder

    builder = DiagramBuilder()
    plant, _scene = AddMultibodyPlantSceneGraph(builder, time_step=0.0 if continuous else dt)
    plant.set_contact_model(ContactModel.kPoint)
    if not continuous:
        plant.set_discrete_contact_approximation(
            getattr(DiscreteContactApproximation, "k" + approximation.capitalize()))
    if near_rigid is not None and not continuous:
        plant.set_sap_near_rigid_threshold(near_rigid)
    plant.mutable_gravity_field().set_gravity_vector([0.0, 0.0, -GRAVITY])
    ball = plant.AddRigidBody("ball", SpatialInertia.MakeFromCentralInertia(
        MASS, np.zeros(3), RotationalInertia(INERTIA, INERTIA, INERTIA)))
    plant.RegisterCollisionGeometry(ball, RigidTransform(), Sphere(RADIUS), "ball", _properties())
    plant.RegisterCollisionGeometry(plant.world_body(), RigidTransform(), HalfSpace(), "ground",
                                    _properties())   # the plane z = 0, normal +z
    plant.Finalize()
    diagram = builder.Build()
    sim = Simulator(diagram)
    ctx = plant.GetMyMutableContextFromRoot(sim.get_mutable_context())
    plant.SetFreeBodyPose(ctx, ball, RigidTransform([0.0, 0.0, Z0]))
    sim.Initialize()

    clock = [0]

    def step():
        clock[0] += 1
        sim.AdvanceTo(clock[0] * dt)
        return (clock[0] * dt, ball.EvalPoseInWorld(ctx).translation()[2],
                ball.EvalSpatialVelocityInWorld(ctx).translational()[2])
    return record(dt, duration, step)
