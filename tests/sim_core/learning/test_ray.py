"""Ray for real (issue 16, item 7): ``--ray ADDRESS`` runs the clustering's population and
the reference episodes on a Ray cluster -- here a local one of two CPUs that the module
starts with ``ray start --head`` -- with the same result, bit for bit, as the local process
pool for the same seed; ``auto`` joins a running cluster or starts (and stops) its own; a
missing package or an address that does not answer is one line and exit code 2.

Every command that talks to Ray runs in a process of its own, as a user's would: Ray reads
its authentication settings once per process, so the token the module gives its cluster
must be in the environment before ``import ray``."""
from __future__ import annotations

import json
import os
import pickle
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from app.cli import main
from sim_core.learning import reference_data

pytest.importorskip("ray")

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())   # the checkout
TASK, SEED = "peg_in_hole", 11   # seed 11's first peg episode is the shortest of seeds 0-39 (2116 steps)
SECOND = 100                     # samples of the second episode: it finishes long before the first
CLUSTER = ["--num-cpus=2", "--include-dashboard=false", f"--object-store-memory={100 * 2 ** 20}",
           "--disable-usage-stats"]  # within a 2-core, 24 GiB machine shared with other work
START_TIMEOUT = 90.0             # s: `ray start` takes ~5 s on an idle 2-core machine
COMMAND_TIMEOUT = 300            # s: each command below takes 5-30 s on that machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def env() -> dict:
    """The environment of the module's Ray processes: this checkout first on the path (the
    workers import it), token authentication with a token of the module's own (Ray sends it
    to a named address only in token mode), no RAY_ADDRESS of the caller's."""
    e = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_TOKEN_PATH")}
    e["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), e.get("PYTHONPATH")]))
    e.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
    return e


def _run(env: dict, *args, **extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**env, **extra}, timeout=COMMAND_TIMEOUT)


def _cli(env: dict, *args, **extra) -> subprocess.CompletedProcess:
    r = _run(env, "-m", "app.cli", *args, **extra)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


@pytest.fixture(scope="module")
def cluster(env, tmp_path_factory):
    """HOST:PORT of a local Ray cluster for the module; stopped after it by ending the
    `ray start --block` process, which stops what it started."""
    port = _free_port()
    log = tmp_path_factory.mktemp("ray") / "ray_start.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", "from ray.scripts.scripts import main; main()", "start",
                                 "--head", "--block", f"--port={port}", *CLUSTER],
                                env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        t0 = time.monotonic()
        while "Ray runtime started" not in log.read_text(errors="replace"):
            assert proc.poll() is None, f"ray start failed:\n{log.read_text(errors='replace')[-2000:]}"
            assert time.monotonic() - t0 < START_TIMEOUT, "ray start did not come up"
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=60)


@pytest.fixture(scope="module")
def steps() -> int:
    """The first episode whole and SECOND samples of the next: two jobs."""
    return round(reference_data.episode_config(TASK, SEED, 0)["scenario"]["duration"] / reference_data.DT) + SECOND


@pytest.fixture(scope="module")
def ref(tmp_path_factory, steps) -> Path:
    """Reference data made in this process, one episode after the other (the path of old)."""
    out = tmp_path_factory.mktemp("ref") / "seq.mcap"
    s = reference_data.generate(TASK, out, steps, seed=SEED, workers=1)
    assert (s["samples"], s["episodes"]) == (steps, 2)
    return out


def _reference(env: dict, out: Path, steps: int, *how) -> bytes:
    _cli(env, "data", "reference", "--task", TASK, "--steps", str(steps), "--seed", str(SEED), "--out", str(out),
         "--quiet", *how)
    return (out / f"{TASK}_reference.mcap").read_bytes()


def test_reference_data_on_ray_is_the_local_pools_byte_for_byte(env, cluster, ref, steps, tmp_path):
    """Two episodes on two workers: the short second one is done first, and is written second."""
    pool = _reference(env, tmp_path / "pool", steps, "--workers", "2")
    on_ray = _reference(env, tmp_path / "ray", steps, "--ray", cluster)
    assert on_ray == pool == ref.read_bytes()


def _train(env: dict, data: Path, out: Path, *how) -> dict:
    """The report (less its wall time), the weights and CMA-ES's state after the last tell."""
    pytest.importorskip("cma")
    _cli(env, "train", "clustering", "--task", TASK, "--data", str(data), "--generations", "2", "--popsize", "6",
         "--batch", "8", "--seed", "3", "--out", str(out / "peg"), "--quiet", *how)
    rep = json.loads((out / "peg.json").read_text())
    rep.pop("seconds")
    with np.load(out / "peg.npz") as z:
        got = {"report": rep, **{f"weights.{k}": z[k] for k in z.files}}
    es = pickle.loads((out / "peg.cmaes").read_bytes())     # its mean moves by the ranked losses
    return {**got, "mean": es.mean, "sigma": es.sigma, "C": es.C, "fbest": es.result.fbest}


def test_clustering_trained_on_ray_is_the_local_pools_bit_for_bit(env, cluster, ref, tmp_path):
    """Six candidates on two actors: a generation's losses come back in whatever order the
    actors finish, and CMA-ES must still be told them in its own order."""
    pool = _train(env, ref, tmp_path / "pool", "--workers", "2")
    on_ray = _train(env, ref, tmp_path / "ray", "--ray", cluster)
    assert on_ray.keys() == pool.keys()
    differ = [k for k in pool if k != "report" and not np.array_equal(on_ray[k], pool[k])]
    assert not differ
    assert on_ray["report"] == pool["report"]        # every loss in the report, exactly
    assert pool["report"]["generations"] == 2 and pool["report"]["popsize"] == 6


AUTO = """
import ray
from sim_core.learning import ray_cluster
{patch}
with ray_cluster.session("auto", cpus={cpus}) as r:
    print(r.get_runtime_context().gcs_address.rsplit(":", 1)[1], ray_cluster.cpus(r), ray_cluster.cpus(r, 5),
          r.get(r.remote(lambda x: 2 * x).remote(21)))
print(ray.is_initialized())
"""


def test_auto_joins_the_running_cluster(env, cluster):
    r = _run(env, "-c", AUTO.format(patch="", cpus=0), RAY_ADDRESS=cluster)
    assert r.returncode == 0, r.stderr[-3000:]
    port, cpus, at_most, answer, connected = r.stdout.split()
    assert port == cluster.rsplit(":", 1)[1] and (cpus, at_most, answer) == ("2", "2", "42")
    assert connected == "False" and _answers(int(port))             # disconnected; the cluster runs on


def test_auto_starts_and_stops_a_local_instance_when_none_runs(env):
    """The last cluster Ray knows of has stopped (a stale record): a local instance of
    --workers CPUs, shut down after the command."""
    patch = (f"ray_cluster._running = lambda: '127.0.0.1:{_free_port()}'\n"
             f"ray_cluster.LOCAL_OBJECT_STORE = {100 * 2 ** 20}")
    r = _run(env, "-c", AUTO.format(patch=patch, cpus=1))
    assert r.returncode == 0, r.stderr[-3000:]
    port, cpus, at_most, answer, connected = r.stdout.split()
    assert (cpus, at_most, answer, connected) == ("1", "1", "42", "False")
    assert not _answers(int(port))                                   # stopped


@pytest.mark.parametrize("cmd", [["data", "reference", "--task", TASK, "--steps", "10"],
                                 ["train", "clustering", "--task", TASK, "--generations", "1"]])
def test_an_address_that_does_not_answer_is_one_line(env, cmd, tmp_path):
    port = _free_port()
    r = _run(env, "-m", "app.cli", *cmd, "--out", str(tmp_path / "x"), "--ray", f"127.0.0.1:{port}")
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and f"--ray 127.0.0.1:{port}" in r.stderr
    assert not (tmp_path / "x").exists()             # nothing was run or written


def test_without_the_ray_package_it_is_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)     # `import ray` raises ImportError
    assert main(["data", "reference", "--task", TASK, "--steps", "10", "--out", str(tmp_path),
                 "--ray", "auto"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--ray" in err and ".[scale]" in err
