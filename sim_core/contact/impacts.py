"""Impact refinement: a step in which a rigid contact arrives fast is taken again as two halves.

Why.  The contact solvers hold each contact's normal velocity at the end of the step to
u1 >= min(0, -2 d / T - u0) (gap d >= 0, normal velocity u0 at the start, PMI's midpoint
position update p1 = p0 + T (V0 + V1) / 2).  A contact that reaches the surface inside the
step, d < |u0| T / 2, is stopped with u1 = 0 -- no bounce, no positive work -- and its end gap
is d + T u0 / 2 < 0: an impact at normal speed |u0| overshoots by up to T |u0| / 2.  At the
rigid scenarios' T = 10 ms a peg knocked against the bore at 14 mm/s goes 70 um in, 27 mm/s
135 um (issue 23: the scripted peg session's deepest points, four times the batch run's).

What.  After the solve the step predicts each detected node's gap at its end from the solved
velocities, d + T n . v_mid with v_mid the node's midpoint velocity (exactly what the position
update will do, to first order in the turn), and compares it with the node's start.  Every
node, not only the clustering's representatives: one no representative stands for can arrive
too.  When some node gains more than ``ContactParams.impact_tolerance`` of penetration in the
step, the step is discarded and taken as two half steps from the same state with the same
inputs, each of which may split again, at most ``impact_splits`` levels (3: eighth steps).
The overshoot scales with the step, so a level halves it.

What it keeps.  Each half is the ordinary step: its energy behaviour (PMI, the contacts'
targets) is the step's own, and a run is as deterministic as before -- a replay that steps
the logged dt splits the same way and repeats bitwise.  Compliant contacts (seed 001's law)
are left out: their penetration is the law's, and their variable step already lands
touchdowns (``dynamics.variable_step``).  The cost: one more linear pass over the nodes in
every step (no second detection), and in a step that splits, the discarded solve and its
halves (at most 2^L steps of dt / 2^L, the levels only where the impact is).
"""
from __future__ import annotations

import numpy as np

from sim_core.contact import compliant_stage, frames
from sim_core.types import Contacts


def penetration_gain(model, c: Contacts, p_w, R_wb, V0, V1, dt: float) -> float:
    """m, the most penetration any rigid contact (detected node) of `c` gains over a step of `dt` with the
    bodies' twists V0 (B,6) at its start and V1 at its end ([v world; w body], the step's
    convention) and the poses (p_w, R_wb) at its start: max_i (pen_end_i - pen_start_i),
    pen = max(0, -gap), gap_end = d + dt n_i . (relative velocity of the contact point at
    the midpoint twist).  0 when there is no rigid contact."""
    m = len(c)
    if m == 0:
        return 0.0
    body, other = c.bodies(), c.others()
    Gb, Go, _ = frames.contact_rows(c.x_w, c.n_w, body, other, p_w, R_wb)
    Vm = 0.5 * (np.asarray(V0).reshape(-1, 6) + np.asarray(V1).reshape(-1, 6))
    u = np.einsum("ij,ij->i", Gb[:, 0, :], Vm[body])
    u += np.einsum("ij,ij->i", Go[:, 0, :], Vm[np.maximum(other, 0)])   # Go is zero for the world
    gain = np.maximum(-(c.d + dt * u), 0.0) - np.maximum(-c.d, 0.0)
    soft = compliant_stage.rows(model, c)
    if soft is not None:
        gain = gain[~soft]
    return float(gain.max()) if gain.size else 0.0


def should_split(model, c: Contacts, state, V1, dt: float, levels: int) -> bool:
    """Whether the step just solved is to be taken again as two halves: levels of splitting
    are left and a rigid contact gains more penetration than the tolerance."""
    if levels <= 0 or model.contact.impact_tolerance <= 0.0:
        return False
    gain = penetration_gain(model, c, state.p_w, state.R_wb, state.V, V1, dt)
    return gain > model.contact.impact_tolerance
