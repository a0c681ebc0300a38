"""What the timing model needs of each instruction of a code object, decided once per program
counter from its decoded form: the pipe it goes to, its cost on that pipe, and for s_waitcnt the
counts it waits for."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum

from wgrad_cli.emu.ops.lds import CROSS_LANE, READ2, READS, TRANSPOSE, WRITE2, WRITES
from wgrad_cli.emu.program import Decoded, Program
from wgrad_cli.errors import ToolError
from wgrad_cli.model.machine import FP8_FORMATS, Machine


class Kind(IntEnum):
    SALU = 0
    VALU = 1
    MFMA = 2
    LDS = 3  # DS instructions: the CU's LDS pipe, counted by lgkmcnt
    LOAD = 4  # vector memory reads (also LDS DMA and atomics): counted by vmcnt
    STORE = 5  # vector memory writes: counted by vmcnt (gfx9 has no separate store counter)
    SMEM = 6  # scalar memory: counted by lgkmcnt
    BRANCH = 7
    BARRIER = 8
    WAITCNT = 9
    NOP = 10
    END = 11


TRANSCENDENTAL = re.compile(r"v_(exp|log|rcp|rsq|sqrt|sin|cos)_")
WIDTH = {"dwordx4": 16, "dwordx3": 12, "dwordx2": 8, "dword": 4, "short": 2, "ushort": 2, "sshort": 2,
         "byte": 1, "ubyte": 1, "sbyte": 1, "b128": 16, "b96": 12, "b64": 8, "b32": 4, "b16": 2, "u16": 2,
         "i16": 2, "d16": 2, "b8": 1, "u8": 1, "i8": 1, "u64": 8, "i64": 8, "f64": 8, "x2": 8}
NO_WAIT_VM, NO_WAIT_LGKM = 63, 15  # the largest counts s_waitcnt encodes: "do not wait"
# the emulator's op classes (emu/machine.py's Op.klass): those issued on the scalar pipe, and all
SCALAR = {"salu", "other"}
KNOWN = SCALAR | {"mfma", "valu", "lds", "vmem", "smem", "barrier", "branch"}


@dataclass(frozen=True)
class Static:
    """One instruction as the model sees it."""

    kind: Kind
    cycles: int  # clocks on its pipe (VALU, MFMA), wait states (s_nop) or issue (others)
    lane_bytes: int = 0  # vector memory: bytes per lane; LDS: bytes per access
    accesses: int = 1  # LDS: addresses per lane (2 for the read2/write2 forms)
    vmcnt: int = NO_WAIT_VM
    lgkmcnt: int = NO_WAIT_LGKM


def lane_bytes(mnemonic: str) -> int:
    """Bytes per lane of a memory instruction, from its mnemonic's type suffix (4 if it has none)."""
    for part in reversed(mnemonic.split("_")):
        if part in WIDTH:
            return WIDTH[part]
    return 4


def _waitcnt(simm16: int) -> tuple[int, int]:
    """(vmcnt, lgkmcnt) of gfx9's s_waitcnt: vmcnt in bits 3:0 and 15:14, lgkmcnt in 11:8."""
    return (simm16 & 0xF) | ((simm16 >> 10) & 0x30), (simm16 >> 8) & 0xF


def _lds(d: Decoded, m: Machine) -> Static:
    name = d.inst.op.name
    if name in READ2 or name in WRITE2:
        return Static(Kind.LDS, m.issue_cycles, (READ2 | WRITE2)[name][0], 2)
    if name in READS:
        return Static(Kind.LDS, m.issue_cycles, READS[name][0])
    if name in WRITES:
        return Static(Kind.LDS, m.issue_cycles, WRITES[name])
    if name in TRANSPOSE:
        return Static(Kind.LDS, m.issue_cycles, 8)
    if name in CROSS_LANE:  # ds_bpermute and the like move registers through the LDS crossbar, not its banks
        return Static(Kind.LDS, m.issue_cycles, 0)
    return Static(Kind.LDS, m.issue_cycles, lane_bytes(d.mnemonic))  # LDS atomics


def classify(d: Decoded, klass: str, m: Machine) -> Static:
    """The model's view of one decoded instruction whose emulator op has class `klass`."""
    name = d.mnemonic
    if klass == "mfma":
        fp8 = "f8f6f4" in name and min(int(d.inst.cbsz), int(d.inst.blgp)) <= FP8_FORMATS
        return Static(Kind.MFMA, m.mfma_cycles(name, fp8))
    if klass == "valu":
        return Static(Kind.VALU, m.transcendental_cycles if TRANSCENDENTAL.match(name) else m.issue_cycles)
    if klass == "lds":
        return _lds(d, m)
    if klass == "vmem":
        kind = Kind.STORE if "store" in name else Kind.LOAD
        return Static(kind, m.issue_cycles, lane_bytes(name))
    if klass == "smem":
        return Static(Kind.SMEM, m.issue_cycles)
    if klass == "barrier":
        return Static(Kind.BARRIER, m.issue_cycles)
    if name == "s_waitcnt":
        vm, lgkm = _waitcnt(int(d.inst.simm16))
        return Static(Kind.WAITCNT, 0, vmcnt=vm, lgkmcnt=lgkm)
    if name == "s_nop":
        return Static(Kind.NOP, (int(d.inst.simm16) & 0xF) + 1)
    if name == "s_endpgm":
        return Static(Kind.END, 0)
    if klass == "branch":
        return Static(Kind.BRANCH, m.issue_cycles)
    if klass in SCALAR:
        return Static(Kind.SALU, m.issue_cycles)
    raise ToolError(f"{name}: the emulator's instruction class {klass!r} is not one the timing model knows "
                    f"({', '.join(sorted(KNOWN))}); model/ops.py must place it on a pipe")


def statics(program: Program, m: Machine) -> dict[int, Static]:
    """Every instruction of the program, by program counter."""
    return {d.pc: classify(d, program.ops[d.pc].klass, m) for d in program.decoded
            if program.ops[d.pc].klass != "unsupported"}
