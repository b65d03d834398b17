"""Passivity as the hand feels it: the device holds each tick's wrench until the next
(zero-order hold), so the energy that reaches the operator is the held wrench against the
motion that happens under it.  200 seeded adversarial runs close the loop through a
simulated hand (``haptics.batch.run_hand``): set points that chirp to 500 Hz, step, wander,
drive the coupled system at its resonance, and contact models that jump every 10 ms.

The bound (haptics/coupling.py, step 5): the energy delivered to the hand never exceeds what
the hand put in by more than W* = max_k (f_max |dx_k| + tau_max |dtheta_k|), the work the
device's limits allow over the largest one-tick travel -- the tick whose motion no
controller can see in advance.
"""
import math

import numpy as np
import pytest

from haptics import batch
from haptics.coupling import Coupling, CouplingGains, DeviceLimits
from haptics.local_contact import LocalContact
from haptics.proxy import Proxy

T = 1e-3
SUBSTEPS = 10                 # RK4 substeps of the hand per tick (hand modes <= 250 Hz: error ~1e-9)
TICKS = 1000                  # 1 s a run
RUNS = 200
SEGMENT = 10                  # ticks between contact-model jumps (10 ms)
MASS, INERTIA = 0.97, np.diag([6.2e-4, 6.2e-4, 1.01e-3])   # the proxy: the M48 nut
HALF_H = 0.019
P0 = np.array([0.0, 0.0, HALF_H])
KINDS = ("chirp", "steps", "walk", "resonance", "jumps")
# The observer books exactly what the hand receives: both are the same held wrench against
# the same displacement; what differs is rounding of ~1e3 products of O(1e-3) J terms.
LEDGER_TOL = 1e-9             # J
# The bound holds with equality in the worst case (a full-limit wrench against the largest
# travel): allow rounding only.
BOUND_REL_TOL = 1e-9


def contact(rng, kind_jumps: bool) -> LocalContact:
    """A local contact model for one 10 ms segment: none, a floor (tilted up to 30 deg) at a
    random height (the proxy may find itself inside it), or two-sided thread-like flanks."""
    pick = rng.integers(0, 3)
    if pick == 0 and kind_jumps:
        return LocalContact.empty(0.0, P0, np.eye(3))
    a = np.arange(3) * 2 * np.pi / 3
    r_b = np.stack([0.03 * np.cos(a), 0.03 * np.sin(a), np.full(3, -HALF_H)], 1)
    if pick == 2:
        ang = np.arange(6) * np.pi / 3
        radial = np.stack([np.cos(ang), np.sin(ang), np.zeros(6)], 1)
        up = np.where(np.arange(6) % 2 == 0, 1.0, -1.0)
        n_w = 0.5 * radial + (math.sqrt(3) / 2) * up[:, None] * np.array([0.0, 0.0, 1.0])
        d = np.where(up > 0, rng.uniform(-1e-3, 1e-3), rng.uniform(0.0, 2e-4))
        return LocalContact(0.0, P0, np.eye(3), 0.03 * radial, n_w, d, rng.uniform(0.0, 0.5))
    tilt = rng.uniform(0.0, math.radians(30.0))
    az = rng.uniform(0.0, 2 * np.pi)
    n = np.array([math.sin(tilt) * math.cos(az), math.sin(tilt) * math.sin(az), math.cos(tilt)])
    depth = rng.uniform(-2e-3, 1e-3) if kind_jumps else 0.0
    return LocalContact(0.0, P0, np.eye(3), r_b, np.tile(n, (3, 1)), np.full(3, depth), rng.uniform(0.0, 0.5))


def hand_case(seed: int):
    """(hand, set_x, set_phi, segments, backward, kind) of one seeded adversarial run."""
    rng = np.random.default_rng(20_000 + seed)
    kind = KINDS[seed % len(KINDS)]
    axis = rng.normal(size=3)
    hand = batch.Hand(mass=rng.uniform(0.05, 0.5), k=rng.uniform(100.0, 3000.0), b=rng.uniform(0.5, 20.0),
                      axis=axis / np.linalg.norm(axis), inertia=rng.uniform(1e-5, 1e-3),
                      k_rot=rng.uniform(0.05, 2.0), b_rot=rng.uniform(1e-4, 1e-2))
    n = TICKS * SUBSTEPS + 1
    t = np.arange(n) * (T / SUBSTEPS)
    direction = rng.normal(size=3)
    direction /= np.linalg.norm(direction)
    # everyone presses: the set point goes 2-15 mm down (the coupling's force reaches its limit)
    x = np.zeros((n, 3))
    x[:, 2] = -rng.uniform(2e-3, 15e-3) * np.minimum(1.0, t / rng.uniform(0.01, 0.1))
    phi = np.zeros(n)
    if kind == "chirp":                       # 1 Hz -> 500 Hz over the run
        f0, f1 = 1.0, 500.0
        ph = 2 * np.pi * (f0 * t + (f1 - f0) * t * t / (2 * t[-1]))
        x += rng.uniform(0.1e-3, 3e-3) * np.sin(ph)[:, None] * direction
        phi += rng.uniform(0.01, 0.3) * np.sin(ph)
    elif kind == "steps":                     # jumps of 1-15 mm and up to 0.3 rad
        k = 0
        while k < n:
            m = int(rng.integers(5, 120)) * SUBSTEPS
            x[k:k + m] += rng.normal(size=3) * rng.uniform(1e-3, 15e-3)
            phi[k:k + m] += rng.uniform(-0.3, 0.3)
            k += m
    elif kind == "walk":                      # a velocity random walk
        vel = np.cumsum(rng.normal(size=(n, 3)) * rng.uniform(1.0, 30.0), 0) * (T / SUBSTEPS)
        x += np.cumsum(vel - vel.mean(0), 0) * (T / SUBSTEPS)
        phi += np.cumsum(np.cumsum(rng.normal(size=n)) * 1e-3) * 1e-3
    elif kind == "resonance":                 # the hand on the coupling's spring, driven at its mode
        k_dev = CouplingGains().k_lin * (1.0 - CouplingGains().c2)
        f_r = math.sqrt((k_dev + hand.k) / hand.mass) / (2 * np.pi)
        x += rng.uniform(0.2e-3, 3e-3) * np.sin(2 * np.pi * f_r * t)[:, None] * direction
        phi += 0.1 * np.sin(2 * np.pi * math.sqrt(hand.k_rot / hand.inertia) / (2 * np.pi) * t)
    # "jumps": the press alone, against contact models that jump every 10 ms
    jumps = kind == "jumps" or rng.random() < 0.5
    first = contact(rng, False)
    segments = [(SEGMENT, contact(rng, True) if (jumps and s > 0) else first)
                for s in range(TICKS // SEGMENT)]
    return hand, x, phi, segments, bool(seed % 2), kind


def run_case(seed: int, controller: bool = True):
    """A run with the default (four-channel) coupling gains and device limits."""
    hand, set_x, set_phi, segments, backward, kind = hand_case(seed)
    cp = Coupling(CouplingGains(), DeviceLimits(), startup_ramp=0.0, controller_enabled=controller)
    pr = Proxy(MASS, INERTIA, P0, np.eye(3))
    hs = batch.HandState(np.zeros(3), np.zeros(3))
    out = batch.run_hand(cp, pr, hand, hs, np.eye(3), set_x, set_phi, SUBSTEPS, segments, T, backward)
    return out, kind


@pytest.fixture(scope="module")
def runs():
    return [run_case(s) for s in range(RUNS)]


def test_the_observer_books_what_the_hand_receives(runs):
    """The settled observer total is minus the energy delivered to the hand, tick by tick (it
    lags one tick: the wrench sent at a tick is settled at the next)."""
    for out, _ in runs:
        assert np.allclose(out.energy[1:], -out.delivered[:-1], rtol=0.0, atol=LEDGER_TOL)


def test_the_hand_never_gets_more_than_one_ticks_work(runs):
    """Over 200 adversarial runs: delivered <= W* at every tick, W* the limits' work over the
    largest one-tick travel so far (the bound stated in haptics/coupling.py)."""
    worst = 0.0
    for out, kind in runs:
        excess = out.delivered[:-1] - out.work_cap[1:] * (1.0 + BOUND_REL_TOL)
        assert excess.max() <= 0.0, (kind, excess.max())
        ratio = out.delivered[:-1] / np.maximum(out.work_cap[1:], 1e-300)
        worst = max(worst, float(ratio.max()))
    print(f"largest delivered / W*: {worst:.3f}")


def test_the_runs_are_adversarial_and_the_device_still_renders(runs):
    """The runs press at the force limit and move hard; the device keeps rendering force
    (the deficit cap does not leave it limp)."""
    lim = DeviceLimits()
    fmax = np.array([np.linalg.norm(out.f_dev[:, :3], axis=1).max() for out, _ in runs])
    fmean = np.array([np.linalg.norm(out.f_dev[500:, :3], axis=1).mean() for out, _ in runs])
    assert (fmax > 0.9 * lim.max_force).mean() > 0.8
    assert np.median(fmean) > 1.0
    travel = np.array([np.abs(np.diff(out.x, axis=0)).max() for out, _ in runs])
    assert travel.max() > 5e-3          # some runs move > 5 mm in one tick (steps)


def test_the_rate_limit_holds_in_every_run(runs):
    """Every tick's force is the last one shrunk toward zero (by the deficit cap, never past
    zero) plus a change of at most the rated 5 N/ms: f_k = s f_{k-1} + delta, 0 <= s <= 1,
    |delta| <= max_force_rate T.  So no tick reverses the force by more than the rate."""
    lim = DeviceLimits()
    step = lim.max_force_rate * T * (1.0 + 1e-9)
    for out, _ in runs:
        f = out.f_dev[:, :3]
        prev = np.vstack([np.zeros((1, 3)), f[:-1]])
        s = np.clip(np.einsum("ij,ij->i", f, prev) / np.maximum(np.einsum("ij,ij->i", prev, prev), 1e-300),
                    0.0, 1.0)
        assert np.linalg.norm(f - s[:, None] * prev, axis=1).max() <= step


# J: the proxy's contacts pay their push-out from what they dissipated (``proxy.solve_contacts``;
# PUSH_OUT_SLACK 1e-12 J a tick of rounding over 1,000 ticks)
CONTACT_WORK_TOL = 1e-9


@pytest.mark.parametrize("seed", [137, 4, 13, 185])   # walk, jumps, resonance, chirp
def test_without_the_controller_the_hand_can_get_energy(seed):
    """The same runs with the controller off deliver net energy to the hand beyond W* (32 of
    the 200 do; these four by 0.009-0.031 J), while the proxy's contacts did no net positive
    work: the zero-order hold of a stiff spring and a delayed damper generates it, so the
    test above is not trivially true.  (With the proxy's old uncapped push-out 90 runs did,
    with the capped targets alone 30; seeds 2 and 20, which stood for walk and chirp, got
    their excess from the push-out and no longer exceed.)"""
    out, _ = run_case(seed, controller=False)
    assert (out.delivered[:-1] - out.work_cap[1:]).max() > 0.0
    assert np.cumsum(out.contact_work).max() <= CONTACT_WORK_TOL


def test_a_bad_sample_turns_the_coupling_off_until_reset():
    """A non-finite sample (or a zero quaternion) gives zero wrench and keeps the coupling off
    until ``reset()``: a device sending garbage every other tick cannot make the observer
    settle zero work against the gaps (before: 0.40 J to the hand against a 0.008 J bound)."""
    cp = Coupling(CouplingGains(), DeviceLimits(), startup_ramp=0.0)
    pr = Proxy(MASS, INERTIA, P0, np.eye(3))
    q = np.array([1.0, 0.0, 0.0, 0.0])
    for k in range(50):                                   # pressing 1 mm into the proxy's spring
        f, F, B = cp.step(np.array([0.0, 0.0, -1e-3 * min(1.0, k / 10)]), q, np.zeros(3), np.zeros(3), pr,
                          np.zeros(6), T)
    assert np.linalg.norm(f[:3]) > 0.3                   # K (1 - c2) 1 mm = 0.4 N
    for bad_p, bad_q in ((np.array([np.nan, 0.0, 0.0]), q), (np.zeros(3), np.zeros(4))):
        f, F, B = cp.step(bad_p, bad_q, np.zeros(3), np.zeros(3), pr, np.zeros(6), T)
        assert not f.any() and not F.any() and not B.any()
        for x in (1e-3, -1e-3, 1e-3):                      # good samples again: still off
            f, F, B = cp.step(np.array([x, 0.0, -1e-3]), q, np.zeros(3), np.zeros(3), pr, np.zeros(6), T)
            assert not f.any() and not F.any()
        cp.reset()
        f, _, _ = cp.step(np.array([0.0, 0.0, -1e-3]), q, np.zeros(3), np.zeros(3), pr, np.zeros(6), T)
        assert np.all(np.isfinite(f))


def test_a_vanishing_velocity_with_a_deficit_is_no_division_by_zero():
    from haptics.coupling import passivity_control
    f = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    v = np.array([1e-170, 0.0, 0.0, 0.0, 0.0, 0.0])       # |v|^2 underflows, f.v does not
    g, E, a_l, a_r, bounded = passivity_control(f, v, -1e-3, T, 20.0, 0.05)
    assert np.all(np.isfinite(g)) and a_l == 0.0
