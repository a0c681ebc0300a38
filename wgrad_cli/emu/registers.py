"""The registers an instruction names, checked once against a kernel's allocation.

A wave gets the VGPRs, AGPRs and SGPRs its kernel descriptor asks for (loader.Descriptor); an
operand beyond them is a fault on the hardware (or reads another wave's registers). Each operand's
register count is the pinned ISA tables' (tinygrad's `op_regs`, from AMD's machine-readable ISA),
adjusted where an encoding changes it; the file (VGPR, AGPR or SGPR) is the encoding's: `acc` puts
a memory instruction's data and MFMA operands in AGPRs, SDWA's S0/S1 bits and the lane reads put
an operand in SGPRs. Operands the encodings leave unused, and SGPRs outside s0..s101 (VCC, EXEC,
TTMPs, M0, constants), are not checked. Checking happens when a kernel's ops are made, so running
them costs nothing more.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tinygrad.renderer.amd.dsl import AlignedSGPRField, SrcField

from wgrad_cli.emu.loader import Descriptor

NUMBERED_SGPRS = 102  # s0..s101; 102-105 are flat_scratch and xnack_mask, above them VCC, TTMPs, M0, EXEC
OFF = 127  # a GLOBAL or FLAT saddr of "off": the address is a 64-bit VGPR pair
MEMORY = {"DS", "FLAT", "GLOBAL", "SCRATCH", "MUBUF", "MTBUF"}
MEMORY_DATA = {"vdst", "data", "data0", "data1", "vdata"}  # AGPRs with the acc bit
LANE_READS = {"v_readlane_b32", "v_readfirstlane_b32", "v_readfirstlane_b32_e32", "v_readfirstlane_b32_e64"}
FILES = {"v": "VGPRs", "a": "AGPRs", "s": "SGPRs"}


@dataclass(frozen=True)
class Use:
    """Registers [first, first + count) of one file ("v", "a" or "s"), named by an operand."""

    file: str
    first: int
    count: int
    operand: str

    def __str__(self) -> str:
        name = (f"{self.file}{self.first}" if self.count == 1
                else f"{self.file}[{self.first}:{self.first + self.count - 1}]")
        return f"{name} ({self.operand})"


def _agpr_operands(cls: str, mnemonic: str, inst: Any) -> set[str]:
    if cls in MEMORY:
        return MEMORY_DATA if getattr(inst, "acc", 0) else set()
    if cls in ("VOP3P_MFMA", "VOP3PX2"):
        acc = int(inst.acc)
        return {n for n, on in (("src0", acc & 1), ("src1", acc & 2), ("src2", inst.acc_cd),
                                ("vdst", inst.acc_cd)) if on}
    if mnemonic.startswith("v_accvgpr_read"):
        return {"src0"}
    if mnemonic.startswith("v_accvgpr_write"):
        return {"vdst"}
    if mnemonic.startswith("v_accvgpr_mov"):
        return {"src0", "vdst"}
    return set()


def _fields(cls: str, inst: Any) -> Iterator[tuple[str, int, int]]:
    """(operand, 9-bit source-space value, register count) of each register operand the encoding uses."""
    counts: dict[str, int] = inst.op_regs
    marker = cls.endswith("SDWA") or cls.endswith("SDWA_SDST") or cls.endswith("DPP16")
    for name, field in type(inst)._fields:
        if not isinstance(field, SrcField | AlignedSGPRField):
            continue
        if marker and name == "src0":
            continue  # the SDWA/DPP marker: the operand is vsrc0
        if name == "sdst" and cls == "VOPC_SDWA_SDST" and not inst.sd:
            continue  # the result goes to VCC
        if name == "vdst" and "_LOAD_LDS_" in inst.op.name:
            continue  # loads to LDS write no VGPR
        value = getattr(inst, name).offset
        count = counts.get("src0" if name == "vsrc0" else name, 1)
        if name == "addr" and cls in ("GLOBAL", "FLAT") and inst.saddr.offset == OFF:
            count = 2
        yield name, value, count
    if cls == "VOP3PX2":  # the scale operands are plain 9-bit source fields
        yield "scale_src0", int(inst.scale_src0), 1
        yield "scale_src1", int(inst.scale_src1), 1


def uses(cls: str, mnemonic: str, inst: Any) -> Iterator[Use]:
    """The registers a decoded instruction names, by file."""
    agprs = _agpr_operands(cls, mnemonic, inst)
    scalar = {n for n, bit in (("vsrc0", "s0"), ("vsrc1", "s1")) if getattr(inst, bit, 0)}
    if mnemonic in LANE_READS:
        scalar.add("vdst")
    for name, value, count in _fields(cls, inst):
        if name in scalar:  # SDWA's 8-bit field with S0/S1: a scalar source (an SGPR or a constant)
            value -= 256
        if value >= 256:
            yield Use("a" if name in agprs else "v", value - 256, count, name)
        elif value < NUMBERED_SGPRS:
            yield Use("s", value, count, name)


def beyond(found: tuple[Use, ...], k: Descriptor) -> str | None:
    """Why an instruction with these register uses cannot run in kernel `k`'s allocation, or None."""
    limits = {"v": k.vgprs, "a": k.agprs, "s": k.sgprs}
    for use in found:
        if use.first + use.count > limits[use.file]:
            return (f"it names {use}, beyond the {limits[use.file]} {FILES[use.file]} the descriptor of "
                    f"{k.name} allocates")
    return None
