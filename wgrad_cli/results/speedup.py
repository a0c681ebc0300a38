"""Speed-ups over the baselines: a kernel's TFLOP/s against the torch path (the fastest of the
torch paths timed beside it: eager, compiled dequantization and, in files of schema 2, the whole
path under max-autotune), the bf16 ceiling and, where it was timed, bf16 on the same shape (the
faster of bf16-grouped and bf16-loop), all on the same shape in the same run, with geometric
means; beside them the compiled dequantization's rate, in values per second. `bench --baselines`
prints them for its run; `wgrad speedup` for several results files at once, so a table spanning
configs (the docs') comes from the tool, not by hand. The tables are in tables.py. Where the run
sampled in interleaved rounds, the speed-up over the torch path is the median of its ratios per
round (the two samples of a round seconds apart at most), their 20th-80th percentiles beside it;
elsewhere, the ratio of the medians.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wgrad_cli.errors import WgradError
from wgrad_cli.results.baseline_names import CEILING, DEQUANT, SAME_SHAPE, TORCH_PATHS
from wgrad_cli.results.records import BenchRow, Paired, ShapeRef, read_each


@dataclass(frozen=True)
class Speedup:
    """One kernel on one shape, first run, beside the baselines of that shape."""

    kernel: str
    shape: ShapeRef
    tflops: float
    torch_path: str  # the fastest torch baseline on this shape
    torch_tflops: float
    ceiling_tflops: float
    same_shape_tflops: float | None  # the faster bf16 GEMM on this shape; None in files from before it
    # the compiled dequantization, G values per second; None in files from before it
    dequant_gvals: float | None
    paired: Paired | None = None  # over the torch path, per interleaved round; None where not interleaved
    run: int = 1

    @property
    def x_torch(self) -> float:
        return self.paired.median if self.paired else self.tflops / self.torch_tflops

    @property
    def x_ceiling(self) -> float:
        return self.tflops / self.ceiling_tflops

    @property
    def x_same_shape(self) -> float | None:
        return None if self.same_shape_tflops is None else self.tflops / self.same_shape_tflops


def dequant_rate(row: BenchRow) -> float | None:
    """G values per second of a compiled-dequant row: both operands' (N + K) x tokens values, the
    tokens from the row's FLOPs (2 N K per token); None for a shape without tokens."""
    d = row.shape
    tokens = row.flops / (2 * d.N * d.K)
    return (d.N + d.K) * tokens / (row.summary.median_ms / 1e3) / 1e9 if tokens \
        and row.summary.median_ms > 0 else None


def speedups(records: list[BenchRow], every_run: bool = False) -> list[Speedup]:
    """The first run (every run, every_run) of each (kernel, shape) that has a torch path and the
    ceiling beside it, in record order; shapes without FLOPs (every expert empty) have no ratio and
    are left out. Records of one run: baselines are matched to kernels by shape and run (bench times
    them once per shape and run, on the same problem as every kernel of the run) and, in merged
    files, by shard, so that a ratio never spans two machines."""
    chosen = [r for r in records if (every_run or r.run == 1) and not r.calibration]
    baselines: dict[tuple[ShapeRef, int | None, int], dict[str, BenchRow]] = {}
    for r in chosen:
        if r.baseline:
            baselines.setdefault((r.shape, r.shard, r.run), {})[r.kernel] = r
    rows = []
    for r in chosen:
        base = baselines.get((r.shape, r.shard, r.run), {})
        torch = [name for name in TORCH_PATHS if name in base]
        if r.baseline or not torch or CEILING not in base \
                or min([r.tflops, *(b.tflops for b in base.values())]) <= 0:
            continue
        path = max(torch, key=lambda name: base[name].tflops)
        same = max((base[name].tflops for name in SAME_SHAPE if name in base), default=None)
        rows.append(Speedup(r.kernel, r.shape, r.tflops, path, base[path].tflops, base[CEILING].tflops, same,
                            dequant_rate(base[DEQUANT]) if DEQUANT in base else None,
                            next((x for x in r.paired if x.baseline == path), None), r.run))
    return rows


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


def load_speedups(paths: list[Path], every_run: bool = False) -> tuple[list[Speedup], list[str]]:
    """The speed-up rows of several bench results files, in the order given, and a line per file
    naming its device, date and the baselines it timed; every file that is not a bench result with
    baseline rows is one error line."""
    rows: list[Speedup] = []
    sources: list[str] = []
    problems: list[str] = []
    for path, doc in read_each(paths, ("bench",), problems):
        if doc.modelled:
            problems.append(f"{path}: its times are modelled (wgrad model); speed-ups divide measured times "
                            "by baselines measured beside them, so give measured bench results")
            continue
        found = speedups(doc.bench_rows, every_run)
        if not found:
            problems.append(f"{path}: no kernel row has both baselines beside it; give bench results run "
                            "with --baselines")
        rows += found
        timed = ", ".join(dict.fromkeys(r.kernel for r in doc.bench_rows if r.baseline))
        rounds = ("; kernels and baselines in interleaved rounds"
                  if any(r.interleaved for r in doc.bench_rows) else "")
        sources.append(f"{path}: {doc.device_name or 'an unnamed device'}, "
                       f"{doc.provenance.date or 'undated'}; baselines {timed}{rounds}")
    if problems:
        raise WgradError(problems)
    return rows, sources


def only(rows: list[Speedup], kernels: tuple[str, ...]) -> list[Speedup]:
    """The rows of the named kernels (all rows when none is named); a name with no rows is an error
    that lists the kernels the files have."""
    present = list(dict.fromkeys(r.kernel for r in rows))
    missing = [k for k in kernels if k not in present]
    if missing:
        raise WgradError([f"--kernel {k}: no speed-up rows in the files given; they have {', '.join(present)}"
                          for k in missing])
    return [r for r in rows if not kernels or r.kernel in kernels]
