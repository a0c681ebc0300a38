"""Speed-ups over the baselines: a kernel's TFLOP/s against the torch path (the fastest of the
torch paths timed beside it: eager and, in files since 2026-12-03, compiled dequantization, each
with a grouped GEMM or a loop), the bf16 ceiling and, where it was timed, bf16 on the same shape
(the faster of bf16-grouped and bf16-loop), all on the same shape in the same run, with geometric
means. `bench --baselines` prints them for its run; `wgrad speedup` for several results
files at once, so a table spanning configs (the README's) comes from the tool, not by hand.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.markup import escape

from wgrad_cli.baselines import CEILING, SAME_SHAPE, TORCH_PATHS
from wgrad_cli.errors import WgradError
from wgrad_cli.grid import Grid
from wgrad_cli.report import cell
from wgrad_cli.results import BAD_RECORD, load, shape_label, unreadable


@dataclass(frozen=True)
class Speedup:
    """One kernel on one shape, first run, beside the baselines of that shape."""

    kernel: str
    shape: dict[str, Any]
    tflops: float
    torch_path: str  # the faster torch baseline on this shape
    torch_tflops: float
    ceiling_tflops: float
    same_shape_tflops: float | None  # the faster bf16 GEMM on this shape; None in files from before it

    @property
    def x_torch(self) -> float:
        return self.tflops / self.torch_tflops

    @property
    def x_ceiling(self) -> float:
        return self.tflops / self.ceiling_tflops

    @property
    def x_same_shape(self) -> float | None:
        return None if self.same_shape_tflops is None else self.tflops / self.same_shape_tflops


def speedups(records: list[dict[str, Any]]) -> list[Speedup]:
    """The first run of each (kernel, shape) that has a torch path and the ceiling beside it, in
    record order; shapes without FLOPs (every expert empty) have no ratio and are left out.
    Records of one run: baselines are matched to kernels by shape (bench times them once per
    shape, on the same problem as every kernel of the run) and, in merged files, by shard, so that
    a ratio never spans two machines."""
    first = [r for r in records if r.get("run", 1) == 1 and not r.get("calibration")]
    baselines: dict[str, dict[str, float]] = {}
    for r in first:
        if r.get("baseline"):
            baselines.setdefault(_key(r), {})[r["kernel"]] = r["tflops"]
    rows = []
    for r in first:
        base = baselines.get(_key(r), {})
        torch = [name for name in TORCH_PATHS if name in base]
        if r.get("baseline") or not torch or CEILING not in base or min(r["tflops"], *base.values()) <= 0:
            continue
        path = max(torch, key=lambda name: base[name])
        same = max((base[name] for name in SAME_SHAPE if name in base), default=None)
        rows.append(Speedup(r["kernel"], r["shape"], r["tflops"], path, base[path], base[CEILING], same))
    return rows


def _key(record: dict[str, Any]) -> str:
    """Where a record was timed: its shape and, in a merged file, its shard."""
    return json.dumps([record["shape"], record.get("shard")], sort_keys=True)


def _geomean(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(values))))


def geomeans(rows: list[Speedup]) -> dict[str, tuple[float, float, float | None]]:
    """Per kernel: the geometric means of x torch path, x ceiling and x same shape over its rows (the
    last over the rows that have it, None if none has)."""
    by_kernel: dict[str, list[Speedup]] = {}
    for row in rows:
        by_kernel.setdefault(row.kernel, []).append(row)
    means = {}
    for kernel, mine in by_kernel.items():
        same = [x for x in (r.x_same_shape for r in mine) if x is not None]
        means[kernel] = (_geomean([r.x_torch for r in mine]), _geomean([r.x_ceiling for r in mine]),
                         _geomean(same) if same else None)
    return means


COLUMNS = ("kernel", "shape", "M x N x K, E", "TFLOP/s", "torch path", "TFLOP/s", "x torch path", "bf16 ceiling",
           "x ceiling", "bf16 same shape", "x same shape")


def _cells(rows: list[Speedup]) -> list[list[str]]:
    """The table's cells, shared by the terminal and the Markdown form: a row per Speedup, then
    each kernel's geometric means."""
    cells = [[r.kernel, r.shape["name"], shape_label(r.shape), f"{r.tflops:,.1f}", r.torch_path,
              f"{r.torch_tflops:,.1f}", f"{r.x_torch:.2f}", f"{r.ceiling_tflops:,.1f}", f"{r.x_ceiling:.2f}",
              cell(r.same_shape_tflops, ",.1f"), cell(r.x_same_shape, ".2f")]
             for r in rows]
    for kernel, (x_torch, x_ceiling, x_same) in geomeans(rows).items():
        n = sum(r.kernel == kernel for r in rows)
        cells.append([kernel, f"geometric mean ({n} row{'s' * (n != 1)})", "", "", "", "", f"{x_torch:.2f}", "",
                      f"{x_ceiling:.2f}", "", cell(x_same, ".2f")])
    return cells


def speedup_table(rows: list[Speedup], title: str) -> Grid:
    table = Grid(title)
    for i, name in enumerate(COLUMNS):
        table.add_column(name, "left" if name in ("kernel", "shape", "torch path") else "right",
                         detail=i in (2, 5, 7, 9))  # dims and the baselines' own rates; their ratios stay
    for cells in _cells(rows):
        table.add_row(*map(escape, cells))
    return table


def speedup_markdown(rows: list[Speedup]) -> str:
    """The same table in Markdown, for a README."""
    def line(cells: tuple[str, ...] | list[str]) -> str:
        return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"

    return "\n".join([line(COLUMNS), "|" + "---|" * len(COLUMNS), *map(line, _cells(rows))])


def load_speedups(paths: list[Path]) -> list[Speedup]:
    """The speed-up rows of several bench results files, in the order given; every file that is
    not a bench result with baseline rows is one error line."""
    rows: list[Speedup] = []
    problems: list[str] = []
    for path in paths:
        try:
            doc = load(path, ("bench",))
        except WgradError as exc:
            problems += exc.lines
            continue
        try:
            found = speedups(doc["records"])
        except BAD_RECORD as exc:
            problems.append(f"{path}: a record {unreadable(exc)}; give a results file wgrad wrote")
            continue
        if not found:
            problems.append(f"{path}: no kernel row has both baselines beside it; give bench results run with --baselines")
        rows += found
    if problems:
        raise WgradError(problems)
    return rows


def only(rows: list[Speedup], kernels: tuple[str, ...]) -> list[Speedup]:
    """The rows of the named kernels (all rows when none is named); a name with no rows is an error
    that lists the kernels the files have."""
    present = list(dict.fromkeys(r.kernel for r in rows))
    missing = [k for k in kernels if k not in present]
    if missing:
        raise WgradError([f"--kernel {k}: no speed-up rows in the files given; they have {', '.join(present)}"
                          for k in missing])
    return [r for r in rows if not kernels or r.kernel in kernels]
