"""Neural SDF: run-time inference against torch, the hand-written gradient against finite
differences, the feature map's Jacobian, weight-file checks, and a short seeded training
that must beat its own starting point and repeat bit for bit."""
import numpy as np
import pytest

from sim_core.collision import neural_sdf as N
from sim_core.geometry import profiles

torch = pytest.importorskip("torch")

# float32 layers (BLAS) against torch's float64 forward: the pre-tanh value of these random
# (larger than trained) weights carries ~1e-7 relative rounding -- measured up to 7e-9 m.
# 2e-8 m is float tolerance, 1/500 of the tightest accuracy bound (10 um)
FLOAT_TOL_M = 2e-8
# float32 back-propagation: the unit normal agrees to ~3e-5 (0.002 deg) with these weights
NORMAL_TOL = 1e-4
# central differences of the float32 distance: 1e-6 m steps keep rounding (~2e-10 m) at
# ~0.01 deg; a ReLU switching inside a step spoils a few points, so compare the median
FD_STEP = 1e-6
FD_MEDIAN_DEG = 0.05


def _random_net(kind, params, seed=0):
    """A torch MLP with the seed's shape and random weights, and the same as a NeuralSDF."""
    g = torch.Generator().manual_seed(seed)
    k = N.KINDS[kind]
    layers = [torch.nn.Linear(k, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
              torch.nn.Linear(64, 1)]
    net = torch.nn.Sequential(*layers).double()
    with torch.no_grad():
        for m in net:
            if isinstance(m, torch.nn.Linear):
                m.weight.copy_(torch.randn(m.weight.shape, generator=g, dtype=torch.float64) * 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g, dtype=torch.float64) * 0.1)
    lin = [m for m in net if isinstance(m, torch.nn.Linear)]
    # float32 weights on both sides, so only the arithmetic differs
    W = [(m.weight.detach().float().double().numpy(), m.bias.detach().float().double().numpy()) for m in lin]
    with torch.no_grad():
        for m, (w, b) in zip(lin, W):
            m.weight.copy_(torch.from_numpy(w))
            m.bias.copy_(torch.from_numpy(b))
    ns = N.NeuralSDF(part="test", kind=kind, params=np.asarray(params, float), scale=4e-3,
                     W1=W[0][0], b1=W[0][1], W2=W[1][0], b2=W[1][1], W3=W[2][0], b3=W[2][1],
                     bounds=(0.03, 0.0, 0.1))
    return net, ns


PARAMS = {"axial": [0.015, 0.015, 0.05, 0.05], "helical": [0.015, 0.015, 0.05, 0.05, 5e-3 / (2 * np.pi), 5e-3]}
PARAMS["thread"] = PARAMS["helical"] + [0.03, 0.08, 0.01]
PARAMS["bore"] = PARAMS["axial"] + [0.03, 0.08, 0.01]
PARAMS["prism"] = [0.015, 0.015, 0.05, 0.05]
KIND_NAMES = ["axial", "bore", "helical", "thread", "prism"]


def _points(n=2000, seed=1):
    rng = np.random.default_rng(seed)
    r = 0.005 + 0.025 * rng.random(n)
    th = rng.random(n) * 2 * np.pi
    return np.column_stack([r * np.cos(th), r * np.sin(th), 0.1 * rng.random(n)])


def _torch_query(net, kind, params, p):
    pt = torch.from_numpy(p).requires_grad_(True)
    x, y, z = pt[:, 0], pt[:, 1], pt[:, 2]
    r = torch.abs(x) if kind == "prism" else torch.sqrt(x * x + y * y)
    f = [(r - params[0]) / params[1], (z - params[2]) / params[3]]
    if kind == "bore":
        f = [f[0], torch.clamp(z - params[4], max=0.0) / params[6], torch.clamp(z - params[5], min=0.0) / params[6]]
    if kind in ("helical", "thread"):
        zeta = z - params[4] * torch.atan2(y, x)
        psi = 2 * np.pi * zeta / params[5]
        if kind == "thread":
            w = torch.remainder(zeta + 0.5 * params[5], params[5]) - 0.5 * params[5]
            f[1] = (torch.abs(w) - 0.25 * params[5]) / (0.25 * params[5])
            f += [torch.clamp(z - params[6], max=0.0) / params[8], torch.clamp(z - params[7], min=0.0) / params[8]]
        else:
            f += [torch.cos(psi), torch.sin(psi)]
    d = 4e-3 * torch.tanh(net(torch.stack(f, dim=1))[:, 0])
    (g,) = torch.autograd.grad(d.sum(), pt)
    return d.detach().numpy(), (g / g.norm(dim=1, keepdim=True)).numpy()


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_inference_matches_torch_with_autograd(kind):
    """Distance and normal of the NumPy/numba inference against torch (autograd normal,
    features written independently in torch)."""
    net, ns = _random_net(kind, PARAMS[kind])
    p = _points()
    d_ref, g_ref = _torch_query(net, kind, PARAMS[kind], p)
    d, g = ns.query(p)
    assert np.abs(d - d_ref).max() < FLOAT_TOL_M
    assert np.abs(g - g_ref).max() < NORMAL_TOL


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_feature_jacobian_matches_central_differences(kind):
    p = _points(300)
    _, J = N.features(kind, PARAMS[kind], p, jacobian=True)
    h = 1e-7
    for j in range(3):
        e = np.zeros(3)
        e[j] = h
        Fp, _ = N.features(kind, PARAMS[kind], p + e)
        Fm, _ = N.features(kind, PARAMS[kind], p - e)
        fd = (Fp - Fm) / (2 * h)
        assert np.abs(fd - J[:, :, j]).max() < 1e-5 * max(1.0, np.abs(J).max())


def test_normal_is_the_network_gradient_not_a_difference_quotient():
    _, ns = _random_net("helical", PARAMS["helical"], seed=3)
    p = _points(500, seed=4)
    d, g = ns.query(p)
    keep = np.abs(d) < 0.9 * ns.scale          # where tanh has not saturated in float32
    p, g = p[keep], g[keep]
    assert len(p) > 100
    fd = np.zeros_like(p)
    for j in range(3):
        e = np.zeros(3)
        e[j] = FD_STEP
        fd[:, j] = (ns.distance(p + e) - ns.distance(p - e)) / (2 * FD_STEP)
    fd /= np.linalg.norm(fd, axis=1, keepdims=True)
    ang = np.degrees(np.arccos(np.clip(np.sum(fd * g, axis=1), -1, 1)))
    assert np.median(ang) < FD_MEDIAN_DEG


def test_band_limits_the_normals_to_contacts():
    _, ns = _random_net("axial", PARAMS["axial"])
    p = _points(400)
    d, g = ns.query(p, band=0.0)
    assert np.all(np.isfinite(g[d < 0.0])) and np.all(np.isnan(g[d >= 0.0]))


# --- weight files ------------------------------------------------------------------------------

def test_round_trip_and_geometry_digest(tmp_path):
    _, ns = _random_net("helical", PARAMS["helical"])
    spec = profiles.all_parts()["bolt_M48x5"]
    ns.digest = N.spec_digest(spec)
    f = tmp_path / "w.npz"
    ns.save(f)
    back = N.load(f, spec=spec, part="test")
    p = _points(50)
    assert np.array_equal(back.distance(p), ns.distance(p))
    other = profiles.all_parts()["bolt_d52_p5"]
    with pytest.raises(N.WeightsError, match=r"w\.npz: field 'digest'"):
        N.load(f, spec=other)
    with pytest.raises(N.WeightsError, match=r"field 'part' is 'test'"):
        N.load(f, part="hole")


@pytest.mark.parametrize("damage,match", [
    (lambda a: a.pop("W2"), r"field 'W2' is missing"),
    (lambda a: a.update(W2=a["W2"][:, :10]), r"field 'W2' has shape \(64, 10\), expected \(64, 64\)"),
    (lambda a: a.update(b1=np.full(64, np.nan, np.float32)), r"field 'b1' holds NaN"),
    (lambda a: a.update(kind=np.array("cubic")), r"field 'kind' is 'cubic'"),
    (lambda a: a.update(format=np.array("other-1")), r"field 'format'"),
    (lambda a: a.update(params=np.zeros(3)), r"field 'params' has shape"),
])
def test_mismatched_weights_give_one_line_errors(tmp_path, damage, match):
    _, ns = _random_net("axial", PARAMS["axial"])
    a = ns.arrays()
    damage(a)
    f = tmp_path / "bad.npz"
    with open(f, "wb") as fh:
        np.savez(fh, **a)
    with pytest.raises(N.WeightsError, match=match) as e:
        N.load(f)
    assert "\n" not in str(e.value) and "bad.npz" in str(e.value)


def test_corrupt_and_missing_files_give_one_line_errors(tmp_path):
    f = tmp_path / "cut.npz"
    _, ns = _random_net("axial", PARAMS["axial"])
    ns.save(f)
    f.write_bytes(f.read_bytes()[:300])
    with pytest.raises(N.WeightsError, match=r"cut\.npz: not a readable \.npz") as e:
        N.load(f)
    assert "\n" not in str(e.value)
    with pytest.raises(N.WeightsError, match=r"no such weight file"):
        N.load(tmp_path / "absent.npz")


# --- training --------------------------------------------------------------------------------

def test_short_training_is_seeded_and_learns_the_hole():
    """400 steps from geometry alone cut the error on fresh band points to under half
    of the untrained network's, and the same seed gives the same weights."""
    from sim_core.geometry.sdf import exact_sdf
    from sim_core.learning import train_sdf as T
    s = T.TrainSettings(steps=400, batch=2048, seed=5, pool=100_000)
    a = T.train("hole", s, progress=False)
    b = T.train("hole", s, progress=False)
    assert np.array_equal(a.W2, b.W2)
    exact = exact_sdf(profiles.all_parts()["hole"])
    start = T.accuracy(T.train("hole", T.TrainSettings(steps=0, seed=5), progress=False), exact, n=5000)
    acc = T.accuracy(a, exact, n=5000)
    assert acc["rms_um"] < 0.5 * start["rms_um"]


@pytest.mark.parametrize("part,match", [("nut_M48x5", "is a moving part"), ("washer", "unknown part 'washer'")])
def test_train_cli_refuses_parts_without_a_static_sdf(part, match, capsys, tmp_path):
    from app.cli import main
    try:
        code = main(["train", "sdf", "--part", part, "--steps", "1", "--out", str(tmp_path)])
    except SystemExit as e:               # an unknown part is an option error (the parser's exit)
        code = e.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert match in err and "\n" not in err


def test_train_cli_writes_weights_report_and_histogram(tmp_path, capsys):
    from app.cli import main
    from sim_core.io.png import read_png
    assert main(["train", "sdf", "--part", "hole", "--steps", "30", "--batch", "1024", "--pool", "20000",
                 "--eval-points", "2000", "--out", str(tmp_path), "--quiet"]) == 0
    net = N.load(tmp_path / "hole.npz", spec=profiles.all_parts()["hole"], part="hole")
    assert net.kind == "bore"
    import json
    rep = json.loads((tmp_path / "hole.json").read_text())
    assert rep["points"] == 2000 and rep["rms_um"] > 0 and rep["targets"]["rms_um"] == 3.0
    img = read_png(tmp_path / "hole_errors.png")
    assert img.shape[2] == 3 and (img < 250).any()          # bars were drawn
    assert "hole" in capsys.readouterr().out


def test_train_cli_trains_a_snap_plug(tmp_path):
    """A snap fit's plug (issue 27) trains like a static part: kind prism, (|x|, z) over the
    profile, loadable against that plug's geometry and refused for another plug's."""
    from app.cli import main
    from sim_core.scenarios import snap_fit
    assert main(["train", "sdf", "--part", "plug_snap_fit_lan", "--steps", "30", "--batch", "1024", "--pool",
                 "20000", "--eval-points", "2000", "--out", str(tmp_path), "--quiet"]) == 0
    plugs = snap_fit.plugs()
    net = N.load(tmp_path / "plug_snap_fit_lan.npz", spec=plugs["plug_snap_fit_lan"], part="plug_snap_fit_lan")
    assert net.kind == "prism" and net.bounds[0] == plugs["plug_snap_fit_lan"].head_half
    with pytest.raises(N.WeightsError, match="digest"):
        N.load(tmp_path / "plug_snap_fit_lan.npz", spec=plugs["plug_snap_fit"], part="plug_snap_fit_lan")


def test_torch_backend_gives_the_same_contacts():
    _, ns = _random_net("helical", PARAMS["helical"], seed=7)
    tb = N.TorchBackend(ns, device="cpu")
    p = _points(3000, seed=8)
    d0, g0 = ns.query(p, band=0.0)
    d1, g1 = tb.query(p, band=0.0)
    assert np.abs(d1 - d0).max() < FLOAT_TOL_M
    assert np.array_equal(np.isnan(g0), np.isnan(g1))
    ok = ~np.isnan(g0[:, 0])
    assert np.abs(g1[ok] - g0[ok]).max() < NORMAL_TOL


# --- the shipped weights -------------------------------------------------------------------

def _static_parts():
    """The parts that ship a network: the static ones and the snap fits' plugs."""
    from sim_core.learning import train_sdf
    return train_sdf.sdf_parts(train_sdf.known_parts())


def test_every_static_part_ships_weights_for_its_current_geometry():
    from sim_core.paths import assets_dir
    for name, spec in _static_parts().items():
        N.load(assets_dir() / "sdf" / f"{name}.npz", spec=spec, part=name)   # raises if stale


# The accuracy report (assets/sdf/PART.json) was taken on 100,000 points; these tests take
# 20,000 others (another seed), whose RMS and 99th percentiles scatter by a few per cent:
# 25 % is a regression bound, not noise.
REPORT_SLACK = 1.25


def _measure(name, n=20_000, seed=777):
    from sim_core.geometry.sdf import exact_sdf
    from sim_core.learning import train_sdf as T
    from sim_core.paths import assets_dir
    spec = _static_parts()[name]
    net = N.load(assets_dir() / "sdf" / f"{name}.npz", spec=spec, part=name)
    return T.accuracy(net, exact_sdf(spec), n=n, seed=seed)


def _report(name):
    import json

    from sim_core.paths import assets_dir
    return json.loads((assets_dir() / "sdf" / f"{name}.json").read_text())


@pytest.mark.parametrize("name", ["hole", "bolt_M48x5", "plug_snap_fit"])
def test_shipped_weights_keep_their_reported_accuracy(name):
    acc, rep = _measure(name), _report(name)
    assert acc["rms_um"] <= REPORT_SLACK * rep["rms_um"]
    assert acc["p99_um"] <= REPORT_SLACK * rep["p99_um"]
    assert acc["normal_p99_deg"] <= REPORT_SLACK * rep["normal_p99_deg"]


# issue 4: the neural normal's 99th-percentile angle from the exact normal, in the 1 mm band
NORMAL_P99_BOUND_DEG = 2.0
# Parts whose shipped weights do not reach that bound yet, with the p99 measured when they
# were trained (deg, assets/sdf/PART.json).  The test fails for any other part beyond the
# bound, and (strict xfail) for any of these the day it starts to meet it.
KNOWN_SHORT_DEG = {
    'bolt_M48x5': 30.1,
    'bolt_d39_p4': 30.0,
    'bolt_d42_p4.5': 31.9,
    'bolt_d45_p4.5': 26.9,
    'bolt_d47.2_p5': 31.2,
    'bolt_d47.6_p5': 28.6,
    'bolt_d48.5_p5': 28.8,
    'bolt_d49_p5': 31.3,
    'bolt_d52_p5': 35.8,
    'bolt_d56_p5.5': 37.4,
    'bolt_d60_p5.5': 32.4,
    'hole': 8.9,
    'plug_snap_fit': 10.5,          # issue 27: the head's corners (docs/snap.md "The plug's network")
    'plug_snap_fit_lan': 13.2,
    'plug_snap_fit_cap': 14.2,
}


@pytest.mark.parametrize("name", sorted(_static_parts()))
def test_neural_normal_agrees_with_the_exact_normal(name, request):
    if name in KNOWN_SHORT_DEG:
        request.applymarker(pytest.mark.xfail(strict=True, reason=(
            f"issue 4 bound not reached: normal p99 {KNOWN_SHORT_DEG[name]:.1f} deg > "
            f"{NORMAL_P99_BOUND_DEG} deg (ReLU pieces at the profile's corners)")))
    assert _measure(name, n=20_000)["normal_p99_deg"] <= NORMAL_P99_BOUND_DEG
