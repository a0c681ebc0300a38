"""One CU's modelled run (timeline.py) as a trace in the JSON trace-event format that Perfetto's UI
and chrome://tracing open: a track per SIMD with every clock as cu.py assigned it (cause and
instruction; idle), so that each SIMD's events add up to the CU's time; a track per wave with each
instruction from the clock it was due to the next one's, its wait nested in it; and the matrix
pipe of each SIMD, the LDS and the vector memory path, busy.

Times are microseconds at the modelled clock (the format's unit); every event also carries its
clocks (args.clocks), exact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wgrad_cli.errors import WgradError
from wgrad_cli.model.cu import BARRIER, CAUSES
from wgrad_cli.model.timeline import LDS_UNIT, VMEM_UNIT, Timeline
from wgrad_cli.output.atomic import write_text

SIMD_TID, PIPE_TID, LDS_TID, VMEM_TID, WAVE_TID = 0, 10, 20, 21, 100  # track ids: SIMDs first


def trace_events(t: Timeline, names: dict[int, str], issue: int, clock_ghz: float,
                 title: str) -> dict[str, Any]:
    """The trace as the format's JSON object."""
    per_us = clock_ghz * 1e3
    events: list[dict[str, Any]] = [{"ph": "M", "pid": 0, "tid": 0, "name": "process_name",
                                     "args": {"name": title}}]

    def track(tid: int, name: str) -> None:
        events.append({"ph": "M", "pid": 0, "tid": tid, "name": "thread_name", "args": {"name": name}})
        events.append({"ph": "M", "pid": 0, "tid": tid, "name": "thread_sort_index",
                       "args": {"sort_index": tid}})

    def span(tid: int, name: str, cat: str, start: int, end: int, **args: Any) -> None:
        if end > start:
            events.append({"ph": "X", "pid": 0, "tid": tid, "name": name, "cat": cat, "ts": start / per_us,
                           "dur": (end - start) / per_us, "args": {"clocks": end - start, **args}})

    for s, runs in enumerate(t.simds):
        track(SIMD_TID + s, f"SIMD {s}: every clock by cause")
        for start, end, cause, pc, wave in runs.tolist():
            name = "idle" if pc < 0 else f"{CAUSES[cause]}: {names.get(pc, hex(pc))}"
            span(SIMD_TID + s, name, CAUSES[cause], start, end,
                 **({} if pc < 0 else {"pc": hex(pc), "wave": wave}))
    for s in range(len(t.simds)):
        track(PIPE_TID + s, f"SIMD {s}: matrix pipe")
    track(LDS_TID, "LDS (the CU's)")
    track(VMEM_TID, "vector memory path (the CU's)")
    unit_tid = {LDS_UNIT: LDS_TID, VMEM_UNIT: VMEM_TID}
    for unit, wave, pc, start, end in t.pipes:
        span(unit_tid.get(unit, PIPE_TID + unit), names.get(pc, hex(pc)), "pipe", start, end, pc=hex(pc),
             wave=wave)
    steps: dict[int, list[tuple[int, int, int, int]]] = {}
    for wave, pc, arrived, issued, cause in t.steps:
        steps.setdefault(wave, []).append((pc, arrived, issued, cause))
    for w, (group, simd) in enumerate(t.waves):
        tid = WAVE_TID + w
        track(tid, f"wave {w} (workgroup {group}, SIMD {simd})")
        mine = steps.get(w, [])
        done, landed = t.ends.get(w, (0, 0))
        for i, (pc, arrived, issued, cause) in enumerate(mine):
            due = mine[i + 1][1] if i + 1 < len(mine) else done
            span(tid, names.get(pc, hex(pc)), "instruction", arrived, due, pc=hex(pc))
            if cause == BARRIER:  # its issue slot, then the wait for the workgroup
                span(tid, "wait: barrier", "barrier", arrived + issue, due)
            else:
                span(tid, f"wait: {CAUSES[cause]}", CAUSES[cause], arrived, issued)
        span(tid, "done: its memory operations land", "memory", done, landed)
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"tool": "wgrad model", "clock_ghz": clock_ghz, "cycles": t.cycles}}


def write_trace(path: Path, t: Timeline, names: dict[int, str], issue: int, clock_ghz: float,
                title: str) -> None:
    try:
        write_text(path, json.dumps(trace_events(t, names, issue, clock_ghz, title), separators=(",", ":")))
    except OSError as exc:
        raise WgradError(f"--trace {path}: cannot write it ({exc.strerror}); give a writable path") from None
