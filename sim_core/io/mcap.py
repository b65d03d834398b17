"""One way to open an MCAP file of JSON messages under JSON Schemas (session logs in
``sim_core.io.log``, wrench data in ``wrench_data``): the writer, and one channel per topic."""
from __future__ import annotations

import json
from pathlib import Path


def open_writer(path, schemas: dict, chunk_bytes: int):
    """(file, writer, {topic: channel id}) for a new MCAP file at `path` (ZSTD chunks)."""
    from mcap.writer import CompressionType, Writer
    f = open(Path(path), "wb")
    w = Writer(f, chunk_size=chunk_bytes, compression=CompressionType.ZSTD)
    w.start(profile="", library="tightsim")
    channels = {}
    for topic, schema in schemas.items():
        sid = w.register_schema(name=topic.strip("/"), encoding="jsonschema", data=json.dumps(schema).encode())
        channels[topic] = w.register_channel(topic=topic, message_encoding="json", schema_id=sid)
    return f, w, channels
