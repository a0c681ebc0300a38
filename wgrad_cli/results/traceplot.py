"""`wgrad plot TRACE.json ...`: CU traces that wgrad model --trace wrote, drawn one above the other: one
row per SIMD with every clock coloured by its cause, the matrix pipes, the LDS and the vector
memory path busy, and each wave's waits coloured by what it waited for. It reads the trace file
as the JSON trace-event format (no model code), so any such file wgrad wrote draws anywhere."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from wgrad_cli.errors import WgradError

COLOURS = {"mfma": "#4c72b0", "issue": "#bbbbbb", "lds": "#55a868", "memory": "#c44e52", "barrier": "#dd8452",
           "tail": "#ffffff", "pipe": "#4c72b0"}
FIRST_WAVE_TID = 100  # tracefile.WAVE_TID: the waves' tracks, after the SIMDs' and the pipes'


def read_trace(path: Path) -> dict[str, Any] | None:
    """The trace wgrad model wrote at `path`, or None where the file is not one (a results file)."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list) and \
            doc.get("otherData", {}).get("tool") == "wgrad model":
        return doc
    return None


def traces_of(path: Path) -> list[Path]:
    """`path`, or where no file is there, the traces wgrad model --trace wrote for it with several
    kernels or shapes (PATH-<kernel>-<shape>.json beside it), in name order."""
    if path.exists():
        return [path]
    return sorted(path.parent.glob(f"{path.stem}-*{path.suffix}")) or [path]


def draw_traces(docs: list[dict[str, Any]], out: Path, form: str) -> None:
    """The pictures of these traces, one above the other, written to `out` in `form` (png or svg)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    rows = [sum(1 for e in d["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name") for d in docs]
    fig = Figure(figsize=(12.0, sum(0.28 * r + 1.2 for r in rows) + 0.6), layout="constrained")
    axes = fig.subplots(len(docs), 1, height_ratios=[0.28 * r + 1.2 for r in rows], squeeze=False)[:, 0]
    for ax, doc in zip(axes, docs):
        _draw(ax, doc)
    fig.legend(handles=[Patch(facecolor=COLOURS[c], edgecolor="black", linewidth=0.3, label=label)
                        for c, label in (
        ("mfma", "matrix pipe busy / waiting for it"), ("issue", "issue"), ("lds", "waiting for LDS"),
        ("memory", "waiting for memory"), ("barrier", "at a barrier"), ("tail", "idle"))],
        ncols=6, fontsize=7, loc="outside lower center")
    write_figure(fig, out, form)


def _draw(ax: Any, doc: dict[str, Any]) -> None:
    """One trace on `ax`: a row per SIMD, pipe and wave, each span coloured by its cause."""
    events = doc["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    title = next((e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"), "")
    tids = sorted(names)
    row = {tid: i for i, tid in enumerate(tids)}
    bars: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for e in events:
        if e["ph"] != "X" or e["tid"] not in row:
            continue
        cat = e.get("cat", "")
        if e["tid"] >= FIRST_WAVE_TID and cat == "instruction":
            cat = "issue"  # a wave's instruction; its wait, nested in it, is drawn over it in its own colour
        bars.setdefault((e["tid"], cat), []).append((e["ts"], e["dur"]))
    order = ["tail", "issue", "pipe", "mfma", "lds", "memory", "barrier"]
    for (tid, cat), spans in sorted(bars.items(),
                                    key=lambda kv: order.index(kv[0][1]) if kv[0][1] in order else 0):
        ax.broken_barh(spans, (row[tid] - 0.4, 0.8), facecolors=COLOURS.get(cat, "#8172b3"), linewidth=0)
    ax.set_yticks(range(len(tids)), [names[t] for t in tids], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, doc["otherData"]["cycles"] / (doc["otherData"]["clock_ghz"] * 1e3))
    ax.set_xlabel(f"microseconds at {doc['otherData']['clock_ghz']:g} GHz (modelled)")
    ax.set_title("\n".join(textwrap.wrap(title, 150, break_on_hyphens=False)), fontsize=9)


def write_figure(fig: Any, out: Path, form: str, dpi: int = 110, tight: bool = False) -> None:
    """A matplotlib figure to `out` as `form` (png or svg), without the date or software stamps that
    would make two drawings of the same data differ; WgradError where it cannot be written."""
    try:
        fig.savefig(out, format=form, dpi=dpi, bbox_inches="tight" if tight else None,
                    metadata={"Date": None} if form == "svg" else {"Software": None})
    except OSError as exc:
        raise WgradError(f"{out}: cannot write the plot ({exc.strerror or exc}); "
                         "give a writable path") from None
