"""The assembly peers' comparison (bench/peers/compare.py, issue 28): the common yardstick on
known poses, the nut's convex pieces keeping the groove, the drive, the one-line messages, and
the table and figure on a small made-up result.  The engines' own runs are slow (marked)."""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from bench.peers import compare
from bench.peers.assembly import Drive, Row, Setup, Trajectory, bolt_penetration, penetration

DEPTH_TOL = 5e-6      # m: the peg mesh's vertices against the exact bore, offset straight at one of them


@pytest.fixture(scope="module")
def peg():
    return Setup("peg_in_hole")


def _still(p, R=None) -> Trajectory:
    return Trajectory(dt=0.01, t=[0.01], p=[np.asarray(p, float)], R=[np.eye(3) if R is None else R])


def test_yardstick_peg_offset_in_the_bore_is_offset_minus_clearance(peg):
    """The peg 20 mm down the bore, moved 0.5 mm along +x: its deepest node is the one facing
    +x, in the wall by 0.5 mm less the radial clearance (the exact SDF of the hole)."""
    clearance = peg.scen.static_dims["radial_clearance_to_peg"]
    offset = 0.5e-3
    assert penetration(peg, _still([0.0, 0.0, -0.02])) == 0.0
    d = penetration(peg, _still([offset, 0.0, -0.02]))
    assert d == pytest.approx(offset - clearance, abs=DEPTH_TOL)


def test_yardstick_docking_uses_the_analytic_manifold():
    """The plate seated 5 mm up, moved 0.3 mm sideways: each pin in its hole's wall by 0.3 mm
    less the 0.1 mm clearance (capsule against capsule: exact)."""
    s = Setup("docking")
    p0 = np.array([0.0, 0.0, 0.005]) + s.com          # lower face 5 mm above the block's top: pins inside
    assert penetration(s, _still(p0)) == 0.0
    clearance = s.model.shapes[0].block.radius - s.model.shapes[1].plate.radius
    d = penetration(s, _still(p0 + [3e-4, 0.0, 0.0]))
    assert d == pytest.approx(3e-4 - clearance, abs=1e-9)


def test_bolt_yardstick_filter_changes_nothing():
    """bolt_penetration (the exact SDF on the nodes inside the bolt only) equals the project's
    true_penetration on engaged, shifted and turned poses."""
    from sim_core.scenarios.common import set_rotation
    from sim_core.scenarios.scenario import true_penetration
    from sim_core.types import State
    s = Setup("bolting")
    for z, dx, yaw in ((0.12, 0.0, 0.0), (0.105, 5e-4, 0.3), (0.1, 0.0, 2.0)):
        R, p = set_rotation(yaw, 0.0, 0.0), np.array([dx, 0.0, z])
        assert bolt_penetration(s, p, R) == true_penetration(s.model, State(0.0, p, R, np.zeros(6)))
    assert bolt_penetration(s, np.array([0.0, 0.0, 0.1]), set_rotation(2.0, 0.0, 0.0)) > 1e-4


def test_nut_pieces_keep_the_groove_and_the_material():
    """Random points about the nut's bore: none of the empty groove is inside a piece (beyond
    1 um of the hull's planes between profiles), and the material they miss is within the chord
    play r (1/cos(pi/N) - 1) of the surface."""
    pytest.importorskip("scipy")
    from bench.peers.nut_pieces import SECTORS, inside, nut_pieces
    from sim_core.geometry import profiles
    spec = profiles.all_parts()["nut_M48x5"]
    pieces = nut_pieces(spec)
    rng = np.random.default_rng(0)
    n = 4000
    th = rng.uniform(0.0, 2 * np.pi, n)
    z = rng.uniform(-0.45, 0.45, n) * spec.height
    r = rng.uniform(spec.r_crest - 0.5e-3, spec.r_root + 2e-3, n)
    gap = r - spec.bore_radius(th, z)                       # > 0: in the nut's material
    hit = inside(pieces, np.stack([r * np.cos(th), r * np.sin(th), z], 1))
    assert np.all(gap[hit] > -1e-6), "a piece fills the thread groove"
    play = spec.r_root * (1 / math.cos(math.pi / SECTORS) - 1)
    assert np.all(gap[~hit] < play + 1e-9), "a piece misses material deeper than its chord play"
    assert hit[gap > 0].mean() > 0.98


def test_drive_is_stable_where_an_explicit_spring_is_not():
    """The nut's rotational drive (20 N m/rad, 0.3 N m s on I_zz = 1e-3) at 10 ms: the wrench of
    ``Drive`` applied over explicit steps settles on the set angle; the same gains evaluated at
    the step's start (an explicit spring-damper) diverge."""
    s = Setup("bolting")
    dt, izz = 0.01, s.inertia[2, 2]
    K, D = s.drive.K[5], s.drive.D[5]
    for implicit in (True, False):
        a, w = 0.1, 0.0                                   # rad off the set angle 0, at rest
        for _ in range(300):
            if implicit:
                R = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
                tau = s.drive.wrench(dt, np.zeros(3), R, np.zeros(3), np.array([0, 0, w]),
                                     np.zeros(3), np.eye(3), np.zeros(3), np.zeros(3))[1][2]
            else:
                tau = -K * a - D * w
            w += dt * tau / izz                           # the peer's step: the wrench held over dt
            a += dt * w
        assert (abs(a) < 1e-6) == implicit, (implicit, a)


def test_drive_wrench_is_zero_at_the_set_pose():
    d = Drive(np.ones(6), np.ones(6), 1.0, np.eye(3))
    f, tau = d.wrench(0.01, np.zeros(3), np.eye(3), np.zeros(3), np.zeros(3),
                      np.zeros(3), np.eye(3), np.zeros(3), np.zeros(3))
    assert np.all(f == 0.0) and np.all(tau == 0.0)


def _judged_and_own(task: str, duration: float):
    """tightsim's run judged from its trajectory (as every peer's is) and its own task figure."""
    from dataclasses import replace

    from sim_core.scenarios import scenario
    from sim_core.scenarios.tasks import TASKS
    s = Setup(task)
    traj, simulated = compare.run_tightsim(s, s.config_dt, duration)
    row = compare.judge(s, "tightsim", traj, simulated)
    own = scenario.simulate(replace(s.model, dt=s.config_dt), s.scen, s.start, duration=duration, dt=s.config_dt)
    return row, TASKS[task].figures(own)


def test_a_trajectory_is_judged_as_tightsim_judges_itself():
    """Docking at 10 ms: the figure judged from the trajectory is tightsim's own (the peers'
    figures go through the same code)."""
    row, fig = _judged_and_own("docking", 4.0)
    assert row.met == fig["task_target_met"] is True
    assert row.value == pytest.approx(fig["height_to_seat_m"] * 1e3, abs=1e-12)


@pytest.mark.slow
def test_a_bolting_trajectory_is_judged_as_tightsim_judges_itself():
    """Bolting at 10 ms: the advance per turn from the trajectory's orientations (step-by-step
    rotation vectors) agrees with tightsim's (midpoint angular velocity) within 0.1 %."""
    row, fig = _judged_and_own("bolting", 6.0)
    assert row.met and fig["task_target_met"]
    assert row.value == pytest.approx(fig["advance_per_rev_m"] * 1e3, rel=1e-3)


# ---- the command's messages --------------------------------------------------------------------

def test_without_the_extra_one_line_says_what_to_install(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "mujoco", None)           # import mujoco raises ImportError
    line = compare.missing_extra(["tightsim", "mujoco", "pybullet"])
    assert line is not None and "\n" not in line and 'pip install -e ".[peers]"' in line and "mujoco" in line
    assert compare.missing_extra(["tightsim"]) is None
    assert compare.main(["--engines", "mujoco", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ".[peers]" in err


def test_unknown_task_is_one_line(capsys, tmp_path):
    assert compare.main(["--tasks", "screwing", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "screwing" in err and "bolting" in err


# ---- the table and the figure ------------------------------------------------------------------

def _fake_rows():
    rows = []
    for e, pen, rtf, met_steps in (("tightsim", 1e-4, 4.0, (1, 2, 5, 10)), ("mujoco", 3e-4, 0.2, (1, 2)),
                                   ("pybullet", 2e-3, 0.5, ())):
        for ms in (1.0, 2.0, 5.0, 10.0):
            rows.append(Row(engine=e, task="peg_in_hole", dt=ms * 1e-3, met=ms in met_steps,
                            figure=f"{40 if ms in met_steps else 9:g} mm in", penetration_m=pen * ms,
                            rtf=rtf * ms))
    return rows


def test_table_reports_the_largest_step_that_succeeds_and_the_ratios():
    text = compare.table(_fake_rows(), "header\n")
    lines = text.splitlines()
    mj = next(s for s in lines if s.startswith("| peg_in_hole | mujoco | 2 |"))
    cells = [c.strip() for c in mj.split("|")[1:-1]]
    assert cells[3] == "1, 2"                                       # every step that succeeds
    assert cells[5] == "0.6" and cells[6] == "0.4"                 # 0.6 mm, RTF 0.4 at 2 ms
    assert cells[7] == "1 / 40"                                     # tightsim at 10 ms
    assert cells[8] == "0.01" and cells[9] == "0.6"                 # RTF 0.4 / 40, pen 0.6 / 1
    assert any(s.startswith("| peg_in_hole | pybullet | none |") for s in lines)
    assert sum(s.startswith("| peg_in_hole |") for s in lines) == 3 + 12


@pytest.mark.parametrize("matplotlib", [True, False])
def test_plot_writes_a_png(tmp_path, monkeypatch, matplotlib):
    if matplotlib:
        pytest.importorskip("matplotlib")
    else:
        monkeypatch.setitem(sys.modules, "matplotlib", None)
    path = tmp_path / "peers.png"
    how = compare.plot(_fake_rows(), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert how == ("matplotlib" if matplotlib else "sim_core.io.png")


# ---- the engines (slow) ------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("engine", ["mujoco", "pybullet"])
def test_peer_quick_run_writes_the_table(engine, tmp_path):
    pytest.importorskip(engine)
    assert compare.main(["--quick", "--tasks", "docking", "--engines", "tightsim", engine,
                         "--out", str(tmp_path)]) == 0
    text = (tmp_path / "peers.md").read_text()
    assert f"| docking | {engine} | 10 |" in text and (tmp_path / "peers.png").exists()
