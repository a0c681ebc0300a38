"""The consoles every command prints through, and the small helpers of their output."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

# soft_wrap: lines go out whole; a terminal wraps them itself, and pipes and CI logs keep them intact
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def cell(value: float | None, form: str) -> str:
    """A table cell for an optional number: blank where it was not measured."""
    return "" if value is None else format(value, form)


def progress(what: str, total: int, ticking: bool = True) -> Progress:
    """A transient progress bar on stderr with one task of `total` steps (progress.task_ids[0]);
    unless `ticking`, it has no refresh thread and redraws only on update(refresh=True)."""
    bar = Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("{task.description}"), console=err, transient=True, auto_refresh=ticking)
    bar.add_task("", total=total)
    return bar
