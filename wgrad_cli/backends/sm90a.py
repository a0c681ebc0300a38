"""sm_90a (NVIDIA Hopper): nvcc, cubins, CUDA through cuda-bindings' driver API.

Its compilers, in order: an explicit --nvcc / $WGRAD_NVCC, then $CUDA_HOME/bin/nvcc, nvcc on PATH,
/usr/local/cuda/bin/nvcc.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

from wgrad_cli.backends.base import Backend
from wgrad_cli.compile import cubin
from wgrad_cli.compile.codeobject import Param
from wgrad_cli.compile.compilers import Candidate, Compiler, run_version
from wgrad_cli.compile.resources import Resources
from wgrad_cli.config.targets import TARGETS
from wgrad_cli.device.backend import GridLimit
from wgrad_cli.device.runtime import DeviceInfo
from wgrad_cli.results.records import Peak

DATASHEET = {  # name fragment (first match wins) -> (fp8, bf16 TFLOP/s, HBM GB/s): NVIDIA datasheets, dense
    "H200 NVL": (1671.0, 835.0, 4800.0),
    "H200": (1979.0, 989.0, 4800.0),
    "H100 80GB HBM3": (1979.0, 989.0, 3350.0),
}


def candidates(nvcc: str | None) -> Iterator[Candidate]:
    """Every sm_90a compiler looked for, in the order they are preferred (lazily)."""
    places = []
    if nvcc or os.environ.get("WGRAD_NVCC"):
        places.append(("--nvcc" if nvcc else "$WGRAD_NVCC", nvcc or os.environ["WGRAD_NVCC"]))
    if os.environ.get("CUDA_HOME"):
        places.append(("$CUDA_HOME/bin/nvcc", f"{os.environ['CUDA_HOME']}/bin/nvcc"))
    places += [("nvcc on PATH", "nvcc"), ("/usr/local/cuda/bin/nvcc", "/usr/local/cuda/bin/nvcc")]
    for name, place in places:
        path = shutil.which(place)
        text = run_version((path,)) if path else None
        m = re.search(r"release (\d+\.\d+), V(\S+)", text or "")
        if not path:
            yield Candidate(name, None, "not found")
        elif not m or not text:
            yield Candidate(name, None, f"{path} did not report an nvcc version")
        elif int(m.group(1).split(".")[0]) < 12:
            yield Candidate(name, None, f"nvcc {m.group(2)} is older than 12.0 (no sm_90a)")
        else:
            yield Candidate(name, Compiler("nvcc", (path,), m.group(2),
                                           f"{os.path.realpath(path)}\n{text.strip()}", found_by=name))


class Sm90a(Backend):
    vendor = "nvidia"
    compiler_option, compiler_field, compiler_variable = "--nvcc", "nvcc", "WGRAD_NVCC"
    install_hint = "install the CUDA toolkit >= 12 (nvcc), or pass --nvcc PATH"
    isa_suffix = ".ptx"
    shared_limit = TARGETS["sm_90a"].shared_limit
    grid = GridLimit("blocks", 2**31 - 1, False)
    runtime_module, runtime_packages = "wgrad_cli.device.cuda", "cuda-bindings nvidia-ml-py"
    torch_baselines = True

    def candidates(self, named: str | None, rocm_path: str | None, shim_dir: Path) -> Iterator[Candidate]:
        return candidates(named)

    def compile_argv(self, compiler: Compiler, source: Path, output: Path, depfile: Path,
                     defines: dict[str, int], includes: tuple[Path, ...], flags: tuple[str, ...],
                     isa: bool = False) -> list[str]:
        common = [*flags, *(f"-D{k}={v}" for k, v in defines.items()), *(f"-I{d}" for d in includes)]
        mode = ["-ptx"] if isa else ["-cubin", "--resource-usage", "-MD", "-MF", str(depfile)]
        return [*compiler.argv0, "-arch=sm_90a", *mode, "-x", "cu", *common, str(source), "-o", str(output)]

    def disassemble_argv(self, compiler: Compiler, code_object: Path) -> list[str] | None:
        """cuobjdump's SASS, where it is installed (PTX from compile_argv(isa=True) otherwise)."""
        beside = Path(os.path.realpath(compiler.argv0[0])).with_name("cuobjdump")
        found = shutil.which("cuobjdump") or (str(beside) if beside.exists() else None)
        return [found, "-sass", str(code_object)] if found else None

    def kernel_params(self, data: bytes, base: str) -> tuple[str, list[Param]]:
        return cubin.kernel_params(data, base)

    def resources(self, data: bytes, build_log: str, base: str, block: int, dynamic_shared: int) -> Resources:
        return cubin.resources(data, build_log, base, block, dynamic_shared)

    def peak(self, device: DeviceInfo) -> Peak | None:
        """From NVIDIA's datasheet for the part: its boost clock is not the clock the
        datasheet figures use."""
        for fragment, (fp8, bf16, hbm) in DATASHEET.items():
            if fragment in device.name:
                return Peak(fp8, "FP8", bf16, hbm, device.l2_bytes, f"NVIDIA {fragment} datasheet")
        return None
