"""What verify and bench share: opening the session, the run's header line and its results file."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from typing import Any

from rich.markup import escape

from wgrad_cli.backends.registry import without_gpu
from wgrad_cli.config.options import Output, RunOptions, Selection, Shard
from wgrad_cli.device.session import Session
from wgrad_cli.errors import NoDevice
from wgrad_cli.output.console import err
from wgrad_cli.results.files import default_path, save
from wgrad_cli.results.records import Row, to_json


def save_results(s: Session, command: str, records: Sequence[Row], output: Output, shard: Shard | None,
          **extra: Any) -> None:
    if output.no_save:
        return
    kernels = [r.job.kernel.name for r in s.records]
    path = output.json_path or default_path(command, s.config.path.stem, kernels, s.rt.device.arch, shard)
    save(path, output.csv_path, command, records, **to_json(s.environment()),
         shard=list(shard) if shard else None, **extra)
    err.print(escape(f"results: {path}" + (f", {output.csv_path}" if output.csv_path else "")),
              highlight=False, soft_wrap=True)


def print_header(s: Session) -> None:
    d = s.rt.device
    clock = f", {d.max_clock_mhz:,} MHz max" if d.max_clock_mhz else ""  # the emulator has no clock
    err.print(f"device {d.index}: {d.name} ({d.arch}, {d.units} units{clock}), {d.driver}, "
              f"{d.runtime}; target {s.target}; seed {s.seed}", highlight=False)


def opened(selection: Selection, run: RunOptions, open_it: Callable[[], Session]) -> Session:
    """open_it(), where a run finds no GPU also saying in one line what runs without one: the
    emulator and the timing model, as commands for the config given."""
    try:
        return open_it()
    except NoDevice as exc:
        hint = without_gpu(run.device, exc.targets, shlex.quote(str(selection.config_path)))
        if hint is None:
            raise
        raise NoDevice([*exc.lines, hint], exc.targets) from None
