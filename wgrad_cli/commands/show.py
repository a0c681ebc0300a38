"""`wgrad show`: results files printed as the tables the commands that wrote them (bench, verify,
selfbench, build, info) printed, so that a committed file can be read (and its derived columns,
such as energy, recomputed) without a device or compiler."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from rich.markup import escape

from wgrad_cli.config.options import DEFAULT_MACHINE
from wgrad_cli.errors import WgradError
from wgrad_cli.model.machine import load
from wgrad_cli.output.console import err, out
from wgrad_cli.output.grid import LAYOUT, Grid, set_layout
from wgrad_cli.results.records import SHOWN, read_each
from wgrad_cli.results.plot import draw_calibration
from wgrad_cli.results.tables import (
    band_table,
    calibration_table,
    document_table,
    expert_table,
    profile_tables,
)
from wgrad_cli.results.validation import NONE_BEYOND, RULES, WITHIN, Point, band, fit, points
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


def calibration(paths: list[Path], plot: Path | None = None) -> list[Grid]:
    """Every modelled row with a published time in the files, and the held-out band per clock
    (docs/model.md's validation); with `plot`, modelled against published time drawn there."""
    problems: list[str] = []
    rows = [r for _, doc in read_each(paths, ("bench",), problems) for r in doc.bench_rows]
    if problems:
        raise WgradError(problems)
    title = f"wgrad model against published times ({len(paths)} files)"
    found = points(rows)
    if plot is not None:
        if not found:
            raise WgradError(f"--plot {plot}: none of the files' rows has a published time and "
                             "a schema-6 model")
        draw_calibration(found, plot, title)
        err.print(escape(f"plot: {plot}"), highlight=False)
    training = [p for p in found if not p.held_out]
    return [calibration_table(rows, title),
            *([band_table(found, "held-out band (validation split)")] if found else []),
            *([rules_table(found)] if training and len(training) < len(found) else [])]


def rules_table(found: list[Point]) -> Grid:
    """Each clock and launch rule (validation.RULES) fitted on the training rows, and what it then
    gives the held-out rows, from the files' grid clocks; the first is the machine file's."""
    m = load(DEFAULT_MACHINE)
    training, held = [p for p in found if not p.held_out], [p for p in found if p.held_out]
    table = Grid(f"rules fitted on the {len(training)} training rows (least squares of log(modelled "
                 "/ published), each row's CU clocks and memory floor kept) and their held-out "
                 f"rows; the {m.name} machine file: rest_power_w {m.rest_power_w:g}, matrix_power_w "
                 f"{m.matrix_power_w:g}, launch_us {m.launch_us:g}")
    for name in ("rule", "fitted", "rest W", "matrix W", "launch us", "training rms", "held-out band",
                 f"within {100 * WITHIN:.0f}%", f"beyond {100 * NONE_BEYOND:.0f}%"):
        table.add_column(name, "left" if name in ("rule", "held-out band") else "right")
    for rule in RULES:
        f = fit(training, m.power_budget_w, m.peak_ghz, rule)
        b = band([replace(p, modelled_us=f.modelled_us(p, m.power_budget_w, m.peak_ghz)) for p in held])
        table.add_row(rule.name, str(rule.fitted), f"{f.rest_w:,.0f}", f"{f.matrix_w:,.0f}",
                      f"{f.launch_us:.2f}", f"{f.rms_log:.3f}", b.label().removeprefix("held-out "),
                      f"{b.within:.0%}", str(b.beyond))
    return table


def show_command(paths: list[Path], form: str | None, calibrated: bool = False, versus: str | None = None,
                 plot: Path | None = None) -> None:
    """Print the files' tables in the chosen format; JSON is one array of every file's table."""
    if calibrated and versus:
        raise WgradError("--calibration and --versus: each is one table of its own; give one of them")
    if plot is not None and not calibrated:
        raise WgradError(f"--plot {plot}: draws the calibration (modelled against published "
                         "time); give --calibration")
    tables = (calibration(paths, plot) if calibrated else [versus_table(paths, versus)] if versus
              else show_tables(paths))
    if form == "json":
        print(json.dumps([t.to_json() for t in tables], indent=1))
        return
    set_layout(form or "auto", LAYOUT.wide)  # type: ignore[arg-type]
    for i, table in enumerate(tables):
        if i and form == "csv":
            out.print()
        out.print(table)
