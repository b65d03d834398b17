"""tightsim: real-time haptic simulation of tight-tolerance robotic assembly.

    tightsim run SCENARIO [--headless] [--duration S] [--log PATH] [--summary-json PATH]
    tightsim run SCENARIO --device SPEC [--duration S] [--log PATH]
    tightsim assets build [--out DIR] [--triangles N]
    tightsim replay LOG [--verify] [--tolerance X]
    tightsim log info LOG

SCENARIO is a name from config/ (the scenarios listed by ``tightsim run --help``) or a path to
a TOML file.  Errors in inputs (config, meshes, weights, logs) end the command with one line on
stderr and exit code 2.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from pathlib import Path

from app.events import setup_main

logger = setup_main()


def _fmt_summary(s: dict) -> str:
    from sim_core.scenarios.scenario import task_line
    mm, um = 1e3, 1e6
    first = (f" ({s['compile_s']:.1f} s of it in {s['compile_steps']} steps that compiled kernels: first run, "
             "left out of the step time)" if s.get("compile_steps") else "")
    lines = [
        f"scenario            {s['scenario']} ({s['task']})",
        f"steps               {s['steps']} x {s['dt'] * 1e3:g} ms = {s['simulated_s']:.2f} s simulated",
        f"wall time           {s['wall_s']:.2f} s{first}",
        f"step time           mean {s['step_ms_mean']:.2f} ms, median {s['step_ms_median']:.2f} ms,"
        f" p99 {s['step_ms_p99']:.2f} ms",
        f"real-time factor    {s['real_time_factor']:.2f} (simulated time / summed step time)",
        f"penetration         max {s['max_penetration_m'] * um:.1f} um, mean {s['mean_penetration_m'] * um:.1f} um",
        "final pose          p = [{}] mm, q(wxyz) = [{}]".format(
            ", ".join(f"{x * mm:.3f}" for x in s["final_position_m"]),
            ", ".join(f"{x:.5f}" for x in s["final_quaternion_wxyz"])),
        f"axial advance       {s['axial_advance_m'] * mm:.3f} mm (along -z, into the static part)",
        f"rotation about axis {s['rotation_about_axis_rad']:.3f} rad ({s['rotation_about_axis_rev']:.3f} rev)",
        f"max contact force   {s['max_contact_force_N']:.2f} N",
    ]
    if "learned_fallback_steps" in s:
        net = ("handed to k-means" if s["clustering"] == "learned" else "reinforced by their deepest nodes")
        lines.append(f"clustering          {s['clustering']}; {s['learned_fallback_steps']} of {s['clustered_steps']} "
                     f"clustered steps {net} (deeper than contact.fallback_depth)")
    elif s["clustering"] == "none":
        lines.append("clustering          none: every detected node is its own contact")
    else:
        lines.append(f"clustering          {s['clustering']}")
    if "max_penetration_exact_sdf_m" in s:
        lines.insert(6, f"  by the exact SDF  max {s['max_penetration_exact_sdf_m'] * um:.1f} um "
                        "(the line above is the neural detector's own depth)")
    lines.append(task_line(s))
    return "\n".join(lines)


def _has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def cmd_session(a) -> int:
    """A real-time session: haptic loop (1 kHz), physics loop (100 Hz), log; the OpenGL view
    when there is a display."""
    import time as _time

    from app.session import run_session, summary_lines
    log = a.log or str(_log_folder() / f"tightsim-{Path(a.scenario).stem}-{_time.strftime('%Y%m%d-%H%M%S')}.mcap")
    on_frame = None
    if not a.headless and _has_display():
        from app.view.session import make_renderer
        on_frame = make_renderer(a.scenario)
    elif not a.headless:
        logger.warning("no display: session runs headless")
    # with a window the session lasts until it is closed (or --duration)
    duration = a.duration if a.duration is not None else (1e9 if on_frame else 60.0)
    from sim_core.io.progress import CompileWatch
    with CompileWatch(stream=sys.stderr):       # a first run says that it compiles (the loops too)
        res = run_session(a.scenario, a.device, duration, log_path=log, on_frame=on_frame)
    print("\n".join(summary_lines(res)))
    print(f"log                 {log}")
    return 0 if res.fault is None else 3


def _log_folder() -> Path:
    """Where sessions write their logs by default (about 19 MB a minute): the user's data
    folder ($XDG_DATA_HOME, else ~/.local/share) / tightsim / logs, not the current folder."""
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    folder = base / "tightsim" / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _log_path_problem(path: str | None) -> str:
    if path and Path(path).is_dir():
        return f"--log {path}: is a folder; give the log file's path"
    if path and not Path(path).resolve().parent.is_dir():
        return f"--log {path}: its folder does not exist"
    return ""


def _shipped(out: Path, default: Path, a) -> str:
    """Training writes into the shipped assets only when asked (--replace-shipped)."""
    if out.resolve() == default.resolve() and not getattr(a, "replace_shipped", False):
        return (f"would overwrite the shipped weights in {default}: give --out DIR, or "
                "--replace-shipped to replace them")
    return ""


def _config_of(name: str) -> tuple[str, dict | None]:
    """(path, validated config) of a scenario name or path; (path, None) if there is no file (the
    loader says so in its own line later)."""
    from sim_core import config as config_mod
    from sim_core.paths import scenario_path
    path = str(scenario_path(name))
    return path, (config_mod.load(path) if Path(path).exists() else None)


def _batch_log(path: str | None, cfg: dict, model, state):
    """A headless run's MCAP log (None without --log): its config, its session line, the start."""
    if not path:
        return None
    from sim_core.io.log import LogWriter
    log = LogWriter(path)
    log.put("/config", 0.0, cfg)
    log.put("/session", 0.0, {"device": "scripted:waypoints", "sched_fifo": False, "headless": True,
                              "physics": "step"})
    log.part_state(state, model.hand_body)
    return log


def cmd_snap(a, path: str, cfg: dict) -> int:
    """``run`` for the snap fit (seed 003), headless: the core's step with the prongs as its
    system (``snap_run.simulate``), the snap's own summary (the click, the insertion force, the
    floor), the task line, the plot; with --log, the log a replay re-runs.  With a device or a
    window it is a session like every task's (``cmd_session``)."""
    from sim_core.scenarios import scenario, snap_fit, snap_run
    if a.device or (not a.headless and _has_display()):
        a.device = a.device or "keyboard"
        return cmd_session(a)
    model, state = snap_fit.world(cfg, path)
    log = _batch_log(a.log, cfg, model, state)

    def on_step(prev, inp, after, info):
        if log:
            log.physics_step(prev, inp, after, info, model.hand_body)
    try:
        res, tr, wall = snap_run.simulate(cfg, path, a.duration, on_step=on_step, built=(model, state))
    finally:
        if log:
            log.close_in_process()
    s = snap_fit.summarize(snap_fit.socket_of(res.model).snap, tr, wall)
    fig = scenario.task_figures(res)
    print("\n".join(snap_fit.summary_lines(s) + [scenario.task_line(fig)]))
    if a.plot:
        snap_fit.plot_png(tr, a.plot)
    if a.summary_json:
        Path(a.summary_json).write_text(json.dumps({**s, **fig}, indent=2) + "\n")
    return 0


def cmd_run(a) -> int:
    bad = _log_path_problem(a.log)
    if bad:
        logger.error(bad)
        return 2
    path, cfg = _config_of(a.scenario)
    if cfg is not None and cfg["scenario"]["task"] == "snap_fit":
        return cmd_snap(a, path, cfg)
    if getattr(a, "plot", None):
        logger.error("--plot: only the snap_fit scenario draws one")
        return 2
    if a.device or (not a.headless and _has_display()):
        a.device = a.device or "keyboard"          # a window: the keyboard/mouse fallback
        return cmd_session(a)
    from sim_core.io.progress import CompileWatch
    from sim_core.scenarios import scenario
    with CompileWatch(stream=sys.stderr) as compiling:    # a first run says so, stage by stage
        model, state, cfg = scenario.load(a.scenario)
        compiling.report("loading the scenario")
        if not a.headless:
            logger.warning("running headless (no display)")
        duration = a.duration if a.duration is not None else cfg["scenario"]["duration"]
        log = _batch_log(a.log, cfg, model, state)

        def on_step(prev, inp, after, info):
            if log:
                log.physics_step(prev, inp, after, info, model.hand_body)
            if compiling.kernels:
                compiling.report(f"step {round(after.t / model.dt)} (t = {after.t:.2f} s, "
                                 f"{info.n_contacts} contact nodes)")
        start = state
        try:
            res = scenario.simulate(model, scenario.record(cfg), state, duration, on_step=on_step)
        finally:
            if log:
                log.close_in_process()
        if compiling.kernels:
            compiling.say(f"compiled {compiling.kernels} kernels in {compiling.seconds:.1f} s; "
                          "later runs load them from the cache")
    summary = scenario.summarize(res, start)
    print(_fmt_summary(summary))
    if a.summary_json:
        Path(a.summary_json).write_text(json.dumps(summary, indent=2) + "\n")
    return 0


def cmd_assets_build(a) -> int:
    from sim_core.geometry.assets import build_assets
    from sim_core.paths import assets_dir
    out = Path(a.out) if a.out else assets_dir()
    if out.exists() and not out.is_dir():
        logger.error(f"--out {out}: is a file; give a folder")
        return 2
    manifest = build_assets(out, target_triangles=a.triangles)
    for name, e in manifest["parts"].items():
        print(f"{name:22s} {e['triangles']:7d} triangles  {e['file']}")
    from sim_core.scenarios.snap_fit import write_prong_meshes
    prongs = write_prong_meshes(out / "fem")            # the snap fits' FEM meshes (docs/snap.md)
    print(f"wrote {len(manifest['parts'])} parts and parts/manifest.json, {len(prongs)} prong meshes in fem/ "
          f"under {out}")
    return 0


def _training_has(module: str, what: str) -> bool:
    """Whether the training extra's `module` imports; if not, say so in one line."""
    import importlib.util
    if importlib.util.find_spec(module) is not None:
        return True
    logger.error(f"train {what} needs {module}: pip install -e \".[train]\"")
    return False


def cmd_train_sdf(a) -> int:
    import time

    from sim_core.geometry.sdf import exact_sdf
    from sim_core.learning import train_sdf
    from sim_core.paths import assets_dir
    if not _training_has("torch", "sdf"):
        return 2
    parts = train_sdf.known_parts()
    names = sorted(train_sdf.sdf_parts(parts)) if a.part == "all" else [a.part]
    out = Path(a.out) if a.out else assets_dir() / "sdf"
    if bad := _shipped(out, assets_dir() / "sdf", a):
        logger.error(bad)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    settings = train_sdf.TrainSettings(steps=a.steps, batch=a.batch, seed=a.seed, threads=a.threads,
                                       normal_weight=a.normal_weight, pool=a.pool)
    for name in names:
        t0 = time.perf_counter()
        net = train_sdf.train(name, settings, progress=not a.quiet, parts=parts)
        seconds = time.perf_counter() - t0
        net.save(out / f"{name}.npz")
        acc = train_sdf.accuracy(net, exact_sdf(parts[name]), n=a.eval_points)
        rec = train_sdf.write_report(name, net, acc, out, settings, seconds)
        print(f"{name:16s} RMS {rec['rms_um']:6.2f} um  max {rec['max_um']:7.2f} um  normal p99 "
              f"{rec['normal_p99_deg']:5.2f} deg  ({'meets' if rec['met'] else 'misses'} "
              f"{rec['targets']['rms_um']:g}/{rec['targets']['max_um']:g} um, "
              f"{rec['targets']['normal_p99_deg']:g} deg)  -> {out / (name + '.npz')}")
    return 0


def cmd_train_cspace(a) -> int:
    from sim_core.learning import train_cspace
    from sim_core.paths import assets_dir
    if not _training_has("torch", "cspace"):
        return 2
    tasks = ["peg_in_hole", "bolting"] if a.task == "all" else [a.task]
    out = Path(a.out) if a.out else assets_dir() / "cspace"
    if bad := _shipped(out, assets_dir() / "cspace", a):
        logger.error(bad)
        return 2
    settings = train_cspace.CSpaceSettings(samples=a.samples, steps=a.steps, seed=a.seed, threads=a.threads)
    for task in tasks:
        net, rep = train_cspace.train(task, settings, progress=not a.quiet)
        path = train_cspace.write(task, net, rep, out)
        print(f"{task:12s} held-out accuracy {100 * rep['accuracy_held_out']:.2f} % "
              f"({rep['held_out']} configurations), near the surface "
              f"{100 * rep['accuracy_near_surface']:.2f} % ({rep['near_surface_points']})  -> {path}")
    return 0


def cmd_data_reference(a) -> int:
    from sim_core.io.progress import Progress
    from sim_core.learning import reference_data
    if a.task == "table2":                   # seed 000 Table II: the bolting task on each perturbed pair
        jobs = [("bolting", pair, f"bolting_{pair[0][5:]}_reference.mcap") for pair in reference_data.table2_pairs()]
    else:
        jobs = [(t, None, f"{t}_reference.mcap") for t in (["peg_in_hole", "bolting"] if a.task == "all" else [a.task])]
    out = Path(a.out)
    with _ray_session(a):                   # one cluster for all the tasks (none without --ray)
        for task, pair, name in jobs:
            label = task if pair is None else f"{task} {pair[0]}"
            bar = None if a.quiet else Progress(a.steps, f"reference {label}")
            s = reference_data.generate(task, out / name, a.steps, seed=a.seed, progress=bar, parts=pair,
                                        workers=a.workers, ray=a.ray)
            if bar:
                bar(a.steps)
            print(f"{label:12s} {s['samples']} samples in {s['episodes']} episodes, {s['seconds']:.0f} s "
                  f"-> {s['file']}")
    return 0


def _ray_session(a):
    """The Ray cluster of --ray for the whole command (joined before any work, so that a
    wrong address costs nothing), or nothing."""
    import contextlib
    if not a.ray:
        return contextlib.nullcontext()
    from sim_core.learning import ray_cluster
    return ray_cluster.session(a.ray, a.workers)


def cmd_train_clustering(a) -> int:
    from sim_core.learning import train_clustering
    from sim_core.paths import assets_dir
    if not _training_has("cma", "clustering"):
        return 2
    data = Path(a.data) if a.data else Path("data") / f"{a.task}_reference.mcap"
    out = Path(a.out) if a.out else assets_dir() / "clustering" / a.task
    if bad := _shipped(out, assets_dir() / "clustering" / a.task, a):
        logger.error(bad)
        return 2
    s = train_clustering.ClusteringSettings(generations=a.generations, popsize=a.popsize, batch=a.batch,
                                            seed=a.seed, workers=a.workers, ray=a.ray,
                                            replay_dt=a.replay_dt, detector=a.detector,
                                            penetration=a.penetration, init=a.init, rollouts=a.rollouts,
                                            rollout_weight=a.rollout_weight, rollout_seconds=a.rollout_seconds)
    with _ray_session(a):
        rep = train_clustering.train(data, out, s, resume=a.resume, progress=not a.quiet)
    print(f"{a.task}: weights of generation {rep['best_generation']} of {rep['generations']} (population "
          f"{rep['popsize']}), delta {rep['delta_m'] * 1e6:g} um: validation loss {rep['validation_loss_N']:.3f} N "
          f"(start {rep['start_validation_loss_N']:.3f} N)"
          + (f", of which the replay {rep['validation_replay_loss_N']:.3f} N and the rollouts' excess depth "
             f"{rep['rollout_excess_m']['validation'] * 1e6:.0f} um" if rep.get("rollouts") else "")
          + f" -> {out.with_suffix('.npz')}")
    return 0


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("tightsim")
    except PackageNotFoundError:
        return "unknown (not installed)"


# --- option errors: one line naming the option (issue 23) -----------------------------------
# argparse prints its usage block (5-20 lines) before an error; here every parser (subparsers
# inherit the class) prints one line, "tightsim run: argument --duration: ...", exit code 2.
# Each numeric option's type names its range, so a bad value is refused before any work.

class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        sub = next((x for x in self._actions if isinstance(x, argparse._SubParsersAction)), None)
        if sub is not None:               # name the commands, not the parser's internal dest
            message = message.replace(f"argument {sub.dest}: invalid choice:", "unknown command")
            message = re.sub(rf"\b{sub.dest}\b", "a command (" + ", ".join(sub.choices) + ")", message)
        self.exit(2, f"{self.prog}: {' '.join(message.split())} (see {self.prog} --help)\n")


def _ranged(kind=int, lo=None, hi=None, *, above=None, also=()):
    """An argparse type: a `kind` (int or float, finite) >= lo (or > above) and <= hi, or one
    of the values `also` (a 0 meaning "the default")."""
    noun, fmt = ("a whole number", str) if kind is int else ("a number", "{:g}".format)
    cond = " and ".join(f"{op} {fmt(v)}" for op, v in ((">=", lo), (">", above), ("<=", hi)) if v is not None)
    want = f"{noun} {cond}".strip() + "".join(f" or {fmt(v)}" for v in also)

    def parse(text: str):
        try:
            x = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {noun}") from None
        if x in also:
            return x
        if not (math.isfinite(x) and (lo is None or x >= lo) and (above is None or x > above)
                and (hi is None or x <= hi)):
            raise argparse.ArgumentTypeError(f"{text!r}: {want} is required")
        return x
    parse.__name__ = kind.__name__
    return parse


def _one_of(names, what: str):
    """An argparse type: one of `names` (a callable giving them, evaluated when parsing)."""
    def parse(text: str) -> str:
        known = list(names() if callable(names) else names)
        if text not in known:
            raise argparse.ArgumentTypeError(f"unknown {what} {text!r} (known: {', '.join(known)})")
        return text
    parse.__name__ = what
    return parse


def _parts() -> list:
    """What ``train sdf --part`` takes: any part (the static ones and the plugs are what a
    scenario loads), or all."""
    from sim_core.learning import train_sdf
    return sorted(train_sdf.known_parts()) + ["all"]


def _device(text: str) -> str:
    """--device: a known driver, with its argument (opening it is the session's)."""
    from devices.base import spec_problem
    if text.startswith("keys:"):             # the keyboard driver playing a JSON event script
        from devices.keyboard import KeyScript
        try:
            KeyScript.load(text[len("keys:"):])
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text
    if bad := spec_problem(text):
        raise argparse.ArgumentTypeError(bad)
    return text


def _new_file(text: str) -> str:
    """An output file's path (--summary-json): not a folder, in a folder that exists -- known
    before the run, not after it."""
    if Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text}: is a folder; give the file's path")
    if not Path(text).resolve().parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: its folder does not exist")
    return text


TASKS = ("peg_in_hole", "bolting")              # the tasks with trained networks and reference data
_positive_int = _ranged(int, lo=1)
_count = _ranged(int, lo=0)                     # 0: the default (one per CPU, CMA-ES's, none)
_seed = _ranged(int, lo=0, hi=2 ** 32 - 1)      # what NumPy and torch accept as a seed
_weight = _ranged(float, lo=0.0)                # a loss weight: finite, >= 0


def _duration(text: str) -> float:
    """--duration: seconds in (0, an hour] (``config.MAX_DURATION``)."""
    from sim_core.config import MAX_DURATION
    return _ranged(float, above=0.0, hi=MAX_DURATION)(text)


_tolerance = _ranged(float, lo=0.0)             # --tolerance: a finite deviation >= 0 (m, m/s, rad)


# every numeric or named option's type, by command (set on the parsers by ``_typed``; a test
# checks that no option is left a bare int or float)
OPTION_TYPES = {
    "run": {"--duration": _duration, "--device": _device, "--summary-json": _new_file, "--plot": _new_file},
    "assets build": {"--triangles": _ranged(int, lo=100, hi=2_000_000)},   # ~100: a thread resolved at all
    "train sdf": {"--part": _one_of(_parts, "part"), "--steps": _positive_int, "--batch": _positive_int,
                  "--seed": _seed, "--threads": _positive_int, "--pool": _positive_int, "--normal-weight": _weight,
                  "--eval-points": _positive_int},
    "train cspace": {"--task": _one_of(TASKS + ("all",), "task"), "--samples": _positive_int,
                     "--steps": _positive_int, "--seed": _seed, "--threads": _positive_int},
    "train clustering": {"--task": _one_of(TASKS, "task"), "--generations": _positive_int,
                         "--popsize": _ranged(int, lo=2, also=(0,)), "--batch": _positive_int, "--seed": _seed,
                         "--workers": _count, "--replay-dt": _ranged(float, lo=1e-4, hi=0.1, also=(0.0,)),
                         "--penetration": _weight, "--rollouts": _count, "--rollout-weight": _weight,
                         "--rollout-seconds": _duration},
    "data reference": {"--task": _one_of(TASKS + ("all", "table2"), "task"), "--steps": _positive_int,
                       "--seed": _seed, "--workers": _count},
    "replay": {"--tolerance": _tolerance},
}


def _typed(p: argparse.ArgumentParser, command: str = "") -> None:
    """Set ``OPTION_TYPES`` on `p` and its subcommands' parsers."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                _typed(sub, f"{command} {name}".strip())
        for opt in action.option_strings:
            if opt in OPTION_TYPES.get(command, {}):
                action.type = OPTION_TYPES[command][opt]
# --- end of option errors ------------------------------------------------------------------


def cmd_replay(a) -> int:
    from app.replay import replay
    from sim_core.io.log import describe_losses, losses, read_log
    log = read_log(a.log)
    n, ep, ev = replay(log, verify=a.verify)      # lost physics steps: "incomplete log", exit 2
    print(f"replayed {n} physics steps from {a.log}"
          + (" (log was cut; replayed up to the cut)" if log.truncated else ""))
    gaps = losses(log)[0]
    if gaps:                                      # haptic ticks only: the physics is all there
        print(f"incomplete log: {describe_losses(gaps)}; every physics step is there")
    if a.verify:
        ok = ep <= a.tolerance and ev <= a.tolerance
        print(f"max deviation from the logged trajectory: pose {ep:.3e}, twist {ev:.3e} -> "
              + ("MATCH" if ok else "MISMATCH") + (" (bitwise)" if ep == 0 and ev == 0 else ""))
        return 0 if ok else 1
    return 0


def cmd_log_info(a) -> int:
    """Exit 0 for a complete log (or one with no account of its own and no gaps found),
    1 for one with records lost, cut or damaged; 2 for a file that is not a log."""
    from sim_core.io.log import info, read_log, verdict
    log = read_log(a.log)
    print(info(log))
    return 1 if verdict(log)[0] is False else 0


RAY_HELP = ("{what} on a Ray cluster instead of local processes (pip install -e \".[scale]\"): 'auto' "
            "joins the running cluster or starts a local one for the command; or HOST:PORT, ray://HOST:PORT. "
            "Same seed, same result")


def _scenario_names() -> list[str]:
    """The scenarios shipped in config/ (what ``run --help`` lists)."""
    from sim_core.paths import config_dir
    try:
        return sorted(f.stem for f in config_dir().glob("*.toml"))
    except OSError:
        return []


def parser() -> argparse.ArgumentParser:
    p = _OneLineParser(prog="tightsim", description=__doc__.split("\n\n")[0])
    p.add_argument("--version", action="version", version=f"tightsim {_version()}")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a scenario (headless when there is no display)")
    r.add_argument("scenario", help=f"scenario name in config/ ({', '.join(_scenario_names())}) or a TOML path")
    r.add_argument("--headless", action="store_true", help="no window; print a summary")
    r.add_argument("--duration", type=_duration, metavar="S",
                   help="simulated seconds, at most an hour (default: the config's)")
    r.add_argument("--log", metavar="PATH", help="write an MCAP log of every step")
    r.add_argument("--summary-json", metavar="PATH", help="write the summary figures as JSON")
    r.add_argument("--plot", metavar="PATH", help="snap_fit: write the insertion force over travel and the "
                   "floor's reaction as a PNG")
    r.add_argument("--device", metavar="SPEC", help="run a real-time haptic session with this device: "
                   "keyboard, scripted:NAME, replay:LOG, serial:PORT, spacemouse (default: keyboard "
                   "in a window when there is a display; with --headless or no display, the "
                   "batch run of the scenario's waypoints)")
    r.set_defaults(fn=cmd_run)
    a = sub.add_parser("assets", help="generated data (part meshes)")
    asub = a.add_subparsers(dest="assets_cmd", required=True)
    b = asub.add_parser("build", help="generate part meshes and the manifest (deterministic)")
    b.add_argument("--out", metavar="DIR", help="output folder (default: the checkout's assets/)")
    b.add_argument("--triangles", type=int, default=5000, metavar="N",
                   help="target triangles per part (default 5000)")
    b.set_defaults(fn=cmd_assets_build)
    t = sub.add_parser("train", help="offline training (needs torch)")
    tsub = t.add_subparsers(dest="train_cmd", required=True)
    ts = tsub.add_parser("sdf", help="train a static part's neural SDF from its exact geometry")
    ts.add_argument("--part", required=True, help="static part or plug (hole, bolt_M48x5, plug_snap_fit, ...) or 'all'")
    ts.add_argument("--steps", type=_positive_int, default=12000, help="optimiser steps (default 12000)")
    ts.add_argument("--replace-shipped", action="store_true", help="write over the shipped assets/sdf weights")
    ts.add_argument("--batch", type=int, default=8192, help="fresh points per step (default 8192)")
    ts.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ts.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ts.add_argument("--pool", type=int, default=2_000_000, help="labelled points to draw batches from")
    ts.add_argument("--normal-weight", type=float, default=0.0,
                    help="weight of the normal-angle loss (default 0: distance only)")
    ts.add_argument("--eval-points", type=int, default=100_000, help="fresh band points for the report")
    ts.add_argument("--out", metavar="DIR", help="output folder (default: the checkout's assets/sdf)")
    ts.add_argument("--quiet", action="store_true", help="no progress bar")
    ts.set_defaults(fn=cmd_train_sdf)
    tc = tsub.add_parser("cspace", help="train a task's C-space collision surface h(q) from the exact detector")
    tc.add_argument("--task", required=True, help="task scenario (peg_in_hole, bolting) or 'all'")
    tc.add_argument("--samples", type=int, default=60_000, help="labelled configurations (default 60000)")
    tc.add_argument("--steps", type=_positive_int, default=6000, help="optimiser steps (default 6000)")
    tc.add_argument("--replace-shipped", action="store_true", help="write over the shipped assets/cspace weights")
    tc.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    tc.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    tc.add_argument("--out", metavar="DIR", help="output folder (default: the checkout's assets/cspace)")
    tc.add_argument("--quiet", action="store_true", help="no progress bar")
    tc.set_defaults(fn=cmd_train_cspace)
    tl = tsub.add_parser("clustering", help="train the interaction-network clustering by CMA-ES on wrench data")
    tl.add_argument("--task", required=True, help="peg_in_hole or bolting")
    tl.add_argument("--data", metavar="FILE", help="wrench-data file (default: data/TASK_reference.mcap)")
    tl.add_argument("--generations", type=int, default=200)
    tl.add_argument("--popsize", type=int, default=0, help="CMA-ES population (default: 4 + 3 ln n)")
    tl.add_argument("--batch", type=int, default=256, help="samples per loss evaluation")
    tl.add_argument("--seed", type=int, default=0)
    tl.add_argument("--workers", type=int, default=0, help="local processes (default: one per CPU)")
    tl.add_argument("--ray", metavar="ADDRESS", help=RAY_HELP.format(what="evaluate the population"))
    tl.add_argument("--resume", action="store_true", help="continue from OUT.cmaes")
    tl.add_argument("--replay-dt", type=float, default=0.0, metavar="S",
                    help="step of the replay (default: the scenario's, 0.01 s, against 1 ms data)")
    tl.add_argument("--detector", choices=("exact", "neural"), help="detection in the replay (default: the scenario's)")
    tl.add_argument("--penetration", type=float, default=0.0, metavar="N_PER_M",
                    help="loss weight on how much deeper a replayed step leaves a detected node (default 0)")
    tl.add_argument("--init", metavar="FILE", help="start from these clustering weights (default: the sector start)")
    tl.add_argument("--rollouts", type=int, default=0, metavar="N",
                    help="add N closed-loop runs of the scenario from perturbed starts to each loss (default 0)")
    tl.add_argument("--rollout-weight", type=float, default=1e4, metavar="N_PER_M",
                    help="loss per metre a rollout's deepest node goes past 0.1 mm (default 1e4)")
    tl.add_argument("--rollout-seconds", type=float, default=2.5, metavar="S",
                    help="length of each rollout (default 2.5)")
    tl.add_argument("--out", metavar="STEM", help="output stem (default: assets/clustering/TASK)")
    tl.add_argument("--replace-shipped", action="store_true", help="write over the shipped clustering weights")
    tl.add_argument("--quiet", action="store_true", help="no progress bar")
    tl.set_defaults(fn=cmd_train_clustering)
    dp = sub.add_parser("data", help="training data for the contact clustering")
    dsub = dp.add_subparsers(dest="data_cmd", required=True)
    dr = dsub.add_parser("reference", help="wrench data from high-fidelity simulation (every node, exact "
                         "SDF, T = 1 ms), seeded human-like motions")
    dr.add_argument("--task", required=True,
                    help="peg_in_hole, bolting, 'all' (both), or 'table2' (bolting on the ten Table II pairs)")
    dr.add_argument("--steps", type=_positive_int, default=100_000, help="samples per task (default 100000)")
    dr.add_argument("--seed", type=int, default=0)
    dr.add_argument("--out", default="data", metavar="DIR", help="output folder (default: data/)")
    dr.add_argument("--workers", type=int, default=0,
                    help="local processes running the episodes (default: one per CPU; 1: this process)")
    dr.add_argument("--ray", metavar="ADDRESS", help=RAY_HELP.format(what="run the episodes"))
    dr.add_argument("--quiet", action="store_true", help="no progress bar")
    dr.set_defaults(fn=cmd_data_reference)
    rp = sub.add_parser("replay", help="re-run the physics from a log's inputs")
    rp.add_argument("log", help="MCAP log written by tightsim run --log")
    rp.add_argument("--verify", action="store_true", help="compare with the logged trajectory (exit 1 on mismatch)")
    rp.add_argument("--tolerance", type=_tolerance, default=0.0, metavar="X",
                    help="allowed max deviation (default 0: bitwise)")
    rp.set_defaults(fn=cmd_replay)
    lg = sub.add_parser("log", help="inspect logs")
    lsub = lg.add_subparsers(dest="log_cmd", required=True)
    li = lsub.add_parser("info", help="summarise a log (works on logs cut mid-way)")
    li.add_argument("log", help="MCAP log")
    li.set_defaults(fn=cmd_log_info)
    _typed(p)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "duration", None) is not None and args.duration <= 0:
        logger.error("--duration: must be > 0")
        return 2
    try:
        return args.fn(args)
    except (ValueError, FileNotFoundError) as e:   # ConfigError and mesh errors are ValueErrors
        if os.environ.get("TIGHTSIM_DEBUG"):
            raise
        logger.error(f"{e}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
