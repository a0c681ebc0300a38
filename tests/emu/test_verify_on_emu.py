"""`wgrad verify --device emu`: the project's reference kernel, built for gfx950 by the real
compiler, run on the emulated device through the same session, launch and check code as on a GPU,
against numpy on every element. The shapes are emu.yaml's (odd.yaml's features at sizes the
emulator checks in seconds; odd.yaml's own shapes need hours of CPU each) and smoke.yaml's
one-expert and gaps: its two-zipf and four-one-empty cost 87% of smoke's emulated work and add
nothing emu.yaml's shapes lack (zipf routing, several experts, empty ones)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml

import pytest
from checkout import copy_checkout, tracked
from click.testing import CliRunner

from wgrad_cli.backends.registry import BY_VENDOR
from wgrad_cli.cli import cli
from wgrad_cli.config.options import DEFAULT_MACHINE, Emulated
from wgrad_cli.config.shipped import CONFIGS_DIR
from wgrad_cli.emu.device import EmuRuntime
from wgrad_cli.model.machine import load

pytestmark = pytest.mark.usefixtures("amd_compiler")  # wgrad's own gfx950 compiler, else skipped


def main_job() -> list[str]:
    """The README's main job: its set-up line's wgrad command, as arguments."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    [command] = re.findall(r"^bash \.ci/setup && \.venv/bin/wgrad (.+?) +# the main job", readme, re.M)
    return shlex.split(command)


def check_document(doc: dict[str, Any], config: str, output: str, model: bool) -> None:
    """A verify run on the emulator that passed, every record checked on every element; with
    --model, every record modelled and the table labelled so."""
    assert doc["device"]["emulated"] and doc["device"]["arch"] == "gfx950"
    assert doc["config"] == config  # a shipped config by its name, not this machine's path
    assert doc["records"] and all(r["ok"] for r in doc["records"])
    for r in doc["records"]:
        assert r["reference"] == "numpy float64, every element"
        counters = r["counters"]
        assert counters["waves"] > 0 and counters["instructions"]["valu"] > 0 and counters["bytes_stored"] > 0
    assert "executed on the emulator" in output
    modelled = [r["modelled"] for r in doc["records"] if r.get("modelled")]
    if not model:
        assert modelled == []
        return
    assert len(modelled) == len(doc["records"])
    assert all(m["machine"] == "MI355X" and m["tflops"] > 0 and m["microseconds"] > 0 for m in modelled)
    assert re.search(r"^\| kernel .*\| status \| modelled us \| band +\| modelled TFLOP/s \|$", output, re.M)
    band = load(DEFAULT_MACHINE).band
    assert band and all(m["band"] == band for m in modelled)  # each modelled time with the held-out band
    assert "times modelled on an MI355X, not measured" in output
    routed = [s["offsets"] for s in yaml.safe_load((CONFIGS_DIR / f"{config}.yaml").read_text())["shapes"]
              if "offsets" in s]
    assert any(o[0] > 0 for o in routed)  # tokens before the first expert
    assert any(0 in np.diff(o) for o in routed)  # an empty expert


def test_reference_kernel_passes_on_the_emulator(tmp_path: Path) -> None:
    out = tmp_path / "verify.json"
    args = ["verify", "--config", str(CONFIGS_DIR / "smoke.yaml"), "--device", "emu", "--shape=one-expert",
            "--shape=gaps", "--strict-lds", "--json", str(out), "--cache-dir", str(tmp_path / "cache")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    check_document(json.loads(out.read_text()), "smoke", result.output, model=False)


def test_the_readme_commands_pass_in_order_in_one_checkout(tmp_path: Path) -> None:
    """The README's main job, exactly as written, then the tests that read the checkout's files, in
    one copy of this checkout: the main job's results file must not fail them."""
    clone = copy_checkout(tmp_path / "clone")
    job = main_job()
    ran = subprocess.run([sys.executable, "-m", "wgrad_cli", *job], cwd=clone, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    [written] = [p for p in (clone / "results").glob("*.json")
                 if p.relative_to(clone).as_posix() not in tracked("results")]
    config = job[job.index("--config") + 1]
    check_document(json.loads(written.read_text()), config, ran.stdout, "--model" in job)
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                            "tests/test_docs.py"], cwd=clone, capture_output=True, text=True)
    assert tests.returncode == 0 and "skipped" not in tests.stdout, tests.stdout + tests.stderr


def test_model_needs_the_emulator() -> None:
    result = CliRunner().invoke(cli, ["verify", "--config", "smoke", "--model"])
    assert result.exit_code == 2 and result.stderr.strip() == (
        "--model: the modelled launches run on the emulated gfx950; add --device emu (not --device 0)")


def test_strict_lds_needs_the_emulator() -> None:
    result = CliRunner().invoke(cli, ["verify", "--config", "smoke", "--device", "0", "--strict-lds"])
    assert result.exit_code == 2 and result.stderr.strip() == (
        "--strict-lds: only the emulated device checks LDS accesses; add --device emu")


def test_emu_stack_bytes_needs_the_emulator() -> None:
    result = CliRunner().invoke(cli, ["verify", "--config", "smoke", "--device", "0",
                                      "--emu-stack-bytes", "2048"])
    assert result.exit_code == 2 and result.stderr.strip() == (
        "--emu-stack-bytes: only the emulated device takes its stack size from wgrad; add --device emu")


@pytest.mark.parametrize("given, kept", [(["--emu-stack-bytes", "1000"], 1008), ([], 1024)])
def test_emu_stack_bytes_reaches_the_emulated_device(monkeypatch: pytest.MonkeyPatch, given: list[str],
                                                     kept: int) -> None:
    """Rounded up to 16 bytes as hipDeviceSetLimit rounds it; HIP's 1024 without the option."""
    seen: list[object] = []
    monkeypatch.setattr("wgrad_cli.commands.verify.verify_command", lambda *args: seen.append(args[2].device))
    result = CliRunner().invoke(cli, ["verify", "--config", "smoke", "--device", "emu", *given])
    assert result.exit_code == 0 and seen == [Emulated(False, kept)]
    runtime = BY_VENDOR["amd"].open_runtime(Emulated(False, kept))
    assert isinstance(runtime, EmuRuntime) and runtime.stack_bytes == kept


def test_emu_register_fill_needs_the_emulator() -> None:
    result = CliRunner().invoke(cli, ["verify", "--config", "smoke", "--device", "0",
                                      "--emu-register-fill", "0x5a"])
    assert result.exit_code == 2 and result.stderr.strip() == (
        "--emu-register-fill: only the emulated device's registers start with a value wgrad chooses; "
        "add --device emu")


@pytest.mark.parametrize("value", ["0x1ffffffff", "-1", "five"])
def test_emu_register_fill_takes_a_32_bit_value(value: str) -> None:
    result = CliRunner().invoke(cli, ["verify", "--config", "smoke", "--device", "emu",
                                      "--emu-register-fill", value])
    assert (result.exit_code == 2 and "is not a 32-bit value" in result.stderr
            and "Traceback" not in result.output)


@pytest.mark.parametrize("given, kept", [(["--emu-register-fill", "0x7fc00000"], 0x7FC00000),
                                         (["--emu-register-fill", "17"], 17), ([], 0)])
def test_emu_register_fill_reaches_the_emulated_device(monkeypatch: pytest.MonkeyPatch, given: list[str],
                                                       kept: int) -> None:
    seen: list[object] = []
    monkeypatch.setattr("wgrad_cli.commands.verify.verify_command", lambda *args: seen.append(args[2].device))
    result = CliRunner().invoke(cli, ["verify", "--config", "smoke", "--device", "emu", *given])
    assert result.exit_code == 0 and seen == [Emulated(register_fill=kept)]
    runtime = BY_VENDOR["amd"].open_runtime(Emulated(register_fill=kept))
    assert isinstance(runtime, EmuRuntime) and runtime.register_fill == kept


def test_bench_refuses_the_emulator() -> None:
    result = CliRunner().invoke(cli, ["bench", "--config", str(CONFIGS_DIR / "smoke.yaml"),
                                      "--device", "emu"])
    assert result.exit_code == 2
    assert "no clock to time them" in result.stderr and "Traceback" not in result.output


def test_shards_split_emulated_runs_as_gpu_runs(tmp_path: Path) -> None:
    out = tmp_path / "shard.json"
    result = CliRunner().invoke(cli, ["verify", "--config", "smoke", "--device", "emu", "--shard", "1/4",
                                      "--json", str(out), "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["shard"] == [1, 4] and [r["shape"]["name"] for r in doc["records"]] == ["one-expert"]
    assert doc["config"] == "smoke"
    empty = CliRunner().invoke(cli, ["verify", "--config", "smoke", "--device", "emu", "--shard", "9/9",
                                     "--cache-dir", str(tmp_path / "cache")])
    assert (empty.exit_code == 2 and "slice 9 would be empty" in empty.stderr
            and "Traceback" not in empty.output)


def test_model_models_the_problem_verify_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wgrad_cli.commands import model as model_command
    from wgrad_cli.measure import verify as verify_measure

    made: list[str] = []
    for module in (verify_measure, model_command):
        real = module.generate
        monkeypatch.setattr(module, "generate",
                            lambda *a, real=real, name=module.__name__: made.append(name) or real(*a))
    files = {}
    for command in (["verify", "--device", "emu", "--model"], ["model"]):
        files[command[0]] = tmp_path / f"{command[0]}.json"
        result = CliRunner().invoke(cli, [*command, "--config", "smoke", "--shape", "one-expert", "--json",
                                          str(files[command[0]])])
        assert result.exit_code == 0, result.output
    # verify generated the problem once, and modelled that upload; model generated its own
    assert made == ["wgrad_cli.measure.verify", "wgrad_cli.commands.model"]
    (verified,), (modelled,) = (json.loads(files[c].read_text())["records"] for c in ("verify", "model"))
    assert verified["modelled"]["microseconds"] == pytest.approx(modelled["median_ms"] * 1e3, rel=1e-12)
    assert verified["modelled"]["tflops"] == pytest.approx(modelled["tflops"], rel=1e-12)
    assert verified["modelled"]["limiter"] == modelled["model"]["limiter"]
    seconds = modelled["median_ms"] / 1e3  # the modelled row's rates, in their units
    assert modelled["tflops"] == pytest.approx(modelled["flops"] / seconds / 1e12, rel=1e-12)
    assert modelled["gbps"] == pytest.approx(modelled["min_bytes"] / seconds / 1e9, rel=1e-12)
