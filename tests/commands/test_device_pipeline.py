"""verify, bench, merge and compare end to end in CI: real gfx950 code objects (clang-22), run on
the host stand-in for an AMD GPU (tests/hostdevice.py), since no machine here has one."""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hostdevice import HostDevice

from wgrad_cli.backends.gfx950 import Gfx950
from wgrad_cli.backends.registry import BACKENDS
from wgrad_cli.compile.compilers import Compiler
from wgrad_cli.cli import cli
from wgrad_cli.commands.bench import bench_command
from wgrad_cli.config.kernelspec import KernelSpec
from wgrad_cli.config.shipped import CONFIGS_DIR
from wgrad_cli.device.runtime import Runtime
from wgrad_cli.errors import DriverError
from wgrad_cli.measure.stopping import REASONS
from wgrad_cli.problem.abi import Dims
from wgrad_cli.problem.generate import Problem

FAST = ["--min-samples", "3", "--min-time", "0", "--timeout", "0.5", "--warmup", "1"]


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch, amd_compiler: Compiler) -> HostDevice:
    device = HostDevice()

    def no_device(index: object) -> Runtime:
        raise DriverError("no nvidia device in this test")

    # the session opens the device through its targets' backends: gfx950's opens the stand-in
    monkeypatch.setattr(BACKENDS["gfx950"], "open_runtime", lambda index: device)
    monkeypatch.setattr(BACKENDS["sm_90a"], "open_runtime", no_device)
    return device


def run(tmp_path: Path, *args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in (*args, "--cache-dir", tmp_path / "cache")])


def doc(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_verify_passes_and_records(host: HostDevice, repo: Path, tmp_path: Path) -> None:
    r = run(tmp_path, "verify", "--config", CONFIGS_DIR / "smoke.yaml", "--edge-cases", "--json",
            tmp_path / "v.json")
    assert r.exit_code == 0, r.output
    d = doc(tmp_path / "v.json")
    assert d["target"] == "gfx950" and d["device"]["name"] == "host stand-in" and d["source_sha256"]
    assert len(d["records"]) == 4 + 1 + 3 * 3 and all(rec["ok"] for rec in d["records"])
    assert [rec["index"] for rec in d["records"]] == list(range(len(d["records"])))
    assert all(len(rec["code_object_sha256"]) == 64 and rec["compiler"] and rec["flags"]
               for rec in d["records"])
    assert all(s.startswith("_Z26grouped_mxfp8_wgrad_kernel") for s in host.launches)


def test_verify_catches_unwritten_outputs(host: HostDevice, repo: Path, tmp_path: Path) -> None:
    r = run(tmp_path, "verify", "--config", CONFIGS_DIR / "smoke.yaml", "--kernel", "empty", "--json",
            tmp_path / "v.json")
    assert r.exit_code == 1
    assert "0/4 shapes passed" in r.output and "per expert" in r.output
    recs = doc(tmp_path / "v.json")["records"]
    assert all(rec["overall"]["unwritten"] == rec["overall"]["elements"] for rec in recs)


def test_verify_device_reference(host: HostDevice, repo: Path, tmp_path: Path) -> None:
    """A kernel checked against the reference kernel on the same device, plus numpy on sampled rows."""
    r = run(tmp_path, "verify", "--config", CONFIGS_DIR / "smoke.yaml", "--kernel", "empty", "--shape",
            "two-zipf", "--reference", "device", "--rows", "4", "--json", tmp_path / "v.json")
    assert r.exit_code == 1
    (rec,) = doc(tmp_path / "v.json")["records"]
    assert rec["reference"] == ("reference kernel on the device, every element; numpy float64 on 4 random "
                                "rows per expert")
    assert rec["overall"]["unwritten"] == 2 * 256 * 512 \
        and rec["sampled"]["overall"]["unwritten"] == 2 * 4 * 512
    assert any("grouped_mxfp8_wgrad_kernel" in s for s in host.launches)  # the reference ran


@pytest.fixture
def survive_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI leaves a hung run with os._exit (no clean-up); here it raises SystemExit instead, so
    that the test process survives."""
    def exit_now(code: int) -> None:
        raise SystemExit(code)

    monkeypatch.setattr("wgrad_cli.cli.os._exit", exit_now)


@pytest.mark.usefixtures("survive_exit")
def test_hung_kernel_exits_3_and_writes_nothing(host: HostDevice, repo: Path, tmp_path: Path) -> None:
    """A launch that never finishes: one line, exit status 3 without clean-up, the runtime abandoned,
    no results file (bench has measured nothing but its calibration)."""
    host.hung = True
    for command in ("verify", "bench"):
        r = run(tmp_path, command, "--config", CONFIGS_DIR / "smoke.yaml", "--shape", "one-expert",
                "--kernel-timeout", "0.05", "--json", tmp_path / f"{command}.json",
                *(FAST if command == "bench" else []))
        assert r.exit_code == 3, r.output
        assert "did not finish within 0.05 s: the kernel looks deadlocked" in r.output
        assert host.abandoned and not (tmp_path / f"{command}.json").exists()


@pytest.mark.usefixtures("survive_exit")
def test_bench_keeps_the_rows_finished_before_a_hang(host: HostDevice, repo: Path, tmp_path: Path) -> None:
    """A kernel that hangs on the second shape: exit 3 as before, but the first shape's rows, already
    measured, are saved, and the file says the run is incomplete and why."""
    host.hang_at_n = 512  # four-one-empty (N = 512); one-expert has N = 256
    r = run(tmp_path, "bench", "--config", CONFIGS_DIR / "smoke.yaml", "--shape", "one-expert", "--shape",
            "four-one-empty", "--kernel-timeout", "0.05", *FAST, "--json", tmp_path / "b.json")
    assert r.exit_code == 3, r.output
    d = doc(tmp_path / "b.json")
    assert d["incomplete"].startswith("reference on four-one-empty did not finish within 0.05 s")
    assert [(rec["kernel"], rec["shape"]["name"]) for rec in d["records"]] == \
        [("empty", "calibration"), ("reference", "one-expert")]
    assert d["records"][1]["samples"] >= 3 and host.abandoned


def test_bench_keeps_the_rows_finished_before_a_failure(host: HostDevice, repo: Path, tmp_path: Path) -> None:
    """Out of device memory on the second shape (as a torch baseline's failure would be): exit 2 with
    the driver's line, and the first shape's rows are saved, marked incomplete with that line."""
    host.max_alloc = 300_000  # one-expert's output is 128 KiB, four-one-empty's 1 MiB (hot: no flush buffer)
    r = run(tmp_path, "bench", "--config", CONFIGS_DIR / "smoke.yaml", "--shape", "one-expert", "--shape",
            "four-one-empty", "--hot", *FAST, "--json", tmp_path / "b.json")
    assert r.exit_code == 2, r.output
    assert "hipMalloc failed: hipErrorOutOfMemory" in r.output and "Traceback" not in r.output
    d = doc(tmp_path / "b.json")
    assert d["incomplete"].startswith("hipMalloc failed: hipErrorOutOfMemory")
    assert [(rec["kernel"], rec["shape"]["name"]) for rec in d["records"]] == \
        [("empty", "calibration"), ("reference", "one-expert")]


def test_bench_says_each_step_as_it_starts(host: HostDevice, repo: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The progress bar names what runs now (a long measurement, the baselines' compile), not what ended."""
    commands = sys.modules[bench_command.__module__]  # the module bench_command looks bench up in
    steps: list[str] = []
    real = commands.bench

    def bench(*args: Any) -> Any:
        *rest, on_step, on_done = args
        return real(*rest, lambda what: (steps.append(what), on_step(what)), on_done)

    monkeypatch.setattr(commands, "bench", bench)
    r = run(tmp_path, "bench", "--config", CONFIGS_DIR / "smoke.yaml", "--shape", "one-expert", "--shape",
            "gaps", "--repeat", "2", *FAST, "--no-save")
    assert r.exit_code == 0, r.output
    # runs 1 and 2
    assert steps == ["calibration: the empty kernel", "reference on one-expert", "reference on gaps"]


def test_bench_records_the_median_power_read_while_launches_run(host: HostDevice, repo: Path,
                                                                tmp_path: Path) -> None:
    """One reading per sample, in order: each record's power is the median of its own samples' readings."""
    host.watts = [310.0, 720.0, 455.0, 505.0, 600.0]
    r = run(tmp_path, "bench", "--config", CONFIGS_DIR / "smoke.yaml", "--shape", "one-expert", *FAST,
            "--json", tmp_path / "b.json")
    assert r.exit_code == 0, r.output
    records = doc(tmp_path / "b.json")["records"]
    assert [rec["kernel"] for rec in records] == ["empty", "reference"]
    reads = [x.power_w for x in host.readings]
    assert len(reads) == sum(rec["samples"] for rec in records)
    first = records[0]["samples"]
    for rec, mine in zip(records, (reads[:first], reads[first:])):
        assert rec["power_w"] == sorted(mine)[len(mine) // 2]
    assert " W " in r.output


def test_bench_records_the_share_of_samples_the_power_limit_held(host: HostDevice, repo: Path,
                                                                 tmp_path: Path) -> None:
    host.capped = [True, False, True, True, False, False, True]
    r = run(tmp_path, "bench", "--config", CONFIGS_DIR / "smoke.yaml", "--shape", "one-expert", *FAST,
            "--json", tmp_path / "b.json", "--wide")
    assert r.exit_code == 0, r.output
    records = doc(tmp_path / "b.json")["records"]
    reads = [x.power_capped for x in host.readings]
    assert len(reads) == sum(rec["samples"] for rec in records)
    first = records[0]["samples"]
    for rec, mine in zip(records, (reads[:first], reads[first:])):
        assert rec["power_capped"] == round(sum(mine) / len(mine), 3)
    assert "capped" in r.output and f"{100 * records[1]['power_capped']:.0f}%" in r.output


def test_bench_without_power_sensors_records_none(host: HostDevice, repo: Path, tmp_path: Path) -> None:
    r = run(tmp_path, "bench", "--config", CONFIGS_DIR / "smoke.yaml", "--shape", "one-expert", *FAST,
            "--json", tmp_path / "b.json")
    assert r.exit_code == 0, r.output
    assert all(rec["power_w"] is None and rec["power_capped"] is None
               for rec in doc(tmp_path / "b.json")["records"])


def test_bench_shards_merge_compare(host: HostDevice, repo: Path, tmp_path: Path) -> None:
    common = ["bench", "--config", CONFIGS_DIR / "smoke.yaml", "--hot", "--repeat", "2", *FAST]
    assert run(tmp_path, *common, "--json", tmp_path / "all.json", "--csv",
               tmp_path / "all.csv").exit_code == 0
    for i in (1, 2):
        r = run(tmp_path, *common, "--shard", f"{i}/2", "--json", tmp_path / f"s{i}.json")
        assert r.exit_code == 0, r.output
    merged = CliRunner().invoke(cli, ["merge", str(tmp_path / "s1.json"), str(tmp_path / "s2.json"), "--json",
                                      str(tmp_path / "m.json")])
    assert merged.exit_code == 0, merged.output
    whole, joined = doc(tmp_path / "all.json")["records"], doc(tmp_path / "m.json")["records"]
    assert [(r["kernel"], r["shape"]["name"], r["run"]) for r in whole if not r["calibration"]] == \
        [(r["kernel"], r["shape"]["name"], r["run"]) for r in joined if not r["calibration"]]
    assert whole[0]["calibration"] and whole[0]["cache"] == "hot" and whole[0]["batch"] >= 1
    assert all(r["samples"] >= 3 and r["stop"] in REASONS for r in whole)
    compare = CliRunner().invoke(cli, ["compare", str(tmp_path / "all.json"), str(tmp_path / "m.json"),
                                       "--threshold", "1000"])
    assert compare.exit_code == 0, compare.output


def test_bench_cold_flushes_twice_the_last_level_cache(host: HostDevice, repo: Path, tmp_path: Path,
                                                      specs: dict[str, KernelSpec]) -> None:
    r = run(tmp_path, "bench", "--config", CONFIGS_DIR / "smoke.yaml", "--shape", "one-expert", *FAST,
            "--json", tmp_path / "b.json")
    assert r.exit_code == 0, r.output
    calibration, one = doc(tmp_path / "b.json")["records"]
    assert one["cache"] == "cold" and one["flush_bytes"] == 2 * (288 << 20)  # gfx950: 256 MiB + 32 MiB
    # each record carries the grid it was launched with
    assert one["grid"] == specs["reference"].tiles(Dims(128, 256, 256, 1)) and calibration["grid"] == 1
    assert one["pct_peak"] is not None and one["batch"] == 1


def test_device_of_another_architecture_is_refused(monkeypatch: pytest.MonkeyPatch, repo: Path,
                                                   tmp_path: Path) -> None:
    """A gfx942 device is not launched on with gfx950 code: one line, exit 2, nothing built or run."""
    device = HostDevice(arch="gfx942")
    monkeypatch.setattr(BACKENDS["gfx950"], "open_runtime", lambda index: device)
    r = run(tmp_path, "verify", "--config", CONFIGS_DIR / "smoke.yaml", "--target", "gfx950", "--no-save")
    assert r.exit_code == 2 and not device.launches and not (tmp_path / "cache").exists()
    assert r.stderr.splitlines() == ["gfx950: device 0 is host stand-in (gfx942); gfx950 code needs gfx950"]


def test_bench_rotating_launches_on_copies_that_exceed_the_cache_and_flushes_nothing(
        torch_stand_in: HostDevice, repo: Path, tmp_path: Path) -> None:
    """--rotating 2 on a 128x256x256 problem: gfx950's 288 MiB of last-level cache needs more copies
    than 2; each launch writes the next copy's output, no sample is flushed, and a spin goes ahead
    of every sample (torch's, stood in for here)."""
    host = torch_stand_in
    r = run(tmp_path, "bench", "--config", CONFIGS_DIR / "smoke.yaml", "--shape", "one-expert", *FAST,
            "--rotating", "2", "--json", tmp_path / "b.json")
    assert r.exit_code == 0, r.output
    data = doc(tmp_path / "b.json")
    calibration, one = data["records"]
    each = 128 * (256 + 256) + (256 + 256) * 4 + 2 * 4 + 2 * 256 * 256  # operands, scales, offsets, C
    assert one["rotating"] == (288 << 20) // each + 1 and one["flush"] is None and one["flush_bytes"] == 0
    assert data["rotating"] == 2 and data["flush"] is None and host.fills == 0
    assert data["interleave"] is False and not one["interleaved"]  # no baselines: nothing to pair
    outputs = host.outputs  # fewer launches than copies here: each on a copy of its own
    assert 3 < len(outputs) < one["rotating"] and len(set(outputs)) == len(outputs)
    assert one["spin_ms"] == calibration["spin_ms"] == 0.05
    assert "cold (at least 2 copies of the inputs rotated per launch)" in " ".join(r.output.split())


@pytest.mark.parametrize("pattern, elements, scales", [("zeros", (0.0, 0.0), (-127, -127)),
                                                       ("ones", (256.0, 256.0), (-8, -8))])
def test_bench_data_pattern_is_launched_recorded_and_shown(host: HostDevice, repo: Path, tmp_path: Path,
                                                           pattern: str, elements: tuple[float, float],
                                                           scales: tuple[int, int]) -> None:
    r = run(tmp_path, "bench", "--config", CONFIGS_DIR / "smoke.yaml", "--shape", "two-zipf", *FAST,
            "--data", pattern, "--json", tmp_path / "b.json")
    assert r.exit_code == 0, r.output
    data = doc(tmp_path / "b.json")
    inputs = data["records"][1]["inputs"]
    assert data["data"] == pattern and inputs["pattern"] == pattern and inputs["octaves"] is None
    assert (inputs["element_min"], inputs["element_max"]) == elements
    assert (inputs["scale_min"], inputs["scale_max"]) == scales
    shown = CliRunner().invoke(cli, ["show", str(tmp_path / "b.json"), "--wide"])
    assert shown.exit_code == 0 and (f"{pattern}: [{elements[0]:g}, {elements[1]:g}] x 2^[{scales[0]}, "
                                     f"{scales[1]}]") \
        in shown.output


def test_bench_random_inputs_record_the_generators_ranges(host: HostDevice, repo: Path,
                                                          tmp_path: Path) -> None:
    r = run(tmp_path, "bench", "--config", CONFIGS_DIR / "smoke.yaml", "--shape", "two-zipf", *FAST,
            "--json", tmp_path / "b.json")
    assert r.exit_code == 0, r.output
    inputs = doc(tmp_path / "b.json")["records"][1]["inputs"]
    assert inputs["pattern"] == "random" and inputs["octaves"] == 8
    # OCP: each block's max saturates
    assert inputs["element_min"] == -448.0 and inputs["element_max"] == 448.0
    assert inputs["scale_min"] < inputs["scale_max"]


@pytest.mark.parametrize("args, line", [
    (["--hot", "--rotating", "4"],
     "--rotating 4: rotating copies empty the cache for cold samples; with --hot"),
    (["--interleave"], "--interleave: rounds pair each kernel with the baselines of its shape; add "
                       "--baselines"),
])
def test_bench_refuses_options_that_do_not_go_together(host: HostDevice, repo: Path, tmp_path: Path,
                                                       args: list[str], line: str) -> None:
    r = run(tmp_path, "bench", "--config", CONFIGS_DIR / "smoke.yaml", *FAST, *args)
    assert r.exit_code == 2 and line in r.output and "Traceback" not in r.output


@pytest.fixture
def torch_stand_in(host: HostDevice, monkeypatch: pytest.MonkeyPatch) -> HostDevice:
    """Stand-ins for torch's baselines (torch with a GPU cannot run here): each spends a known host
    time, which the stand-in's events (the host clock) time; the spin ahead of a sample is a no-op."""
    def baselines(_p: Problem, names: tuple[str, ...], copies: int) -> dict[str, Callable[[], None]]:
        assert copies >= 1
        return {name: functools.partial(time.sleep, seconds) for name, seconds in
                (("torch-grouped", 0.004), ("bf16-ceiling", 0.001)) if name in names}

    monkeypatch.setattr("wgrad_cli.measure.bench.baselines", baselines)
    monkeypatch.setattr("wgrad_cli.measure.bench._spin", lambda _s, _fn, _what: (lambda: None, 0.05))
    monkeypatch.setattr("wgrad_cli.commands.bench.require_torch", lambda: None)
    monkeypatch.setattr(Gfx950, "torch_baselines", True)
    return host


@pytest.mark.usefixtures("torch_stand_in")
def test_bench_interleaves_each_shape_and_records_speedups_per_round(repo: Path, tmp_path: Path) -> None:
    """Rounds, the default where baselines are timed: every path of a shape has as many samples as
    there were rounds, the kernel's row has its speed-up over each baseline per round, and the
    speed-up table gives the one over the torch path, the median of the rounds', with their 20-80%
    range; --no-interleave samples each path in a block of its own."""
    r = run(tmp_path, "bench", "--config", CONFIGS_DIR / "smoke.yaml", "--shape", "one-expert", *FAST,
            "--baseline", "torch-grouped", "--baseline", "bf16-ceiling", "--json", tmp_path / "b.json")
    assert r.exit_code == 0, r.output
    data = doc(tmp_path / "b.json")
    calibration, *rows = data["records"]
    assert data["interleave"] is True and not calibration["interleaved"]
    assert [x["kernel"] for x in rows] == ["reference", "torch-grouped", "bf16-ceiling"]
    assert all(x["interleaved"] for x in rows) and len({x["samples"] for x in rows}) == 1
    kernel = rows[0]
    assert [p["baseline"] for p in kernel["paired"]] == ["torch-grouped", "bf16-ceiling"]
    grouped = kernel["paired"][0]
    assert grouped["rounds"] == kernel["samples"] and grouped["p20"] <= grouped["median"] <= grouped["p80"]
    assert all(not x["paired"] for x in rows[1:])
    shown = CliRunner().invoke(cli, ["speedup", str(tmp_path / "b.json"), "--wide"])
    assert shown.exit_code == 0, shown.output
    assert f"| {grouped['median']:.2f} | {grouped['p20']:.2f}-{grouped['p80']:.2f} |" \
        in " ".join(shown.output.split())
    blocked = run(tmp_path, "bench", "--config", CONFIGS_DIR / "smoke.yaml", "--shape", "one-expert", *FAST,
                  "--baseline", "torch-grouped", "--baseline", "bf16-ceiling", "--no-interleave", "--json",
                  tmp_path / "blocked.json")
    assert blocked.exit_code == 0, blocked.output
    assert not any(x["interleaved"] or x["paired"] for x in doc(tmp_path / "blocked.json")["records"])
