"""Replay: re-run the physics of a session log with the one step and compare (``--verify``)."""
from __future__ import annotations

import numpy as np

from sim_core.io.log import Log, LogError, describe_losses, gaps_in_records, losses

# the fields replay reads, with their lengths (None: the arm's own)
FIELDS = {
    "/physics_input": {"p_set_w": 3, "R_set_w": 9, "v_set_w": 3, "w_set_w": 3, "f_ext": 6},
    "/part_state": {"t": 0, "p_w": 3, "R_wb": 9, "V": 6},
    "/arm_state": {"q": None, "qd": None},
}


def checked(log: Log, topic: str, k: int, msg, sizes: dict | None = None) -> dict:
    """Message k of a topic as arrays, each field present, numeric, of its length and finite;
    anything else is a LogError naming the topic, the message and the field."""
    where = f"{log.path}: {topic}[{k}]"
    if not isinstance(msg, dict):
        raise LogError(f"{where}: not an object")
    out = {}
    for key, n in FIELDS[topic].items():
        if key not in msg:
            raise LogError(f"{where}: field {key!r} missing")
        try:
            a = np.asarray(msg[key], dtype=np.float64)
        except (TypeError, ValueError):
            raise LogError(f"{where}: {key}: not numbers") from None
        want = (sizes or {}).get(key, n)
        if (want == 0 and a.ndim != 0) or (want and a.shape != (want,)):
            raise LogError(f"{where}: {key}: {a.size} numbers, expected {want or 1}")
        if not np.all(np.isfinite(a)):
            raise LogError(f"{where}: {key}: not finite")
        out[key] = a
    return out


def replay(log: Log, verify: bool = False):
    """Re-run the physics from the logged inputs with the one step (``sim_core.step``);
    returns (steps, max position error m, max velocity error m/s or rad/s), the part's and the
    arm's joints alike.  Bitwise reproduction gives zeros.  A log with damaged records, or
    messages of another shape, is a LogError: it is never compared (a damaged chunk would
    otherwise drop the steps it held and the rest would still match).  A log that lost physics
    steps (its writer says so, or a step does not start where the one before it ended) is a
    LogError too, "incomplete log": the steps after a gap start from a state the log does not
    hold, and a replay through it would only say MISMATCH."""
    if log.corrupt:
        more = f" (and {len(log.corrupt) - 1} more)" if len(log.corrupt) > 1 else ""
        raise LogError(f"{log.path}: corrupted: {log.corrupt[0]}{more}; not replayed")
    said, found = losses(log)[0], gaps_in_records(log)
    gaps = [g for g in said if g.get("stream") == "physics"] or [g for g in found if g.get("stream") == "physics"]
    if gaps:
        raise LogError(f"{log.path}: incomplete log: {describe_losses(gaps)}; not replayed")
    from dataclasses import replace

    from app.physics_loop import held_inputs
    from sim_core.config import MAX_DT, validate
    from sim_core.scenarios import scenario
    from sim_core.step import step

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
    if not parts:
        raise LogError(f"{log.path}: /part_state empty, no start state to replay from")
    from sim_core.systems.arm.system import ArmState, arm_of, joints, with_arm_state
    has_arm = arm_of(model) is not None
    if has_arm and not arms:
        raise LogError(f"{log.path}: /arm_state missing, but the scenario's arm holds the part")
    arm_sizes = {} if not has_arm else dict(zip(("q", "qd"), (a.size for a in joints(state0))))
    parts = [checked(log, "/part_state", k, m) for k, (_, m) in enumerate(parts)]
    arms = [checked(log, "/arm_state", k, m, arm_sizes) for k, (_, m) in enumerate(arms)] if has_arm else []
    # the first /part_state (and /arm_state) is the initial state, written before the first step
    # the log holds the held part (Model.hand_body); every other body starts where the
    # scenario builds it and is held there, as the physics loop does (physics_loop.held_inputs)
    first, h = parts[0], model.hand_body
    P, R, V = state0.p_w.copy(), state0.R_wb.copy(), np.zeros_like(state0.V)
    P[h], R[h], V[h] = first["p_w"], first["R_wb"].reshape(3, 3), first["V"]
    state = replace(state0, t=float(first["t"]), p_w=P, R_wb=R, V=V)
    if arms:
        state = with_arm_state(model, state, ArmState(arms[0]["q"], arms[0]["qd"]))
    err_p = err_v = 0.0
    n = 0
    for k, (_, raw) in enumerate(inputs):
        m = checked(log, "/physics_input", k, raw)
        dt = raw.get("dt") if isinstance(raw, dict) else None
        if dt is not None and not (isinstance(dt, (int, float)) and 0.0 < dt <= MAX_DT):
            raise LogError(f"{log.path}: /physics_input[{k}]: dt {dt!r} is not a step length in (0, {MAX_DT:g}] s")
        inp = held_inputs(model, state, m["p_set_w"], m["R_set_w"].reshape(3, 3), m["v_set_w"], m["w_set_w"])
        if m["f_ext"] is not None:
            f = np.zeros((model.n_bodies, 6))
            f[h] = m["f_ext"]
            inp = replace(inp, f_ext=f)
        state, _ = step(model, state, inp, dt)
        n += 1
        if verify and k + 1 < len(parts):
            ref = parts[k + 1]
            err_p = _worse(err_p, state.p_w[h] - ref["p_w"], state.R_wb[h].ravel() - ref["R_wb"])
            err_v = _worse(err_v, state.V[h] - ref["V"])
            if k + 1 < len(arms):
                q, qd = joints(state)
                err_p = _worse(err_p, q - arms[k + 1]["q"])
                err_v = _worse(err_v, qd - arms[k + 1]["qd"])
    if verify and len(parts) != len(inputs) + 1 and not (log.truncated and len(parts) == len(inputs)):
        raise LogError(f"{log.path}: {len(inputs)} /physics_input but {len(parts)} /part_state messages "
                       "(one more than the steps expected): not verified")
    return n, err_p, err_v


def _worse(err: float, *diffs) -> float:
    """The larger of err and the differences' largest magnitude; a non-finite difference (a
    replay that diverged) is infinitely bad, never a match."""
    for d in diffs:
        m = float(np.max(np.abs(d))) if np.size(d) else 0.0
        err = max(err, m if np.isfinite(m) else np.inf)
    return err
