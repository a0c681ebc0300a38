"""Routing kinds at their bounds: the config accepts every routing up to its limits (all E experts
empty, the last expert alone) and refuses one past them; the offsets each kind gives leave exactly
the experts it promises empty; and verify fails a row whose problem does not (a routing that routed
nothing would pass, its output and reference both zero)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from wgrad_cli.cli import cli
from wgrad_cli.config.kernelspec import load_specs
from wgrad_cli.config.loader import load_config
from wgrad_cli.config.shipped import CONFIGS_DIR
from wgrad_cli.errors import ConfigError
from wgrad_cli.problem.routing import Routing, edge_routings

E = 4


def loaded(tmp_path: Path, routing: str) -> Routing:
    path = tmp_path / "c.yaml"
    path.write_text(f"kernels: [reference]\nshapes:\n  - {{name: s, M: 1024, N: 256, K: 256, E: {E}, "
                    f"routing: {routing}}}\n")
    (shape,) = load_config(path, load_specs()).shapes
    return shape.routing


@pytest.mark.parametrize("routing, want", [
    ("{kind: empty, experts: 4}", Routing("empty", empty=E)),  # every expert
    ("{kind: empty, experts: 1}", Routing("empty", empty=1)),
    ("{kind: single, expert: 0}", Routing("single", expert=0)),
    ("{kind: single, expert: 3}", Routing("single", expert=E - 1)),
    ("{kind: zipf, s: 10}", Routing("zipf", zipf_s=10.0)),
])
def test_a_routing_at_its_bound_is_accepted(tmp_path: Path, routing: str, want: Routing) -> None:
    assert loaded(tmp_path, routing) == want


@pytest.mark.parametrize("routing, field", [
    ("{kind: empty, experts: 5}", "experts"), ("{kind: empty, experts: 0}", "experts"),
    ("{kind: single, expert: 4}", "expert"), ("{kind: single, expert: -1}", "expert"),
    ("{kind: zipf, s: 0}", "s"), ("{kind: zipf, s: 10.5}", "s"),
])
def test_a_routing_past_its_bound_is_one_line(tmp_path: Path, routing: str, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        loaded(tmp_path, routing)
    (line,) = info.value.lines
    assert f"shapes[0].routing.{field}: " in line, line


ROUTINGS = [Routing(), Routing("empty", empty=1), Routing("empty", empty=E), Routing("single"),
            Routing("single", expert=E - 1), Routing("explicit", offsets=(0, 128, 128, 512, 1024))]


@pytest.mark.parametrize("routing", ROUTINGS, ids=lambda r: r.describe())
@pytest.mark.parametrize("M", [128, 256, 512, 1024, 8192])
def test_the_offsets_leave_the_promised_experts_empty(routing: Routing, M: int) -> None:
    for seed in range(5):
        offsets = routing.offsets_for(M, E, np.random.default_rng(seed))
        assert int((np.diff(offsets) == 0).sum()) == routing.empty_experts(M, E), (offsets, seed)


def test_every_shipped_shape_and_edge_case_keeps_its_promise() -> None:
    for path in CONFIGS_DIR.glob("*.yaml"):
        for shape in load_config(path, load_specs()).shapes:
            d = shape.dims
            for routing in (shape.routing, *(r for _, r in edge_routings(d.E))):
                offsets = routing.offsets_for(d.M, d.E, np.random.default_rng(1))
                promised = routing.empty_experts(d.M, d.E)
                assert promised is None or int((np.diff(offsets) == 0).sum()) == promised, \
                    (path.name, shape.name)


@pytest.mark.usefixtures("amd_compiler")
@pytest.mark.skipif(shutil.which("clang-22") is None,
                    reason="clang-22 (Debian's, for gfx950) is not installed")
def test_verify_fails_a_row_whose_problem_routed_nothing(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    # a routing bug planted: every token before the first expert, none routed
    monkeypatch.setattr(Routing, "offsets_for", lambda self, M, E, rng: [M] * (E + 1))
    result = CliRunner().invoke(cli, ["verify", "--config", "smoke", "--shape", "one-expert", "--device",
                                      "emu", "--json", str(tmp_path / "v.json")])
    assert result.exit_code == 1, result.output
    assert ("FAILED reference on one-expert: 0 mismatches, 0 unwritten (numpy float64, every element); "
            "uniform routing leaves 0 of 1 experts without tokens, but the problem's offsets leave 1 ([128, "
            "128])"
            in result.stderr)
