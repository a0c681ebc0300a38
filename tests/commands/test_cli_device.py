"""The CLI of the device commands where no GPU is needed: compare, merge, and verify/bench
without a driver."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from rows import BENCH, VERIFY, shard, write
from rows import bench_row as bench_record
from rows import verify_row as verify_record

from wgrad_cli.backends.registry import open_runtime
from wgrad_cli.cli import cli
from wgrad_cli.config.shipped import CONFIGS_DIR
from wgrad_cli.config.targets import TARGETS
from wgrad_cli.errors import DriverError
from wgrad_cli.results.document import write_json

REPO = Path(__file__).resolve().parent.parent.parent
LIBRARY = {"sm_90a": "libcuda.so", "gfx950": "libamdhip64.so"}


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def user_errors(result: Result) -> list[str]:
    """Status 2, nothing on stdout, no traceback; returns the lines on stderr."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit)
    assert result.stdout == "" and "Traceback" not in result.output
    return result.stderr.splitlines()


def user_error(result: Result) -> str:
    """Status 2, nothing on stdout, no traceback, one line on stderr; returns it."""
    [line] = user_errors(result)
    return line


def test_compare_regression_exits_1(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", "bench", BENCH)
    new = write(tmp_path / "new.json", "bench", [BENCH[0], bench_record(0, "a", 1.1), BENCH[2]])
    result = run("compare", base, new)
    assert result.exit_code == 1, result.output
    assert "wgrad compare:" in result.stdout
    assert "slower" in result.stdout
    assert result.stderr.splitlines() == ["regression reference on a (cold, run 1): median 1,000.0 -> "
                                          "1,100.0 us (+10.0%), beyond the noise (1%) and 5%"]
    assert run("compare", base, new, "--threshold", "0.2").exit_code == 0


@pytest.mark.parametrize("command, records", [("bench", BENCH), ("verify", VERIFY)])
def test_compare_without_regression_exits_0(tmp_path: Path, command: str,
                                            records: list[dict[str, object]]) -> None:
    base, new = (write(tmp_path / "base.json", command, records),
                 write(tmp_path / "new.json", command, records))
    result = run("compare", base, new)
    assert result.exit_code == 0, result.output
    assert "wgrad compare:" in result.stdout and "reference" in result.stdout
    assert result.stderr == "" and result.stdout.splitlines()[-1].startswith("compare: ")


def test_compare_verify_failure_exits_1(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", "verify", VERIFY)
    new = write(tmp_path / "new.json", "verify", [VERIFY[0], verify_record(1, "b", False)])
    result = run("compare", base, new)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == ["regression reference on b: passed in BASE, fails in NEW"]


def test_compare_long_paths_one_line_per_regression(tmp_path: Path) -> None:
    folder = tmp_path / ("a-long-ci-workspace-folder/" * 4)
    base = write(folder / "base.json", "verify", VERIFY)
    new = write(folder / "new.json", "verify", [VERIFY[0], verify_record(1, "b", False)])
    result = run("compare", base, new)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == ["regression reference on b: passed in BASE, fails in NEW"]


@pytest.mark.parametrize("folder", ["[nightly]", "[/old]"])
def test_compare_paths_with_brackets(tmp_path: Path, folder: str) -> None:
    base = write(tmp_path / folder / "base.json", "verify", VERIFY)
    new = write(tmp_path / folder / "new.json", "verify", [VERIFY[0], verify_record(1, "b", False)])
    result = run("compare", base, new)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception
    assert result.stderr.splitlines() == ["regression reference on b: passed in BASE, fails in NEW"]


@pytest.mark.parametrize("bad, expected", [
    ("missing", "{path}: cannot read it (No such file or directory); give a results file wgrad wrote"),
    ("build", "{path}: a 'build' document; this needs one of verify, bench"),
    ("not-json", "{path}: not JSON (Expecting value: line 1 column 1 (char 0)); "
                 "give a results file wgrad wrote"),
])
def test_compare_bad_input_exits_2(tmp_path: Path, bad: str, expected: str) -> None:
    good, path = write(tmp_path / "good.json", "bench", BENCH), tmp_path / f"{bad}.json"
    if bad == "build":
        write_json(path, "build", [])
    elif bad == "not-json":
        path.write_text("results, not JSON\n")
    assert user_error(run("compare", good, path)) == expected.format(path=path)


@pytest.mark.parametrize("command", ["bench", "verify"])
def test_merge_writes_the_merged_file(tmp_path: Path, command: str) -> None:
    records = {"bench": [bench_record(0, "a", 1.0), bench_record(2, "c", 3.0), bench_record(1, "b", 2.0)],
               "verify": [verify_record(0, "a", True), verify_record(2, "c", True),
                          verify_record(1, "b", False)]}
    s1 = write(tmp_path / "s1.json", command, records[command][:2], config_sha256="c0ffee", target="gfx950",
               shard=[1, 2])
    s2 = write(tmp_path / "s2.json", command, records[command][2:], config_sha256="c0ffee", target="gfx950",
               shard=[2, 2])
    out = tmp_path / "merged.json"
    result = run("merge", s1, s2, "--json", out)
    assert result.exit_code == 0, result.output
    assert f"wgrad merge: 2 shards of {command}" in result.stdout
    doc = json.loads(out.read_text())
    assert ((doc["tool"], doc["command"], doc["shard"], doc["config_sha256"])
            == ("wgrad", command, None, "c0ffee"))
    assert [r["index"] for r in doc["records"]] == [0, 1, 2]
    assert [s["file"] for s in doc["shards"]] == [str(s1), str(s2)]
    assert user_error(run("merge", out, "--json", tmp_path / "again.json")).startswith(f"{out}: not a shard")


def test_merge_bad_input_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    s1 = shard(tmp_path / "s1.json", 1, 2, BENCH[:2])
    out = tmp_path / "merged.json"
    assert user_error(run("merge", s1, "--json", out)) == "shard 2/2 is missing; give all 2 shard files"
    missing = tmp_path / "s2.json"
    assert user_error(run("merge", s1, missing, "--json", out)).startswith(f"{missing}: cannot read it")
    assert not out.exists()

NO_GPU = ("without a GPU: wgrad verify --config {config} --device emu checks the gfx950 kernels on the "
          "emulated MI355X; wgrad model --config {config} models their time")


def driver_missing(target: str) -> None:
    """Skips unless this machine's driver for `target` fails to load its library, as on a GPU-less host."""
    try:
        open_runtime(TARGETS[target].vendor, 0).close()
    except DriverError as exc:
        if LIBRARY[target] not in exc.lines[0]:
            pytest.skip(f"the {target} driver library loads here: {exc.lines[0]}")
    else:
        pytest.skip(f"a {target} device is here")


@pytest.mark.parametrize("command", ["verify", "bench"])
@pytest.mark.parametrize("target", ["sm_90a", "gfx950"])
def test_no_driver_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           command: str, target: str) -> None:
    driver_missing(target)
    monkeypatch.chdir(tmp_path)
    result = run(command, "--config", CONFIGS_DIR / "smoke.yaml", "--target", target, "--no-save",
                 "--cache-dir", tmp_path / "cache")
    # the emulator and the model run gfx950 code objects here: a second line says how
    hint = [NO_GPU.format(config=CONFIGS_DIR / "smoke.yaml")] if target == "gfx950" else []
    [line, *rest] = user_errors(result)
    assert rest == hint
    assert line.startswith(f"{target}: no ") and f" found no {LIBRARY[target]}; install " in line
    assert list(tmp_path.iterdir()) == []  # no results/, no cache


@pytest.mark.parametrize("command", ["verify", "bench"])
def test_no_driver_one_line_per_target(command: str) -> None:
    for target in LIBRARY:
        driver_missing(target)
    result = run(command, "--config", "smoke", "--no-save")
    assert result.exit_code == 2 and result.stdout == "" and "Traceback" not in result.output
    *lines, hint = result.stderr.splitlines()
    assert [line.split(":")[0] for line in lines] == ["gfx950", "sm_90a"]  # the config's order
    assert all(LIBRARY[target] in line for target, line in zip(["gfx950", "sm_90a"], lines))
    assert hint == NO_GPU.format(config="smoke")  # the config as given


def test_only_targets_with_work_are_probed(repo: Path) -> None:
    """hopper builds for sm_90a only: the gfx950 driver is never looked for."""
    driver_missing("sm_90a")
    result = run("verify", "--config", CONFIGS_DIR / "smoke.yaml", "--kernel", "hopper", "--no-save")
    assert result.exit_code == 2
    assert [line.split(":")[0] for line in result.stderr.splitlines()] == ["sm_90a"]
