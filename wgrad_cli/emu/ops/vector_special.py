"""Vector ALU instructions that are not one function of typed sources (`vector.VOPS`): the ones
that write a carry or an SGPR, move between lanes or register files, take the division sequence's
scale steps, or convert small float formats; each is a row of `SPECIAL` (by name) or `FAMILIES`
(by pattern), which compiles it from its encoding.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from wgrad_cli.emu.machine import VCC, Batch, EmuFault, Run, Unsupported
from wgrad_cli.emu.ops import operands as opd
from wgrad_cli.emu.ops.vector_convert import (
    SCALED,
    WIDE_SCALED,
    cvt_scaled_32,
    cvt_scaled_from_small,
    cvt_to_small,
)
from wgrad_cli.emu.ops.vector_encoding import Ctx, finish, sdst_of_vop3, vdst, write_dest
from wgrad_cli.emu.ops.vector_math import (
    CODES,
    F32,
    F64,
    SMALL,
    U32,
    U64,
    denormal,
    exponent,
    fma64,
    fused,
    ldexp,
    typed,
)

# The fp32 and fp64 division sequence (v_div_scale, v_rcp, Newton steps in fma, v_div_fmas,
# v_div_fixup): per type the result dtype, the exponent bias, div_scale's "N/D near the maximum"
# exponent gap, its power-of-two scale and its "numerator is tiny" exponent.
DIV = {"f32": (F32, 127, 96, 64, 23), "f64": (F64, 1023, 768, 128, 53)}

def _div_scale(ctx: Ctx, t: str) -> Run:
    """V_DIV_SCALE_F32/F64 s0, den, num: s0 (den or num) scaled by 2^+-k where the quotient or the
    reciprocal would leave the normal range, and VCC (the instruction's sdst) set where
    v_div_fmas must scale the result back. Where both 1/den and num/den are subnormal the text
    scales den up, to infinity for den near the maximum; here it scales den down, as its case
    "1/den subnormal" does, which keeps the sequence IEEE division (only fp64 reaches the case:
    the f32 text computes 1/den in fp64). A quotient that rounds to zero from below the subnormal
    range counts as subnormal too: unscaled, the Newton steps run among subnormals and a quotient
    of exactly half the smallest subnormal comes out as that subnormal instead of 0, and the ISA
    says the whole sequence is IEEE division."""
    s0, s1, s2 = (ctx.read(k, t) for k in range(3))
    _, _, gap, k, tiny = DIV[t]
    sdst, d = int(ctx.inst.sdst.offset), vdst(ctx.inst)

    def run(b: Batch) -> None:
        x, den, num = np.broadcast_arrays(s0(b), s1(b), s2(b))
        with np.errstate(all="ignore"):
            quotient, inverse = num / den, 1.0 / den.astype(F64)
            small = denormal(quotient) | ((quotient == 0) & (num != 0) & np.isfinite(num) & np.isfinite(den))
            up, down = ldexp(x, np.asarray(k), x.dtype.type), ldexp(x, np.asarray(-k), x.dtype.type)
            conditions = [(num == 0) | (den == 0), exponent(num) - exponent(den) >= gap, denormal(den),
                          denormal(inverse) & small, denormal(inverse), small, exponent(num) <= tiny]
            result = np.select(conditions, [np.full_like(x, np.nan), np.where(x == den, up, x), up,
                                            np.where(x == den, down, x), down, np.where(x == num, up, x), up],
                               x)
        vcc = conditions[1] | (~conditions[0] & ~conditions[1] & ~conditions[2] & conditions[3]) | \
            (~np.any(conditions[:5], axis=0) & conditions[5])
        write_dest(b, ctx, d, t, result)
        b.write_mask64(sdst, np.broadcast_to(vcc, (b.W, 64)) & b.lanes())
    return run


def _div_fmas(ctx: Ctx, t: str) -> Run:
    """V_DIV_FMAS_F32/F64: fma(s0, s1, s2), scaled where VCC is set back by the power of two that
    v_div_scale applied. The ISA text writes the scale as 2^32 (f32) and 2^64 (f64) with no sign,
    which cannot undo div_scale's 2^64 (2^128); here it is 2^+k where the scaled quotient s2 is
    large (the denominator was scaled up) and 2^-k where it is small (the numerator was)."""
    reads = [ctx.read(i, t) for i in range(3)]
    _, bias, _, k, _ = DIV[t]
    d = vdst(ctx.inst)

    def run(b: Batch) -> None:
        x, y, z = np.broadcast_arrays(*(r(b) for r in reads))
        exp2 = np.where(b.mask64(VCC), np.where(exponent(z) > bias, k, -k), 0)
        result = fused(x, y, z, F32, exp2) if t == "f32" else fma64(x, y, z, exp2)
        write_dest(b, ctx, d, t, finish(ctx, t, result))
    return run


def _cndmask(ctx: Ctx, _name: str) -> Run:
    a, c = ctx.read(0, "b32"), ctx.read(1, "b32")
    sel = VCC if not ctx.vop3 else int(ctx.inst.src2.offset)
    d = vdst(ctx.inst)
    return lambda b: write_dest(b, ctx, d, "b32", np.where(b.mask64(sel), c(b), a(b)))


def _mov_b64(ctx: Ctx, _name: str) -> Run:
    src = opd.vector(ctx.src_number(0), 64, ctx.literal)
    d = vdst(ctx.inst)
    return lambda b: write_dest(b, ctx, d, "b64", np.broadcast_to(src(b), (b.W, 64)))


def _carry(ctx: Ctx, name: str) -> Run:
    """V_ADD_CO/SUB_CO/SUBREV_CO (carry out) and V_ADDC_CO/SUBB_CO/SUBBREV_CO (carry in and out)."""
    inst = ctx.inst
    a, c = ctx.read(0, "u32"), ctx.read(1, "u32")
    carry_out = int(inst.sdst.offset) if ctx.vop3 else VCC
    carry_in = int(inst.src2.offset) if ctx.vop3 else VCC
    uses_in = name in ("V_ADDC_CO_U32", "V_SUBB_CO_U32", "V_SUBBREV_CO_U32")
    rev = "SUBREV" in name or "SUBBREV" in name
    add = "ADD" in name
    d = vdst(inst)

    def carry(b: Batch) -> None:
        x, y = a(b).astype(np.int64), c(b).astype(np.int64)
        if rev:
            x, y = y, x
        cin = b.mask64(carry_in).astype(np.int64) if uses_in else 0
        total = x + y + cin if add else x - y - cin
        out = (total > 0xFFFFFFFF) if add else (total < 0)
        lanes = b.lanes()
        write_dest(b, ctx, d, "u32", (total & 0xFFFFFFFF).astype(U32))
        b.write_mask64(carry_out, np.broadcast_to(out, (b.W, 64)) & lanes)
    return carry


def _mad64(ctx: Ctx, name: str) -> Run:
    inst = ctx.inst
    signed = name == "V_MAD_I64_I32"
    a, c = ctx.read(0, "i32" if signed else "u32"), ctx.read(1, "i32" if signed else "u32")
    s2 = opd.vector(int(inst.src2.offset), 64, ctx.literal)
    sd = int(inst.sdst.offset)
    d = vdst(inst)

    def mad64(b: Batch) -> None:
        if signed:  # the product fits in 63 bits; the carry out is the signed overflow of the add
            sprod = a(b).astype(np.int64) * c(b).astype(np.int64)
            addend = s2(b).view(np.int64)
            total = (sprod.astype(U64) + addend.astype(U64))
            result = total.view(np.int64)
            over = np.broadcast_to(((sprod < 0) == (addend < 0)) & ((result < 0) != (sprod < 0)), (b.W, 64))
        else:
            prod = a(b).astype(U64) * c(b).astype(U64)
            total = prod + s2(b)
            over = np.broadcast_to(total < prod, (b.W, 64))
        write_dest(b, ctx, d, "b64", np.broadcast_to(total, (b.W, 64)))
        if sd < 128:
            b.write_mask64(sd, over & b.lanes())
    return mad64


def _readfirstlane(ctx: Ctx, _name: str) -> Run:
    src = opd.vector(ctx.src_number(0), 32, ctx.literal)
    d = sdst_of_vop3(ctx.inst)  # an SGPR, which the decoder names in the VGPR range for the VOP1 form

    def first(b: Batch) -> None:
        ex = b.exec
        lane = np.where(ex.any(axis=1), ex.argmax(axis=1), 0)
        value = np.broadcast_to(src(b), (b.W, 64))[np.arange(b.W), lane]
        b.write_s(d, value.astype(U32))
    return first


def _readlane(ctx: Ctx, _name: str) -> Run:
    src = opd.vector(ctx.src_number(0), 32)
    lane_of = opd.scalar(int(ctx.inst.src1.offset), 32, ctx.literal)
    d = sdst_of_vop3(ctx.inst)
    return lambda b: b.write_s(d, np.broadcast_to(src(b), (b.W, 64))[np.arange(b.W),
                                                                     lane_of(b) & U32(63)].astype(U32))


def _writelane(ctx: Ctx, _name: str) -> Run:
    val = opd.scalar(int(ctx.inst.src0.offset), 32, ctx.literal)
    lane_of = opd.scalar(int(ctx.inst.src1.offset), 32, ctx.literal)
    d = vdst(ctx.inst)

    def writelane(b: Batch) -> None:
        mask = np.zeros((b.W, 64), dtype=bool)
        mask[np.arange(b.W), lane_of(b) & U32(63)] = True
        b.write_v(b.v, d, val(b)[:, None], mask & b.wm[:, None])
    return writelane


def _mbcnt(ctx: Ctx, name: str) -> Run:
    a, c = ctx.read(0, "u32"), ctx.read(1, "u32")
    hi = name == "V_MBCNT_HI_U32_B32"
    lane = np.arange(64, dtype=np.uint64)
    below = np.where(lane < 32, (U64(1) << lane) - U64(1), U64(0xFFFFFFFF)) if not hi else \
        np.where(lane < 32, U64(0), (U64(1) << (lane - U64(32))) - U64(1))
    d = vdst(ctx.inst)

    def mbcnt(b: Batch) -> None:
        bits = np.broadcast_to(a(b), (b.W, 64)).astype(U64) & below
        count = np.unpackbits(np.ascontiguousarray(bits.astype("<u4"))[..., None].view(np.uint8),
                              axis=-1).sum(axis=-1)
        write_dest(b, ctx, d, "u32", count.astype(U32) + c(b))
    return mbcnt


def _swap(ctx: Ctx, _name: str) -> Run:
    s0 = ctx.src_number(0) - 256
    d = vdst(ctx.inst)

    def swap(b: Batch) -> None:
        x, y = b.v[s0].copy(), b.v[d].copy()
        b.write_v(b.v, d, x)
        b.write_v(b.v, s0, y)
    return swap


def _cvt_pk_f32(ctx: Ctx, name: str) -> Run:
    """V_CVT_PK_F32_FP8/BF8: two fp8 or bf8 codes of a word's low or high half to two fp32 values."""
    table = CODES["fp8" if name.endswith("FP8") else "bf8"]
    src = ctx.read(0, "b32")
    hi = bool(ctx.field("opsel") & 1) if ctx.vop3 else (ctx.sdwa and ctx.field("src0_sel", 6) in (5,))
    d = vdst(ctx.inst)

    def pk(b: Batch) -> None:
        word = src(b) >> U32(16) if hi else src(b)
        write_dest(b, ctx, d, "f32", table[word & U32(0xFF)])
        write_dest(b, ctx, d + 1, "f32", table[(word >> U32(8)) & U32(0xFF)])
    return pk


def _accvgpr(ctx: Ctx, name: str) -> Run:
    """V_ACCVGPR_READ (AGPR to VGPR), V_ACCVGPR_WRITE (to an AGPR) and V_ACCVGPR_MOV_B32 (AGPR to AGPR)."""
    src_n = ctx.src_number(0)
    d = vdst(ctx.inst)
    if name == "V_ACCVGPR_READ":
        r = src_n - 256
        return lambda b: b.write_v(b.v, d, b.a[r])
    if name == "V_ACCVGPR_MOV_B32":
        r = src_n - 256
        return lambda b: b.write_v(b.a, d, b.a[r])
    src = opd.vector(src_n, 32, ctx.literal)
    return lambda b: b.write_v(b.a, d, src(b))


def _scaled(ctx: Ctx, m: re.Match[str]) -> Run:
    to, frm = m.group(2).lower(), m.group(3).lower()
    return (cvt_to_small(ctx, to, frm, scaled=True) if to in SMALL
            else cvt_scaled_from_small(ctx, frm, to, bool(m.group(1))))


def _permlane_swap(ctx: Ctx, rows: int) -> Run:
    """V_PERMLANE16_SWAP_B32 / V_PERMLANE32_SWAP_B32 (CDNA4 pseudo-code), both registers written: SRC0's
    lanes L with L & rows == 0 (rows 0 and 2 of 16 lanes, or rows 0-1) trade values with VDST's lanes
    L + rows. The text loops over every lane with no EXEC test and gives the VOP3 form's fi and
    bound_ctrl bits (OPSEL[0], OPSEL[1] in LLVM's encoding) no meaning; the EXEC rule of other VALU
    ops would keep lanes off in EXEC. The two agree only with every lane on, so a wave with lanes off
    stops the run; fi and bound_ctrl change nothing then. ABS, NEG and OMOD "should all be zeroed":
    an encoding with any of them (or clamp, SDWA, DPP) is not run."""
    if ctx.sdwa or ctx.dpp or ctx.field("abs") or ctx.field("neg") or ctx.field("omod") or ctx.field("clmp"):
        raise Unsupported(ctx.inst.op.name)
    a = ctx.src_number(0) - 256
    if a < 0:
        raise Unsupported(f"{ctx.inst.op.name} with a non-VGPR source")
    d = vdst(ctx.inst)
    lane = np.arange(64)
    low = (lane & rows) == 0
    partner = lane ^ rows

    def run(b: Batch) -> None:
        if not b.whole_waves():
            raise EmuFault(f"{ctx.inst.op.name.lower()} with lanes off in EXEC is not implemented by the "
                           "emulator (the ISA does not say what EXEC, fi and bound_ctrl do)")
        x, y = b.v[a][:, partner], b.v[d][:, partner]  # copies, both read before either is written
        lanes = b.lanes()
        b.write_v(b.v, a, y, lanes & low)  # only SRC0's low lanes and VDST's high ones: SRC0 may be VDST
        b.write_v(b.v, d, x, lanes & ~low)
    return run


def _bitop3(ctx: Ctx, half: bool) -> Run:
    """V_BITOP3_B32/_B16 (CDNA4 ISA pseudo-code): an 8-bit truth table TTBL = {OMOD[1:0],
    ABS[2:0], NEG[2:0]} picks, per bit, the minterm of (S0, S1, S2) selected by bit
    4*S0 + 2*S1 + S2. The abs/neg/omod fields hold the table, so no source modifier applies."""
    table = (ctx.field("omod") & 3) << 6 | (ctx.field("abs") & 7) << 3 | (ctx.field("neg") & 7)
    srcs = [opd.vector(ctx.src_number(k), 32, ctx.literal) for k in range(3)]
    opsel = ctx.field("opsel") if half else 0
    d = vdst(ctx.inst)
    t = "b16" if half else "b32"

    def run(b: Batch) -> None:
        a, c, e = (typed(src(b), t, bool((opsel >> k) & 1)) for k, src in enumerate(srcs))
        out = np.zeros(np.broadcast(a, c, e).shape, dtype=a.dtype)
        for row in range(8):
            if (table >> row) & 1:
                out |= (a if row & 4 else ~a) & (c if row & 2 else ~c) & (e if row & 1 else ~e)
        write_dest(b, ctx, d, t, out)
    return run


# name -> what compiles it, from the instruction's encoding and its name
SPECIAL: dict[str, Callable[[Ctx, str], Run]] = {
    "V_NOP": lambda ctx, name: lambda b: None,
    **dict.fromkeys(("V_DIV_SCALE_F32", "V_DIV_SCALE_F64"),
                    lambda ctx, name: _div_scale(ctx, name[-3:].lower())),
    **dict.fromkeys(("V_DIV_FMAS_F32", "V_DIV_FMAS_F64"),
                    lambda ctx, name: _div_fmas(ctx, name[-3:].lower())),
    "V_CNDMASK_B32": _cndmask,
    "V_MOV_B64": _mov_b64,
    **dict.fromkeys(("V_ADD_CO_U32", "V_SUB_CO_U32", "V_SUBREV_CO_U32", "V_ADDC_CO_U32", "V_SUBB_CO_U32",
                     "V_SUBBREV_CO_U32"), _carry),
    **dict.fromkeys(("V_MAD_U64_U32", "V_MAD_I64_I32"), _mad64),
    "V_READFIRSTLANE_B32": _readfirstlane,
    "V_READLANE_B32": _readlane,
    "V_WRITELANE_B32": _writelane,
    **dict.fromkeys(("V_MBCNT_LO_U32_B32", "V_MBCNT_HI_U32_B32"), _mbcnt),
    "V_SWAP_B32": _swap,
    **dict.fromkeys(("V_CVT_PK_F32_FP8", "V_CVT_PK_F32_BF8"), _cvt_pk_f32),
    **dict.fromkeys(("V_CVT_PK_FP8_F32", "V_CVT_PK_BF8_F32"),
                    lambda ctx, name: cvt_to_small(ctx, name[9:12].lower(), "f32", scaled=False)),
    **dict.fromkeys(("V_PERMLANE16_SWAP_B32", "V_PERMLANE32_SWAP_B32"),
                    lambda ctx, name: _permlane_swap(ctx, 16 if "16" in name else 32)),
    **dict.fromkeys(("V_BITOP3_B32", "V_BITOP3_B16"), lambda ctx, name: _bitop3(ctx, name == "V_BITOP3_B16")),
    **dict.fromkeys(("V_ACCVGPR_READ", "V_ACCVGPR_WRITE", "V_ACCVGPR_MOV_B32"), _accvgpr),
}
# families of names, by pattern -> what compiles one, from the instruction's encoding and the match
FAMILIES: tuple[tuple[re.Pattern[str], Callable[[Ctx, re.Match[str]], Run]], ...] = (
    (SCALED, _scaled),
    (WIDE_SCALED, lambda ctx, m: cvt_scaled_32(ctx, m.group(2).lower(), m.group(3).lower(),
                                               m.group(1) == "2XPK16")),
)


def special(ctx: Ctx, name: str) -> Run | None:
    """The op of a vector instruction that SPECIAL or FAMILIES holds; None for the others."""
    if name in SPECIAL:
        return SPECIAL[name](ctx, name)
    for pattern, build in FAMILIES:
        if match := pattern.fullmatch(name):
            return build(ctx, match)
    return None
