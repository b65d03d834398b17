"""The cable's cheaper step (bench/cable_step.py, docs/cable.md "Step cost"): the structured
rigid-blocks kernel against the general one and its NumPy reference, and the anchor-frame
coupling kernels' parallel form against their serial form.  No wall-clock figures here."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sim_core.math.so3 import exp_so3
from sim_core.scenarios import cable, chain
from sim_core.systems import rigid
from sim_core.types import Drive, Inputs, State

# relative: the structured kernel solves the same system in closed form (3x3 cofactors, not a
# 6x6 LU), the Coriolis point's fixed point stopped at pmi.CORIOLIS_TOL = 1e-13 in both
STRUCTURED_TOL = 1e-11


def _shaken_world(n, seed):
    """A chain world of n bodies with full drives (K, D), non-diagonal inertias, set points,
    external wrenches, every body moved, turned and spinning -- fast enough (10 rad/s) for the
    Coriolis point's passes to matter."""
    rng = np.random.default_rng(seed)
    model, st = chain.build(n)
    bodies = []
    for bdy in model.bodies:
        Q = exp_so3(rng.normal(size=3))
        bodies.append(replace(bdy, inertia_b=Q @ bdy.inertia_b @ Q.T))
    model = replace(model, bodies=tuple(bodies), drive=Drive(rng.uniform(0, 100, (n, 6)), rng.uniform(0, 1, (n, 6))))
    R = np.array([exp_so3(rng.normal(size=3) * 0.3) for _ in range(n)])
    st = State(0.0, st.p_w + rng.normal(size=(n, 3)) * 1e-3, R, rng.normal(size=(n, 6)) * 10.0)
    inp = Inputs(rng.normal(size=(n, 3)) * 1e-3, np.array([exp_so3(rng.normal(size=3) * 0.1) for _ in range(n)]),
                 rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), rng.normal(size=(n, 6)))
    return model, st, inp


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("dt", [1e-3, 1e-2])
def test_structured_blocks_match_the_general_kernel(seed, dt):
    model, st, inp = _shaken_world(6, seed)
    gen = rigid.blocks(model, st, inp, dt)
    ref = rigid.blocks_numpy(model, st, inp, dt)
    fast = rigid.blocks(replace(model, rigid_kernel="structured"), st, inp, dt)
    for f in ("A", "b", "F0", "Bd", "pull"):
        x, y, z = getattr(fast, f), getattr(gen, f), getattr(ref, f)
        scale = max(1.0, np.abs(y).max())
        assert np.abs(x - y).max() <= STRUCTURED_TOL * scale, f
        assert np.abs(x - z).max() <= STRUCTURED_TOL * scale, f


def test_a_held_body_has_no_drive_in_the_structured_kernel():
    """``driven`` false (a body another system holds): no B, F the external wrench and gravity."""
    model, st, inp = _shaken_world(3, 4)
    m, J, dr, g = rigid._constants(model)
    dr = dr.copy()
    dr[1] = False
    args = (m, J, st.p_w, st.R_wb, st.V, 0.01, model.drive.K, model.drive.D, dr, inp.p_set_w, inp.R_set_w,
            inp.v_set_w, inp.w_set_w, inp.f_ext, g)
    for x, y in zip(rigid._blocks_structured(*args), rigid._blocks(*args)):
        assert np.abs(x - y).max() <= STRUCTURED_TOL * max(1.0, np.abs(y).max())


def test_the_cable_takes_the_structured_kernel_and_the_chain_does_not():
    assert cable.build(4)[0].rigid_kernel == "structured"
    assert chain.build(4)[0].rigid_kernel == "general"


@pytest.mark.parametrize("anchor", ["clamp", "free"])
def test_parallel_anchor_kernels_are_the_serial_ones_bit_for_bit(anchor):
    """``local_terms_parallel`` / ``local_newton_parallel`` (prange over runs of couplings) give
    exactly the serial kernels' arrays: each coupling's arithmetic and the gather's order are
    the same (so the switch, couplings.PARALLEL_MIN_COUPLINGS, cannot change a run)."""
    from sim_core.dynamics import couplings
    n = 70
    model, st = cable.build(n, anchor=anchor)
    rng = np.random.default_rng(5)
    R = np.array([exp_so3(rng.normal(size=3) * 0.3) for _ in range(n)])
    st = State(0.0, st.p_w + rng.normal(size=(n, 3)) * 1e-3, R, rng.normal(size=(n, 6)) * 0.1)
    cp = model.couplings
    c, fr = len(cp), cp.frame.astype(np.int64)
    theta, Vn = rng.normal(size=(n, 3)) * 0.2, st.V + rng.normal(size=(n, 6)) * 0.1
    geo = (cp.a, cp.b, cp.r_a, cp.R_a, cp.r_b, cp.R_b, cp.K, cp.D, fr, st.p_w, st.R_wb, st.V)
    for chunks in (2, 3):
        out = []
        for par in (False, True):
            A, b = np.ones((n, 6, 6)), np.ones((n, 6))
            t = (np.zeros((c, 6, 6)), np.zeros((c, 6)), np.zeros((c, 6)))
            J, Jab, Jba = np.ones((n, 6, 6)), np.zeros((c, 6, 6)), np.zeros((c, 6, 6))
            if par:
                couplings.local_terms_parallel(*geo, theta, 0.01, A, b, *t, *couplings._NO_STATIC, False, chunks)
                couplings.local_newton_parallel(*geo, Vn, theta, 0.01, J, Jab, Jba, chunks)
            else:
                couplings.local_terms(*geo, theta, 0.01, A, b, *t, *couplings._NO_STATIC, False)
                couplings.local_newton_terms(*geo, Vn, theta, 0.01, J, Jab, Jba)
            out.append((A, b) + t + (J, Jab, Jba))
        for x, y in zip(*out):
            assert np.array_equal(x, y)


@pytest.mark.parametrize("anchor", ["clamp", "free"])
def test_turn_free_part_formed_once_gives_the_same_terms(anchor, monkeypatch):
    """``turns`` forms the couplings' turn-free part (``local_statics``: the error, R_ga^T R_wb,
    R_wa^T d) once a step and every ``terms`` call reads it: the same blocks, right-hand sides,
    errors and forces bit for bit as formed on each call, serial and parallel, with a coupling
    to the world (clamp) and without."""
    from sim_core.dynamics import couplings
    n = 50
    model, st = cable.build(n, anchor=anchor)
    rng = np.random.default_rng(7)
    R = np.array([exp_so3(rng.normal(size=3) * 0.3) for _ in range(n)])
    p, V = st.p_w + rng.normal(size=(n, 3)) * 1e-3, rng.normal(size=(n, 6)) * 0.1
    cp = model.couplings
    theta = rng.normal(size=(n, 3)) * 0.2
    static = couplings.local_statics(cp, p, R)
    for par in (None, 8):
        monkeypatch.setattr(couplings, "PARALLEL_MIN_COUPLINGS", par)
        out = []
        for s in (None, static):
            A, b = np.ones((n, 6, 6)), np.ones((n, 6))
            out.append((A, b) + couplings.terms(cp, p, R, V, theta, 0.01, A, b, s))
        for x, y in zip(*out):
            assert np.array_equal(x, y)
