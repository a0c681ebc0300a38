"""What the commands that read results files do (compare, speedup, plot, merge), apart from parsing their
options (cli.py): like show, they import no compiler, device, ELF or emulator module, so they run on
any machine (tests/results/test_presentation.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from rich.markup import escape

from wgrad_cli.errors import CheckFailed
from wgrad_cli.output.console import err, out
from wgrad_cli.output.grid import plural
from wgrad_cli.results.compare import compare_docs, merge_docs, summary
from wgrad_cli.results.files import save
from wgrad_cli.results.plot import render
from wgrad_cli.results.speedup import load_speedups, only
from wgrad_cli.results.tables import compare_table, document_table, speedup_markdown, speedup_table

SOURCE_WIDTH = 100  # the lines naming each file's device, date and baselines wrap here, as tables fit it


def compare_command(base: Path, new: Path, threshold: float, allow: tuple[str, ...]) -> None:
    """The per-shape deltas and their verdicts; CheckFailed (exit 1) on any regression."""
    command, deltas = compare_docs(base, new, threshold, allow)
    out.print(compare_table(command, deltas,
                            f"wgrad compare: {base} -> {new} (threshold {100 * threshold:g}%)"))
    for d in deltas:
        if d.regression:
            err.print(f"[red]regression[/] {escape(d.label)}: {escape(d.regression)}", highlight=False,
                      soft_wrap=True)
    out.print(summary(deltas, threshold), highlight=False)
    if any(d.regression for d in deltas):
        raise CheckFailed()


def speedup_command(files: list[Path], kernels: tuple[str, ...], markdown: bool, every_run: bool) -> None:
    loaded, sources = load_speedups(files, every_run)
    rows = only(loaded, kernels)
    if markdown:
        print(speedup_markdown(rows))
    else:
        which = "every run" if every_run else "first run"
        out.print(speedup_table(rows, f"speed-up over the baselines, {plural(len(files), 'results file')} "
                                      f"({which} of each shape)"))
    print()  # a line right under a Markdown table would read as one of its rows
    for line in sources:
        print(textwrap.fill(line, SOURCE_WIDTH, subsequent_indent="  ", break_on_hyphens=False))


def plot_command(files: list[Path], output: Path) -> None:
    render(files, output)
    out.print(f"wrote {output}", highlight=False, markup=False)


def merge_command(shards: list[Path], output: Path) -> None:
    """The --shard i/n results files of one run joined: its table printed and one file written."""
    merged = merge_docs(shards)
    out.print(document_table(merged, f"wgrad merge: {len(shards)} shards of {merged.command}"))
    save(output, None, merged.command, merged.records, **merged.environment)
