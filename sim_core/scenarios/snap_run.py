"""The snap fit's headless run (issue 27): the core's step over the config's waypoints
(``scenario.simulate``) with the snap's own record of every step (``snap.Trace``: the contacts'
force on the plug, the floor's, the hooks' deflection, the prongs' energy) for its summary and
plot (``snap_fit``).  Apart from ``snap_fit`` because it runs a scenario: the builders under
``tasks`` import no ``scenario`` (``tests/sim_core/scenarios/test_scenario_table.py``).
"""
from __future__ import annotations

import time

import numpy as np

from sim_core.scenarios import scenario
from sim_core.scenarios.snap_fit import socket_of, world
from sim_core.systems.fem import snap


def simulate(cfg: dict, src: str = "config", duration: float | None = None, on_step=None, built=None):
    """Run the config's insertion through the core's step (``scenario.simulate``, the waypoints
    the plug's set point): (the core's ``RunResult``, the ``snap.Trace`` of every step, wall s).
    `built`: the config's ``snap_fit.world`` (model, start) if the caller has it already."""
    model, state = world(cfg, src) if built is None else built
    sock, tr = socket_of(model), snap.Trace()
    k = model.systems.index(sock)

    def record(before, inp, after, info):
        sub = after.systems[k]
        for name, v in (("t", after.t), ("z", after.p_w[0, 2]), ("plug_force", info.contact_wrench[0, :3].copy()),
                        ("floor_force", sub.floor), ("penetration", info.max_penetration),
                        ("contacts", info.n_contacts), ("sweeps", info.sweeps), ("residual", np.nan),
                        ("deflection", sub.deflection), ("prong_energy", sock.energy(sub)),
                        ("z_set", inp.p_set_w[0, 2]), ("wall", time.perf_counter())):
            getattr(tr, name).append(v)
        if on_step is not None:
            on_step(before, inp, after, info)

    wall = time.perf_counter()
    res = scenario.simulate(model, scenario.record(cfg, src), state, duration, on_step=record)
    return res, tr, time.perf_counter() - wall
