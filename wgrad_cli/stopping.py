"""When to stop sampling, after nvbench's stdrel criterion: kept apart from how samples are taken.

Stop once there are at least `min_samples` samples, they add up to at least `min_seconds` of
device time and their relative standard deviation is at most `max_noise`; stop regardless
after `timeout` seconds of wall time (the result then says so) or at `max_samples`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import math


@dataclass(frozen=True)
class Criterion:
    min_samples: int = 10
    min_seconds: float = 0.5
    max_noise: float = 0.005
    timeout: float = 15.0
    max_samples: int = 100_000

    def verdict(self, running: Running, wall_seconds: float) -> str | None:
        """None to go on; else why sampling stopped: converged, timeout or max-samples."""
        if (running.n >= self.min_samples and running.total_ms / 1e3 >= self.min_seconds
                and running.rel_stdev() <= self.max_noise):
            return "converged"
        if wall_seconds >= self.timeout:
            return "timeout"
        return "max-samples" if running.n >= self.max_samples else None

    def to_json(self) -> dict[str, float | int]:
        return asdict(self)


@dataclass
class Running:
    """Count, device time and relative spread of the samples so far, updated in O(1) (Welford)."""

    n: int = 0
    total_ms: float = 0.0  # device time the samples covered, every launch of a batch counted
    _mean: float = 0.0
    _m2: float = 0.0

    def add(self, ms: float, launches: int = 1) -> None:
        """One sample: `ms` per launch, measured over `launches` back-to-back launches."""
        self.n += 1
        self.total_ms += ms * launches
        delta = ms - self._mean
        self._mean += delta / self.n
        self._m2 += delta * (ms - self._mean)

    def rel_stdev(self) -> float:
        if self.n < 2 or self._mean <= 0:
            return math.inf
        return math.sqrt(self._m2 / (self.n - 1)) / self._mean
