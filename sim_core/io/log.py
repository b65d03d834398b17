"""Session logs in MCAP: writer, tolerant reader and summary (replay: ``app.replay``).

Every message is JSON (Python writes float64 with ``repr``, so values round-trip bit for
bit) under a JSON Schema, so common MCAP viewers show them.  Topics:

=================  =========  ==============================================================
topic              rate       fields
=================  =========  ==============================================================
/config            once       the validated scenario config (what replay rebuilds from)
/session           once       start time, device spec, host facts (SCHED_FIFO or not)
/device            1 kHz      t, p, q (wxyz), v, w, buttons -- raw device input
/proxy             1 kHz      t, p_w, R_wb, V, device wrench, passivity-observer energy
/physics_input     100 Hz     t, dt, set pose and twist the physics step used (its whole input)
/part_state        100 Hz     t, p_w, q_wb, V -- the simulated moving part after the step
/arm_state         100 Hz     t, q, qd, tau -- the Panda after the step (when the arm holds the part)
/contact           100 Hz     t, wrench, max penetration, node and cluster counts
/timing            per loop   loop name, period and work time statistics
/dropped           rare       records that never reached the file: stream, count, the first
                              one's number, the times of the records either side
/session_end       once       the last message of a log closed cleanly: whether real time
                              started, each stream's records offered / logged / lost, every
                              gap, why the session ended, ``complete``
=================  =========  ==============================================================

A log without ``/session_end`` was not closed by its session (a killed process) or comes from
an older tightsim; ``losses`` then looks for gaps in the records themselves.

Chunks are small (32 KiB) and the file is flushed every physics step, so a session killed
mid-way leaves every closed chunk on disk; ``read_log`` reads records in order and stops cleanly at the
cut, so a truncated log still opens up to its last complete chunk.
"""
from __future__ import annotations

import io
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from mcap.exceptions import EndOfFile
from mcap.reader import SeekingReader
from mcap.records import Channel, Message
from mcap.stream_reader import StreamReader

from sim_core.math.so3 import matrix_to_quat

CHUNK_BYTES = 32 * 1024

_VEC = {"type": "array", "items": {"type": "number"}}
SCHEMAS = {
    "/config": {"type": "object", "description": "validated scenario configuration"},
    "/session": {"type": "object", "properties": {"device": {"type": "string"},
                                                   "sched_fifo": {"type": "boolean"}}},
    "/device": {"type": "object", "properties": {"t": {"type": "number"}, "p": _VEC, "q": _VEC,
                                                  "v": _VEC, "w": _VEC, "buttons": {"type": "integer"}}},
    "/proxy": {"type": "object", "properties": {"t": {"type": "number"}, "p_w": _VEC, "R_wb": _VEC,
                                                 "V": _VEC, "device_wrench": _VEC,
                                                 "energy": {"type": "number"}}},
    "/physics_input": {"type": "object", "properties": {
        "t": {"type": "number"}, "dt": {"type": "number"}, "p_set_w": _VEC, "R_set_w": _VEC,
        "v_set_w": _VEC, "w_set_w": _VEC, "f_ext": _VEC}},
    "/part_state": {"type": "object", "properties": {"t": {"type": "number"}, "p_w": _VEC,
                                                      "R_wb": _VEC, "q_wb": _VEC, "V": _VEC}},
    "/arm_state": {"type": "object", "properties": {"t": {"type": "number"}, "q": _VEC, "qd": _VEC,
                                                     "tau": _VEC}},
    "/contact": {"type": "object", "properties": {
        "t": {"type": "number"}, "wrench": _VEC, "max_penetration": {"type": "number"},
        "n_contacts": {"type": "integer"}, "n_clusters": {"type": "integer"},
        "fallback": {"type": "boolean", "description": "the clustering's safety net acted"}}},
    "/timing": {"type": "object", "properties": {"loop": {"type": "string"}, "t": {"type": "number"}}},
    "/dropped": {"type": "object", "properties": {
        "stream": {"type": "string"}, "count": {"type": "integer"}, "first": {"type": "integer"},
        "after_t": {"type": ["number", "null"]}, "before_t": {"type": ["number", "null"]}}},
    "/session_end": {"type": "object", "properties": {
        "started": {"type": "boolean"}, "complete": {"type": "boolean"}, "lost": {"type": "array"},
        "fault": {"type": ["string", "null"]}}},
}


class LogError(ValueError):
    """A one-line problem with a log file (names the file and what is wrong)."""


class LogWriter:
    """Append-only MCAP writer with one channel per topic."""

    def __init__(self, path: Path | str):
        from sim_core.io.mcap import open_writer
        self.path = Path(path)
        self._f, self._w, self._ch = open_writer(self.path, SCHEMAS, CHUNK_BYTES)
        self._seq = 0
        self._last_t = 0.0
        self.steps = 0             # physics records written

    def put(self, topic: str, t: float, msg: dict) -> None:
        ns = max(0, int(round(t * 1e9)))
        self._last_t = max(self._last_t, ns * 1e-9)
        self._seq += 1
        self._w.add_message(self._ch[topic], log_time=ns, publish_time=ns, sequence=self._seq,
                            data=json.dumps(msg).encode())

    # -- typed helpers -------------------------------------------------------------------
    def physics_step(self, state_before, inp, state_after, info, body: int = 0) -> None:
        """Everything a physics step consumed and produced (replay needs the inputs), for the
        held part `body` (``Model.hand_body``)."""
        from sim_core.io.records import pack_physics
        self.physics_record(pack_physics(state_before, inp, state_after, info, body=body))
        self.flush()

    def physics_record(self, r: np.ndarray) -> None:
        """The same messages from a packed ``records.PHYS`` record (the logger process)."""
        from sim_core.io.records import PHYS, STAGE_NAMES
        self.steps += 1
        f = PHYS.unpack(r)
        t, ta = float(f["t"][0]), float(f["t_after"][0])
        self.put("/physics_input", t, {
            "t": t, "dt": float(f["dt"][0]), "p_set_w": f["p_set"].tolist(), "R_set_w": f["R_set"].tolist(),
            "v_set_w": f["v_set"].tolist(), "w_set_w": f["w_set"].tolist(), "f_ext": f["f_ext"].tolist()})
        R = f["R"].reshape(3, 3)
        self.put("/part_state", ta, {"t": ta, "p_w": f["p"].tolist(), "R_wb": f["R"].tolist(),
                                     "q_wb": matrix_to_quat(R).tolist(), "V": f["V"].tolist()})
        self.put("/contact", ta, {"t": ta, "wrench": f["wrench"].tolist(),
                                  "max_penetration": float(f["max_pen"][0]),
                                  "n_contacts": int(f["n_contacts"][0]), "n_clusters": int(f["n_clusters"][0]),
                                  "fallback": bool(f["fallback"][0])})
        self.put("/timing", ta, {"loop": "physics", "t": ta, **dict(zip(STAGE_NAMES, f["times"].tolist()))})
        nq, nv = int(f["nq"][0]), int(f["nv"][0])
        if nq:
            self.put("/arm_state", ta, {"t": ta, "q": f["q"][:nq].tolist(), "qd": f["qd"][:nv].tolist(),
                                        "tau": f["tau"][:nv].tolist()})

    def flush(self) -> None:
        """Push what the writer has handed over (closed chunks) to the OS."""
        self._f.flush()

    def part_state(self, st, body: int = 0) -> None:
        """The held part (`body`: ``Model.hand_body``) and the arm of a state: the start a
        replay begins from."""
        b = body
        self.put("/part_state", st.t, {"t": st.t, "p_w": st.p_w[b].tolist(), "R_wb": st.R_wb[b].ravel().tolist(),
                                       "q_wb": matrix_to_quat(st.R_wb[b]).tolist(), "V": st.V[b].tolist()})
        from sim_core.systems.arm.system import joints
        q, qd = joints(st)
        if q.size:
            self.put("/arm_state", st.t, {"t": st.t, "q": q.tolist(), "qd": qd.tolist(), "tau": []})

    def close_in_process(self) -> None:
        """Close the log of a run that wrote every step itself, in its own process (nothing
        between the step and the file that could lose one): ``/session_end`` says so."""
        n = self.steps
        self.close(end={"started": True, "physics": {"offered": n, "logged": n, "lost": 0}, "lost": [],
                        "complete": True})

    def close(self, end: dict | None = None) -> None:
        """Finish the file; `end` (counts, gaps, why it ended) goes first as ``/session_end``."""
        if end is not None:
            self.put("/session_end", self._last_t, end)
        self._w.finish()
        self._f.close()


@dataclass
class Log:
    """Messages of a log by topic, in file order: lists of (log time s, decoded dict)."""
    path: Path
    topics: dict = field(default_factory=dict)
    truncated: bool = False        # the file ends inside a record (a session killed mid-write)
    error: str = ""                # what the cut looked like
    corrupt: list = field(default_factory=list)   # damaged records, one line each (read past)

    def messages(self, topic: str) -> list:
        return self.topics.get(topic, [])


MAGIC = b"\x89MCAP0\r\n"
MAX_RECORD = 1 << 30       # bytes: a larger length field is damage, not a record a cut ended
_FOOTER, _CHUNK, _MESSAGE_INDEX = 0x02, 0x06, 0x07


def _index_problem(body: bytes, chunk, channels: dict) -> str:
    """What is wrong with a message index record (it has no CRC of its own): it must follow a
    chunk, name a known channel, and point inside that chunk at times within its span."""
    if chunk is None:
        return "no chunk before it"
    if len(body) < 6:
        return "too short"
    channel, nbytes = struct.unpack_from("<HI", body, 0)
    if channel not in channels:
        return f"unknown channel {channel}"
    if nbytes % 16 or 6 + nbytes != len(body):
        return "entry table of the wrong length"
    start, stop, size = chunk
    for k in range(nbytes // 16):
        t, off = struct.unpack_from("<QQ", body, 6 + 16 * k)
        if not (start <= t <= stop) or off >= size:
            return f"entry {k} outside its chunk"
    return ""


def _decode(rec_bytes: bytes) -> list:
    """The records in one top-level record (a chunk holds several), CRCs checked.  The reader
    ends a stream with EndOfFile once the record's bytes are used up: that is the normal end
    here (the record's own length was checked by the caller)."""
    out = []
    it = iter(StreamReader(io.BytesIO(rec_bytes), skip_magic=True, validate_crcs=True).records)
    while True:
        try:
            out.append(next(it))
        except (StopIteration, EndOfFile):
            return out


def _chunk_starts(data: bytes) -> list:
    """The chunks' byte offsets, ascending, from the file's summary (its chunk indexes): where
    the walk can pick up again past a damaged record header.  [] where the summary is not
    readable (damaged too, or none written)."""
    try:
        summary = SeekingReader(io.BytesIO(data), validate_crcs=True).get_summary()
    except Exception:  # noqa: BLE001 - any failure means no usable summary
        return []
    if summary is None:
        return []
    return sorted(int(c.chunk_start_offset) for c in summary.chunk_indexes)


def read_log(path: Path | str) -> Log:
    """Read every record, checking each chunk's CRC.  A record that is complete but damaged
    (a CRC or format error) is listed in ``corrupt`` and the records after it are still read;
    a file that ends inside a record was cut (``truncated``: everything before the cut is
    read) -- unless it ends with its closing magic, as only a finished file does: a record
    whose length runs past the end is then a damaged header (listed in ``corrupt``), and the
    walk picks up at the next chunk the summary's chunk index names.  The top-level records
    are walked here (opcode, length, body) so one bad chunk does not hide the rest; the mcap
    package decodes each record with its CRCs checked."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise LogError(f"{path}: cannot read ({e.strerror})") from None
    if data[:8] != MAGIC:
        raise LogError(f"{path}: not an MCAP log (bad magic)")
    log = Log(path)
    channels: dict[int, str] = {}
    chunk = None
    pos, end = 8, len(data)
    closed = False                   # the footer or the closing magic read: the file is whole
    lost = False                     # a damaged record length: the rest of the file unreadable
    whole = len(data) >= 16 and data[-8:] == MAGIC     # the writer finished it (a cut file has no end magic)
    starts = None                    # the chunks' offsets from the summary, read at the first damaged length
    while pos < end:
        if data[pos:pos + 8] == MAGIC and pos + 8 == end:           # the closing magic
            closed = True
            break
        if pos + 9 > end:
            log.truncated, log.error = True, f"cut at byte {end}, inside a record header"
            break
        op = data[pos]
        length = int.from_bytes(data[pos + 1:pos + 9], "little")
        if pos + 9 + length > end:
            # a record running past the end: a cut -- unless the file ends as a finished one does
            # (its closing magic) or no writer makes a record this large: then the header is damaged
            if length > MAX_RECORD or whole:
                if starts is None:
                    starts = _chunk_starts(data)
                nxt = next((c for c in starts if c > pos), None)
                log.corrupt.append(f"byte {pos}: record length {length} runs past the file's end; " + (
                    f"read on from the next chunk at byte {nxt}" if nxt else "the records after it cannot be found"))
                if nxt is not None:
                    pos = nxt
                    continue
                lost = True
            else:
                log.truncated, log.error = True, f"cut at byte {end}, inside a record of {length} bytes"
            break
        rec_bytes = data[pos:pos + 9 + length]
        pos += 9 + length
        if op == _CHUNK and length >= 24:
            chunk = struct.unpack_from("<QQQ", data, pos - length)     # start, end time; size
        elif op == _MESSAGE_INDEX:
            bad = _index_problem(data[pos - length:pos], chunk, channels)
            if bad:
                log.corrupt.append(f"byte {pos - 9 - length}: message index is damaged ({bad})")
            continue
        try:
            recs = _decode(rec_bytes)
        except Exception as e:  # noqa: BLE001 - a damaged record can fail anywhere in the decoder
            log.corrupt.append(f"byte {pos - 9 - length}: record 0x{op:02x} of {length} bytes is damaged "
                               f"({type(e).__name__}: {e})".splitlines()[0][:200])
            continue
        for rec in recs:
            if isinstance(rec, Channel):
                channels[rec.id] = rec.topic
            elif isinstance(rec, Message):
                topic = channels.get(rec.channel_id)
                if topic is None:
                    log.corrupt.append(f"message {rec.sequence} on unknown channel {rec.channel_id}")
                    continue
                try:
                    msg = json.loads(rec.data)
                except ValueError:
                    log.corrupt.append(f"{topic}: message {rec.sequence} is not valid JSON")
                    continue
                log.topics.setdefault(topic, []).append((rec.log_time * 1e-9, msg))
        if op == _FOOTER:
            closed = True
            break
    if not closed and not log.truncated and not lost:
        # cut exactly between two records: nothing is half-written, but the footer is missing
        log.truncated, log.error = True, f"cut at byte {end}, between two records (no footer)"
    if not log.topics and not channels and log.truncated:
        raise LogError(f"{path}: cut at byte {end}, before its first complete chunk: nothing to read")
    return log


HAPTIC_T = 1e-3          # s: the haptic loop's period (app.haptic_loop.T_HAPTIC)
GAP_TOL_S = 1e-7         # s: a tick's time minus the last one's equals its period to rounding
                         # (1e-13 s); a missing tick adds at least a period, 1 ms


def gaps_in_records(log: Log) -> list[dict]:
    """Gaps found in the records themselves (a log with no account of its own): each physics
    step starts where the one before it ended (``/physics_input`` k and ``/part_state`` k,
    the state before it: the same time, exactly), each haptic tick comes one period after the
    last (``/timing``).  Records lost at the very end leave no gap: only the writer knows."""
    gaps = []
    ti = [m.get("t") for _, m in log.messages("/physics_input")]
    tp = [m.get("t") for _, m in log.messages("/part_state")]
    dts = [m.get("dt") for _, m in log.messages("/physics_input")]
    for k in range(min(len(ti), len(tp))):
        a, b, dt = ti[k], tp[k], dts[k]
        if not all(isinstance(x, (int, float)) for x in (a, b, dt)) or dt <= 0:
            continue
        if a != b:
            gaps.append({"stream": "physics", "count": max(1, round((a - b) / dt)), "after_t": b, "before_t": a})
            break      # the steps after the first gap are offset: one gap is enough to say so
    timing = [m for _, m in log.messages("/timing") if m.get("loop") == "haptic"]
    try:
        t = np.array([m["t"] for m in timing], dtype=np.float64)
        per = np.array([m["period"] for m in timing], dtype=np.float64)
    except (KeyError, TypeError, ValueError):
        return gaps
    if len(t) > 1:
        extra = np.diff(t) - per[1:]
        for i in np.nonzero(extra > GAP_TOL_S)[0]:
            gaps.append({"stream": "haptic", "count": max(1, int(round(extra[i] / HAPTIC_T))),
                         "after_t": float(t[i]), "before_t": float(t[i + 1])})
    return gaps


def losses(log: Log) -> tuple[list[dict], bool]:
    """(records that never reached the file, whether the writer accounted for them): the
    writer's ``/session_end`` when the log has one, else its ``/dropped`` messages and the
    gaps found in the records of the streams they do not cover.  Each gap: stream, count,
    ``after_t`` / ``before_t`` (s: the records either side; None at the start or end)."""
    end = log.messages("/session_end")
    if end and isinstance(end[-1][1], dict):
        lost = end[-1][1].get("lost") or []
        return [g for g in lost if isinstance(g, dict)], True
    said = [m for _, m in log.messages("/dropped") if isinstance(m, dict)]
    covered = {g.get("stream") for g in said}
    return said + [g for g in gaps_in_records(log) if g["stream"] not in covered], False


def _span(g: dict) -> str:
    a, b = g.get("after_t"), g.get("before_t")
    a = "the start" if a is None else f"{a:.3f}"
    b = "the end" if b is None else f"{b:.3f} s"
    return f"{a} .. {b}"


def describe_losses(gaps: list[dict], most: int = 4) -> str:
    """'1522 haptic ticks (1.494 .. 3.017 s), 168 physics steps (...)': per stream, the count
    and where (the first `most` gaps)."""
    out = []
    for stream, unit in (("haptic", "haptic ticks"), ("physics", "physics steps")):
        gs = [g for g in gaps if g.get("stream") == stream]
        if not gs:
            continue
        where = ", ".join(_span(g) for g in gs[:most]) + (f", and {len(gs) - most} more gaps" if len(gs) > most else "")
        out.append(f"{sum(int(g.get('count', 0)) for g in gs)} {unit} lost ({where})")
    return "; ".join(out)


def verdict(log: Log) -> tuple[bool | None, list[str]]:
    """(complete?, what is wrong): True when the writer closed the log, every record reached
    it and none is damaged; False with the reasons (records lost, the file cut, damaged
    records); None for a log that is whole as far as can be checked but has no writer's
    account (``/session_end``) -- an older tightsim's, or its session never closed it."""
    problems = []
    gaps, accounted = losses(log)
    if gaps:
        problems.append(f"records lost: {describe_losses(gaps)}")
    if log.truncated:
        problems.append(f"cut ({log.error}); read up to the cut")
    if log.corrupt:
        problems.append(f"{len(log.corrupt)} damaged record{'s' if len(log.corrupt) > 1 else ''} (below)")
    if problems:
        return False, problems
    return (True if accounted else None), []


def info(log: Log) -> str:
    """Human summary: duration, per-topic counts and rates, config name, whether complete."""
    lines = [f"log        {log.path}"]
    cfg = log.messages("/config")
    if cfg:
        sc = cfg[0][1].get("scenario", {})
        lines.append(f"scenario   {sc.get('name')} ({sc.get('task')}), dt {sc.get('dt')} s")
    sess = log.messages("/session")
    if sess:
        s = sess[0][1]
        lines.append(f"session    device {s.get('device')}, SCHED_FIFO {'yes' if s.get('sched_fifo') else 'no'}")
    times = [m[0] for msgs in log.topics.values() for m in msgs]
    if times:
        lines.append(f"span       {min(times):.3f} .. {max(times):.3f} s")
    for topic in SCHEMAS:
        msgs = log.messages(topic)
        if not msgs:
            continue
        span = msgs[-1][0] - msgs[0][0]
        rate = f"{(len(msgs) - 1) / span:8.1f} Hz" if span > 0 else "        -   "
        lines.append(f"  {topic:16s} {len(msgs):8d} msgs {rate}")
    parts = log.messages("/part_state")
    if parts:
        pen = [m[1]["max_penetration"] for m in log.messages("/contact")]
        lines.append(f"part       final p_w = {[round(x, 6) for x in parts[-1][1]['p_w']]} m"
                     + (f", max penetration {max(pen) * 1e6:.1f} um" if pen else ""))
    end = log.messages("/session_end")
    end = end[-1][1] if end and isinstance(end[-1][1], dict) else {}
    if end and not end.get("started", True):
        lines.append(f"session    did not start: {end.get('fault') or 'ended during the start-up'}")
    ok, problems = verdict(log)
    if ok:
        lines.append("complete   yes: closed by its session, every record written")
    elif ok is None:
        lines.append("complete   unknown: no /session_end (an older tightsim's log, or its session never closed it); "
                     "no gaps found in the records")
    for problem in problems:
        lines.append(f"complete   NO: {problem}")
    for problem in log.corrupt:
        lines.append(f"CORRUPTED  {problem}")
    return "\n".join(lines)
