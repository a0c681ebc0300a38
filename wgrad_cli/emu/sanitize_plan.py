"""What the sanitizer (sanitize.py) needs of each instruction, decided once per program counter from
its decoded form: the registers it reads and writes, the counter a memory instruction counts on,
what an `s_waitcnt` waits for, and its part in the CDNA4 ISA's required wait states.

Operands are the encoding's real ones (tinygrad's `op_regs`, from AMD's machine-readable ISA): a
field the encoding leaves unused (a load's data field, a store's vdst) is neither read nor written.
Vector registers share one index space: VGPR r is row r, AGPR r is row `vgprs + r`.

MFMA passes are LLVM's (SISchedule.td, SIDPGFX950FullSpeedModel: the same figures the timing
model's machine file cites); every gfx950 MFMA but the f64 ones is an XDL op (LLVM's
getMAIIsGFX940XDL), the f64 ones are treated as XDL too (a conservative choice: none is run here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tinygrad.renderer.amd.dsl import AlignedSGPRField, SrcField

from wgrad_cli.emu.program import Decoded
from wgrad_cli.emu.registers import uses

VM, LGKM, SMEM = 1, 2, 3  # the counter a memory instruction counts on (SMEM: lgkmcnt, out of order)
VCC, M0, EXEC = 106, 124, 126
TRANSCENDENTAL = re.compile(r"v_(exp|log|rcp|rsq|sqrt|sin|cos)_")
# (pattern, passes, passes with an fp8/bf8 operand): LLVM SISchedule.td, SIDPGFX950FullSpeedModel
PASSES = [(re.compile(p), n, f8) for p, n, f8 in (
    (r"v_mfma_(scale_)?f32_16x16x128_f8f6f4", 4, 8), (r"v_mfma_(scale_)?f32_32x32x64_f8f6f4", 8, 16),
    (r"v_mfma_.32_4x4x", 2, 2), (r"v_mfma_.32_16x16x(8x|16|32|64)", 4, 4),
    (r"v_mfma_.32_16x16x[14]_?[fbi]", 8, 8), (r"v_mfma_.32_32x32x(4xf|8|16|32_)", 8, 8),
    (r"v_mfma_.32_32x32x[124]_?[fbi]", 16, 16), (r"v_mfma_.64_4x4x", 4, 4), (r"v_mfma_.64_16x16x", 16, 16),
    (r"v_smfmac_.32_16x16x", 4, 4), (r"v_smfmac_.32_32x32x", 8, 8))]
FP8_FORMATS = 1  # cbsz/blgp 0 and 1 are fp8 and bf8
IMPLICIT_VCC = re.compile(r"v_(cndmask|addc|subb|subbrev|add_co|sub_co|subrev_co)_")
CROSS_LANE = ("_dpp", "ds_swizzle", "ds_permute", "ds_bpermute", "v_readlane", "v_readfirstlane",
              "v_permlane")


def mfma_passes(mnemonic: str, inst: Any) -> int:
    fp8 = "f8f6f4" in mnemonic and min(int(inst.cbsz), int(inst.blgp)) <= FP8_FORMATS
    for pattern, passes, f8 in PASSES:
        if pattern.match(mnemonic):
            return f8 if fp8 else passes
    return 16  # the most any MFMA takes


def waitcnt(simm16: int) -> tuple[int, int]:
    """(vmcnt, lgkmcnt) of gfx9's s_waitcnt: vmcnt in bits 3:0 and 15:14, lgkmcnt in 11:8."""
    return (simm16 & 0xF) | ((simm16 >> 10) & 0x30), (simm16 >> 8) & 0xF


def _rows(regs: list[tuple[str, int, int]], vgprs: int) -> np.ndarray:
    rows = [first + i + (vgprs if f == "a" else 0) for f, first, n in regs for i in range(n)]
    return np.asarray(sorted(set(rows)), dtype=np.int64)


@dataclass(frozen=True)
class Plan:
    """One instruction as the sanitizer sees it."""

    pc: int
    text: str  # mnemonic and register operands, for finding lines
    klass: str
    reads: np.ndarray  # vector register rows read
    writes: np.ndarray  # vector register rows written
    sreads: np.ndarray  # SGPRs read (s0..s101, M0 / VCC / EXEC where implicit)
    swrites: np.ndarray
    counter: int = 0  # VM, LGKM or SMEM: the counter a memory instruction counts on, else 0
    lds_dma: bool = False  # a load whose data goes to LDS (counted on vmcnt)
    atomic: bool = False
    wait: tuple[int, int] | None = None  # s_waitcnt (vmcnt, lgkmcnt)
    barrier: bool = False
    states: int = 1  # wait states it accounts for (s_nop N: N + 1)
    valu: bool = False  # VALU in LLVM's sense (not an MFMA): v_accvgpr_read/write count here
    trans: bool = False
    mfma: bool = False
    passes: int = 0
    srcc: tuple[int, int] = (-1, 0)  # an MFMA's SrcC rows (first, count)
    srcc_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    dst: tuple[int, int] = (-1, 0)  # an MFMA's destination rows (first, count)
    vmem: bool = False  # buffer, global, flat or scratch (reads SGPRs as a VMEM op)
    mem: bool = False  # any vector or LDS memory instruction (MFMA results read at its issue)
    dpp: bool = False
    lane_select: int = -1  # v_readlane/v_writelane: the SGPR that selects the lane, if one
    rwlane: bool = False  # v_readlane, v_readfirstlane, v_writelane: EXEC and (for the reads) the VGPR early
    store_data: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # a store of more than 8
    # bytes with no SGPR offset: its data rows, read late (a VALU must not overwrite them at once)
    reads_m0: bool = False  # LDS DMA, s_movrel and the addtid DS forms read M0 after issue
    cross_lane: bool = False  # reads other lanes' values: not checked for never-written lanes


def _operands(d: Decoded) -> list[tuple[str, str, int, int]]:
    """(operand, file, first, count) of each register operand the encoding really has."""
    counts: dict[str, int] = d.inst.op_regs
    out = []
    for u in uses(d.cls, d.mnemonic, d.inst):
        name = "src0" if u.operand == "vsrc0" else u.operand
        if name in counts or u.operand in ("scale_src0", "scale_src1") or u.operand == "vsrc0":
            out.append((u.operand, u.file, u.first, u.count))
    return out


WRITTEN = {"vdst", "sdst"}
SPECIAL = (VCC, M0, EXEC)  # the SGPRs past s101 whose writes matter to a required wait state
SPECIAL_NAMES = {VCC: "vcc", VCC + 1: "vcc_hi", M0: "m0", EXEC: "exec", EXEC + 1: "exec_hi"}


def _special(d: Decoded) -> list[tuple[str, int]]:
    """(operand, SGPR) for each of VCC, M0 and EXEC an operand names (registers.uses leaves them out)."""
    counts: dict[str, int] = d.inst.op_regs
    out = []
    for name, f in type(d.inst)._fields:
        if name not in counts or not isinstance(f, SrcField | AlignedSGPRField):
            continue
        value = getattr(d.inst, name).offset
        if value in SPECIAL:
            out += [(name, value + i) for i in range(max(1, min(counts[name], 2)))]
    return out


def plan(d: Decoded, klass: str, vgprs: int) -> Plan:
    name = d.mnemonic
    inst = d.inst
    ops = _operands(d)
    load = klass in ("vmem", "lds") and not name.startswith(("buffer_store", "global_store", "flat_store",
                                                            "scratch_store", "ds_write"))
    atomic = "atomic" in name or (klass == "lds"
                                  and any(x in name for x in ("_add_", "_sub_", "_min_", "_max_", "_and_",
                                                              "_or_", "_xor_", "_inc_", "_dec_", "_cmpst",
                                                              "_mskor", "_wrxchg", "_rsub_")))
    written = set(WRITTEN)
    if d.cls == "SMEM":
        written.add("sdata")
    if d.cls == "MUBUF" and load and not atomic:
        written.add("vdata")
    reads = [(f, a, n) for o, f, a, n in ops if o not in written or (atomic and o == "vdata")]
    writes = [(f, a, n) for o, f, a, n in ops if o in written]
    if d.cls == "MUBUF" and atomic and bool(getattr(inst, "sc0", False)):
        writes += [(f, a, n) for o, f, a, n in ops if o == "vdata"]
    lds_dma = (d.cls == "MUBUF" and bool(getattr(inst, "lds", 0))) or "_lds_" in name
    if lds_dma:
        writes = []
    vec_r = [(f, a, n) for f, a, n in reads if f != "s"]
    vec_w = [(f, a, n) for f, a, n in writes if f != "s"]
    s_r = [a + i for f, a, n in reads if f == "s" for i in range(n)]
    s_w = [a + i for f, a, n in writes if f == "s" for i in range(n)]
    special = _special(d)
    s_r += [r for o, r in special if o not in written]
    s_w += [r for o, r in special if o in written]
    mfma = klass == "mfma" and not name.startswith("v_accvgpr")
    valu = klass == "valu" or (klass == "mfma" and not mfma)
    if valu and d.cls in ("VOPC", "VOPC_SDWA_SDST") and not s_w:
        s_w += [VCC, VCC + 1]
    if d.cls.startswith("VOP2") and IMPLICIT_VCC.match(name):  # the VOP2 carry forms and v_cndmask use VCC
        s_r += [VCC, VCC + 1] if not name.startswith(("v_add_co", "v_sub_co", "v_subrev_co")) else []
        s_w += [] if name.startswith("v_cndmask") else [VCC, VCC + 1]
    if name.startswith("v_cmpx"):
        s_w += [EXEC, EXEC + 1]
    if name.startswith("v_div_fmas"):
        s_r += [VCC, VCC + 1]
    reads_m0 = lds_dma or name.startswith("s_movrel") or "addtid" in name
    if reads_m0:
        s_r.append(M0)
    # stores count too (gfx9 has no store counter)
    counter = {"smem": SMEM, "lds": LGKM, "vmem": VM}.get(klass, 0)
    wait = waitcnt(int(inst.simm16)) if name == "s_waitcnt" else None
    srcc: tuple[int, int] = (-1, 0)
    dst: tuple[int, int] = (-1, 0)
    srcc_rows = np.zeros(0, np.int64)
    if mfma:
        for o, f, a, n in ops:
            if o == "src2":
                srcc = (a + (vgprs if f == "a" else 0), n)
                srcc_rows = _rows([(f, a, n)], vgprs)
            if o == "vdst":
                dst = (a + (vgprs if f == "a" else 0), n)
    lane_select = -1
    rwlane = name.startswith(("v_readlane", "v_writelane", "v_readfirstlane"))
    if name.startswith(("v_readlane", "v_writelane")):
        lane_select = next((a for o, f, a, n in ops if o == "src1" and f == "s"), -1)
    data_bytes = sum(n for o, f, a, n in ops if o in ("data", "vdata")) * 4
    soffset_reg = any(o == "soffset" for o, f, a, n in ops)
    wide_store = not load and klass == "vmem" and data_bytes > 8 and not (d.cls == "MUBUF" and soffset_reg)
    store_data = _rows([(f, a, n) for o, f, a, n in ops if o in ("data", "vdata")],
                       vgprs) if wide_store else None
    spelled = {o: _spelled(f, a, n) for o, f, a, n in ops if not (lds_dma and o in ("vdata", "vdst"))}
    for o, reg in special:
        spelled.setdefault(o, SPECIAL_NAMES[reg])
    order = [n for n, _ in type(inst)._fields] + ["scale_src0", "scale_src1"]
    text = name + " " + ", ".join(spelled[o] for o in sorted(spelled, key=lambda o: order.index(o)
                                                             if o in order else 99))
    return Plan(d.pc, text.strip(), klass, _rows(vec_r, vgprs), _rows(vec_w, vgprs),
                np.asarray(sorted(set(s_r)), np.int64), np.asarray(sorted(set(s_w)), np.int64), counter,
                lds_dma, atomic, wait, klass == "barrier",
                (int(inst.simm16) & 0xF) + 1 if name == "s_nop" else 1, valu,
                valu and bool(TRANSCENDENTAL.match(name)), mfma, mfma_passes(name, inst) if mfma else 0, srcc,
                srcc_rows, dst, klass == "vmem", klass in ("vmem", "lds"), name.endswith("_dpp"), lane_select,
                rwlane, np.zeros(0, np.int64) if store_data is None else store_data, reads_m0,
                any(x in name for x in CROSS_LANE))


def _spelled(f: str, first: int, n: int) -> str:
    return f"{f}{first}" if n == 1 else f"{f}[{first}:{first + n - 1}]"
