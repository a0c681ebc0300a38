"""`wgrad bench`: time each kernel on a fresh random problem and report rates against the device's peaks.

Timing (measure.py) and when to stop (stopping.py) are kept apart from what is reported here.
Cold (the default): one launch per sample, after a write of twice the last-level cache; the
write also keeps the device busy while the launch is submitted, so the host's launch cost stays
outside the events. Hot: back-to-back launches, as many per sample as fill about a millisecond
(found from one timed launch), the time per launch reported: a lone launch on an idle device
would also time its submission (about the calibration row's time).
A calibration row first: the empty kernel (one workgroup), timed exactly as the shapes are,
the floor below which a kernel's time cannot be told apart from the launch; it stops at 2,000
samples, since times that short are noisy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar


from wgrad_cli import isolation
from wgrad_cli.abi import Dims, flops, min_bytes
from wgrad_cli.baselines import baselines
from wgrad_cli.build import BuildJob
from wgrad_cli.config import Shape
from wgrad_cli.grid import Grid
from wgrad_cli.isolation import Crash, Crashed
from wgrad_cli.launch import DeviceProblem, Kernel, prepare, upload
from wgrad_cli.measure import Flush, Measurement, measure
from wgrad_cli.peaks import flush_bytes, peak
from wgrad_cli.problem import Problem, generate
from wgrad_cli.report import cell
from wgrad_cli.results import order, shape_label
from wgrad_cli.routing import Routing
from wgrad_cli.session import Record, Session
from wgrad_cli.stats import summarize
from wgrad_cli.stopping import Criterion
from wgrad_cli.waiting import wait

CALIBRATION = Shape("calibration", Dims(128, 256, 256, 1), Routing())  # the empty kernel: a grid of one
CALIBRATION_SAMPLES = 2000
HOT_SAMPLE_MS = 1.0  # hot: launches per sample fill about this much time
HOT_MAX_BATCH = 1000
T = TypeVar("T", int, float)


def _kernel(s: Session, job: BuildJob, dev: DeviceProblem) -> Kernel:
    code_object = s.builds[job].code_object
    assert code_object is not None
    return prepare(s.rt, code_object, s.target, job.kernel, dev.dims, dev.args())


def _median(values: list[T]) -> T | None:
    """The upper median, a value that was read (None for none)."""
    return sorted(values)[len(values) // 2] if values else None


def _record(s: Session, head: dict[str, Any], m: Measurement, run: int, cache: str, flush: Flush | None,
            work: tuple[int, int]) -> dict[str, Any]:
    summary = summarize(m.times_ms)
    seconds = summary.median_ms / 1e3
    known = peak(s.rt.device)
    tflops = work[0] / seconds / 1e12
    clocks = [r.clock_mhz for r in m.readings if r.clock_mhz is not None]
    powers = [r.power_w for r in m.readings if r.power_w is not None]
    caps = [r.power_capped for r in m.readings if r.power_capped is not None]
    power = _median(powers)
    return {**head, "seed": s.seed, "run": run, "cache": cache,
            "flush_bytes": flush.nbytes if flush else 0, **summary.to_json(), "stop": m.stop,
            "wall_seconds": round(m.wall_seconds, 3), "flops": work[0], "min_bytes": work[1], "tflops": tflops,
            "gbps": work[1] / seconds / 1e9,
            "pct_peak": 100 * tflops / known.matrix_tflops if known and work[0] else None,
            "clock_mhz": _median(clocks), "power_w": None if power is None else round(power, 1),
            "power_capped": round(sum(caps) / len(caps), 3) if caps else None}


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


def _head(s: Session, rec: Record, kernel: Kernel) -> dict[str, Any]:
    """What a record says about its kernel, including the grid it was launched with (for a persistent
    kernel, what the device runs at once: launch.prepare)."""
    return {**rec.to_json(), **s.code_object_json(rec.job), "baseline": False, "grid": kernel.grid}


@dataclass(frozen=True)
class Plan:
    """How every measurement of a run is taken."""

    criterion: Criterion
    hot: bool
    repeat: int
    warmup: int


Run = tuple[dict[str, Any], Callable[[], None], Criterion, int]  # head, launch, stopping rule, repeats


def _measured(s: Session, plan: Plan, shape: Shape, runs: Callable[[DeviceProblem, Problem], list[Run]],
              work: tuple[int, int] | None = None) -> list[dict[str, Any]]:
    """Upload the shape's problem, measure each of `runs` on it `plan.repeat` times (cold: after a flush of
    the last-level cache), and give their rows; `work` is (FLOPs, bytes), from the problem if None."""
    mode = "hot" if plan.hot else "cold"
    rows = []
    flush = None if plan.hot else Flush(s.rt.alloc(flush_bytes(s.rt.device)), flush_bytes(s.rt.device))
    try:
        p = generate(shape.dims, shape.routing, s.seed, s.config.quantization)
        dev = upload(s.rt, p)
        try:
            work = work or (flops(shape.dims, p.offsets.tolist()), min_bytes(shape.dims))
            for head, fn, criterion, repeat in runs(dev, p):
                what = f"{head['kernel']} on {shape.name}"
                batch = launches_per_sample(s, fn, plan.hot, what)
                for run in range(1, repeat + 1):
                    m = measure(s.rt, s.events, fn, criterion, flush, plan.warmup, batch, s.kernel_timeout, what)
                    rows.append({**_record(s, head, m, run, mode, flush, work),
                                 "calibration": head.get("calibration", False), "batch": batch})
        finally:
            dev.free()
    finally:
        if flush:
            s.rt.free(flush.ptr)
    return rows


def calibrate(s: Session, plan: Plan) -> list[dict[str, Any]]:
    """The calibration row: the empty kernel, one workgroup, timed as the shapes are."""
    empty = BuildJob(s.specs["empty"], s.target.name, CALIBRATION.dims)

    def runs(dev: DeviceProblem, p: Problem) -> list[Run]:
        kernel = _kernel(s, empty, dev)
        head = {**_head(s, Record(-1, empty, CALIBRATION), kernel), "calibration": True}
        return [(head, kernel, replace(plan.criterion, max_samples=CALIBRATION_SAMPLES), 1)]

    return _measured(s, plan, CALIBRATION, runs, (0, 0))


def measure_record(s: Session, job: tuple[Plan, Record]) -> list[dict[str, Any]]:
    """One kernel on one shape, `repeat` rows."""
    plan, rec = job

    def runs(dev: DeviceProblem, p: Problem) -> list[Run]:
        kernel = _kernel(s, rec.job, dev)
        return [(_head(s, rec, kernel), kernel, plan.criterion, plan.repeat)]

    return _measured(s, plan, rec.shape, runs)


def measure_baselines(s: Session, job: tuple[Plan, Record]) -> list[dict[str, Any]]:
    """The torch baselines on a record's shape, `repeat` rows each."""
    plan, rec = job

    def runs(dev: DeviceProblem, p: Problem) -> list[Run]:
        head = {**rec.to_json(), "baseline": True, "code_object_sha256": None, "compiler": None, "flags": None,
                "build_errors": [], "grid": None}
        return [({**head, "kernel": name}, fn, plan.criterion, plan.repeat) for name, fn in baselines(p).items()]

    return _measured(s, plan, rec.shape, runs)


def bench(s: Session, criterion: Criterion, hot: bool, repeat: int, warmup: int, with_baselines: bool,
          on_step: Callable[[str], None], on_done: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    """The calibration row, then `repeat` measured runs of every record (and of the baselines on its
    shape, with_baselines), in `order`. Each (kernel, shape) is measured in a process of its own where a
    fault could end the process (isolation.py): one that crashes loses its rows only, and the run ends
    with Crashed (exit 4) after the others. on_step says what starts (a measurement, or the baselines'
    set-up, whose first torch.compile takes a while); on_done gets each finished row."""
    plan = Plan(criterion, hot, repeat, warmup)
    rows: list[dict[str, Any]] = []
    crashes: list[Crash] = []

    def step(what: str, work: Callable[[Session, Any], list[dict[str, Any]]], arg: object) -> None:
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
        for rec in recs:
            step(f"{rec.job.kernel.name} on {shape.name}", measure_record, (plan, rec))
        if with_baselines:
            step(f"torch baselines on {shape.name}: setting up (the first compiles)", measure_baselines,
                 (plan, recs[0]))
    if crashes:
        raise Crashed([c.line for c in crashes])
    return sorted(rows, key=order)


def _us(ms: float) -> str:
    return f"{ms * 1e3:,.1f}"


def _energy(r: dict[str, Any]) -> str:
    """Board energy per launch in mJ: the median power times the median time (where power was read)."""
    if r.get("power_w") is None:
        return ""
    mj = r["power_w"] * r["median_ms"]
    return f"{mj:,.0f}" if mj >= 10 else f"{mj:.2g}"


def bench_table(records: list[dict[str, Any]], title: str) -> Grid:
    """One row per measured run, the calibration row first (from result records, also merged ones).

    A hot row's cache column shows its launches per sample (x24); its times are per launch. mJ is
    the board's energy per launch, estimated as the median power times the median time; capped is
    the share of samples during which the power limit held the clock down. On a device held at its
    power limit, energy per launch (not cycles) sets the time."""
    table = Grid(title)
    essential = ("kernel", "shape", "run", "median us", "rel stdev", "TFLOP/s", "W", "stop")
    for name in ("kernel", "shape", "M x N x K, E", "routing", "run", "cache", "samples", "median us", "min us",
                 "p20-p80 us", "rel stdev", "TFLOP/s", "GB/s", "% peak", "clock MHz", "W", "mJ", "capped", "stop"):
        table.add_column(name, "left" if name in ("kernel", "shape", "routing", "cache", "stop") else "right",
                         detail=name not in essential)
    for r in records:
        d = r["shape"]
        stop = r["stop"] if r["stop"] == "converged" else f"[yellow]{r['stop']}[/]"
        cache = r["cache"] + (f" x{r['batch']}" if r.get("batch", 1) > 1 else "")
        rates = ["", ""] if r["calibration"] else [f"{r['tflops']:,.2f}", f"{r['gbps']:,.1f}"]
        table.add_row(r["kernel"], d["name"], shape_label(d), d["routing"],
                      str(r["run"]), cache, str(r["samples"]), _us(r["median_ms"]), _us(r["min_ms"]),
                      f"{_us(r['p20_ms'])}-{_us(r['p80_ms'])}", f"{100 * r['rel_stdev']:.2f}%", *rates,
                      cell(r["pct_peak"], ".2f"), cell(r["clock_mhz"], ""), cell(r.get("power_w"), ".0f"), _energy(r),
                      cell(r.get("power_capped"), ".0%"), stop)
    return table

