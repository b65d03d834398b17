"""The interface every system with coordinates of its own implements (the arm today; a
reduced FEM socket next), so that ``step`` calls it in a loop and knows no system by name.

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
holds (their drives are off).  A system whose coordinates carry contacts of their own (the
FEM socket's surface nodes) would keep its block in the solve instead of folding it, and give
its rows of the contact Jacobian for a point on it: that extension (a non-6-wide block in
``step.solve``) is not built yet; today every folded system leaves 6-wide body blocks.
"""
from __future__ import annotations

from typing import Any, Protocol


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
