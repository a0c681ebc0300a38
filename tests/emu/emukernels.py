"""Shared helpers of the emulator tests: compile a small header-free HIP kernel for gfx950, list
its instructions with LLVM's disassembler, and run it on the emulated device.

Expected values in the tests are derived in numpy from the ISA text, never from the emulator's
own helpers, so a wrong semantic fails a test.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from wgrad_cli.codeobject import amd_metadata, amd_params
from wgrad_cli.emu.device import EmuRuntime
from wgrad_cli.kernargs import pack

CLANG, OBJDUMP = "clang-22", "llvm-objdump-22"
PRELUDE = """
#define KERNEL extern "C" __attribute__((global)) __attribute__((launch_bounds(256)))
#define DEVICE __attribute__((device))
#define SHARED __attribute__((shared))
#define tid() __builtin_amdgcn_workitem_id_x()
#define gid() __builtin_amdgcn_workgroup_id_x()
"""
_CACHE = Path(tempfile.gettempdir()) / "wgrad-emu-test-kernels"
# A kernel with an instruction the emulator does not implement: v_sin_f32, the hardware's own
# approximation of sin(2 pi x), which the ISA text does not define to the bit.
UNSUPPORTED = "KERNEL void sine(float *out, const float *a) { unsigned i = tid(); out[i] = __builtin_amdgcn_sinf(a[i]); }"
UNSUPPORTED_MNEMONIC = "v_sin_f32_e32"


def need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (apt-get install {'clang-22 lld-22' if tool == CLANG else 'llvm-22'})")


def compile_hip(source: str, flags: tuple[str, ...] = ("-O3",)) -> bytes:
    """A gfx950 code object of `source` (after PRELUDE), cached by content across test runs."""
    need(CLANG)
    text = PRELUDE + source
    key = hashlib.sha256((text + " ".join(flags)).encode()).hexdigest()[:20]
    out = _CACHE / f"{key}.hsaco"
    if not out.exists():
        _CACHE.mkdir(parents=True, exist_ok=True)
        src = _CACHE / f"{key}.hip"
        src.write_text(text)
        tmp = out.with_suffix(".tmp")
        subprocess.run([CLANG, "-x", "hip", "--offload-arch=gfx950", "--offload-device-only", "--no-gpu-bundle-output",
                        "-nogpuinc", "-nogpulib", *flags, "-c", str(src), "-o", str(tmp)], check=True)
        tmp.replace(out)
    return out.read_bytes()


def listing(image: bytes) -> str:
    """LLVM's disassembly of the image's .text."""
    need(OBJDUMP)
    with tempfile.NamedTemporaryFile(suffix=".hsaco") as f:
        f.write(image)
        f.flush()
        return subprocess.run([OBJDUMP, "-d", "--mcpu=gfx950", f.name], check=True, capture_output=True,
                              text=True).stdout


def disassemble(image: bytes) -> list[tuple[int, str, int]]:
    """(offset, mnemonic, length in bytes) of every instruction LLVM finds in the image's .text."""
    text = listing(image)
    insts = []
    for m in re.finditer(r"^\s+(\S+)(?:\s[^\n]*?)?\s*//\s*([0-9A-F]+):((?:\s[0-9A-F]{8})+)(?:\s+<[^>]*>)?\s*$", text, re.M):
        insts.append((int(m.group(2), 16), m.group(1), 4 * len(m.group(3).split())))
    return insts


def mnemonics(image: bytes) -> set[str]:
    return {name for _, name, _ in disassemble(image)}


def assert_uses(image: bytes, *patterns: str) -> None:
    """Each regex matches a mnemonic of the kernel: the test exercises what it claims."""
    names = mnemonics(image)
    for p in patterns:
        assert any(re.fullmatch(p, n) for n in names), f"no instruction matches {p}; the kernel has {sorted(names)}"


def symbol_of(image: bytes) -> str:
    kernels = amd_metadata(image)["amdhsa.kernels"]
    assert len(kernels) == 1
    name: str = kernels[0][".name"]
    return name


def run(image: bytes, args: list[np.ndarray | int], grid: int = 1, block: int = 64, dynamic_lds: int = 0,
        rt: EmuRuntime | None = None, symbol: str | None = None) -> list[np.ndarray]:
    """Launch the image's kernel `symbol` (by default its one kernel) with `args` (arrays become
    device buffers, ints pass by value); every array argument as the kernel left it, in order."""
    rt = rt or EmuRuntime(workers=1)
    symbol = symbol or symbol_of(image)
    params = amd_params(next(k for k in amd_metadata(image)["amdhsa.kernels"] if k[".name"] == symbol))
    values, buffers = [], []
    for a in args:
        if isinstance(a, np.ndarray):
            a = np.ascontiguousarray(a)
            ptr = rt.alloc(a.nbytes)
            rt.copy_in(ptr, a.ctypes.data, a.nbytes)
            buffers.append((ptr, a.copy()))
            values.append(ptr)
        else:
            values.append(int(a) & ((1 << 64) - 1))
    kernargs = pack(params, [v & ((1 << (8 * p.size)) - 1) for p, v in zip(params, values)])
    rt.launch(rt.load(image, symbol, dynamic_lds), grid, block, dynamic_lds, kernargs.address)
    for ptr, host in buffers:
        rt.copy_out(host.ctypes.data, ptr, host.nbytes)
    return [host for _, host in buffers]


def tiny_config(directory: Path) -> Path:
    """A one-shape gfx950 config the emulator checks in seconds: two experts, the second empty."""
    path = directory / "tiny.yaml"
    path.write_text("description: one tiny shape for emulator tests\nseed: 3\nkernels: [reference]\ntargets: [gfx950]\n"
                    "shapes:\n  - {name: tiny, M: 256, N: 256, K: 256, E: 2, offsets: [0, 256, 256]}\n")
    return path
