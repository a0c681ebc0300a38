"""Every table of every command on a terminal of 80, 100 and 140 columns, with and without --wide:
no line is wider than the terminal, no number is split over two lines, columns left out to fit are
named with --wide, and --wide where its columns cannot fit prints one record per row."""

from __future__ import annotations

import io
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult

from wgrad_cli.cli import cli
from wgrad_cli.output.grid import Grid, set_layout

REPO = Path(__file__).resolve().parents[2]
OWN = REPO / "tests" / "data" / "ownkernel"
NUMBER = re.compile(r"\d[\d,.]*(?:e[-+]?\d+)?")  # as wgrad_cli.output.grid folds them
WIDTHS = (80, 100, 140)


def documented() -> list[list[str]]:
    """The commands whose tables the docs and README print (their `<!-- wgrad ... -->` lines)."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    return [shlex.split(c) for page in pages for c in re.findall(r"<!-- wgrad (.+?) -->", page.read_text())]


@pytest.fixture(scope="module")
def grids(tmp_path_factory: pytest.TempPathFactory) -> list[Grid]:
    """The grids the commands print: the documented ones, and with the real compiler, a user's kernel
    built, verified on the emulator with its per-expert tables, and modelled with its profile."""
    tmp = tmp_path_factory.mktemp("tables")
    for file in OWN.iterdir():
        shutil.copy(file, tmp)
    caught: list[Grid] = []
    original = Grid.__rich_console__

    def catch(self: Grid, console: Console, options: ConsoleOptions) -> RenderResult:
        caught.append(self)
        return original(self, console, options)

    commands = [*documented(), ["configs"], ["info"], ["compare", "results/h200/bench-large.json",
                                                    "results/h200/bench-large.json"]]
    if shutil.which("clang-22"):
        cache = ["--cache-dir", str(tmp / "cache")]
        config = ["--config", str(tmp / "tiny.yaml"), "--shape", "two-experts", *cache]
        commands += [["build", *config, "--json", str(tmp / "build.json")], ["show", str(tmp / "build.json")],
                     ["verify", *config, "--device", "emu", "--per-expert", "--model", "--no-save"],
                     ["model", *config, "--profile", "--json", str(tmp / "model.json")],
                     ["emu-check", *config]]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Grid, "__rich_console__", catch)
        patch.chdir(REPO)
        for command in commands:
            result = CliRunner().invoke(cli, command)
            assert result.exit_code in (0, 1), (command, result.output)
    return caught


def rendered(grid: Grid, width: int, wide: bool) -> str:
    text = io.StringIO()
    set_layout("table", wide)
    try:
        Console(file=text, width=width, color_system=None, force_terminal=True).print(grid)
    finally:
        set_layout("auto")
    return text.getvalue()


def cases(grids: list[Grid]) -> Iterator[tuple[Grid, int, bool]]:
    return ((g, w, wide) for g in grids for w in WIDTHS for wide in (False, True))


def test_the_commands_print_many_tables(grids: list[Grid]) -> None:
    titles = " ".join(g.title for g in grids)
    assert len(grids) >= 20 and "wgrad configs" in titles and "speed-up" in titles
    if shutil.which("clang-22"):
        assert all(f"wgrad {c}" in titles for c in ("build", "verify", "model")) and "per expert" in titles


def test_no_line_is_wider_than_the_terminal_and_no_number_is_split(grids: list[Grid]) -> None:
    for grid, width, wide in cases(grids):
        text = rendered(grid, width, wide)
        lines = text.splitlines()
        assert max(map(cell_len, lines)) <= width, (grid.title, width, wide)
        fit = grid.fit(width, wide)
        for row in grid.plain_rows():
            for i in fit.columns:
                for number in NUMBER.findall(row[i]):
                    assert any(number in line for line in lines), (grid.title, width, wide, number)


def test_columns_left_out_are_named_and_wide_shows_every_column(grids: list[Grid]) -> None:
    for grid, width, wide in cases(grids):
        fit = grid.fit(width, wide)
        text = " ".join(rendered(grid, width, wide).split())
        if wide:
            assert fit.left_out == [] and len(fit.columns) == len(grid.columns)
        if fit.left_out:
            assert f"left out to fit {width} columns: {', '.join(fit.left_out)} (--wide shows them)" in text
        if fit.widths is None and grid.rows:  # a record per row: each value beside its column's name
            first = grid.plain_rows()[0]
            assert all(f"{grid.columns[i].name}: {first[i]}".strip() in text for i in fit.columns)
