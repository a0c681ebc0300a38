"""How a vector instruction's encoding reads its sources and writes its destination: DPP's lane
movement, SDWA's selects, VOP3's abs, neg, op_sel, omod and clamp, and the lanes EXEC leaves
alone (`Ctx`, `write_dest`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from wgrad_cli.emu.machine import Batch, Unsupported
from wgrad_cli.emu.ops import operands as opd
from wgrad_cli.emu.ops.vector_math import BITS, F32, U32, U64, VIEW, to_bits, typed


def _dpp_source(ctrl: int) -> tuple[np.ndarray, np.ndarray]:
    """For a gfx9 dpp_ctrl: the lane each lane reads its first source from, and whether that lane
    exists (none past the edge of a row or the wave). Per the CDNA4 ISA's DPP_CTRL table, with
    LLVM's spellings (AMDGPUModifierSyntax): within each row of 16 lanes, lane i reads lane i + n
    for row_shl:n and lane i - n for row_shr:n and row_ror:n. row_bcast:15 gives each row lane 15
    of the row before and row_bcast:31 gives rows 2 and 3 lane 31; the table names no source for
    the rows before those (row 0; rows 0 and 1), so they are taken as past the edge. row_newbcast:n
    (0x150-0x15F, gfx90a on; LLVM's SIDefines.h DppCtrl::ROW_NEWBCAST_FIRST, the encoding gfx10
    calls row_share) gives every lane of a row lane n of that row."""
    lane = np.arange(64)
    row, pos, n = lane & ~15, lane & 15, ctrl & 15
    everywhere = np.ones(64, dtype=bool)
    if ctrl <= 0xFF:  # quad_perm:[a,b,c,d]: lane 4q+k reads lane 4q + ctrl[2k+1:2k]
        return (lane & ~3) + ((ctrl >> 2 * (lane & 3)) & 3), everywhere
    if 0x101 <= ctrl <= 0x10F:  # row_shl
        return row + pos + n, pos + n < 16
    if 0x111 <= ctrl <= 0x11F:  # row_shr
        return row + pos - n, pos >= n
    if 0x121 <= ctrl <= 0x12F:  # row_ror
        return row + ((pos - n) & 15), everywhere
    if 0x150 <= ctrl <= 0x15F:  # row_newbcast
        return row + n, everywhere
    whole_wave = {0x130: (lane + 1, lane < 63),
                  0x134: ((lane + 1) & 63, everywhere),  # wave_shl:1, wave_rol:1
                  0x138: (lane - 1, lane > 0), 0x13C: ((lane - 1) & 63, everywhere),  # wave_shr:1, wave_ror:1
                  0x140: (row + 15 - pos, everywhere),
                  0x141: ((lane & ~7) + 7 - (lane & 7), everywhere),  # mirrors
                  0x142: (row - 1, lane >= 16),
                  0x143: (np.full(64, 31), lane >= 32)}  # row_bcast:15, row_bcast:31
    if ctrl not in whole_wave:
        raise Unsupported(f"dpp_ctrl {ctrl:#x}")  # reserved values
    return whole_wave[ctrl]


class Dpp:
    """A DPP16 encoding's lane movement: src0 comes from the lane `_dpp_source` names. A source lane
    that does not exist or is outside EXEC is invalid: with bound_ctrl the source reads 0, otherwise
    the destination lane is not written; lanes of rows or banks (4 lanes of a row) cleared in
    row_mask / bank_mask are not written either (CDNA4 ISA, DPP fields)."""

    def __init__(self, inst: Any) -> None:
        source, exists = _dpp_source(int(inst.dpp))
        lane = np.arange(64)
        self.source: np.ndarray = np.where(exists, source, lane)
        self.exists: np.ndarray = exists
        self.zero_fill = bool(inst.bc)
        rows, banks = int(inst.row_mask) >> (lane >> 4), int(inst.bank_mask) >> ((lane >> 2) & 3)
        self.written: np.ndarray = (rows & banks & 1) == 1

    def valid(self, b: Batch) -> np.ndarray:
        return np.asarray(self.exists & b.exec[:, self.source])

    def read(self, src: opd.Read) -> opd.Read:
        def moved(b: Batch) -> np.ndarray:
            value = np.broadcast_to(src(b), (b.W, 64))[:, self.source]
            return np.where(self.valid(b), value, value.dtype.type(0)) if self.zero_fill else value
        return moved

    def lanes(self, b: Batch) -> np.ndarray:
        """The lanes the instruction writes."""
        written = b.lanes() & self.written
        return np.asarray(written if self.zero_fill else written & self.valid(b))


class Ctx:
    """What compiling one vector instruction needs to know about its encoding."""

    def __init__(self, inst: Any, cls: str) -> None:
        self.inst = inst
        self.cls = cls
        self.literal = getattr(inst, "literal", None)
        self.vop3 = cls.startswith("VOP3")
        self.sdwa = cls.endswith("SDWA") or cls.endswith("SDWA_SDST")
        self.dpp = Dpp(inst) if cls.endswith("DPP16") else None

    def lanes(self, b: Batch) -> np.ndarray:
        """The lanes a result is written to: the executing ones, narrowed by DPP's masks."""
        return b.lanes() if self.dpp is None else self.dpp.lanes(b)

    def field(self, name: str, default: int = 0) -> int:
        value = getattr(self.inst, name, default)
        return int(value) if value is not None else default

    def src_number(self, k: int) -> int:
        inst = self.inst
        if self.sdwa or self.dpp:
            return (inst.vsrc0.offset if k == 0 else inst.vsrc1.offset) if k < 2 else -1
        if self.cls in ("VOP2", "VOP2_LIT", "VOPC") and k == 1:
            return int(inst.vsrc1.offset)
        return int(getattr(inst, f"src{k}").offset)

    def read(self, k: int, t: str) -> Callable[[Batch], np.ndarray]:
        """Source k as typed values, with abs/neg/op_sel/SDWA/DPP applied."""
        src = self.src_number(k)
        if self.sdwa and k < 2 and self.field("s0" if k == 0 else "s1"):
            # gfx9 SDWA: a source field holds 8 bits, a VGPR unless its S0/S1 bit is set, which makes
            # the same 8 bits an SGPR or inline constant; the decoder names it as a VGPR (256 + field)
            src -= 256
        bits = 64 if BITS[t] == 64 else 32
        raw = opd.vector(src, bits, self.literal, t.startswith("f"))
        if self.dpp and k == 0:
            raw = self.dpp.read(raw)
        hi = bool((self.field("opsel") >> k) & 1) if self.vop3 and BITS[t] == 16 else False
        if self.sdwa or self.dpp:  # per-source fields; DPP's act on the value moved from the other lane
            absf = self.field("src0_abs" if k == 0 else "src1_abs")
            negf = self.field("src0_neg" if k == 0 else "src1_neg")
        else:
            absf = (self.field("abs") >> k) & 1 if self.vop3 and self.cls != "VOP3P" else 0
            negf = (self.field("neg") >> k) & 1 if self.vop3 else 0
        if self.sdwa:
            sel = self.field("src0_sel" if k == 0 else "src1_sel", 6)
            sext = self.field("src0_sext" if k == 0 else "src1_sext")
            inner = raw
            raw = lambda b: _sdwa_select(inner(b), sel, bool(sext))  # noqa: E731
        base = raw

        def read(b: Batch) -> np.ndarray:
            v = typed(base(b), t, hi)
            if t.startswith("f"):
                if absf:
                    v = np.abs(v)
                if negf:
                    v = -v
            elif absf or negf:
                # untyped moves (v_cndmask_b32, v_mov_b32) take them as float sign-bit modifiers
                sign = v.dtype.type(1 << (v.dtype.itemsize * 8 - 1))
                v = v.view(np.dtype(f"u{v.dtype.itemsize}"))
                sign = sign.astype(v.dtype) if hasattr(sign, "astype") else sign
                if absf:
                    v = v & ~v.dtype.type(sign)
                if negf:
                    v = v ^ v.dtype.type(sign)
                v = v.view(VIEW[t])
            return v
        return read


def _sdwa_select(x: np.ndarray, sel: int, sext: bool) -> np.ndarray:
    """SDWA source select: BYTE_0..3 (0-3), WORD_0..1 (4-5), DWORD (6), sign- or zero-extended."""
    if sel == 6:
        return x
    shift, width = (8 * sel, 8) if sel < 4 else (16 * (sel - 4), 16)
    field = (x >> U32(shift)) & U32((1 << width) - 1)
    if sext:
        field = np.where(field >> U32(width - 1), field | U32((0xFFFFFFFF << width) & 0xFFFFFFFF), field)
    return field.astype(U32)


def _sdwa_write(old: np.ndarray, value: np.ndarray, sel: int, unused: int) -> np.ndarray:
    """SDWA destination select: the result's low bits placed at the selected byte or word; other bits
    padded with zeros (0), sign-extended (1) or preserved (2)."""
    if sel == 6:
        return value
    shift, width = (8 * sel, 8) if sel < 4 else (16 * (sel - 4), 16)
    mask = U32(((1 << width) - 1) << shift)
    placed = (value << U32(shift)) & mask
    if unused == 2:
        return (old & ~mask) | placed
    if unused == 1:
        top = (placed >> U32(shift + width - 1)) & U32(1)
        above = U32((0xFFFFFFFF << (shift + width)) & 0xFFFFFFFF)
        return np.where(top == 1, placed | above, placed)
    return placed


def base_name(op: Any) -> str:
    name: str = op.name
    for suffix in ("_E32", "_E64"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def finish(ctx: Ctx, t: str, result: np.ndarray) -> np.ndarray:
    """omod and clamp of float results (VOP3 only)."""
    if not ctx.vop3 or not t.startswith("f"):
        return result
    omod = ctx.field("omod")
    if omod:
        result = result * result.dtype.type((2.0, 4.0, 0.5)[omod - 1])
    if ctx.field("clmp"):
        result = np.clip(np.where(np.isnan(result), 0, result), 0, 1).astype(result.dtype)
    return result


def write_dest(b: Batch, ctx: Ctx, reg: int, t: str, value: np.ndarray) -> None:
    bits = to_bits(np.broadcast_to(value, (b.W, 64)), t)
    lanes = ctx.lanes(b)
    if BITS[t] == 64:
        b.write_v(b.v, reg, (bits & U64(0xFFFFFFFF)).astype(U32), lanes)
        b.write_v(b.v, reg + 1, (bits >> U64(32)).astype(U32), lanes)
        return
    if BITS[t] == 16:
        hi = ctx.vop3 and (ctx.field("opsel") >> 3) & 1
        old = b.v[reg]
        # 16-bit results on gfx9 zero the upper half unless op_sel writes it (then the low half stays)
        bits = (old & U32(0xFFFF)) | (bits << U32(16)) if hi else bits
    if ctx.sdwa:
        bits = _sdwa_write(b.v[reg], bits, ctx.field("dst_sel", 6), ctx.field("dst_unused"))
    b.write_v(b.v, reg, bits, lanes)



def lit_read(ctx: Ctx) -> Callable[[Batch], np.ndarray]:
    value = np.asarray(np.uint32(ctx.literal or 0)).view(F32)
    return lambda b: value


def vdst(inst: Any) -> int:
    """The destination VGPR: the decoder names it in the 9-bit source space (VGPRs from 256), or by
    its number where the encoding's field is 8 bits wide."""
    o = int(inst.vdst.offset)
    return o - 256 if o >= 256 else o



def sdst_of_vop3(inst: Any) -> int:
    return int(inst.vdst.offset) if int(inst.vdst.offset) < 256 else int(inst.vdst.offset) - 256

