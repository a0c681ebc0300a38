"""Launch files run, as a user runs them: a kernel of the project's own whose arguments are not
wgrad's ABI (tests/data/launch/axpy.cu, built by clang-22) and the reference kernel as a launch file,
on the emulated gfx950 (verify) and through the timing model (model)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from clirun import assert_user_error

from wgrad_cli.cli import cli
from wgrad_cli.config.launchfile import load_launch
from wgrad_cli.config.options import CompilerOptions
from wgrad_cli.commands.launchmodel import plan_of
from wgrad_cli.commands.launchsetup import code_object, place
from wgrad_cli.emu.device import EmuRuntime
from wgrad_cli.model.cu import CAUSES, CuTime
from wgrad_cli.model.machine import load
from wgrad_cli.model.schedule import schedule

pytestmark = pytest.mark.skipif(shutil.which("clang-22") is None,
                                reason="clang-22 (Debian's, for gfx950) is not installed")
DATA = Path(__file__).resolve().parents[1] / "data" / "launch"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def run_launch(path: Path, cache: Path, seed: int = 0) -> list[bytes]:
    """Every buffer of the launch file's arguments after one launch on the emulator (None: a scalar)."""
    launch = load_launch(path)
    rt = EmuRuntime(workers=1)
    placed = place(rt, launch, code_object(launch, CompilerOptions(cache_dir=cache)).image, seed)
    placed()
    return [placed.contents(i) for i, p in enumerate(placed.pointers) if p is not None]


def test_axpy_computes_a_x_plus_y_on_its_own_arguments(cache: Path) -> None:
    y, x = run_launch(DATA / "axpy.yaml", cache, seed=3)
    xs = np.frombuffer(np.random.default_rng(3).bytes(4096), dtype=np.float32)  # the one random buffer
    start = np.zeros(1024, dtype=np.float32)
    start[:3] = [1.0, 2.0, 3.0]
    expect = start.copy()
    with np.errstate(over="ignore", invalid="ignore"):  # the random bytes hold infinities and NaNs
        expect[:1000] = np.float32(2.0) * xs[:1000] + start[:1000]  # 2 x is exact: fused or not, one rounding
    got = np.frombuffer(y, dtype=np.float32)
    assert x == xs.tobytes()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expect))
    ok = ~np.isnan(expect)
    np.testing.assert_array_equal(got[ok], expect[ok])


def test_a_two_dimensional_grid_gives_each_workgroup_its_ids(tmp_path: Path, cache: Path) -> None:
    (tmp_path / "ids.cu").write_text(
        'extern "C" __attribute__((global)) void ids(unsigned *out) {\n'
        "    const unsigned g = __builtin_amdgcn_workgroup_id_y() * 3 + __builtin_amdgcn_workgroup_id_x();\n"
        "    if (__builtin_amdgcn_workitem_id_x() == 0 && __builtin_amdgcn_workitem_id_y() == 1)\n"
        "        out[g] = __builtin_amdgcn_workgroup_id_x() | __builtin_amdgcn_workgroup_id_y() << 8;\n}\n")
    (tmp_path / "ids.yaml").write_text("source: ids.cu\nsymbol: ids\ngrid: [3, 2]\nblock: [32, 2]\n"
                                       "args:\n  - {buffer: 24, output: true}\n")
    (out,) = run_launch(tmp_path / "ids.yaml", cache)
    assert np.frombuffer(out, dtype=np.uint32).tolist() == [0, 1, 2, 0x100, 0x101, 0x102]


def test_verify_reports_digests_and_checks_the_expected_ones(tmp_path: Path, cache: Path) -> None:
    y, _ = run_launch(DATA / "axpy.yaml", cache)
    digest = hashlib.sha256(y).hexdigest()
    for expected, status in ((digest, 0), ("0" * 64, 1)):
        text = (DATA / "axpy.yaml").read_text().replace("output: true}",
                                                        f"output: true, expect_sha256: '{expected}'}}")
        path = tmp_path / "axpy.yaml"
        path.write_text(text.replace("source: axpy.cu", f"source: {DATA / 'axpy.cu'}"))
        result = CliRunner().invoke(cli, ["verify", "--device", "emu", "--launch", str(path), "--cache-dir",
                                          str(cache)])
        assert result.exit_code == status, result.output
        assert digest in result.stdout and "ran to completion: 16 waves" in result.stderr
        if status:
            assert "FAILED" in result.stdout
            assert result.stderr.splitlines()[-1] == (f"{path}: 1 buffer after the run differ from "
                                                      "expect_sha256")


def test_the_reference_kernel_as_a_launch_file_models_as_its_config_does(tmp_path: Path, cache: Path) -> None:
    files = []
    for args in (["--launch", str(DATA / "reference.yaml")], ["--config", "smoke", "--shape", "one-expert"]):
        out = tmp_path / f"{len(files)}.json"
        result = CliRunner().invoke(cli, ["model", *args, "--clock", "2.0", "--json", str(out), "--cache-dir",
                                          str(cache)])
        assert result.exit_code == 0, result.output
        files.append(json.loads(out.read_text()))
    (launched,), (configured,) = (doc["records"] for doc in files)
    m = launched["model"]
    assert launched["kernel"] == "reference-launch" and launched["shape"]["routing"] == "launch file"
    assert m["classes"] == 1 and m["workgroups"] == 256 and m["emulated"] == [0, 255] \
        and m["published_us"] is None
    assert launched["flops"] == 2 * 128 * 256 * 256 and launched["grid"] == 256
    assert sum(m["causes_us"].values()) == pytest.approx(launched["median_ms"] * 1e3, rel=1e-6)
    # the same kernel on the same shape: the instruction streams, and so the time, are the config run's
    assert launched["median_ms"] == pytest.approx(configured["median_ms"], rel=1e-9)
    assert files[0]["config"] == str(DATA / "reference.yaml") and files[0]["modelled"]["clock_ghz"] == 2.0
    show = CliRunner().invoke(cli, ["show", str(tmp_path / "0.json")])
    assert show.exit_code == 0 and "reference-launch" in show.output and "(modelled)" in show.output


def test_arguments_the_kernel_does_not_read_there_are_one_line_each(tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "axpy.yaml"
    path.write_text(f"source: {DATA / 'axpy.cu'}\nsymbol: axpy\ngrid: 1\nblock: 64\n"
                    "args:\n  - {scalar: u32, value: 0, offset: 4}\n  - {scalar: u64, value: 0, offset: 16}\n"
                    "  - {scalar: f32, value: 1.0, offset: 24}\n")
    lines = assert_user_error(CliRunner().invoke(cli, ["model", "--launch", str(path), "--cache-dir",
                                                       str(cache)]))
    spans = "(0-8 pointer, 8-16 pointer, 16-20 by_value, 20-24 by_value)"
    # args[0] sits in the first pointer's bytes, but does not fill them; args[1] spans two adjacent
    # by-value words (a pointer declared as two)
    assert lines == [
        f"{path}: args[2]: bytes 24 to 28 of the argument segment are not within one of the kernel's "
        f"arguments or adjacent ones {spans}; give offset: or fewer arguments",
        f"{path}: args: the kernel's pointer argument at bytes 0 to 8 has no buffer or scalar; add one (a "
        "u64 scalar 0 for a null pointer)",
        f"{path}: args: the kernel's pointer argument at bytes 8 to 16 has no buffer or scalar; add one (a "
        "u64 scalar 0 for a null pointer)"]
    path.write_text(path.read_text().replace("symbol: axpy", "symbol: saxpy"))
    [line] = assert_user_error(CliRunner().invoke(cli, ["model", "--launch", str(path), "--cache-dir",
                                                        str(cache)]))
    assert line.startswith(f"{path}: symbol: expected one kernel named 'saxpy', found none among ['axpy']")


def test_launch_files_run_on_the_emulated_device_only() -> None:
    lines = assert_user_error(CliRunner().invoke(cli, ["verify", "--launch", str(DATA / "axpy.yaml")]))
    assert lines == ["--launch: launch files run on the emulated gfx950; add --device emu (not --device 0)"]


def test_class_tolerance_lets_a_class_differ_by_a_prologue(tmp_path: Path, cache: Path) -> None:
    (tmp_path / "tail.cu").write_text(
        'extern "C" __attribute__((global)) void tail(unsigned *out, unsigned n) {\n'
        "    unsigned acc = __builtin_amdgcn_workitem_id_x();\n"
        "    if (__builtin_amdgcn_workgroup_id_x() == 3) acc = acc * 7u + n;  // the last workgroup does a "
        "little more\n"
        "    for (unsigned i = 0; i < n; ++i) acc = acc * 3u + i;\n"
        "    out[__builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x()] = acc;\n}\n")
    text = ("source: tail.cu\nsymbol: tail\ngrid: 4\nblock: 64\nargs:\n  - {buffer: 1024, output: true}\n"
            "  - {scalar: u32, value: 40}\n")
    (tmp_path / "tail.yaml").write_text(text)
    [line] = assert_user_error(CliRunner().invoke(cli, ["model", "--launch", str(tmp_path / "tail.yaml"),
                                                         "--cache-dir", str(cache), "--no-save"]))
    assert "workgroups 0 and 3 are of one class but ran" in line and "cannot time this kernel" in line
    (tmp_path / "tail.yaml").write_text(text + "class_tolerance: 0.05\n")
    result = CliRunner().invoke(cli, ["model", "--launch", str(tmp_path / "tail.yaml"), "--cache-dir",
                                      str(cache), "--no-save"])
    assert result.exit_code == 0, result.output
    assert "% from its class's (class_tolerance 0.05)" in result.stderr


def test_a_launch_files_inputs_come_from_hbm_once_over_the_grid(tmp_path: Path) -> None:
    # inputs beyond the last-level cache: each workgroup reads its share once, no round again
    machine = load("mi355x")
    big = 4 * machine.llc_bytes
    path = tmp_path / "big.yaml"
    path.write_text((DATA / "axpy.yaml").read_text().replace("source: axpy.cu", f"source: {DATA / 'axpy.cu'}")
                    .replace("grid: 4", "grid: 1024").replace("{buffer: 4096, fill: random}",
                                                             f"{{buffer: {big}, fill: random}}"))
    plan = plan_of(load_launch(path))
    assert plan.sharing is not None and len(set(plan.sharing.owner)) == 1024
    per_set = CuTime(1000, {**dict.fromkeys(CAUSES, 0.0), "memory": 1000.0}, 0, 1 << 30, 0)
    grid = schedule([0] * 1024, {0: per_set}, 1, plan.sharing, machine)
    assert grid.rounds == 4 and grid.hbm_bytes == pytest.approx(big, rel=1e-6)
