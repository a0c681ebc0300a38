"""`wgrad bench`: time each kernel on a fresh random problem and report rates against the device's peaks.

Taking samples (sampling.py) and when to stop (stopping.py) are kept apart from what is reported
here, and the tables from both (results/tables.py). Cold (the default): one launch per sample, after a flush
of twice the last-level cache; the flush also keeps the device busy while the launch is submitted,
so the host's launch cost stays outside the events. A baseline's sample is many torch launches:
a spin kernel sized from their submission time goes ahead of each, for the same reason. Hot: back-to-back
launches, as many per sample as fill about a millisecond (found from one timed launch), the time per launch
reported: a lone launch on an idle device would also time its submission (about the calibration row's time).
A calibration row first: the empty kernel (one workgroup), timed exactly as the shapes are,
the floor below which a kernel's time cannot be told apart from the launch; it stops at 2,000
samples, since times that short are noisy.

Rotating (--rotating N): cold without a flush; every launch reads the next of at least N copies of
its shape's inputs (and writes its own output), as many as exceed the last-level cache together.
With no flush ahead, a spin goes ahead of every sample, kernels' too, or the events would time the
host's submission of the launch (on an H100, the empty kernel's 3.0 us became 7.6 us without it).
Interleaved (--interleave): the kernels and baselines of a shape in one process, sampled in rounds
(sampling.interleave), each kernel row carrying its speed-up over each baseline per round.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from wgrad_cli.backends.flush import flush_bytes
from wgrad_cli.backends.registry import peak
from wgrad_cli.compile.jobs import BuildJob
from wgrad_cli.config.loader import Shape
from wgrad_cli.config.options import Criterion
from wgrad_cli.device import isolation
from wgrad_cli.device.isolation import Crash
from wgrad_cli.device.launch import DeviceProblem, Kernel, prepare, upload
from wgrad_cli.device.session import Record, Session
from wgrad_cli.device.waiting import settle, wait
from wgrad_cli.errors import Crashed
from wgrad_cli.measure.baselines import baselines, require_torch, spin
from wgrad_cli.measure.sampling import Flush, Measurement, Path, interleave, measure
from wgrad_cli.measure.stats import paired, summarize
from wgrad_cli.problem.abi import Dims, flops, min_bytes
from wgrad_cli.problem.generate import OCTAVES, PATTERNS, Problem, generate, patterned
from wgrad_cli.problem.mxfp8 import E8M0_BIAS, element_range, unpack_scales
from wgrad_cli.problem.routing import Routing
from wgrad_cli.results.baseline_names import NAMES as BASELINES
from wgrad_cli.results.files import order
from wgrad_cli.results.records import BenchRow, CodeObject, Inputs, ShapeRef

CALIBRATION = Shape("calibration", Dims(128, 256, 256, 1), Routing())  # the empty kernel: a grid of one
CALIBRATION_SAMPLES = 2000
HOT_SAMPLE_MS = 1.0  # hot: launches per sample fill about this much time
HOT_MAX_BATCH = 1000
SPIN_MARGIN = 2.0  # the spin lasts this many times the host's slowest submission of a sample seen
SPIN_MIN_MS = 0.05
T = TypeVar("T", int, float)


def _kernel(s: Session, job: BuildJob, dev: DeviceProblem) -> Kernel:
    code_object = s.builds[job].code_object
    assert code_object is not None
    return prepare(s.rt, code_object, s.target, s.backend, job.kernel, dev.dims, dev.args())


def _rotate(launches: list[Kernel]) -> Callable[[], None]:
    """Each call launches the next of `launches` in turn (one: that one)."""
    if len(launches) == 1:
        return launches[0]
    turn = itertools.cycle(launches)
    return lambda: next(turn)()


def inputs_of(p: Problem, pattern: str) -> Inputs:
    """What `p`'s operands hold, as its rows record it."""
    scales = [unpack_scales(x).astype(int) - E8M0_BIAS for x in (p.scale_A, p.scale_B)]
    low, high = element_range(p.A, p.B)
    return Inputs(pattern, OCTAVES if PATTERNS[pattern] is None else None, low, high,
                  int(min(x.min() for x in scales)), int(max(x.max() for x in scales)))


@dataclass(frozen=True)
class Shared:
    """What every row of a shape's measurement shares: how its cache was emptied, its work (FLOPs,
    bytes) and its inputs."""

    flush: Flush | None
    rotating: int | None  # copies rotated per launch, in place of a flush
    work: tuple[int, int]
    inputs: Inputs


def _median(values: list[T]) -> T | None:
    """The upper median, a value that was read (None for none)."""
    return sorted(values)[len(values) // 2] if values else None


def _record(s: Session, head: Head, batch: int, m: Measurement, run: int, plan: Plan, shared: Shared,
            spin_ms: float | None) -> BenchRow:
    """The row of one measurement. With plan.discard_throttled, samples flagged as throttled are left
    out of the figures (all are kept where every sample was)."""
    flush, work = shared.flush, shared.work
    kept = [t for t, throttled in zip(m.times_ms, m.throttled) if not throttled]
    if not plan.discard_throttled or not kept:
        kept = m.times_ms
    summary = summarize(kept)
    seconds = summary.median_ms / 1e3
    known = peak(s.rt.device)
    tflops = work[0] / seconds / 1e12
    clocks = [r.clock_mhz for r in m.readings if r.clock_mhz is not None]
    powers = [r.power_w for r in m.readings if r.power_w is not None]
    caps = [r.power_capped for r in m.readings if r.power_capped is not None]
    power = _median(powers)
    code = head.code
    return BenchRow(
        code_object_sha256=code.code_object_sha256, compiler=code.compiler, flags=code.flags,
        build_errors=code.build_errors, index=head.index, kernel=head.kernel, target=head.target,
        shape=head.shape, seed=s.seed, run=run, cache="hot" if plan.hot else "cold", summary=summary,
        stop=m.stop, wall_seconds=round(m.wall_seconds, 3), flops=work[0], min_bytes=work[1],
        tflops=float(tflops), gbps=float(work[1] / seconds / 1e9),
        pct_peak=float(100 * tflops / known.matrix_tflops) if known and work[0] else None,
        clock_mhz=_median(clocks), power_w=None if power is None else float(round(power, 1)),
        power_capped=round(sum(caps) / len(caps), 3) if caps else None, calibration=head.calibration,
        baseline=head.baseline, batch=batch, grid=head.grid, flush_bytes=flush.nbytes if flush else 0,
        flush=flush.kind if flush else None, spin_ms=None if spin_ms is None else round(spin_ms, 4),
        overlap=round(len(m.readings) / m.read, 3) if m.read else None,
        throttled=round(sum(m.throttled) / len(m.throttled), 3) if m.read else None,
        discarded=len(m.times_ms) - len(kept), inputs=shared.inputs, rotating=shared.rotating)


def launches_per_sample(s: Session, kernel: Callable[[], None], hot: bool, what: str) -> int:
    """1 when cold; hot, enough back-to-back launches to fill HOT_SAMPLE_MS, from one timed launch."""
    if not hot:
        return 1
    start, stop = s.events
    kernel()
    s.rt.record(start)
    kernel()
    s.rt.record(stop)
    wait(s.rt, stop, s.kernel_timeout, what)
    once = s.rt.elapsed_ms(start, stop)
    return max(1, min(HOT_MAX_BATCH, math.ceil(HOT_SAMPLE_MS / max(once, 1e-6))))


@dataclass(frozen=True)
class Head:
    """What a row says about what ran: the record's kernel and shape, the code object (none for torch's
    baselines) and the grid it was launched with."""

    index: int
    kernel: str
    target: str
    shape: ShapeRef
    code: CodeObject
    grid: int | None
    baseline: bool = False
    calibration: bool = False


def _head(s: Session, rec: Record, kernel: Kernel) -> Head:
    """What a record says about its kernel, including the grid it was launched with (for a persistent
    kernel, what the device runs at once: launch.prepare)."""
    return Head(rec.index, rec.job.kernel.name, rec.job.target, rec.shape_ref(), s.code_object(rec.job),
                kernel.grid)


@dataclass(frozen=True)
class Plan:
    """How every measurement of a run is taken."""

    criterion: Criterion
    hot: bool
    repeat: int
    warmup: int
    flush: str = "zero"  # options.FLUSHES
    discard_throttled: bool = False
    baselines: tuple[str, ...] = BASELINES  # which baselines run, with_baselines
    interleave: bool = False  # a shape's kernels and baselines sampled in rounds, in one process
    rotating: int | None = None  # cold: at least this many copies of the inputs rotated per launch, no flush
    data: str = "random"  # the inputs' pattern (options.DATA_PATTERNS)


@dataclass(frozen=True)
class Run:
    """One thing measured on a shape's problem, `repeat` times."""

    head: Head
    launch: Callable[[], None]
    criterion: Criterion
    repeat: int
    many: bool  # a spin goes ahead of each sample: many launches (torch's), or none ahead (rotating)


def _flush(s: Session, kind: str, ptr: int, nbytes: int) -> Flush:
    """The flush of `kind` over the device buffer at `ptr`."""
    if kind == "read":
        torch = require_torch()  # reads with torch: a sum over the buffer writes one value, not the buffer
        buffer = torch.zeros(nbytes // 8, dtype=torch.int64, device="cuda")
        total = torch.zeros((), dtype=torch.int64, device="cuda")

        def read(_: int) -> None:
            torch.sum(buffer, dim=0, out=total)

        return Flush(kind, nbytes, read)
    if kind == "pattern":
        return Flush(kind, nbytes, lambda i: s.rt.fill(ptr, i & 0xFF, nbytes))
    return Flush(kind, nbytes, lambda _: s.rt.fill(ptr, 0, nbytes))


def _spin(s: Session, fn: Callable[[], None], what: str) -> tuple[Callable[[], None], float]:
    """A spin long enough to hide the host's submission of one sample of `fn` (SPIN_MARGIN times
    the slowest of three timed submissions after an untimed one), and its length in ms. The first
    call of a path loads its kernels' modules (CUDA loads them lazily, on first launch): on an H100
    it took 107-198 ms of the eager paths' submission, which a spin sized from it would then add to
    every sample of theirs."""
    torch = require_torch()
    fn()
    settle(s.rt, s.events[1], s.kernel_timeout, what)
    slowest = 0.0
    for _ in range(3):
        began = time.perf_counter()
        fn()
        slowest = max(slowest, time.perf_counter() - began)
        settle(s.rt, s.events[1], s.kernel_timeout, what)
    ms = max(SPIN_MIN_MS, SPIN_MARGIN * slowest * 1e3)
    clock = s.rt.device.max_clock_mhz
    return lambda: spin(torch, ms, clock), ms


def _copies(plan: Plan, p: Problem, llc_bytes: int) -> int:
    """How many copies of `p` a sample rotates through: 1 unless rotating; then at least plan.rotating,
    and enough that together they exceed the last-level cache."""
    if not plan.rotating:
        return 1
    each = p.A.nbytes + p.B.nbytes + p.scale_A.nbytes + p.scale_B.nbytes + p.offsets.nbytes
    each += 2 * p.dims.E * p.dims.N * p.dims.K  # the output
    return max(plan.rotating, llc_bytes // each + 1)


def _measured(s: Session, plan: Plan, shape: Shape,
              runs: Callable[[list[DeviceProblem], Problem, int], list[Run]],
              work: tuple[int, int] | None = None) -> list[BenchRow]:
    """Upload the shape's problem (as many copies as rotate), measure each of `runs` on it `plan.repeat`
    times (cold: after a flush of the last-level cache, or rotating) and give their rows; interleaved, in
    rounds. `work` is (FLOPs, bytes), from the problem if None."""
    nbytes = flush_bytes(s.rt.device, peak(s.rt.device))
    flushed = not plan.hot and not plan.rotating
    ptr = s.rt.alloc(nbytes) if flushed and plan.flush != "read" else None
    devs: list[DeviceProblem] = []
    try:
        flush = _flush(s, plan.flush, ptr or 0, nbytes) if flushed else None
        p = patterned(generate(shape.dims, shape.routing, s.seed, s.config.quantization), plan.data)
        copies = 1 if plan.hot else _copies(plan, p, nbytes // 2)
        for _ in range(copies):
            devs.append(upload(s.rt, p))
        shared = Shared(flush, copies if plan.rotating and not plan.hot else None,
                        work or (flops(shape.dims, p.offsets.tolist()), min_bytes(shape.dims)),
                        inputs_of(p, plan.data))
        chosen = [replace(r, many=True)
                  for r in runs(devs, p, copies)] if shared.rotating else runs(devs, p, copies)
        if plan.interleave and len(chosen) > 1:
            return _rounds(s, plan, shape, chosen, shared)
        rows = []
        for r in chosen:
            what = f"{r.head.kernel} on {shape.name}"
            batch = launches_per_sample(s, r.launch, plan.hot, what)
            ahead, spin_ms = _spin(s, r.launch, what) if r.many else (None, None)
            for run in range(1, r.repeat + 1):
                m = measure(s.rt, s.events, r.launch, r.criterion, flush, plan.warmup, batch,
                            s.kernel_timeout, what, ahead)
                rows.append(_record(s, r.head, batch, m, run, plan, shared, spin_ms))
        return rows
    finally:
        for dev in devs:
            dev.free()
        if ptr is not None:
            s.rt.free(ptr)


def _rounds(s: Session, plan: Plan, shape: Shape, runs: list[Run], shared: Shared) -> list[BenchRow]:
    """`runs` (kernels first, then baselines) sampled in interleaved rounds, `plan.repeat` times; the
    timeout covers the rounds, so it is the per-path timeout times the paths; each kernel row carries
    its speed-up over every baseline, per round."""
    paths, spins = [], []
    for r in runs:
        what = f"{r.head.kernel} on {shape.name}"
        batch = launches_per_sample(s, r.launch, plan.hot, what)
        ahead, spin_ms = _spin(s, r.launch, what) if r.many else (None, None)
        paths.append(Path(r.launch, batch, ahead, what))
        spins.append(spin_ms)
    kernels = sum(not r.head.baseline for r in runs)
    criterion = replace(runs[0].criterion, timeout=runs[0].criterion.timeout * len(runs))
    rows = []
    for run in range(1, plan.repeat + 1):
        ms = interleave(s.rt, s.events, paths, kernels, criterion, shared.flush, plan.warmup,
                        s.kernel_timeout)
        for i, (r, path, m, spin_ms) in enumerate(zip(runs, paths, ms, spins)):
            pairs = [paired(b.head.kernel, m.times_ms, mb.times_ms)
                     for b, mb in zip(runs[kernels:], ms[kernels:])]
            row = _record(s, r.head, path.batch, m, run, plan, shared, spin_ms)
            rows.append(replace(row, interleaved=True, paired=[x for x in pairs if x] if i < kernels else []))
    return rows


def calibrate(s: Session, plan: Plan) -> list[BenchRow]:
    """The calibration row: the empty kernel, one workgroup, timed as the shapes are."""
    empty = BuildJob(s.specs["empty"], s.target.name, CALIBRATION.dims)

    def runs(devs: list[DeviceProblem], _p: Problem, _n: int) -> list[Run]:
        kernels = [_kernel(s, empty, dev) for dev in devs]
        head = replace(_head(s, Record(-1, empty, CALIBRATION), kernels[0]), calibration=True)
        return [Run(head, _rotate(kernels), replace(plan.criterion, max_samples=CALIBRATION_SAMPLES), 1,
                    False)]

    return _measured(s, plan, CALIBRATION, runs, (0, 0))


def _kernel_runs(s: Session, plan: Plan, recs: list[Record], devs: list[DeviceProblem]) -> list[Run]:
    runs = []
    for rec in recs:
        kernels = [_kernel(s, rec.job, dev) for dev in devs]
        runs.append(Run(_head(s, rec, kernels[0]), _rotate(kernels), plan.criterion, plan.repeat, False))
    return runs


def _baseline_runs(plan: Plan, rec: Record, p: Problem, copies: int) -> list[Run]:
    return [Run(Head(rec.index, name, rec.job.target, rec.shape_ref(), CodeObject(), None, baseline=True), fn,
                plan.criterion, plan.repeat, True)
            for name, fn in baselines(p, plan.baselines, copies).items()]


def measure_record(s: Session, job: tuple[Plan, Record]) -> list[BenchRow]:
    """One kernel on one shape, `repeat` rows."""
    plan, rec = job
    return _measured(s, plan, rec.shape, lambda devs, _p, _n: _kernel_runs(s, plan, [rec], devs))


def measure_baselines(s: Session, job: tuple[Plan, Record]) -> list[BenchRow]:
    """The torch baselines on a record's shape, `repeat` rows each."""
    plan, rec = job
    return _measured(s, plan, rec.shape, lambda _devs, p, copies: _baseline_runs(plan, rec, p, copies))


def measure_shape(s: Session, job: tuple[Plan, list[Record]]) -> list[BenchRow]:
    """Every kernel of one shape and the torch baselines on it, interleaved in rounds, `repeat` rows each."""
    plan, recs = job
    return _measured(s, plan, recs[0].shape,
                     lambda devs, p, copies: _kernel_runs(s, plan, recs, devs)
                     + _baseline_runs(plan, recs[0], p, copies))


def bench(s: Session, plan: Plan, with_baselines: bool, on_step: Callable[[str], None],
          on_done: Callable[[BenchRow], None]) -> list[BenchRow]:
    """The calibration row, then `repeat` measured runs of every record (and of the baselines on its
    shape, with_baselines), in `order`. Each (kernel, shape) is measured in a process of its own where a
    fault could end the process (isolation.py): one that crashes loses its rows only, and the run ends
    with Crashed (exit 4) after the others. on_step says what starts (a measurement, or the baselines'
    set-up, whose first torch.compile takes a while); on_done gets each finished row."""
    rows: list[BenchRow] = []
    crashes: list[Crash] = []

    def step(what: str, work: Callable[[Session, Any], list[BenchRow]], arg: object) -> None:
        on_step(what)
        result = isolation.run(s, what, work, arg)
        if isinstance(result, Crash):
            crashes.append(result)
            return
        for row in result:
            rows.append(row)
            on_done(row)

    step("calibration: the empty kernel", calibrate, plan)
    for shape, recs in s.by_shape().items():
        if with_baselines and plan.interleave:
            step(f"{', '.join(r.job.kernel.name for r in recs)} and the torch baselines on {shape.name}, "
                 "interleaved (setting up: the first compiles)", measure_shape, (plan, recs))
            continue
        for rec in recs:
            step(f"{rec.job.kernel.name} on {shape.name}", measure_record, (plan, rec))
        if with_baselines:
            step(f"torch baselines on {shape.name}: setting up (the first compiles)", measure_baselines,
                 (plan, recs[0]))
    if crashes:
        raise Crashed([c.line for c in crashes])
    return sorted(rows, key=order)

