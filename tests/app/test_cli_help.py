"""What a newcomer reads first: ``tightsim --help`` and ``tightsim run --help``."""
import subprocess
import sys

from sim_core.paths import config_dir


def _help(*args) -> str:
    r = subprocess.run([sys.executable, "-m", "app.cli", *args, "--help"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_run_help_lists_every_scenario_in_config():
    text = " ".join(_help("run").split())                  # argparse wraps the help text
    names = sorted(f.stem for f in config_dir().glob("*.toml"))
    assert len(names) >= 3
    for name in names:
        assert name in text, name


def test_top_level_help_is_plain_text():
    """The description is the first paragraph of the module docstring: no reST markup."""
    text = _help()
    assert "``" not in text and "tightsim: real-time haptic simulation" in text


def test_the_compile_notice_gives_no_time_estimate():
    """A first run's compile takes from a second (a few kernels missing) to over a minute (an
    empty cache): the notice says what is happening, and the stage lines how long it took."""
    from sim_core.io.progress import COMPILE_NOTICE
    assert "minute" not in COMPILE_NOTICE and "compiling" in COMPILE_NOTICE
