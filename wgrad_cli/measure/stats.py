"""Summaries of timing samples: the figures bench reports for one shape, and the speed-ups of
interleaved rounds."""

from __future__ import annotations

import numpy as np

from wgrad_cli.results.records import Paired, Summary


def summarize(times_ms: list[float]) -> Summary:
    t = np.asarray(times_ms, dtype=np.float64)
    p20, median, p80 = np.percentile(t, [20, 50, 80])
    mean = float(t.mean())
    return Summary(len(t), float(median), float(t.min()), float(p20), float(p80), mean,
                   float(t.std(ddof=1) / mean) if len(t) > 1 and mean > 0 else 0.0)


def round_ratios(kernel_ms: list[float], baseline_ms: list[float]) -> list[float]:
    """Per round, the baseline's time over the kernel's (above 1: the kernel is faster); rounds where
    the kernel's time is not positive have no ratio."""
    if len(kernel_ms) != len(baseline_ms):
        raise ValueError(f"{len(kernel_ms)} kernel samples against {len(baseline_ms)} of the baseline: not "
                         "paired")
    return [b / k for k, b in zip(kernel_ms, baseline_ms) if k > 0]


def paired(baseline: str, kernel_ms: list[float], baseline_ms: list[float]) -> Paired | None:
    """The median and 20-80% range of the per-round ratios (None where no round has one)."""
    ratios = round_ratios(kernel_ms, baseline_ms)
    if not ratios:
        return None
    p20, median, p80 = np.percentile(np.asarray(ratios, dtype=np.float64), [20, 50, 80])
    return Paired(baseline, len(ratios), float(median), float(p20), float(p80))
