"""stats: the figures bench reports per shape, against numpy, and the per-round speed-ups of
interleaved rounds."""

from __future__ import annotations

import numpy as np
import pytest

from wgrad_cli.measure.stats import paired, round_ratios, summarize
from wgrad_cli.results.records import Paired, Summary, to_json


def test_known_data() -> None:
    s = summarize([7.0, 1.0, 10.0, 4.0, 2.0, 9.0, 3.0, 6.0, 5.0, 8.0])
    assert (s.samples, s.median_ms, s.min_ms, s.mean_ms) == (10, 5.5, 1.0, 5.5)
    assert (s.p20_ms, s.p80_ms) == pytest.approx((2.8, 8.2))
    assert s.rel_stdev == pytest.approx(np.sqrt(55 / 6) / 5.5)  # sample variance of 1..10 is 55/6


@pytest.mark.parametrize("seed", range(3))
def test_random_data_against_numpy(seed: int) -> None:
    t = np.random.default_rng(seed).gamma(4.0, 0.05, size=101)
    assert to_json(summarize(t.tolist())) == pytest.approx({
        "samples": 101, "median_ms": np.median(t), "min_ms": t.min(), "p20_ms": np.percentile(t, 20),
        "p80_ms": np.percentile(t, 80), "mean_ms": t.mean(), "rel_stdev": t.std(ddof=1) / t.mean()},
                                                           rel=1e-12)


def test_single_sample() -> None:
    s = summarize([0.25])
    assert s == Summary(1, 0.25, 0.25, 0.25, 0.25, 0.25, 0.0)
    assert to_json(s) == {"samples": 1, "median_ms": 0.25, "min_ms": 0.25, "p20_ms": 0.25, "p80_ms": 0.25,
                           "mean_ms": 0.25, "rel_stdev": 0.0}


def test_fields_are_plain_floats() -> None:
    """The summary goes into JSON records as is: no numpy scalars."""
    assert all(type(v) in (int, float) for v in to_json(summarize([1.0, 2.0, 4.0])).values())


def test_round_ratios_are_the_baselines_time_over_the_kernels_per_round() -> None:
    # a round without a kernel time has none
    assert round_ratios([1.0, 2.0, 0.0], [2.0, 3.0, 5.0]) == [2.0, 1.5]
    with pytest.raises(ValueError, match="not paired"):
        round_ratios([1.0], [1.0, 2.0])


def test_paired_gives_the_median_and_the_20_80_range_of_the_ratios() -> None:
    kernel = [1.0] * 10
    baseline = [float(x) for x in range(1, 11)]
    p = paired("torch-grouped", kernel, baseline)
    assert p is not None and (p.baseline, p.rounds) == ("torch-grouped", 10)
    assert (p.median, p.p20, p.p80) == pytest.approx((5.5, 2.8, 8.2))
    assert isinstance(p, Paired)
    assert paired("torch-grouped", [0.0], [1.0]) is None
