"""show.py: committed results files printed as the tables bench and verify print, build's and info's
files (written by the real commands) as those commands print them, bad files one line each."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from clirun import run_wgrad
from rich.console import Console
from rows import BENCH, VERIFY, bench_row, verify_row, write

from wgrad_cli.cli import cli
from wgrad_cli.commands.show import show_tables
from wgrad_cli.errors import WgradError
from wgrad_cli.output.grid import FORMATS, set_layout
from wgrad_cli.results.records import to_json


def test_bench_and_verify_files_in_the_order_given(tmp_path: Path) -> None:
    powered = [BENCH[0], bench_row(0, "a", 2.0, power_w=700.0), BENCH[2]]
    tables = show_tables([write(tmp_path / "b.json", "bench", powered),
                          write(tmp_path / "v.json", "verify", VERIFY)])
    bench, verify = (t.markdown(wide=True) for t in tables)
    assert str(tmp_path / "b.json") in bench and str(tmp_path / "v.json") in verify
    assert "mJ" in bench and "mJ" not in verify
    row_a = next(line for line in bench.splitlines() if " a " in line)
    assert "1,400" in row_a and " 700 " in row_a  # 700 W x 2.0 ms
    row_b = next(line for line in bench.splitlines() if " b " in line)
    assert "1,400" not in row_b  # no power read: no energy


def test_a_failing_verify_file_shows_the_per_expert_tables_verify_printed(tmp_path: Path) -> None:
    rows = [verify_row(0, "a", True), verify_row(1, "b", False)]
    tables = show_tables([write(tmp_path / "v.json", "verify", rows)])
    assert [t.title for t in tables[1:]] == ["reference on b: per expert (numpy float64, every element)"]
    assert all("FAILED" in row[-1] for row in tables[1].rows)


def test_every_bad_file_is_one_line_and_nothing_is_shown(tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", "bench", BENCH)
    missing = tmp_path / "nope.json"
    (tmp_path / "text.json").write_text("not json")
    lacking = write(tmp_path / "lacking.json", "bench",
                    [{k: v for k, v in to_json(BENCH[1]).items() if k != "median_ms"}])
    with pytest.raises(WgradError) as caught:
        show_tables([good, missing, tmp_path / "text.json", lacking])
    lines = caught.value.lines
    assert len(lines) == 3
    assert lines[0].startswith(f"{missing}: cannot read it")
    assert lines[1].startswith(f"{tmp_path / 'text.json'}: not JSON")
    assert lines[2] == f"{lacking}: record 0 lacks median_ms; give a results file wgrad wrote"


def test_the_command_prints_tables_or_exits_2(tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", "bench", BENCH)
    shown = CliRunner().invoke(cli, ["show", str(good)])
    assert shown.exit_code == 0 and "reference" in shown.output and "calibration" in shown.output
    refused = CliRunner().invoke(cli, ["show", str(good), str(tmp_path / "nope.json")])
    assert refused.exit_code == 2 and "nope.json: cannot read it" in refused.output
    assert "Traceback" not in refused.output and "calibration" not in refused.output


def committed(repo: Path) -> list[Path]:
    files = sorted((repo / "results").rglob("*.json"))
    assert files
    return files


@pytest.mark.parametrize("form", FORMATS)
def test_every_committed_file_prints_in_every_format(repo: Path, form: str) -> None:
    files = committed(repo)
    shown = CliRunner().invoke(cli, ["show", "--format", form, *map(str, files)])
    assert shown.exit_code == 0, shown.output
    if form == "json":  # each file's table, then its rows' profiles (wgrad model --profile), titled by it
        titles = [t["title"].split(":")[0] for t in json.loads(shown.stdout)]
        assert list(dict.fromkeys(titles)) == list(map(str, files)) and len(titles) > len(files)
    elif form == "csv":
        assert (sum(line.split(",")[0] in ("kernel", "benchmark") for line in shown.stdout.splitlines())
                == len(files))
    else:
        assert all(str(f) in " ".join(shown.stdout.split()) for f in files)


def test_on_a_100_column_terminal_no_line_of_a_committed_file_is_wider(repo: Path) -> None:
    """Tables fit the terminal (rich wraps their cells) and so do their titles (wrapped at spaces)."""
    screen = io.StringIO()
    console = Console(file=screen, width=100, force_terminal=True, soft_wrap=True, color_system=None)
    set_layout("auto")
    tables = show_tables(committed(repo))
    for table in tables:
        console.print(table)
    lines = screen.getvalue().splitlines()
    assert len(lines) > 100 and max(map(len, lines)) <= 100
    words = " ".join(lines).split()
    for table in tables:  # each title whole: wrapped, not cut
        title = table.title.split()
        assert any(words[i:i + len(title)] == title for i in range(len(words))), table.title


def test_a_markdown_title_is_no_wider_than_its_table_or_80_columns(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    name = Path("verify-" + "x" * 45 + ".json")
    text = show_tables([write(name, "verify", VERIFY)])[0].markdown(wide=False)
    title, table = text.split("\n\n")
    width = max(80, *map(len, table.splitlines()))
    assert len(" ".join(title.split())) > width and max(map(len, title.splitlines())) <= width
    assert " ".join(title.split()).startswith(f"{name}: wgrad verify on an unnamed device, ")


def table_part(markdown: str) -> str:
    """A Markdown table without the title above it (show's names the file; the command's does not)."""
    return markdown.split("\n\n", 1)[1]


def shown_everywhere(tmp_path: Path, written: Path, live: str, column: str,
                     cells: list[str]) -> list[dict[str, str]]:
    """`written` shows in every format with exit 0: Markdown as the command printed it live, a boxed
    table no wider than 100 columns, and CSV and JSON whose `column` holds `cells`, in order; the
    CSV's rows are returned."""
    out = {form: run_wgrad(tmp_path, "show", "--format", form, str(written), terminal=True)
           for form in FORMATS}
    assert all(p.returncode == 0 and p.stderr == ""
               for p in out.values()), {f: p.stderr for f, p in out.items()}
    assert out["markdown"].stdout.startswith(f"{written}: wgrad ")
    assert table_part(out["markdown"].stdout) == table_part(live)
    boxed = out["table"].stdout.splitlines()
    assert max(map(len, boxed)) <= 100 and all(cell in out["table"].stdout for cell in cells)
    rows = list(csv.DictReader(io.StringIO(out["csv"].stdout)))
    assert [row[column] for row in rows] == cells
    (table,) = json.loads(out["json"].stdout)
    assert table["title"].startswith(f"{written}: wgrad ") and table["rows"] == rows
    return rows


def test_a_build_file_shows_as_build_printed_it(tmp_path: Path, amd_compiler: object) -> None:
    build = run_wgrad(tmp_path, "build", "--config", "smoke", "--target", "gfx950", "--cache-dir", "cache",
                      "--json", "build.json", terminal=False)
    assert build.returncode == 0, build.stderr
    shapes = [r["shape"]["name"] for r in json.loads((tmp_path / "build.json").read_text())["records"]]
    assert shapes == ["one-expert", "two-zipf", "four-one-empty", "gaps"]
    rows = shown_everywhere(tmp_path, Path("build.json"), build.stdout, "shapes", shapes)
    for row in rows:  # every column of the build, in AMD's terms
        assert row["status"] == "ok" and row["compile s"] != "cached" and row["limited by"]
        assert re.fullmatch(r"\d+v \d+a \d+s", row["registers"]), row
        assert re.fullmatch(r"\d+ WGs?/CU, \d+ waves?/SIMD", row["occupancy"]), row


def test_shapes_of_one_build_share_its_row(tmp_path: Path, amd_compiler: object) -> None:
    (tmp_path / "c.yaml").write_text("kernels: [reference]\ntargets: [gfx950]\nshapes:\n"
                                     "  - {name: flat, M: 256, N: 256, K: 256, E: 2}\n"
                                     "  - {name: skewed, M: 256, N: 256, K: 256, E: 2, "
                                     "routing: {kind: zipf, s: 2}}\n"
                                     "  - {name: wide, M: 256, N: 512, K: 256, E: 2}\n")
    build = run_wgrad(tmp_path, "build", "--config", "c.yaml", "--cache-dir", "cache", "--json", "build.json",
                      terminal=False)
    assert build.returncode == 0, build.stderr
    assert len(json.loads((tmp_path / "build.json").read_text())["records"]) == 3  # one per shape
    shown_everywhere(tmp_path, Path("build.json"), build.stdout, "shapes", ["flat, skewed", "wide"])


def test_an_info_file_shows_as_info_printed_it(tmp_path: Path) -> None:
    info = run_wgrad(tmp_path, "info", "--cache-dir", "cache", "--json", "info.json", terminal=False)
    assert info.returncode == 0, info.stderr
    candidates = [r["candidate"] for r in json.loads((tmp_path / "info.json").read_text())["records"]]
    assert len(candidates) >= 2
    rows = shown_everywhere(tmp_path, Path("info.json"), info.stdout, "candidate", candidates)
    assert {row["target"] for row in rows} == {"gfx950", "sm_90a"}


def test_a_broken_build_or_info_file_or_another_command_is_one_line(tmp_path: Path) -> None:
    lacking = write(tmp_path / "lacking.json", "build",
                    [{"kernel": "reference", "target": "gfx950", "ok": True}])
    wrong = write(tmp_path / "wrong.json", "info", [{"target": "gfx950", "candidate": "clang",
                                                     "usable": "yes", "chosen": True, "kind": None,
                                                     "version": None, "command": None, "reason": ""}])
    other = write(tmp_path / "other.json", "matrix", [{"shard": "1/3"}])
    for path, line in ((lacking, "record 0 lacks shape; give a results file wgrad wrote"),
                       (wrong, "record 0.usable is 'yes', not a bool; give a results file wgrad wrote"),
                       (other, "a 'matrix' document; "
                               "this needs one of verify, bench, selfbench, build, info")):
        shown = run_wgrad(tmp_path, "show", str(path), terminal=True)
        assert (shown.returncode, shown.stdout, shown.stderr) == (2, "", f"{path}: {line}\n")
