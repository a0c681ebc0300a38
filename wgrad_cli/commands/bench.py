"""`wgrad bench`: time kernels against the device's peaks."""

from __future__ import annotations

from dataclasses import dataclass

from rich.markup import escape

from wgrad_cli.backends.flush import flush_bytes
from wgrad_cli.backends.registry import BACKENDS, backend, check_timed, peak
from wgrad_cli.commands.run import opened, print_header, save_results
from wgrad_cli.config.options import BenchOptions, CompilerOptions, Criterion, Output, RunOptions, Selection
from wgrad_cli.device.session import open_session
from wgrad_cli.errors import INTERRUPTED, Interrupted, WgradError
from wgrad_cli.measure.baselines import require_torch, unknown
from wgrad_cli.measure.bench import CALIBRATION, Plan, bench
from wgrad_cli.output.console import out, progress
from wgrad_cli.results.baseline_names import NAMES as BASELINES
from wgrad_cli.results.files import order
from wgrad_cli.results.records import SCHEMA, BenchRow, Document, Peak, to_json
from wgrad_cli.results.speedup import speedups
from wgrad_cli.results.tables import bench_footer, bench_table, speedup_table


@dataclass(frozen=True)
class BenchSettings:
    """What bench's figures are of, written after the run's environment in its results file."""

    criterion: Criterion
    peak: Peak | None  # the device's peaks, where its backend knows them: what % peak divides by
    warmup: int
    flush: str | None  # how a cold sample's cache was flushed (options.FLUSHES); None when hot or rotating
    discard_throttled: bool
    # cold: at least this many copies of the inputs rotated per launch (rows say how many)
    rotating: int | None
    interleave: bool  # each shape's kernels and baselines sampled in alternating rounds
    data: str  # the inputs' pattern (options.DATA_PATTERNS)


def bench_command(selection: Selection, compilers: CompilerOptions, run: RunOptions, output: Output,
                  timing: BenchOptions) -> None:
    criterion = Criterion(timing.min_samples, timing.min_time, timing.max_noise, timing.timeout)
    if unknown(timing.only_baselines):
        raise WgradError(unknown(timing.only_baselines))
    baselines = timing.baselines or bool(timing.only_baselines)
    hot, repeat, warmup, rotating = timing.hot, timing.repeat, timing.warmup, timing.rotating
    flush_kind = None if hot or rotating else timing.flush
    interleave = baselines if timing.interleave is None else timing.interleave
    problems = ([f"--rotating {rotating}: rotating copies empty the cache for cold samples; "
                 "with --hot the cache is kept warm on purpose, so leave one of them out"]
                if hot and rotating else [])
    if timing.interleave and not baselines:
        problems.append("--interleave: rounds pair each kernel with the baselines of its shape; add "
                        "--baselines (or --baseline NAME), or leave --interleave out")
    if problems:
        raise WgradError(problems)
    plan = Plan(criterion, hot, repeat, warmup, timing.flush, timing.discard_throttled,
                timing.only_baselines or BASELINES, interleave, rotating, timing.data)
    check_timed(run.device)
    if baselines or flush_kind == "read" or rotating:  # rotating spins with torch ahead of each sample
        require_torch()  # before any build or launch
    s = opened(selection, run, lambda: open_session(selection, compilers, run, False,
                                                    extra=lambda _: [("empty", CALIBRATION.dims)],
                                                    backends=BACKENDS))
    if baselines and not backend(s.target).torch_baselines:
        s.rt.close()
        raise WgradError(f"--baselines on a {s.target} device: PyTorch's ROCm wheels load their own "
                         "libamdhip64.so beside hip-python's, and wgrad's events would not order torch's "
                         "kernels (their times would come out near zero); time the kernels without "
                         "--baselines, and the torch paths with torch's events")
    known = peak(s.rt.device)
    flush = 0 if hot else flush_bytes(s.rt.device, known)
    details = to_json(BenchSettings(criterion, known, warmup, flush_kind, timing.discard_throttled, rotating,
                                    interleave, timing.data))
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

            try:
                records = bench(s, plan, baselines, step, done)
            except KeyboardInterrupt:  # Ctrl-C: as any other stop, the rows measured so far are kept
                raise Interrupted(INTERRUPTED) from None
    except WgradError as exc:
        # a hang, a baseline's failure, out of memory: the rows measured before it are kept
        if any(not r.calibration for r in finished):
            out.print(bench_table(sorted(finished, key=order),
                                  f"wgrad bench on {s.rt.device.name} ({s.target}), stopped: {exc.lines[0]}"))
            try:
                save_results(s, "bench", sorted(finished, key=order), output, run.shard, **details,
                      incomplete=exc.lines[0])
            except WgradError as unsaved:  # say both, as the same kind of error (a hang still exits 3)
                raise type(exc)(exc.lines + unsaved.lines) from None
        raise
    finally:
        s.rt.close()
    cache = ("hot (back-to-back launches, times per launch)" if hot
             else f"cold (at least {rotating} copies of the inputs rotated per launch)" if rotating
             else f"cold ({flush / 2**20:.0f} MiB flushed before each sample: {flush_kind})")
    cache += ", interleaved rounds" if interleave else ""
    cache += f", inputs {timing.data}" if timing.data != "random" else ""
    out.print(bench_table(records, f"wgrad bench on {s.rt.device.name} ({s.target}), {cache}"))
    rows = speedups(records)
    if rows:
        out.print(speedup_table(rows, "speed-up over the baselines (first run of each shape)"))
    out.print(bench_footer(Document("bench", records, {**details, "schema": SCHEMA})), highlight=False)
    save_results(s, "bench", records, output, run.shard, **details)
