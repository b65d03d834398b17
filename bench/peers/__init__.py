"""Other engines' bouncing ball (seed 001 Sec. 4.2), for `bench/max_step.py`.

Each module offers ``drop(dt, duration) -> dict(t, z, vz)`` for the same ball and imports its
engine lazily, so this package imports without the optional ``[peers]`` extra installed.
"""
from __future__ import annotations

# The seed's ball (seed 001 Sec. 4.1), shared by every peer.
MASS = 1.0            # kg
RADIUS = 0.1          # m
INERTIA = 0.1         # kg m^2 about every axis, the seed's value (a solid sphere would have 0.004)
Z0 = 1.0              # m, initial height of the ball's centre above the ground, at rest
GRAVITY = 9.81        # m/s^2, along -z
STIFFNESS = 140e6     # N/m, the seed's linear contact stiffness K
