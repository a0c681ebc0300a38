"""`wgrad show`: results files printed as the tables the commands that wrote them (bench, verify,
selfbench, build, info) printed, so that a committed file can be read (and its derived columns,
such as energy, recomputed) without a device or compiler."""

from __future__ import annotations

import json
from pathlib import Path

from wgrad_cli.errors import WgradError
from wgrad_cli.output.console import out
from wgrad_cli.output.grid import LAYOUT, Grid, set_layout
from wgrad_cli.results.records import SHOWN, read_each
from wgrad_cli.results.tables import calibration_table, document_table, expert_table, profile_tables
from wgrad_cli.results.versus import versus_table


def show_tables(paths: list[Path]) -> list[Grid]:
    """One table per file, in the order given; every file that is not a document of records.SHOWN
    that wgrad wrote is one error line, and then no table is returned."""
    tables: list[Grid] = []
    problems: list[str] = []
    for path, doc in read_each(paths, SHOWN, problems):
        command = "model" if doc.modelled else doc.command  # wgrad model writes bench's records
        title = f"{path}: wgrad {command} on {doc.machine}, {doc.provenance.date or 'undated'}"
        tables.append(document_table(doc, title))
        tables += profile_tables(doc.bench_rows, f"{path}: ")
        tables += [expert_table(r) for r in doc.verify_rows if not r.ok]  # as verify printed them
    if problems:
        raise WgradError(problems)
    return tables


def calibration(paths: list[Path]) -> Grid:
    """One table of every modelled row with a published time in the files (docs/model.md's calibration)."""
    problems: list[str] = []
    rows = [r for _, doc in read_each(paths, ("bench",), problems) for r in doc.bench_rows]
    if problems:
        raise WgradError(problems)
    return calibration_table(rows, f"wgrad model against published times ({len(paths)} files)")


def show_command(paths: list[Path], form: str | None, calibrated: bool = False, versus: str | None = None) -> None:
    """Print the files' tables in the chosen format; JSON is one array of every file's table."""
    if calibrated and versus:
        raise WgradError("--calibration and --versus: each is one table of its own; give one of them")
    tables = [calibration(paths)] if calibrated else [versus_table(paths, versus)] if versus else show_tables(paths)
    if form == "json":
        print(json.dumps([t.to_json() for t in tables], indent=1))
        return
    set_layout(form or "auto", LAYOUT.wide)  # type: ignore[arg-type]
    for i, table in enumerate(tables):
        if i and form == "csv":
            out.print()
        out.print(table)
