"""Taking timing samples on a device: each launch bracketed by its own pair of events.

Cold (the default): before each sample, outside the events, a write of twice the last-level
cache evicts the previous sample's operands and output, so every launch reads from memory.
Hot: launches back to back, the operands left in cache. Sampling goes until the criterion
(stopping.py) says stop; the SM/GFX clock, the board's power and whether its power limit holds the
clock down are read while each launch runs, where the platform reports them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from wgrad_cli.runtime import Reading, Runtime
from wgrad_cli.stopping import Criterion, Running
from wgrad_cli.waiting import settle, wait


@dataclass(frozen=True)
class Measurement:
    times_ms: list[float]
    stop: str  # converged, timeout or max-samples
    readings: list[Reading]  # the device's sensors, read once per sample while it runs
    wall_seconds: float


@dataclass(frozen=True)
class Flush:
    """A device buffer whose overwrite evicts the last-level cache."""

    ptr: int
    nbytes: int


def measure(rt: Runtime, events: tuple[object, object], launch: Callable[[], None], criterion: Criterion,
            flush: Flush | None, warmup: int, batch: int, kernel_timeout: float, what: str) -> Measurement:
    """Samples of one launch each, or of `batch` back-to-back launches per event pair (time per launch).
    A sample still running after `kernel_timeout` seconds ends the run (waiting.KernelHang)."""
    start, stop = events
    for _ in range(warmup):
        launch()
    settle(rt, stop, kernel_timeout, what)
    times: list[float] = []
    readings: list[Reading] = []
    running = Running()
    began = time.perf_counter()
    while True:
        if flush:
            rt.fill(flush.ptr, len(times) & 0xFF, flush.nbytes)
        rt.record(start)
        for _ in range(batch):
            launch()
        rt.record(stop)
        readings.append(rt.sensors())
        wait(rt, stop, kernel_timeout, what)
        times.append(rt.elapsed_ms(start, stop) / batch)
        running.add(times[-1], batch)
        verdict = criterion.verdict(running, time.perf_counter() - began)
        if verdict:
            return Measurement(times, verdict, readings, time.perf_counter() - began)
