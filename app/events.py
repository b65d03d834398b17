"""Diagnostics and session events through the standard ``logging`` module: one logger per
process -- ``tightsim`` (the command line, the session's main process), ``tightsim.haptic``,
``tightsim.physics``, ``tightsim.logger`` -- and in the loop processes a
``logging.handlers.QueueHandler`` that hands each record to the main process.  A record
carries its session ``event`` (``ready``, ``realtime``, ``fault``, ``warning``,
``traceback``, ``exit``, ``stop``) and whether it is good news (``ok``); the main process acts
on the event (a fault ends the session) and re-logs the record, so everything a session says
reaches stderr once, in order, as ``tightsim[haptic]: ...``.
"""
from __future__ import annotations

import logging
import logging.handlers
import sys

ROOT = "tightsim"


def setup_main(level: int = logging.WARNING) -> logging.Logger:
    """The main process's logger: records of `level` and above to stderr, one line each."""
    log = logging.getLogger(ROOT)
    if not any(isinstance(h, _Stderr) for h in log.handlers):
        h = _Stderr()
        h.setFormatter(_Format())
        log.addHandler(h)
    log.setLevel(level)
    log.propagate = False
    return log


class _Stderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (a test may have replaced it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


class _Format(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        where = record.name[len(ROOT) + 1:] if record.name.startswith(ROOT + ".") else ""
        return f"{ROOT}{f'[{where}]' if where else ''}: {record.getMessage()}"


def process_logger(name: str, queue) -> logging.Logger:
    """A loop process's logger: every record goes to the main process through `queue`."""
    log = logging.getLogger(f"{ROOT}.{name}")
    log.handlers[:] = [logging.handlers.QueueHandler(queue)]
    log.setLevel(logging.DEBUG)
    log.propagate = False
    return log


def event(log: logging.Logger, kind: str, ok: bool, text: str, level: int | None = None) -> None:
    """Log a session event (``kind``); faults at ERROR, warnings at WARNING, the rest at INFO
    (tracebacks at DEBUG)."""
    if level is None:
        level = {"fault": logging.ERROR, "warning": logging.WARNING, "traceback": logging.DEBUG}.get(kind, logging.INFO)
    log.log(level, text, extra={"event": kind, "ok": bool(ok)})


def as_message(record: logging.LogRecord) -> tuple[str, bool, str]:
    """(event, ok, text) of a record from a loop process; re-logged by the main process."""
    main = logging.getLogger(ROOT)
    if record.levelno >= main.getEffectiveLevel():
        main.handle(record)
    return getattr(record, "event", "log"), bool(getattr(record, "ok", True)), record.getMessage()
