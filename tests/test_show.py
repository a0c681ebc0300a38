"""show.py: committed results files printed as the tables bench and verify print, bad files one line each."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console
from rows import bench_row, write
from rows import BENCH, VERIFY

from wgrad_cli.cli import cli
from wgrad_cli.errors import WgradError
from wgrad_cli.grid import FORMATS, set_layout
from wgrad_cli.records import to_json
from wgrad_cli.show import show_tables


def test_bench_and_verify_files_in_the_order_given(tmp_path: Path) -> None:
    powered = [BENCH[0], bench_row(0, "a", 2.0, power_w=700.0), BENCH[2]]
    tables = show_tables([write(tmp_path / "b.json", "bench", powered), write(tmp_path / "v.json", "verify", VERIFY)])
    bench, verify = (t.markdown(wide=True) for t in tables)
    assert str(tmp_path / "b.json") in bench and str(tmp_path / "v.json") in verify
    assert "mJ" in bench and "mJ" not in verify
    row_a = next(line for line in bench.splitlines() if " a " in line)
    assert "1,400" in row_a and " 700 " in row_a  # 700 W x 2.0 ms
    row_b = next(line for line in bench.splitlines() if " b " in line)
    assert "1,400" not in row_b  # no power read: no energy


def test_every_bad_file_is_one_line_and_nothing_is_shown(tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", "bench", BENCH)
    missing = tmp_path / "nope.json"
    (tmp_path / "text.json").write_text("not json")
    lacking = write(tmp_path / "lacking.json", "bench", [{k: v for k, v in to_json(BENCH[1]).items() if k != "median_ms"}])
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
    if form == "json":
        assert [t["title"].split(":")[0] for t in json.loads(shown.stdout)] == list(map(str, files))
    elif form == "csv":
        assert sum(line.split(",")[0] in ("kernel", "benchmark") for line in shown.stdout.splitlines()) == len(files)
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


def test_a_markdown_title_is_no_wider_than_its_table_or_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    name = Path("verify-" + "x" * 45 + ".json")
    text = show_tables([write(name, "verify", VERIFY)])[0].markdown(wide=False)
    title, table = text.split("\n\n")
    width = max(80, *map(len, table.splitlines()))
    assert len(" ".join(title.split())) > width and max(map(len, title.splitlines())) <= width
    assert " ".join(title.split()).startswith(f"{name}: wgrad verify on an unnamed device, ")
