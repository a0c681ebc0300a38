"""Result documents of verify and bench: written atomically (JSON, optionally CSV) from typed
records (records.py), read back typed for show, compare, speedup, plot and merge.

A document is the run's environment (document.write_json adds tool, schema, version, commit, argv,
host and date) plus one record per (kernel, shape). Each record carries its `index` in the
unsharded run, so shards of one run merge back into the order a single run would have produced.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wgrad_cli.errors import WgradError
from wgrad_cli.output.atomic import write_text
from wgrad_cli.results.baseline_names import NAMES as BASELINES
from wgrad_cli.results.document import keep_old, write_json
from wgrad_cli.results.records import BenchRow, Row, to_json

RESULTS_DIR = Path("results")


def order(r: Row) -> tuple[int, int, int]:
    """Records in run order: bench's calibration (index -1) first, then by record and run, each
    kernel before the baselines measured on its shape (those today's code does not know last)."""
    if not isinstance(r, BenchRow):
        return r.index, 1, 0
    rank = BASELINES.index(r.kernel) + 1 if r.kernel in BASELINES else len(BASELINES) + 1
    return r.index, r.run, rank if r.baseline else 0


def default_path(command: str, name: str, kernels: Sequence[str], arch: str, shard: tuple[int, int] | None,
                 clock_ghz: float | None = None) -> Path:
    """results/<command>-<name>[-<kernel+kernel...>]-<arch>[-<clock>GHz][-shard-i-of-n].json, `name` the
    config's (its file's stem) or the launch file's: every results file a command writes by default is
    named here, and a run of other kernels, or (modelled) at another clock, gets a name of its own."""
    kernel = f"-{'+'.join(dict.fromkeys(kernels))}" if kernels else ""  # a launch file names its own kernel
    clock = f"-{clock_ghz:g}GHz" if clock_ghz is not None else ""
    suffix = f"-shard-{shard[0]}-of-{shard[1]}" if shard else ""
    return RESULTS_DIR / f"{command}-{name}{kernel}-{arch}{clock}{suffix}.json"


def _flat(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested fields as dotted columns; lists (per-expert figures) stay whole, as JSON."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = json.dumps(value) if isinstance(value, list) else value
    return out


def save(json_path: Path | None, csv_path: Path | None, command: str, records: Sequence[Row],
         **extra: Any) -> None:
    """Write the JSON document and/or the CSV table (one row per record), each atomically; a file
    already there is kept under a new name, in one line (document.keep_old)."""
    objects = [to_json(r) for r in records]
    if json_path:
        write_json(json_path, command, objects, **extra)
    if csv_path:
        rows = [_flat(r) for r in objects]
        columns = list(dict.fromkeys(c for row in rows for c in row))
        text = io.StringIO()
        writer = csv.DictWriter(text, columns)
        writer.writeheader()
        writer.writerows(rows)
        keep_old(csv_path)
        try:
            write_text(csv_path, text.getvalue())
        except OSError as exc:
            raise WgradError(f"--csv {csv_path}: cannot write it ({exc.strerror}); "
                             "give a path in a writable folder")

