"""Taking timing samples on a device: each launch bracketed by its own pair of events.

Cold (the default): before each sample, outside the events, a flush of twice the last-level
cache evicts the previous sample's operands and output, so every launch reads from memory (the
kinds of flush, options.FLUSHES, and why zero is the default: docs/timing.md). Hot: launches back to
back, the operands left in cache. A spin, where given, is queued after the flush and before the
start event: while the device spins, the host submits the sample's launches, so a sample of many
launches (a torch path) times the device's work, not the host's submission. Sampling goes until
the criterion (stopping.py) says stop.

The SM/GFX clock, the board's power and whether its power limit holds the clock down are read
once per sample after its start event has completed; the reading overlapped the timed launch
when the stop event is still pending after it. Only overlapping readings describe the launch;
a sample whose overlapping reading shows the clock more than THROTTLED below the device's
maximum is flagged as throttled.

Interleaved (`interleave`): several paths of one shape (kernels and baselines) take one sample each
per round, in a fixed order, A B A B ..., each sample taken exactly as above; a kernel's speed-up
over a baseline is then a ratio per round, the two samples seconds apart at most, so a drift of
clock or temperature over the run moves both. The stopping rule applies to those ratios' spread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from wgrad_cli.device.runtime import UNREPORTED, Reading, Runtime
from wgrad_cli.device.waiting import settle, wait
from wgrad_cli.config.options import Criterion
from wgrad_cli.measure.stopping import Running, rounds_verdict, verdict

THROTTLED = 0.10  # a clock this far below the device's maximum, while the launch ran, flags the sample


@dataclass(frozen=True)
class Flush:
    """What evicts the last-level cache before a cold sample: `run(i)` queues it for sample i."""

    kind: str  # one of options.FLUSHES
    nbytes: int
    run: Callable[[int], None]


@dataclass(frozen=True)
class Measurement:
    times_ms: list[float]  # every sample, per launch
    stop: str  # one of stopping.REASONS
    readings: list[Reading]  # the readings taken while the timed launch ran
    read: int  # samples whose sensors were read (where the platform has sensors)
    throttled: list[bool]  # per sample: its overlapping reading saw the clock held down
    wall_seconds: float


def _throttled(reading: Reading, max_clock_mhz: int) -> bool:
    return reading.clock_mhz is not None and reading.clock_mhz < (1 - THROTTLED) * max_clock_mhz


@dataclass(frozen=True)
class Path:
    """One thing sampled: its launch (asynchronous), launches per sample, and the spin that goes ahead
    of each sample (torch's many launches) or None."""

    launch: Callable[[], None]
    batch: int = 1
    spin: Callable[[], None] | None = None
    what: str = ""  # names it in a hang's message


class _Samples:
    """The samples of one path as they are taken."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.overlapping: list[Reading] = []
        self.throttled: list[bool] = []
        self.read = 0

    def take(self, rt: Runtime, events: tuple[object, object], path: Path, flush: Flush | None, index: int,
             kernel_timeout: float) -> float:
        """One sample of `path` (the flush's sample number `index`), its time per launch."""
        start, stop = events
        if flush:
            flush.run(index)
        if path.spin:
            path.spin()
        rt.record(start)
        for _ in range(path.batch):
            path.launch()
        rt.record(stop)
        wait(rt, start, kernel_timeout, path.what)
        reading = rt.sensors()
        overlapped = not rt.done(stop)
        wait(rt, stop, kernel_timeout, path.what)
        self.times.append(rt.elapsed_ms(start, stop) / path.batch)
        if reading != UNREPORTED:
            self.read += 1
        if overlapped:
            self.overlapping.append(reading)
        self.throttled.append(overlapped and _throttled(reading, rt.device.max_clock_mhz))
        return self.times[-1]

    def result(self, stop: str, wall_seconds: float) -> Measurement:
        return Measurement(self.times, stop, self.overlapping, self.read, self.throttled, wall_seconds)


def _warm(rt: Runtime, events: tuple[object, object], path: Path, warmup: int, kernel_timeout: float) -> None:
    for _ in range(warmup):
        path.launch()
    settle(rt, events[1], kernel_timeout, path.what)


def measure(rt: Runtime, events: tuple[object, object], launch: Callable[[], None], criterion: Criterion,
            flush: Flush | None, warmup: int, batch: int, kernel_timeout: float, what: str,
            spin: Callable[[], None] | None = None) -> Measurement:
    """Samples of one launch each, or of `batch` back-to-back launches per event pair (time per launch).
    A sample still running after `kernel_timeout` seconds ends the run (waiting.KernelHang)."""
    path = Path(launch, batch, spin, what)
    _warm(rt, events, path, warmup, kernel_timeout)
    samples = _Samples()
    running = Running()
    began = time.perf_counter()
    while True:
        running.add(samples.take(rt, events, path, flush, len(samples.times), kernel_timeout), batch)
        reason = verdict(criterion, running, time.perf_counter() - began)
        if reason:
            return samples.result(reason, time.perf_counter() - began)


def interleave(rt: Runtime, events: tuple[object, object], paths: list[Path], kernels: int,
               criterion: Criterion, flush: Flush | None, warmup: int,
               kernel_timeout: float) -> list[Measurement]:
    """Rounds of one sample of each of `paths` in turn; the first `kernels` are kernels, the rest
    baselines. Stops by rounds_verdict on every kernel-to-baseline ratio (with no baseline, on each
    kernel's own spread); `criterion.timeout` holds for the whole interleaved run. One Measurement
    per path, in order, each with as many samples as there were rounds."""
    for path in paths:
        _warm(rt, events, path, warmup, kernel_timeout)
    taken = [_Samples() for _ in paths]
    pairs = [(k, b) for k in range(kernels) for b in range(kernels, len(paths))] \
        or [(k, k) for k in range(kernels)]
    ratios = [Running() for _ in pairs]
    kernel_ms = 0.0
    began = time.perf_counter()
    flushed = 0
    while True:
        times = []
        for path, samples in zip(paths, taken):
            times.append(samples.take(rt, events, path, flush, flushed, kernel_timeout))
            flushed += 1
        kernel_ms += sum(t * p.batch for t, p in zip(times[:kernels], paths))
        for (k, b), running in zip(pairs, ratios):
            if k == b:
                running.add(times[k])
            elif times[k] > 0:
                running.add(times[b] / times[k])
        reason = rounds_verdict(criterion, ratios, kernel_ms, time.perf_counter() - began)
        if reason:
            wall = time.perf_counter() - began
            return [samples.result(reason, wall) for samples in taken]
