"""Hashes of the final State (p_w, R_wb, V bytes, sha256) of short headless runs of the recorded
scenarios (``scenario.simulate``, as ``tightsim run NAME --headless``) and of the hanging and
draped 40-link chains (300 steps): run it before and after a change that must leave them bit
for bit (docs/cable.md "Step cost" was checked this way).

    python bench/scenario_hashes.py [DURATION_S]      # default 0.5 s a scenario
"""
from __future__ import annotations

import hashlib
import sys

import numpy as np

from sim_core import step as step_mod
from sim_core.scenarios import chain, scenario
from sim_core.types import Inputs

SCENARIOS = ("peg_in_hole", "bolting", "docking", "grinding", "bouncing_ball")


def digest(st) -> str:
    m = hashlib.sha256()
    for a in (st.p_w, st.R_wb, st.V):
        m.update(np.ascontiguousarray(a).tobytes())
    return m.hexdigest()[:16]


def final_state(name: str, duration: float):
    model, state, cfg = scenario.load(name)
    last = {}

    def on_step(prev, inp, after, info):
        last["s"] = after
    scenario.simulate(model, scenario.record(cfg), state, duration, on_step=on_step)
    return last["s"]


def main(duration: float = 0.5) -> None:
    for name in SCENARIOS:
        print(name, digest(final_state(name, duration)), flush=True)
    for name, (model, st) in (("chain_hanging", chain.build(40)), ("chain_draped", chain.draped(40))):
        n = model.n_bodies
        inp = Inputs(np.zeros((n, 3)), np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 3)), np.zeros((n, 3)))
        for _ in range(300):
            st, _ = step_mod.step(model, st, inp)
        print(name, digest(st), flush=True)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 0.5)
