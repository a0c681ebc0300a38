"""selfbench end to end on tiny sizes: every row present, each a ratio of two measured times,
shown again by show."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner

from wgrad_cli.cli import cli
from wgrad_cli.config.shipped import CONFIGS_DIR


def test_selfbench_small(repo: Path, tmp_path: Path, amd_compiler: object, nvcc: object) -> None:
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(cli, ["selfbench", "--size", "512", "--experts", "2", "--build-config",
                                      str(CONFIGS_DIR / "smoke.yaml"), "--json", str(out)])
    assert result.exit_code in (0, 1), result.output  # 1: a target missed (likely at this toy size)
    doc = json.loads(out.read_text())
    records = doc["records"]
    assert doc["build_config"] == "smoke"  # a shipped config by its name, not a path of this machine
    assert [r["name"] for r in records] == [
        "problem generation",
        "reference time, float64", "  of which BLAS, float64", "  of which first touch, float64",
        "reference peak memory, float64",
        "reference time, float32", "  of which BLAS, float32", "  of which first touch, float32",
        "reference peak memory, float32",
        "warm build step", "warm build command", "emulator scaled-MFMA step",
        "emulator rate, reference kernel",
        "sanitizer cost, reference kernel", "sanitizer cost, cdna4 kernel"]
    assert all(r["measured"] > 0 and r["baseline"] > 0 for r in records)
    warm = next(r for r in records if r["name"] == "warm build command")
    assert warm["ratio"] < 1  # a warm cache is faster than a cold one
    met = all(r["ok"] for r in records if not r["informational"])
    loaded = doc["load_average"] > 0.5 * doc["cores"]  # a loaded machine's misses are no verdict
    assert (result.exit_code == (0 if met or loaded else 1)
            and ("no verdict" in result.stderr) == (loaded and not met))
    shown = CliRunner().invoke(cli, ["show", "--format", "csv", str(out)])
    assert shown.exit_code == 0, shown.output
    assert ([row["benchmark"] for row in csv.DictReader(io.StringIO(shown.output))]
            == [r["name"] for r in records])
