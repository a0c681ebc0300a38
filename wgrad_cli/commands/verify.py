"""`wgrad verify`: run kernels and check every output."""

from __future__ import annotations

import time
from dataclasses import replace

from rich.markup import escape
from rich.progress import Progress

from wgrad_cli.commands.run import opened, print_header, save_results
from wgrad_cli.config.options import DEFAULT_MACHINE, CompilerOptions, Output, RunOptions, Selection, VerifyOptions
from wgrad_cli.device.isolation import Crash
from wgrad_cli.device.runtime import Headway
from wgrad_cli.device.session import Session, open_session
from wgrad_cli.errors import CheckFailed, Crashed, StoppedLaunches
from wgrad_cli.measure.verify import Callbacks, Outcome, device_reference_possible, verify
from wgrad_cli.model.command import model_records
from wgrad_cli.model.machine import load
from wgrad_cli.output.console import err, out, progress
from wgrad_cli.results.records import ModelledTime, VerifyRow
from wgrad_cli.results.tables import counters_table, expert_table, verify_table


LOG_EVERY_SECONDS = 15.0  # a long launch's headway, in a log: a line this often
REDRAW_SECONDS = 0.5  # on a terminal: the bar redrawn this often


class LaunchProgress:
    """Shows how far the launch of the work a bar is on has got (workgroups done of all, and the
    wave-instructions emulated, which move while workgroups run long loops): on a terminal in the
    bar's description, in a log as a line every LOG_EVERY_SECONDS, so that a slow run is visibly
    not a stuck one."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.what = ""
        self.began = self.shown = time.monotonic()

    def start(self, what: str) -> None:
        self.what = what
        self.began = self.shown = time.monotonic()
        self.bar.update(self.bar.task_ids[0], description=what, refresh=True)

    def __call__(self, h: Headway) -> None:
        now = time.monotonic()
        if now - self.shown < (REDRAW_SECONDS if err.is_terminal else LOG_EVERY_SECONDS):
            return
        self.shown = now
        line = (f"{self.what}: {h.workgroups_done:,} of {h.workgroups:,} workgroups done "
                f"({100 * h.workgroups_done // max(h.workgroups, 1)}%), {h.wave_instructions / 1e6:,.1f} M "
                f"wave-instructions emulated, {now - self.began:.0f} s")
        if err.is_terminal:
            self.bar.update(self.bar.task_ids[0], description=line, refresh=True)
        else:
            err.print(line, highlight=False, markup=False)


def with_model(s: Session, outcomes: list[Outcome], records: list[VerifyRow]) -> list[VerifyRow]:
    """The rows with each verified kernel's time on the shipped MI355X model at its peak clock."""
    machine = load(DEFAULT_MACHINE)
    on_model, modelled = model_records(s, machine, [o.record for o in outcomes])
    on_model.rt.close()
    rows = {r.index: r for r in modelled}
    return [replace(r, modelled=ModelledTime(machine.name, machine.clock_ghz, m.summary.median_ms * 1e3, m.tflops,
                                             m.model.limiter if m.model else "", m.model.held_ghz if m.model else None,
                                             m.model.band if m.model else None))
            for r in records for m in [rows[r.index]]]


def verify_command(selection: Selection, compilers: CompilerOptions, run: RunOptions, output: Output,
                   checks: VerifyOptions) -> None:
    reference = checks.reference
    s = opened(selection, run, lambda: open_session(
        selection, compilers, run, checks.edge_cases,
        extra=lambda d: [("reference", d)] if device_reference_possible(reference, d) else []))
    try:
        print_header(s)
        # the emulator forks its workers only while no other thread runs: no ticking refresh thread then
        with progress("verifying", len(s.records), ticking=not s.rt.device.emulated) as bar:
            launches = LaunchProgress(bar)
            s.rt.watch(launches)

            def done(o: Outcome) -> None:
                bar.update(bar.task_ids[0], advance=1, refresh=True,
                           description=f"{o.record.job.kernel.name} {o.record.shape.name} {'ok' if o.ok else 'FAILED'}")

            crashes: list[Crash] = []
            hung: list[str] = []
            outcomes = verify(s, reference, checks.rows, Callbacks(launches.start, done, crashes.append, hung.append))
    finally:
        s.rt.close()
    records = [o.row(s.code_object(o.record.job)) for o in outcomes]
    if checks.model:
        records = with_model(s, outcomes, records)
    times = "; times modelled on an MI355X, not measured" if checks.model else ""
    out.print(verify_table(records, f"wgrad verify on {s.rt.device.name} ({s.target}), seed {s.seed}{times}"))
    if any(r.counters is not None for r in records):
        out.print(counters_table(records, "executed on the emulator (wave-instructions by class)"))
    for r in records:
        beyond = r.counters.lds_out_of_range if r.counters else 0
        if beyond:  # legal on gfx950 (reads give 0, writes are dropped), and rarely meant
            err.print(f"note: {r.kernel} on {r.shape.name} touched {beyond:,} LDS bytes beyond its workgroup's "
                      "allocation (read as 0, writes dropped, as gfx950 does)", highlight=False)
    for r in records:
        if checks.per_expert or not r.ok:
            out.print(expert_table(r))
    save_results(s, "verify", records, output, run.shard,
                 **({"crashed": [c.line for c in crashes]} if crashes else {}), **({"hung": hung} if hung else {}))
    failed = [r for r in records if not r.ok]
    err.print(f"{len(records) - len(failed)}/{len(records) + len(crashes) + len(hung)} shapes passed")
    for r in failed:
        err.print(f"[red]FAILED[/] {escape(r.kernel)} on {escape(r.shape.name)}: "
                  f"{r.overall.mismatches} mismatches, {r.overall.unwritten} unwritten "
                  f"({escape(r.reference)})", highlight=False)
    for c in crashes:
        err.print(f"[red]CRASHED[/] {escape(c.line)}", highlight=False)
    for line in hung:
        err.print(f"[red]HUNG[/] {escape(line)}", highlight=False, soft_wrap=True)
    if hung:
        raise StoppedLaunches()
    if crashes:
        raise Crashed()
    if failed:
        raise CheckFailed()
