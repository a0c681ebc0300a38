"""The machine file's fitted figures and the band every modelled time is printed with come from the
committed validation (results/model/validation-*.json, docs/model.md's Validation): the figures are
what the training rows fit, and the band is the held-out rows' lowest and highest miss."""

from __future__ import annotations

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


def test_the_fitted_figures_are_what_the_training_rows_fit(validation: list) -> None:  # type: ignore[type-arg]
    # the files were modelled with the machine file's figures, fitted on the same rows' grid clocks
    # as an earlier run with other figures gave them (the bandwidth floors, in seconds, move those
    # clocks a little): the fit of the committed files lands within a step of its grid
    f = fit([p for p in validation if not p.held_out], M.power_budget_w, M.peak_ghz)
    assert f.rest_w == pytest.approx(M.rest_power_w, abs=0.02 * M.power_budget_w + 1e-6)
    assert f.matrix_w == pytest.approx(M.matrix_power_w, abs=0.1 * M.power_budget_w + 1e-6)
    assert f.launch_us == pytest.approx(M.launch_us, abs=0.25 + 1e-9)
