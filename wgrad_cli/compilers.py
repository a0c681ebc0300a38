"""Compilers: how each is found and run, one place per vendor.

gfx950, in order: an explicit --hip-cc / $WGRAD_HIP_CC; hipcc ($ROCM_PATH/bin, then PATH);
ROCm's own clang ($ROCM_PATH/llvm/bin/clang); without $ROCM_PATH, /opt/rocm's hipcc and clang; any clang >= 20 whose ld.lld is found (Debian's
clang-22 + lld-22); the clang inside PyPI's `ziglang`. sm_90a: an explicit --nvcc / $WGRAD_NVCC,
then $CUDA_HOME/bin/nvcc, nvcc on PATH, /usr/local/cuda/bin/nvcc.
Every candidate that cannot be used is kept with the reason, for `wgrad info`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path


MIN_CLANG = 20
DEFAULT_ROCM = "/opt/rocm"  # where ROCm installs when nothing says otherwise


@dataclass(frozen=True)
class Compiler:
    kind: str  # hipcc | clang | zig | nvcc
    argv0: tuple[str, ...]  # how to run it (zig's clang is `python -m ziglang clang`)
    version: str
    identity: str  # everything the compiler says about itself: part of every cache key
    rocm_path: str | None = None  # where HIP headers come from (hipcc finds its own)
    found_by: str = ""

    @property
    def hip_headers(self) -> bool:
        return self.kind == "hipcc" or self.rocm_path is not None

    def compile_argv(self, target: str, source: Path, output: Path, depfile: Path, defines: dict[str, int],
                     includes: tuple[Path, ...], flags: tuple[str, ...], isa: bool = False) -> list[str]:
        """The full command that builds `source` into `output` (assembly text when `isa`)."""
        common = [*flags, *(f"-D{k}={v}" for k, v in defines.items()), *(f"-I{d}" for d in includes)]
        if self.kind == "nvcc":
            mode = ["-ptx"] if isa else ["-cubin", "--resource-usage", "-MD", "-MF", str(depfile)]
            return [*self.argv0, f"-arch={target}", *mode, "-x", "cu", *common, str(source), "-o", str(output)]
        hip = ["-x", "hip", f"--offload-arch={target}", "--offload-device-only", "--no-gpu-bundle-output"]
        if self.kind != "hipcc":
            hip += [f"--rocm-path={self.rocm_path}"] if self.rocm_path else ["-nogpuinc", "-nogpulib"]
        deps = ["-Xclang", "-dependency-file", "-Xclang", str(depfile), "-Xclang", "-MT", "-Xclang", "out",
                "-Xclang", "-sys-header-deps"]
        return [*self.argv0, *hip, *common, *deps, "-S" if isa else "-c", str(source), "-o", str(output)]

    def disassemble_argv(self, code_object: Path) -> list[str] | None:
        """A command printing the machine code (SASS) of a cubin, when cuobjdump is installed.

        Without it (and always for AMD, where `-S` is exact) the ISA comes from `compile_argv(isa=True)`:
        gfx950 assembly, or PTX for NVIDIA.
        """
        if self.kind != "nvcc":
            return None
        beside = Path(os.path.realpath(self.argv0[0])).with_name("cuobjdump")
        found = shutil.which("cuobjdump") or (str(beside) if beside.exists() else None)
        return [found, "-sass", str(code_object)] if found else None


@dataclass(frozen=True)
class Candidate:
    name: str  # how it was looked for
    compiler: Compiler | None
    reason: str = ""  # why it cannot be used


@cache
def _run_version(argv: tuple[str, ...]) -> str | None:
    try:
        out = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout + out.stderr if out.returncode == 0 else None


def _clang_version(argv: tuple[str, ...]) -> tuple[int, str, str] | None:
    text = _run_version(argv)
    m = re.search(r"clang version (\d+)\.(\S+)", text or "")
    return (int(m.group(1)), f"{m.group(1)}.{m.group(2)}", text.strip()) if m and text else None


def _clang(name: str, path: str | None, kind: str = "clang", rocm_path: str | None = None,
           extra: tuple[str, ...] = ()) -> Candidate:
    if not path:
        return Candidate(name, None, "not found")
    argv = (path, *extra)
    found = _clang_version(argv)
    if not found:
        return Candidate(name, None, f"{path} did not report a clang version")
    major, version, identity = found
    if kind != "hipcc" and major < MIN_CLANG:
        return Candidate(name, None, f"clang {version} is older than {MIN_CLANG} (no gfx950)")
    if kind == "clang" and not _lld_for(path):
        return Candidate(name, None, f"clang {version} at {path} has no ld.lld beside it or on PATH "
                                     f"(Debian: apt-get install lld-{major})")
    realpath = os.path.realpath(path)
    return Candidate(name, Compiler(kind, argv, version, f"{realpath}\n{identity}", rocm_path, name))


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


def amd_candidates(hip_cc: str | None, rocm_path: str | None, shim_dir: Path) -> Iterator[Candidate]:
    """Every gfx950 compiler looked for, in the order they are preferred (lazily: each may run --version)."""
    explicit = hip_cc or os.environ.get("WGRAD_HIP_CC")
    if explicit:
        path = shutil.which(explicit)
        kind = "hipcc" if Path(explicit).name.startswith("hipcc") else "clang"
        where = "--hip-cc" if hip_cc else "$WGRAD_HIP_CC"
        yield _clang(f"{where} {explicit}", path, kind, rocm_path) if path else Candidate(where, None, f"{explicit} not found")
    rocm = rocm_path or os.environ.get("ROCM_PATH")
    if rocm:
        yield _clang("$ROCM_PATH/bin/hipcc", shutil.which(f"{rocm}/bin/hipcc"), "hipcc")
    yield _clang("hipcc on PATH", shutil.which("hipcc"), "hipcc")
    if rocm:
        yield _clang("$ROCM_PATH/llvm/bin/clang", shutil.which(f"{rocm}/llvm/bin/clang"), "clang", rocm)
    else:  # a stock ROCm install, neither named nor on PATH
        yield _clang(f"{DEFAULT_ROCM}/bin/hipcc", shutil.which(f"{DEFAULT_ROCM}/bin/hipcc"), "hipcc")
        yield _clang(f"{DEFAULT_ROCM}/llvm/bin/clang", shutil.which(f"{DEFAULT_ROCM}/llvm/bin/clang"), "clang",
                     DEFAULT_ROCM)
    names = [f"clang-{v}" for v in range(30, MIN_CLANG - 1, -1)] + ["clang"]
    for name in [n for n in names if shutil.which(n)] or ["clang"]:
        yield _clang(f"{name} on PATH", shutil.which(name), "clang", rocm_path)
    yield _zig_candidate(shim_dir)


def nvidia_candidates(nvcc: str | None) -> Iterator[Candidate]:
    """Every sm_90a compiler looked for, in the order they are preferred (lazily)."""
    places = []
    if nvcc or os.environ.get("WGRAD_NVCC"):
        places.append(("--nvcc" if nvcc else "$WGRAD_NVCC", nvcc or os.environ["WGRAD_NVCC"]))
    if os.environ.get("CUDA_HOME"):
        places.append(("$CUDA_HOME/bin/nvcc", f"{os.environ['CUDA_HOME']}/bin/nvcc"))
    places += [("nvcc on PATH", "nvcc"), ("/usr/local/cuda/bin/nvcc", "/usr/local/cuda/bin/nvcc")]
    for name, place in places:
        path = shutil.which(place)
        text = _run_version((path,)) if path else None
        m = re.search(r"release (\d+\.\d+), V(\S+)", text or "")
        if not path:
            yield Candidate(name, None, "not found")
        elif not m or not text:
            yield Candidate(name, None, f"{path} did not report an nvcc version")
        elif int(m.group(1).split(".")[0]) < 12:
            yield Candidate(name, None, f"nvcc {m.group(2)} is older than 12.0 (no sm_90a)")
        else:
            yield Candidate(name, Compiler("nvcc", (path,), m.group(2), f"{os.path.realpath(path)}\n{text.strip()}",
                                           found_by=name))
