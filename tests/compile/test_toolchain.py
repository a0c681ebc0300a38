"""Compiler discovery and command lines. The fake compilers here are test doubles for the one
boundary this machine cannot show: clang versions and ROCm installs that are not installed."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from wgrad_cli.backends.gfx950 import candidates as amd_candidates
from wgrad_cli.backends.registry import BACKENDS, backend
from wgrad_cli.backends.sm90a import candidates as nvidia_candidates
from wgrad_cli.compile.cache import Cache
from wgrad_cli.compile.compilers import Compiler
from wgrad_cli.compile.jobs import BuildJob, build_one
from wgrad_cli.compile.toolchain import Toolchains
from wgrad_cli.config.kernelspec import KernelSpec
from wgrad_cli.errors import ToolchainError
from wgrad_cli.problem.abi import Dims


def fake_clang(directory: Path, name: str, version: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!/bin/sh\necho 'clang version {version}'\n")
    path.chmod(0o755)
    return path


def test_debian_clang_and_nvcc_found(amd_compiler: Compiler, nvcc: Compiler) -> None:
    assert amd_compiler.kind in ("clang", "hipcc", "zig") and int(amd_compiler.version.split(".")[0]) >= 20
    assert nvcc.kind == "nvcc" and nvcc.version.startswith(("12.", "13."))


def test_old_clang_is_skipped_with_reason(tmp_path: Path) -> None:
    old = fake_clang(tmp_path / "bin", "clang-19", "19.1.7")
    (found,) = [c for c in amd_candidates(str(old), None, tmp_path / "shim") if c.name.startswith("--hip-cc")]
    assert found.compiler is None and found.reason == "clang 19.1.7 is older than 20 (no gfx950)"


def test_clang_without_lld_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    new = fake_clang(tmp_path / "bin", "clang-25", "25.0.0")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    (found, *_) = amd_candidates(str(new), None, tmp_path / "shim")
    assert found.compiler is None and "has no ld.lld" in found.reason and "lld-25" in found.reason


def test_missing_explicit_compiler(tmp_path: Path) -> None:
    (found, *_) = amd_candidates("/no/such/clang", None, tmp_path)
    assert found.compiler is None and found.reason == "/no/such/clang not found"
    (nv, *_) = nvidia_candidates("/no/such/nvcc")
    assert nv.compiler is None and nv.reason == "not found"


def test_no_compiler_at_all_says_how_to_get_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    for var in ("ROCM_PATH", "CUDA_HOME", "WGRAD_HIP_CC", "WGRAD_NVCC"):
        monkeypatch.delenv(var, raising=False)
    if importlib.util.find_spec("ziglang"):  # the last resort is installed here: it must be what is chosen
        assert Toolchains(tmp_path / "shim", BACKENDS).select("gfx950", False).kind == "zig"
        monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)  # stands in for "not installed"
    with pytest.raises(ToolchainError, match="gfx950: no usable compiler.*apt-get install clang-22 lld-22"):
        Toolchains(tmp_path / "shim", BACKENDS).select("gfx950", False)
    if not Path("/usr/local/cuda/bin/nvcc").exists():
        with pytest.raises(ToolchainError, match="sm_90a: no usable compiler.*CUDA toolkit"):
            Toolchains(tmp_path / "shim", BACKENDS).select("sm_90a", False)


def test_hip_headers_needed_but_missing(amd_compiler: Compiler, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCM_PATH", raising=False)
    if amd_compiler.hip_headers:
        pytest.skip("this machine has ROCm")
    with pytest.raises(ToolchainError) as exc:
        Toolchains(tmp_path / "shim", BACKENDS).select("gfx950", True)
    assert "includes the ROCm 7 HIP headers" in str(exc.value) and "--rocm-path" in str(exc.value)


def test_rocm_path_gives_clang_hip_headers(amd_compiler: Compiler, tmp_path: Path) -> None:
    if amd_compiler.kind != "clang":
        pytest.skip("needs a plain clang")
    rocm = str(tmp_path / "rocm")
    compiler = Toolchains(tmp_path / "shim", BACKENDS, hip_cc=amd_compiler.argv0[0],
                          rocm_path=rocm).select("gfx950", True)
    argv = backend("gfx950").compile_argv(compiler, Path("k.cpp"), Path("k.hsaco"), Path("k.d"),
                                          {"WGRAD_M": 128}, (), ("-O3",))
    assert f"--rocm-path={rocm}" in argv and "-nogpuinc" not in argv


def test_command_lines(amd_compiler: Compiler, nvcc: Compiler) -> None:
    defines = {"WGRAD_M": 256, "WGRAD_N": 512}
    amd = backend("gfx950").compile_argv(amd_compiler, Path("s.cu"), Path("o.hsaco"), Path("o.d"), defines,
                                         (Path("/inc"),), ("-O3",))
    assert {"--offload-arch=gfx950", "--offload-device-only", "-DWGRAD_M=256", "-DWGRAD_N=512", "-I/inc",
            "-O3"} <= set(amd)
    assert amd[-4:] == ["-c", "s.cu", "-o", "o.hsaco"]
    nv = backend("sm_90a").compile_argv(nvcc, Path("s.cu"), Path("o.cubin"), Path("o.d"), defines, (),
                                        ("-O3",))
    assert {"-arch=sm_90a", "-cubin", "--resource-usage", "-DWGRAD_M=256"} <= set(nv) \
        and nv[-3:] == ["s.cu", "-o", "o.cubin"]


def test_ziglang_clang_builds_gfx950(tmp_path: Path, specs: dict[str, KernelSpec]) -> None:
    pytest.importorskip("ziglang", reason="pip install ziglang to test the ziglang route")
    (zig,) = [c for c in amd_candidates(None, None, tmp_path / "shim") if c.name == "ziglang (PyPI)"]
    assert zig.compiler is not None, zig.reason
    assert os.access(tmp_path / "shim" / "lld", os.X_OK)
    r = build_one(BuildJob(specs["reference"], "gfx950", Dims(256, 256, 256, 1)), BACKENDS["gfx950"],
                  zig.compiler, Cache(tmp_path / "c"), {}, None)
    assert r.ok and r.resources and r.resources.spills == 0, r.errors
