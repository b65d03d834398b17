"""The interface every system with coordinates of its own implements (the arm; the snap fit's
FEM socket), so that ``step`` calls it in a loop and knows no system by name.

The rigid bodies are the blocks the contact solve works on (``systems.rigid``: one batched
kernel); a cable is more bodies plus couplings (``dynamics.couplings``), not a system.  A
``System`` is constant (it lives in ``Model.systems``); its changing part is one entry of
``State.systems`` at the same index.  Per step, in this order:

1. ``prepare(model, state, sub, inp, dt, blocks)`` -- what it needs at the start of the step
   (kinematics, the coupling's error); adds its wrench on the bodies now to ``Blocks.pull`` (``systems.rigid``).
   Returns an opaque ``prep``.
2. ``fold(model, state, sub, inp, dt, prep, blocks)`` -- adds its couplings to the bodies'
   blocks and eliminates its own coordinates into them (``dynamics.couplings.fold``: the
   arm's grasp), in place; its own active set (limits) is its business.  Returns ``fold``.
3. ``advance(model, sub, fold, V_next, dt)`` -- (its next sub-state, a dict of what the step
   reports for it: ``StepInfo`` fields), from the bodies' velocities after the solve.

``start(model, state)`` gives its sub-state at a start pose; ``holds`` are the bodies it
holds (their drives are off).  A system may carry contacts of its own with one body that
touches nothing else (the snap socket's prongs and the plug, ``systems.fem.snap_socket``): it
solves them in ``fold`` against that body's block, which is exact there, and folds the force in
as a known load; its ``advance`` then reports ``wrench`` (B,6), ``max_penetration``,
``n_contacts`` and ``sweeps`` (``step.info_of`` joins them to the core's), and its optional
``pull(model, sub, body)`` is what the haptic side feels of it (``app.physics_loop``).
Contacts of a system's coordinates with several bodies at once would need its block kept in
the solve instead (a non-6-wide block in ``step.solve``): not built.
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class System(Protocol):
    holds: tuple[int, ...]         # bodies this system holds (no drive on them)

    def start(self, model, state) -> Any:
        ...

    def prepare(self, model, state, sub, inp, dt: float, blocks) -> Any:
        ...

    def fold(self, model, state, sub, inp, dt: float, prep, blocks) -> Any:
        ...

    def advance(self, model, sub, fold, V_next, dt: float) -> tuple[Any, dict]:
        ...


def view_size(model) -> int:
    """How many numbers the world's systems put in the physics snapshot for the view (a system's
    optional ``view_size`` / ``view_state``: the snap socket's prong modes); 0 without any."""
    return sum(int(getattr(s, "view_size", 0)) for s in model.systems)


def view_numbers(model, state) -> np.ndarray:
    """The systems' ``view_state`` at `state`, concatenated in ``Model.systems`` order ((view_size,))."""
    parts = [s.view_state(sub) for s, sub in zip(model.systems, state.systems) if getattr(s, "view_size", 0)]
    return np.concatenate(parts) if parts else np.zeros(0)
