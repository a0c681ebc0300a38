"""Typed results records for tests, built from the record types (records.py) as bench
and verify build them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from wgrad_cli.measure.check import errors as comparison
from wgrad_cli.measure.stats import summarize
from wgrad_cli.results.document import write_json
from wgrad_cli.results.files import save
from wgrad_cli.results.records import BenchRow, ShapeRef, VerifyRow

SHAPES = {"calibration": (128, 256, 256, 1, "uniform"), "a": (1024, 256, 512, 2, "zipf s=1.5"),
          "b": (2048, 512, 512, 4, "uniform"), "c": (4096, 1024, 1024, 8, "zipf s=1.2")}


def shape(name: str) -> ShapeRef:
    M, N, K, E, routing = SHAPES.get(name, (1024, 256, 512, 2, "uniform"))
    return ShapeRef(name, M, N, K, E, routing)


def bench_row(index: int, name: str, median_ms: float, run: int = 1, noise: float = 0.01,
              **changes: Any) -> BenchRow:
    """A row as bench writes it, its samples spread by about `noise`; shape "calibration"
    gives the calibration row."""
    calibration = name == "calibration"
    d = shape(name)
    flops = 0 if calibration else 2 * d.N * d.K * d.M
    tflops = flops / (median_ms / 1e3) / 1e12
    summary = summarize([(1 - noise) * median_ms, median_ms, (1 + noise) * median_ms])
    row = BenchRow(index=index, kernel="empty" if calibration else "reference", target="gfx950", shape=d,
                   seed=1, run=run, cache="hot" if calibration else "cold",
                   flush_bytes=0 if calibration else 1 << 29, summary=summary, stop="converged",
                   wall_seconds=0.6, flops=flops, min_bytes=0, tflops=tflops, gbps=0.0,
                   pct_peak=None if calibration else 100 * tflops / 5033.0, clock_mhz=2400,
                   calibration=calibration)
    return replace(row, **changes)


def verify_row(index: int, name: str, ok: bool) -> VerifyRow:
    """A row as verify writes it (one expert's figures stand for all)."""
    d = shape(name)
    errors = comparison(elements=d.E * d.N * d.K, max_abs_error=0.0 if ok else 3.5, max_rel_row_error=0.0,
                        diff_norm=0.0 if ok else 12.0, ref_norm=400.0, mismatches=0 if ok else 17, nans=0,
                        unwritten=0, ok=ok)
    return VerifyRow(index=index, kernel="reference", target="sm_90a", shape=d, seed=1, ok=ok,
                     reference="numpy float64, every element", overall=errors, experts=[errors] * d.E)


def write(path: Path, command: str, records: list[Any], **extra: Any) -> Path:
    """A results file of these records (typed rows, or raw dicts for a file wgrad did not write)."""
    if records and isinstance(records[0], dict):
        write_json(path, command, records, **extra)
    else:
        save(path, None, command, records, **extra)
    return path


# one experiment's rows, and the provenance every file of that run shares (compare refuses others)
BENCH = [bench_row(-1, "calibration", 0.004), bench_row(0, "a", 1.0), bench_row(1, "b", 2.0)]
VERIFY = [verify_row(0, "a", True), verify_row(1, "b", True)]
SAME_RUN = {"config": "configs/smoke.yaml", "config_sha256": "c0ffee", "target": "gfx950", "seed": 1,
            "device": {"name": "AMD Instinct MI355X"}}


def shard(path: Path, i: int, n: int, records: list[BenchRow], sha: str = "c0ffee") -> Path:
    """Shard i of n of the run, as bench --shard writes it."""
    return write(path, "bench", records, **{**SAME_RUN, "config_sha256": sha}, shard=[i, n])
