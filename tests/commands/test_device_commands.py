"""verify, bench, compare and merge end to end on a real GPU through the CLI (marked gpu)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from wgrad_cli.cli import cli
from wgrad_cli.config.shipped import CONFIGS_DIR
from wgrad_cli.device.runtime import Runtime
from wgrad_cli.measure.stopping import REASONS

pytestmark = pytest.mark.gpu
FAST = ["--min-samples", "5", "--min-time", "0.01", "--timeout", "2", "--warmup", "1"]


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def doc(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_verify_smoke(gpu: Runtime, repo: Path, tmp_path: Path) -> None:
    r = run("verify", "--config", CONFIGS_DIR / "smoke.yaml", "--edge-cases", "--json", tmp_path / "v.json",
            "--csv", tmp_path / "v.csv", "--cache-dir", tmp_path / "cache")
    assert r.exit_code == 0, r.output
    d = doc(tmp_path / "v.json")
    assert d["command"] == "verify" and d["device"]["name"] == gpu.device.name and d["seed"] == 1
    names = [rec["shape"]["name"] for rec in d["records"]]
    assert "one-expert" in names and "two-zipf+single" in names and "gaps+skewed" in names
    assert all(rec["ok"] and rec["overall"]["unwritten"] == 0 for rec in d["records"])
    assert all(len(rec["experts"]) == rec["shape"]["E"] for rec in d["records"])
    assert len((tmp_path / "v.csv").read_text().splitlines()) == len(d["records"]) + 1


def test_verify_fails_the_empty_kernel(gpu: Runtime, repo: Path, tmp_path: Path) -> None:
    r = run("verify", "--config", CONFIGS_DIR / "smoke.yaml", "--kernel", "empty", "--shape", "gaps",
            "--json", tmp_path / "v.json", "--cache-dir", tmp_path / "cache")
    assert r.exit_code == 1
    (rec,) = doc(tmp_path / "v.json")["records"]
    assert not rec["ok"] and rec["overall"]["unwritten"] == rec["overall"]["elements"] == 3 * 256 * 256
    assert "per expert" in r.output


def test_verify_device_reference_samples_rows(gpu: Runtime, repo: Path, tmp_path: Path) -> None:
    r = run("verify", "--config", CONFIGS_DIR / "smoke.yaml", "--shape", "two-zipf", "--reference", "device",
            "--rows", "8", "--json", tmp_path / "v.json", "--cache-dir", tmp_path / "cache")
    assert r.exit_code == 0, r.output
    (rec,) = doc(tmp_path / "v.json")["records"]
    assert rec["reference"] == "numpy float64 on 8 random rows per expert" \
        and rec["overall"]["elements"] == 2 * 8 * 512


def test_bench_shards_merge_and_compare(gpu: Runtime, repo: Path, tmp_path: Path) -> None:
    common = ["--config", CONFIGS_DIR / "smoke.yaml", "--cache-dir", tmp_path / "cache", *FAST]
    whole = run("bench", *common, "--repeat", "2", "--json", tmp_path / "all.json")
    assert whole.exit_code == 0, whole.output
    for i in (1, 2):
        assert run("bench", *common, "--repeat", "2", "--shard", f"{i}/2", "--json",
                   tmp_path / f"s{i}.json").exit_code == 0
    merged = run("merge", tmp_path / "s1.json", tmp_path / "s2.json", "--json", tmp_path / "merged.json")
    assert merged.exit_code == 0, merged.output
    a, m = doc(tmp_path / "all.json")["records"], doc(tmp_path / "merged.json")["records"]
    key = [(r["kernel"], r["shape"]["name"], r["run"]) for r in a if not r["calibration"]]
    assert key == [(r["kernel"], r["shape"]["name"], r["run"]) for r in m if not r["calibration"]]
    assert a[0]["calibration"] and a[0]["kernel"] == "empty" and a[0]["cache"] == "cold" \
        and len(a) == 1 + 2 * 4
    for rec in a[1:]:
        assert rec["cache"] == "cold" and rec["flush_bytes"] >= 2 * gpu.device.l2_bytes
        assert rec["min_ms"] <= rec["p20_ms"] <= rec["median_ms"] <= rec["p80_ms"] and rec["tflops"] > 0
        assert rec["stop"] in REASONS and rec["samples"] >= 5
    assert run("compare", tmp_path / "all.json", tmp_path / "all.json").exit_code == 0


def test_device_out_of_range(gpu: Runtime, repo: Path) -> None:
    r = run("verify", "--config", CONFIGS_DIR / "smoke.yaml", "--device", "99", "--no-save")
    assert r.exit_code == 2 and "--device 99: the" in r.output and "Traceback" not in r.output


def test_bench_hot_launches_back_to_back(gpu: Runtime, repo: Path, tmp_path: Path) -> None:
    r = run("bench", "--config", CONFIGS_DIR / "smoke.yaml", "--shape", "gaps", "--hot", *FAST,
            "--cache-dir", tmp_path / "cache", "--json", tmp_path / "hot.json")
    assert r.exit_code == 0, r.output
    calibration, gaps = doc(tmp_path / "hot.json")["records"]
    assert calibration["cache"] == gaps["cache"] == "hot" and gaps["flush_bytes"] == 0
    assert calibration["batch"] > gaps["batch"] >= 1  # about a millisecond of launches per sample
    assert calibration["median_ms"] < gaps["median_ms"]


def test_hopper_kernel_verifies(gpu: Runtime, repo: Path, tmp_path: Path) -> None:
    if gpu.device.arch != "sm_90":
        pytest.skip("the hopper kernel runs on sm_90 devices only")
    r = run("verify", "--config", CONFIGS_DIR / "ci.yaml", "--kernel", "hopper", "--edge-cases", "--shape",
            "m128-e1", "--shape", "e8-zipf", "--shape", "e8-empty", "--json", tmp_path / "ci.json",
            "--cache-dir", tmp_path / "cache")
    assert r.exit_code == 0, r.output
    records = doc(tmp_path / "ci.json")["records"]
    assert len(records) == 1 + 1 + 2 * 4 and all(rec["ok"] for rec in records)


def test_bench_baselines(gpu: Runtime, repo: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    r = run("bench", "--config", CONFIGS_DIR / "ci.yaml", "--shape", "e8-empty", "--shape", "gaps",
            "--baselines", *FAST, "--cache-dir", tmp_path / "cache", "--json", tmp_path / "b.json")
    assert r.exit_code == 0, r.output
    rows = doc(tmp_path / "b.json")["records"]
    names = ["torch-grouped", "torch-loop", "compiled-grouped", "compiled-loop", "bf16-ceiling",
             "bf16-grouped", "bf16-loop", "fp8-ceiling"]
    for shape in ("e8-empty", "gaps"):  # gaps: tokens before the first expert and after the last
        mine = [x for x in rows[1:] if x["shape"]["name"] == shape]
        assert [(x["kernel"], x["baseline"]) for x in mine] == \
            [("reference", False)] + [(n, True) for n in names]
        assert all(x["tflops"] > 0 and x["flops"] == mine[0]["flops"] for x in mine)


def test_bench_baselines_with_no_tokens(gpu: Runtime, tmp_path: Path) -> None:
    """Every expert empty: the torch paths (the compiled one too) run on zero tokens and time empty calls."""
    pytest.importorskip("torch")
    config = tmp_path / "none.yaml"
    config.write_text("kernels: [reference]\nshapes:\n  - {name: none, M: 512, N: 256, K: 512, E: 2, "
                      "offsets: [256, 256, 256]}\n")
    r = run("bench", "--config", config, "--baselines", *FAST, "--cache-dir", tmp_path / "cache",
            "--json", tmp_path / "b.json")
    assert r.exit_code == 0, r.output
    rows = doc(tmp_path / "b.json")["records"][1:]
    assert len(rows) == 9 and all(x["flops"] == 0 and x["median_ms"] > 0 for x in rows)


def test_bench_interleaved_and_rotating_on_the_gpu(gpu: Runtime, tmp_path: Path) -> None:
    """Rounds on a real GPU: every path of the shape has one sample per round and the kernel's row its
    speed-up per round over each baseline; rotating, the rows name their copies and no flush."""
    pytest.importorskip("torch")
    r = run("bench", "--config", CONFIGS_DIR / "ci.yaml", "--shape", "gaps", "--baseline", "bf16-ceiling",
            "--baseline", "compiled-grouped", "--interleave", "--rotating", "2", *FAST, "--cache-dir",
            tmp_path / "cache", "--json", tmp_path / "b.json")
    assert r.exit_code == 0, r.output
    data = doc(tmp_path / "b.json")
    rows = data["records"][1:]
    assert data["interleave"] and data["rotating"] == 2 and data["flush"] is None
    assert all(x["interleaved"] and x["rotating"] >= 2 and x["flush"] is None and x["spin_ms"] for x in rows)
    assert len({x["samples"] for x in rows}) == 1
    assert sorted(p["baseline"] for p in rows[0]["paired"]) == ["bf16-ceiling", "compiled-grouped"]
    assert all(p["rounds"] == rows[0]["samples"] and p["median"] > 0 for p in rows[0]["paired"])
