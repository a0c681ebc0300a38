"""The JSON trace-event format (Google's "Trace Event Format", which Perfetto's UI and
chrome://tracing open) as a JSON schema of what wgrad model --trace writes, checked by jsonschema
(not wgrad's code); and each SIMD track's clocks, from a file that passed it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

# complete events (ph X: name, cat, ts and dur in microseconds, pid, tid, args) and metadata events
# (ph M: process_name, thread_name, thread_sort_index, with their args)
TRACE_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["traceEvents"],
    "properties": {
        "displayTimeUnit": {"enum": ["ms", "ns"]},
        "otherData": {"type": "object"},
        "traceEvents": {"type": "array", "items": {"oneOf": [
            {"type": "object", "required": ["ph", "name", "pid", "tid", "ts", "dur"],
             "properties": {"ph": {"const": "X"}, "name": {"type": "string"}, "cat": {"type": "string"},
                            "pid": {"type": "integer"}, "tid": {"type": "integer"},
                            "ts": {"type": "number", "minimum": 0}, "dur": {"type": "number", "minimum": 0},
                            "args": {"type": "object"}}},
            {"type": "object", "required": ["ph", "name", "pid", "args"],
             "properties": {"ph": {"const": "M"},
                            "name": {"enum": ["process_name", "thread_name", "thread_sort_index"]},
                            "pid": {"type": "integer"}, "tid": {"type": "integer"},
                            "args": {"type": "object", "minProperties": 1}}},
        ]}},
    },
}


def validated(path: Path) -> dict[str, Any]:
    """The trace file, parsed and checked against the format (jsonschema raises where it is not)."""
    doc: dict[str, Any] = json.loads(path.read_text())
    jsonschema.validate(doc, TRACE_SCHEMA)
    return doc


def simd_clocks(doc: dict[str, Any]) -> dict[int, int]:
    """Clocks of the events on each SIMD's track (tracks named "SIMD i: every clock by cause"), by SIMD,
    where each track's events are checked to follow each other without gap or overlap."""
    names = {e["tid"]: e["args"]["name"]
             for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    per_us = doc["otherData"]["clock_ghz"] * 1e3
    out: dict[int, int] = {}
    for tid, name in names.items():
        if not name.endswith("every clock by cause"):
            continue
        mine = sorted((e for e in doc["traceEvents"] if e["ph"] == "X" and e["tid"] == tid),
                      key=lambda e: e["ts"])
        at = 0
        for e in mine:
            assert e["ts"] == pytest.approx(at / per_us, rel=1e-9, abs=1e-9), \
                f"{name}: a gap or overlap at {e['ts']} us"
            at += e["args"]["clocks"]
        out[int(name.split()[1].rstrip(":"))] = at
    return out

