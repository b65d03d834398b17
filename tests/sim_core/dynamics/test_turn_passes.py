"""The couplings' turns solved with the contacts (``step.turn_passes``, ``[contact] turn_passes``,
docs/cable.md "Turns with the contacts"), on the shipped cable winding.

The law: the step's V+ is a solution of the coupled PMI system with the contacts' forces in,
its couplings taken at the turns V+ itself makes -- checked from scratch here (the bodies'
blocks, the couplings' terms at those turns, the step's contact wrench), not through the
step's own residual."""
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sim_core import config
from sim_core import step as step_mod
from sim_core.dynamics import blocktree, couplings
from sim_core.scenarios import scenario
from sim_core.systems import rigid

ROOT = Path(__file__).resolve().parents[3]
# the settle's first steps: the start's kick (the free span relaxed with the coil held) moves the
# contact set every step; from then on the passes meet their tolerance (measured)
SKIP = 10
STEPS = 40
# relative to the contacts' largest generalized force: twice step.TURN_PASS_TOL (a pass stops below
# it; the best iterate is kept where the cap comes first).  Measured from the tenth step: 1e-4-3e-4
# of ~2.2 N with the passes; without them 1.5e-2 of it (median, 0.35 N at the worst step)
RESIDUAL = 2.0 * step_mod.TURN_PASS_TOL
# symmetric / positive semi-definite to rounding (the 12x12 eigen-decompositions)
ROUND = 1e-12


def _residuals(passes: int | None):
    """Per step: (the coupled system's largest residual row with the step's contact wrench, at
    the turns the step reached -- the held link left out: the arm's fold adds its own rows --,
    the contacts' largest generalized force, StepInfo.turn_residual)."""
    model, state, cfg = scenario.load("cable_winding")
    if passes is not None:
        model = replace(model, contact=replace(model.contact, turn_passes=passes))
    loop = scenario.record(cfg).control.start()
    held, cp, dt = model.systems[0].body, model.couplings, model.dt
    out = []
    for _ in range(STEPS):
        inp = loop.inputs(model, state, dt)
        nxt, info = step_mod.step(model, state, inp)
        blk = rigid.blocks(model, state, inp, dt)
        A, b = blk.A.copy(), blk.b.copy()
        theta = 0.5 * dt * (state.V[:, 3:] + nxt.V[:, 3:])
        A_ab, _ = couplings.apply(cp, state.p_w, state.R_wb, state.V, dt, A, b, theta=theta)
        r = couplings._residual(A, b + info.contact_wrench, cp.a, cp.b, A_ab, nxt.V)
        r[held] = 0.0
        out.append((float(np.abs(r).max()), float(np.abs(info.contact_wrench).max()), info.turn_residual,
                    info.turn_passes))
        loop.measure(nxt, info)
        state = nxt
    return np.array(out[SKIP:])


def test_the_step_solves_the_couplings_with_the_contacts():
    """The shipped winding (turn_passes = 4): every step's V+ meets the coupled system with its
    contacts to RESIDUAL of their forces, and the step reports that residual; without the
    passes (the turns predicted contact-free) the same check misses by far more."""
    got = _residuals(None)
    assert (got[:, 0] <= RESIDUAL * got[:, 1]).all(), got[:, :2]
    assert np.allclose(got[:, 2], got[:, 0], rtol=0.0, atol=RESIDUAL * got[:, 1].max())
    assert got[:, 3].max() <= 4
    off = _residuals(0)
    assert np.median(off[:, 0]) > 5.0 * RESIDUAL * off[:, 1].max(), off[:, :2]
    assert (off[:, 2] == 0.0).all() and (off[:, 3] == 0).all()


def test_contact_system_is_symmetric_semi_definite_and_keeps_a_solution():
    """``couplings.contact_system``: M - A (the couplings' part) is symmetric positive
    semi-definite, and at the contact-free solution (r = 0) M V = rhs_M gives it back."""
    model, state, cfg = scenario.load("cable_winding")
    loop = scenario.record(cfg).control.start()
    for _ in range(5):
        state, info = step_mod.step(model, state, loop.inputs(model, state, model.dt))
        loop.measure(state, info)
    cp, dt = model.couplings, model.dt
    blk = rigid.blocks(model, state, loop.inputs(model, state, dt), dt)
    _, _, (A1, b1, A_ab, _), _ = couplings.turns(cp, state.p_w, state.R_wb, state.V, dt, blk.A, blk.b)
    Vn = couplings.block_solve(cp, A1, A_ab, A_ab.transpose(0, 2, 1), b1)
    r = couplings.residual_at(cp, state.p_w, state.R_wb, state.V, Vn, dt, blk.A, blk.b)
    assert np.abs(r).max() <= 1e-6 * np.abs(b1).max()              # the turns' own solution
    M, rhs, M_ab = couplings.contact_system(cp, state.p_w, state.R_wb, state.V, Vn, dt, blk.A, r)
    w = cp.a >= 0
    P = (blocktree.matrix(M - blk.A, cp.a[w], cp.b[w], M_ab[w], M_ab[w].transpose(0, 2, 1))).toarray()
    scale = np.abs(P).max()
    assert np.abs(P - P.T).max() <= ROUND * scale
    assert np.linalg.eigvalsh(0.5 * (P + P.T)).min() >= -ROUND * scale * P.shape[0]
    V = couplings.block_solve(cp, M, M_ab, M_ab.transpose(0, 2, 1), rhs)
    assert np.abs(V - Vn).max() <= 1e-8 * np.abs(Vn).max()


def test_turn_passes_with_a_subsystem_solver_is_one_line(tmp_path):
    """Solvers 2 and 3 cut couplings at the predicted turns: turn_passes with them is refused."""
    f = tmp_path / "bad.toml"
    text = (ROOT / "config" / "cable_winding.toml").read_text()
    f.write_text(re.sub(r'(?m)^island_solver = "direct"', 'island_solver = "subsystems_regulated"', text))
    with pytest.raises(config.ConfigError) as e:
        config.load(f)
    assert str(e.value) == (f"{f}: contact.turn_passes: must be 0 with island_solver 'subsystems_regulated' "
                            "(its cut couplings are taken at the predicted turns), got 4")
