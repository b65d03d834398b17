"""The snap fits' prong meshes cached in assets/fem/ by ``tightsim assets build`` (issue 27,
deliver 1): the shipped files are the meshes the specs build, bit for bit; the scenario reads
them; a damaged or foreign file is a one-line error naming the file and the field."""
import numpy as np
import pytest

from sim_core import config as config_mod
from sim_core.geometry import connector
from sim_core.paths import assets_dir, scenario_path
from sim_core.scenarios import snap_fit


def _shipped_specs():
    return [snap_fit.prong_spec(config_mod.load(scenario_path(n))) for n in snap_fit.SHIPPED]


@pytest.mark.parametrize("level", sorted(connector.LEVELS))
def test_the_shipped_cache_is_what_the_specs_build(level):
    for spec in _shipped_specs():
        path = connector.prong_cache_path(assets_dir() / "fem", spec, level)
        assert path.exists(), f"{path}: run `tightsim assets build`"
        cached, built = connector.cached_prong_mesh(spec, level), connector.prong_mesh(spec, *connector.LEVELS[level])
        assert np.array_equal(cached.p, built.p) and np.array_equal(cached.t, built.t)


def test_the_scenario_reads_the_cache(monkeypatch):
    """With the mesher refused, the shipped prong still builds: from its cached file."""
    spec = _shipped_specs()[0]

    def refuse(*a, **k):
        raise AssertionError("meshed again")
    monkeypatch.setattr(connector, "prong_mesh", refuse)
    mesh = connector.cached_prong_mesh(spec, "coarse")
    assert mesh.t.shape[0] == 4 and mesh.p.shape[0] == 3


def test_a_prong_without_a_cached_file_is_meshed(tmp_path):
    spec = connector.ProngSpec(length=13e-3)
    assert not connector.prong_cache_path(tmp_path, spec, "coarse").exists()
    got, want = connector.cached_prong_mesh(spec, "coarse", tmp_path), connector.prong_mesh(spec, 1, 1, 12)
    assert np.array_equal(got.p, want.p)


def _damage(path, how):
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    if how == "garbage":
        path.write_bytes(b"not a zip at all")
        return
    if how == "no t":
        del data["t"]
    elif how == "t out of range":
        data["t"] = data["t"].copy()
        data["t"][0, 0] = data["p"].shape[1]
    elif how == "p not finite":
        data["p"] = data["p"].copy()
        data["p"][1, 3] = np.nan
    elif how == "another prong":
        data["spec"] = np.array(str(data["spec"]).replace("0.012", "0.013"))
    elif how == "format text":
        data["format"] = np.array("one")
    elif how == "format float":
        data["format"] = np.float64(1.9)
    elif how == "format array":
        data["format"] = np.arange(40)
    elif how == "other cells":
        data["cells"] = np.array([1, 1, 13])
    np.savez(path, **data)


@pytest.mark.parametrize("how, field", [("garbage", "cannot read"), ("no t", "field 't' missing"),
                                        ("t out of range", "field 't'"), ("p not finite", "field 'p'"),
                                        ("another prong", "field 'spec'"), ("format text", "field 'format'"),
                                        ("format float", "field 'format'"), ("format array", "field 'format'"),
                                        ("other cells", "field 'cells'")])
def test_a_bad_cache_file_is_one_line_naming_the_file_and_field(tmp_path, how, field):
    spec = _shipped_specs()[0]
    path = connector.write_prong_mesh(tmp_path, spec, "coarse")
    _damage(path, how)
    with pytest.raises(ValueError) as e:
        connector.cached_prong_mesh(spec, "coarse", tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(path)) and field in msg, msg
