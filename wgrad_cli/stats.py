"""Summaries of timing samples: the figures bench reports for one shape."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Summary:
    samples: int
    median_ms: float
    min_ms: float
    p20_ms: float
    p80_ms: float
    mean_ms: float
    rel_stdev: float  # sample standard deviation / mean

    def to_json(self) -> dict[str, float | int]:
        return asdict(self)


def summarize(times_ms: list[float]) -> Summary:
    t = np.asarray(times_ms, dtype=np.float64)
    p20, median, p80 = np.percentile(t, [20, 50, 80])
    mean = float(t.mean())
    return Summary(len(t), float(median), float(t.min()), float(p20), float(p80), mean,
                   float(t.std(ddof=1) / mean) if len(t) > 1 and mean > 0 else 0.0)
