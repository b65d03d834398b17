"""Headless run log in MCAP (JSON-encoded messages, one channel per kind of record).

Topics: ``/config`` (the validated scenario, once), ``/part_state`` (pose and twist of the
moving part), ``/set_pose`` (drive input), ``/contact`` (contact wrench, penetration, counts),
``/timing`` (seconds per pipeline stage).  Chunks are small so that a run killed mid-way
leaves a log that is readable up to its last closed chunk.
"""
from __future__ import annotations

import json
from pathlib import Path

from mcap.writer import Writer

from sim_core.math3d import matrix_to_quat

_SCHEMAS = {
    "/config": {"type": "object"},
    "/part_state": {"type": "object", "properties": {
        "t": {"type": "number"}, "p_w": {"type": "array"}, "q_wb_wxyz": {"type": "array"},
        "v_w": {"type": "array"}, "w_b": {"type": "array"}}},
    "/set_pose": {"type": "object", "properties": {
        "t": {"type": "number"}, "p_w": {"type": "array"}, "q_wxyz": {"type": "array"}}},
    "/contact": {"type": "object", "properties": {
        "t": {"type": "number"}, "wrench": {"type": "array"}, "max_penetration": {"type": "number"},
        "n_contacts": {"type": "integer"}, "n_clusters": {"type": "integer"}}},
    "/timing": {"type": "object"},
}


class RunLog:
    def __init__(self, path: Path, cfg: dict):
        self._f = open(path, "wb")
        self._w = Writer(self._f, chunk_size=64 * 1024)
        self._w.start(profile="", library="tightsim")
        self._ch = {}
        for topic, schema in _SCHEMAS.items():
            sid = self._w.register_schema(name=topic.strip("/"), encoding="jsonschema",
                                          data=json.dumps(schema).encode())
            self._ch[topic] = self._w.register_channel(topic=topic, message_encoding="json", schema_id=sid)
        self._seq = 0
        self._put("/config", 0.0, cfg)

    def _put(self, topic, t, msg):
        ns = int(round(t * 1e9))
        self._seq += 1
        self._w.add_message(self._ch[topic], log_time=ns, publish_time=ns, sequence=self._seq,
                            data=json.dumps(msg).encode())

    def record(self, state, inp, info):
        t = state.t
        self._put("/part_state", t, {"t": t, "p_w": state.p_w.tolist(),
                                     "q_wb_wxyz": matrix_to_quat(state.R_wb).tolist(),
                                     "v_w": state.V[:3].tolist(), "w_b": state.V[3:].tolist()})
        self._put("/set_pose", t, {"t": t, "p_w": inp.p_set_w.tolist(),
                                   "q_wxyz": matrix_to_quat(inp.R_set_w).tolist()})
        self._put("/contact", t, {"t": t, "wrench": info.contact_wrench.tolist(),
                                  "max_penetration": info.max_penetration,
                                  "n_contacts": info.n_contacts, "n_clusters": info.n_clusters})
        self._put("/timing", t, {"t": t, **info.times})

    def close(self):
        self._w.finish()
        self._f.close()
