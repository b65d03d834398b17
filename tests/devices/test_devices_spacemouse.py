"""SpaceMouse HID driver from recorded report bytes (no device, no hidapi needed).

The fixtures are input reports as hidapi returns them (first byte the report id), written
out by hand in the layouts of the two report families: the older SpaceNavigator / SpaceMouse
Pro family (translation id 1 and rotation id 2 as separate 7-byte reports, buttons id 3) and
the newer family (one 13-byte id-1 report with all six axes).  Axes are int16 LE; full
deflection is about +-350 counts (0x015e; -350 is 0xfea2).
"""
import logging
import math

import numpy as np
import pytest

from devices import DeviceFault
from devices.base import quat_about_z
from devices.spacemouse import RecordedHID, SpaceMouse, parse_report

# An older-family session: push right (x +350, a little z noise), twist the cap
# counter-clockwise seen from above (raw rz -350 -> device +z), press and release button 0.
OLD_FAMILY = {
    "push_right": "01 5e 01 00 00 f6 ff",          # tx=+350 ty=0 tz=-10
    "rest_t": "01 00 00 00 00 00 00",
    "twist": "02 00 00 00 00 a2 fe",               # rz=-350
    "rest_r": "02 00 00 00 00 00 00",
    "button0": "03 01 00",
    "release": "03 00 00",
}
# A newer-family report: pull toward the user (raw ty +350 -> device -y) and tilt (rx +175).
NEW_FAMILY_PULL = "01 00 00 5e 01 00 00 af 00 00 00 00 00"
MALFORMED = ["01 5e 01", "02 00 00 00", "03", "01 " + "00 " * 13]     # short, short, empty, long
OTHER = ["17 64", "04 01"]                          # battery level, LED: not ours, not errors

DT = 1e-3
SPEED, RATE, FULL, DEAD = 0.1, 1.0, 350.0, 8.0


def _mouse(*reports, **kw):
    sm = SpaceMouse(RecordedHID(reports), max_speed=SPEED, max_rate=RATE, full_scale=FULL,
                    deadband=DEAD, **kw)
    sm.open()
    return sm


def _scaled(counts):
    """Expected rate fraction for raw counts (deadband removed, full scale = 1)."""
    c = np.clip(counts, -FULL, FULL)
    return np.sign(c) * np.maximum(np.abs(c) - DEAD, 0.0) / (FULL - DEAD)


def test_parse_report_layouts():
    k, a = parse_report(bytes.fromhex(OLD_FAMILY["push_right"]))
    assert k == "translation" and a.tolist() == [350, 0, -10]
    k, a = parse_report(bytes.fromhex(OLD_FAMILY["twist"]))
    assert k == "rotation" and a.tolist() == [0, 0, -350]
    assert parse_report(bytes.fromhex("03 05 80")) == ("buttons", 0x8005)
    k, a = parse_report(bytes.fromhex(NEW_FAMILY_PULL))
    assert k == "both" and a.tolist() == [0, 350, 0, 175, 0, 0]
    for r in MALFORMED:
        assert parse_report(bytes.fromhex(r)) is None
    assert parse_report(bytes.fromhex(OTHER[0])) == ("other", 0x17)


def test_translation_integrates_to_position():
    sm = _mouse(OLD_FAMILY["push_right"])
    s = sm.read(0.0)                                 # first read: the report, no time yet
    assert not s.p.any()
    for k in range(1, 501):
        s = sm.read(k * DT)
    vx = SPEED * _scaled(350.0)
    vz = -SPEED * _scaled(-10.0)                     # raw z is down; 2 counts past the deadband
    assert s.v == pytest.approx([vx, 0.0, vz], rel=1e-12)
    assert s.p == pytest.approx([vx * 0.5, 0.0, vz * 0.5], rel=1e-9)
    sm.handle.feed(OLD_FAMILY["rest_t"])             # let go: the handle stops where it is
    p_stop = sm.read(0.501).p
    assert sm.read(0.6).p.tolist() == p_stop.tolist() and not sm.read(0.7).v.any()
    assert sm.reports == 2 and sm.malformed == 0


def test_rotation_and_buttons():
    sm = _mouse(OLD_FAMILY["twist"], OLD_FAMILY["button0"])
    sm.read(0.0)
    for k in range(1, 1001):
        s = sm.read(k * DT)
    w = RATE * _scaled(350.0)                        # raw rz -350 -> device rz +350
    assert s.w == pytest.approx([0.0, 0.0, w], rel=1e-12)
    assert s.q == pytest.approx(quat_about_z(w * 1.0), abs=1e-12)
    assert s.buttons == 1
    sm.handle.feed(OLD_FAMILY["rest_r"], OLD_FAMILY["release"])
    s = sm.read(1.001)
    assert not s.w.any() and s.buttons == 0


def test_newer_six_axis_report_and_axis_map():
    sm = _mouse(NEW_FAMILY_PULL)
    sm.read(0.0)
    s = sm.read(0.1)
    assert s.v == pytest.approx([0.0, -SPEED, 0.0], rel=1e-12)       # toward the user = -y
    assert s.w == pytest.approx([RATE * _scaled(175.0), 0.0, 0.0], rel=1e-12)
    assert s.p == pytest.approx([0.0, -SPEED * 0.1, 0.0], rel=1e-12)


def test_deadband_and_workspace():
    sm = _mouse("01 05 00 fb ff 08 00")               # +5, -5, +8 counts: all inside the deadband
    sm.read(0.0)
    assert not sm.read(1.0).p.any()
    sm = _mouse("01 5e 01 00 00 00 00")               # straight right, full scale
    sm.read(0.0)
    s = sm.read(5.0)                                 # 0.5 m of travel asked for
    R = sm.capability.workspace_radius
    assert s.p == pytest.approx([R, 0.0, 0.0], rel=1e-12)
    s = sm.read(5.001)                               # pinned: the sample says it is not moving
    assert s.p == pytest.approx([R, 0.0, 0.0], rel=1e-12) and np.linalg.norm(s.v) < 1e-9


def test_malformed_reports_are_ignored_and_counted(caplog):
    sm = _mouse(OLD_FAMILY["push_right"], *MALFORMED, *OTHER, OLD_FAMILY["button0"])
    with caplog.at_level(logging.WARNING, logger="devices.spacemouse"):
        s = sm.read(0.0)
    assert sm.malformed == len(MALFORMED) and sm.reports == 2 + len(OTHER)
    assert sm.counts[:3].tolist() == [350, 0, -10] and s.buttons == 1    # the good ones applied
    warned = [r for r in caplog.records if "malformed report" in r.getMessage()]
    assert len(warned) == 1 and "#1" in warned[0].getMessage()           # first one, then 10, 100...


def test_read_error_is_a_device_fault():
    sm = _mouse(OLD_FAMILY["push_right"], OSError("read error"))
    with pytest.raises(DeviceFault) as e:
        sm.read(0.0)
    assert str(e.value) == "spacemouse: read error (read error)"
    sm.close()
    assert sm.handle.closed and not sm.last_wrench.any()


def test_no_force_output():
    sm = _mouse()
    assert sm.capability.dof_out == 0 and sm.capability.dof_in == 6
    sm.write_force(np.array([100.0, 0, 0, 0, 0, 5.0]))                   # kept for the HUD only
    assert sm.last_wrench[0] == sm.capability.max_force
    assert sm.last_wrench[5] == pytest.approx(sm.capability.max_torque)
    assert math.isclose(np.linalg.norm(sm.read(0.0).q), 1.0)


# -- settings that would make impossible samples (issue 23) -----------------------------------

@pytest.mark.parametrize("kw,words", [
    ({"full_scale": 8.0, "deadband": 8.0}, "deadband < full_scale"),       # every count / 0: NaN
    ({"deadband": float("nan")}, "deadband < full_scale"),
    ({"max_speed": 1e30}, "max_speed must be > 0 and <= 5.774 m/s"),
    ({"max_rate": -1.0}, "max_rate must be > 0 and <= 57.74 rad/s"),
    ({"axis_map": np.diag([1.0, 1.0, 0.0])}, "axis_map"),
], ids=["no range", "nan deadband", "1e30 speed", "negative rate", "singular axes"])
def test_settings_that_would_make_impossible_samples_are_refused(kw, words):
    args = {"max_speed": SPEED, "max_rate": RATE, "full_scale": FULL, "deadband": DEAD, **kw}
    with pytest.raises(ValueError, match="spacemouse: ") as e:
        SpaceMouse(RecordedHID([]), **args)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_full_deflection_at_the_fastest_settings_is_a_valid_sample():
    """int16 counts at the extremes with the largest allowed rates: every sample passes the
    driver's own check (finite, within max_reach / max_speed / max_angular_speed, unit q)."""
    cap = SpaceMouse(RecordedHID([])).capability
    top = 1.0 / math.sqrt(3.0) - 1e-12
    sm = SpaceMouse(RecordedHID(["01 ff 7f 00 80 ff 7f 00 80 ff 7f 00 80"]), max_speed=top * cap.max_speed,
                    max_rate=top * cap.max_angular_speed)
    sm.open()
    for k in range(2000):
        s = sm.read(k * DT)
    assert np.linalg.norm(s.p) <= cap.workspace_radius + 1e-12 and abs(np.linalg.norm(s.q) - 1.0) < 1e-12


def test_a_non_finite_host_time_is_refused_at_the_driver():
    sm = _mouse(OLD_FAMILY["push_right"])
    sm.read(0.0)
    with pytest.raises(DeviceFault, match=r"spacemouse: sample refused: field p = \[nan"):
        sm.read(float("nan"))
