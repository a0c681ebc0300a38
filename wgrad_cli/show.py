"""`wgrad show`: results files printed as the tables bench and verify printed when they wrote them,
so that a committed file can be read (and its derived columns, such as energy, recomputed) without
a device."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from wgrad_cli.bench import bench_table
from wgrad_cli.errors import WgradError
from wgrad_cli.results import load
from wgrad_cli.verify import verify_table


def results_table(command: str, records: list[dict[str, Any]], title: str) -> Table:
    """The table `command` (bench or verify) prints for these records; KeyError or TypeError for a
    record that lacks a field the table shows."""
    return (bench_table if command == "bench" else verify_table)(records, title)


def show_tables(paths: list[Path]) -> list[Table]:
    """One table per file, in the order given; every file that is not a verify or bench result
    wgrad wrote is one error line, and then no table is returned."""
    tables: list[Table] = []
    problems: list[str] = []
    for path in paths:
        try:
            doc = load(path)
        except WgradError as exc:
            problems += exc.lines
            continue
        device = doc.get("device") or {}
        title = f"{path}: wgrad {doc['command']} on {device.get('name', 'an unnamed device')}, {doc.get('date', 'undated')}"
        try:
            tables.append(results_table(doc["command"], doc["records"], title))
        except (KeyError, TypeError) as exc:
            problems.append(f"{path}: a record lacks {exc}; give a results file wgrad wrote")
    if problems:
        raise WgradError(problems)
    return tables
