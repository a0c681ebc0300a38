"""The emulator's decoder (tinygrad's) against LLVM's disassembler: the same instruction lengths and
mnemonics at the same offsets, over every instruction of the test kernels and of the project's
shipped gfx950 kernels (reference and empty, at smoke.yaml's shapes, built as `wgrad build` builds
them); and a kernel with an
instruction the emulator lacks is listed before it runs and stops, naming it, when it runs."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import test_emu_divide
import test_emu_memory
import test_emu_scalar_exec
import test_emu_valu
from emukernels import CLANG, UNSUPPORTED, UNSUPPORTED_MNEMONIC, compile_hip, disassemble, need, run

from wgrad_cli.backends.registry import BACKENDS
from wgrad_cli.compile.cache import Cache
from wgrad_cli.compile.jobs import BuildJob, run_builds
from wgrad_cli.compile.toolchain import Toolchains
from wgrad_cli.config.kernelspec import load_specs
from wgrad_cli.config.loader import load_config
from wgrad_cli.config.shipped import CONFIGS_DIR
from wgrad_cli.emu.device import EmuRuntime
from wgrad_cli.emu.loader import load_image
from wgrad_cli.emu.program import Program, decode
from wgrad_cli.errors import DriverError

SOURCES = [test_emu_valu.SOURCE, test_emu_scalar_exec.SALU, test_emu_scalar_exec.DIVERGE,
           test_emu_memory.GLOBAL, test_emu_memory.LDS, test_emu_memory.BUFFER, test_emu_divide.DIVIDE,
           test_emu_divide.MISC]


@pytest.mark.parametrize("source", SOURCES,
                         ids=["valu", "salu", "diverge", "global", "lds", "buffer", "divide", "misc"])
def test_decoder_agrees_with_llvm(source: str) -> None:
    assert_decodes_as_llvm(compile_hip(source))


def assert_decodes_as_llvm(image: bytes) -> None:
    loaded = load_image(image)
    ours = [(d.pc, d.mnemonic, d.size) for d in decode(loaded.code, loaded.text_start, loaded.text_end)]
    llvm = [i for i in disassemble(image) if loaded.text_start <= i[0] < loaded.text_end]
    assert ours == llvm


@pytest.mark.parametrize("kernel", ["reference", "empty"])
def test_decoder_agrees_with_llvm_on_the_shipped_kernels(kernel: str, tmp_path: Path) -> None:
    need(CLANG)
    specs = load_specs()
    shapes = load_config(CONFIGS_DIR / "smoke.yaml", specs).shapes
    jobs = list(dict.fromkeys(BuildJob(specs[kernel], "gfx950", shape.dims) for shape in shapes))
    cache = Cache(tmp_path)
    for result in run_builds(jobs, Toolchains(cache.root / "zig-shim", BACKENDS), cache, {},
                             os.cpu_count() or 1):
        assert result.ok and result.code_object is not None, result.errors
        assert_decodes_as_llvm(result.code_object.read_bytes())


def test_an_unimplemented_instruction_is_listed_and_stops_the_run() -> None:
    image = compile_hip(UNSUPPORTED)
    program = Program(load_image(image))
    listed = {op.name for op in program.unsupported()}
    assert UNSUPPORTED_MNEMONIC in listed
    offset = min(op.pc for op in program.unsupported() if op.name == UNSUPPORTED_MNEMONIC)
    with pytest.raises(DriverError) as info:
        run(image, [np.zeros(64, np.float32), np.ones(64, np.float32)])
    line = str(info.value)
    assert "\n" not in line and "sine" in line and UNSUPPORTED_MNEMONIC in line and f"{offset:#x}" in line


def test_out_of_bounds_global_store_names_kernel_instruction_workgroup_lane_and_address() -> None:
    image = compile_hip("KERNEL void oob(unsigned *out) { out[gid() * 256 + tid()] = 1u; }")
    with pytest.raises(DriverError) as info:
        # lanes 300.. of workgroup 1 run off the end
        run(image, [np.zeros(300, np.uint32)], grid=2, block=256)
    line = str(info.value)
    assert "\n" not in line and line.startswith("oob: global_store_dword")
    assert "workgroup (1, 0, 0)" in line and "lane 44" in line and "outside every allocation" in line


def test_lds_bytes_beyond_the_workgroups_lds_read_zero_and_are_not_written() -> None:
    """gfx9-family LDS range check (AMD's gem5 GPU model does the same): out-of-range reads return 0,
    out-of-range writes are dropped; HipKittens' scale packing reads past its last scale tile."""
    image = compile_hip("""
KERNEL void lds_oob(unsigned *out, unsigned k) {
  SHARED unsigned s[64];
  s[tid()] = 1u + tid();
  __builtin_amdgcn_s_barrier();
  s[tid() + k] = 7u;
  __builtin_amdgcn_s_barrier();
  out[tid()] = s[tid()];
  out[64 + tid()] = s[tid() + k];
}""")
    k = 48
    rt = EmuRuntime(workers=1)
    out, = run(image, [np.zeros(128, np.uint32), k], rt=rt)
    lane = np.arange(64)
    assert (out[:64] == np.where(lane < k, lane + 1, 7)).all()
    assert (out[64:] == np.where(lane + k < 64, 7, 0)).all()
    # not silent: the counters say how many bytes fell outside (48 lanes x 4 bytes, written then read)
    assert rt.stats[-1].lds_out_of_range == 2 * 48 * 4
    # verify --strict-lds: the first such access stops the run, naming its address and lane
    with pytest.raises(DriverError, match=r"^lds_oob: ds_write_b32 at offset 0x[0-9a-f]+: LDS access of 4 "
                                          r"bytes at 0x100, beyond the workgroup's 256 bytes of LDS "
                                          r"\(workgroup \(0, 0, 0\), wave 0, lane 16\)"):
        run(image, [np.zeros(128, np.uint32), k], rt=EmuRuntime(workers=1, strict_lds=True))
