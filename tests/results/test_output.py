"""Tables fit a 100-column terminal, and piped output is never cut."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import run_wgrad

SHIPPED = ["results/h200/bench-large.json", "results/h200/verify-unseen-seed77.json",
           "results/h200/bench-smoke-reference.json"]


def wgrad(repo: Path, *args: str, terminal: bool) -> str:
    proc = run_wgrad(repo, *args, terminal=terminal)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("command", [["show", *SHIPPED], ["speedup", SHIPPED[0]], ["configs"]])
def test_a_100_column_terminal_fits(repo: Path, command: list[str]) -> None:
    lines = wgrad(repo, *command, terminal=True).splitlines()
    assert lines and max(map(len, lines)) <= 100
    assert all(line == line.rstrip() for line in lines)


def test_piped_show_cuts_nothing(repo: Path) -> None:
    import json

    text = wgrad(repo, "show", "--wide", *SHIPPED, terminal=False)
    assert "…" not in text and all(line == line.rstrip() for line in text.splitlines())
    bench = json.loads((repo / SHIPPED[0]).read_text())["records"]
    for r in bench:
        row = next(line for line in text.splitlines() if line.startswith(f"| {r['kernel']} "))
        assert f"{r['p20_ms'] * 1e3:,.1f}-{r['p80_ms'] * 1e3:,.1f}" in row  # the cells cut before
    assert "max-samples" in text and "calibration" in text


@pytest.mark.parametrize("form", ["csv", "json", "markdown"])
def test_show_formats(repo: Path, form: str) -> None:
    text = wgrad(repo, "show", "--format", form, SHIPPED[1], terminal=True)
    first = {"csv": "kernel,shape,", "json": "[", "markdown": f"{SHIPPED[1]}: wgrad verify"}[form]
    assert text.startswith(first) and "e33-sparse" in text
