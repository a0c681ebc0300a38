"""speedup.py: a kernel's TFLOP/s beside the baselines of its shape, across results files."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rows import bench_row, shape
from rows import write as write_rows

from wgrad_cli.cli import cli
from wgrad_cli.errors import WgradError
from wgrad_cli.results.baseline_names import NAMES as BASELINES
from wgrad_cli.results.records import BenchRow, Paired, to_json
from wgrad_cli.results.speedup import geomeans, load_speedups, speedups
from wgrad_cli.results.tables import SPEEDUP_COLUMNS, speedup_markdown


def record(index: int, kernel: str, tflops: float, run: int = 1, name: str = "a", **changes: Any) -> BenchRow:
    """A bench row of this rate (the fields the speed-ups read)."""
    return bench_row(index, name, 1.0, run=run, kernel=kernel,
                     shape=replace(shape("a"), name=name, routing="uniform"), tflops=tflops,
                     calibration=kernel == "empty", baseline=kernel in BASELINES, **changes)


def run_of(index: int, name: str, mine: float, grouped: float, loop: float, ceiling: float,
           *same_shape: float) -> list[BenchRow]:
    """A kernel's record and the baselines of its shape; same_shape: bf16-grouped's and bf16-loop's
    TFLOP/s, left out as in files from before them."""
    names = ("torch-grouped", "torch-loop", "bf16-ceiling", "bf16-grouped", "bf16-loop")
    return [record(index, "hopper", mine, name=name),
            *(record(index, kernel, tflops, name=name)
              for kernel, tflops in zip(names, (grouped, loop, ceiling, *same_shape)))]


def test_faster_torch_path_and_ceiling_of_the_same_shape() -> None:
    records = [record(-1, "empty", 0.0), *run_of(0, "a", 300.0, 200.0, 250.0, 600.0),
               *run_of(1, "b", 400.0, 500.0, 100.0, 800.0), record(0, "hopper", 999.0, run=2)]
    rows = speedups(records)
    assert [(r.shape.name, r.torch_path, r.x_torch, r.x_ceiling) for r in rows] == [
        ("a", "torch-loop", 300 / 250, 0.5), ("b", "torch-grouped", 400 / 500, 0.5)]
    x_torch, x_ceiling, x_same = geomeans(rows)["hopper"]
    assert x_torch == pytest.approx(math.sqrt(1.2 * 0.8)) and x_ceiling == pytest.approx(0.5) \
        and x_same is None
    assert all(r.same_shape_tflops is None and r.x_same_shape is None for r in rows)


def test_the_torch_path_is_the_fastest_of_eager_and_compiled() -> None:
    """compiled-grouped and compiled-loop count as torch paths (the dequantization timed)."""
    records = [*run_of(0, "a", 300.0, 200.0, 250.0, 600.0), record(0, "compiled-grouped", 400.0),
               record(0, "compiled-loop", 350.0)]
    (row,) = speedups(records)
    assert (row.torch_path, row.torch_tflops, row.x_torch) == ("compiled-grouped", 400.0, 0.75)


def test_same_shape_is_the_faster_bf16_gemm_of_the_shape() -> None:
    """bf16-grouped and bf16-loop: the faster counts; the mean runs over the rows that have one."""
    rows = speedups([*run_of(0, "a", 300.0, 200.0, 250.0, 600.0, 400.0, 500.0),
                     *run_of(1, "b", 400.0, 500.0, 100.0, 800.0, 640.0, 320.0),
                     *run_of(2, "c", 100.0, 50.0, 50.0, 200.0)])
    assert [(r.same_shape_tflops, r.x_same_shape) for r in rows] == [(500.0, 0.6), (640.0, 0.625),
                                                                     (None, None)]
    assert geomeans(rows)["hopper"][2] == pytest.approx(math.sqrt(0.6 * 0.625))
    md = speedup_markdown(rows).splitlines()
    assert md[2].endswith("| 600.0 | 0.50 | 500.0 | 0.60 | |") and md[4].endswith("| 200.0 | 0.50 | | | |")
    assert md[-1].endswith("| 0.61 | |")


def test_every_kernel_of_a_run_meets_the_baselines_of_its_shape() -> None:
    records = [*run_of(0, "a", 300.0, 200.0, 250.0, 600.0), record(1, "hopper_v9", 240.0)]
    rows = speedups(records)
    assert [(r.kernel, r.x_torch, r.x_ceiling) for r in rows] == [("hopper", 300 / 250, 0.5),
                                                                   ("hopper_v9", 240 / 250, 0.4)]


def test_rows_of_another_shard_meet_no_baselines() -> None:
    """In a merged file, a kernel timed on another shard's machine gets no ratio."""
    records = [replace(r, shard=1) for r in run_of(0, "a", 300.0, 200.0, 250.0, 600.0)]
    rows = speedups([*records, record(1, "hopper_v9", 240.0, shard=2),
                     record(2, "hopper_w1", 250.0, shard=1)])
    assert [r.kernel for r in rows] == ["hopper", "hopper_w1"]


def test_rows_without_both_baselines_are_left_out() -> None:
    no_ceiling = [r for r in run_of(0, "a", 300.0, 200.0, 250.0, 600.0) if r.kernel != "bf16-ceiling"]
    other_kernel = record(1, "hopper_w1", 310.0)  # another kernel of the run, on the same shape
    assert speedups([*no_ceiling, other_kernel]) == []
    unmatched = record(2, "hopper_w1", 310.0, name="b")  # a shape the baselines did not run on
    assert [r.kernel for r in speedups([*run_of(0, "a", 300.0, 200.0, 250.0, 600.0),
                                        unmatched])] == ["hopper"]
    only_loop = [r for r in run_of(0, "a", 300.0, 200.0, 250.0, 600.0) if r.kernel != "torch-grouped"]
    assert [r.torch_path for r in speedups(only_loop)] == ["torch-loop"]
    assert speedups(run_of(0, "all-empty", 0.0, 0.0, 0.0, 0.0)) == []  # no FLOPs, no ratio


def test_markdown_has_a_row_per_shape_and_the_mean() -> None:
    md = speedup_markdown(speedups([*run_of(0, "a", 300.0, 200.0, 250.0, 600.0),
                                    *run_of(1, "b", 400.0, 500.0, 100.0, 800.0)])).splitlines()
    assert md[2] == ("| hopper | a | 1024 x 256 x 512, 2 | 300.0 | torch-loop | 250.0 | 1.20 | | 600.0 | "
                     "0.50 | | | |")
    assert md[-1] == "| hopper | geometric mean (2 rows) | | | | | 0.98 | | | 0.50 | | | |"


def test_interleaved_rows_give_the_median_of_the_rounds_and_every_run_its_row() -> None:
    """An interleaved kernel row's speed-up over the torch path is its rounds' median (not the ratio
    of medians), their 20-80% range beside it; --every-run pairs each run with its own baselines."""
    rounds = Paired("torch-loop", 40, 1.25, 1.1, 1.3)
    records = [replace(r, paired=[rounds]) if r.kernel == "hopper" else r
               for r in run_of(0, "a", 300.0, 200.0, 250.0, 600.0)]
    again = [replace(r, run=2, tflops=r.tflops * (1.5 if r.kernel == "hopper" else 1.0)) for r in records]
    (first,) = speedups([*records, *again])
    assert first.x_torch == 1.25 and first.run == 1
    md = speedup_markdown(speedups([*records, *again], every_run=True)).splitlines()
    assert md[2].startswith("| hopper | a (run 1) |") and "| 1.25 | 1.10-1.30 |" in md[2]
    assert md[3].startswith("| hopper | a (run 2) |") and "| 1.25 | 1.10-1.30 |" in md[3]


def write(path: Path, command: str, records: list[Any]) -> Path:
    return write_rows(path, command, records)


def test_files_join_in_order_and_bad_ones_are_one_line_each(tmp_path: Path) -> None:
    first = write(tmp_path / "one.json", "bench", run_of(0, "a", 300.0, 200.0, 250.0, 600.0))
    second = write(tmp_path / "two.json", "bench", run_of(0, "b", 400.0, 500.0, 100.0, 800.0))
    rows, sources = load_speedups([second, first])
    assert [r.shape.name for r in rows] == ["b", "a"]
    assert sources[0].startswith(f"{second}: ") \
        and "baselines torch-grouped, torch-loop, bf16-ceiling" in sources[0]
    plain = write(tmp_path / "plain.json", "bench", [record(0, "hopper", 300.0)])
    verify = write(tmp_path / "verify.json", "verify", [])
    torn = write(tmp_path / "torn.json", "bench", [{k: v for k, v in to_json(r).items() if k != "tflops"}
                                                   for r in run_of(0, "a", 300.0, 200.0, 250.0, 600.0)])
    with pytest.raises(WgradError) as exc:
        load_speedups([first, plain, verify, tmp_path / "missing.json", torn])
    assert [line.split(":")[0] for line in exc.value.lines] == \
        [str(p) for p in (plain, verify, tmp_path / "missing.json", torn)]
    assert "run with --baselines" in exc.value.lines[0]
    assert exc.value.lines[3] == f"{torn}: record 0 lacks tflops; give a results file wgrad wrote"


def test_command(tmp_path: Path) -> None:
    files = [str(write(tmp_path / f"{n}.json", "bench", run_of(0, n, mine, 200.0, 250.0, 600.0)))
             for n, mine in (("a", 300.0), ("b", 500.0))]
    result = CliRunner().invoke(cli, ["speedup", "--markdown", *files])
    assert result.exit_code == 0, result.output
    table, sources = result.output.split("\n\n")
    assert table.splitlines()[-1] == "| hopper | geometric mean (2 rows) | | | | | 1.55 | | | 0.65 | | | |"
    assert all(len(line) <= 100 for line in sources.splitlines())
    named = " ".join(sources.split()).split(" baselines torch-grouped, torch-loop, bf16-ceiling")
    assert [n.strip().split(": an unnamed device, 20")[0] for n in named[:2]] == files and named[2] == ""
    both = write(tmp_path / "both.json", "bench",
                 [*run_of(0, "a", 300.0, 200.0, 250.0, 600.0), record(1, "hopper_v9", 240.0)])
    v9 = CliRunner().invoke(cli, ["speedup", "--markdown", "--kernel", "hopper_v9", str(both)])
    assert v9.exit_code == 0 and [line.split(" | ")[0]
                                  for line in v9.output.splitlines()[2:4]] == ["| hopper_v9"] * 2
    unknown = CliRunner().invoke(cli, ["speedup", "--kernel", "hopper_v8", "--kernel", "hopper", str(both)])
    assert unknown.exit_code == 2 and unknown.output.strip() == \
        "--kernel hopper_v8: no speed-up rows in the files given; they have hopper, hopper_v9"
    bad = CliRunner().invoke(cli, ["speedup", files[0], str(tmp_path / "missing.json")])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert bad.output.strip().splitlines() == [f"{tmp_path / 'missing.json'}: cannot read it (No such file "
                                               "or directory); give a results file wgrad wrote"]


def test_the_whole_path_under_max_autotune_is_a_torch_path_and_dequant_has_a_rate() -> None:
    """autotuned-grouped competes for the torch path; compiled-dequant gives (N + K) x
    tokens values per second."""
    fast = record(0, "compiled-dequant", 1.0)
    dequant = replace(fast, summary=replace(fast.summary, median_ms=0.001))
    (row,) = speedups([*run_of(0, "a", 300.0, 200.0, 250.0, 600.0), record(0, "autotuned-grouped", 500.0),
                       dequant])
    assert (row.torch_path, row.x_torch) == ("autotuned-grouped", 0.6)
    assert row.dequant_gvals == pytest.approx((256 + 512) * 1024 / 1e-6 / 1e9)


def test_the_markdown_rule_has_a_cell_per_column() -> None:
    header, rule = speedup_markdown([]).splitlines()
    assert rule == "|" + "---|" * len(SPEEDUP_COLUMNS) and header.count("|") == len(SPEEDUP_COLUMNS) + 1
