"""compare.py: result documents side by side (the CI gate) and shard files merged into one run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rows import BENCH, SAME_RUN, VERIFY, bench_row, shard, verify_row, write

from wgrad_cli.cli import cli
from wgrad_cli.errors import WgradError
from wgrad_cli.results.compare import compare_docs, merge_docs, noise_verdict, summary
from wgrad_cli.results.records import read_document, to_json
from wgrad_cli.results.tables import compare_table


def compare(tmp_path: Path, command: str, base: list[Any], new: list[Any], threshold: float = 0.05,
            **new_run: Any) -> tuple[str, list[str]]:
    """The table (Markdown, every column) and the regression lines."""
    what, deltas = compare_docs(write(tmp_path / "base.json", command, base, **SAME_RUN),
                                write(tmp_path / "new.json", command, new, **{**SAME_RUN, **new_run}),
                                threshold)
    table = compare_table(what, deltas, "compare").markdown(wide=True)
    return table, [f"{d.label}: {d.regression}" for d in deltas if d.regression]


def test_same_within_noise_faster_and_slower() -> None:
    """nvbench's rule: the same when the medians differ by at most the smaller relative spread."""
    base = bench_row(0, "a", 1.0, noise=0.05)
    assert noise_verdict(base, bench_row(0, "a", 1.02, noise=0.05)) == "same"
    # the quieter run resolves 2 %
    assert noise_verdict(base, bench_row(0, "a", 1.02, noise=0.01)) == "slower"
    assert noise_verdict(base, bench_row(0, "a", 0.9, noise=0.05)) == "faster"
    assert noise_verdict(base, bench_row(0, "a", 1.2, noise=0.3)) == "slower"


@pytest.mark.parametrize("command, records", [("bench", BENCH), ("verify", VERIFY)])
def test_identical_documents(tmp_path: Path, command: str, records: list[Any]) -> None:
    table, regressions = compare(tmp_path, command, records, records)
    assert regressions == []
    assert table.count(" same " if command == "bench" else " ok ") == len(records)


def test_bench_slower_beyond_noise_and_threshold(tmp_path: Path) -> None:
    table, regressions = compare(tmp_path, "bench", BENCH, [BENCH[0], bench_row(0, "a", 1.1), BENCH[2]])
    assert regressions == ["reference on a (cold, run 1): median 1,000.0 -> 1,100.0 us (+10.0%), "
                           "beyond the noise (1%) and 5%"]
    assert "slower" in table and "1,000.0 -> 1,100.0" in table and "zipf s=1.5" in table


def test_slower_within_noise_is_no_regression(tmp_path: Path) -> None:
    """10 % slower, but both runs spread by 20 %: the gate cannot tell, so it does not fail."""
    noisy = [bench_row(0, "a", 1.0, noise=0.2)]
    table, regressions = compare(tmp_path, "bench", noisy, [bench_row(0, "a", 1.1, noise=0.2)])
    assert regressions == [] and " same " in table


@pytest.mark.parametrize("median_ms, verdict", [(1.04, "slower"), (0.5, "faster")])
def test_bench_within_threshold_or_faster(tmp_path: Path, median_ms: float, verdict: str) -> None:
    table, regressions = compare(tmp_path, "bench", BENCH, [BENCH[0], bench_row(0, "a", median_ms), BENCH[2]])
    assert regressions == [] and f" {verdict} " in table


def test_threshold_is_the_callers(tmp_path: Path) -> None:
    new = [BENCH[0], bench_row(0, "a", 1.04), BENCH[2]]
    assert len(compare(tmp_path, "bench", BENCH, new, threshold=0.03)[1]) == 1


def test_calibration_never_regresses(tmp_path: Path) -> None:
    assert compare(tmp_path, "bench", BENCH, [bench_row(-1, "calibration", 0.4), *BENCH[1:]])[1] == []


def test_bench_runs_are_matched_by_run(tmp_path: Path) -> None:
    base = [bench_row(0, "a", 1.0, run=1), bench_row(0, "a", 2.0, run=2)]
    new = [bench_row(0, "a", 2.0, run=2), bench_row(0, "a", 1.0, run=1)]
    assert compare(tmp_path, "bench", base, new)[1] == []


def test_routing_is_part_of_the_key(tmp_path: Path) -> None:
    """The same shape name routed otherwise is another row: missing in NEW, and new."""
    rerouted = replace(BENCH[1], shape=replace(BENCH[1].shape, routing="uniform"))
    table, regressions = compare(tmp_path, "bench", BENCH, [BENCH[0], rerouted, BENCH[2]])
    assert regressions == [f"reference on a (cold, run 1): missing in {tmp_path / 'new.json'}"]
    assert " new " in table


def test_verify_now_fails(tmp_path: Path) -> None:
    table, regressions = compare(tmp_path, "verify", VERIFY, [VERIFY[0], verify_row(1, "b", False)])
    assert regressions == ["reference on b: passed in BASE, fails in NEW"]
    assert "now fails" in table and "0 -> 17" in table


def test_verify_fixed_or_still_failing_is_no_regression(tmp_path: Path) -> None:
    failing = [VERIFY[0], verify_row(1, "b", False)]
    assert compare(tmp_path, "verify", failing, VERIFY)[1] == []
    assert compare(tmp_path, "verify", failing, failing)[1] == []


@pytest.mark.parametrize("command, records, label", [
    ("bench", BENCH, "reference on b (cold, run 1)"),
    ("verify", VERIFY, "reference on b"),
])
def test_missing_in_new(tmp_path: Path, command: str, records: list[Any], label: str) -> None:
    table, regressions = compare(tmp_path, command, records, records[:-1])
    assert regressions == [f"{label}: missing in {tmp_path / 'new.json'}"]
    assert "missing" in table


def test_new_shape_is_no_regression(tmp_path: Path) -> None:
    table, regressions = compare(tmp_path, "verify", VERIFY[:1], VERIFY)
    assert regressions == []
    assert " new " in table


def test_summary_line(tmp_path: Path) -> None:
    _, deltas = compare_docs(write(tmp_path / "b.json", "bench", BENCH, **SAME_RUN),
                             write(tmp_path / "n.json", "bench", [BENCH[0], bench_row(0, "a", 1.1)],
                                   **SAME_RUN), 0.05)
    assert summary(deltas, 0.05) == ("compare: 3 rows: 1 same within noise, 1 slower, 1 missing; "
                                     "2 regressions (slower beyond noise and 5%, failing, or missing)")


def test_different_commands(tmp_path: Path) -> None:
    base, new = write(tmp_path / "v.json", "verify", VERIFY), write(tmp_path / "b.json", "bench", BENCH)
    with pytest.raises(WgradError) as exc:
        compare_docs(base, new, 0.05)
    assert exc.value.lines == [f"{base} is a verify result and {new} a bench one; "
                               "compare two of the same command"]


@pytest.mark.parametrize("field, value, allow", [
    ("device", {"name": "NVIDIA H200"}, "device"),
    ("target", "sm_90a", "target"),
    ("config_sha256", "beef", "config"),
    ("seed", 7, "seed"),
])
def test_another_experiment_is_refused_unless_allowed(tmp_path: Path, field: str, value: Any,
                                                      allow: str) -> None:
    base = write(tmp_path / "base.json", "bench", BENCH, **SAME_RUN)
    new = write(tmp_path / "new.json", "bench", BENCH, **{**SAME_RUN, field: value})
    with pytest.raises(WgradError) as exc:
        compare_docs(base, new, 0.05)
    [line] = exc.value.lines
    assert (exc.value.exit_code == 2 and f"differ in {allow} (" in line
            and f"--allow-different {allow}" in line)
    assert compare_docs(base, new, 0.05, (allow,))[0] == "bench"


def test_the_command_gates_with_a_summary_and_exit_status(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", "bench", BENCH, **SAME_RUN)
    slower = write(tmp_path / "slower.json", "bench",
                   [BENCH[0], bench_row(0, "a", 1.2), BENCH[2]], **SAME_RUN)
    other = write(tmp_path / "other.json", "bench", BENCH, **{**SAME_RUN, "config_sha256": "beef"})
    same = CliRunner().invoke(cli, ["compare", str(base), str(base)])
    assert (same.exit_code == 0
            and same.stdout.splitlines()[-1].startswith("compare: 3 rows: 3 same within noise; 0 "))
    failed = CliRunner().invoke(cli, ["compare", str(base), str(slower)])
    assert failed.exit_code == 1 and "regression reference on a" in failed.stderr
    refused = CliRunner().invoke(cli, ["compare", str(base), str(other)])
    assert refused.exit_code == 2 and len(refused.output.strip().splitlines()) == 1
    allowed = CliRunner().invoke(cli, ["compare", "--allow-different", "config", str(base), str(other)])
    assert allowed.exit_code == 0


@pytest.mark.parametrize("command, records, field", [
    ("bench", BENCH, "shape"),
    ("bench", BENCH, "median_ms"),
    ("bench", BENCH, "tflops"),
    ("verify", VERIFY, "ok"),
    ("verify", VERIFY, "overall"),
])
def test_record_lacking_a_field(tmp_path: Path, command: str, records: list[Any], field: str) -> None:
    broken = [{k: v for k, v in to_json(r).items() if k != field} for r in records]
    with pytest.raises(WgradError) as exc:
        compare(tmp_path, command, records, broken)
    [line] = exc.value.lines
    assert line == f"{tmp_path / 'new.json'}: record 0 lacks {field}; give a results file wgrad wrote"


def test_merge_two_shards(tmp_path: Path) -> None:
    one = shard(tmp_path / "s1.json", 1, 2, [bench_row(-1, "calibration", 0.004), bench_row(0, "a", 1.0),
                                             bench_row(0, "a", 1.01, run=2), bench_row(2, "c", 3.0)])
    two = shard(tmp_path / "s2.json", 2, 2, [bench_row(-1, "calibration", 0.005), bench_row(1, "b", 2.0),
                                             bench_row(1, "b", 2.02, run=2)])
    merged = merge_docs([two, one])
    assert merged.command == "bench"
    # each record names its shard; each shard's calibration row stays, numbered by its shard
    assert [(r.index, r.run, r.shard) for r in merged.bench_rows] == [
        (-1, 1, 1), (-1, 2, 2), (0, 1, 1), (0, 2, 1), (1, 1, 2), (1, 2, 2), (2, 1, 1)]
    extra = merged.environment
    assert ((extra["config_sha256"], extra["target"], extra["seed"], extra["shard"])
            == ("c0ffee", "gfx950", 1, None))
    assert [(s["file"], s["shard"]) for s in extra["shards"]] == [(str(two), [2, 2]), (str(one), [1, 2])]
    assert not {"tool", "version", "commit", "command", "argv", "records"} & extra.keys()
    out = write(tmp_path / "merged.json", merged.command, merged.records, **extra)
    assert read_document(out).records == merged.records


def test_merge_keeps_baselines_of_names_it_does_not_know(tmp_path: Path) -> None:
    """A baseline that a later wgrad adds sorts after the ones this one knows, and the merge goes on."""
    future = bench_row(0, "a", 1.0, kernel="torch-future", baseline=True)
    merged = merge_docs([shard(tmp_path / "s1.json", 1, 2, [future, BENCH[1]]),
                         shard(tmp_path / "s2.json", 2, 2, BENCH[2:])])
    assert [r.kernel for r in merged.records] == ["reference", "torch-future", "reference"]


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
    a, b = (shard(tmp_path / "a.json", 1, 2, BENCH[:2]),
            shard(tmp_path / "b.json", 2, 2, BENCH[2:], sha="beef"))
    assert merge_error([a, b]) == [f"{b}: config_sha256 is 'beef', {a} has 'c0ffee'; "
                                   "merge shards of one run only"]


def test_merge_refuses_an_incomplete_shard(tmp_path: Path) -> None:
    """A shard whose bench stopped on a hung kernel (device_commands.bench_command) lacks rows."""
    a = shard(tmp_path / "a.json", 1, 2, BENCH[:2])
    b = write(tmp_path / "b.json", "bench", BENCH[2:], config_sha256="c0ffee", target="gfx950", shard=[2, 2],
              incomplete="hopper on square-8k did not finish within 10 s: the kernel looks deadlocked")
    assert merge_error([a, b]) == [f"{b}: incomplete (hopper on square-8k did not finish within 10 s: "
                                   "the kernel looks deadlocked); run that shard again"]


def test_merge_not_a_shard(tmp_path: Path) -> None:
    a = shard(tmp_path / "a.json", 1, 2, BENCH[:2])
    whole = write(tmp_path / "whole.json", "bench", BENCH,
                  config_sha256="c0ffee", target="gfx950", shard=None)
    assert merge_error([a, whole]) == [
        f"{whole}: not a shard (written without --shard); merge joins --shard i/n results"]


def test_merge_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    [line] = merge_error([shard(tmp_path / "a.json", 1, 2, BENCH[:2]), missing])
    assert line.startswith(f"{missing}: cannot read it")
