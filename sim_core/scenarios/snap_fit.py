"""Scenario ``snap_fit`` (issue 27, seed 003): the config's socket and plug, the plug's set point
along the waypoints, the run, its summary and the plot of the insertion force over depth with
the floor's reaction (the seed's Figs. 7-8).  Headless; ``tightsim run snap_fit`` dispatches here
(``app.cli``).  The physics is ``systems.fem.snap``.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from sim_core.config import ConfigError
from sim_core.geometry.connector import PlugSpec, ProngSpec
from sim_core.systems.fem import prong as prong_mod
from sim_core.systems.fem import snap
from sim_core.systems.fem.assembly import Material

CLICK_LET_GO = 0.5      # the click: the hooks' mean deflection falls by this share of its peak so far
CLICK_WITHIN = 5        # steps (5 ms): ... this fast (the prongs' first mode, ~1 kHz, takes a quarter period)


def click_step(a: dict) -> int:
    """The step the hooks let go (``CLICK_LET_GO`` of their peak deflection lost within
    ``CLICK_WITHIN`` steps), or -1.  The plug's own fall is no test: a soft socket lets it follow
    its set point, with no jump."""
    d = a["deflection"].mean(axis=1)
    peak = np.maximum.accumulate(d)
    for k in range(len(d) - CLICK_WITHIN):
        if peak[k] > 0.0 and d[k] >= 0.8 * peak[k] and d[k + CLICK_WITHIN] < (1.0 - CLICK_LET_GO) * peak[k]:
            return k
    return -1


def not_on_the_core(cfg: dict, src: str = "config", *_):
    """``tasks.TASKS``' build / figures for snap_fit: the snap steps on its own (its prongs are
    FEM, not the core's 6-wide body blocks: ``systems.base``), so the core's world and session
    refuse it in one line rather than half-run it."""
    raise ConfigError(f"{src}: scenario.task: snap_fit steps on its own (sim_core.systems.fem.snap), not on "
                      "the core's bodies: run it with `tightsim run snap_fit --headless`; its session is not "
                      "built yet (issue 27)")


def dims(cfg: dict, src: str = "config") -> tuple[dict, dict]:
    """(socket, plug) dimensions, m."""
    so, pl = cfg["socket"], cfg["plug"]
    return ({"prong_length": so["length"], "prong_width": so["width"], "prong_thickness": so["thickness"],
             "hook_depth": so["hook_depth"], "spacing": so["spacing"], "seat": so["seat"]},
            {"head_half": pl["head_half"], "head_height": pl["head_height"], "neck_half": pl["neck_half"]})


def build(cfg: dict, src: str = "config") -> snap.SnapModel:
    """The snap model of a validated config; bad combinations as one-line ``ConfigError``s."""
    so, pl = cfg["socket"], cfg["plug"]
    try:
        spec = ProngSpec(length=so["length"], width=so["width"], thickness=so["thickness"],
                         hook_depth=so["hook_depth"], hook_top=0.2 * so["hook_depth"],
                         lead_angle=so["lead_angle"], return_angle=so["return_angle"])
    except ValueError as e:
        raise ConfigError(f"{src}: socket.{e}") from None
    try:
        plug = PlugSpec(head_half=pl["head_half"], head_height=pl["head_height"], chamfer=pl["chamfer"],
                        neck_half=pl["neck_half"], top=4.0 * pl["head_height"])
    except ValueError as e:
        raise ConfigError(f"{src}: plug.{e}") from None
    if not pl["head_half"] > so["spacing"] - so["hook_depth"]:
        raise ConfigError(f"{src}: plug.head_half: {pl['head_half']:g} m does not reach the hooks "
                          f"(socket.spacing - socket.hook_depth = {so['spacing'] - so['hook_depth']:g} m): no snap")
    mat = Material(E=so["E"], nu=so["nu"], density=so["density"])
    orders = None if so["order_contact"] == 0 and so["order_foot"] == 0 else (so["order_contact"], so["order_foot"])
    try:
        pm = prong_mod.build(spec, mat, so["mesh"], orders=orders if orders is None else
                             tuple(o if o > 0 else None for o in orders))
    except ValueError as e:
        key = "socket.order_contact / socket.order_foot" if "order" in str(e) else "socket"
        raise ConfigError(f"{src}: {key}: {e}") from None
    d = cfg["drive"]
    adm = snap.Admittance(pl["mass"], tuple(d["damping_linear"]), tuple(d["stiffness_linear"]))
    return snap.build(pm, plug, spacing=so["spacing"], seat_z=so["seat"], admittance=adm,
                      mu=cfg["contact"]["friction"], T=cfg["scenario"]["dt"])


def set_point(cfg: dict, t: float) -> np.ndarray:
    """The plug's set position at time t: the waypoints, linearly, held after the last."""
    ts = np.array([w["t"] for w in cfg["waypoints"]])
    ps = np.array([w["position"] for w in cfg["waypoints"]])
    return np.array([np.interp(t, ts, ps[:, i]) for i in range(3)])


def simulate(model: snap.SnapModel, cfg: dict, duration: float | None = None, on_step=None):
    """Run the config's insertion: (final state, ``snap.Trace``, wall seconds)."""
    duration = cfg["scenario"]["duration"] if duration is None else duration
    wall = time.perf_counter()
    state, tr = snap.run(model, cfg["start"]["position"], lambda t: set_point(cfg, t), duration, on_step)
    return state, tr, time.perf_counter() - wall


def summarize(model: snap.SnapModel, tr: snap.Trace, wall: float) -> dict:
    a = tr.arrays()
    k = click_step(a)
    Fz = a["plug_force"][:, 2]
    peak = int(np.argmax(Fz[:k])) if k > 0 else int(np.argmax(Fz))
    seated = abs(a["z"][-1] - model.seat_z) <= snap.SEAT_TOUCH     # the seat's plastic stop leaves it that close
    return {
        "steps": len(a["t"]),
        "clicked": bool(k > 0),
        "click_time_s": float(a["t"][k]) if k > 0 else None,
        "peak_insertion_force_N": float(Fz[peak]),
        "peak_at_depth_m": float(a["z"][0] - a["z"][peak]),
        "max_hook_deflection_m": float(a["deflection"].max()),
        "seated": bool(seated),
        "final_plug_force_N": float(Fz[-1]),
        "final_floor_force_N": float(a["floor_force"][-1, 2]),
        "max_penetration_m": float(a["penetration"].max()),
        "max_sweeps": int(a["sweeps"].max()),
        "step_median_ms": float(np.median(np.diff(np.r_[0.0, a["wall"]])) * 1e3) if len(a["wall"]) else 0.0,
        "wall_s": wall,
    }


def summary_lines(s: dict) -> list[str]:
    click = f"click at {s['click_time_s']:.3f} s" if s["clicked"] else "no click"
    return [f"snap fit            {click}; {'seated' if s['seated'] else 'not seated'}",
            f"insertion force     peak {s['peak_insertion_force_N']:.2f} N at {s['peak_at_depth_m'] * 1e3:.2f} mm "
            f"of travel; hooks bent {s['max_hook_deflection_m'] * 1e3:.3f} mm",
            f"seated forces       plug {s['final_plug_force_N']:.3f} N, floor {s['final_floor_force_N']:.3f} N",
            f"penetration         max {s['max_penetration_m'] * 1e6:.2f} um; solver sweeps max {s['max_sweeps']}",
            f"steps               {s['steps']} in {s['wall_s']:.2f} s"]


def _panel(img, top: int, height: int, x, y, colour, x_grid: float, y_grid: float, pad: int = 10,
           y_top: float | None = None) -> None:
    """A line plot of y over x into rows [top, top + height) of img: 0 to `y_top` (default the
    largest y; larger values run into the top edge), grey gridlines every x_grid and y_grid,
    black axes."""
    w = img.shape[1]
    x_lo, x_hi = float(np.min(x)), float(np.max(x))
    x_hi = x_hi if x_hi > x_lo else x_lo + 1e-9
    y_hi = max(float(np.max(y)) if y_top is None else y_top, 1e-9)

    def px(xv, yv):
        c = pad + (w - 2 * pad - 1) * np.clip((np.asarray(xv) - x_lo) / (x_hi - x_lo), 0, 1)
        r = top + height - pad - 1 - (height - 2 * pad - 1) * np.clip(np.asarray(yv) / y_hi, 0, 1)
        return np.round(c).astype(int), np.round(r).astype(int)

    for g in np.arange(x_lo, x_hi, x_grid):
        img[top + pad:top + height - pad, px(g, 0.0)[0]] = 220
    for g in np.arange(0.0, y_hi, y_grid):
        img[px(x_lo, g)[1], pad:w - pad] = 220
    xs, ys = px(x, y)
    for i in range(len(xs) - 1):                          # segments, sampled densely
        n = max(abs(xs[i + 1] - xs[i]), abs(ys[i + 1] - ys[i]), 1)
        t = np.linspace(0.0, 1.0, n + 1)
        img[np.round(ys[i] + t * (ys[i + 1] - ys[i])).astype(int),
            np.round(xs[i] + t * (xs[i + 1] - xs[i])).astype(int)] = colour
    img[top + height - pad - 1, pad:w - pad] = 0
    img[top + pad:top + height - pad, pad] = 0


def plot_png(tr: snap.Trace, path: Path | str, size=(480, 480)) -> None:
    """Two panels: above, the contacts' force on the plug (z, blue) over its travel, grey lines
    every 1 mm and 5 N; below, the floor's reaction (z, red) over time, every 0.1 s and 5 N.
    Both scaled to 1.5x the insertion's peak (before the click): the plug's landing on the seat
    is an impulse many times larger, which runs off the top instead of flattening the curve."""
    from sim_core.io.png import write_png

    a = tr.arrays()
    w, h = size
    k = click_step(a)
    Fz = a["plug_force"][:, 2]
    top = 1.5 * max(float(Fz[:k].max()) if k > 0 else float(Fz.max()), float(Fz[-1]), 1e-9)
    img = np.full((h, w, 3), 255, np.uint8)
    _panel(img, 0, h // 2, a["z"][0] - a["z"], Fz, (40, 90, 220), 1e-3, 5.0, y_top=top)
    _panel(img, h // 2, h - h // 2, a["t"], a["floor_force"][:, 2], (220, 60, 40), 0.1, 5.0, y_top=top)
    write_png(path, img)
