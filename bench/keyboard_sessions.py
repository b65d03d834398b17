"""The keyboard-session family's figures (issue 23, part 1): each scripted session of
``tests/app/test_keyboard_sessions.py`` run on ``app.lockstep``'s simulated clock, with its
deepest part penetration against the batch run's, the part's top speed, the largest contact
force and the proxy's deepest gap.  Deterministic: no wall-clock figure.  Each session is
also run with its script 1 .. SHIFTS-1 frames (1/60 s) later: where an impact falls in a
10 ms step decides how deep it goes, so one timing is one sample (issue 23: one frame moved
the peg's figure from 67.2 to 135.0 um before the impact refinement, contact.impacts).

    python bench/keyboard_sessions.py [bolting|peg_in_hole|docking ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.lockstep import run_lockstep  # noqa: E402
from tests.app import test_keyboard_sessions as T  # noqa: E402

SESSIONS = {"bolting": (T.BOLTING_EVENTS, 9.0), "peg_in_hole": (T.PEG_EVENTS, 3.5), "docking": (T.DOCKING_EVENTS, 9.0)}


SHIFTS = 3


def main(names: list[str]) -> None:
    for name in names or list(SESSIONS):
        events, duration = SESSIONS[name]
        batch, worst = T.BATCH_PENETRATION[name], 0.0
        for k in range(SHIFTS):
            tr, _ = run_lockstep(name, duration + k / 60, T.shifted(events, k))
            a = tr.arrays()
            pen = a["part_pen"].max()
            worst = max(worst, pen)
            print(f"{name:12s} +{k} frames: part penetration {pen * 1e6:6.1f} um = {pen / batch:4.2f} x the batch's "
                  f"{batch * 1e6:.1f} um; part speed {a['part_speed'].max() * 1e3:4.0f} mm/s; "
                  f"contact force {a['contact_force'].max():5.1f} N; "
                  f"proxy's deepest gap {a['proxy_gap'].min() * 1e6:6.1f} um")
        print(f"{name:12s} deepest of {SHIFTS}: {worst * 1e6:.1f} um = {worst / batch:4.2f} x the batch's "
              f"(target <= {T.PENETRATION_FACTOR:g} x)")


if __name__ == "__main__":
    main(sys.argv[1:])
