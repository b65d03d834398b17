"""Seed 001's variable time step (Algorithm 1, Fig. 2) as a policy around the one step.

``run`` calls ``step.step(model, state, inp, dt)`` with a dt it chooses each time; there is no
second step function.  ``next_dt`` chooses it from the compliant contacts' normal problems
(``contact.compliant_stage.normal_problems``: effective mass, constant force, gap, gap rate)
predicted over dt_max:

* **free flight**: dt_max, unless a compliant contact's gap reaches zero within it;
* **touchdown** (Fig. 2a, continuous collision detection): the time the gap reaches zero under
  the motion before contact (gap d + u t + a t^2 / 2, a = the free normal acceleration, the
  smaller root where the gap is closing) -- the step is cut to land there, so the contact
  starts at delta = 0 with the touchdown rate;
* **in contact** (Fig. 2b): the step ends at the law's analytic separation time (the closed
  form's root, ``contact.compliant``), or earlier at the deepest point when ``split`` (so a
  run samples the maximum penetration), never later than dt_max.

The gaps are found by a probe detection of the compliant pairs alone with an unbounded band
(the step's own speculative reach, band + |v| dt, does not cover the fall a^2 t / 2 of a long
step from rest).

What the seed leaves vague, and what is done here:
* a **robot link** in contact: the effective mass is T / w with w the normal diagonal of
  G A^-1 G^T where A holds the arm folded into the link's block (``System.fold``), i.e. the
  arm's operational-space inertia along the normal (Algorithm 1's I_eff); the policy predicts
  with it as the step does;
* **several contacts**: the events of every compliant contact are predicted one by one
  (others' forces not counted) and the step ends at the earliest; in the step they are
  coupled by Gauss-Seidel passes (``compliant_stage``);
* **friction** does not set the step: the normal force is held while the tangential force is
  solved (``compliant_stage``); the tangential motion is PMI's.
"""
from __future__ import annotations

import math
from dataclasses import replace

from sim_core import step as step_mod
from sim_core.contact import compliant, compliant_stage, materials
from sim_core.systems import rigid

DT_MIN = 1e-12             # s: an event closer than this is "now" (rounding of a landed touchdown)
PROBE_BAND = 1e6           # m: the probe detection's band (every compliant pair's gap is found)


def probe_model(model):
    """The model with only its compliant pairs, their band unbounded (cached on the model)."""
    got = model.__dict__.get("_probe_cache")
    if got is None:
        keep = materials.compliant_pairs(model)
        pairs = tuple(replace(p, material=replace(materials.material_of(model.contact, p), band=PROBE_BAND))
                      for p, k in zip(model.pairs, keep) if k)
        got = replace(model, pairs=pairs)
        object.__setattr__(model, "_probe_cache", got)
    return got


def next_touchdown(d: float, u: float, a: float) -> float:
    """s > DT_MIN: the first time the gap d + u t + a t^2 / 2 reaches 0 while closing (inf: never)."""
    if a == 0.0:
        return d / -u if u < 0.0 and d / -u > DT_MIN else math.inf
    disc = u * u - 2.0 * a * d
    if disc < 0.0:
        return math.inf
    sq = math.sqrt(disc)
    best = math.inf
    for t in ((-u - sq) / a, (-u + sq) / a):
        if DT_MIN < t < best and u + a * t < 0.0:
            best = t
    return best


def events(K, e, law, m, F, d, u, dt_max: float, split: bool) -> float:
    """s: how long the next step may be for one compliant contact's normal problem."""
    a = -F / m
    _, _, _, tc, end = compliant_stage.motion(K, e, law, m, F, d, u, dt_max)
    if tc <= DT_MIN and end > DT_MIN:                    # in contact now (or touching down now)
        out = end
        if split and law in (compliant.KELVIN_VOIGT, compliant.KELVIN_VOIGT_CLAMPED):
            v0 = -(u + a * tc)
            kv = compliant.kelvin_voigt(m, K, e, F, max(-d, 0.0), v0, law == compliant.KELVIN_VOIGT_CLAMPED)
            t_max = tc + kv.max_penetration()[0]
            if t_max > 1e-9 * end + DT_MIN:
                out = min(out, t_max)
        return min(out, dt_max)
    return min(next_touchdown(d, u, a), dt_max)


def next_dt(model, state, inp, dt_max: float, split: bool = True) -> float:
    """Algorithm 1's step size at `state` (module docstring)."""
    probe = probe_model(model)
    if not probe.pairs:
        return dt_max
    found = step_mod.collide(probe, state, dt_max)
    c = found.contacts
    if len(c) == 0:
        return dt_max
    blk = rigid.blocks(model, state, inp, dt_max)
    preps = [s.prepare(model, state, sub, inp, dt_max, blk) for s, sub in zip(model.systems, state.systems)]
    for s, sub, prep in zip(model.systems, state.systems, preps):
        s.fold(model, state, sub, inp, dt_max, prep, blk)
    dt = dt_max
    for prob in compliant_stage.normal_problems(probe, state, c, blk, dt_max):
        dt = min(dt, events(*prob, dt_max, split))
    return max(dt, DT_MIN)


def run(model, state, inputs_at, duration: float, dt_max: float, split: bool = True, on_step=None):
    """Step from `state` for `duration` s with the policy's dt; `inputs_at(t)` the inputs.
    Returns the final state; `on_step(prev, inp, state, info)` after each step."""
    if not dt_max > 0.0 or not math.isfinite(dt_max):
        raise ValueError(f"variable_step.run: dt_max must be > 0 s, got {dt_max!r}")
    end = state.t + duration
    while state.t < end - DT_MIN:
        inp = inputs_at(state.t)
        dt = min(next_dt(model, state, inp, dt_max, split), end - state.t)
        prev = state
        state, info = step_mod.step(model, state, inp, dt)
        if on_step is not None:
            on_step(prev, inp, state, info)
    return state



