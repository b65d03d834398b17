"""Contact-wrench data for training the contact clustering (seed 000 Sec. III.B, V.A).

What an F/T-sensor experiment records, step by step, in an MCAP file of JSON messages (the
project's log container, which common viewers open):

``/dataset`` (once, first)
    ``format`` = "tightsim-wrench-1"; ``task`` ("peg_in_hole" | "bolting"); ``static`` and
    ``moving`` part names; ``dt`` (s, the sampling period); ``source`` (free text: "reference
    simulation ...", "experiment ..."); optional ``seed``, ``notes``.
``/wrench_sample`` (one per step)
    ``episode`` (int, a continuous recording; the train / test split never cuts one),
    ``t`` (s, increasing within an episode),
    ``p_w`` [3] (m) the moving part's centre of mass, world; ``q_wb`` [4] its orientation
    (w, x, y, z, unit); ``v_w`` [3] (m/s) its centre's velocity, world; ``w_b`` [3] (rad/s)
    its angular velocity, body axes;
    ``f_ext`` [6] the wrench applied to the part other than contact (the gripper / drive):
    force (N, world), torque (N m, body axes);
    ``wrench`` [6] the measured contact wrench at the part's centre of mass: force (N,
    world), torque (N m, body axes) -- the convention of the solver's ``contact_wrench``.

``load`` checks every field (presence, length, finiteness, unit quaternion, time order) and
names the file, the message and the field in a one-line :class:`WrenchDataError`.  A file
cut mid-way (a recording that crashed) loads up to its last complete chunk, flagged
``truncated``.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FORMAT = "tightsim-wrench-1"
TASKS = ("peg_in_hole", "bolting")
Q_UNIT_TOL = 1e-6
FIELDS = {"p_w": 3, "q_wb": 4, "v_w": 3, "w_b": 3, "f_ext": 6, "wrench": 6}
_VEC = {"type": "array", "items": {"type": "number"}}
SCHEMAS = {
    "/dataset": {"type": "object", "properties": {
        "format": {"type": "string"}, "task": {"type": "string"}, "static": {"type": "string"},
        "moving": {"type": "string"}, "dt": {"type": "number"}, "source": {"type": "string"}}},
    "/wrench_sample": {"type": "object", "properties": {
        "episode": {"type": "integer"}, "t": {"type": "number"},
        **{k: _VEC for k in FIELDS}}},
}


class WrenchDataError(ValueError):
    """A one-line problem with a wrench-data file (file, message, field)."""


@dataclass
class WrenchData:
    """A loaded data set: per-sample arrays (n, ...) and the /dataset record."""
    meta: dict
    episode: np.ndarray
    t: np.ndarray
    p_w: np.ndarray
    q_wb: np.ndarray
    v_w: np.ndarray
    w_b: np.ndarray
    f_ext: np.ndarray
    wrench: np.ndarray
    truncated: bool = False
    source: str = "<memory>"

    def __len__(self) -> int:
        return int(self.t.shape[0])

    def subset(self, mask: np.ndarray) -> WrenchData:
        return WrenchData(self.meta, *(getattr(self, k)[mask] for k in
                                       ("episode", "t", "p_w", "q_wb", "v_w", "w_b", "f_ext", "wrench")),
                          truncated=self.truncated, source=self.source)

    def split(self, train: float = 0.7) -> tuple[WrenchData, WrenchData]:
        """(train, held out): whole episodes in file order until `train` of the samples (the
        seed's 70 % / 30 %); an episode is never cut."""
        eps, counts = np.unique(self.episode, return_counts=True)
        order = np.argsort([np.flatnonzero(self.episode == e)[0] for e in eps])
        cum = np.cumsum(counts[order])
        k = int(np.searchsorted(cum, train * len(self), side="left")) + 1
        k = min(max(k, 1), len(eps) - 1) if len(eps) > 1 else len(eps)
        first = np.isin(self.episode, eps[order][:k])
        return self.subset(first), self.subset(~first)


class WrenchWriter:
    """Append-only writer of a wrench-data file."""

    def __init__(self, path, task: str, static: str, moving: str, dt: float, source: str, **extra):
        from sim_core.io.mcap import open_writer
        if task not in TASKS:
            raise ValueError(f"wrench data: task {task!r} is not one of {TASKS}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f, self._w, self._ch = open_writer(self.path, SCHEMAS, 256 * 1024)
        self._seq = 0
        self._put("/dataset", 0.0, {"format": FORMAT, "task": task, "static": static, "moving": moving,
                                    "dt": float(dt), "source": source, **extra})

    def _put(self, topic, t, msg):
        ns = max(0, int(round(t * 1e9)))
        self._w.add_message(channel_id=self._ch[topic], log_time=ns, publish_time=ns, sequence=self._seq,
                            data=json.dumps(msg).encode())
        self._seq += 1

    def sample(self, episode: int, t: float, p_w, q_wb, v_w, w_b, f_ext, wrench) -> None:
        msg = {"episode": int(episode), "t": float(t)}
        for k, v in (("p_w", p_w), ("q_wb", q_wb), ("v_w", v_w), ("w_b", w_b), ("f_ext", f_ext),
                     ("wrench", wrench)):
            msg[k] = [float(x) for x in np.asarray(v, float).ravel()]
        self._put("/wrench_sample", t, msg)

    def close(self) -> None:
        self._w.finish()
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def load(path) -> WrenchData:
    """Read and check a wrench-data file (module docstring)."""
    from mcap.records import Channel, Message
    from mcap.stream_reader import StreamReader
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise WrenchDataError(f"{path}: cannot read ({e.strerror})") from None
    channels, meta, rows, truncated = {}, None, [], False
    try:
        for rec in StreamReader(io.BytesIO(raw), skip_magic=False).records:
            if isinstance(rec, Channel):
                channels[rec.id] = rec.topic
            elif isinstance(rec, Message):
                topic = channels.get(rec.channel_id)
                if topic == "/dataset" and meta is None:
                    meta = json.loads(rec.data)
                elif topic == "/wrench_sample":
                    rows.append(json.loads(rec.data))
    except Exception as e:  # noqa: BLE001 - any decoding failure past the first records: a cut
        if meta is None and not rows:
            raise WrenchDataError(f"{path}: not a readable MCAP wrench-data file "
                                  f"({type(e).__name__})") from None
        truncated = True
    if meta is None:
        raise WrenchDataError(f"{path}: /dataset missing (not a {FORMAT} file)")
    if meta.get("format") != FORMAT:
        raise WrenchDataError(f"{path}: /dataset.format is {meta.get('format')!r}, expected {FORMAT!r}")
    if meta.get("task") not in TASKS:
        raise WrenchDataError(f"{path}: /dataset.task is {meta.get('task')!r}, expected one of {TASKS}")
    for k in ("static", "moving", "source"):
        if not isinstance(meta.get(k), str):
            raise WrenchDataError(f"{path}: /dataset.{k} missing or not a string")
    dt = meta.get("dt")
    if not isinstance(dt, (int, float)) or not np.isfinite(dt) or dt <= 0:
        raise WrenchDataError(f"{path}: /dataset.dt must be a positive number, got {dt!r}")
    if not rows:
        raise WrenchDataError(f"{path}: no /wrench_sample messages")
    cols = {k: np.empty((len(rows), n)) for k, n in FIELDS.items()}
    ep, t = np.empty(len(rows), np.int64), np.empty(len(rows))
    for i, r in enumerate(rows):
        where = f"{path}: /wrench_sample #{i}"
        e = r.get("episode")
        if not isinstance(e, int) or isinstance(e, bool):
            raise WrenchDataError(f"{where}: field 'episode' missing or not an integer")
        ti = r.get("t")
        if not isinstance(ti, (int, float)) or isinstance(ti, bool) or not np.isfinite(ti):
            raise WrenchDataError(f"{where}: field 't' missing or not a finite number")
        ep[i], t[i] = e, ti
        for k, n in FIELDS.items():
            v = r.get(k)
            if not isinstance(v, list) or len(v) != n:
                raise WrenchDataError(f"{where}: field {k!r} must be a list of {n} numbers")
            try:
                a = np.array(v, dtype=float)
            except (TypeError, ValueError):
                raise WrenchDataError(f"{where}: field {k!r} holds a non-number") from None
            if not np.all(np.isfinite(a)):
                raise WrenchDataError(f"{where}: field {k!r} holds NaN or infinite values")
            cols[k][i] = a
        if abs(np.linalg.norm(cols["q_wb"][i]) - 1.0) > Q_UNIT_TOL:
            raise WrenchDataError(f"{where}: field 'q_wb' is not a unit quaternion "
                                  f"(norm {np.linalg.norm(cols['q_wb'][i]):.9f})")
        if i and ep[i] == ep[i - 1] and not t[i] > t[i - 1]:
            raise WrenchDataError(f"{where}: field 't' does not increase within episode {ep[i]} "
                                  f"({t[i]:g} after {t[i - 1]:g})")
    return WrenchData(meta, ep, t, cols["p_w"], cols["q_wb"], cols["v_w"], cols["w_b"], cols["f_ext"],
                      cols["wrench"], truncated=truncated, source=str(path))
