"""Replay: re-run the physics of a session log with the one step and compare (``--verify``)."""
from __future__ import annotations

import numpy as np

from sim_core.io.log import Log, LogError


def replay(log: Log, verify: bool = False):
    """Re-run the physics from the logged inputs with the one step (``sim_core.step``);
    returns (steps, max position error m, max velocity error m/s or rad/s), the part's and the
    arm's joints alike.  Bitwise reproduction gives zeros."""
    from dataclasses import replace

    from sim_core.config import validate
    from sim_core.scenarios import scenario
    from sim_core.step import step
    from sim_core.types import Inputs

    cfg_msgs = log.messages("/config")
    if not cfg_msgs:
        raise LogError(f"{log.path}: /config missing, cannot rebuild the scenario")
    cfg = validate(cfg_msgs[0][1], f"{log.path}:/config")
    model, state0 = scenario.build(cfg, f"{log.path}:/config")
    inputs = log.messages("/physics_input")
    parts = log.messages("/part_state")
    arms = log.messages("/arm_state")
    if not inputs:
        raise LogError(f"{log.path}: /physics_input empty, nothing to replay")
    sess = log.messages("/session")
    if sess and sess[0][1].get("physics") == "session_step":
        raise LogError(f"{log.path}: /session: written by an older tightsim (physics \"session_step\"); "
                       "this version replays logs of its one step")
    # the first /part_state (and /arm_state) is the initial state, written before the first step
    first = parts[0][1]
    state = replace(state0, t=first["t"], p_w=np.array(first["p_w"])[None],
                    R_wb=np.array(first["R_wb"]).reshape(1, 3, 3), V=np.array(first["V"])[None])
    if model.arm is not None and arms:
        state = replace(state, q=np.array(arms[0][1]["q"]), qd=np.array(arms[0][1]["qd"]))
    err_p = err_v = 0.0
    n = 0
    for k, (_, m) in enumerate(inputs):
        inp = Inputs(np.array(m["p_set_w"]), np.array(m["R_set_w"]).reshape(3, 3), np.array(m["v_set_w"]),
                     np.array(m["w_set_w"]), np.array(m["f_ext"]))
        state, _ = step(model, state, inp, m.get("dt") or None)
        n += 1
        if verify and k + 1 < len(parts):
            ref = parts[k + 1][1]
            err_p = max(err_p, float(np.abs(state.p_w[0] - np.array(ref["p_w"])).max()),
                        float(np.abs(state.R_wb[0].ravel() - np.array(ref["R_wb"])).max()))
            err_v = max(err_v, float(np.abs(state.V[0] - np.array(ref["V"])).max()))
            if model.arm is not None and k + 1 < len(arms):
                a = arms[k + 1][1]
                err_p = max(err_p, float(np.abs(state.q - np.array(a["q"])).max()))
                err_v = max(err_v, float(np.abs(state.qd - np.array(a["qd"])).max()))
    return n, err_p, err_v
