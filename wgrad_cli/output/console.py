"""The consoles every command prints through, and the small helpers of their output."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

# soft_wrap: lines go out whole; a terminal wraps them itself, and pipes and CI logs keep them intact
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)
LOG_EVERY_SECONDS = 15.0  # a long launch's progress, in a log: a line this often


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


class LaunchProgress:
    """Shows how far the launch of the work a bar is on has got (workgroups done of all): on a
    terminal in the bar's description, in a log as a line every LOG_EVERY_SECONDS, so that a slow
    run is visibly not a stuck one."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.what = ""
        self.began = self.logged = time.monotonic()

    def start(self, what: str) -> None:
        self.what = what
        self.began = self.logged = time.monotonic()
        self.bar.update(self.bar.task_ids[0], description=what, refresh=True)

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        line = f"{self.what}: {done:,} of {total:,} workgroups ({100 * done // max(total, 1)}%), {now - self.began:.0f} s"
        if err.is_terminal:
            self.bar.update(self.bar.task_ids[0], description=line, refresh=True)
        elif now - self.logged >= LOG_EVERY_SECONDS:
            self.logged = now
            err.print(line, highlight=False, markup=False)
