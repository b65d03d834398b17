"""Offline work on a Ray cluster (``--ray ADDRESS``): the clustering's population losses
(``train_clustering``) and the reference episodes (``reference_data``), when they outgrow
the local process pool (``--workers``), which stays the default.  Ray is the ``[scale]``
extra: ``pip install -e ".[scale]"``.

ADDRESS
    ``auto``: the running cluster Ray itself would pick (``RAY_ADDRESS``, else the last one
    ``ray start`` began on this machine, else any local one); when there is none (or its record
    is stale), a local instance of ``--workers`` CPUs (0: all), no dashboard and a
    ``LOCAL_OBJECT_STORE`` object store, started for the command and shut down after it.
    ``HOST:PORT``: the head node of a running cluster (what ``ray start --head`` prints).
    ``ray://HOST:PORT``: the same through Ray Client (needs ``ray[client]``).
An address that does not answer within ``CONNECT_TIMEOUT`` ends the command with one line
naming ``--ray`` (``ray.init`` itself waits minutes on one); so does one where something
listens that is not Ray (an HTTP server, any other service): before ``ray.init`` the address
must answer the opening of an HTTP/2 connection, as the GCS and the Ray Client server (gRPC)
do, within ``GCS_ANSWER_TIMEOUT`` (``_not_grpc``; skipped under ``RAY_USE_TLS``).  The nodes of a cluster must have
tightsim installed (the same checkout), since workers import ``sim_core``.

Authentication is Ray's (2.60): a cluster begun by ``ray start`` checks a token
(``~/.ray/auth_token``, or ``RAY_AUTH_TOKEN``), which Ray sends to a cluster it finds itself
(``auto``) but to a named address only with ``RAY_AUTH_MODE=token`` set -- so that a token is
never handed to a host by accident.  This module keeps that rule.

Results do not depend on the scheduling: every job is a pure function of its arguments and
the shared read-only context, and the results are gathered in submission order.  They are
bitwise those of the local pool on nodes with the same CPU, NumPy and numba (the neural
kernels are compiled with fastmath for the node's instruction set).
"""
from __future__ import annotations

import logging
import os
import socket
import time
from contextlib import contextmanager

CONNECT_TIMEOUT = 5.0                # s: a head node on the network answers a TCP connect in far less
GCS_ANSWER_TIMEOUT = 5.0             # s: a GCS answers the HTTP/2 preface in milliseconds
# HTTP/2's client connection preface and an empty SETTINGS frame (RFC 9113 sec. 3.4, 6.5): a
# gRPC server's first frame in reply is its own SETTINGS frame (type 4, on stream 0)
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes((0, 0, 0, 4, 0, 0, 0, 0, 0))
_H2_SETTINGS = 4
LOCAL_OBJECT_STORE = 512 * 2 ** 20   # bytes: the shared context (model, cached contact sets) and the
# episodes' results, with room; Ray's default (30 % of RAM) would pin GBs of /dev/shm for nothing


class RayError(ValueError):
    """A one-line problem with ``--ray`` (the command line exits 2 with it)."""


def _import_ray():
    try:
        import ray
    except ImportError:
        raise RayError('--ray: the ray package is not installed: pip install -e ".[scale]"') from None
    return ray


def _host_port(address: str) -> tuple[str, int]:
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise RayError(f"--ray {address}: not an address: give auto, HOST:PORT or ray://HOST:PORT")
    return host.strip("[]"), int(port)


def _answers(address: str) -> str:
    """'' when something listens at `address`, else why not."""
    try:
        with socket.create_connection(_host_port(address), timeout=CONNECT_TIMEOUT):
            return ""
    except OSError as e:
        return e.strerror or type(e).__name__


def _not_grpc(address: str) -> str:
    """'' when the server at `address` opens an HTTP/2 connection (a Ray GCS or Ray Client
    server: gRPC), else why not -- silence for ``GCS_ANSWER_TIMEOUT``, a closed connection, or
    the first line of what it said instead."""
    if os.environ.get("RAY_USE_TLS", "0").lower() not in ("", "0", "false"):
        return ""                          # a TLS cluster: the preface would have to go through TLS
    got = b""
    try:
        with socket.create_connection(_host_port(address), timeout=CONNECT_TIMEOUT) as s:
            s.sendall(_H2_PREFACE)
            deadline = time.monotonic() + GCS_ANSWER_TIMEOUT
            while len(got) < 9:
                s.settimeout(max(deadline - time.monotonic(), 1e-3))
                chunk = s.recv(256)
                if not chunk:
                    break
                got += chunk
    except TimeoutError:
        if not got:
            return f"no GCS answer in {GCS_ANSWER_TIMEOUT:g} s"
    except OSError as e:
        return e.strerror or type(e).__name__
    if len(got) >= 9 and got[3] == _H2_SETTINGS:
        return ""
    if not got:
        return "it closed the connection without an answer"
    said = got.split(b"\n", 1)[0].strip().decode("ascii", "replace")[:60]
    return f"it answered {said!r}, not gRPC" if said.isprintable() and said else "its answer is not gRPC"


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else repr(e)


def _running() -> str | None:
    """The cluster ``ray.init(address="auto")`` would connect to, or None."""
    try:
        from ray._private.services import canonicalize_bootstrap_address
    except ImportError:                   # pragma: no cover - a Ray without it: start a local one
        return None
    try:
        return canonicalize_bootstrap_address("auto")
    except ConnectionError:
        return None


@contextmanager
def session(address: str, cpus: int = 0):
    """Connected to the Ray cluster at `address` (module docstring) for the block; yields the
    ``ray`` module.  A local instance started here is shut down after the block; a connection
    made here is closed; one the host already had (a notebook, a test) is used and kept."""
    ray = _import_ray()
    if ray.is_initialized():
        yield ray
        return
    quiet = {"logging_level": logging.WARNING, "log_to_driver": True}
    target = address
    if address == "auto":
        target = os.environ.get("RAY_ADDRESS") or _running()
        if target is not None and not os.environ.get("RAY_ADDRESS") and _answers(target):
            target = None                  # a stale record of a cluster that has stopped
    if target is None:
        try:
            ray.init(address="local", num_cpus=cpus or None, include_dashboard=False,
                     object_store_memory=LOCAL_OBJECT_STORE, **quiet)
        except (ConnectionError, RuntimeError, ray.exceptions.RayError) as e:
            raise RayError(f"--ray {address}: cannot start a local Ray instance ({_first_line(e)})") from None
    else:
        if why := _answers(target):
            raise RayError(f"--ray {address}: no Ray cluster answers at {target} ({why}); start one "
                           "with `ray start --head`, or give --ray auto")
        if why := _not_grpc(target):
            raise RayError(f"--ray {address}: {target} is not a Ray cluster ({why}); give the address "
                           "`ray start --head` printed, or --ray auto")
        try:
            ray.init(address=target, **quiet)
        except (ConnectionError, RuntimeError, ray.exceptions.RayError) as e:
            why = _first_line(e)
            hint = ("; a cluster begun by `ray start` checks a token: set RAY_AUTH_MODE=token"
                    if os.environ.get("RAY_AUTH_MODE", "").lower() != "token" else "")
            raise RayError(f"--ray {address}: cannot connect ({why}){hint}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def cpus(ray, workers: int = 0) -> int:
    """How many one-CPU workers to run: `workers`, at most the cluster's CPUs (more would
    wait for ever), at least one."""
    total = int(ray.cluster_resources().get("CPU", 1))
    return max(1, min(workers, total) if workers else total)


class ActorMap:
    """``jobs -> results`` (in the jobs' order) over `n` Ray actors of `cls`, each built once
    from the object ref `shared` (so the context travels to each worker once, not per job);
    ``method`` is the actor method a job's arguments are passed to."""

    def __init__(self, ray, cls, shared, n: int, method: str):
        from ray.util import ActorPool
        actor = ray.remote(num_cpus=1)(cls)
        self._ray, self._actors = ray, [actor.remote(shared) for _ in range(n)]
        self._pool, self._method = ActorPool(self._actors), method

    def __call__(self, jobs) -> list:
        return list(self._pool.map(lambda a, job: getattr(a, self._method).remote(*job), jobs))

    def close(self) -> None:
        for a in self._actors:
            self._ray.kill(a)
        self._actors = []


def ordered(ray, fn, jobs, on_result=None) -> list:
    """``[fn(*job) for job in jobs]`` as one-CPU Ray tasks; results in the jobs' order, each
    handed to ``on_result(k, result)`` as soon as it and all before it are in."""
    remote = ray.remote(num_cpus=1)(fn)
    refs = [remote.remote(*job) for job in jobs]
    out = []
    for k, ref in enumerate(refs):
        out.append(ray.get(ref))
        if on_result is not None:
            on_result(k, out[-1])
    return out
