"""Session logs: MCAP written per step, exact replay, readable when cut anywhere."""
import random
import subprocess
import sys
from pathlib import Path

import pytest

from app.replay import replay
from sim_core.io.log import LogError, info, read_log

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())   # the checkout
CUTS = 12


@pytest.fixture(scope="module")
def bolting_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("log") / "bolting.mcap"
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", "bolting", "--headless",
                        "--duration", "1.5", "--log", str(path)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return path


def test_log_has_every_topic_and_replays_bitwise(bolting_log):
    log = read_log(bolting_log)
    assert not log.truncated
    assert len(log.messages("/physics_input")) == 150
    assert len(log.messages("/part_state")) == 151          # initial state + one per step
    assert log.messages("/config")[0][1]["scenario"]["name"] == "bolting"
    n, err_p, err_v = replay(log, verify=True)
    assert n == 150 and err_p == 0.0 and err_v == 0.0        # same code, same inputs: bitwise


# m: the safety net's depth for the fallback log: below the landing's deepest point (31.9 um
# by the network since the impact refinement, contact.impacts; the shipped 100 um is no longer
# reached)
NET_DEPTH = 15e-6


def test_log_says_which_steps_the_safety_net_clustered(tmp_path):
    """/contact carries each step's fallback flag (the clustering reinforced a step deeper than
    contact.fallback_depth with its deepest nodes): the same steps as a direct run flags."""
    from sim_core.scenarios import scenario
    text = (ROOT / "config" / "bolting.toml").read_text()
    cfg_path = tmp_path / "bolting_net.toml"
    cfg_path.write_text(text.replace("[contact]\n", f"[contact]\nfallback_depth = {NET_DEPTH!r}\n", 1))
    path = tmp_path / "net.mcap"
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", str(cfg_path), "--headless",
                        "--duration", "1.5", "--log", str(path)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    flags = [m[1]["fallback"] for m in read_log(path).messages("/contact")]
    model, state, cfg = scenario.load(str(cfg_path))
    res = scenario.simulate(model, scenario.record(cfg), state, 1.5)
    assert len(flags) == 150 and all(isinstance(f, bool) for f in flags)
    assert flags == [bool(f) for f in res.fallback] and any(flags)     # the landing has some


def test_replay_detects_a_tampered_trajectory(bolting_log, tmp_path):
    log = read_log(bolting_log)
    t, msg = log.topics["/part_state"][80]
    msg = dict(msg, p_w=[msg["p_w"][0] + 1e-6, *msg["p_w"][1:]])
    log.topics["/part_state"][80] = (t, msg)
    _, err_p, _ = replay(log, verify=True)
    assert err_p == pytest.approx(1e-6, rel=1e-3)


def test_a_log_cut_between_two_records_is_called_cut(bolting_log, tmp_path):
    """A cut that falls exactly on a record boundary leaves nothing half-written, only the
    footer missing: still a cut log (a random cut found it in CI: read as whole)."""
    data = bolting_log.read_bytes()
    bounds, pos = [], 8
    while pos + 9 <= len(data) and data[pos:pos + 8] != b"\x89MCAP0\r\n":
        pos += 9 + int.from_bytes(data[pos + 1:pos + 9], "little")
        bounds.append(pos)
    assert len(bounds) > 10 and bounds[-1] == len(data) - 8        # every record walked
    n_full = len(read_log(bolting_log).messages("/part_state"))
    for cut in bounds[len(bounds) // 4:-1]:                         # after the first records, before the end
        p = tmp_path / f"cut{cut}.mcap"
        p.write_bytes(data[:cut])
        log = read_log(p)
        assert log.truncated and "between two records" in log.error, cut
        assert len(log.messages("/part_state")) <= n_full
        assert "complete   NO" in info(log)


def test_log_cut_at_random_bytes_still_opens(bolting_log, tmp_path):
    data = bolting_log.read_bytes()
    rng = random.Random(7)
    full = read_log(bolting_log)
    n_full = len(full.messages("/part_state"))
    opened = 0
    for cut in sorted(rng.sample(range(len(data) // 4, len(data) - 1), CUTS)):
        p = tmp_path / f"cut{cut}.mcap"
        p.write_bytes(data[:cut])
        log = read_log(p)
        assert log.truncated
        states = log.messages("/part_state")
        assert 0 < len(states) <= n_full
        assert states == full.messages("/part_state")[: len(states)]   # a prefix, unchanged
        assert "complete   NO" in info(log)
        opened += 1
    assert opened == CUTS


def test_log_cut_before_the_first_chunk_says_so(bolting_log, tmp_path):
    p = tmp_path / "tiny.mcap"
    p.write_bytes(bolting_log.read_bytes()[:100])
    with pytest.raises(LogError, match="before its first complete chunk"):
        read_log(p)


def test_not_a_log_is_one_line(tmp_path):
    p = tmp_path / "junk.mcap"
    p.write_bytes(b"hello, this is not mcap")
    r = subprocess.run([sys.executable, "-m", "app.cli", "log", "info", str(p)], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "junk.mcap" in r.stderr


def test_cli_replay_verify(bolting_log):
    r = subprocess.run([sys.executable, "-m", "app.cli", "replay", str(bolting_log), "--verify"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and "MATCH (bitwise)" in r.stdout
