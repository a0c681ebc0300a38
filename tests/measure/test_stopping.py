"""stopping.py: when bench stops sampling (nvbench's stdrel criterion) and the O(1) running spread."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wgrad_cli.config.options import Criterion
from wgrad_cli.measure.stopping import Running, rounds_verdict, verdict

CRITERION = Criterion(min_samples=10, min_seconds=0.5, max_noise=0.01, timeout=15.0, max_samples=1000)


def running(samples: list[float]) -> Running:
    r = Running()
    for ms in samples:
        r.add(ms)
    return r


def test_converges_once_all_three_conditions_hold() -> None:
    steady = running([100.0] * 10)  # 10 samples, 1 s of device time, no spread
    assert steady.rel_stdev() == 0.0
    assert verdict(CRITERION, steady, 1.0) == "converged"


@pytest.mark.parametrize("samples, missing", [
    ([100.0] * 9, "min_samples"),
    ([10.0] * 20, "min_seconds"),  # 0.2 s of device time
    ([90.0, 110.0] * 10, "max_noise"),  # rel stdev about 10 %
])
def test_goes_on_while_one_condition_fails(samples: list[float], missing: str) -> None:
    assert verdict(CRITERION, running(samples), 1.0) is None, missing


def test_timeout_once_wall_time_exceeds_it() -> None:
    noisy = running([90.0, 110.0] * 10)
    assert verdict(CRITERION, noisy, 14.9) is None
    assert verdict(CRITERION, noisy, 15.1) == "timeout"


def test_converged_wins_over_timeout() -> None:
    assert verdict(CRITERION, running([100.0] * 10), 20.0) == "converged"


def test_max_samples() -> None:
    noisy = running([0.1, 0.3] * 500)  # 1000 samples, 0.2 s, rel stdev about 50 %
    assert noisy.n == 1000
    assert verdict(CRITERION, noisy, 1.0) == "max-samples"
    assert verdict(CRITERION, running([0.1, 0.3] * 499), 1.0) is None


@pytest.mark.parametrize("seed", range(5))
def test_rel_stdev_matches_numpy(seed: int) -> None:
    samples = np.random.default_rng(seed).lognormal(mean=-2.0, sigma=0.3, size=257)
    r = running(samples.tolist())
    assert r.n == 257
    assert r.total_ms == pytest.approx(samples.sum(), rel=1e-12)
    assert r.rel_stdev() == pytest.approx(samples.std(ddof=1) / samples.mean(), rel=1e-9)


def test_rel_stdev_welford_keeps_precision_on_a_large_offset() -> None:
    """A naive sum-of-squares loses every digit here; Welford's update does not."""
    samples = 1e6 + np.random.default_rng(0).normal(0.0, 1e-3, size=1000)
    assert running(samples.tolist()).rel_stdev() == \
        pytest.approx(samples.std(ddof=1) / samples.mean(), rel=1e-4)


@pytest.mark.parametrize("samples", [[], [3.0]])
def test_rel_stdev_is_inf_below_two_samples(samples: list[float]) -> None:
    assert math.isinf(running(samples).rel_stdev())
    assert verdict(Criterion(min_samples=1, min_seconds=0.0), running(samples), 0.0) is None


def test_batched_samples_count_every_launch_toward_min_time() -> None:
    """A hot sample of 24 launches at 0.04 ms covers 0.96 ms of device time, not 0.04."""
    running = Running()
    for _ in range(10):
        running.add(0.04, launches=24)
    assert running.total_ms == pytest.approx(9.6)
    assert verdict(Criterion(min_samples=10, min_seconds=0.009, max_noise=1.0), running, 0.0) == "converged"


def first_stop(criterion: Criterion, samples: list[float]) -> tuple[str | None, int]:
    """The verdict after each sample, as measure() asks it; the first stop and the samples it took."""
    r = Running()
    for ms in samples:
        r.add(ms)
        stop = verdict(criterion, r, 0.0)
        if stop:
            return stop, r.n
    return None, r.n


def test_stable_once_the_noise_estimate_settles() -> None:
    """Noise of about 5 % never reaches 1 %, but its estimate settles: stop as stable, well before
    the sample limit, and the noise reported is the samples' own."""
    samples = np.random.default_rng(1).lognormal(0.0, 0.05, size=1000).tolist()
    verdict, n = first_stop(CRITERION, samples)
    assert verdict == "stable"
    assert 64 < n < 1000 and n % 16 == 0


def test_not_stable_while_the_noise_still_grows() -> None:
    """Samples whose spread widens as they go (a device warming up) never settle."""
    rng = np.random.default_rng(2)
    samples = [1.0 + rng.normal(0.0, 0.001 * i) for i in range(1, 1001)]
    assert first_stop(CRITERION, samples) == ("max-samples", 1000)


def test_stability_waits_for_min_time_and_can_be_switched_off() -> None:
    samples = np.random.default_rng(3).lognormal(0.0, 0.05, size=1000).tolist()
    assert first_stop(Criterion(min_samples=10, min_seconds=2000.0, max_noise=0.01, max_samples=1000),
                      samples) == ("max-samples", 1000)
    assert first_stop(Criterion(min_samples=10, min_seconds=0.5, max_noise=0.01, max_samples=1000,
                                stable_noise=0.0),
                      samples) == ("max-samples", 1000)


def test_rounds_stop_once_every_ratio_has_converged() -> None:
    steady, noisy = running([2.0] * 10), running([1.0, 1.5] * 5)
    assert rounds_verdict(CRITERION, [steady, steady], 1000.0, 1.0) == "converged"
    assert rounds_verdict(CRITERION, [steady, noisy], 1000.0, 1.0) is None  # one ratio still spread
    assert rounds_verdict(CRITERION, [steady], 100.0, 1.0) is None  # 0.1 s of kernel time, below min_seconds
    assert rounds_verdict(CRITERION, [steady, noisy], 1000.0, 15.1) == "timeout"
    assert rounds_verdict(CRITERION, [running([2.0] * 9)], 1000.0, 1.0) is None  # 9 rounds


def test_rounds_stable_where_a_ratio_settled_but_never_converged() -> None:
    """Each round's verdict looks at every ratio: stable once the noisy one has settled (about 5%, as
    test_stable_once_the_noise_estimate_settles) and the other converged; not before."""
    noisy = Running()
    steady = running([2.0] * 10)
    ratios = np.random.default_rng(1).lognormal(0.0, 0.05, size=1000).tolist()
    stops = []
    for x in ratios:
        noisy.add(x)
        steady.add(2.0)
        stops.append(rounds_verdict(CRITERION, [noisy, steady], 1000.0, 1.0))
    first = next(i for i, v in enumerate(stops) if v)
    assert stops[first] == "stable" and first + 1 == first_stop(CRITERION, ratios)[1]
