"""Shared helpers of the emulator tests: compile a small header-free HIP kernel for gfx950, list
its instructions with LLVM's disassembler, and run it on the emulated device.

Expected values in the tests are derived in numpy from the ISA text, never from the emulator's
own helpers, so a wrong semantic fails a test.
"""

from __future__ import annotations

import functools
import hashlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from wgrad_cli.backends.registry import BACKENDS, backend
from wgrad_cli.compile.compilers import Compiler
from wgrad_cli.compile.hsaco import arguments as amd_params
from wgrad_cli.compile.hsaco import metadata as amd_metadata
from wgrad_cli.compile.toolchain import Toolchains
from wgrad_cli.device.kernargs import pack
from wgrad_cli.emu.device import EmuRuntime, Function
from wgrad_cli.errors import ToolchainError

CLANG = "a gfx950 compiler"  # need(CLANG): the one wgrad finds (clang 20+, ROCm, ziglang: `wgrad info`)
# LLVM's disassembler, the emulator's decoder is compared with: the newest installed
OBJDUMP = next((n for n in [*(f"llvm-objdump-{v}" for v in range(30, 19, -1)), "llvm-objdump"]
                if shutil.which(n)),
               "llvm-objdump")
PRELUDE = """
#define KERNEL extern "C" __attribute__((global)) __attribute__((launch_bounds(256)))
#define DEVICE __attribute__((device))
#define CONSTANT __attribute__((constant))
#define NOINLINE __attribute__((noinline))
#define SHARED __attribute__((shared))
#define tid() __builtin_amdgcn_workitem_id_x()
#define gid() __builtin_amdgcn_workgroup_id_x()
"""
_CACHE = Path(tempfile.gettempdir()) / "wgrad-emu-test-kernels"
# A kernel with an instruction the emulator does not implement: v_sin_f32, the hardware's own
# approximation of sin(2 pi x), which the ISA text does not define to the bit.
UNSUPPORTED = ("KERNEL void sine(float *out, const float *a) { unsigned i = tid(); out[i] = "
               "__builtin_amdgcn_sinf(a[i]); }")
UNSUPPORTED_MNEMONIC = "v_sin_f32_e32"


@functools.cache
def _compiler() -> Compiler | str:
    try:
        return Toolchains(_CACHE / "zig-shim", BACKENDS).select("gfx950", False)
    except ToolchainError as exc:
        return exc.lines[0]


def compiler() -> Compiler:
    """The gfx950 compiler wgrad itself uses; the test is skipped where there is none."""
    found = _compiler()
    if isinstance(found, str):
        pytest.skip(found)
    return found


def need(tool: str) -> None:
    """Skip unless `tool` is there: CLANG (wgrad's gfx950 compiler) or OBJDUMP."""
    if tool == CLANG:
        compiler()
    elif shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (Debian: apt-get install llvm-22)")


def _built(text: str, suffix: str, command: list[str]) -> Path:
    """`command` + [source, "-o", output] run once per content and command, cached across test runs."""
    key = hashlib.sha256((text + " ".join(command)).encode()).hexdigest()[:20]
    out = _CACHE / f"{key}{suffix}"
    if not out.exists():
        _CACHE.mkdir(parents=True, exist_ok=True)
        src = _CACHE / f"{key}.src"
        src.write_text(text)
        tmp = out.with_suffix(".tmp")
        subprocess.run([*command, str(src), "-o", str(tmp)], check=True)
        tmp.replace(out)
    return out


def compile_hip(source: str, flags: tuple[str, ...] = ("-O3",)) -> bytes:
    """A gfx950 code object of `source` (after PRELUDE), cached by content across test runs."""
    source_path, output = Path("source"), Path("output")
    argv = backend("gfx950").compile_argv(compiler(), source_path, output, _CACHE / "kernel.d", {}, (), flags)
    assert argv[-3:] == [str(source_path), "-o", str(output)]
    return _built(PRELUDE + source, ".hsaco", argv[:-3]).read_bytes()


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
    for m in re.finditer(r"^\s+(\S+)(?:\s[^\n]*?)?\s*//\s*([0-9A-F]+):((?:\s[0-9A-F]{8})+)"
                         r"(?:\s+<[^>]*>)?\s*$", text, re.M):
        insts.append((int(m.group(2), 16), m.group(1), 4 * len(m.group(3).split())))
    return insts


def mnemonics(image: bytes) -> set[str]:
    return {name for _, name, _ in disassemble(image)}


def assert_uses(image: bytes, *patterns: str) -> None:
    """Each regex matches a mnemonic of the kernel: the test exercises what it claims."""
    names = mnemonics(image)
    for p in patterns:
        assert any(re.fullmatch(p, n) for n in names), \
            f"no instruction matches {p}; the kernel has {sorted(names)}"


def symbol_of(image: bytes) -> str:
    kernels = amd_metadata(image)["amdhsa.kernels"]
    assert len(kernels) == 1
    name: str = kernels[0][".name"]
    return name


def run(image: bytes, args: list[np.ndarray | int], grid: int = 1, block: int = 64, dynamic_lds: int = 0,
        rt: EmuRuntime | None = None, function: Function | None = None,
        symbol: str | None = None) -> list[np.ndarray]:
    """Launch the image's kernel `symbol` (by default its one kernel; `function`, where it is loaded
    already, on `rt`) with `args` (arrays become device buffers, ints pass by value); every array
    argument as the kernel left it, in order."""
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
    rt.launch(function or rt.load(image, symbol, dynamic_lds), grid, block, dynamic_lds, kernargs.address)
    for ptr, host in buffers:
        rt.copy_out(host.ctypes.data, ptr, host.nbytes)
    return [host for _, host in buffers]


def tiny_config(directory: Path) -> Path:
    """A one-shape gfx950 config the emulator checks in seconds: two experts, the second empty."""
    path = directory / "tiny.yaml"
    path.write_text("description: one tiny shape for emulator tests\nseed: 3\nkernels: [reference]\n"
                    "targets: [gfx950]\n"
                    "shapes:\n  - {name: tiny, M: 256, N: 256, K: 256, E: 2, offsets: [0, 256, 256]}\n")
    return path


# The same C for both sides of a differential test: `body` defines `DEVICE unsigned compute(unsigned
# lane)` and the globals it uses; each lane's result and the named globals are compared afterwards.
HOST_PRELUDE = """
#include <stdio.h>
#include <string.h>
#define DEVICE
#define CONSTANT
#define NOINLINE __attribute__((noinline))
"""
LANES = 64


@dataclass(frozen=True)
class Outcome:
    """What a differential program left: each lane's `compute(lane)` and the named
    globals' bytes, in order."""

    lanes: np.ndarray
    globals: bytes


def host_outcome(body: str, flags: tuple[str, ...], inputs: dict[str, bytes],
                 dumps: tuple[str, ...]) -> Outcome:
    """`body` built for and run on this machine: `inputs` copied into their globals first (as the
    device side's copy_in does), then compute() of every lane in order, then the `dumps` globals."""
    setup = "".join(f"  {{ static const unsigned char b[] = {{{', '.join(map(str, data))}}};\n"
                    f"    static_assert(sizeof b == sizeof {name}, \"{name}\"); memcpy(&{name}, b, sizeof "
                    "b); }\n"
                    for name, data in inputs.items())
    dump = "".join(f"  fwrite(&{name}, sizeof {name}, 1, stdout);\n" for name in dumps)
    main = (f"int main(void) {{\n{setup}  for (unsigned l = 0; l < {LANES}u; ++l) {{ unsigned r = "
            f"compute(l); fwrite(&r, 4, 1, stdout); }}\n{dump}  return 0;\n}}\n")
    exe = _built(HOST_PRELUDE + body + main, ".exe", [*compiler().argv0, "-x", "c++", *flags])
    out = subprocess.run([str(exe)], check=True, capture_output=True).stdout
    return Outcome(np.frombuffer(out[: 4 * LANES], dtype=np.uint32), out[4 * LANES:])


def device_outcome(body: str, flags: tuple[str, ...], inputs: dict[str, bytes], dumps: tuple[str, ...]
                   ) -> tuple[Outcome, bytes]:
    """`body` as a one-wave gfx950 kernel on the emulator, `inputs` copied into its globals first
    (found by name, as hipModuleGetGlobal finds them); the outcome, and the code object."""
    image = compile_hip(body + "KERNEL void entry(unsigned *out) { out[tid()] = compute(tid()); }\n", flags)
    rt = EmuRuntime(workers=1)
    function = rt.load(image, "entry", 0)
    assert isinstance(function, Function)
    for name, data in inputs.items():
        where = rt.get_global(function.module, name)
        assert where.size == len(data), f"{name} is {where.size} bytes on the device"
        host = np.frombuffer(data, dtype=np.uint8).copy()
        rt.copy_in(where.address, host.ctypes.data, len(data))
    (lanes,) = run(image, [np.zeros(LANES, np.uint32)], rt=rt, function=function)
    found = b""
    for name in dumps:
        where = rt.get_global(function.module, name)
        host = np.zeros(where.size, dtype=np.uint8)
        rt.copy_out(host.ctypes.data, where.address, where.size)
        found += host.tobytes()
    return Outcome(lanes, found), image


def assert_same_as_host(body: str, flags: tuple[str, ...], inputs: dict[str, bytes] | None = None,
                        dumps: tuple[str, ...] = ()) -> bytes:
    """The emulator's outcome of `body` (every lane's result and the `dumps` globals after the run)
    equals the host's; the gfx950 code object."""
    device, image = device_outcome(body, flags, inputs or {}, dumps)
    host = host_outcome(body, flags, inputs or {}, dumps)
    assert (device.lanes == host.lanes).all(), \
        f"lanes {np.flatnonzero(device.lanes != host.lanes)[:8]} differ"
    assert device.globals == host.globals, f"the globals {dumps} differ from the host's after the run"
    return image
