"""`wgrad show --versus KERNEL`: the modelled rows of several files side by side, each kernel's row
against KERNEL's row of the same experiment (shape, clock and the machine figures the run changed):
its time and its speed-up. This is how a kernel is held against the upstream kernel on the timing
model (docs/cdna4-design.md), where `compare` pairs rows of one kernel only."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.markup import escape

from wgrad_cli.errors import WgradError
from wgrad_cli.output.grid import Grid
from wgrad_cli.results.records import BenchRow, ShapeRef, read_each


@dataclass(frozen=True)
class Experiment:
    """What two modelled rows must share to be set side by side."""

    shape: ShapeRef
    clock_ghz: float
    figures: tuple[str, ...]  # the machine file's figures the run changed (--figure NAME=VALUE)


def modelled_rows(paths: list[Path]) -> dict[Experiment, dict[str, BenchRow]]:
    """Each experiment's rows by kernel, in the order the files hold them; a file that is not a
    bench document, or a measured row, is one error line each."""
    found: dict[Experiment, dict[str, BenchRow]] = {}
    problems: list[str] = []
    for path, doc in read_each(paths, ("bench",), problems):
        figures = tuple(str(f) for f in (doc.environment.get("modelled") or {}).get("figures", []))
        for r in doc.bench_rows:
            if r.model is None:
                problems.append(f"{path}: {r.kernel} on {r.shape.name} is measured; --versus sets modelled "
                                "rows (wgrad model) side by side")
                continue
            found.setdefault(Experiment(r.shape, r.model.clock_ghz, figures), {})[r.kernel] = r
    if problems:
        raise WgradError(problems)
    return found


def versus_table(paths: list[Path], base: str) -> Grid:
    """One row per experiment and kernel other than `base`: `base`'s modelled time, the kernel's,
    and the speed-up (base's time over the kernel's). Every experiment needs a `base` row."""
    found = modelled_rows(paths)
    lacking = [f"{e.shape.name} at {e.clock_ghz:g} GHz{' with ' + ' '.join(e.figures) if e.figures else ''}: "
               f"no {base} row in the files; --versus needs {base}'s row of every shape, clock and figure set"
               for e, kernels in found.items() if base not in kernels]
    if lacking or not found:
        raise WgradError(lacking or [f"--versus {base}: the files hold no modelled rows"])
    table = Grid(f"wgrad model: each kernel against {escape(base)} ({len(paths)} files, modelled)")
    for name in ("shape", "GHz", "figures", f"{base} us", "kernel", "us", "TFLOP/s", f"x {base}"):
        table.add_column(escape(name), "left" if name in ("shape", "figures", "kernel") else "right",
                         detail=name == "TFLOP/s")  # --wide: 100 columns hold the rest
    for e, kernels in found.items():
        ref = kernels[base].summary.median_ms
        for kernel, r in kernels.items():
            if kernel != base:
                table.add_row(escape(e.shape.name), f"{e.clock_ghz:g}", escape(" ".join(e.figures)),
                              f"{ref * 1e3:,.1f}", escape(kernel), f"{r.summary.median_ms * 1e3:,.1f}",
                              f"{r.tflops:,.0f}", f"{ref / r.summary.median_ms:.2f}")
    return table
