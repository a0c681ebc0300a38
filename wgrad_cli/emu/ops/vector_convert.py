"""Conversions to and from the small float formats (fp8, bf8, fp6, bf6, fp4) that are more than one
function of typed sources: packed and scaled forms, with the CDNA4 ISA's rounding, saturation and
NaN rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from wgrad_cli.emu.machine import Batch, EmuFault, Run, Unsupported
from wgrad_cli.emu.ops import operands as opd
from wgrad_cli.emu.ops.vector_encoding import Ctx, vdst
from wgrad_cli.emu.ops.vector_math import (
    CODES,
    F16,
    F32,
    F64,
    SMALL,
    SMALL_BITS,
    U16,
    U32,
    U64,
    bf16_to_f32,
    f32_to_bf16_rne,
    to_bits,
    typed,
)


def _to_small(x: np.ndarray, fmt: str) -> np.ndarray:
    """Float values -> fp8, bf8 or fp4 codes, rounded to nearest even once from the exact value
    (ml_dtypes rounds from the input type itself). fp8/bf8: with MODE.FP16_OVFL clear (LLVM's
    default) an overflow is NaN for fp8 and infinity for bf8, as the CDNA4 ISA's FP16_OVFL table says
    of infinite inputs. fp4: "If a value exceeds the FP4/FP6 representable range after rounding, the
    value is clamped/saturated to the maximum FP4/FP6 magnitude, preserving the sign", and a value
    below the smallest subnormal after rounding is zero (signed, as rounding leaves it), which is what
    ml_dtypes does (CDNA4 ISA 7.3); fp6 and bf6 likewise. These have no NaN and the text does not say
    what a NaN becomes: `_no_nan` stops the run rather than take ml_dtypes' choice."""
    with np.errstate(all="ignore"):
        return np.asarray(x).astype(SMALL[fmt]).view(np.uint8).astype(U32)


def _no_nan(b: Batch, values: np.ndarray, fmt: str) -> None:
    """Stop the run where a lane in EXEC converts a NaN to a format without NaN (fp6, bf6, fp4)."""
    if fmt not in ("fp8", "bf8") and np.isnan(values[b.lanes()]).any():
        raise EmuFault(f"a NaN converted to {fmt.upper()} is not implemented by the emulator (the ISA does "
                       "not define it)")


def _e8m0(scale: np.ndarray) -> np.ndarray:
    """The exponent of a scale operand as 2^(e - 127) in fp64: "The scale is an E8M0 exponent with a bias
    of 127", read from the float's exponent field (bits 30:23), and 0xFF is NaN (CDNA4 ISA 6.7.1, 7.2)."""
    e = ((scale >> U32(23)) & U32(0xFF)).astype(np.int64)
    return np.asarray(np.where(e == 255, np.nan, np.ldexp(1.0, e - 127)))


def _round_16(x: np.ndarray, t: str) -> np.ndarray:
    """fp64 values rounded to nearest even to f16 or bf16, as 16-bit codes in uint32. Only values with a
    short significand (small formats times a power of two) come here: those are exact in fp32, so
    rounding fp32 to bf16 is the one rounding."""
    with np.errstate(all="ignore"):
        return to_bits(x.astype(F16), "f16") if t == "f16" else f32_to_bf16_rne(x.astype(F32))


SCALED = re.compile(r"V_CVT_SCALEF32_(PK_)?(F32|F16|BF16|FP8|BF8|FP4)_(F32|F16|BF16|FP8|BF8|FP4)")


def _half_read(word: opd.Read, t: str, hi: bool) -> Callable[[Batch], np.ndarray]:
    """The low or high half of a register as f16 or bf16 values (bf16 as its exact fp32)."""
    if t == "f16":
        return lambda b: typed(word(b), "f16", hi)
    return lambda b: bf16_to_f32(typed(word(b), "b16", hi))


def cvt_to_small(ctx: Ctx, fmt: str, src: str, scaled: bool) -> Run:
    """V_CVT_PK_FP8_F32 / _BF8_F32 and V_CVT_SCALEF32_PK_{FP8,BF8,FP4}_{F32,F16,BF16} (CDNA4 pseudo-code):
    two values, S0 and S1 (f32) or S0's low and high halves (f16, bf16), each divided by the scale
    2^(e - 127) of the next operand (the F8/F4 value times the scale is the number it stands for: the
    scale "add[s] an 8-bit exponent bias ... to each F4/F6/F8 value", ISA 6.7.1; so does LLVM's
    arith.scaling_truncf, x / scale, lowered to these ops), rounded to nearest even (`_to_small`);
    { tmp1, tmp0 } is written to the 16-bit half OPSEL[3] picks (fp8, bf8) or the byte OPSEL[3:2]
    picks (fp4), and "Other destination bits are preserved". f32 sources take abs/neg; the packed
    16-bit ones do not here (which half a modifier acts on is not said), nor the scaled ops clamp or omod."""
    bits = 2 * SMALL_BITS[fmt]
    if src == "f32":
        first, second = ctx.read(0, "f32"), ctx.read(1, "f32")
        reads: list[Callable[[Batch], np.ndarray]] = [first, second]
    else:
        if ctx.field("abs") or ctx.field("neg"):
            raise Unsupported(f"{ctx.inst.op.name} with input modifiers")
        reads = [_half_read(opd.vector(ctx.src_number(0), 32, ctx.literal), src, hi) for hi in (False, True)]
    scale = opd.vector(ctx.src_number(2 if src == "f32" else 1), 32, ctx.literal) if scaled else None
    # V_CVT_PK_FP8_F32 "ignores: clamp, omod" (ISA table 31)
    if scaled and (ctx.field("clmp") or ctx.field("omod")):
        raise Unsupported(f"{ctx.inst.op.name} with clamp or omod")
    opsel = ctx.field("opsel")
    shift = U32(16 * ((opsel >> 3) & 1) if bits == 16 else 8 * ((opsel >> 2) & 3))
    mask = U32(((1 << bits) - 1) << int(shift))
    d = vdst(ctx.inst)

    def run(b: Batch) -> None:
        # exact: a power of two
        factor = 1.0 / _e8m0(np.broadcast_to(scale(b), (b.W, 64))) if scale is not None else 1.0
        values = [np.broadcast_to(r(b), (b.W, 64)).astype(F64) * factor for r in reads]
        for v in values:
            _no_nan(b, v, fmt)
        codes = [_to_small(v, fmt) for v in values]
        pair = codes[0] | (codes[1] << U32(bits // 2))
        b.write_v(b.v, d, (b.v[d] & ~mask) | (pair << shift))
    return run


def cvt_scaled_from_small(ctx: Ctx, fmt: str, dst: str, packed: bool) -> Run:
    """V_CVT_SCALEF32_[PK_]{F32,F16,BF16}_{FP8,BF8,FP4} (CDNA4 pseudo-code): one or two codes of S0 (the
    byte OPSEL[1:0] picks; for two fp8/bf8 codes the 16-bit half OPSEL[0] picks; two fp4 codes are the
    low and high nibble of the byte), each times 2^(e - 127) for the E8M0 scale e of S1, rounded to
    nearest even to the destination type (exact in fp64 before). f32 results go to D and D+1, 16-bit
    ones to D's low and high halves; the single f16 result to the half OPSEL[3] picks ("OPSEL[3]
    controls destination hi/lo"), the other half kept, as LLVM's form of the op (its old value a tied
    operand) has it. The sources take no modifiers ("Conversion from F4/F6/F8 do not support input
    modifiers"); clamp and omod are not taken either."""
    table, width = CODES[fmt], SMALL_BITS[fmt]
    count = 2 if packed else 1
    src = opd.vector(ctx.src_number(0), 32, ctx.literal)
    scale = opd.vector(ctx.src_number(1), 32, ctx.literal)
    if ctx.field("clmp") or ctx.field("omod"):
        raise Unsupported(f"{ctx.inst.op.name} with clamp or omod")
    opsel = ctx.field("opsel")
    unit = width * count  # the bits selected: one byte, or a half for two fp8 codes
    shift = U32(unit * (opsel & (32 // unit - 1)))
    hi = bool((opsel >> 3) & 1)
    d = vdst(ctx.inst)

    def run(b: Batch) -> None:
        factor = _e8m0(np.broadcast_to(scale(b), (b.W, 64)))
        word = np.broadcast_to(src(b), (b.W, 64)) >> shift
        values = [table[(word >> U32(width * k)) & U32((1 << width) - 1)] * factor for k in range(count)]
        if dst == "f32":
            for k, value in enumerate(values):
                with np.errstate(over="ignore"):
                    b.write_v(b.v, d + k, value.astype(F32).view(U32))
        elif packed:
            b.write_v(b.v, d, _round_16(values[0], dst) | (_round_16(values[1], dst) << U32(16)))
        else:
            half = _round_16(values[0], dst)
            b.write_v(b.v, d, (b.v[d] & U32(0xFFFF)) | (half << U32(16)) if hi
                      else (b.v[d] & U32(0xFFFF0000)) | half)
    return run


WIDE_SCALED = re.compile(r"V_CVT_SCALEF32_(PK32|2XPK16)_(F32|F16|BF16|FP6|BF6)_(F32|F16|BF16|FP6|BF6)")
SIX = [divmod(6 * k, 32) for k in range(32)]  # (register, bit) of each of 32 packed 6-bit codes


def cvt_scaled_32(ctx: Ctx, to: str, frm: str, two: bool) -> Run:
    """V_CVT_SCALEF32_PK32_* and _2XPK16_* (CDNA4 pseudo-code): 32 fp6/bf6 codes packed in six VGPRs (code
    k at bits 6k+5:6k of the 192) to or from 32 f32 (32 VGPRs), f16 or bf16 values (element k at bits
    16k+15:16k of 16 VGPRs); 2XPK16 takes 16 f32 values from each of S0 and S1, interleaved (S0's element
    p is code 2p, S1's code 2p+1). The scale is the E8M0 exponent of the last source; values are divided
    by it (to fp6) or multiplied (from fp6) and rounded to nearest even as in `cvt_to_small` and
    `cvt_scaled_from_small` (the fp6 descriptions name no rounding mode: MODE's default, the one the
    emulator models, is taken). Multi-register operands must be VGPRs (ISA 6.7.1); no modifier, clamp
    or omod is taken."""
    if ctx.field("abs") or ctx.field("neg") or ctx.field("clmp") or ctx.field("omod"):
        raise Unsupported(f"{ctx.inst.op.name} with modifiers")
    sources = [ctx.src_number(k) - 256 for k in range(2 if two else 1)]
    if min(sources) < 0:
        raise Unsupported(f"{ctx.inst.op.name} with a non-VGPR source")
    scale = opd.vector(ctx.src_number(len(sources)), 32, ctx.literal)
    d = vdst(ctx.inst)

    def regs(b: Batch, base: int, n: int) -> np.ndarray:
        return np.moveaxis(b.v[base:base + n], 0, -1)  # (wave, lane, register)

    def halves(words: np.ndarray, t: str) -> np.ndarray:
        h = (words[..., None] >> np.array([0, 16], dtype=U32)).reshape(*words.shape[:-1], -1) & U32(0xFFFF)
        return h.astype(U16).view(F16).astype(F64) if t == "f16" else bf16_to_f32(h).astype(F64)

    def quantize(b: Batch) -> None:
        if two:  # interleave S0 and S1: code 2p from S0[p], 2p+1 from S1[p]
            values = np.stack([regs(b, r, 16).view(F32) for r in sources],
                              axis=-1).reshape(b.W, 64, 32).astype(F64)
        else:
            values = halves(regs(b, sources[0], 16), frm)
        values = values / _e8m0(np.broadcast_to(scale(b), (b.W, 64)))[..., None]
        _no_nan(b, values, to)
        codes = _to_small(values, to).astype(U64)
        words = np.zeros((b.W, 64, 7), dtype=U64)
        for k, (reg, bit) in enumerate(SIX):  # a code may straddle two registers
            words[..., reg] |= codes[..., k] << U64(bit)
            words[..., reg + 1] |= words[..., reg] >> U64(32)
            words[..., reg] &= U64(0xFFFFFFFF)
        for j in range(6):
            b.write_v(b.v, d + j, words[..., j].astype(U32))

    def dequantize(b: Batch) -> None:
        words = regs(b, sources[0], 6).astype(U64)
        pairs = words | (np.concatenate([words[..., 1:], np.zeros_like(words[..., :1])], axis=-1) << U64(32))
        codes = np.stack([(pairs[..., reg] >> U64(bit)) & U64(63) for reg, bit in SIX], axis=-1)
        values = CODES[frm][codes] * _e8m0(np.broadcast_to(scale(b), (b.W, 64)))[..., None]
        if to == "f32":
            with np.errstate(over="ignore"):
                results = values.astype(F32).view(U32)
        else:
            h = _round_16(values, to)
            results = h[..., 0::2] | (h[..., 1::2] << U32(16))
        for j in range(results.shape[-1]):
            b.write_v(b.v, d + j, results[..., j])
    return quantize if to in SMALL else dequantize


