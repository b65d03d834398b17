"""The bouncing-ball report (bench/bouncing_ball.py) and tightsim's rows of the Table 1 sweep
(bench/max_step.py).  The tests that run tightsim's ball need `sim_core.scenarios.bouncing_ball`
(issue 25's compliant law) and skip without it."""
from __future__ import annotations

import numpy as np
import pytest

from bench import bouncing_ball as bb
from bench.peers import GRAVITY, MASS, RADIUS, Z0

FIRST_TOUCH = np.sqrt(2.0 * (Z0 - RADIUS) / GRAVITY)    # s
EULER_FINE = 1e-7       # s: 5e-4 of the contact's 0.53 ms period; the Euler error is O(dt)
RESTITUTION_TOL = 1e-3  # the bound on the restitution the ball really bounces with
ENERGY_TOL = 1e-3       # relative, one bounce of the fine Euler run (its O(omega dt) ~ 1e-3)


@pytest.mark.parametrize("e", [0.2, 0.6, 1.0])
def test_eq10_damping_gives_the_restitution_under_a_fine_integration(e):
    """Eq. (10)'s D, integrated by a reference that knows nothing of the closed form, bounces
    with e -- and `measured_restitution` reads it off the samples beside the contact."""
    run = bb.semi_implicit_euler(e, EULER_FINE, FIRST_TOUCH + 0.01)
    assert abs(bb.measured_restitution(run) - e) < RESTITUTION_TOL


def test_the_euler_comparison_conserves_energy_at_a_fine_step_and_not_at_a_coarse_one():
    impact = MASS * GRAVITY * (Z0 - RADIUS)
    fine = bb.semi_implicit_euler(1.0, EULER_FINE, FIRST_TOUCH + 0.01)
    coarse = bb.semi_implicit_euler(1.0, 1e-4, FIRST_TOUCH + 0.01)
    drift = lambda r: abs(r["energy"][-1] - r["energy"][0]) / impact  # noqa: E731
    assert drift(fine) < ENERGY_TOL
    assert drift(coarse) > 10 * ENERGY_TOL      # omega dt = 1.2: the contact is not resolved


def test_clamped_force_never_pulls():
    run = bb.semi_implicit_euler(0.2, 1e-6, FIRST_TOUCH + 0.01)
    assert bb.contact_force(run, 0.2, clamped=False).min() < 0.0     # Kelvin-Voigt pulls at exit
    assert bb.contact_force(run, 0.2, clamped=True).min() == 0.0


def test_png_plot_is_readable(tmp_path):
    from sim_core.io.png import read_png
    t = np.linspace(0.0, 1.0, 50)
    bb.plot(tmp_path / "p.png", [[(t, np.sin(6 * t), (210, 30, 30))], [(t, t, (0, 0, 0))]],
            size=(200, 160))
    img = read_png(tmp_path / "p.png")
    assert img.shape == (160, 200, 3) and (img[..., 0] > img[..., 1] + 100).any()   # red drawn


# ---- tightsim's rows: need h10's scenario -------------------------------------------------

@pytest.mark.slow
def test_tightsim_compliant_ball_is_stable_at_128_ms():
    pytest.importorskip("sim_core.scenarios.bouncing_ball")
    from bench.max_step import sweep
    res = sweep("tightsim-compliant", steps_ms=[128.0])
    assert res["largest"] == 128.0, res["rows"]


@pytest.mark.slow
def test_tightsim_complementarity_ball_does_not_bounce():
    """Rigid and inelastic by construction: never three bounces to the drop height."""
    pytest.importorskip("sim_core.scenarios.bouncing_ball")
    from bench.max_step import sweep
    res = sweep("tightsim-complementarity", steps_ms=[1.0])
    assert res["largest"] is None


@pytest.mark.slow
def test_report_writes_its_figures_and_table(tmp_path):
    pytest.importorskip("sim_core.scenarios.bouncing_ball")
    assert bb.main(["--out", str(tmp_path), "--bounces", "2", "--contact-dt", "1e-5"]) == 0
    for name in ("fig3_contact.png", "fig4_energy.png", "restitution.md"):
        assert (tmp_path / name).stat().st_size > 0
