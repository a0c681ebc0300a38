"""How the modules depend on each other: no import cycle, counting every import (at module level,
inside functions and under TYPE_CHECKING alike), so the layers point one way."""

from __future__ import annotations

import graphlib

import pytest
from importgraph import graph


def test_the_graph_sees_function_level_imports() -> None:
    g = graph()
    assert "wgrad_cli.emu" in g and "wgrad_cli.cli" in g
    assert "wgrad_cli.commands" in g["wgrad_cli.cli"]  # cli imports its commands inside each command


def test_no_import_cycle() -> None:
    try:
        graphlib.TopologicalSorter(graph()).prepare()
    except graphlib.CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")

