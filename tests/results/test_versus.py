"""versus.py: `wgrad show --versus KERNEL`, modelled rows of several files against one kernel's, on
the committed results of the upstream kernel and the cdna4 kernel."""

from __future__ import annotations

import csv
from pathlib import Path

from click.testing import CliRunner

from wgrad_cli.cli import cli
from wgrad_cli.results.records import read_document

MODEL = Path("results/model")


def show(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["show", "--format", "csv", *args])
    return result.exit_code, result.stdout, result.stderr


def median_us(path: Path) -> float:
    (row,) = read_document(path).bench_rows
    return row.summary.median_ms * 1e3


def test_each_kernel_against_the_base_of_its_clock_and_figures(repo: Path) -> None:
    files = [repo / MODEL / f"{stem}-large-{k}-2.4GHz.json" for stem in ("model", "rule-one-clock")
             for k in ("upstream", "cdna4")]
    code, text, _ = show("--versus", "upstream", "--wide", *map(str, files))
    assert code == 0
    header, *rows = csv.reader(text.strip().splitlines())
    assert header == ["shape", "GHz", "figures", "upstream us", "kernel", "us", "TFLOP/s", "x upstream"]
    assert [r[:2] + r[4:5] for r in rows] == [["square-8k", "2.4", "cdna4"]] * 2
    assert rows[0][2] == "" and "rest_power_w=8428" in rows[1][2]  # the shipped figures, then the rule's
    for row, (base, new) in zip(rows, [files[0:2], files[2:4]]):
        assert float(row[-1]) == round(median_us(base) / median_us(new), 2)


def test_rows_pair_by_changed_figures(repo: Path) -> None:
    tag = "vmem-latency-1600"
    files = [repo / MODEL / f"sensitivity-large-{k}-{tag}-2.4GHz.json" for k in ("upstream", "cdna4")]
    # the default figures: no upstream row for it
    files.append(repo / MODEL / "model-large-cdna4-2.4GHz.json")
    code, _, err = show("--versus", "upstream", *map(str, files))
    assert code == 2 and err.strip() == ("square-8k at 2.4 GHz: no upstream row in the files; --versus needs "
                                         "upstream's row of every shape, clock and figure set")
    code, text, _ = show("--versus", "upstream", *map(str, files[:2]))
    assert code == 0 and ",vmem_latency_cycles=1600," in text


def test_bad_input_is_one_line_each(repo: Path, tmp_path: Path) -> None:
    measured = repo / "results/h200/bench-large.json"
    code, _, err = show("--versus", "upstream", str(measured))
    assert code == 2 and err.strip().startswith(f"{measured}: ") and "is measured; --versus" in err
    code, _, err = show("--versus", "upstream", "--calibration",
                        str(repo / MODEL / "model-large-cdna4-2.4GHz.json"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "give one of them" in err


def test_a_figure_set_without_its_base_is_named_with_its_figures(repo: Path) -> None:
    alone = repo / MODEL / "sensitivity-large-cdna4-vmem-latency-1600-2.4GHz.json"
    code, _, err = show("--versus", "upstream", str(alone))
    assert code == 2 and err.strip() == ("square-8k at 2.4 GHz with vmem_latency_cycles=1600: no upstream "
                                         "row in the files; --versus needs upstream's row of "
                                         "every shape, clock and figure set")


def test_each_measured_row_and_unreadable_file_is_its_line(repo: Path, tmp_path: Path) -> None:
    measured, missing = repo / "results/h200/bench-smoke-reference.json", tmp_path / "none.json"
    rows = read_document(measured).bench_rows
    code, _, err = show("--versus", "upstream", str(measured), str(missing))
    assert code == 2
    assert err.strip().splitlines() == [
        *(f"{measured}: {r.kernel} on {r.shape.name} is measured; --versus sets modelled rows (wgrad "
          "model) side by side" for r in rows),
        f"{missing}: cannot read it (No such file or directory); give a results file wgrad wrote"]
