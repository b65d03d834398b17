"""The keyboard-session family's figures (issue 23, part 1): each scripted session of
``tests/app/test_keyboard_sessions.py`` run on ``app.lockstep``'s simulated clock, with its
deepest part penetration against the batch run's, the part's top speed, the largest contact
force and the proxy's deepest gap.  Deterministic: no wall-clock figure.

    python bench/keyboard_sessions.py [bolting|peg_in_hole|docking ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.lockstep import run_lockstep  # noqa: E402
from tests.app import test_keyboard_sessions as T  # noqa: E402

SESSIONS = {"bolting": (T.BOLTING_EVENTS, 9.0), "peg_in_hole": (T.PEG_EVENTS, 3.5), "docking": (T.DOCKING_EVENTS, 9.0)}


def main(names: list[str]) -> None:
    for name in names or list(SESSIONS):
        events, duration = SESSIONS[name]
        tr, _ = run_lockstep(name, duration, events)
        a = tr.arrays()
        pen, batch = a["part_pen"].max(), T.BATCH_PENETRATION[name]
        print(f"{name:12s} part penetration {pen * 1e6:6.1f} um = {pen / batch:4.2f} x the batch's "
              f"{batch * 1e6:.1f} um (target <= {T.PENETRATION_FACTOR:g} x); "
              f"part speed {a['part_speed'].max() * 1e3:4.0f} mm/s; contact force {a['contact_force'].max():5.1f} N; "
              f"proxy's deepest gap {a['proxy_gap'].min() * 1e6:6.1f} um")


if __name__ == "__main__":
    main(sys.argv[1:])
