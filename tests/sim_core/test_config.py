"""Scenario configs: the shipped ones validate; malformed ones give one line naming file and key."""
import subprocess
import sys
from pathlib import Path

import pytest

from sim_core import config

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())   # the checkout
SHIPPED = sorted((ROOT / "config").glob("*.toml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_configs_validate(path):
    cfg = config.load(path)
    assert cfg["scenario"]["dt"] > 0
    assert len(cfg["waypoints"]) >= 2


def _write(tmp_path, text):
    good = (ROOT / "config" / "bolting.toml").read_text()
    p = tmp_path / "bad.toml"
    p.write_text(text(good))
    return p


BAD = {
    "unknown key": (lambda g: g.replace("friction = 0.15", "friction = 0.15\nfricton = 0.2"),
                    "contact.fricton", "unknown key"),
    "unknown section": (lambda g: g + "\n[extra]\nx = 1\n", "extra", "unknown key"),
    "wrong type": (lambda g: g.replace("clusters = 12", 'clusters = "twelve"'),
                   "contact.clusters", "expected an integer"),
    "negative size": (lambda g: g.replace("band = 0.0002", "band = -0.0002"),
                      "contact.band", "must be >= 0"),
    "negative density": (lambda g: g.replace("density = 7850.0", "density = -1.0"),
                         "parts.density", "must be >= 100"),
    "short vector": (lambda g: g.replace("stiffness_linear = [2000.0, 2000.0, 400.0]",
                                         "stiffness_linear = [2000.0, 400.0]"),
                     "drive.stiffness_linear", "list of 3 numbers"),
    "missing key": (lambda g: g.replace('task = "bolting"\n', ""), "scenario.task", "required"),
    "bad enum": (lambda g: g.replace('task = "bolting"', 'task = "welding"'), "scenario.task", "one of"),
    "time order": (lambda g: g.replace("t = 5.6", "t = 0.3"), "waypoints[2].t", "times must increase"),
    "not toml": (lambda g: g + "\n[[[", "", "not valid TOML"),
    "unknown law": (lambda g: g.replace("friction = 0.15", 'friction = 0.15\nlaw = "spring"'),
                    "contact.law", "unknown contact law"),
    "material out of range": (lambda g: g + "\n[materials.oiled]\nfriction = -0.1\n",
                              "materials.oiled.friction", "must be >= 0"),
    "material unknown key": (lambda g: g + "\n[materials.oiled]\nstiffness = 1e5\n",
                             "materials.oiled.stiffness", "unknown key"),
    "material unknown law": (lambda g: g + '\n[materials.oiled]\nlaw = "spring"\n',
                             "materials.oiled.law", "unknown contact law"),
    # seed 001's compliant law: its stiffness and restitution checked where they are read
    "compliant negative stiffness": (lambda g: g + '\n[materials.soft]\nlaw = "compliant"\nstiffness = -1e6\n'
                                     'restitution = 0.5\n', "materials.soft.stiffness", "must be > 0"),
    "compliant restitution zero": (lambda g: g + '\n[materials.soft]\nlaw = "compliant"\nstiffness = 1e6\n'
                                   'restitution = 0.0\n', "materials.soft.restitution", "must be > 0"),
    "compliant restitution above one": (lambda g: g + '\n[materials.soft]\nlaw = "compliant"\nstiffness = 1e6\n'
                                        'restitution = 1.5\n', "materials.soft.restitution", "must be <= 1"),
    "compliant stiffness missing": (lambda g: g + '\n[materials.soft]\nlaw = "compliant"\nrestitution = 0.5\n',
                                    "materials.soft.stiffness", "required key missing"),
    "compliant model unknown": (lambda g: g + '\n[materials.soft]\nlaw = "compliant"\nstiffness = 1e6\n'
                                'restitution = 0.5\nmodel = 7\n', "materials.soft.model", "must be <= 3"),
    "pair of no material": (lambda g: g + '\n[pairs]\n"nut_M48x5/bolt_M48x5" = "oiled"\n',
                            'pairs."nut_M48x5/bolt_M48x5"', "unknown material"),
    "pair name": (lambda g: g + '\n[materials.oiled]\nfriction = 0.05\n[pairs]\nnut = "oiled"\n',
                  'pairs."nut"', "MOVING/STATIC"),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_malformed_config_one_line_error(tmp_path, case):
    edit, key, words = BAD[case]
    p = _write(tmp_path, edit)
    with pytest.raises(config.ConfigError) as ei:
        config.load(p)
    msg = str(ei.value)
    assert "\n" not in msg
    assert str(p) in msg and key in msg and words in msg


def test_cli_reports_config_error_in_one_line(tmp_path):
    p = _write(tmp_path, lambda g: g.replace("band = 0.0002", "band = -0.0002"))
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", str(p), "--headless"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "contact.band" in err and str(p) in err


def test_unknown_part_names_the_key(tmp_path):
    from sim_core.scenarios import scenario
    p = _write(tmp_path, lambda g: g.replace('moving = "nut_M48x5"', 'moving = "nut_M99"'))
    with pytest.raises(config.ConfigError, match=r"parts\.moving: unknown part 'nut_M99'"):
        scenario.load(str(p))


def test_reference_table_lists_every_key():
    md = config.reference_markdown()
    for sec, schema in config.SCHEMA.items():
        for k in schema:
            assert f"`{sec}.{k}`" in md


def test_readme_reference_is_current():
    """README.md's configuration reference is generated from the schema; keep them equal."""
    assert config.reference_markdown() in (ROOT / "README.md").read_text()
