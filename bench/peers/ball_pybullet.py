"""The seed's bouncing ball in PyBullet (seed 001 Sec. 4.2, Table 1's "Bullet" row).

    python -c "from bench.peers.ball_pybullet import drop; print(drop(1e-3, 1.0)['z'].max())"

The ball of `bench.peers` (m = 1 kg, R = 0.1 m, the seed's I = 0.1 kg m^2 on every axis via
localInertiaDiagonal -- a solid sphere would have 0.004; a straight drop never feels it),
dropped from rest with its centre at 1.0 m onto a static plane, g = 9.81, no friction, no
linear or angular damping, one solver step per `stepSimulation` (numSubSteps = 0).

What Bullet can express.  Its contact is a rigid velocity-level constraint (sequential
impulses on the MLCP), with two optional ways to a bounce (changeDynamics on both bodies):
  * restitution e: the constraint's target separating velocity is e times the approach
    velocity (the product of the two bodies' restitutions).  Chosen here ("restitution",
    the default): e = 1 on both, the rigid ball of restitution 1 -- the closest Bullet
    comes to the seed's perfectly elastic ball (with the two settings below);
  * contactStiffness k and contactDamping c: Bullet turns them into the constraint's
    ERP = dt k / (dt k + c) and CFM = 1 / (dt k + c) -- a spring only through the position
    error correction of a velocity constraint, not a force K delta integrated in time.
    With c = 0 (restitution 1) ERP = 1: the whole penetration is removed in one step.
    Available as contact="stiffness" (k = 140e6 N/m, c = 0); it does not bounce like a
    spring (the measured apex after one bounce is far below 1 m, see docs/peers.md).
Contact-breaking threshold 0 (set on every drop: it is a process-wide global in Bullet, so a
value set by one client leaks into the next).  Bullet's default, 0.02 m, makes a
"speculative" contact point while the ball is still up to 2 cm above the plane, and the
constraint then only lets the gap close at gap/dt per step: at steps below about 1/2 ms the
ball is braked to a few cm/s before it touches (measured: 4.1 m/s -> 0.07 m/s at 1/64 ms)
and restitution 1 of that gives no bounce at all.  With threshold 0 the contact is made
only once the ball has penetrated, and restitution acts on the full impact speed.
Error reduction 0 in the restitution mode (erp = contactERP = 0).  Bullet's default
contactERP = 0.2 removes a fifth of the penetration per step by adding erp pen / dt to the
constraint's target velocity (Baumgarte), on top of the restitution target: measured, the
first apex was 1.01 m instead of 0.9 m above the ground at 1/64 ms (+12 %), and the apexes
drifted by 3 to 25 % at every step of the sweep -- no step passed the three-bounce test.
With 0 the rebound is e times the approach and nothing else; the penetration a step leaves
is then not corrected, which a bounce at e = 1 undoes by itself.
"""
from __future__ import annotations

from bench.peers import GRAVITY, INERTIA, MASS, RADIUS, STIFFNESS, Z0, record

CONTACTS = ("restitution", "stiffness")
BREAKING_THRESHOLD = 0.0   # m: no speculative contact (see the module docstring)


def drop(dt: float, duration: float, contact: str = "restitution") -> dict:
    """Drop the ball for `duration` s at the fixed step `dt` (s): arrays "t" (s), "z" (m, centre
    height) and "vz" (m/s), one entry per step end, the initial state first."""
    import pybullet as pb
    if contact not in CONTACTS:
        raise ValueError(f"ball_pybullet.drop: contact must be one of {CONTACTS}, got {contact!r}")
    c = pb.connect(pb.DIRECT)
    try:
        pb.setGravity(0.0, 0.0, -GRAVITY, physicsClientId=c)
        erp = {"erp": 0.0, "contactERP": 0.0} if contact == "restitution" else {}
        pb.setPhysicsEngineParameter(fixedTimeStep=dt, numSubSteps=0,
                                     contactBreakingThreshold=BREAKING_THRESHOLD, **erp,
                                     physicsClientId=c)
        ground = pb.createMultiBody(0.0, pb.createCollisionShape(pb.GEOM_PLANE, physicsClientId=c),
                                    physicsClientId=c)
        ball = pb.createMultiBody(MASS, pb.createCollisionShape(pb.GEOM_SPHERE, radius=RADIUS,
                                                                physicsClientId=c),
                                  basePosition=[0.0, 0.0, Z0], physicsClientId=c)
        pb.changeDynamics(ball, -1, localInertiaDiagonal=[INERTIA] * 3, linearDamping=0.0,
                          angularDamping=0.0, physicsClientId=c)
        for body in (ball, ground):
            pb.changeDynamics(body, -1, lateralFriction=0.0, physicsClientId=c)
            if contact == "restitution":
                pb.changeDynamics(body, -1, restitution=1.0, physicsClientId=c)
            else:
                pb.changeDynamics(body, -1, contactStiffness=STIFFNESS, contactDamping=0.0,
                                  physicsClientId=c)
        clock = [0]

        def step():
            pb.stepSimulation(physicsClientId=c)
            clock[0] += 1
            return (clock[0] * dt, pb.getBasePositionAndOrientation(ball, physicsClientId=c)[0][2],
                    pb.getBaseVelocity(ball, physicsClientId=c)[0][2])
        return record(dt, duration, step)
    finally:
        pb.disconnect(physicsClientId=c)
