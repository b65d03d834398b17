"""devices/: one interface for every driver -- conformance, force clamping, the factory,
the keyboard state machine, bit-exact replay and seeded scripted trajectories.

All time here is fake (``now`` values chosen by the test); the serial driver runs against the
pty emulator in lock-step (tests/test_devices_serial.py has its failure modes).
"""
import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from devices import Capability, Device, DeviceFault, DeviceSample, open_device
from devices.base import clamp_wrench, quat_about_z, samples_identical
from devices.emulator_inverse3 import Inverse3Emulator, lockstep_tick
from devices.keyboard import CLUTCH_BIT, MOUSE_LEFT, MOUSE_RIGHT, KeyboardDevice
from devices.replay import ReplayDevice, load_samples, save_samples
from devices.scripted import (
    ADVERSARIAL_KINDS,
    BOUND_FRACTION,
    ScriptedDevice,
    Trajectory,
    adversarial,
    approach_and_turn,
    insert,
    scripted_device,
)
from devices.serial_inverse3 import Inverse3Serial
from devices.spacemouse import RecordedHID, SpaceMouse

# |q| = 1 to rounding: a few ulps per quaternion product, accumulated over <= 10^4 updates.
UNIT_Q_TOL = 1e-12
# Clamped norms equal the limit to rounding of one scale-and-norm (a few ulps).
CLAMP_TOL = 1e-12
# Float32 on the wire: a force of a few newtons keeps ~7 significant digits.
FLOAT32_REL = 2e-7
DT = 1e-3                              # the haptic period used for fake time


def _random_samples(n, seed=0):
    """Samples with awkward floats (signed zero, subnormal, huge and tiny) and random times."""
    rng = np.random.default_rng(seed)
    t = 5.0 + np.cumsum(rng.uniform(0.0, 2e-3, n))
    if n > 3:
        t[3] = t[2]                                     # duplicate times are allowed
    out = []
    for i in range(n):
        p = rng.normal(size=3) * 0.05
        p[0] = [-0.0, 5e-324, 1e-300, 0.1][i % 4]
        q = rng.normal(size=4)
        out.append(DeviceSample(t=float(t[i]), p=p, q=q / np.linalg.norm(q), v=rng.normal(size=3),
                                w=rng.normal(size=3), buttons=int(rng.integers(0, 8))))
    return out


# -- conformance of every device ------------------------------------------------------------

@pytest.fixture(params=["keyboard", "scripted", "replay", "spacemouse", "serial"])
def device(request):
    """(opened-able device, tick(now, wrench) -> sample for that device)."""
    kind = request.param
    emu = None
    if kind == "keyboard":
        dev = KeyboardDevice()
    elif kind == "scripted":
        dev = scripted_device("approach_and_turn")
    elif kind == "replay":
        dev = ReplayDevice([DeviceSample(t=1.0 + k * DT, p=np.array([0.01, 0.0, 0.02]) * k / 100,
                                         q=quat_about_z(0.01 * k), v=np.zeros(3), w=np.zeros(3))
                            for k in range(100)])
    elif kind == "spacemouse":
        dev = SpaceMouse(RecordedHID(["01 5e 01 00 00 f6 ff", "02 00 00 00 00 a2 fe", "03 01 00"]))
    else:
        emu = Inverse3Emulator().start()
        # fake time advances 1 ms per tick regardless of the pty; no watchdog trips here
        dev = Inverse3Serial(emu.port, silence_timeout=10.0)

    def tick(now, wrench):
        if kind == "serial":
            return lockstep_tick(dev, emu, now, wrench)
        s = dev.read(now)
        dev.write_force(wrench)
        return s

    yield dev, tick
    dev.close()
    if emu is not None:
        emu.stop()


def test_every_device_conforms(device):
    dev, tick = device
    cap = dev.capability
    assert isinstance(dev, Device) and isinstance(cap, Capability)
    assert cap.dof_in in (3, 6) and cap.dof_out in (0, 3, 6)
    with pytest.raises(DeviceFault):
        dev.read(0.5)                                   # not open yet
    dev.open()
    dev.open()                                          # idempotent
    for k in range(30):
        now = 1.0 + k * DT
        s = tick(now, np.array([0.1, 0.2, 0.3, 0.0, 0.0, 0.01]) * k / 30)
        assert isinstance(s, DeviceSample)
        assert s.t <= now and (s.t == now or isinstance(dev, ReplayDevice))
        for name, n in (("p", 3), ("q", 4), ("v", 3), ("w", 3)):
            a = getattr(s, name)
            assert a.shape == (n,) and a.dtype == np.float64 and np.all(np.isfinite(a)), name
        assert abs(np.linalg.norm(s.q) - 1.0) < UNIT_Q_TOL
        assert np.linalg.norm(s.p) <= cap.workspace_radius + 1e-12
        assert isinstance(s.buttons, int) and s.buttons >= 0

    # clamping: an absurd wrench comes out at the limits, direction kept
    big = np.array([300.0, -400.0, 0.0, 10.0, 0.0, 0.0])
    dev.write_force(big)
    w = dev.last_wrench
    assert np.linalg.norm(w[:3]) == pytest.approx(cap.max_force, abs=CLAMP_TOL)
    assert np.linalg.norm(w[3:]) == pytest.approx(cap.max_torque, abs=CLAMP_TOL)
    assert np.allclose(np.cross(w[:3], big[:3]), 0.0, atol=1e-12)
    dev.write_force([np.nan, 0, 0, 0, 0, 0])            # never forward a NaN
    assert not dev.last_wrench.any()
    with pytest.raises(ValueError):
        dev.write_force(np.zeros(3))
    dev.write_force(np.array([0.5, 0, 0, 0, 0, 0]))
    dev.zero_force()
    assert not dev.last_wrench.any()
    dev.write_force(np.array([0.5, 0, 0, 0, 0, 0]))
    dev.close()
    assert not dev.last_wrench.any() and not dev.is_open
    dev.close()                                         # idempotent, never raises


def test_clamp_wrench_keeps_direction_and_is_exact_below_limits():
    cap = Capability("t", 6, 6, max_force=2.0, max_torque=0.5, max_stiffness=1.0, max_damping=1.0,
                     workspace_radius=0.1, rate_hz=1000.0)
    w = np.array([0.3, -1.1, 0.7, 0.1, 0.2, -0.3])
    out, changed = clamp_wrench(w, cap)
    assert not changed and out.tobytes() == w.tobytes()
    out, changed = clamp_wrench(np.array([3.0, 4.0, 0.0, 0.0, 0.0, -2.0]), cap)
    assert changed
    assert np.allclose(out, [1.2, 1.6, 0.0, 0.0, 0.0, -0.5], atol=CLAMP_TOL)
    out, changed = clamp_wrench(np.array([np.inf, 0, 0, 0, 0, 0]), cap)
    assert changed and not out.any()
    cap3 = Capability("t3", 3, 3, 2.0, 0.0, 1.0, 1.0, 0.1, 1000.0)
    out, _ = clamp_wrench(np.array([0, 0, 1.0, 1.0, 1.0, 1.0]), cap3)    # no torque on a 3-DOF arm
    assert out.tolist() == [0, 0, 1.0, 0, 0, 0]


def test_capability_rejects_nonsense():
    with pytest.raises(ValueError, match="dof_in"):
        Capability("x", 4, 0, 1.0, 1.0, 1.0, 1.0, 0.1, 1000.0)
    with pytest.raises(ValueError, match="max_force"):
        Capability("x", 3, 3, -1.0, 1.0, 1.0, 1.0, 0.1, 1000.0)
    with pytest.raises(ValueError, match="workspace_radius"):
        Capability("x", 3, 3, 1.0, 1.0, 1.0, 1.0, 0.0, 1000.0)


# -- the factory ------------------------------------------------------------------------------

def test_open_device_specs(tmp_path):
    kb = open_device("keyboard")
    assert isinstance(kb, KeyboardDevice) and kb.is_open
    sc = open_device("scripted:adversarial:impulsive:3")
    assert isinstance(sc, ScriptedDevice) and sc.trajectory.name == "adversarial:impulsive:3"
    assert open_device("scripted:insert", speed=0.02).trajectory.name == "insert"
    path = tmp_path / "s.npz"
    save_samples(path, _random_samples(5))
    assert isinstance(open_device(f"replay:{path}"), ReplayDevice)
    with Inverse3Emulator(framing="checked") as emu:
        d = open_device(f"serial:{emu.port}", framing="checked")
        assert isinstance(d, Inverse3Serial) and d.info.device_id == emu.info.device_id
        d.close()
    for bad in ("joystick", "scripted:", "scripted:nope", "scripted:adversarial:wobble",
                "scripted:adversarial:random:x", "keyboard:1", "serial:"):
        with pytest.raises(ValueError) as e:
            open_device(bad)
        assert "\n" not in str(e.value)


def test_missing_devices_fault_with_one_line():
    with pytest.raises(DeviceFault) as e:
        open_device("serial:/dev/does-not-exist")
    assert str(e.value).startswith("inverse3 at /dev/does-not-exist: cannot open") and "\n" not in str(e.value)
    pytest.importorskip("hid")
    with pytest.raises(DeviceFault) as e:                # no SpaceMouse on a CI machine
        open_device("spacemouse:/dev/hidraw-does-not-exist")
    assert str(e.value).startswith("spacemouse:") and "\n" not in str(e.value)


# -- keyboard / mouse ---------------------------------------------------------------------------

def _run(dev, t0, seconds):
    s = None
    for k in range(int(round(seconds / DT))):
        s = dev.read(t0 + (k + 1) * DT)
    return s


# m/s: the glide's last speed before it lands on the target: near the target it runs at the
# lag's speed (about distance / smoothing) and lands when a read's step would pass it; measured
# 2.5 mm/s (a 2.5 mm/s stop of a virtual handle, which nothing physical follows instantly)
ARRIVAL_SPEED = 3e-3


def test_keyboard_drag_scroll_glide_to_the_target_within_speed_and_acceleration():
    """A drag or a scroll of any size moves the target at once; the handle glides there
    from rest, its speed at most ``max_speed`` and changed by at most ``max_accel`` per read,
    with no overshoot (the distance to the target never grows), and comes to rest on it."""
    kb = KeyboardDevice(metres_per_pixel=1e-4, metres_per_scroll=1e-3, smoothing=0.02,
                        start=(0.0, 0.0, 0.0))
    kb.open()
    s = kb.read(0.0)
    assert not s.p.any() and not s.v.any()
    kb.on_drag(100, -50, MOUSE_LEFT)                    # +x 1 cm, -y 0.5 cm
    kb.on_scroll(3)                                     # +z 3 mm
    kb.on_drag(0, 20, MOUSE_RIGHT)                      # +z 2 mm more
    assert kb.target == pytest.approx([0.01, -0.005, 0.005], abs=1e-15)
    s1 = kb.read(DT)
    # from rest: one read's acceleration, straight toward the target
    assert np.linalg.norm(s1.v) == pytest.approx(kb.max_accel * DT, rel=1e-9)
    assert np.cross(s1.p, kb.target) == pytest.approx(np.zeros(3), abs=1e-15)
    v_prev, dist_prev, t = s1.v, np.linalg.norm(kb.target - s1.p), DT
    for _ in range(int(2.0 / DT)):                      # 12 mm at <= 30 mm/s: well within 2 s
        t += DT
        s = kb.read(t)
        assert np.linalg.norm(s.v) <= kb.max_speed * (1 + 1e-12)
        dist = np.linalg.norm(kb.target - s.p)
        if dist > 0.0:      # the read that lands on the target stops from sqrt(2 a d) <= 2.6 mm/s
            assert np.linalg.norm(s.v - v_prev) <= kb.max_accel * DT * (1 + 1e-9)
        else:
            assert np.linalg.norm(v_prev) <= ARRIVAL_SPEED
        assert dist <= dist_prev + 1e-15
        v_prev, dist_prev = s.v, dist
    assert s.p == pytest.approx(kb.target, abs=1e-12)
    assert np.linalg.norm(kb.read(t + DT).v) < 1e-9
    kb.on_drag(10, 10, 0)                               # no button: nothing
    assert kb.target == pytest.approx([0.01, -0.005, 0.005], abs=1e-15)
    kb.on_event("scroll", -5)                           # forwarded event tuples
    kb.on_event("key", "space", True)
    assert kb.target[2] == pytest.approx(0.0, abs=1e-15) and kb.buttons == CLUTCH_BIT
    with pytest.raises(ValueError, match="unknown event"):
        kb.on_event("wheel", 1)


def test_keyboard_turn_keys_and_clutch():
    kb = KeyboardDevice(turn_rate=1.0, smoothing=0.0)
    kb.open()
    kb.read(0.0)
    kb.on_key("e", True)                                # tighten: clockwise from above
    s = _run(kb, 0.0, 1.0)
    assert s.w.tolist() == [0.0, 0.0, -1.0]
    assert s.q == pytest.approx(quat_about_z(-1.0), abs=1e-12)
    kb.on_key("Left", True)                             # both held: no turn
    assert kb.read(1.0 + DT).w[2] == 0.0
    kb.on_key("e", False)
    s = _run(kb, 1.0 + DT, 0.5)                         # 'left' alone: loosen
    assert s.w[2] == 1.0 and s.q == pytest.approx(quat_about_z(-0.5), abs=1e-12)
    kb.on_key("left", False)
    assert kb.read(2.0).w[2] == 0.0
    kb.on_key("space", True)
    assert kb.read(2.001).buttons == CLUTCH_BIT
    kb.on_key("space", False)
    assert kb.read(2.002).buttons == 0
    kb.on_drag(50, 0, MOUSE_LEFT)
    kb.on_key("r", True)            # the handle back to the start (the session undoes the turn)
    assert kb.target == pytest.approx(kb.start, abs=1e-15)
    s = _run(kb, 2.003, 0.5)
    assert s.p == pytest.approx(kb.start, abs=1e-12)


def test_keyboard_stays_in_workspace():
    kb = KeyboardDevice(smoothing=0.0)
    kb.open()
    kb.on_drag(1e6, 1e6, MOUSE_LEFT)
    kb.on_scroll(-1e6)
    s = kb.read(0.0)
    R = kb.capability.workspace_radius
    assert np.linalg.norm(s.p) <= R + 1e-15 and np.linalg.norm(kb.target) <= R + 1e-15
    kb.write_force(np.array([100.0, 0, 0, 0, 0, 0]))    # recorded for the HUD, clamped
    assert kb.last_wrench[0] == kb.capability.max_force


# -- replay -----------------------------------------------------------------------------------

def test_replay_returns_bit_identical_samples():
    src = _random_samples(50)
    rp = ReplayDevice(src)
    rp.open()
    with pytest.raises(DeviceFault, match="no recorded sample"):
        rp.read(src[0].t - 1e-9)
    for i, s in enumerate(src):
        if i == 2:                                      # t[3] == t[2]: the later one wins
            continue
        got = rp.read(s.t)
        assert samples_identical(got, s)
        if i + 1 < len(src) and src[i + 1].t > s.t:     # between samples: the earlier one
            assert samples_identical(rp.read(0.5 * (s.t + src[i + 1].t)), s)
    assert rp.finished
    assert samples_identical(rp.read(1e9), src[-1])
    with pytest.raises(ValueError):                     # the recording cannot be altered
        rp.read(1e9).p[0] = 1.0
    rp.write_force(np.ones(6))
    assert rp.forces[-1][0] == 1e9


def test_replay_rejects_time_going_backwards():
    s = _random_samples(5)
    with pytest.raises(ValueError, match="sample 1"):
        ReplayDevice([s[1], s[0]])


def test_replay_files_round_trip_bit_for_bit(tmp_path):
    src = _random_samples(20, seed=4)
    save_samples(tmp_path / "s.npz", src)
    assert all(samples_identical(a, b) for a, b in zip(load_samples(tmp_path / "s.npz"), src))
    log = pytest.importorskip("sim_core.io.log")
    w = log.LogWriter(tmp_path / "s.mcap")
    for s in src:
        w.put("/device", s.t, s.to_dict())
    w.close()
    got = load_samples(tmp_path / "s.mcap")
    assert len(got) == len(src) and all(samples_identical(a, b) for a, b in zip(got, src))
    np.savez(tmp_path / "bad.npz", t=np.zeros(2), p=np.zeros((2, 2)), q=np.zeros((2, 4)),
             v=np.zeros((2, 3)), w=np.zeros((2, 3)), buttons=np.zeros(2))
    with pytest.raises(ValueError, match="array p"):
        load_samples(tmp_path / "bad.npz")


# -- scripted ---------------------------------------------------------------------------------

def _sample_traj(traj, ts):
    return [traj(t) for t in ts]


@pytest.mark.parametrize("kind", ADVERSARIAL_KINDS)
def test_adversarial_is_seeded_and_repeats(kind):
    ts = np.arange(0.0, 2.0, 0.0007)
    a = _sample_traj(adversarial(11, kind), ts)
    b = _sample_traj(adversarial(11, kind), ts)
    c = _sample_traj(adversarial(12, kind), ts)
    assert all(x.tobytes() == y.tobytes() for pa, pb in zip(a, b) for x, y in zip(pa, pb))
    assert any(not np.array_equal(pa[0], pc[0]) for pa, pc in zip(a, c))


@pytest.mark.parametrize("kind", ADVERSARIAL_KINDS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_adversarial_is_bounded_and_rates_are_derivatives(kind, seed):
    R = 0.1
    traj = adversarial(seed, kind, duration=1.0, radius=R)
    ts = np.arange(0.0, 1.0, 0.00037)
    P = np.array([traj(t)[0] for t in ts])
    assert np.linalg.norm(P, axis=1).max() <= BOUND_FRACTION * R + 1e-12
    # central differences at the middle of 1 ms intervals (the sampled kinds are piecewise
    # smooth on the 1 ms grid); scipy's Rotation is the independent reference for w
    h = 1e-6
    for t in (np.arange(40) * 23 + 0.5) * 1e-3:
        p, q, v, w = traj(t)
        p0, q0, _, _ = traj(t - h)
        p1, q1, _, _ = traj(t + h)
        assert abs(np.linalg.norm(q) - 1.0) < UNIT_Q_TOL
        assert v == pytest.approx((p1 - p0) / (2 * h), rel=1e-5, abs=1e-6)
        r0, r1 = (Rotation.from_quat(np.roll(x, -1)) for x in (q0, q1))   # scipy: [x y z w]
        assert w == pytest.approx((r1 * r0.inv()).as_rotvec() / (2 * h), rel=1e-4, abs=1e-4)


def test_adversarial_kinds_have_their_character():
    fs = 10_000.0
    ts = np.arange(0.0, 1.0, 1.0 / fs)
    hf = adversarial(5, "high_frequency", duration=1.0)
    x = np.array([hf(t)[0] for t in ts])
    f = np.fft.rfftfreq(len(ts), 1.0 / fs)
    # Hann window against leakage; the band is widened by the window's main lobe (2 bins)
    spec = np.abs(np.fft.rfft((x - x.mean(axis=0)) * np.hanning(len(ts))[:, None], axis=0)) ** 2
    band = (f >= 98.0) & (f <= 402.0)
    assert spec[band].sum() / spec.sum() > 0.99                # the energy is in 100-400 Hz
    imp = adversarial(5, "impulsive", duration=2.0)
    speeds = np.array([np.linalg.norm(imp(t)[2]) for t in np.arange(0.0, 2.0, 1e-3) + 5e-4])
    assert (speeds == 0.0).mean() > 0.9 and speeds.max() > 5.0  # rests, then jumps
    rnd = adversarial(5, "random", duration=2.0)
    speeds = np.array([np.linalg.norm(rnd(t)[2]) for t in np.arange(0.0, 2.0, 1e-3) + 5e-4])
    assert (speeds > 0.0).all()                                # always wandering


def test_approach_and_turn_fastens_one_pitch_per_turn():
    traj = approach_and_turn(pitch=0.005, turns=3.0, press=0.002, turn_rate=math.pi)
    p, q, v, w = traj(0.0)
    assert p.tolist() == [0.04, 0.03, 0.06] and not v.any()
    t_turn0 = 2.5                                             # 2.5 move times of 1 s
    p0, q0, v0, w0 = traj(t_turn0)
    assert p0 == pytest.approx([0, 0, -0.002]) and not v0.any() and not w0.any()
    # the turn: clockwise from above, one pitch of advance per revolution at every instant
    for t in t_turn0 + np.linspace(0.1, 5.9, 7):
        p, q, v, w = traj(t)
        assert w[2] < 0.0 and not w[:2].any() and not p[:2].any()
        assert v[2] / w[2] == pytest.approx(0.005 / (2 * math.pi))       # dz/dyaw = pitch / 2 pi
    t_mid = t_turn0 + 3.0                                     # half way: 1.5 turns, peak rate
    p, q, v, w = traj(t_mid)
    assert p[2] - p0[2] == pytest.approx(-1.5 * 0.005)
    assert q == pytest.approx(quat_about_z(-1.5 * 2 * math.pi), abs=1e-12)
    assert w[2] == pytest.approx(-1.875 * math.pi)            # min-jerk peak = 1.875 x mean
    end = traj(traj.duration + 1.0)
    assert end[0] == pytest.approx([0, 0, -0.002 - 3 * 0.005]) and not end[2].any()
    assert traj.duration == pytest.approx(t_turn0 + 6.0)
    ts = np.arange(0.0, traj.duration, 1e-3)
    V = np.array([traj(t)[2] for t in ts])
    assert np.linalg.norm(np.diff(V, axis=0), axis=1).max() < 1e-3   # no velocity steps
    assert max(np.linalg.norm(traj(t)[0]) for t in ts[::10]) < 0.1


def test_insert_goes_down_the_axis():
    traj = insert(depth=0.06, speed=0.01)
    p, _, v, _ = traj(1.5 + 3.0)                              # half way down, peak speed
    assert p == pytest.approx([0, 0, -0.03]) and v == pytest.approx([0, 0, -0.01875])
    assert traj(100.0)[0] == pytest.approx([0, 0, -0.06])


def test_scripted_device_plays_a_function_and_records_forces():
    dev = ScriptedDevice(lambda t: ([0.01 * math.sin(t), 0.0, 0.0], quat_about_z(2.0 * t)))
    dev.open()
    s = dev.read(10.0)                                  # script time starts at the first read
    assert s.p == pytest.approx([0, 0, 0]) and s.v == pytest.approx([0.01, 0, 0], rel=1e-9)
    s = dev.read(10.5)
    assert s.p[0] == pytest.approx(0.01 * math.sin(0.5))
    assert s.w == pytest.approx([0, 0, 2.0], rel=1e-8)
    dev.write_force(np.array([100.0, 0, 0, 0, 0, 0]))
    dev.write_force(np.array([1.0, 0, 0, 0, 0, 0]))
    fa = dev.forces_array()
    assert fa.shape == (2, 7) and fa[0, 0] == 0.5
    assert fa[0, 1] == dev.capability.max_force and fa[1, 1] == 1.0
    assert not dev.finished
    traj = Trajectory("short", 0.1, lambda t: (np.zeros(3), np.array([1.0, 0, 0, 0]),
                                               np.ones(3), np.zeros(3)))
    dev2 = ScriptedDevice(traj, t0=0.0)
    dev2.open()
    assert dev2.read(0.05).v.tolist() == [1, 1, 1] and not dev2.finished
    assert not dev2.read(0.2).v.any() and dev2.finished


def test_shared_sample_device_round_trip_without_waiting():
    from devices.base import DeviceSample, open_device
    from devices.shared import SAMPLE_SIZE, pack_sample
    from sim_core.io.shm import SeqSlot
    slot = SeqSlot(SAMPLE_SIZE)
    s = DeviceSample(0.5, np.array([0.01, 0.02, 0.03]), np.array([1.0, 0, 0, 0]), np.zeros(3),
                     np.zeros(3), 1)
    slot.write(pack_sample(s))
    dev = open_device(f"shared:{slot.name}")
    r = dev.read(1.0)
    assert np.array_equal(r.p, s.p) and r.buttons == 1 and r.t == 1.0
    slot._seq[0] += 1                        # the writer is mid-write: keep the last sample
    assert np.array_equal(dev.read(1.001).p, s.p)
    slot._seq[0] += 1
    dev.close()
    slot.close(unlink=True)


def test_every_driver_is_found_when_one_was_imported_alone():
    """A driver module imported on its own (a test importing ``devices.keyboard``) registers
    only itself; the registry must still find the others (it once took a non-empty table as
    complete, and `scripted:insert` was refused, depending on the order tests were collected)."""
    code = ("import devices.keyboard\nfrom devices.base import DRIVERS, spec_problem\n"
            "assert set(DRIVERS) == {'keyboard'}, DRIVERS\n"
            "print(repr(spec_problem('scripted:insert')), sorted(DRIVERS))")
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("''") and "scripted" in r.stdout and "serial" in r.stdout, r.stdout
