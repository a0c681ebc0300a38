"""The CLI end to end on real builds: records, matrix, shards, info."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from wgrad_cli.backends import sm90a
from wgrad_cli.compile.compilers import Candidate
from wgrad_cli.compile.selection import shard_jobs
from wgrad_cli.cli import cli
from wgrad_cli.config.shipped import CONFIGS_DIR

RECORD_KEYS = {"shape", "kernel", "target", "ok", "code_object", "compile_seconds", "cache_hit", "resources",
               "compiler", "errors"}


def run(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result


def test_build_writes_one_record_per_kernel_target_shape(repo: Path, tmp_path: Path, amd_compiler: object,
                                                         nvcc: object) -> None:
    config = CONFIGS_DIR / "smoke.yaml"
    result = run("build", "--config", str(config), "--cache-dir", str(tmp_path / "c"), "--json",
                 str(tmp_path / "b.json"))
    assert result.exit_code == 0, result.stdout + result.stderr
    doc = json.loads((tmp_path / "b.json").read_text())
    # shipped: by name
    assert doc["tool"] == "wgrad" and doc["command"] == "build" and doc["config"] == "smoke"
    records = doc["records"]
    assert len(records) == 2 * 4  # two targets x four shapes
    assert all(set(r) == RECORD_KEYS and r["ok"] and Path(r["code_object"]).exists() for r in records)
    assert {r["shape"]["name"] for r in records} == {"one-expert", "two-zipf", "four-one-empty", "gaps"}
    gaps = next(r for r in records if r["shape"]["name"] == "gaps")
    assert gaps["shape"] == {"name": "gaps", "M": 768, "N": 256, "K": 256, "E": 3, "routing": "explicit"}
    assert "ok" in result.stdout and "8/8 builds ok, 0 from the cache" in result.stderr
    warm = run("build", "--config", str(config), "--cache-dir", str(tmp_path / "c"))
    assert warm.exit_code == 0 and "8/8 builds ok, 8 from the cache" in warm.stderr


def test_failed_build_exits_1_after_the_rest(repo: Path, tmp_path: Path, amd_compiler: object) -> None:
    (tmp_path / "k.cu").write_text("not C++\n")
    (tmp_path / "c.yaml").write_text(
        "kernels: [reference, {name: empty, source: k.cu}]\ntargets: [gfx950]\n"
        "shapes:\n  - {name: s, M: 128, N: 256, K: 256, E: 1}\n")
    result = run("build", "--config", str(tmp_path / "c.yaml"), "--cache-dir", str(tmp_path / "c"),
                 "--json", str(tmp_path / "out.json"))
    assert result.exit_code == 1
    records = json.loads((tmp_path / "out.json").read_text())["records"]
    assert [(r["kernel"], r["ok"]) for r in records] == [("reference", True), ("empty", False)]
    assert "1/2 builds ok" in result.stderr and "empty-gfx950-M128-N256-K256-E1" in result.stderr


def test_compiler_output_with_brackets_is_printed_verbatim(tmp_path: Path, amd_compiler: object) -> None:
    (tmp_path / "k.cu").write_text("#error [bold]not markup[/bold]\n")
    (tmp_path / "c.yaml").write_text("kernels: [{name: reference, source: k.cu}]\ntargets: [gfx950]\n"
                                     "shapes:\n  - {name: s, M: 128, N: 256, K: 256, E: 1}\n")
    result = run("build", "--config", str(tmp_path / "c.yaml"), "--cache-dir", str(tmp_path / "c"))
    assert result.exit_code == 1 and "[bold]not markup[/bold]" in result.stderr


def test_matrix_lists_records_and_shards(repo: Path) -> None:
    config = str(CONFIGS_DIR / "ci.yaml")
    full = json.loads(run("matrix", "--config", config).stdout)["include"]
    assert len(full) == 2 * 14 and full[0] == {"kernel": "reference", "target": "gfx950", "shape": "m128-e1"}
    assert json.loads(run("matrix", "--config", config, "--shards", "3").stdout) == {
        "include": [{"shard": "1/3"}, {"shard": "2/3"}, {"shard": "3/3"}]}
    only = json.loads(run("matrix", "--config", config, "--target", "sm_90a", "--shape",
                          "tall").stdout)["include"]
    assert only == [{"kernel": "reference", "target": "sm_90a", "shape": "tall"}]


def test_shards_partition_the_jobs() -> None:
    jobs = list(range(11))
    slices = [shard_jobs(jobs, (i, 4)) for i in range(1, 5)]  # type: ignore[arg-type]
    assert sorted(sum(slices, [])) == jobs and [len(s) for s in slices] == [3, 3, 3, 2]
    assert shard_jobs(jobs, None) == jobs  # type: ignore[arg-type]


def test_build_shards_join_to_the_whole(repo: Path, tmp_path: Path, amd_compiler: object,
                                        nvcc: object) -> None:
    config = str(CONFIGS_DIR / "smoke.yaml")
    seen = []
    for i in (1, 2, 3):
        result = run("build", "--config", config, "--cache-dir", str(tmp_path / "c"), "--shard", f"{i}/3",
                     "--json", str(tmp_path / f"{i}.json"))
        assert result.exit_code == 0
        seen += [(r["target"], r["shape"]["name"])
                 for r in json.loads((tmp_path / f"{i}.json").read_text())["records"]]
    assert len(seen) == len(set(seen)) == 8


def test_info_lists_candidates(tmp_path: Path, amd_compiler: object, nvcc: object) -> None:
    result = run("info", "--cache-dir", str(tmp_path), "--json", str(tmp_path / "info.json"))
    assert result.exit_code == 0
    records = json.loads((tmp_path / "info.json").read_text())["records"]
    chosen = {r["target"]: r for r in records if r["chosen"]}
    assert set(chosen) == {"gfx950", "sm_90a"} and chosen["sm_90a"]["kind"] == "nvcc"
    assert all(r["reason"] for r in records if not r["usable"])
    assert "gfx950" in result.stdout and "used" in result.stdout


def test_isa_option_writes_files(repo: Path, tmp_path: Path, amd_compiler: object) -> None:
    result = run("build", "--config", str(CONFIGS_DIR / "smoke.yaml"), "--target", "gfx950", "--shape",
                 "gaps", "--cache-dir", str(tmp_path / "c"), "--isa", str(tmp_path / "isa"))
    assert result.exit_code == 0
    assert [p.name for p in (tmp_path / "isa").iterdir()] == ["reference-gfx950-M768-N256-K256-E3.s"]


def no_nvcc(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine without the CUDA toolkit: every sm_90a candidate is missing."""
    monkeypatch.delenv("WGRAD_NVCC", raising=False)
    monkeypatch.setattr(sm90a, "candidates",
                        lambda nvcc: iter([Candidate("nvcc on PATH", None, "not found")]))


def test_a_missing_compiler_skips_its_target_in_one_line(tmp_path: Path, amd_compiler: object,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    no_nvcc(monkeypatch)
    result = run("build", "--config", "smoke", "--cache-dir", str(tmp_path / "c"))
    assert result.exit_code == 0, result.stderr
    skipped = [line for line in result.stderr.splitlines() if ": skipped" in line]
    assert len(skipped) == 1 and skipped[0].startswith("sm_90a: skipped 4 builds: ")
    assert "CUDA toolkit" in skipped[0] \
        and skipped[0].endswith("to build the rest only, pass --target gfx950")
    assert "gfx950" in result.stdout and "sm_90a" not in result.stdout
    assert "4/4 builds ok, 0 from the cache, 4 builds skipped" in result.stderr


def test_a_missing_compiler_for_what_was_asked_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_nvcc(monkeypatch)
    for asked in (["--target", "sm_90a"], ["--kernel", "hopper"]):
        result = run("build", "--config", "smoke", "--cache-dir", str(tmp_path / "c"), *asked)
        assert result.exit_code == 1 and "sm_90a: skipped" in result.stderr


def test_a_named_compiler_that_does_not_work_is_an_error(tmp_path: Path, amd_compiler: object,
                                                         nvcc: object) -> None:
    for flag, target in (("--nvcc", "sm_90a"), ("--hip-cc", "gfx950")):
        result = run("build", "--config", "smoke", "--target", target, "--cache-dir", str(tmp_path / "c"),
                     flag, str(tmp_path / "no-such-compiler"))
        assert result.exit_code == 2 and result.stdout == ""
        assert result.stderr.startswith(f"{flag} {tmp_path / 'no-such-compiler'}: ")
        assert "drop " + flag in result.stderr and len(result.stderr.splitlines()) == 1


def test_an_empty_shard_is_an_error(tmp_path: Path) -> None:
    result = run("build", "--config", "smoke", "--cache-dir", str(tmp_path / "c"), "--shard", "9/9")
    assert result.exit_code == 2
    assert result.stderr.strip() == ("--shard 9/9: this selection has 8 build jobs, so slice 9 would be "
                                     "empty; use at most 8 shards")


def test_configs_lists_the_shipped_configs() -> None:
    result = run("configs")
    assert result.exit_code == 0
    assert {"ci", "smoke", "large"} <= {line.split("|")[1].strip() for line in result.stdout.splitlines()[4:]}
