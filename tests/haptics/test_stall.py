"""Physics stalls on the haptic side: the last contact model is held (the proxy cannot sink
into geometry nobody updates), and only a physics silent for PHYSICS_DEAD_S ramps the force out."""
from __future__ import annotations

import numpy as np

from app.haptic_loop import PHYSICS_DEAD_S, STALL_RAMP_S, T_HAPTIC, physics_watchdog
from haptics.local_contact import LocalContact, gaps_at
from haptics.proxy import Proxy

MASS, INERTIA = 0.8, np.diag([1e-3, 1e-3, 1.5e-3])
PUSH = 20.0              # N down: the device's force limit, a user leaning on the part
STALL_TICKS = 30         # 30 ms without a new model (the reported stall: 26 ms)
HOLD_TOL = 0.5e-3        # m: the bound on the proxy's penetration through a stall


def test_the_watchdog_keeps_the_force_through_a_late_physics_and_ramps_out_a_dead_one():
    s = 1.0
    for k in range(int(PHYSICS_DEAD_S / T_HAPTIC)):              # late, not dead: full output
        s = physics_watchdog(k * T_HAPTIC, s)
        assert s == 1.0
    for _ in range(int(round(STALL_RAMP_S / T_HAPTIC))):          # dead: out within the ramp
        s = physics_watchdog(PHYSICS_DEAD_S + 0.01, s)
    assert s < 1e-12
    for _ in range(int(round(STALL_RAMP_S / T_HAPTIC))):          # back: in within the ramp
        s = physics_watchdog(0.0, s)
    assert s == 1.0
    assert physics_watchdog(None, 0.5) > 0.5                      # before the first model: ramp in


def _pressed(hold: bool) -> float:
    """A proxy pressed onto a floor (four contacts under its corners) with PUSH; the contact
    model arrives every 10 ms, then stops for STALL_TICKS.  Deepest gap over the run (m)."""
    r_b = np.array([[x, y, -0.01] for x in (-0.02, 0.02) for y in (-0.02, 0.02)])
    pr = Proxy(MASS, INERTIA, np.array([0.0, 0.0, 0.01]), np.eye(3))
    lc = None
    deepest = 0.0
    F, B = np.array([0.0, 0.0, -PUSH, 0.0, 0.0, 0.0]), np.zeros((6, 6))
    for k in range(400):
        if k % 10 == 0 and not 200 <= k < 200 + STALL_TICKS:      # a model every physics step
            lc = LocalContact(k * 1e-3, pr.p_w.copy(), pr.R_wb.copy(), r_b, np.tile([0.0, 0.0, 1.0], (4, 1)),
                              (pr.p_w[2] - 0.01) * np.ones(4), 0.3)
        stalled = 200 <= k < 200 + STALL_TICKS
        pr.step(F, B, lc if (hold or not stalled) else None, T_HAPTIC)
        if lc is not None:
            deepest = max(deepest, float(-gaps_at(lc, pr.p_w, pr.R_wb)[1].min()))
    return deepest


def test_a_held_model_keeps_the_pressed_proxy_out_through_a_stall():
    held, dropped = _pressed(hold=True), _pressed(hold=False)
    assert held < HOLD_TOL and held < 1e-5          # microns: the floor holds
    assert dropped > 10 * HOLD_TOL                  # what dropping the model did: it sinks
