"""sampling.py: the order in which interleaved rounds take their samples, and their stop, on a fake
device whose clock is simulated (a GPU's events cannot be had here): each launch adds its path's
time, scaled by a drift that stands for a clock or temperature changing over the run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from wgrad_cli.config.options import Criterion
from wgrad_cli.device.runtime import UNREPORTED, DeviceInfo, Reading
from wgrad_cli.measure.sampling import Flush, Path, interleave, measure
from wgrad_cli.measure.stats import paired

CRITERION = Criterion(min_samples=10, min_seconds=0.0, max_noise=0.005, timeout=60.0, max_samples=400)


class FakeClock:
    """Events read a simulated device clock in ms; each launch advances it by its path's time times
    `drift(launches so far)`; `log` holds what ran, in order (flushes too)."""

    def __init__(self, drift: Callable[[int], float] = lambda _: 1.0) -> None:
        self.device = DeviceInfo("nvidia", 0, "fake", "sm_90", 132, 1980, 2**36, 50 << 20, "none", "none")
        self.now = 0.0
        self.drift = drift
        self.log: list[str] = []

    def path(self, name: str, ms: float) -> Path:
        def launch() -> None:
            self.now += ms * self.drift(len([x for x in self.log if x != "flush"]))
            self.log.append(name)
        return Path(launch, what=name)

    def event(self) -> list[float]:
        return [0.0]

    def record(self, event: list[float]) -> None:
        event[0] = self.now

    def done(self, _event: object) -> bool:
        return True

    def elapsed_ms(self, start: list[float], stop: list[float]) -> float:
        return stop[0] - start[0]

    def sensors(self) -> Reading:
        return UNREPORTED


def run(clock: FakeClock, paths: list[Path], kernels: int, criterion: Criterion = CRITERION,
        flush: Flush | None = None) -> list[list[float]]:
    events = (clock.event(), clock.event())
    return [m.times_ms for m in interleave(clock, events, paths, kernels, criterion,  # type: ignore[arg-type]
                                           flush, 0, 1.0)]


def test_rounds_alternate_the_kernel_and_its_baselines() -> None:
    clock = FakeClock()
    times = run(clock, [clock.path("k", 1.0), clock.path("a", 2.0), clock.path("b", 3.0)], 1)
    rounds = len(times[0])
    assert clock.log == ["k", "a", "b"] * rounds
    # no spread: converged at once
    assert [len(t) for t in times] == [rounds] * 3 and rounds == CRITERION.min_samples
    assert times == [[1.0] * rounds, [2.0] * rounds, [3.0] * rounds]


def test_a_flush_goes_before_every_sample_with_its_own_number() -> None:
    clock = FakeClock()
    numbers: list[int] = []

    def flushed(i: int) -> None:
        numbers.append(i)
        clock.log.append("flush")

    run(clock, [clock.path("k", 1.0), clock.path("a", 2.0)], 1, flush=Flush("zero", 0, flushed))
    assert clock.log[:4] == ["flush", "k", "flush", "a"] and numbers == list(range(len(numbers)))


def test_the_ratio_per_round_holds_through_a_drift_that_moves_both_paths() -> None:
    """The clock slows by 20% over the run: each path's own spread is far above 0.5%, so blocks of
    one path then the other would see different clocks, but each round's ratio is the same (the drift
    is the same for both samples of a round, within one launch), and sampling converges on it."""
    clock = FakeClock(drift=lambda n: 1.0 + 0.2 * min(n, 200) / 200)
    k, b = run(clock, [clock.path("k", 1.0), clock.path("b", 1.5)], 1, replace(CRITERION, min_samples=50))
    ratio = paired("b", k, b)
    assert ratio is not None and ratio.rounds == len(k) == 50
    assert abs(ratio.median - 1.5) < 0.01 and ratio.p80 - ratio.p20 < 0.01
    spread = (max(k) - min(k)) / min(k)
    assert spread > 0.04  # the kernel's own times moved with the clock
    # blocked, the same drift puts the two paths on different clocks: the ratio of medians is off
    blocked = FakeClock(drift=lambda n: 1.0 + 0.2 * min(n, 200) / 200)
    events = (blocked.event(), blocked.event())
    stop = replace(CRITERION, min_samples=50, max_samples=50)
    alone = [measure(blocked, events, p.launch, stop, None, 0, 1, 1.0,  # type: ignore[arg-type]
                     p.what).times_ms
             for p in (blocked.path("k", 1.0), blocked.path("b", 1.5))]
    medians = [sorted(t)[len(t) // 2] for t in alone]
    assert abs(medians[1] / medians[0] - 1.5) > 0.05


def test_rounds_stop_on_the_ratio_not_on_each_path() -> None:
    """A noisy ratio keeps the rounds going to max-samples though each path alone is steady in turn."""
    # every other baseline sample slower
    clock = FakeClock(drift=lambda n: 1.0 + 0.1 * ((n // 2) % 2) * (n % 2))
    times = run(clock, [clock.path("k", 1.0), clock.path("b", 1.0)], 1,
                replace(CRITERION, max_samples=64, stable_noise=0.0))
    assert len(times[0]) == 64


def test_two_kernels_and_two_baselines_pair_every_kernel_with_every_baseline() -> None:
    clock = FakeClock()
    k1, k2, b1, b2 = run(clock, [clock.path("k1", 1.0), clock.path("k2", 2.0), clock.path("b1", 4.0),
                                 clock.path("b2", 8.0)], 2)
    assert clock.log[:4] == ["k1", "k2", "b1", "b2"]
    ratios = [paired(n, k, b) for k in (k1, k2) for n, b in (("b1", b1), ("b2", b2))]
    assert [r.median for r in ratios if r] == [4.0, 8.0, 2.0, 4.0]


def test_the_timeout_covers_the_whole_interleaved_run() -> None:
    clock = FakeClock(drift=lambda n: 1.0 + (n % 3) * 0.5)  # never settles
    times = run(clock, [clock.path("k", 1.0), clock.path("b", 1.0)], 1,
                replace(CRITERION, timeout=0.0, stable_noise=0.0))
    assert len(times[0]) == len(times[1]) == 1
