"""compare and merge on files that runs wrote (wgrad model: modelled bench rows, which run here), not
on files written by hand: what a run writes must read back as the same run, and a run of another
config must read back as another."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from wgrad_cli.cli import cli
from wgrad_cli.config.shipped import CONFIGS_DIR
from wgrad_cli.results.records import read_document

pytestmark = pytest.mark.usefixtures("amd_compiler")  # wgrad's own gfx950 compiler, else skipped
SHAPES = ["--shape", "one-expert", "--shape", "gaps"]


def model(tmp_path: Path, name: str, *args: str) -> Path:
    path = tmp_path / f"{name}.json"
    result = CliRunner().invoke(cli, ["model", *args, "--json", str(path), "--cache-dir",
                                      str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("runs")
    return {"whole": model(tmp, "whole", "--config", "smoke", *SHAPES),
            "1": model(tmp, "1", "--config", "smoke", *SHAPES, "--shard", "1/2"),
            "2": model(tmp, "2", "--config", "smoke", *SHAPES, "--shard", "2/2"),
            "other": model(tmp, "other", "--config", "emu", "--kernel", "reference", "--shape",
                           "e64-single-first")}


def records(path: Path) -> list[dict[str, object]]:
    return [{k: v for k, v in r.items() if k not in ("wall_seconds", "shard")}
            for r in json.loads(path.read_text())["records"]]


def test_merged_shards_are_the_whole_run_and_compare_the_same(runs: dict[str, Path], tmp_path: Path) -> None:
    merged = tmp_path / "merged.json"
    result = CliRunner().invoke(cli, ["merge", str(runs["1"]), str(runs["2"]), "--json", str(merged)])
    assert result.exit_code == 0, result.output
    assert records(merged) == records(runs["whole"]) and len(records(merged)) == 2
    result = CliRunner().invoke(cli, ["compare", str(runs["whole"]), str(merged)])
    assert result.exit_code == 0, result.output
    assert result.stdout.count("| same") == 2


def test_a_run_reads_back_as_the_run_it_was(runs: dict[str, Path]) -> None:
    for name, config, seed in (("whole", "smoke", 1), ("other", "emu", 4242)):
        doc = read_document(runs[name])
        p = doc.provenance
        assert (p.config, p.seed, p.target) == (config, seed, "gfx950")
        assert p.config_sha256 == hashlib.sha256((CONFIGS_DIR / f"{config}.yaml").read_bytes()).hexdigest()
        assert doc.device_name and doc.modelled


def test_a_run_of_another_config_is_refused_unless_allowed(runs: dict[str, Path]) -> None:
    result = CliRunner().invoke(cli, ["compare", str(runs["whole"]), str(runs["other"])])
    assert result.exit_code == 2 and "--allow-different config" in result.stderr, result.output
    result = CliRunner().invoke(cli, ["compare", str(runs["whole"]), str(runs["other"]), "--allow-different",
                                      "config"])
    assert "--allow-different config" not in result.stderr, result.output
