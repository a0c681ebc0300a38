"""A kernel's machine code, decoded and turned into runnable ops.

Decoding is tinygrad's CDNA decoder (a pinned library generated from AMD's machine-readable ISA);
the semantics are this package's own. An instruction the emulator does not implement still
decodes: it becomes an op that stops the run with its name and offset if a wave reaches it, and
`unsupported()` lists such instructions before anything runs. Only an op compiler's Unsupported
means that; any other exception while compiling is a bug in the emulator (EmulatorBug).
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tinygrad.renderer.amd import decode_inst

from wgrad_cli.emu import gpr_index
from wgrad_cli.emu.loader import Descriptor, Image
from wgrad_cli.emu.machine import Batch, EmuFault, Op, Unsupported
from wgrad_cli.emu.ops.lds import compile_ds
from wgrad_cli.emu.ops.lds_atomic import LDS_ATOMICS, compile_lds_atomic
from wgrad_cli.emu.ops.matrix import compile_matrix
from wgrad_cli.emu.ops.scalar import compile_scalar
from wgrad_cli.emu.ops.scratch import compile_scratch, with_apertures
from wgrad_cli.emu.ops.vector import compile_valu
from wgrad_cli.emu.ops.vmem import compile_buffer, compile_global
from wgrad_cli.emu.registers import beyond, uses
from wgrad_cli.errors import EmulatorBug

SCALAR = {"SOP1", "SOP1_LIT", "SOP2", "SOP2_LIT", "SOPC", "SOPC_LIT", "SOPK", "SOPK_LIT", "SOPP", "SMEM"}
VECTOR = {"VOP1", "VOP1_LIT", "VOP1_SDWA", "VOP1_DPP16", "VOP2", "VOP2_LIT", "VOP2_SDWA", "VOP2_DPP16",
          "VOP3", "VOP3_SDST", "VOP3SD", "VOPC", "VOPC_SDWA_SDST"}
MATRIX = {"VOP3P", "VOP3P_MFMA", "VOP3PX2"}

VOP3_ONLY = 0x1C0  # gfx9 VOP3 opcodes from here have no VOPC/VOP2/VOP1 form
LITERAL_ONLY = {"v_fmamk_f32", "v_fmaak_f32", "v_madmk_f32", "v_madak_f32", "v_fmamk_f16", "v_fmaak_f16"}


@dataclass(frozen=True)
class Decoded:
    pc: int
    size: int
    cls: str
    mnemonic: str  # LLVM's spelling
    inst: Any


def mnemonic(inst: Any) -> str:
    """LLVM's mnemonic for a decoded instruction (tinygrad names the opcode, not the encoding form)."""
    cls = type(inst).__name__
    name: str = inst.op.name.lower()
    if cls.endswith("SDWA") or cls.endswith("SDWA_SDST"):
        return name.removesuffix("_e32") + "_sdwa"
    if cls.endswith("DPP16"):
        return name.removesuffix("_e32") + "_dpp"
    if cls.startswith("VOP3") and int(inst.op.value) >= VOP3_ONLY:  # one encoding: LLVM writes no suffix
        return name.removesuffix("_e64")
    if name.removesuffix("_e32") in LITERAL_ONLY:
        return name.removesuffix("_e32")
    return name


def decode(code: bytes, start: int, end: int) -> Iterator[Decoded]:
    """Every instruction from `start` to `end`. An instruction of 4 or 8 bytes is decoded once per
    distinct encoding (its first dword fixes its length): unoptimised code repeats a few encodings
    many times, and decoding dominates loading it."""
    seen: dict[bytes, Decoded] = {}
    pc = start
    while pc < end:
        known = seen.get(code[pc: pc + 4]) or seen.get(code[pc: pc + 8])
        if known is not None:
            yield Decoded(pc, known.size, known.cls, known.mnemonic, known.inst)
            pc += known.size
            continue
        try:
            inst = decode_inst(code[pc: pc + 16], arch="cdna")
        except (ValueError, AssertionError, KeyError) as exc:
            raise EmuFault(f"cannot decode the instruction at {pc:#x}: {exc}") from None
        size = inst.size()
        d = Decoded(pc, size, type(inst).__name__, mnemonic(inst), inst)
        if size in (4, 8):
            seen[code[pc: pc + size]] = d
        yield d
        pc += size


def _unsupported(d: Decoded, why: str) -> Op:
    def stop(_b: Batch) -> None:
        raise EmuFault(f"{d.mnemonic} is not implemented by the emulator{why}")
    return Op(d.pc, d.size, d.mnemonic, "unsupported", stop, jumps=True)


def compile_one(d: Decoded) -> Op:
    cls, inst = d.cls, d.inst
    try:
        if cls in SCALAR:
            op = compile_scalar(cls.removesuffix("_LIT"), inst, inst.op.name, d.pc, d.size)
        elif cls in VECTOR:
            op = compile_valu(cls, inst, d.pc, d.size)
        elif cls == "GLOBAL":
            op = compile_global(cls, inst, d.pc, d.size)
        elif cls == "FLAT":
            op = with_apertures(inst, compile_global(cls, inst, d.pc, d.size))
        elif cls == "SCRATCH":
            op = compile_scratch(inst, d.pc, d.size)
        elif cls == "MUBUF":
            op = compile_buffer(inst, d.pc, d.size)
        elif cls == "DS" and inst.op.name in LDS_ATOMICS:
            op = compile_lds_atomic(inst, d.pc, d.size)
        elif cls == "DS":
            op = compile_ds(inst, d.pc, d.size)
        elif cls in MATRIX:
            op = compile_matrix(cls, inst, d.pc, d.size)
        else:
            return _unsupported(d, "")
    except Unsupported:
        return _unsupported(d, "")
    except Exception:  # noqa: BLE001 - anything else is a bug in the emulator: reported whole
        raise EmulatorBug.of(f"compiling {d.mnemonic} at offset {d.pc:#x}", traceback.format_exc()) from None
    return Op(op.pc, op.size, d.mnemonic, op.klass, op.run, op.jumps)


def _beyond_allocation(op: Op, why: str) -> Op:
    def stop(_b: Batch) -> None:
        raise EmuFault(why)
    return Op(op.pc, op.size, op.name, op.klass, stop, jumps=True)


class Program:
    """Every instruction of a code object's text, ready to run."""

    def __init__(self, image: Image) -> None:
        self.image = image
        self.decoded = list(decode(image.code, image.text_start, image.text_end))
        self.ops = gpr_index.apply([(d.pc, d.mnemonic, d.inst) for d in self.decoded],
                                   {d.pc: compile_one(d) for d in self.decoded})
        self.registers = {d.pc: tuple(uses(d.cls, d.mnemonic, d.inst)) for d in self.decoded}
        self._kernel_ops: dict[str, dict[int, Op]] = {}

    def ops_for(self, kernel: Descriptor) -> dict[int, Op]:
        """The ops as `kernel` runs them: one that names a register beyond the kernel's allocation
        stops the run if a wave reaches it (the code object's other kernels may use more)."""
        ops = self._kernel_ops.get(kernel.name)
        if ops is None:
            stops = {pc: _beyond_allocation(self.ops[pc], why) for pc, found in self.registers.items()
                     if (why := beyond(found, kernel)) is not None}
            ops = self._kernel_ops[kernel.name] = {**self.ops, **stops} if stops else self.ops
        return ops

    def unsupported(self) -> list[Op]:
        return [op for op in self.ops.values() if op.klass == "unsupported"]
