"""`wgrad show --calibration`: modelled rows with a published time, one row per kernel and shape,
the modelled time at each clock the files hold and the miss against the published time."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner
from rows import bench_row, write

from wgrad_cli.cli import cli
from wgrad_cli.results.records import BenchRow, ModelFigures
from wgrad_cli.results.tables import calibration_table
from wgrad_cli.results.validation import held_out


def modelled(name: str, us: float, clock: float, published: float | None, source: str = "a table",
             held: float | None = None) -> BenchRow:
    figures = ModelFigures("MI355X", clock, "mfma", {"mfma": us}, us, 256, 1, [0, 255], 1, 0,
                           published, source if published else None, held_ghz=held)
    return replace(bench_row(0, name, us / 1e3), kernel="gemm", cache="modelled", stop="modelled",
                   model=figures)


def test_one_row_per_kernel_and_shape_with_the_miss_at_each_clock() -> None:
    rows = [modelled("b", 80.0, 2.0, 100.0, held=1.45), modelled("b", 70.0, 2.4, 100.0, held=1.7),
            modelled("a", 55.0, 2.0, 50.0, "a paper"), modelled("c", 10.0, 2.0, None)]
    table = calibration_table(rows, "t")
    assert [c.name for c in table.columns] == ["kernel", "M x N x K", "set", "measured us", "duty", "toggle",
                                               "2 GHz us", "2 GHz held", "2 GHz miss", "2.4 GHz us",
                                               "2.4 GHz held", "2.4 GHz miss"]
    # a file from before the power limit held the clock given; before schema 6 no duty or toggle is known
    sets = ["held out" if held_out("gemm", *dims) else "training"
            for dims in ((1024, 256, 512), (2048, 512, 512))]
    assert table.rows == [["gemm", "1024x256x512", sets[0], "50.0", "", "", "55.0", "2.00", "+10.0%",
                           "-", "-", "-"],
                          ["gemm", "2048x512x512", sets[1], "100.0", "", "", "80.0", "1.45", "-20.0%",
                           "70.0", "1.70", "-30.0%"]]
    assert table.title == "t\npublished: gemm: a table; gemm: a paper"


def test_show_calibration_reads_results_files(tmp_path: Path) -> None:
    files = [write(tmp_path / f"{c}.json", "bench", [modelled("b", us, c, 100.0)])
             for c, us in ((2.0, 90.0), (2.4, 80.0))]
    result = CliRunner().invoke(cli, ["show", "--calibration", *map(str, files)])
    assert result.exit_code == 0, result.output
    assert ("-10.0%" in result.stdout and "-20.0%" in result.stdout
            and "published: gemm: a table" in result.stdout)
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    result = CliRunner().invoke(cli, ["show", "--calibration", str(bad)])
    assert result.exit_code == 2 and "Traceback" not in result.output
