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
from dataclasses import replace
from typing import Any, TypeVar


from wgrad_cli.abi import Dims, flops, min_bytes
from wgrad_cli.baselines import baselines
from wgrad_cli.build import BuildJob
from wgrad_cli.config import Shape
from wgrad_cli.launch import DeviceProblem, Kernel, prepare, upload
from wgrad_cli.measure import Flush, Measurement, measure
from wgrad_cli.peaks import flush_bytes, peak
from wgrad_cli.problem import generate
from wgrad_cli.grid import Grid
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


def bench(s: Session, criterion: Criterion, hot: bool, repeat: int, warmup: int, with_baselines: bool,
          on_step: Callable[[str], None], on_done: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    """The calibration row, then `repeat` measured runs of every record (and of the baselines on its
    shape, with_baselines), in `order`. on_step says what starts (a measurement, or the baselines'
    set-up, whose first torch.compile takes a while); on_done gets each finished row."""
    rows = []
    mode = "hot" if hot else "cold"
    flush = None if hot else Flush(s.rt.alloc(flush_bytes(s.rt.device)), flush_bytes(s.rt.device))
    try:
        empty = BuildJob(s.specs["empty"], s.target.name, CALIBRATION.dims)
        dev = upload(s.rt, generate(CALIBRATION.dims, CALIBRATION.routing, s.seed, s.config.quantization))
        try:
            on_step("calibration: the empty kernel")
            kernel = _kernel(s, empty, dev)
            batch = launches_per_sample(s, kernel, hot, empty.label)
            m = measure(s.rt, s.events, kernel, replace(criterion, max_samples=CALIBRATION_SAMPLES), flush, warmup, batch,
                        s.kernel_timeout, empty.label)
            rows.append({**_record(s, _head(s, Record(-1, empty, CALIBRATION), kernel), m, 1, mode, flush, (0, 0)),
                         "calibration": True, "batch": batch})
            on_done(rows[-1])
        finally:
            dev.free()
        for shape, recs in s.by_shape().items():
            p = generate(shape.dims, shape.routing, s.seed, s.config.quantization)
            work = (flops(shape.dims, p.offsets.tolist()), min_bytes(shape.dims))
            dev = upload(s.rt, p)
            try:
                kernels = [_kernel(s, rec.job, dev) for rec in recs]
                runs: list[tuple[dict[str, Any], Callable[[], None]]] = [
                    (_head(s, rec, kernel), kernel) for rec, kernel in zip(recs, kernels)]
                if with_baselines:
                    on_step(f"torch baselines on {shape.name}: setting up (the first compiles)")
                    runs += [({**recs[0].to_json(), "kernel": name, "baseline": True, "code_object_sha256": None,
                               "compiler": None, "flags": None, "build_errors": [], "grid": None}, fn)
                             for name, fn in baselines(p).items()]
                for head, fn in runs:
                    what = f"{head['kernel']} on {shape.name}"
                    on_step(what)
                    batch = launches_per_sample(s, fn, hot, what)
                    for run in range(1, repeat + 1):
                        m = measure(s.rt, s.events, fn, criterion, flush, warmup, batch, s.kernel_timeout, what)
                        rows.append({**_record(s, head, m, run, mode, flush, work), "calibration": False,
                                     "batch": batch})
                        on_done(rows[-1])
            finally:
                dev.free()
    finally:
        if flush:
            s.rt.free(flush.ptr)
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
    essential = ("kernel", "shape", "run", "median us", "p20-p80 us", "TFLOP/s", "% peak", "W", "stop")
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

