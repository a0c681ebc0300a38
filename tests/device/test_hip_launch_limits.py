"""Before a gfx950 launch: the block against the kernel's launch bounds and the LDS against the CU's,
from the code object's metadata, since HIP refuses such launches with codes that do not say why."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hostdevice import HostDevice

from wgrad_cli.backends.registry import BACKENDS, backend
from wgrad_cli.backends import gfx950
from wgrad_cli.compile.cache import Cache
from wgrad_cli.compile.compilers import Compiler
from wgrad_cli.compile.hsaco import metadata as amd_metadata
from wgrad_cli.compile.jobs import BuildJob, run_builds
from wgrad_cli.compile.toolchain import Toolchains
from wgrad_cli.config.kernelspec import KernelSpec, load_specs
from wgrad_cli.config.targets import TARGETS
from wgrad_cli.device.launch import prepare
from wgrad_cli.errors import ConfigError, WgradError
from wgrad_cli.problem.abi import Dims

DIMS = Dims(128, 256, 256, 1)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, amd_compiler: Compiler) -> tuple[KernelSpec, Path]:
    spec = load_specs()["reference"]
    cache = Cache(tmp_path_factory.mktemp("cache"))
    (result,) = run_builds([BuildJob(spec, "gfx950", DIMS)], Toolchains(cache.root / "zig-shim", BACKENDS),
                           cache, {}, 1)
    assert result.ok and result.code_object, result.errors
    return spec, result.code_object


def test_the_reference_kernels_launch_bounds_reach_the_gfx950_build(
        reference: tuple[KernelSpec, Path]) -> None:
    spec, code_object = reference
    (kernel,) = amd_metadata(code_object.read_bytes())["amdhsa.kernels"]
    assert kernel[".max_flat_workgroup_size"] == spec.block == 256


def test_a_block_above_the_launch_bounds_is_refused(reference: tuple[KernelSpec, Path]) -> None:
    spec, code_object = reference
    with pytest.raises(WgradError) as exc:
        prepare(HostDevice(), code_object, TARGETS["gfx950"], backend(TARGETS["gfx950"]),
                replace(spec, block=512), DIMS, [0] * 6)
    (line,) = exc.value.lines
    assert line.startswith("reference: launch.block 512 is above the kernel's .max_flat_workgroup_size 256")


def test_lds_beyond_the_cu_is_refused(reference: tuple[KernelSpec, Path]) -> None:
    spec, code_object = reference
    with pytest.raises(WgradError) as exc:
        prepare(HostDevice(), code_object, TARGETS["gfx950"], backend(TARGETS["gfx950"]),
                replace(spec, dynamic_shared=161 * 1024), DIMS, [0] * 6)
    (line,) = exc.value.lines
    assert line == ("reference: 0 bytes of static LDS plus 164864 dynamic is above the 163840 a gfx950 "
                    "workgroup can have; lower launch.dynamic_shared or the kernel's LDS")


def test_a_spec_asking_more_lds_than_gfx950_has_is_refused(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "k.yaml").write_text("name: k\nsource: k.cu\nsymbol: k\nlaunch: {tile: [256, 256], block: "
                                     "256, dynamic_shared: 200000}\ntargets: {gfx950: {flags: []}, sm_90a: "
                                     "{flags: []}}\n")
    with pytest.raises(ConfigError) as exc:
        load_specs(tmp_path)
    (line,) = exc.value.lines
    assert "launch.dynamic_shared: 200000 bytes is more than a gfx950 workgroup can have" in line
    assert "at most 163840 for gfx950" in line


def test_a_stock_rocm_install_is_found_without_rocm_path(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """ROCm in /opt/rocm, neither $ROCM_PATH nor its bin on PATH: its hipcc and clang are still candidates,
    after the ones that are named and before any other clang."""
    monkeypatch.delenv("ROCM_PATH", raising=False)
    monkeypatch.delenv("WGRAD_HIP_CC", raising=False)
    rocm = tmp_path / "rocm"
    (rocm / "llvm" / "bin").mkdir(parents=True)
    for tool in ("clang", "ld.lld"):  # a clang that reports ROCm's version, and its linker beside it
        (rocm / "llvm" / "bin" / tool).write_text("#!/bin/sh\necho 'AMD clang version 20.0.0git "
                                                  "(roc-7.1.0)'\n")
        (rocm / "llvm" / "bin" / tool).chmod(0o755)
    monkeypatch.setattr(gfx950, "DEFAULT_ROCM", str(rocm))
    found = [c for c in gfx950.candidates(None, None, tmp_path / "shim")]
    names = [c.name for c in found]
    assert names.index(f"{rocm}/bin/hipcc") == names.index("hipcc on PATH") + 1
    stock = found[names.index(f"{rocm}/llvm/bin/clang")]
    assert stock.compiler is not None and stock.compiler.rocm_path == str(rocm) and stock.compiler.hip_headers
