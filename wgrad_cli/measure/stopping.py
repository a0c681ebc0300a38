"""When to stop sampling, after nvbench's stdrel criterion: kept apart from how samples are taken.

Stop once there are at least `min_samples` samples, they add up to at least `min_seconds` of
device time and their relative standard deviation is at most `max_noise` ("converged"). A
kernel whose noise never gets that low stops once the noise estimate itself has settled
("stable"): every STABLE_EVERY samples past STABLE_AFTER noise estimates, the estimates of the
last STABLE_WINDOW samples are compared with the current one, and when their RMS distance from it
is under `stable_noise` of it, more samples would not change the answer. Stop regardless after
`timeout` seconds of wall time (the result then says so) or at `max_samples`.

Interleaved rounds (bench --interleave) apply the same rule to the spread of each kernel-to-baseline
ratio, one per round: sampling stops once every ratio has converged or settled.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import math

from wgrad_cli.config.options import Criterion

STABLE_AFTER = 64  # noise estimates before the stability test is tried (nvbench's)
STABLE_EVERY = 16  # samples between tries
STABLE_WINDOW = 512  # the trailing noise estimates the test looks at
REASONS = ("converged", "stable", "timeout", "max-samples")  # every verdict, as results record it


@dataclass
class Running:
    """Count, device time and relative spread of the samples so far, updated in O(1) (Welford)."""

    n: int = 0
    total_ms: float = 0.0  # device time the samples covered, every launch of a batch counted
    _mean: float = 0.0
    _m2: float = 0.0
    # rel_stdev after each sample
    _noise: deque[float] = field(default_factory=lambda: deque(maxlen=STABLE_WINDOW))

    def add(self, ms: float, launches: int = 1) -> None:
        """One sample: `ms` per launch, measured over `launches` back-to-back launches."""
        self.n += 1
        self.total_ms += ms * launches
        delta = ms - self._mean
        self._mean += delta / self.n
        self._m2 += delta * (ms - self._mean)
        noise = self.rel_stdev()
        if math.isfinite(noise):
            self._noise.append(noise)

    def rel_stdev(self) -> float:
        if self.n < 2 or self._mean <= 0:
            return math.inf
        return math.sqrt(self._m2 / (self.n - 1)) / self._mean

    def noise_spread(self) -> float:
        """RMS distance of the trailing noise estimates from the current one, relative to it (inf
        before STABLE_AFTER estimates, or when the noise is zero, where converged applies)."""
        if len(self._noise) <= STABLE_AFTER or self._noise[-1] <= 0:
            return math.inf
        current = self._noise[-1]
        return math.sqrt(sum((x - current) ** 2 for x in self._noise) / len(self._noise)) / current


def _settled(criterion: Criterion, running: Running) -> str | None:
    """converged or stable once the spread allows it (the caller checks the sample count and time)."""
    if running.rel_stdev() <= criterion.max_noise:
        return "converged"
    if running.n % STABLE_EVERY == 0 and running.noise_spread() < criterion.stable_noise:
        return "stable"
    return None


def _ended(criterion: Criterion, n: int, wall_seconds: float) -> str | None:
    if wall_seconds >= criterion.timeout:
        return "timeout"
    return "max-samples" if n >= criterion.max_samples else None


def verdict(criterion: Criterion, running: Running, wall_seconds: float) -> str | None:
    """None to go on; else why sampling stopped: converged, stable, timeout or max-samples."""
    if running.n >= criterion.min_samples and running.total_ms / 1e3 >= criterion.min_seconds:
        settled = _settled(criterion, running)
        if settled:
            return settled
    return _ended(criterion, running.n, wall_seconds)


def rounds_verdict(criterion: Criterion, ratios: Sequence[Running], kernel_ms: float,
                   wall_seconds: float) -> str | None:
    """Interleaved rounds: None to go on; else why they stopped. `ratios` holds one Running per
    kernel-to-baseline ratio (a value per round), `kernel_ms` the kernels' device time so far: after
    `min_samples` rounds and `min_seconds` of it, stop once every ratio has converged (converged) or
    converged or settled (stable)."""
    rounds = min((r.n for r in ratios), default=0)
    if ratios and rounds >= criterion.min_samples and kernel_ms / 1e3 >= criterion.min_seconds:
        settled = [_settled(criterion, r) for r in ratios]
        if all(settled):
            return "converged" if all(x == "converged" for x in settled) else "stable"
    return _ended(criterion, rounds, wall_seconds)
