"""An operand beyond the kernel's register allocation (inline assembly the compiler does not count,
as hand-written kernels can have) stops the run with one line naming the instruction and the
register, when a wave reaches it; the same code the kernel never reaches runs as before."""

from __future__ import annotations

import re

import numpy as np
import pytest

from emukernels import compile_hip, run
from wgrad_cli.emu.device import EmuRuntime
from wgrad_cli.emu.loader import load_image
from wgrad_cli.errors import DriverError

U32 = np.uint32
# `asm` without the register in its clobbers: LLVM's count (the descriptor's) leaves it out
KERNEL = """
KERNEL void regs(unsigned *out, unsigned when) {
  unsigned x = tid() * 3u;
  if (tid() == when) asm volatile("%s" :: "v"(x));
  out[tid()] = x;
}
"""
CASES = {  # inline asm, the line's register and its file's name
    "vgpr": ("v_mov_b32 v200, %0", "v200 (vdst)", "VGPRs", r"v_mov_b32(_e32)?"),
    "vgpr pair": ("v_lshlrev_b64 v[254:255], 1, v[0:1]", "v[254:255] (vdst)", "VGPRs", "v_lshlrev_b64"),
    "agpr": ("v_accvgpr_write_b32 a60, %0", "a60 (vdst)", "AGPRs", r"v_accvgpr_write(_b32)?"),
    "sgpr": ("v_readfirstlane_b32 s90, %0", "s90 (vdst)", "SGPRs", r"v_readfirstlane_b32(_e32)?"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_register_beyond_the_allocation_stops_the_run_naming_it(case: str) -> None:
    asm, register, file, mnemonic = CASES[case]
    image = compile_hip(KERNEL % asm)
    kernel = load_image(image).kernels["regs"]
    limit = {"VGPRs": kernel.vgprs, "AGPRs": kernel.agprs, "SGPRs": kernel.sgprs}[file]
    lane = np.arange(64, dtype=U32)
    assert (run(image, [np.zeros(64, U32), 99])[0] == lane * 3).all()  # no lane reaches it
    with pytest.raises(DriverError) as info:
        run(image, [np.zeros(64, U32), 5])
    line = str(info.value)
    assert "\n" not in line and re.fullmatch(
        rf"regs: {mnemonic} at offset 0x[0-9a-f]+: it names {re.escape(register)}, beyond the {limit} "
        rf"{file} the descriptor of regs allocates", line), line


def test_registers_the_launch_leaves_undefined_hold_the_runtime_fill() -> None:
    """A VGPR read before anything writes it is undefined on the hardware; the emulator gives it
    EmuRuntime's register_fill (0 by default), so a code object whose results change with the fill
    reads undefined registers. v0 keeps the work-item id the ABI puts there."""
    image = compile_hip("""
KERNEL void undef(unsigned *out) {
  unsigned r;
  asm volatile("v_mov_b32 %0, v40" : "=v"(r) :: "v40");
  out[2 * tid()] = r; out[2 * tid() + 1] = tid();
}
""")
    lane = np.arange(64, dtype=U32)
    for fill in (0, 0x5A5AA5A5):
        out = run(image, [np.zeros(128, U32)], rt=EmuRuntime(workers=1, register_fill=fill))[0].reshape(64, 2)
        assert (out[:, 0] == fill).all() and (out[:, 1] == lane).all()
