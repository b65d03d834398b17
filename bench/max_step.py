"""Seed 001 Table 1 measured here: the largest stable step of the bouncing ball at restitution 1,
for tightsim's compliant and complementarity laws and for MuJoCo, PyBullet and Drake, in one run.

    python bench/max_step.py --out DIR [--engines NAME ...] [--steps-ms 0.015625 ... 256]
                             [--duration 3.2]

Every engine drops the seed's ball (m = 1 kg, R = 0.1 m, I = 0.1 kg m^2, centre from 1.0 m, g =
9.81, rigid ground, restitution 1) for --duration s at each step of the sweep 1/64, 1/32, ...,
1, 2, ..., 256 ms and judges the trajectory by ONE predicate, `stability`:

  stable  <=>  the state stays finite, the ball never passes through the ground (its centre
               never at or below the plane: penetration < R), and the first BOUNCES (3) apexes
               each reach the exact apex within APEX_TOL (5 %) of the drop height.

Heights are those of the ball's lowest point above the ground (z - R), so the exact apex at
restitution 1 is the drop height h0 = z0 - R = 0.9 m, and 5 % of it is 5 % of the energy the
contact takes in and must give back (m g h0).  A bounce is a run of steps with vz > 0; its apex
is the largest z - R + vz^2 / (2 g) over that run's samples in flight (z > R), the ballistic apex
of each sampled state, so a step of 256 ms -- far coarser than the 0.86 s flight -- is judged by
its energy, not by where its samples happen to fall (the sampled maximum alone would read up to
g dt^2 / 8 = 8 cm low at 256 ms).  A run of vz > 0 with no sample in flight is a bounce whose
apex is its largest z - R.  Why not a penetration limit of, say, 1 cm: an engine with a fixed
step and no continuous collision detection samples the approach v dt apart (4.2 m/s x dt), so
its first sample in contact can be up to 6.7 cm deep at 16 ms without anything unstable --
the seed's MuJoCo 16 ms and PhysX 2 ms would be impossible under it.  The table prints each
engine's deepest penetration at its largest stable step instead (the exact one at
K = 140e6 N/m is 0.36 mm).  The largest stable step is the largest step of
the sweep at which the ball and every smaller step of the sweep are stable; steps that pass
above a failure are listed in the grid too.  Table 1 of the seed gives Bullet 1/32, ODE 1/4,
PhysX 2, MuJoCo 16 and its engine 128 (ms).

Writes DIR/table.md (the summary beside the seed's values, then the grid of every step) and
prints it.  A peer that is not installed gets a row saying so.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):                     # run as a script: the checkout on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.peers import GRAVITY, RADIUS, Z0  # noqa: E402

BOUNCES = 3            # apexes judged: enough to catch a per-bounce gain or loss compounding
APEX_TOL = 0.05        # relative to the drop height h0: 5 % of the impact energy (issue 25)
PASS_THROUGH = RADIUS  # m of penetration: the centre reaches the plane (see the docstring)
STEPS_MS = tuple(2.0 ** k for k in range(-6, 9))   # 1/64 ... 256 ms
DURATION = 3.2         # s: the third apex of the exact motion is at 2.57 s
SEED_MS = {"Bullet": "1/32", "ODE": "1/4", "PhysX": "2", "MuJoCo": "16", "Proposed": "128",
           "Drake": "not in the seed"}


def stability(t, z, vz, *, z0: float = Z0, radius: float = RADIUS, g: float = GRAVITY,
              bounces: int = BOUNCES) -> tuple[bool, str, list]:
    """(stable, reason, apexes) of a drop: `t` (s), `z` (m, centre height) and `vz` (m/s) per
    step end, initial state first.  apexes: the heights (m, lowest point above the ground) of
    the bounces seen, at most `bounces`; reason: "" when stable, else the first failure."""
    t, z, vz = (np.asarray(a, float) for a in (t, z, vz))
    finite = np.isfinite(z) & np.isfinite(vz)
    if not finite.all():
        bad = int(np.argmin(finite))
        return False, f"diverged at t = {t[bad]:.3g} s", []
    h0 = z0 - radius
    gap = z - radius                                  # m, lowest point above the ground
    lowest = float(gap.min())
    if lowest <= -PASS_THROUGH:
        return False, f"passes through the ground ({-lowest * 100:.3g} cm below)", []
    rising = vz > 0.0
    edges = np.flatnonzero(np.diff(np.r_[False, rising, False].astype(np.int8)))
    apexes = []
    for a, b in zip(edges[::2], edges[1::2]):         # samples a..b-1 rise
        seg = slice(a, b)
        flying = gap[seg] > 0.0
        if flying.any():
            apex = float(np.max((gap[seg] + vz[seg] ** 2 / (2.0 * g))[flying]))
        else:
            apex = float(gap[seg].max())
        apexes.append(apex)
        if abs(apex - h0) > APEX_TOL * h0:
            return False, f"apex {len(apexes)} = {apex:.3g} m (exact {h0:.3g} m)", apexes
        if len(apexes) == bounces:
            return True, "", apexes
    return False, f"{len(apexes)} of {bounces} bounces in {t[-1]:.3g} s", apexes


# ---- engines -----------------------------------------------------------------------------

def _tightsim(law: str):
    def run(dt: float, duration: float) -> dict:
        from sim_core.scenarios.bouncing_ball import drop
        # variable steps (Algorithm 1) for the compliant law; today's rigid law at the fixed step
        return drop(1.0, dt_max=dt, law=law, duration=duration, variable=(law == "compliant"))
    return run


def _mujoco(stiff: bool):
    def run(dt: float, duration: float) -> dict:
        from bench.peers.ball_mujoco import drop
        return drop(dt, duration, stiff=stiff)
    return run


def _drake(approximation: str):
    def run(dt: float, duration: float) -> dict:
        from bench.peers.ball_drake import drop
        return drop(dt, duration, approximation=approximation)
    return run


def _pybullet(contact: str):
    def run(dt: float, duration: float) -> dict:
        from bench.peers.ball_pybullet import drop
        return drop(dt, duration, contact=contact)
    return run


# name: (module that must import, runner, setup, the seed's Table 1 row it compares with)
ENGINES = {
    "tightsim-compliant": ("sim_core.scenarios.bouncing_ball", _tightsim("compliant"),
                           "Kelvin-Voigt K = 140e6 N/m, e = 1, analytic in-contact step, "
                           "variable step up to dt", "Proposed"),
    "tightsim-complementarity": ("sim_core.scenarios.bouncing_ball", _tightsim("complementarity"),
                                 "rigid, inelastic by construction, fixed step dt", "ODE"),
    "mujoco": ("mujoco", _mujoco(True),
               "solref (-140e6, 0): K = 140e6 N/m, no damping; solimp d = 0.9999", "MuJoCo"),
    "mujoco-default": ("mujoco", _mujoco(False),
                       "MuJoCo's default contact (solref 0.02 1): soft, critically damped",
                       "MuJoCo"),
    "pybullet": ("pybullet", _pybullet("restitution"),
                 "rigid contact, restitution 1 on ball and ground", "Bullet"),
    "pybullet-stiffness": ("pybullet", _pybullet("stiffness"),
                           "contactStiffness 140e6 N/m, contactDamping 0", "Bullet"),
    "drake": ("pydrake", _drake("lagged"),
              "discrete plant, point contact K = 140e6 N/m, Hunt-Crossley 0; "
              "lagged (default)", "Drake"),
    "drake-tamsi": ("pydrake", _drake("tamsi"),
                    "as drake, TAMSI approximation", "Drake"),
}
DEFAULT_ENGINES = tuple(ENGINES)


def installed(module: str) -> bool:
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:                       # a parent package is missing
        return False


def sweep(name: str, steps_ms=STEPS_MS, duration: float = DURATION) -> dict:
    """{"rows": [(step_ms, stable, reason, apexes, deepest penetration m)], "largest": step_ms or
    None} of one engine;
    {"missing": text} when its package is not installed."""
    module, run, _setup, _seed = ENGINES[name]
    if not installed(module):
        what = ("not installed (pip install -e .[peers])" if not module.startswith("sim_core")
                else f"not in this checkout ({module})")
        return {"missing": what}
    rows, largest, broken = [], None, False
    for ms in sorted(steps_ms):
        out = run(ms * 1e-3, duration)
        ok, reason, apexes = stability(out["t"], out["z"], out["vz"])
        deepest = float(np.nanmax(RADIUS - np.asarray(out["z"], float), initial=0.0))
        rows.append((ms, ok, reason, apexes, deepest))
        broken = broken or not ok
        if ok and not broken:
            largest = ms
        print(f"  {name:26s} {_ms(ms):>6s} ms  {'stable' if ok else reason}", flush=True)
    return {"rows": rows, "largest": largest}


def _cell(row) -> str:
    _ms_, ok, reason, apexes, _deepest = row
    if ok:
        return "s"
    if reason.startswith("apex"):
        return f"a{len(apexes)} {apexes[-1]:.3g}"
    if "bounces" in reason:
        return f"n{len(apexes)}"
    return "x"


def _ms(ms: float) -> str:
    return f"1/{round(1 / ms)}" if ms < 1 else f"{ms:g}"


def table(results: dict, steps_ms, command: str) -> str:
    today = datetime.date.today().isoformat()
    out = [f"# Largest stable step, seed 001 Table 1 measured here ({today})", "",
           f"`{command}`", "",
           f"Stable: finite, penetration below {PASS_THROUGH * 100:g} cm (the radius), and each of "
           f"the first {BOUNCES} apexes within {APEX_TOL:.0%} of the drop height (bench/max_step.py).", "",
           "| engine | setup | largest stable step (ms) | deepest penetration there (mm) "
           "| seed Table 1 (ms) | first failure |",
           "|---|---|---|---|---|---|"]
    for name, res in results.items():
        _module, _run, setup, seed = ENGINES[name]
        seed_txt = f"{SEED_MS[seed]} ({seed})"
        if "missing" in res:
            out.append(f"| {name} | {setup} | {res['missing']} | | {seed_txt} | |")
            continue
        fail = next(((ms, r) for ms, ok, r, _a, _p in res["rows"] if not ok), None)
        largest = "none" if res["largest"] is None else _ms(res["largest"])
        fail_txt = "" if fail is None else f"{_ms(fail[0])} ms: {fail[1]}"
        pen = next((f"{p * 1e3:.3g}" for ms, _ok, _r, _a, p in res["rows"] if ms == res["largest"]), "")
        out.append(f"| {name} | {setup} | {largest} | {pen} | {seed_txt} | {fail_txt} |")
    for seed in ("ODE", "PhysX"):
        out.append(f"| ({seed}) | not run here | | | {SEED_MS[seed]} ({seed}) | |")
    run_names = [n for n, r in results.items() if "missing" not in r]
    if run_names:
        out += ["", "Every step (s: stable; aK H: apex K, the first out of tolerance, at H m "
                "(exact 0.9); nK: only K bounces; x: diverged or through the ground):", "",
                "| step (ms) | " + " | ".join(run_names) + " |",
                "|---|" + "---|" * len(run_names)]
        for ms in sorted(steps_ms):
            cells = []
            for n in run_names:
                row = next(r for r in results[n]["rows"] if r[0] == ms)
                cells.append(_cell(row))
            out.append(f"| {_ms(ms)} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for table.md")
    ap.add_argument("--engines", nargs="+", default=list(DEFAULT_ENGINES), choices=list(ENGINES))
    ap.add_argument("--steps-ms", nargs="+", type=float, default=list(STEPS_MS))
    ap.add_argument("--duration", type=float, default=DURATION, help="s per drop")
    a = ap.parse_args(argv)
    if a.duration <= 0 or any(s <= 0 for s in a.steps_ms):
        ap.error("--duration and --steps-ms must be > 0")
    results = {}
    for name in a.engines:
        results[name] = sweep(name, a.steps_ms, a.duration)
    command = "python bench/max_step.py " + " ".join(sys.argv[1:] if argv is None else argv)
    text = table(results, a.steps_ms, command)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text(text)
    print("\n" + text)
    print(f"written: {out / 'table.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
