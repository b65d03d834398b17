"""The snap fit's neural detection (issue 27 item 5, seed 003's Model 2 onwards): the plug's exact
signed distance in 3-D (what training labels with), the trained network against it on the shipped
connector's insertion, and a plug without a network as a one-line error."""
import functools

import numpy as np
import pytest

from sim_core import config as config_mod
from sim_core.geometry import connector
from sim_core.geometry.sdf import exact_sdf
from sim_core.paths import scenario_path

# The network against the exact profile over the whole insertion.  The insertion sticks and slips
# (docs/snap.md), so its click and peak move with any small change: the bound is the exact
# model's own spread under a 1 % change of the friction or a 10 um higher start (``SPREAD``),
# widened by SPREAD_SLACK of the base figure (measured spreads: the plug's depth at the click
# 3.82-3.94 / 4.09-4.15 / 2.69-2.75 mm, snap_fit / lan / cap; the peak 14.4-17.1 / 1.48-1.49 /
# 10.1-11.5 N).  The click's depth, not its time: the time also carries the admittance's lag
# behind the set point, i.e. the whole force history (cap: the same depth, 18 ms later).
SPREAD = (("contact", "friction", 1.01), ("contact", "friction", 0.99), ("start", "position", 1e-5))
SPREAD_SLACK = 0.03
SEATED_TOL = 0.02            # of the exact run's seated force: the same push on the same seat
PENETRATION_BOUND = 30e-6    # m: the network's own deepest contact (its max error is 8-16 um)
# The insertion's work up to the click with the network, against the exact profile's: the
# network's normals at the head's corners take a share of it away (docs/snap.md "The plug's
# network": measured -11 % snap_fit, -35 % lan, -8 % cap).  A regression bound, not the
# target: the target -- work and peak within the exact model's own spread -- is the test after
# it, a strict xfail for the connectors that miss it (WORK_SHORT).
WORK_REGRESSION = 0.45
CONNECTORS = [pytest.param("snap_fit"), pytest.param("snap_fit_lan", marks=pytest.mark.slow),
              pytest.param("snap_fit_cap", marks=pytest.mark.slow)]
WORK_SHORT = {"snap_fit": "8.76 mJ against 9.20-10.19 mJ, peak 13.5 N against 14.4-17.1 N",
              "snap_fit_lan": "0.62 mJ against 0.95-0.96 mJ, peak 1.13 N against 1.48-1.49 N",
              "snap_fit_cap": "5.37 mJ against 5.72-5.85 mJ, peak 10.1 N against 11.0-11.5 N"}


def test_plug_sdf_is_the_profiles_distance_in_3d():
    """``PlugSDF`` (the train-time labels) is ``plug_sdf`` of (x, z) at any y, its gradient has
    no y part, and its closest points lie on the surface (outside: exactly)."""
    spec = connector.PlugSpec()
    rng = np.random.default_rng(3)
    p = rng.uniform([-6e-3, -5e-3, -2e-3], [6e-3, 5e-3, 10e-3], (4000, 3))
    d, g, c = exact_sdf(spec).query_closest(p)
    d2, g2 = connector.plug_sdf(spec, p[:, [0, 2]])
    assert np.array_equal(d, d2) and np.array_equal(g[:, [0, 2]], g2) and not g[:, 1].any()
    out = d > 0.0
    assert np.abs(exact_sdf(spec).query(c[out])[0]).max() < 1e-15


@functools.cache
def _run(name: str, detector: str, change=None):
    from sim_core.scenarios import snap_fit, snap_run
    cfg = config_mod.load(scenario_path(name))
    cfg["contact"]["detector"] = detector
    if change is not None:
        table, key, v = change
        if key == "position":
            cfg[table][key] = [cfg[table][key][0], cfg[table][key][1], cfg[table][key][2] + v]
        else:
            cfg[table][key] *= v
    res, tr, wall = snap_run.simulate(cfg)
    m = snap_fit.socket_of(res.model).snap
    a = tr.arrays()
    s = snap_fit.summarize(m, tr, wall)
    k = snap_fit.click_step(a)
    depth = a["z"][0] - a["z"]
    s["work_J"] = float(np.sum(a["plug_force"][1:k + 1, 2] * np.diff(depth[:k + 1])))   # the push's, to the click
    s["click_depth_m"] = float(depth[k])
    return m, s, a


def _spread(name):
    return [_run(name, "exact")[1]] + [_run(name, "exact", c)[1] for c in SPREAD]


def _within_spread(got, runs, key):
    vals = [r[key] for r in runs]
    slack = SPREAD_SLACK * abs(runs[0][key])
    return min(vals) - slack <= got <= max(vals) + slack


@pytest.mark.parametrize("name", CONNECTORS)
def test_the_network_snaps_like_the_exact_profile(name):
    """Each shipped connector through the core with its plug's network (seed 003's Model 2 on)
    and with the exact profile: both click and seat; the network's click time and peak force lie
    within the exact model's own spread (``SPREAD``), the seated force agrees, and its deepest
    contact stays within the network's error."""
    m_n, neural, a = _run(name, "neural")
    m_e, exact, _ = _run(name, "exact")
    assert m_n.sdf is not None and m_e.sdf is None
    assert neural["clicked"] and neural["seated"] and exact["clicked"] and exact["seated"]
    runs = _spread(name)
    assert _within_spread(neural["click_depth_m"], runs, "click_depth_m"), (neural, runs)
    assert abs(neural["final_plug_force_N"] - exact["final_plug_force_N"]) <= SEATED_TOL * exact["final_plug_force_N"]
    assert a["penetration"].max() <= PENETRATION_BOUND
    assert abs(neural["work_J"] - exact["work_J"]) <= WORK_REGRESSION * exact["work_J"]


@pytest.mark.parametrize("name", CONNECTORS)
def test_the_networks_insertion_work_and_peak_within_the_exact_spread(name, request):
    """The target: the network's insertion work and peak force within the exact model's spread."""
    if name in WORK_SHORT:
        request.applymarker(pytest.mark.xfail(strict=True, reason=(
            f"issue 27: the network's normals at the plug head's corners: {WORK_SHORT[name]} "
            f"(docs/snap.md \"The plug's network\")")))
    neural, runs = _run(name, "neural")[1], _spread(name)
    assert _within_spread(neural["work_J"], runs, "work_J") and \
        _within_spread(neural["peak_insertion_force_N"], runs, "peak_insertion_force_N")


def test_a_plug_without_a_network_is_one_line_naming_the_key():
    """Another plug with ``detector = "neural"``: no network was trained for it (the weights' digest
    is the geometry's): a one-line ``ConfigError`` naming contact.detector, and the exact
    profile still runs."""
    from sim_core.scenarios import snap_fit
    cfg = config_mod.load(scenario_path("snap_fit"))
    cfg["plug"]["head_half"] = 0.0032
    cfg["contact"]["detector"] = "neural"
    with pytest.raises(config_mod.ConfigError, match="contact.detector") as e:
        snap_fit.build(cfg, "my_snap.toml")
    assert "my_snap.toml" in str(e.value) and "\n" not in str(e.value)
    cfg["contact"]["detector"] = "exact"
    assert snap_fit.build(cfg, "my_snap.toml").sdf is None
