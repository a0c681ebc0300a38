"""compare.py: result documents side by side (the CI gate) and shard files merged into one run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wgrad_cli.check import Comparison
from wgrad_cli.compare import compare_docs, merge_docs
from wgrad_cli.errors import WgradError
from wgrad_cli.grid import Grid
from wgrad_cli.results import load, save
from wgrad_cli.stats import summarize

SHAPES = {"calibration": (128, 256, 256, 1, "uniform"), "a": (1024, 256, 512, 2, "zipf s=1.5"),
          "b": (2048, 512, 512, 4, "uniform"), "c": (4096, 1024, 1024, 8, "zipf s=1.2")}


def shape(name: str) -> dict[str, Any]:
    M, N, K, E, routing = SHAPES[name]
    return {"name": name, "M": M, "N": N, "K": K, "E": E, "routing": routing}


def bench_record(index: int, name: str, median_ms: float, run: int = 1) -> dict[str, Any]:
    """A record as bench._record writes it; shape "calibration" gives the calibration row."""
    calibration = name == "calibration"
    d = shape(name)
    flops = 0 if calibration else 2 * d["N"] * d["K"] * d["M"]
    tflops = flops / (median_ms / 1e3) / 1e12
    return {"index": index, "kernel": "empty" if calibration else "reference", "target": "gfx950", "shape": d,
            "seed": 1, "run": run, "cache": "hot" if calibration else "cold", "flush_bytes": 0 if calibration else 1 << 29,
            **summarize([0.99 * median_ms, median_ms, 1.02 * median_ms]).to_json(), "stop": "converged",
            "wall_seconds": 0.6, "flops": flops, "min_bytes": 0, "tflops": tflops, "gbps": 0.0,
            "pct_peak": None if calibration else 100 * tflops / 5033.0, "clock_mhz": 2400, "calibration": calibration}


def verify_record(index: int, name: str, ok: bool) -> dict[str, Any]:
    """A record as verify.Outcome.to_json writes it (one expert's figures stand for all)."""
    d = shape(name)
    c = Comparison(elements=d["E"] * d["N"] * d["K"], max_abs_error=0.0 if ok else 3.5, max_rel_row_error=0.0,
                   diff_norm=0.0 if ok else 12.0, ref_norm=400.0, mismatches=0 if ok else 17, nans=0, unwritten=0,
                   ok=ok).to_json()
    return {"index": index, "kernel": "reference", "target": "sm_90a", "shape": d, "seed": 1, "ok": ok,
            "reference": "numpy float64, every element", "overall": c, "experts": [c] * d["E"], "sampled": None}


def write(path: Path, command: str, records: list[dict[str, Any]], **extra: Any) -> Path:
    save(path, None, command, records, **extra)
    return path


def shard(path: Path, i: int, n: int, records: list[dict[str, Any]], sha: str = "c0ffee") -> Path:
    return write(path, "bench", records, config="configs/smoke.yaml", config_sha256=sha, target="gfx950",
                 seed=1, shard=[i, n])


def text(table: Grid) -> str:
    return table.markdown(wide=True)


BENCH = [bench_record(-1, "calibration", 0.004), bench_record(0, "a", 1.0), bench_record(1, "b", 2.0)]
VERIFY = [verify_record(0, "a", True), verify_record(1, "b", True)]


def compare(tmp_path: Path, command: str, base: list[dict[str, Any]], new: list[dict[str, Any]],
            threshold: float = 0.05) -> tuple[str, list[str]]:
    table, regressions = compare_docs(write(tmp_path / "base.json", command, base),
                                      write(tmp_path / "new.json", command, new), threshold)
    return text(table), regressions


@pytest.mark.parametrize("command, records", [("bench", BENCH), ("verify", VERIFY)])
def test_identical_documents(tmp_path: Path, command: str, records: list[dict[str, Any]]) -> None:
    table, regressions = compare(tmp_path, command, records, records)
    assert regressions == []
    assert table.count(" ok ") == len(records)


def test_bench_slower_beyond_threshold(tmp_path: Path) -> None:
    table, regressions = compare(tmp_path, "bench", BENCH, [BENCH[0], bench_record(0, "a", 1.1), BENCH[2]])
    assert regressions == ["reference on a (cold, run 1): median 1 -> 1.1 ms (+10.0%), beyond 5%"]
    assert "slower" in table and "1,000.0 -> 1,100.0" in table


@pytest.mark.parametrize("median_ms", [1.04, 0.5])
def test_bench_within_threshold_or_faster(tmp_path: Path, median_ms: float) -> None:
    assert compare(tmp_path, "bench", BENCH, [BENCH[0], bench_record(0, "a", median_ms), BENCH[2]])[1] == []


def test_threshold_is_the_callers(tmp_path: Path) -> None:
    new = [BENCH[0], bench_record(0, "a", 1.04), BENCH[2]]
    assert len(compare(tmp_path, "bench", BENCH, new, threshold=0.03)[1]) == 1


def test_calibration_never_regresses(tmp_path: Path) -> None:
    assert compare(tmp_path, "bench", BENCH, [bench_record(-1, "calibration", 0.4), *BENCH[1:]])[1] == []


def test_bench_runs_are_matched_by_run(tmp_path: Path) -> None:
    base = [bench_record(0, "a", 1.0, run=1), bench_record(0, "a", 2.0, run=2)]
    new = [bench_record(0, "a", 2.0, run=2), bench_record(0, "a", 1.0, run=1)]
    assert compare(tmp_path, "bench", base, new)[1] == []


def test_verify_now_fails(tmp_path: Path) -> None:
    table, regressions = compare(tmp_path, "verify", VERIFY, [VERIFY[0], verify_record(1, "b", False)])
    assert regressions == [f"reference on b: passed in {tmp_path / 'base.json'}, fails in {tmp_path / 'new.json'}"]
    assert "now fails" in table and "0 -> 17" in table


def test_verify_fixed_or_still_failing_is_no_regression(tmp_path: Path) -> None:
    failing = [VERIFY[0], verify_record(1, "b", False)]
    assert compare(tmp_path, "verify", failing, VERIFY)[1] == []
    assert compare(tmp_path, "verify", failing, failing)[1] == []


@pytest.mark.parametrize("command, records, label", [
    ("bench", BENCH, "reference on b (cold, run 1)"),
    ("verify", VERIFY, "reference on b"),
])
def test_missing_in_new(tmp_path: Path, command: str, records: list[dict[str, Any]], label: str) -> None:
    table, regressions = compare(tmp_path, command, records, records[:-1])
    assert regressions == [f"{label}: missing in {tmp_path / 'new.json'}"]
    assert "missing in NEW" in table


def test_new_shape_is_no_regression(tmp_path: Path) -> None:
    table, regressions = compare(tmp_path, "verify", VERIFY[:1], VERIFY)
    assert regressions == []
    assert " new " in table


def test_different_commands(tmp_path: Path) -> None:
    base, new = write(tmp_path / "v.json", "verify", VERIFY), write(tmp_path / "b.json", "bench", BENCH)
    with pytest.raises(WgradError) as exc:
        compare_docs(base, new, 0.05)
    assert exc.value.lines == [f"{base} is a verify result and {new} a bench one; compare two of the same command"]


@pytest.mark.parametrize("command, records, field", [
    ("bench", BENCH, "shape"),
    ("bench", BENCH, "median_ms"),
    ("bench", BENCH, "tflops"),
    ("verify", VERIFY, "ok"),
    ("verify", VERIFY, "overall"),
])
def test_record_lacking_a_field(tmp_path: Path, command: str, records: list[dict[str, Any]], field: str) -> None:
    broken = [{k: v for k, v in r.items() if k != field} for r in records]
    with pytest.raises(WgradError) as exc:
        compare(tmp_path, command, records, broken)
    [line] = exc.value.lines
    assert f"lacks '{field}'" in line and str(tmp_path / "new.json") in line


def test_merge_two_shards(tmp_path: Path) -> None:
    one = shard(tmp_path / "s1.json", 1, 2, [bench_record(-1, "calibration", 0.004), bench_record(0, "a", 1.0),
                                             bench_record(0, "a", 1.01, run=2), bench_record(2, "c", 3.0)])
    two = shard(tmp_path / "s2.json", 2, 2, [bench_record(-1, "calibration", 0.005), bench_record(1, "b", 2.0),
                                             bench_record(1, "b", 2.02, run=2)])
    merged = merge_docs([two, one])
    assert merged["command"] == "bench"
    # each record names its shard; each shard's calibration row stays, numbered by its shard
    assert [(r["index"], r["run"], r["shard"]) for r in merged["records"]] == [
        (-1, 1, 1), (-1, 2, 2), (0, 1, 1), (0, 2, 1), (1, 1, 2), (1, 2, 2), (2, 1, 1)]
    extra = merged["extra"]
    assert (extra["config_sha256"], extra["target"], extra["seed"], extra["shard"]) == ("c0ffee", "gfx950", 1, None)
    assert [(s["file"], s["shard"]) for s in extra["shards"]] == [(str(two), [2, 2]), (str(one), [1, 2])]
    assert not {"tool", "version", "commit", "command", "argv", "records"} & extra.keys()
    out = write(tmp_path / "merged.json", merged["command"], merged["records"], **extra)
    assert load(out)["records"] == merged["records"]


def merge_error(paths: list[Path]) -> list[str]:
    with pytest.raises(WgradError) as exc:
        merge_docs(paths)
    assert exc.value.exit_code == 2
    return exc.value.lines


def test_merge_missing_shard(tmp_path: Path) -> None:
    paths = [shard(tmp_path / "s1.json", 1, 3, BENCH[:2]), shard(tmp_path / "s3.json", 3, 3, BENCH[2:])]
    assert merge_error(paths) == ["shard 2/3 is missing; give all 3 shard files"]


def test_merge_duplicated_shard(tmp_path: Path) -> None:
    a, b = shard(tmp_path / "a.json", 1, 2, BENCH[:2]), shard(tmp_path / "b.json", 1, 2, BENCH[:2])
    assert merge_error([a, b]) == [f"{b}: shard 1/2 is also {a}"]


def test_merge_shards_of_different_counts(tmp_path: Path) -> None:
    a, b = shard(tmp_path / "a.json", 1, 2, BENCH[:2]), shard(tmp_path / "b.json", 2, 3, BENCH[2:])
    assert merge_error([a, b]) == [f"{b}: shard 2/3, but {a} is one of 2"]


def test_merge_mixed_configs(tmp_path: Path) -> None:
    a, b = shard(tmp_path / "a.json", 1, 2, BENCH[:2]), shard(tmp_path / "b.json", 2, 2, BENCH[2:], sha="beef")
    assert merge_error([a, b]) == [f"{b}: config_sha256 is 'beef', {a} has 'c0ffee'; merge shards of one run only"]


def test_merge_refuses_an_incomplete_shard(tmp_path: Path) -> None:
    """A shard whose bench stopped on a hung kernel (device_commands.bench_command) lacks rows."""
    a = shard(tmp_path / "a.json", 1, 2, BENCH[:2])
    b = write(tmp_path / "b.json", "bench", BENCH[2:], config_sha256="c0ffee", target="gfx950", shard=[2, 2],
              incomplete="hopper on square-8k did not finish within 10 s: the kernel looks deadlocked")
    assert merge_error([a, b]) == [f"{b}: incomplete (hopper on square-8k did not finish within 10 s: the kernel looks "
                                   "deadlocked); run that shard again"]


def test_merge_not_a_shard(tmp_path: Path) -> None:
    a = shard(tmp_path / "a.json", 1, 2, BENCH[:2])
    whole = write(tmp_path / "whole.json", "bench", BENCH, config_sha256="c0ffee", target="gfx950", shard=None)
    assert merge_error([a, whole]) == [
        f"{whole}: not a shard (written without --shard); merge joins --shard i/n results"]


def test_merge_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    [line] = merge_error([shard(tmp_path / "a.json", 1, 2, BENCH[:2]), missing])
    assert line.startswith(f"{missing}: cannot read it")
