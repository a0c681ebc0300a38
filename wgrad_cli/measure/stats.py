"""Summaries of timing samples: the figures bench reports for one shape."""

from __future__ import annotations

import numpy as np

from wgrad_cli.results.records import Summary


def summarize(times_ms: list[float]) -> Summary:
    t = np.asarray(times_ms, dtype=np.float64)
    p20, median, p80 = np.percentile(t, [20, 50, 80])
    mean = float(t.mean())
    return Summary(len(t), float(median), float(t.min()), float(p20), float(p80), mean,
                   float(t.std(ddof=1) / mean) if len(t) > 1 and mean > 0 else 0.0)
