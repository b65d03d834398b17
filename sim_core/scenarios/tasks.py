"""The table of scenario builders: ``TASKS[cfg["scenario"]["task"]]`` builds the world.

Each entry is a ``Task`` -- the functions that turn a validated config into its world, its
parts' dimensions, its task figure, and the meshes the view draws when the parts are
generated rather than asset files.  ``scenario.build``, ``scenario.record``,
``scenario.task_figures``, the view (``app/view/session.py``) and the tests go through this
table; none of them names a task to pick a builder.

Adding a scenario kind: write its builder module next to ``mesh_parts`` and ``docking``
(importing ``common`` for the shared pieces, never ``scenario`` or this table, so the package
keeps its import graph free of cycles: ``tests/sim_core/scenarios/test_scenario_table.py``),
add its ``Task`` here and its name to ``scenario.task``'s choices in ``config.SCHEMA``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sim_core.scenarios import bouncing_ball, cable_winding, docking, grinding, mesh_parts, snap_fit


@dataclass(frozen=True)
class Task:
    """One scenario kind.  `cfg` is a validated config, `src` the file it came from (for
    one-line errors), `res` a ``scenario.RunResult``."""
    build: Callable            # (cfg, src) -> (Model, State): the world and its start (``step.start``-ed)
    dims: Callable             # (cfg, src) -> (static dims, moving dims): dicts of the parts' dimensions, m
    figures: Callable          # (res) -> dict: the task figure, with ``task_target`` (text) and
                               # ``task_target_met`` (bool)
    set_point: Callable | None = None  # (cfg, src) -> (3,) m: the COM from the point that [start] and
                               # [[waypoints]] positions name, part axes; None: they name the COM
    meshes: Callable | None = None     # (cfg, src) -> {part name: mesh}: generated meshes the view
                               # draws; None: the parts' meshes are asset files (assets/parts)
    line: Callable | None = None       # (fig, verdict) -> the summary's task line (``scenario.task_line``)
    numbers: Callable | None = None    # fig -> (value, aux): the snapshot's task numbers (``scenario.task_fields``)
    hud: Callable | None = None        # (value, aux, met) -> the HUD's task line (``scenario.hud_text``)
    code: float = 0.0                  # the snapshot's task code (records.SNAPSHOT "task"; 0: none): fixed,
                                       # logs keep it
    control: Callable | None = None    # (cfg, src) -> a controller spec (``start()`` -> a loop with
                               # ``inputs(model, state, dt)`` and ``measure(state, info)``) that makes
                               # each step's set pose in place of the waypoints (grinding's force
                               # loop); None: the waypoints (``scenario.inputs_at``)


def _docking_dims(cfg: dict, src: str) -> tuple[dict, dict]:
    return docking.dims(*docking.parts(cfg, src))


TASKS: dict[str, Task] = {
    "bolting": Task(build=mesh_parts.build, dims=mesh_parts.dims, figures=mesh_parts.bolting_figures,
                    line=mesh_parts.bolting_line, numbers=mesh_parts.bolting_numbers, hud=mesh_parts.bolting_hud,
                    code=1.0),
    "peg_in_hole": Task(build=mesh_parts.build, dims=mesh_parts.dims, figures=mesh_parts.peg_figures,
                        line=mesh_parts.peg_line, numbers=mesh_parts.peg_numbers, hud=mesh_parts.peg_hud, code=2.0),
    "docking": Task(build=docking.build, dims=_docking_dims, figures=docking.task_figures,
                    set_point=docking.com_part, meshes=docking.meshes, line=docking.task_line,
                    numbers=docking.hud_numbers, hud=docking.hud, code=3.0),
    "grinding": Task(build=grinding.build, dims=grinding.dims, figures=grinding.figures, meshes=grinding.meshes,
                     control=grinding.control, line=grinding.task_line, numbers=grinding.hud_numbers,
                     hud=grinding.hud, code=4.0),
    "bouncing_ball": Task(build=bouncing_ball.build, dims=bouncing_ball.dims, figures=bouncing_ball.figures,
                          meshes=bouncing_ball.meshes, line=bouncing_ball.task_line,
                          numbers=bouncing_ball.hud_numbers, hud=bouncing_ball.hud, code=5.0),
    "cable_winding": Task(build=cable_winding.build, dims=cable_winding.dims, figures=cable_winding.figures,
                          meshes=cable_winding.meshes, control=cable_winding.control, line=cable_winding.task_line,
                          numbers=cable_winding.hud_numbers, hud=cable_winding.hud, code=6.0),
    "snap_fit": Task(build=snap_fit.world, dims=snap_fit.dims, figures=snap_fit.figures,
                     meshes=snap_fit.meshes, line=snap_fit.task_line, numbers=snap_fit.hud_numbers,
                     hud=snap_fit.hud, code=7.0),
}


def task(cfg: dict) -> Task:
    """The table's entry of a validated config (its ``scenario.task``)."""
    return TASKS[cfg["scenario"]["task"]]


def set_point_offset(cfg: dict, src: str = "<config>") -> np.ndarray:
    """(3,) m, part axes: what to add (rotated) to a configured position to get the COM."""
    t = task(cfg)
    return np.zeros(3) if t.set_point is None else np.asarray(t.set_point(cfg, src), dtype=np.float64)
