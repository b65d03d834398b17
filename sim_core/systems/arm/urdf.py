"""A robot description (URDF) checked before Pinocchio reads it.

Pinocchio's URDF parser (urdfdom, C++) writes its complaints to the process's stderr and
may go on: a link whose mass is ``nan`` was reported in four lines and then built with
some mass anyway (the run went on, exit 0); a truncated file gave three lines of parser
output before the error.  So the file is parsed here first (``xml.etree``), every number
the dynamics use is checked (masses finite and > 0; inertias finite, positive definite and
obeying the triangle inequality of a real body's principal moments; origins, axes and limits
finite), and Pinocchio then parses with file descriptor 2 captured: whatever it still
reports as an error becomes the one-line ``RobotFileError``, nothing reaches the terminal.
"""
from __future__ import annotations

import logging
import math
import os
import sys
import tempfile
import xml.etree.ElementTree as ET
from contextlib import contextmanager

import numpy as np

# relative slack on the triangle inequality I_a + I_b >= I_c of the principal moments
# (a thin rod or a flat plate sits on it; the rounding of six written digits stays within)
TRIANGLE_SLACK = 1e-6


class RobotFileError(ValueError):
    """A robot description that cannot be used (one line: file and what is wrong)."""


def _numbers(where: str, text: str | None, n: int) -> list[float]:
    if text is None:
        raise RobotFileError(f"{where}: missing")
    try:
        xs = [float(w) for w in text.split()]
    except ValueError:
        raise RobotFileError(f"{where} = {text!r}: not {n} number{'s' if n > 1 else ''}") from None
    if len(xs) != n:
        raise RobotFileError(f"{where} = {text!r}: not {n} number{'s' if n > 1 else ''}")
    if not all(math.isfinite(x) for x in xs):
        raise RobotFileError(f"{where} = {text!r}: must be finite")
    return xs


def _origin(where: str, el) -> None:
    o = el.find("origin")
    if o is not None:
        for attr in ("xyz", "rpy"):
            if attr in o.attrib:
                _numbers(f"{where} origin {attr}", o.get(attr), 3)


def _inertial(where: str, el) -> None:
    _origin(where, el)
    m = el.find("mass")
    if m is None:
        raise RobotFileError(f"{where} mass: missing")
    (mass,) = _numbers(f"{where} mass", m.get("value"), 1)
    if not mass > 0.0:
        raise RobotFileError(f"{where} mass = {mass!r}: must be > 0")
    i = el.find("inertia")
    if i is None:
        raise RobotFileError(f"{where} inertia: missing")
    names = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
    ixx, iyy, izz, ixy, ixz, iyz = (_numbers(f"{where} inertia {k}", i.get(k), 1)[0] for k in names)
    moments = np.linalg.eigvalsh(np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]))
    if not moments[0] > 0.0:
        raise RobotFileError(f"{where} inertia: not positive definite (principal moments "
                             f"{', '.join(f'{x:.4g}' for x in moments)} kg m^2)")
    if moments[0] + moments[1] < moments[2] * (1.0 - TRIANGLE_SLACK):
        raise RobotFileError(f"{where} inertia: principal moments {', '.join(f'{x:.4g}' for x in moments)} "
                             "kg m^2 break the triangle inequality (no body has them)")


def check(data: bytes, path) -> None:
    """Raise RobotFileError("<path>: <element> <field> ...") unless `data` is well-formed XML
    whose masses, inertias, origins, axes and limits are usable numbers."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        raise RobotFileError(f"{path}: not well-formed XML ({e})") from None
    if root.tag != "robot":
        raise RobotFileError(f"{path}: top element <{root.tag}>, expected <robot>")
    try:
        for link in root.iter("link"):
            where = f"link {link.get('name')!r}"
            for el in link.findall("inertial"):
                _inertial(f"{where} inertial", el)
        for joint in root.iter("joint"):
            where = f"joint {joint.get('name')!r}"
            _origin(where, joint)
            axis = joint.find("axis")
            if axis is not None and not any(_numbers(f"{where} axis xyz", axis.get("xyz"), 3)):
                raise RobotFileError(f"{where} axis xyz = {axis.get('xyz')!r}: must not be zero")
            limit = joint.find("limit")
            if limit is not None:
                for k, v in limit.attrib.items():
                    _numbers(f"{where} limit {k}", v, 1)
    except RobotFileError as e:
        raise RobotFileError(f"{path}: {e}") from None


@contextmanager
def stderr_captured():
    """File descriptor 2 redirected into a temporary file for the block (a C++ library writes
    there, past Python's sys.stderr); yields a list that holds the captured text afterwards."""
    out: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read().decode("utf-8", "replace"))


def build_model(data: bytes, path):
    """The Pinocchio model of a checked URDF, its parser's output kept off the terminal: an
    error it reports (even one it goes on from) is a RobotFileError naming the file."""
    import pinocchio as pin
    check(data, path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RobotFileError(f"{path}: byte {e.start} is not UTF-8") from None
    failed = None
    with stderr_captured() as said:
        try:
            model = pin.buildModelFromXML(text)
        except Exception as e:  # noqa: BLE001 - the parser's errors are many kinds
            failed = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    lines = [ln.strip() for ln in said[0].splitlines() if ln.strip()]
    errors = [ln.removeprefix("Error:").strip() for ln in lines if ln.startswith("Error:")]
    if failed or errors:
        raise RobotFileError(f"{path}: not a readable URDF ({errors[0] if errors else failed})")
    for ln in lines:                      # the parser's warnings: for a debugging session only
        logging.getLogger("tightsim").debug("%s: urdf parser: %s", path, ln)
    return model
