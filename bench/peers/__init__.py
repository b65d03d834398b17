"""Other engines' bouncing ball (seed 001 Sec. 4.2), for `bench/max_step.py`, and the assembly
tasks in MuJoCo and PyBullet, for `bench/peers/compare.py` (``assembly``, ``assembly_mujoco``,
``assembly_pybullet``, ``nut_pieces``).

Each ball module offers ``drop(dt, duration) -> dict(t, z, vz)`` for the same ball; every module
imports its engine lazily, so this package imports without the optional ``[peers]`` extra.
"""
from __future__ import annotations

# The seed's ball (seed 001 Sec. 4.1), shared by every peer.
MASS = 1.0            # kg
RADIUS = 0.1          # m
INERTIA = 0.1         # kg m^2 about every axis, the seed's value (a solid sphere would have 0.004)
Z0 = 1.0              # m, initial height of the ball's centre above the ground, at rest
GRAVITY = 9.81        # m/s^2, along -z
STIFFNESS = 140e6     # N/m, the seed's linear contact stiffness K


def record(dt: float, duration: float, step, z0: float = Z0) -> dict:
    """Run `step()` (one engine step: returns (t s, z m, vz m/s) after it) for `duration` s at
    the step `dt`: arrays "t", "z", "vz", one entry per step end, the state at rest at z0
    first; a diverged run (z not finite) keeps what there is up to it."""
    import numpy as np
    n = int(np.ceil(duration / dt - 1e-9))
    t, z, vz = np.empty(n + 1), np.empty(n + 1), np.empty(n + 1)
    t[0], z[0], vz[0] = 0.0, z0, 0.0
    for i in range(1, n + 1):
        t[i], z[i], vz[i] = step()
        if not np.isfinite(z[i]):
            return {"t": t[:i + 1], "z": z[:i + 1], "vz": vz[:i + 1]}
    return {"t": t, "z": z, "vz": vz}
