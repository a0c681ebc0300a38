"""gfx950 (AMD Instinct MI355X): clang or hipcc, HSA code objects, HIP through hip-python, and the
project's emulator for --device emu.

Its compilers, in order: an explicit --hip-cc / $WGRAD_HIP_CC; hipcc ($ROCM_PATH/bin, then PATH);
ROCm's own clang ($ROCM_PATH/llvm/bin/clang); without $ROCM_PATH, /opt/rocm's hipcc and clang; any
clang >= 20 whose ld.lld is found (Debian's clang-22 + lld-22); the clang inside PyPI's `ziglang`.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from wgrad_cli.backends.base import Backend
from wgrad_cli.backends.flush import MiB
from wgrad_cli.compile import hsaco
from wgrad_cli.compile.codeobject import Param
from wgrad_cli.compile.compilers import Candidate, Compiler, clang_version
from wgrad_cli.compile.resources import Resources
from wgrad_cli.config.options import Device, Emulated
from wgrad_cli.config.targets import TARGETS
from wgrad_cli.device.backend import GridLimit
from wgrad_cli.device.runtime import DeviceInfo, Runtime
from wgrad_cli.results.records import Peak

MIN_CLANG = 20
DEFAULT_ROCM = "/opt/rocm"  # where ROCm installs when nothing says otherwise


def _clang(name: str, path: str | None, kind: str = "clang", rocm_path: str | None = None,
           extra: tuple[str, ...] = ()) -> Candidate:
    if not path:
        return Candidate(name, None, "not found")
    argv = (path, *extra)
    found = clang_version(argv)
    if not found:
        return Candidate(name, None, f"{path} did not report a clang version")
    major, version, identity = found
    if kind != "hipcc" and major < MIN_CLANG:
        return Candidate(name, None, f"clang {version} is older than {MIN_CLANG} (no gfx950)")
    if kind == "clang" and not _lld_for(path):
        return Candidate(name, None, f"clang {version} at {path} has no ld.lld beside it or on PATH "
                                     f"(Debian: apt-get install lld-{major})")
    realpath = os.path.realpath(path)
    return Candidate(name, Compiler(kind, argv, version, f"{realpath}\n{identity}", rocm_path, name,
                                    hip_headers=kind == "hipcc" or rocm_path is not None))


def _lld_for(clang: str) -> bool:
    real = Path(os.path.realpath(clang))
    return (real.parent / "ld.lld").exists() or shutil.which("ld.lld") is not None


def _zig_candidate(shim_dir: Path) -> Candidate:
    name = "ziglang (PyPI)"
    if importlib.util.find_spec("ziglang") is None:
        return Candidate(name, None, "not installed (pip install ziglang)")
    zig = Path(importlib.util.find_spec("ziglang").origin or "").parent / "zig"  # type: ignore[union-attr]
    # zig's clang runs `lld -flavor gnu ...` for the AMDGPU link: a two-line shim maps that to zig's ld.lld.
    shim = shim_dir / "lld"
    try:
        if not shim.exists():
            shim_dir.mkdir(parents=True, exist_ok=True)
            tmp = shim.with_suffix(f".{os.getpid()}")
            tmp.write_text(f'#!/bin/sh\n[ "$1" = -flavor ] && shift 2\nexec "{zig}" ld.lld "$@"\n')
            tmp.chmod(0o755)
            os.replace(tmp, shim)
    except OSError as exc:
        return Candidate(name, None, f"cannot write its lld shim in {shim_dir} ({exc.strerror})")
    return _clang(name, sys.executable, "zig", extra=("-m", "ziglang", "clang", f"-B{shim_dir}"))


def candidates(hip_cc: str | None, rocm_path: str | None, shim_dir: Path) -> Iterator[Candidate]:
    """Every gfx950 compiler looked for, in the order they are preferred (lazily: each may run --version)."""
    explicit = hip_cc or os.environ.get("WGRAD_HIP_CC")
    if explicit:
        path = shutil.which(explicit)
        kind = "hipcc" if Path(explicit).name.startswith("hipcc") else "clang"
        where = "--hip-cc" if hip_cc else "$WGRAD_HIP_CC"
        yield _clang(f"{where} {explicit}", path, kind,
                     rocm_path) if path else Candidate(where, None, f"{explicit} not found")
    rocm = rocm_path or os.environ.get("ROCM_PATH")
    if rocm:
        yield _clang("$ROCM_PATH/bin/hipcc", shutil.which(f"{rocm}/bin/hipcc"), "hipcc")
    yield _clang("hipcc on PATH", shutil.which("hipcc"), "hipcc")
    if rocm:
        yield _clang("$ROCM_PATH/llvm/bin/clang", shutil.which(f"{rocm}/llvm/bin/clang"), "clang", rocm)
    else:  # a stock ROCm install, neither named nor on PATH
        yield _clang(f"{DEFAULT_ROCM}/bin/hipcc", shutil.which(f"{DEFAULT_ROCM}/bin/hipcc"), "hipcc")
        yield _clang(f"{DEFAULT_ROCM}/llvm/bin/clang", shutil.which(f"{DEFAULT_ROCM}/llvm/bin/clang"),
                     "clang", DEFAULT_ROCM)
    names = [f"clang-{v}" for v in range(30, MIN_CLANG - 1, -1)] + ["clang"]
    for name in [n for n in names if shutil.which(n)] or ["clang"]:
        yield _clang(f"{name} on PATH", shutil.which(name), "clang", rocm_path)
    yield _zig_candidate(shim_dir)


class Gfx950(Backend):
    vendor = "amd"
    compiler_option, compiler_field, compiler_variable = "--hip-cc", "hip_cc", "WGRAD_HIP_CC"
    install_hint = "apt-get install clang-22 lld-22 (Debian), install ROCm (hipcc), or pip install ziglang"
    isa_suffix = ".s"
    shared_limit = TARGETS["gfx950"].shared_limit
    grid = GridLimit("work-items (grid x block)", 2**32 - 1, True)
    runtime_module, runtime_packages = "wgrad_cli.device.hip", "hip-python"
    torch_baselines = False  # torch's ROCm wheels bring their own HIP runtime (see docs/hip.md)
    emulated = True

    def candidates(self, named: str | None, rocm_path: str | None, shim_dir: Path) -> Iterator[Candidate]:
        return candidates(named, rocm_path, shim_dir)

    def compile_argv(self, compiler: Compiler, source: Path, output: Path, depfile: Path,
                     defines: dict[str, int], includes: tuple[Path, ...], flags: tuple[str, ...],
                     isa: bool = False) -> list[str]:
        common = [*flags, *(f"-D{k}={v}" for k, v in defines.items()), *(f"-I{d}" for d in includes)]
        hip = ["-x", "hip", "--offload-arch=gfx950", "--offload-device-only", "--no-gpu-bundle-output"]
        if compiler.kind != "hipcc":
            hip += [f"--rocm-path={compiler.rocm_path}"] if compiler.rocm_path else ["-nogpuinc", "-nogpulib"]
        deps = ["-Xclang", "-dependency-file", "-Xclang", str(depfile), "-Xclang", "-MT", "-Xclang", "out",
                "-Xclang", "-sys-header-deps"]
        return [*compiler.argv0, *hip, *common, *deps, "-S" if isa else "-c", str(source), "-o", str(output)]

    def kernel_params(self, data: bytes, base: str) -> tuple[str, list[Param]]:
        return hsaco.kernel_params(data, base)

    def resources(self, data: bytes, build_log: str, base: str, block: int, dynamic_shared: int) -> Resources:
        return hsaco.resources(data, base, block, dynamic_shared)

    def launch_problems(self, image: bytes, symbol: str, name: str, block: int,
                        dynamic_shared: int) -> list[str]:
        """The block and LDS against the code object's metadata: HIP refuses such launches with codes
        that do not say why (hipErrorLaunchFailure, hipErrorInvalidValue)."""
        kernel = next(k for k in hsaco.metadata(image)["amdhsa.kernels"] if k[".name"] == symbol)
        problems = []
        bound = kernel.get(".max_flat_workgroup_size")
        if bound is not None and block > bound:
            problems.append(f"{name}: launch.block {block} is above the kernel's .max_flat_workgroup_size "
                            f"{bound} (its launch bounds); lower launch.block, or raise the bound in the "
                            "source (__launch_bounds__, or amdgpu_flat_work_group_size without HIP headers)")
        static = kernel[".group_segment_fixed_size"]
        if static + dynamic_shared > self.shared_limit:
            problems.append(f"{name}: {static} bytes of static LDS plus {dynamic_shared} dynamic is above "
                            f"the {self.shared_limit} a gfx950 workgroup can have; lower "
                            "launch.dynamic_shared or the kernel's LDS")
        return problems

    def peak(self, device: DeviceInfo) -> Peak:
        """MXFP8 follows from the device: CUs x clock x 8192 FLOP per CU per clock (MI355X 256 x 2.4 GHz =
        5,033 TFLOP/s); HBM 8 TB/s; L2 plus the 256 MiB Infinity Cache."""
        mxfp8 = device.units * device.max_clock_mhz * 1e6 * 8192 / 1e12
        return Peak(mxfp8, "MXFP8", mxfp8 / 2, 8000.0, 256 * MiB + 32 * MiB,
                    f"{device.units} CU x {device.max_clock_mhz} MHz x 8192 FLOP/clk")

    def open_runtime(self, device: Device) -> Runtime:
        if isinstance(device, Emulated):
            from wgrad_cli.emu.device import EmuRuntime

            return EmuRuntime(strict_lds=device.strict_lds, stack_bytes=device.stack_bytes,
                              timeout=device.kernel_timeout, register_fill=device.register_fill,
                              sanitize=device.sanitize)
        return super().open_runtime(device)
