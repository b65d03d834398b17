"""Energy into a simulated hand: the coupling of an older commit against today's, on the 200
seeded adversarial runs of tests/haptics/test_zoh_passivity.py.

    git show 2420adc:haptics/coupling.py > /tmp/old_coupling.py
    python bench/hand_passivity.py /tmp/old_coupling.py [RUNS]

For each kind of run: how many runs delivered more energy to the hand than W* (the limits'
work over the largest one-tick travel), and the worst excess (J).  The old coupling runs
through its Python class tick by tick (slow: ~1 min for 200 runs)."""
import importlib.util
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from haptics import batch  # noqa: E402
from haptics.coupling import DeviceLimits  # noqa: E402
from haptics.proxy import Proxy  # noqa: E402
from sim_core.math.so3 import exp_so3, matrix_to_quat  # noqa: E402


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod           # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


tz = _load("zoh_cases", ROOT / "tests" / "haptics" / "test_zoh_passivity.py")
T, NS = tz.T, tz.SUBSTEPS
LIM = DeviceLimits()

def _hand_tick(hand, x, xd, phi, phid, sx, sphi, k, f, ta):
    """The hand over tick k under the held force f (3,) and torque ta about its axis (RK4,
    the same substeps as haptics.batch)."""
    h = T / NS
    args = (f, ta, hand.mass, hand.k, hand.b, hand.inertia, hand.k_rot, hand.b_rot)
    for i in range(NS):
        s0, s1 = sx[k * NS + i], sx[k * NS + i + 1]
        q0, q1 = sphi[k * NS + i], sphi[k * NS + i + 1]
        sm, qm = 0.5 * (s0 + s1), 0.5 * (q0 + q1)
        a1, l1 = batch._hand_acc(x, xd, phi, phid, s0, q0, *args)
        a2, l2 = batch._hand_acc(x + 0.5 * h * xd, xd + 0.5 * h * a1, phi + 0.5 * h * phid,
                                 phid + 0.5 * h * l1, sm, qm, *args)
        a3, l3 = batch._hand_acc(x + 0.5 * h * (xd + 0.5 * h * a1), xd + 0.5 * h * a2,
                                 phi + 0.5 * h * (phid + 0.5 * h * l1), phid + 0.5 * h * l2, sm, qm, *args)
        a4, l4 = batch._hand_acc(x + h * (xd + 0.5 * h * a2), xd + h * a3, phi + h * (phid + 0.5 * h * l2),
                                 phid + h * l3, s1, q1, *args)
        x, xd = x + h * xd + (h * h / 6) * (a1 + a2 + a3), xd + (h / 6) * (a1 + 2 * a2 + 2 * a3 + a4)
        phi, phid = phi + h * phid + (h * h / 6) * (l1 + l2 + l3), phid + (h / 6) * (l1 + 2 * l2 + 2 * l3 + l4)
    return x, xd, phi, phid


def old_run(oc, seed):
    """(kind, worst excess over W* J, the old observer's final total J) of one run."""
    hand, sx, sphi, segments, backward, kind = tz.hand_case(seed)
    cp = oc.Coupling(oc.CouplingGains(), oc.DeviceLimits(), startup_ramp=0.0)
    pr = Proxy(tz.MASS, tz.INERTIA, tz.P0, np.eye(3))
    x, xd, phi, phid = np.zeros(3), np.zeros(3), 0.0, 0.0
    xp, phip = x.copy(), 0.0
    a = hand.axis
    total = worst = cap = 0.0
    k = 0
    for n, lc in segments:
        for _ in range(n):
            v = (x - xp) / T if backward else xd.copy()
            w = a * ((phi - phip) / T) if backward else a * phid
            f, F, B = cp.step(x, matrix_to_quat(exp_so3(a * phi)), v, w, pr, pr.contact_wrench, T)
            pr.step(F, B, lc, T)
            x0, phi0 = x.copy(), phi
            ta = a @ f[3:]
            x, xd, phi, phid = _hand_tick(hand, x, xd, phi, phid, sx, sphi, k, f[:3], ta)
            total += f[:3] @ (x - x0) + ta * (phi - phi0)
            cap = max(cap, LIM.max_force * np.linalg.norm(x - x0) + LIM.max_torque * abs(phi - phi0))
            worst = max(worst, total - cap)
            xp, phip = x0, phi0
            k += 1
    return kind, worst, cp.observer_energy


if __name__ == "__main__":
    oc = _load("old_coupling", sys.argv[1])
    seeds = range(int(sys.argv[2]) if len(sys.argv) > 2 else tz.RUNS)
    old = [old_run(oc, s) for s in seeds]
    new = [tz.run_case(s)[0] for s in seeds]
    for kind in tz.KINDS:
        o = [w for (kd, w, _) in old if kd == kind]
        nn = [float((r.delivered[:-1] - r.work_cap[1:]).max()) for s, r in zip(seeds, new) if tz.KINDS[s % 5] == kind]
        print(f"{kind:10s} old: runs beyond W* {sum(v > 0 for v in o)}/{len(o)}, worst excess {max(o):.4f} J | "
              f"new: {sum(v > 0 for v in nn)}/{len(nn)}, worst {max(nn):.2e} J")
    print(f"the old observer's verdict: passive in {sum(e >= -1e-9 for *_, e in old)}/{len(old)} runs")
