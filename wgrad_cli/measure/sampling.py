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
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from wgrad_cli.device.runtime import UNREPORTED, Reading, Runtime
from wgrad_cli.device.waiting import settle, wait
from wgrad_cli.config.options import Criterion
from wgrad_cli.measure.stopping import Running, verdict

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


def measure(rt: Runtime, events: tuple[object, object], launch: Callable[[], None], criterion: Criterion,
            flush: Flush | None, warmup: int, batch: int, kernel_timeout: float, what: str,
            spin: Callable[[], None] | None = None) -> Measurement:
    """Samples of one launch each, or of `batch` back-to-back launches per event pair (time per launch).
    A sample still running after `kernel_timeout` seconds ends the run (waiting.KernelHang)."""
    start, stop = events
    for _ in range(warmup):
        launch()
    settle(rt, stop, kernel_timeout, what)
    times: list[float] = []
    overlapping: list[Reading] = []
    throttled: list[bool] = []
    read = 0
    running = Running()
    began = time.perf_counter()
    while True:
        if flush:
            flush.run(len(times))
        if spin:
            spin()
        rt.record(start)
        for _ in range(batch):
            launch()
        rt.record(stop)
        wait(rt, start, kernel_timeout, what)
        reading = rt.sensors()
        overlapped = not rt.done(stop)
        wait(rt, stop, kernel_timeout, what)
        times.append(rt.elapsed_ms(start, stop) / batch)
        if reading != UNREPORTED:
            read += 1
        if overlapped:
            overlapping.append(reading)
        throttled.append(overlapped and _throttled(reading, rt.device.max_clock_mhz))
        running.add(times[-1], batch)
        reason = verdict(criterion, running, time.perf_counter() - began)
        if reason:
            return Measurement(times, reason, overlapping, read, throttled, time.perf_counter() - began)
