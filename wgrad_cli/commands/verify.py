"""`wgrad verify`: run kernels and check every output."""

from __future__ import annotations

import time
from functools import partial

from rich.markup import escape
from rich.progress import Progress

from wgrad_cli.backends.registry import BACKENDS
from wgrad_cli.commands.run import opened, print_header, save_results
from wgrad_cli.config.options import (
    DEFAULT_MACHINE,
    CompilerOptions,
    Output,
    RunOptions,
    Selection,
    VerifyOptions,
)
from wgrad_cli.device.isolation import Crash
from wgrad_cli.device.runtime import Headway
from wgrad_cli.device.session import open_session
from wgrad_cli.errors import (
    INTERRUPTED,
    CheckFailed,
    Crashed,
    Interrupted,
    KernelFault,
    SanitizerFindings,
    StoppedLaunches,
)
from wgrad_cli.measure.verify import Callbacks, Outcome, device_reference_possible, verify
from wgrad_cli.commands.model import modelled_time
from wgrad_cli.model.machine import load
from wgrad_cli.output.console import err, out, progress
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
        # the time and the instructions first: they move all along, while workgroups, run side by side,
        # mostly finish near the end (a bar's description is cut at the terminal's edge)
        moved = f"{now - self.began:.0f} s, {h.wave_instructions / 1e6:,.1f} M wave-instructions emulated"
        if err.is_terminal:
            self.bar.update(self.bar.task_ids[0], refresh=True,
                            description=f"{self.what}: {moved}, "
                                        f"{h.workgroups_done:,}/{h.workgroups:,} workgroups")
        else:
            err.print(f"{self.what}: {moved}, {h.workgroups_done:,} of {h.workgroups:,} workgroups done",
                      highlight=False, markup=False)


def verify_command(selection: Selection, compilers: CompilerOptions, run: RunOptions, output: Output,
                   checks: VerifyOptions) -> None:
    reference = checks.reference
    s = opened(selection, run, lambda: open_session(
        selection, compilers, run, checks.edge_cases,
        extra=lambda d: [("reference", d)] if device_reference_possible(reference, d) else [],
        backends=BACKENDS))
    try:
        print_header(s)
        # the emulator forks its workers only while no other thread runs: no ticking refresh thread then
        with progress("verifying", len(s.records), ticking=not s.rt.device.emulated) as bar:
            launches = LaunchProgress(bar)
            s.rt.watch(launches)

            finished: list[Outcome] = []

            def done(o: Outcome) -> None:
                finished.append(o)
                bar.update(bar.task_ids[0], advance=1, refresh=True,
                           description=f"{o.record.job.kernel.name} {o.record.shape.name} "
                                       f"{'ok' if o.ok else 'FAILED'}")

            crashes: list[Crash] = []
            hung: list[str] = []
            faulted: list[str] = []
            interrupted = False
            model = partial(modelled_time, load(DEFAULT_MACHINE)) if checks.model else None
            try:
                outcomes = verify(s, reference, checks.rows,
                                  Callbacks(launches.start, done, crashes.append, hung.append,
                                            faulted.append), model)
            except KeyboardInterrupt:  # Ctrl-C: the rows checked (and modelled) so far are printed and saved
                outcomes, interrupted = sorted(finished, key=lambda o: o.record.index), True
    finally:
        s.rt.close()
    records = [o.row(s.code_object(o.record.job)) for o in outcomes]
    times = "; times modelled on an MI355X, not measured" if checks.model else ""
    out.print(verify_table(records, f"wgrad verify on {s.rt.device.name} ({s.target}), seed {s.seed}{times}"))
    if any(r.counters is not None for r in records):
        out.print(counters_table(records, "executed on the emulator (wave-instructions by class)"))
    for r in records:
        beyond = r.counters.lds_out_of_range if r.counters else 0
        if beyond:  # legal on gfx950 (reads give 0, writes are dropped), and rarely meant
            err.print(f"note: {r.kernel} on {r.shape.name} touched {beyond:,} LDS bytes "
                      "beyond its workgroup's allocation (read as 0, writes dropped, as gfx950 does)",
                      highlight=False)
    for r in records:
        if checks.per_expert or not r.ok:
            out.print(expert_table(r))
    lost = {"crashed": [c.line for c in crashes], "hung": hung, "faulted": faulted,
            "incomplete": INTERRUPTED if interrupted else None}
    save_results(s, "verify", records, output, run.shard, **{k: v for k, v in lost.items() if v})
    failed = [r for r in records if not r.ok]
    routing = {o.record.index: o.routing for o in outcomes if o.routing}
    err.print(f"{len(records) - len(failed)}/{len(s.records)} shapes passed")
    for r in failed:
        err.print(f"[red]FAILED[/] {escape(r.kernel)} on {escape(r.shape.name)}: "
                  f"{r.overall.mismatches:,} mismatches, {r.overall.unwritten:,} unwritten "
                  f"({escape(r.reference)})"
                  + (f"; {escape(routing[r.index])}" if r.index in routing else ""),
                  highlight=False)
    for c in crashes:
        err.print(f"[red]CRASHED[/] {escape(c.line)}", highlight=False)
    found = [f"{o.record.job.kernel.name} on {o.record.shape.name}: {line}" for o in outcomes
             for line in o.findings]
    for line in found:
        err.print(f"[red]SANITIZER[/] {escape(line)}", highlight=False, soft_wrap=True)
    for line in hung:
        err.print(f"[red]HUNG[/] {escape(line)}", highlight=False, soft_wrap=True)
    for line in faulted:
        err.print(f"[red]FAULTED[/] {escape(line)}", highlight=False, soft_wrap=True)
    if interrupted:
        raise Interrupted(f"{INTERRUPTED}: {len(records)} of {len(s.records)} rows finished")
    if faulted:
        raise KernelFault()
    if hung:
        raise StoppedLaunches()
    if crashes:
        raise Crashed()
    if found:
        raise SanitizerFindings(f"{len(found)} sanitizer finding{'s' * (len(found) != 1)} (docs/emulator.md)")
    if failed:
        raise CheckFailed()
