"""Every cell of the results tables under its header: rows whose figures differ from column to column
(so a swapped, dropped, rescaled or rounded cell shows), each cell written out as the user reads it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner
from rows import SAME_RUN, bench_row, shape, write

from wgrad_cli.cli import cli
from wgrad_cli.compile.occupancy import Occupancy
from wgrad_cli.compile.resources import Resources
from wgrad_cli.measure.check import errors
from wgrad_cli.output.grid import Grid
from wgrad_cli.results.build_tables import build_table
from wgrad_cli.results.records import (
    BenchRow,
    BuildRecord,
    Inputs,
    ModelFigures,
    ModelledTime,
    Sampled,
    ShapeRef,
    Summary,
    VerifyRow,
)
from wgrad_cli.results.tables import bench_table, model_table, verify_table


def cells(table: Grid) -> list[dict[str, str]]:
    """Each row as {header: cell}, every column (the wide layout's), without markup."""
    names = [c.name for c in table.columns]
    assert len(set(names)) == len(names), "a header twice: cells could sit under either"
    return [dict(zip(names, row)) for row in table.plain_rows()]


def test_verify_tables_cells() -> None:
    figures = errors(elements=1000, max_abs_error=1.5, max_rel_row_error=0.25, diff_norm=3.0, ref_norm=96.0,
                     mismatches=7, nans=3, unwritten=5, ok=False)
    row = VerifyRow(index=0, kernel="cdna4", target="gfx950", shape=shape("b"), seed=11, ok=False,
                    reference="numpy float64, every element", overall=figures, experts=[figures],
                    sampled=Sampled(replace(figures, ok=True), [figures]),
                    modelled=ModelledTime("MI355X", 2.4, 123.4, 56.78, "memory", 2.1,
                                          "held-out -12 ... +34%, validation 7"))
    (got,) = cells(verify_table([row], "t"))
    assert got == {"kernel": "cdna4", "shape": "b", "M x N x K, E": "2048 x 512 x 512, 4",
                   "routing": "uniform", "seed": "11", "max abs err": "1.5", "max rel err": "0.25",
                   "rel Frobenius": "0.0312", "mismatches": "7", "NaNs": "3", "unwritten": "5",
                   "sampled rows": "ok", "status": "FAILED", "modelled at": "MI355X 2.4 GHz (held 2.10)",
                   "modelled us": "123.4", "band": "-12..+34% v7", "modelled TFLOP/s": "56.78",
                   "limiter": "memory"}


MODEL = ModelFigures("MI355X", 2.4, "memory", {"mfma": 10.5, "memory": 20.25, "barrier": 3.5, "lds": 4.75,
                                               "issue": 5.5, "tail": 6.25, "bandwidth": 7.75, "launch": 8.5},
                     9.71, 4096, 3, [0, 255, 256], 2, 1 << 20, held_ghz=2.13,
                     band="held-out -11 ... +22%, validation 3")


def test_model_tables_cells() -> None:
    row = replace(bench_row(0, "c", 0.1234), cache="modelled", stop="modelled", tflops=56.78,
                  pct_peak=12.3456, model=MODEL)
    (got,) = cells(model_table([row], "t"))
    assert got == {"kernel": "reference", "shape": "c", "M x N x K, E": "4096 x 1024 x 1024, 8",
                   "modelled us": "123.4", "band": "-11..+22% v3", "TFLOP/s": "56.78", "% peak": "12.35",
                   "GHz held": "2.13", "limiter": "memory", "mfma us": "10.5", "memory us": "20.2",
                   "barrier us": "3.5", "lds us": "4.8", "issue us": "5.5", "tail us": "6.2",
                   "bandwidth us": "7.8", "launch us": "8.5", "MFMA floor us": "9.7", "clock GHz": "2.4",
                   "classes": "3", "emulated": "0, 255, 256"}


def test_bench_tables_cells() -> None:
    row = replace(bench_row(0, "a", 1.0), run=3, summary=Summary(17, 1.2345, 1.1111, 1.2, 1.3, 1.24, 0.0123),
                  tflops=45.678, gbps=321.46, pct_peak=9.87, clock_mhz=2100, power_w=650.4, power_capped=0.25,
                  flush="zero", spin_ms=0.0456, overlap=0.5, throttled=0.4, discarded=2,
                  inputs=Inputs("random", 8, -448.0, 416.0, -16, 2))
    (got,) = cells(bench_table([row], "t"))
    assert got == {"kernel": "reference", "shape": "a", "M x N x K, E": "1024 x 256 x 512, 2",
                   "routing": "zipf s=1.5", "run": "3", "cache": "cold zero", "samples": "17",
                   "median us": "1,234.5", "min us": "1,111.1", "p20-p80 us": "1,200.0-1,300.0",
                   "rel stdev": "1.23%", "TFLOP/s": "45.68", "GB/s": "321.5", "% peak": "9.87",
                   "clock MHz": "2100", "W": "650", "mJ": "803", "capped": "25%", "spin us": "45.6",
                   "overlap": "50%", "throttled": "40% (-2)",
                   "inputs": "random 2^+-8: [-448, 416] x 2^[-16, 2]", "stop": "converged"}


def test_compares_cells(tmp_path: Path) -> None:
    def run(median_ms: float, noise: float) -> list[BenchRow]:
        return [bench_row(-1, "calibration", 0.004), bench_row(0, "a", median_ms, noise=noise)]

    base = write(tmp_path / "base.json", "bench", run(1.0, 0.02), **SAME_RUN)
    new = write(tmp_path / "new.json", "bench", run(1.25, 0.01), **SAME_RUN)
    result = CliRunner().invoke(cli, ["compare", str(base), str(new), "--wide"])
    assert result.exit_code == 1, result.output  # 25% slower: a regression
    header, _, *rows = [line.strip("|").split("|")
                        for line in result.stdout.splitlines() if line.startswith("|")]
    got = [dict(zip((h.strip() for h in header), (c.strip() for c in row))) for row in rows]
    slower = next(r for r in got if r["shape"] == "a")
    noise = 100 * min(bench_row(0, "a", 1.0, noise=0.02).summary.rel_stdev,
                      bench_row(0, "a", 1.25, noise=0.01).summary.rel_stdev)
    assert slower["median us"] == "1,000.0 -> 1,250.0" and slower["delta"] == "+25.0%"
    assert slower["noise"] == f"{noise:.2f}%" and slower["verdict"] == "slower"
    assert slower["TFLOP/s"] == (f"{bench_row(0, 'a', 1.0).tflops:,.2f} -> "
                                 f"{bench_row(0, 'a', 1.25).tflops:,.2f}")


def build_record(name: str, target: str, ok: bool, resources: Resources | None, cache_hit: bool,
                 dims: ShapeRef) -> BuildRecord:
    return BuildRecord(shape=replace(dims, name=name), kernel="reference", target=target, ok=ok,
                       code_object=None, compile_seconds=1.234, cache_hit=cache_hit, compiler="clang 22",
                       resources=resources, errors=[])


def test_build_tables_cells() -> None:
    res = Resources("k", registers=21, agprs=4, sgprs=24, shared_bytes=1536, scratch_bytes=16, spills=2,
                    wave_size=64, occupancy=Occupancy(3, 6, None, "registers"))
    cuda = Resources("k", registers=40, agprs=None, sgprs=None, shared_bytes=4096, scratch_bytes=0, spills=0,
                     wave_size=32, occupancy=Occupancy(5, None, 40, "shared memory"))
    records = [build_record("a", "gfx950", True, res, True, shape("a")),
               build_record("a2", "gfx950", True, res, True, shape("a")),  # the same build: one row
               build_record("b", "sm_90a", True, cuda, False, shape("b")),
               build_record("c", "sm_90a", False, None, False, shape("c"))]
    assert cells(build_table(records)) == [
        {"kernel": "reference", "target": "gfx950", "M x N x K, E": "1024 x 256 x 512, 2", "shapes": "a, a2",
         "status": "ok", "registers": "21v 4a 24s", "static LDS/smem B": "1,536", "scratch B": "16",
         "spills": "2", "occupancy": "3 WGs/CU, 6 waves/SIMD", "limited by": "registers",
         "compile s": "cached"},
        {"kernel": "reference", "target": "sm_90a", "M x N x K, E": "2048 x 512 x 512, 4", "shapes": "b",
         "status": "ok", "registers": "40", "static LDS/smem B": "4,096", "scratch B": "0", "spills": "0",
         "occupancy": "5 blocks/SM, 40 warps/SM", "limited by": "shared memory", "compile s": "1.23"},
        {"kernel": "reference", "target": "sm_90a", "M x N x K, E": "4096 x 1024 x 1024, 8", "shapes": "c",
         "status": "FAILED", "registers": "", "static LDS/smem B": "", "scratch B": "", "spills": "",
         "occupancy": "", "limited by": "", "compile s": "1.23"}]
