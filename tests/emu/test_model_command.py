"""`wgrad model`: the reference kernel on a smoke shape through the timing model, as a user runs
it, and its results file read back by show, compare, speedup and plot, which keep modelled rows
apart from measured ones."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from traceformat import simd_clocks, validated
from wgrad_cli.cli import cli
from wgrad_cli.model.machine import load
from wgrad_cli.results.records import SCHEMA

pytestmark = pytest.mark.skipif(shutil.which("clang-22") is None,
                                reason="clang-22 (Debian's, for gfx950) is not installed")
MEASURED = Path(__file__).resolve().parents[2] / "results" / "h200" / "bench-smoke-reference.json"


@pytest.fixture(scope="module")
def modelled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("model")
    out = tmp / "model.json"
    result = CliRunner().invoke(cli, ["model", "--config", "smoke", "--shape", "one-expert", "--clock", "2.0",
                                      "--json", str(out), "--cache-dir", str(tmp / "cache")])
    assert result.exit_code == 0, result.output
    return out, result.output


def test_rows_are_modelled_with_a_limiter_and_causes_that_sum_to_the_time(modelled: tuple[Path, str]) -> None:
    path, output = modelled
    doc = json.loads(path.read_text())
    assert (doc["schema"] == SCHEMA and doc["modelled"]["clock_ghz"] == 2.0
            and doc["device"]["max_clock_mhz"] == 2000)
    (row,) = doc["records"]
    m = row["model"]
    assert row["stop"] == "modelled" and row["cache"] == "modelled" and row["kernel"] == "reference"
    assert m["held_ghz"] == 2.0 and row["clock_mhz"] == 2000  # no matrix work: the power limit does not bind
    assert sum(m["causes_us"].values()) == pytest.approx(row["median_ms"] * 1e3, rel=1e-6)
    assert m["limiter"] == max(m["causes_us"], key=m["causes_us"].get)
    assert row["median_ms"] * 1e3 >= m["mfma_floor_us"]
    assert m["classes"] == 1 and m["workgroups"] == 256 and m["emulated"] == [0, 255]
    assert row["tflops"] == pytest.approx(row["flops"] / (row["median_ms"] / 1e3) / 1e12)
    assert "wgrad model: modelled MI355X at 2 GHz" in output and "limiter" in output
    band = load("mi355x").band  # every modelled time carries the held-out band of the validation
    assert band and m["band"] == band and band in output and m["toggle"] == 0 and m["matrix_duty"] == 0


def test_show_prints_the_modelled_table(modelled: tuple[Path, str]) -> None:
    result = CliRunner().invoke(cli, ["show", str(modelled[0])])
    assert result.exit_code == 0, result.output
    assert "(modelled)" in result.output and "limiter" in result.output and "mfma us" in result.output


def test_compare_and_speedup_refuse_to_mix_modelled_and_measured(modelled: tuple[Path, str]) -> None:
    path = modelled[0]
    mixed = CliRunner().invoke(cli, ["compare", str(MEASURED), str(path)])
    assert mixed.exit_code == 2
    assert mixed.stderr.strip() == (f"{path} holds modelled times (wgrad model) and {MEASURED} "
                                    "measured ones; compare modelled with modelled and "
                                    "measured with measured")
    same = CliRunner().invoke(cli, ["compare", str(path), str(path)])
    assert same.exit_code == 0, same.output
    speedup = CliRunner().invoke(cli, ["speedup", str(path)])
    assert speedup.exit_code == 2 and "its times are modelled" in speedup.stderr


def test_plot_draws_modelled_rows_as_such(modelled: tuple[Path, str], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "plot.svg"
    result = CliRunner().invoke(cli, ["plot", str(modelled[0]), str(MEASURED), "--output", str(out)])
    assert result.exit_code == 0, result.output
    svg = out.read_text()
    # one kernel in two files: each series says which (the modelled one, and the H200's)
    assert "reference (modelled, MI355X at 2 GHz)" in svg and "reference (NVIDIA H200)" in svg
    assert "wgrad bench and model" in svg
    assert "held-out" in svg  # the modelled times' band, in the title


def test_a_bad_figure_is_one_line_per_problem() -> None:
    result = CliRunner().invoke(cli, ["model", "--config", "smoke", "--figure", "vmem_latency_cycles=fast",
                                      "--figure", "hbm_bytes_per_second=0"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.splitlines() == ["--figure vmem_latency_cycles=fast: 'fast' is not a number",
                                          "--figure hbm_bytes_per_second=0: must be above 0"]


def test_a_figure_changes_the_modelled_time(modelled: tuple[Path, str], tmp_path: Path) -> None:
    out = tmp_path / "slow.json"
    result = CliRunner().invoke(cli, ["model", "--config", "smoke", "--shape", "one-expert", "--clock", "2.0",
                                      "--figure", "vmem_latency_cycles=1600", "--json", str(out),
                                      "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    slow, base = (json.loads(p.read_text()) for p in (out, modelled[0]))
    assert slow["modelled"]["figures"] == ["vmem_latency_cycles=1600"]
    assert slow["records"][0]["model"]["band"] == ""  # figures changed: no validation stands behind the time
    # the one-expert shape waits on memory
    assert slow["records"][0]["median_ms"] > base["records"][0]["median_ms"]


def test_profile_and_trace_of_the_reference_kernel(tmp_path: Path) -> None:
    out, trace = tmp_path / "model.json", tmp_path / "cu.json"
    result = CliRunner().invoke(cli, ["model", "--config", "smoke", "--shape", "one-expert", "--profile",
                                      "--trace", str(trace), "--json", str(out), "--cache-dir",
                                      str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(out.read_text())["records"]
    p = row["model"]["profile"]
    spent = sum(sum(i["causes_us"].values()) for i in p["instructions"])
    total = row["median_ms"] * 1e3
    assert spent + p["idle_us"] + p["bandwidth_us"] + p["launch_us"] == pytest.approx(total, rel=1e-9)
    # one round of 8 workgroups a CU: no tail to speak of
    assert spent == pytest.approx(total - p["launch_us"], rel=0.01)
    top = max(p["instructions"], key=lambda i: sum(i["causes_us"].values()))
    assert top["text"].startswith("s_waitcnt vmcnt") and set(top["causes_us"]) == {"memory"}
    assert any(r["name"] == "loop 1" for r in p["regions"])
    assert "instructions that take the most" in result.output and "time by loop" in result.output
    shown = CliRunner().invoke(cli, ["show", str(out)])
    assert shown.exit_code == 0 and "s_waitcnt vmcnt" in shown.output and "loop 1" in shown.output
    doc = validated(trace)
    assert simd_clocks(doc) == dict.fromkeys(range(4), doc["otherData"]["cycles"])
    if importlib.util.find_spec("matplotlib") is None:
        return
    picture = tmp_path / "cu.svg"
    plotted = CliRunner().invoke(cli, ["plot", str(trace), "--output", str(picture)])
    assert plotted.exit_code == 0, plotted.output
    svg = picture.read_text()
    assert ("SIMD 3: every clock by cause" in svg and "waiting for memory" in svg
            and "wave 0 (workgroup 0" in svg)
