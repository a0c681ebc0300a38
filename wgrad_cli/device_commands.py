"""What verify and bench do on a device, apart from parsing their options (cli.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.markup import escape

from wgrad_cli.backends.registry import backend, check_timed
from wgrad_cli.baseline_names import NAMES as BASELINES
from wgrad_cli.baselines import require_torch, unknown
from wgrad_cli.bench import CALIBRATION, Plan, bench
from wgrad_cli.errors import CheckFailed, Crashed, LaunchStopped, WgradError
from wgrad_cli.isolation import Crash
from wgrad_cli.backends.registry import peak
from wgrad_cli.peaks import flush_bytes
from wgrad_cli.console import err, out, progress
from wgrad_cli.options import BenchOptions, CompilerOptions, Output, RunOptions, Selection, Shard, VerifyOptions
from wgrad_cli.records import BenchRow, Document, Row, SCHEMA
from wgrad_cli.results import default_path, order, save
from wgrad_cli.session import Session, open_session
from wgrad_cli.speedup import speedups
from wgrad_cli.stopping import Criterion
from wgrad_cli.tables import bench_footer, bench_table, counters_table, expert_table, speedup_table, verify_table
from wgrad_cli.verify import Outcome, device_reference_possible, verify


def save_results(s: Session, command: str, records: Sequence[Row], output: Output, shard: Shard | None,
          **extra: Any) -> None:
    if output.no_save:
        return
    path = output.json_path or default_path(command, s.config.path, s.rt.device.arch, shard)
    save(path, output.csv_path, command, records, **s.environment(), shard=list(shard) if shard else None, **extra)
    err.print(escape(f"results: {path}" + (f", {output.csv_path}" if output.csv_path else "")), highlight=False,
              soft_wrap=True)


def print_header(s: Session) -> None:
    d = s.rt.device
    err.print(f"device {d.index}: {d.name} ({d.arch}, {d.units} units, {d.max_clock_mhz} MHz max), {d.driver}, "
              f"{d.runtime}; target {s.target}; seed {s.seed}", highlight=False)


def verify_command(selection: Selection, compilers: CompilerOptions, run: RunOptions, output: Output,
                   checks: VerifyOptions) -> None:
    reference = checks.reference
    s = open_session(selection, compilers, run, checks.edge_cases,
                     extra=lambda d: [("reference", d)] if device_reference_possible(reference, d) else [])
    try:
        print_header(s)
        # the emulator forks its workers only while no other thread runs: no ticking refresh thread then
        with progress("verifying", len(s.records), ticking=not s.rt.device.emulated) as bar:
            def done(o: Outcome) -> None:
                bar.update(bar.task_ids[0], advance=1, refresh=True,
                           description=f"{o.record.job.kernel.name} {o.record.shape.name} {'ok' if o.ok else 'FAILED'}")

            crashes: list[Crash] = []
            hung: list[str] = []
            outcomes = verify(s, reference, checks.rows, done, crashes.append, hung.append)
    finally:
        s.rt.close()
    records = [o.row(s.code_object(o.record.job)) for o in outcomes]
    out.print(verify_table(records, f"wgrad verify on {s.rt.device.name} ({s.target}), seed {s.seed}"))
    if any(r.counters for r in records):
        out.print(counters_table(records, "executed on the emulator (wave-instructions by class)"))
    for r in records:
        beyond = (r.counters or {}).get("lds_out_of_range", 0)
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
        raise SystemExit(LaunchStopped.exit_code)
    if crashes:
        raise Crashed()
    if failed:
        raise CheckFailed()


def bench_command(selection: Selection, compilers: CompilerOptions, run: RunOptions, output: Output,
                  timing: BenchOptions) -> None:
    criterion = Criterion(timing.min_samples, timing.min_time, timing.max_noise, timing.timeout)
    if unknown(timing.only_baselines):
        raise WgradError(unknown(timing.only_baselines))
    baselines = timing.baselines or bool(timing.only_baselines)
    hot, repeat, warmup, flush_kind = timing.hot, timing.repeat, timing.warmup, timing.flush
    plan = Plan(criterion, hot, repeat, warmup, flush_kind, timing.discard_throttled, timing.only_baselines or BASELINES)
    check_timed(run.device)
    if baselines or flush_kind == "read":
        require_torch()  # before any build or launch
    s = open_session(selection, compilers, run, False, extra=lambda _: [("empty", CALIBRATION.dims)])
    if baselines and not backend(s.target).torch_baselines:
        s.rt.close()
        raise WgradError(f"--baselines on a {s.target} device: PyTorch's ROCm wheels load their own libamdhip64.so beside "
                         "hip-python's, and wgrad's events would not order torch's kernels (their times would come "
                         "out near zero); time the kernels without --baselines, and the torch paths with torch's events")
    known = peak(s.rt.device)
    flush = 0 if hot else flush_bytes(s.rt.device, known)
    details = {"criterion": criterion.to_json(), "peak": known.__dict__ if known else None, "warmup": warmup,
               "flush": None if hot else flush_kind, "discard_throttled": timing.discard_throttled}
    finished: list[BenchRow] = []
    try:
        print_header(s)
        shapes = len({r.shape for r in s.records}) if baselines else 0
        with progress("benchmarking", 1 + (len(s.records) + len(plan.baselines) * shapes) * repeat) as bar:
            def step(what: str) -> None:
                bar.update(bar.task_ids[0], description=escape(what))

            def done(r: BenchRow) -> None:
                finished.append(r)
                bar.update(bar.task_ids[0], advance=1)

            records = bench(s, plan, baselines, step, done)
    except WgradError as exc:  # a hang, a baseline's failure, out of memory: the rows measured before it are kept
        if any(not r.calibration for r in finished):
            try:
                save_results(s, "bench", sorted(finished, key=order), output, run.shard, **details,
                      incomplete=exc.lines[0])
            except WgradError as unsaved:  # say both, as the same kind of error (a hang still exits 3)
                raise type(exc)(exc.lines + unsaved.lines) from None
        raise
    finally:
        s.rt.close()
    cache = ("hot (back-to-back launches, times per launch)" if hot
             else f"cold ({flush / 2**20:.0f} MiB flushed before each sample: {flush_kind})")
    out.print(bench_table(records, f"wgrad bench on {s.rt.device.name} ({s.target}), {cache}"))
    rows = speedups(records)
    if rows:
        out.print(speedup_table(rows, "speed-up over the baselines (first run of each shape)"))
    out.print(bench_footer(Document("bench", records, {**details, "schema": SCHEMA})), highlight=False)
    save_results(s, "bench", records, output, run.shard, **details)
