"""The shipped defaults against textbook laws under load (``sim_core.fidelity``): the
power-screw torque raising and lowering, holding above and running down below the
self-locking limit, stick and slip on the bore wall, a frictionless wall.  The every-node
and k-means variants are checked as references in the slow selection."""
import math

import pytest

from sim_core.scenarios import fidelity as F

# The bound on the power-screw torque.  Measured with the defaults: -4.6 ... +1.1 %
# (every contact node with the exact SDF: -3.3 %); the rest is how a rigid, redundant flank
# contact shares its load between radii (21.4-23.9 mm against the pitch radius 22.4 mm).
TORQUE_TOL = 0.10
LEAD_TOL = 0.02               # the nut advances one lead per turn within 2 %
HOLD_TOL = 1e-4               # m in 5 s: a self-locking nut holds
STICK_VELOCITY_TOL = 1e-6     # m/s: a peg below mu N does not creep
FRICTIONLESS_AXIAL_TOL = 0.01  # N: a frictionless wall cannot push along itself
HELIX_TOL = 0.02              # an unlocked nut runs down its helix: descent / (lead x turns)
# the run-down acceleration against its closed form: measured -0.3 / +0.9 / +1.6 % at
# mu = 0 / 0.01 / 0.02 (every node: 0.0 % at mu = 0); near the self-locking limit the rate is a
# small difference (tan(lam) - mu'), so the friction's lever arm weighs 3x more there
RUNDOWN_TOL = 0.05
SLIDE_RATE_TOL = 0.05         # the rigid-body sliding rate (F - mu N) / m within 5 %


def _screw(variant, mu, load, raising):
    r = F.power_screw(variant, mu, load, raising)
    assert not r.left_thread, f"{variant}: the nut left its thread"
    assert abs(r.lead_error) <= LEAD_TOL, f"{variant}: {r.advance_per_rev * 1e3:.3f} mm/rev"
    assert abs(r.torque_error) <= TORQUE_TOL, (f"{variant}: torque {r.torque:.3f} N m against the "
                                               f"power-screw {r.torque_law:.3f} N m")
    return r


def test_closed_forms_agree_with_each_other():
    """The power-screw relations: raising minus lowering is twice the lead term at mu = 0,
    the self-locking limit is where the lowering torque vanishes, and the run-down rate at
    mu = 0 is the energy balance F / (m + J / c^2)."""
    d2, lead = 0.0447, 0.005
    mu0 = F.self_locking_mu(d2, lead)
    assert abs(F.screw_torque(100.0, mu0, False, d2, lead)) < 1e-12
    assert F.screw_torque(100.0, 0.0, True, d2, lead) == pytest.approx(100.0 * lead / (2 * math.pi), rel=1e-12)
    c = lead / (2 * math.pi)
    assert F.rundown_acceleration(50.0, 0.0, 1.0, 1e-3, d2, lead) == pytest.approx(50.0 / (1.0 + 1e-3 / c**2),
                                                                                   rel=1e-12)


@pytest.mark.parametrize("mu, load, raising", [(0.2, 100.0, True), (0.3, 300.0, False)])
def test_power_screw_torque_defaults(mu, load, raising):
    _screw("defaults", mu, load, raising)


@pytest.mark.slow
@pytest.mark.parametrize("raising", [True, False])
@pytest.mark.parametrize("load", [100.0, 300.0])
@pytest.mark.parametrize("mu", [0.1, 0.2, 0.3])
def test_power_screw_torque_defaults_all(mu, load, raising):
    _screw("defaults", mu, load, raising)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["every+exact", "kmeans+exact"])
def test_power_screw_reference_variants(variant):
    """The every-node reference matches the law; k-means with the exact SDF is measured, not
    held to it (bench/fidelity.py prints its error): it must at least run."""
    if variant == "every+exact":
        _screw(variant, 0.2, 100.0, True)
    else:
        r = F.power_screw(variant, 0.2, 100.0, True)
        assert math.isfinite(r.torque)


@pytest.mark.parametrize("mu, load", [(0.1, 100.0), (0.05, 50.0)])
def test_nut_holds_above_self_locking(mu, load):
    h = F.axial_hold("defaults", mu, load, seconds=5.0)
    assert mu > h.locking_mu
    assert abs(h.descent) < HOLD_TOL and abs(h.turned) < HOLD_TOL / (0.005 / (2 * math.pi))


@pytest.mark.parametrize("mu", [0.0, 0.01, 0.02])
def test_nut_runs_down_below_self_locking(mu):
    """Below the self-locking limit the nut turns down its helix at the rate of the closed
    form.  30 N keeps it under ~15 rad/s in the span (6 rev/s, 0.4 rad a step, is where the
    velocity-level contacts at T = 10 ms stop following a thread)."""
    h = F.axial_hold("defaults", mu, 30.0, seconds=0.5)
    assert mu < h.locking_mu
    assert h.descent > 1e-3 and h.turned < 0                 # it turns down the thread
    helix = 0.005 * abs(h.turned) / (2 * math.pi)
    assert h.descent == pytest.approx(helix, rel=HELIX_TOL)  # ... along its helix
    assert h.accel == pytest.approx(h.accel_law, rel=RUNDOWN_TOL)


@pytest.mark.parametrize("ratio", [0.9, 0.95])
def test_peg_sticks_below_mu_n(ratio):
    r = F.peg_on_wall("defaults", 0.2, 20.0, ratio * 0.2 * 20.0)
    assert abs(r.velocity) < STICK_VELOCITY_TOL


def test_frictionless_wall_does_not_push_along_itself():
    r = F.peg_on_wall("defaults", 0.0, 20.0, 0.0)
    assert abs(r.axial_force) < FRICTIONLESS_AXIAL_TOL


# The slide runs 0.1-0.2 s: at 2.8 m/s^2 a longer one takes the peg's end out of the bore.
SLIDES = [(1.05, 0.2), (1.1, 0.2), (1.3, 0.1)]   # (push / mu N, seconds)


@pytest.mark.parametrize("ratio,seconds", SLIDES)
def test_peg_slides_just_above_mu_n_at_rigid_body_rate_every_node(ratio, seconds):
    """Every node, exact SDF (measured +0.0 / -0.1 / +0.0 %): with the speculative contacts
    linearized at the end of the step nothing but friction acts along the wall."""
    r = F.peg_on_wall("every+exact", 0.2, 20.0, ratio * 0.2 * 20.0, seconds=seconds)
    assert r.accel == pytest.approx(r.accel_law, rel=SLIDE_RATE_TOL)


def test_peg_ghost_contact_without_prediction():
    """The same slide with gaps linearized where the nodes are now: each ring of nodes that
    reaches the entry chamfer's edge is held by the chamfer's plane (the law's rate is not
    reached) -- what ``contact.speculative = "predicted"`` removes."""
    r = F.peg_on_wall("every+exact", 0.2, 20.0, 1.3 * 0.2 * 20.0, seconds=0.1, speculative="current")
    assert r.accel < 0.5 * r.accel_law


@pytest.mark.parametrize("ratio,seconds", SLIDES)
def test_peg_slides_above_mu_n_defaults(ratio, seconds):
    """The shipped peg scenario makes every contact node its own contact
    (``contact.clustering = "none"``, real time with the solver's active set): it slides at
    the law's rate just above mu N (measured +0.00 / +0.00 / +0.00 %)."""
    r = F.peg_on_wall("defaults", 0.2, 20.0, ratio * 0.2 * 20.0, seconds=seconds)
    assert r.accel == pytest.approx(r.accel_law, rel=SLIDE_RATE_TOL)


@pytest.mark.xfail(strict=True, reason="the patch representatives of the wall's line contact sit off the "
                   "line and wedge the peg (measured -100 / -100 / -64 % of the rate; why the peg's default "
                   "is every node: docs/fidelity.md)")
@pytest.mark.parametrize("ratio,seconds", SLIDES)
def test_peg_slides_above_mu_n_with_patches(ratio, seconds):
    r = F.peg_on_wall("defaults", 0.2, 20.0, ratio * 0.2 * 20.0, seconds=seconds, clustering="patches")
    assert r.accel == pytest.approx(r.accel_law, rel=SLIDE_RATE_TOL)
