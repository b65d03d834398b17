"""A physics stall while the user presses the nut onto the bolt: the proxy holds (the last
contact model is held), the part stays on the bolt, the force never changes faster than the
device's rated rate.  Real sessions (haptic 1 kHz, physics 100 Hz, the Panda) with stalls
injected into the physics loop (``physics_loop.run``) and the haptic loop (a freeze between
two ticks, what SIGSTOP / SIGCONT does; the device holds its last wrench meanwhile)."""
from __future__ import annotations

import numpy as np
import pytest

PROXY_TOL = 0.5e-3       # m: the bound on the proxy's penetration (exact bolt SDF)
STALLS = [(2.6, 0.03), (3.6, 0.06), (4.6, 0.15), (5.6, 0.03), (6.6, 0.1)]   # (s into the loop, s)
#   scripted:approach_and_turn presses onto the bolt at 2.0-2.5 s and turns from 2.5 s


def _deepest_proxy(log, every: int = 5) -> float:
    """m: the proxy's deepest penetration into the bolt by the exact SDF (every `every` ticks)."""
    from sim_core.collision import broadphase
    from sim_core.scenarios import scenario
    from sim_core.shapes import nodes_of
    from sim_core.types import BodyPose
    model, _, _ = scenario.load("bolting")
    body, shape = nodes_of(model, 0), model.shapes[0]
    deepest = 0.0
    for t, m in log.messages("/proxy")[::every]:
        pose = BodyPose(t, np.array(m["p_w"]), np.array(m["R_wb"]).reshape(3, 3), np.zeros(6))
        _, x_s = broadphase.candidates(body, shape, pose, 0.0)
        if len(x_s):
            deepest = max(deepest, -float(shape.sdf_exact.query(x_s)[0].min()))
    return deepest


def _worst_rate_excess(log, rate: float) -> float:
    """N: the largest part of a tick's force change that is not a shrink toward zero, above
    the rated change per tick (<= 0 when the rate limit held; see test_zoh_passivity)."""
    f = np.array([m["device_wrench"][:3] for _, m in log.messages("/proxy")])
    prev = np.vstack([np.zeros((1, 3)), f[:-1]])
    s = np.clip(np.einsum("ij,ij->i", f, prev) / np.maximum(np.einsum("ij,ij->i", prev, prev), 1e-300), 0.0, 1.0)
    return float((np.linalg.norm(f - s[:, None] * prev, axis=1) - rate * 1e-3).max())


PRESS_S = 60.0
PRESS_PHYSICS_STALLS = [(5.0, 0.03), (12.0, 0.06), (20.0, 0.15), (28.0, 0.4), (36.0, 0.03), (44.0, 0.1),
                        (52.0, 0.03)]     # 0.4 s: past PHYSICS_DEAD_S, the watchdog ramps out and in
PRESS_HAPTIC_STALLS = [(8.0, 0.03), (16.0, 0.03), (24.0, 0.05), (40.0, 0.03), (48.0, 0.01)]
PRESSED_FROM_S = 3.0     # s: the script is on the bolt's top at 2.0 s and leaning at 2.5 s
# The nut on the bolt's first thread has ~0.8 mm of radial play (measured 0.73-0.80 mm with
# stalls); off the bolt is >= 2.7 mm (the thread's depth, 0.54 P for P = 5 mm)
ON_AXIS_TOL = 1.5e-3     # m
HEIGHT_BAND = 2e-3       # m: thrown up would be centimetres (17 cm before the fix); 0.35 mm measured
RATE_ROUNDING = 1e-6     # N: the log's JSON floats round-trip exactly; this is the rate-limit's own 1e-9 relative


@pytest.mark.slow
def test_a_minute_of_pressing_with_stalls_keeps_proxy_and_part(tmp_path):
    """The issue's case for a minute: the nut leaned onto the bolt's end at the device's limit
    (scripted:press, held still), physics and haptic stalls injected throughout."""
    from app.session import run_session
    from devices.scripted import SCRIPTED_CAPABILITY
    from sim_core.io.log import read_log
    log_path = tmp_path / "press.mcap"
    res = run_session("bolting", "scripted:press", PRESS_S, log_path=str(log_path),
                      physics_stalls=PRESS_PHYSICS_STALLS, haptic_stalls=PRESS_HAPTIC_STALLS)
    assert res.fault is None
    log = read_log(log_path)
    deepest = _deepest_proxy(log)
    assert deepest < PROXY_TOL, deepest
    assert _worst_rate_excess(log, SCRIPTED_CAPABILITY.max_force_rate) <= RATE_ROUNDING
    msgs = log.messages("/part_state")
    t = np.array([tm for tm, _ in msgs])
    ps = np.array([m["p_w"] for _, m in msgs])[t >= PRESSED_FROM_S]
    assert len(ps) > 0.9 * (PRESS_S - PRESSED_FROM_S) * 100
    assert np.hypot(ps[:, 0], ps[:, 1]).max() < ON_AXIS_TOL           # never off the bolt
    assert np.ptp(ps[:, 2]) < HEIGHT_BAND                             # never thrown up
    print(f"proxy deepest {deepest * 1e3:.3f} mm; part: {np.hypot(ps[:, 0], ps[:, 1]).max() * 1e3:.3f} mm "
          f"off axis, height range {np.ptp(ps[:, 2]) * 1e3:.3f} mm")


@pytest.mark.slow
def test_physics_stalls_while_pressing_do_not_let_the_proxy_through(tmp_path):
    from app.session import run_session
    from devices.scripted import SCRIPTED_CAPABILITY
    from sim_core.io.log import read_log
    log_path = tmp_path / "stall.mcap"
    res = run_session("bolting", "scripted:approach_and_turn", 9.0, log_path=str(log_path), physics_stalls=STALLS)
    assert res.fault is None
    log = read_log(log_path)
    deepest = _deepest_proxy(log)
    assert _worst_rate_excess(log, SCRIPTED_CAPABILITY.max_force_rate) <= RATE_ROUNDING
    assert deepest < PROXY_TOL, deepest
    ps = np.array([m["p_w"] for _, m in log.messages("/part_state")])
    assert np.hypot(*ps[-1, :2]) < 1e-3                  # the nut ends on the bolt's axis ...
    assert ps[-1, 2] < ps[:, 2].max() - 0.05             # ... driven down onto the thread, not flung off
