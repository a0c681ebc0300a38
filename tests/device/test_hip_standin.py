"""wgrad verify and bench through the real hip.py and the real hip-python, against a stand-in
libamdhip64.so (tests/hipstandin: a C test double, since no machine here has an AMD GPU).

Each supported hip-python line runs in turn (7.x and 10.x differ in hipGetDeviceProperties, their
strings and how they find the library); one missing here is installed into a venv kept in
pytest's cache. $WGRAD_HIP_PYTHON lists the lines to run (default "7.1 10"). On its own the
stand-in computes nothing, so verify fails every shape: what is checked is what crossed the
boundary (grid, block, the buffers each argument points to), the device read back, and every
error path as one line without a traceback. With wgrad's emulator behind it (emulated()), the
gfx950 code objects run end to end and verify checks what they computed.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from hipstandin.build import Unavailable, compile_standin, python_with_hip_python

REPO = Path(__file__).resolve().parent.parent.parent
SERIES = os.environ.get("WGRAD_HIP_PYTHON", "7.1 10").split()


def no_core_files() -> None:
    """The stand-in's abort() dumps no core (inherited by wgrad's child processes)."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


@dataclass(frozen=True)
class HipPython:
    python: Path
    version: str
    standin: Path  # a ROCm root: lib/libamdhip64.so
    cache: Path  # code object cache shared by the runs

    @property
    def finds_standin(self) -> dict[str, str]:
        """What this hip-python needs to find the stand-in: 7.x, the loader path; 10.x looks in
        $ROCM_PATH/lib, then $ROCM_HOME/lib (the latter here: wgrad would also build with ROCM_PATH's
        headers, which the stand-in has none of)."""
        if self.version.startswith("7."):
            return {"LD_LIBRARY_PATH": str(self.standin / "lib")}
        return {"ROCM_HOME": str(self.standin)}

    def wgrad(self, *args: str | Path, env: dict[str, str] | None = None,
              finds: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("ROCM_", "WGRAD_STANDIN", "HIP_"))
                 and k != "LD_LIBRARY_PATH"}
        return subprocess.run([str(self.python), "-m", "wgrad_cli", *map(str, args),
                               "--cache-dir", str(self.cache)],
                              env={**clean, **(self.finds_standin if finds is None else finds),
                                   **(env or {})},
                              capture_output=True, text=True, timeout=300, preexec_fn=no_core_files)


def smoke_config() -> Path:
    """The shipped smoke config."""
    return REPO / "configs" / "smoke.yaml"


@pytest.fixture(scope="session")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        return compile_standin(tmp_path_factory.mktemp("rocm"))
    except Unavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session", params=SERIES)
def hip_python(request: pytest.FixtureRequest, standin: Path, tmp_path_factory: pytest.TempPathFactory,
               amd_compiler: object) -> HipPython:
    try:
        # kept between runs; absent without pytest's cache plugin
        cache = getattr(request.config, "cache", None)
        venvs = cache.mkdir("hip-python") if cache else tmp_path_factory.mktemp("hip-python")
        python, version = python_with_hip_python(request.param, venvs)
    except Unavailable as exc:
        pytest.skip(str(exc))
    return HipPython(python, version, standin, tmp_path_factory.mktemp("cache"))


def launches(log: Path) -> list[dict[str, object]]:
    """The stand-in's log: per launch the symbol, grid x, block x, LDS and (offset, size) per argument."""
    out = []
    for line in log.read_text().splitlines():
        m = re.fullmatch(r"launch (\S+) grid (\d+) 1 1 block (\d+) 1 1 lds (\d+) args (.*)", line)
        assert m, line
        out.append({"symbol": m[1], "grid": int(m[2]), "block": int(m[3]), "lds": int(m[4]),
                    "args": [tuple(map(int, a.split("/"))) for a in m[5].split()]})
    return out


def test_verify_runs_the_real_shim(hip_python: HipPython, tmp_path: Path) -> None:
    """Every shape of the smoke config launches once, with the ABI's six buffers, whole, in order."""
    log, out = tmp_path / "launches.log", tmp_path / "v.json"
    r = hip_python.wgrad("verify", "--config", smoke_config(), "--target", "gfx950", "--json", out,
                         env={"WGRAD_STANDIN_LOG": str(log)})
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 1, r.stdout + r.stderr  # nothing computed: every output unwritten
    assert "0/4 shapes passed" in r.stderr
    doc = json.loads(out.read_text())
    device = doc["device"]
    assert device["name"] == "AMD Instinct MI355X (HIP stand-in)" and device["arch"] == "gfx950"
    assert device["units"] == 256 and device["max_clock_mhz"] == 2400 and device["memory_bytes"] == 288 << 30
    assert f"hip-python {hip_python.version}" in device["runtime"] and "amdsmi" in device["runtime"]
    records = {rec["shape"]["name"]: rec for rec in doc["records"]}
    assert all(rec["overall"]["unwritten"] == rec["overall"]["elements"] for rec in records.values())
    seen = launches(log)
    assert len(seen) == 4
    for launch, rec in zip(seen, doc["records"]):
        d = rec["shape"]
        M, N, K, E = d["M"], d["N"], d["K"], d["E"]
        assert str(launch["symbol"]).startswith("_Z26grouped_mxfp8_wgrad_kernel")
        assert launch["grid"] == E * (N // 16) * (K // 16) and launch["block"] == 256 and launch["lds"] == 0
        # C, A, B, scale_A, scale_B, expert_off: each argument is the start of a buffer of its ABI size
        assert launch["args"] == [(0, 2 * E * N * K), (0, N * M), (0, K * M), (0, M // 128 * N * 4),
                                  (0, M // 128 * K * 4), (0, 4 * (E + 1))]


def emulated(hip_python: HipPython) -> dict[str, str]:
    """The stand-in with wgrad's emulator behind it (tests/hipstandin/emulated.py): its hipInit imports the
    module into each process that opens the device, wgrad's and the children that isolation runs."""
    return {"WGRAD_STANDIN_BACKEND": "hipstandin.emulated",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "tests"), os.environ.get("PYTHONPATH")]))}


def test_verify_computes_a_gfx950_kernel_through_the_shim(hip_python: HipPython, tmp_path: Path) -> None:
    """The reference kernel's code object runs on the emulator behind the stand-in: every element right."""
    out = tmp_path / "v.json"
    r = hip_python.wgrad("verify", "--config", smoke_config(), "--target", "gfx950", "--kernel", "reference",
                         "--shape", "one-expert", "--shape", "gaps", "--json", out, env=emulated(hip_python))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "2/2 shapes passed" in r.stderr + r.stdout
    doc = json.loads(out.read_text())
    assert f"hip-python {hip_python.version}" in doc["device"]["runtime"] and not doc["device"]["emulated"]
    overall = [rec["overall"] for rec in doc["records"]]
    assert len(overall) == 2 and all(o["unwritten"] == 0 and o["mismatches"] == 0 for o in overall)


def test_verify_fails_a_kernel_that_computes_nothing_through_the_shim(hip_python: HipPython) -> None:
    r = hip_python.wgrad("verify", "--config", smoke_config(), "--target", "gfx950", "--kernel", "empty",
                         "--shape", "one-expert", "--no-save", env=emulated(hip_python))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "FAILED empty on one-expert: 0 mismatches, 65,536 unwritten" in r.stderr


def test_bench_runs_the_real_shim(hip_python: HipPython, tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    r = hip_python.wgrad("bench", "--config", smoke_config(), "--target", "gfx950", "--shape", "one-expert",
                         "--min-samples", "3", "--min-time", "0", "--timeout", "0.5",
                         "--warmup", "1", "--json", out)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    records = json.loads(out.read_text())["records"]
    assert [(rec["kernel"], rec["grid"]) for rec in records] == [("empty", 1), ("reference", 256)]
    assert all(rec["clock_mhz"] is None and rec["power_w"] is None for rec in records)  # no amdsmi here


def test_a_refused_launch_is_one_line(hip_python: HipPython, tmp_path: Path) -> None:
    r = hip_python.wgrad("verify", "--config", smoke_config(), "--target", "gfx950", "--shape", "one-expert",
                         "--no-save", env={"WGRAD_STANDIN_LAUNCH_ERROR": "719"})
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert ("hipModuleLaunchKernel failed: hipErrorLaunchFailure (unspecified launch failure); "
            "the block may exceed the kernel's launch bounds") in r.stderr


@pytest.mark.parametrize("env, cause", [({}, "/dev/kfd"),
                                        ({"HIP_VISIBLE_DEVICES": ""}, "$HIP_VISIBLE_DEVICES=''")])
def test_no_device_names_the_cause(hip_python: HipPython, env: dict[str, str], cause: str) -> None:
    r = hip_python.wgrad("verify", "--config", smoke_config(), "--target", "gfx950", "--no-save",
                         env={"WGRAD_STANDIN_DEVICES": "0", **env})
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    (line,) = [line for line in r.stderr.splitlines() if line.startswith("gfx950: ")]
    assert "hipErrorNoDevice" in line and cause in line


def test_library_not_on_the_path_says_where_to_put_it(hip_python: HipPython, tmp_path: Path) -> None:
    """The other hip-python line's way of finding the library: 7.x ignores ROCM_PATH,
    10.x is told to use it."""
    wrong = ({"ROCM_PATH": str(hip_python.standin)} if hip_python.version.startswith("7.")
             else {"ROCM_HOME": str(tmp_path)})
    r = hip_python.wgrad("verify", "--config", smoke_config(), "--target", "gfx950", "--no-save", finds=wrong)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    line = next(line for line in r.stderr.splitlines() if line.startswith("gfx950: "))
    assert ("hip-python found no libamdhip64.so; install ROCm 7" in line
            and "cannot open shared object file" in line)
    assert ("LD_LIBRARY_PATH" if hip_python.version.startswith("7.") else "set ROCM_PATH") in line


def test_a_library_the_runtime_needs_is_named(hip_python: HipPython, tmp_path: Path) -> None:
    broken = compile_standin(tmp_path / "rocm", needs="libhsa-runtime64.so.1")
    finds = ({"LD_LIBRARY_PATH": str(broken / "lib")} if hip_python.version.startswith("7.")
             else {"ROCM_HOME": str(broken)})
    r = hip_python.wgrad("verify", "--config", smoke_config(), "--target", "gfx950", "--no-save", finds=finds)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    line = next(line for line in r.stderr.splitlines() if line.startswith("gfx950: "))
    assert "could not load libamdhip64.so: libhsa-runtime64.so.1, which it needs, is not found" in line


def test_a_kernel_that_aborts_the_process_costs_its_rows_only(hip_python: HipPython, tmp_path: Path) -> None:
    """HIP calls abort() on a GPU memory fault. Each (kernel, shape) runs in a process of its own: the crash
    is one line naming kernel, shape and signal, exit status 4, and every other row is saved."""
    out = tmp_path / "v.json"
    r = hip_python.wgrad("verify", "--config", smoke_config(), "--target", "gfx950", "--kernel", "reference",
                         "--kernel", "empty", "--shape", "one-expert", "--shape", "gaps", "--json", out,
                         env={"WGRAD_STANDIN_ABORT": "wgrad_empty_kernel"})
    assert r.returncode == 4 and "Traceback" not in r.stderr, r.stderr
    assert "Memory access fault by GPU node-2" in r.stderr  # HIP's own message reaches the user
    crashed = [line for line in r.stderr.splitlines() if line.startswith("CRASHED ")]
    assert [line.split(" crashed the process running it ")[0] for line in crashed] == [
        "CRASHED empty on one-expert", "CRASHED empty on gaps"]
    assert all("(SIGABRT)" in line for line in crashed) and "0/4 shapes passed" in r.stderr
    doc = json.loads(out.read_text())
    assert [rec["kernel"] for rec in doc["records"]] == ["reference"] * 2 and len(doc["crashed"]) == 2


def test_bench_keeps_the_rows_of_the_kernels_that_did_not_crash(hip_python: HipPython,
                                                                tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    r = hip_python.wgrad("bench", "--config", smoke_config(), "--target", "gfx950", "--kernel", "reference",
                         "--kernel", "empty", "--shape", "one-expert", "--min-samples", "3",
                         "--min-time", "0", "--timeout", "0.5", "--warmup", "1", "--json", out,
                         env={"WGRAD_STANDIN_ABORT": "grouped_mxfp8_wgrad_kernel"})
    assert r.returncode == 4 and "Traceback" not in r.stderr, r.stderr
    assert "reference on one-expert crashed the process running it (SIGABRT)" in r.stderr
    doc = json.loads(out.read_text())
    assert [(rec["kernel"], rec["shape"]["name"]) for rec in doc["records"]] == [
        ("empty", "calibration"), ("empty", "one-expert")]
    assert doc["incomplete"].startswith("reference on one-expert crashed")
