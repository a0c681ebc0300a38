"""The machine file's fitted figures and the band every modelled time is printed with come from the
committed validation (results/model/validation-*.json, docs/model.md's Validation): the figures are
what the training rows fit, and the band is the held-out rows' lowest and highest miss."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from checkout import tracked

from wgrad_cli.model.machine import load
from wgrad_cli.results.records import read_each
from wgrad_cli.results.validation import band, fit, points

M = load("mi355x")


@pytest.fixture(scope="module")
def validation(repo: Path) -> list:  # type: ignore[type-arg]
    files = [repo / f for f in tracked("results/model") if Path(f).name.startswith("validation-")]
    problems: list[str] = []
    rows = [r for _, doc in read_each(files, ("bench",), problems) for r in doc.bench_rows]
    assert not problems and rows
    return points(rows)


def test_the_committed_validation_is_the_one_the_machine_file_names(validation: list) -> None:  # type: ignore[type-arg]
    assert len(validation) >= 60 and M.validation >= 1
    assert all(p.clock_ghz == M.clock_ghz for p in validation)  # at the default clock, the part's peak
    held = [p for p in validation if p.held_out]
    assert len(held) >= len(validation) / 2
    b = band(held)
    assert (b.low, b.high) == pytest.approx(M.held_out, abs=0.005)


def test_the_fitted_figures_fit_the_training_rows_as_well_as_any(validation: list) -> None:  # type: ignore[type-arg]
    """The shipped figures are the fit of an earlier run's grid clocks (docs/model.md): on the
    committed rows they must fit the training rows within 0.01 of the best fit of those rows."""
    training = [p for p in validation if not p.held_out]
    shipped = math.sqrt(sum(math.log(p.modelled_us / p.published_us) ** 2 for p in training) / len(training))
    best = fit(training, M.power_budget_w, M.peak_ghz)
    assert shipped <= best.rms_log + 0.01
    assert 1 <= M.launch_us <= 30 and 0 <= M.rest_power_w <= M.power_budget_w  # within the fit's ranges
