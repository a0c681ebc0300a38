"""Result documents of verify and bench: written atomically (JSON, optionally CSV), read back for
compare and merge.

A document is the run's environment (report.write_json adds tool, version, commit, argv, host
and date) plus one record per (kernel, shape). Each record carries its `index` in the unsharded
run, so shards of one run merge back into the order a single run would have produced.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from wgrad_cli.abi import Dims
from wgrad_cli.atomic import write_text
from wgrad_cli.baselines import NAMES as BASELINES
from wgrad_cli.errors import WgradError
from wgrad_cli.report import SCHEMA, write_json

RESULTS_DIR = Path("results")


# what reading a record of another schema (or a hand-edited one) raises: a field missing or of another kind
BAD_RECORD = (KeyError, TypeError, AttributeError, ValueError, IndexError)


def unreadable(exc: Exception) -> str:
    """What is wrong with a record, from the BAD_RECORD exception reading it raised."""
    return f"lacks {exc}" if isinstance(exc, KeyError) else f"has a field wgrad cannot read ({exc})"


def order(r: dict[str, Any]) -> tuple[int, int, int]:
    """Records in run order: bench's calibration (index -1) first, then by record and run, each
    kernel before the baselines measured on its shape (those today's code does not know last)."""
    rank = BASELINES.index(r["kernel"]) + 1 if r["kernel"] in BASELINES else len(BASELINES) + 1
    return r["index"], r.get("run", 1), rank if r.get("baseline") else 0


def shape_label(shape: dict[str, Any]) -> str:
    """A record's shape as the tables print it (Dims.label)."""
    return Dims(shape["M"], shape["N"], shape["K"], shape["E"]).label()


def default_path(command: str, config: Path, arch: str, shard: tuple[int, int] | None) -> Path:
    """results/<command>-<config>-<arch>[-shard-i-of-n].json"""
    suffix = f"-shard-{shard[0]}-of-{shard[1]}" if shard else ""
    return RESULTS_DIR / f"{command}-{config.stem}-{arch}{suffix}.json"


def _flat(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested fields as dotted columns; lists (per-expert figures) stay whole, as JSON."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = json.dumps(value) if isinstance(value, list) else value
    return out


def save(json_path: Path | None, csv_path: Path | None, command: str, records: list[dict[str, Any]],
         **extra: Any) -> None:
    """Write the JSON document and/or the CSV table (one row per record), each atomically."""
    if json_path:
        write_json(json_path, command, records, **extra)
    if csv_path:
        rows = [_flat(r) for r in records]
        columns = list(dict.fromkeys(c for row in rows for c in row))
        text = io.StringIO()
        writer = csv.DictWriter(text, columns)
        writer.writeheader()
        writer.writerows(rows)
        try:
            write_text(csv_path, text.getvalue())
        except OSError as exc:
            raise WgradError(f"--csv {csv_path}: cannot write it ({exc.strerror}); give a path in a writable folder")


def load(path: Path, commands: tuple[str, ...] = ("verify", "bench")) -> dict[str, Any]:
    """A result document, checked to be one wgrad wrote for one of `commands`."""
    try:
        doc = json.loads(path.read_text())
    except OSError as exc:
        raise WgradError(f"{path}: cannot read it ({exc.strerror}); give a results file wgrad wrote")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise WgradError(f"{path}: not JSON ({exc}); give a results file wgrad wrote")
    if not (isinstance(doc, dict) and doc.get("tool") == "wgrad" and isinstance(doc.get("records"), list)):
        raise WgradError(f"{path}: not a wgrad results document (no tool: wgrad and records list)")
    schema = doc.get("schema", 1)
    if type(schema) is not int or schema > SCHEMA:
        raise WgradError(f"{path}: results schema {schema!r}, newer than this wgrad reads ({SCHEMA}); "
                         "upgrade wgrad to read it")
    if doc.get("command") not in commands:
        raise WgradError(f"{path}: a {doc.get('command')!r} document; this needs one of {', '.join(commands)}")
    return doc
