"""Vector ALU instructions: VOP1, VOP2, VOP3, VOP3SD, VOPC and their SDWA and DPP forms.

Each opcode is a row of `VOPS`: the destination type, the source types and a numpy function of
the typed sources; the encoding's modifiers (abs, neg, clamp, omod, op_sel, SDWA selects) are
applied around it, as the CDNA4 ISA reference's "Vector ALU Operations" chapter and each
opcode's pseudo-code define them; a DPP form reads its first source from another lane (`Dpp`).
Lanes outside EXEC keep their old values (VOPC writes 0 for them into its mask). Float arithmetic is IEEE round-to-nearest-even as numpy does it; fused
multiply-adds are rounded once (see `fused`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np

from wgrad_cli.emu.machine import EXEC, VCC, Batch, EmuFault, Op, Run, Unsupported, lookup
from wgrad_cli.emu.ops import operands as opd

U16, U32, U64 = np.uint16, np.uint32, np.uint64
F16, F32, F64 = np.float16, np.float32, np.float64
BITS = {"b16": 16, "u16": 16, "i16": 16, "f16": 16, "b32": 32, "u32": 32, "i32": 32, "f32": 32,
        "b64": 64, "u64": 64, "i64": 64, "f64": 64}
VIEW = {"b16": U16, "u16": U16, "i16": np.int16, "f16": F16, "b32": U32, "u32": U32, "i32": np.int32, "f32": F32,
        "b64": U64, "u64": U64, "i64": np.int64, "f64": F64}


def typed(bits: np.ndarray, t: str, hi: bool = False) -> np.ndarray:
    """Register bits (uint32 or uint64) as values of type t; 16-bit types take the low or high half."""
    if BITS[t] == 16:
        half = (bits >> U32(16)) if hi else bits
        return np.asarray(half).astype(U16).view(VIEW[t])
    return np.asarray(bits).astype(U64 if BITS[t] == 64 else U32, copy=False).view(VIEW[t])


def to_bits(value: np.ndarray, t: str) -> np.ndarray:
    """Values of type t back to register bits: uint32 (16-bit types zero-extended) or uint64."""
    arr = np.asarray(value)
    if BITS[t] == 16:
        return arr.astype(VIEW[t]).view(U16).astype(U32)
    if BITS[t] == 64:
        return arr.astype(VIEW[t]).view(U64)
    return arr.astype(VIEW[t]).view(U32)


def fused(a: np.ndarray, b: np.ndarray, c: np.ndarray, dtype: type = F32,
          exp2: np.ndarray | int = 0) -> np.ndarray:
    """2^exp2 * (a * b + c) rounded once to fp32 or fp16. The product is exact in fp64 (so is the
    power-of-two scale) and TwoSum gives the exact error of the fp64 sum; an fp64 sum that lands
    exactly between two values of the result type is moved off the tie toward the true value, so
    the second rounding cannot go the wrong way."""
    with np.errstate(all="ignore"):
        scale = np.ldexp(F64(1), exp2)
        p = a.astype(F64) * b.astype(F64) * scale
        c64 = np.asarray(c).astype(F64) * scale
        s = p + c64
        bb = s - p
        e = (p - (s - bb)) + (c64 - bb)
        r: np.ndarray = s.astype(dtype)
        other = np.nextafter(r, np.where(s > r.astype(F64), np.inf, -np.inf).astype(dtype))
        tie = (r.astype(F64) != s) & ((r.astype(F64) + other.astype(F64)) / 2 == s) & (e != 0) & np.isfinite(s)
        if tie.any():
            s = np.where(tie, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
            r = s.astype(dtype)
    return np.asarray(r)


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return fused(a, b, c, F32)


def _two_sum(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s, e) with s = fl(x + y) and s + e = x + y exactly (Knuth), for finite sums."""
    s = x + y
    bb = s - x
    return s, (x - (s - bb)) + (y - bb)


def _two_product(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p, e) with p = fl(x * y) and p + e = x * y exactly (Dekker), where neither factor is near
    the overflow threshold and the product is far from underflow (the caller checks)."""
    def split(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = F64(2**27 + 1) * v
        hi = t - (t - v)
        return hi, v - hi
    p = x * y
    xh, xl = split(x)
    yh, yl = split(y)
    return p, ((xh * yh - p) + xh * yl + xl * yh) + xl * yl


def _exact_fma(a: float, b: float, c: float, exp2: int) -> float:
    exact = (Fraction(a) * Fraction(b) + Fraction(c)) * Fraction(2) ** exp2
    if exact == 0:  # an exact zero is +0 unless both addends are zeros of the same sign (IEEE 754 6.3)
        return a * b + c if a * b == 0 and c == 0 else 0.0
    try:
        return float(exact)  # int / int: correctly rounded, subnormals included
    except OverflowError:
        return float("inf") if exact > 0 else float("-inf")


_EXACT_FMA = np.frompyfunc(_exact_fma, 4, 1)


def fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray, exp2: np.ndarray | int = 0) -> np.ndarray:
    """2^exp2 * (a * b + c) rounded once to fp64 (fp64 has no wider type to round from): a * b + c
    is split exactly into s + q + q_err (Dekker's product, Knuth's sums) and r = fl(s + q) is the
    answer where q_err cannot move it across a rounding boundary; the other finite lanes (near a
    tie, a zero, an extreme exponent, exp2 != 0) take exact rational arithmetic, and infinities
    and NaNs IEEE arithmetic."""
    a, b, c, k = np.broadcast_arrays(np.asarray(a, F64), np.asarray(b, F64), np.asarray(c, F64), np.asarray(exp2))
    with np.errstate(all="ignore"):
        out = np.ldexp(a * b + c, k)
        # a product of finite operands is exact, never infinite: an infinite c is the result
        out = np.where(np.isfinite(a) & np.isfinite(b) & np.isinf(c), c, out)
        ph, pl = _two_product(a, b)
        s, t = _two_sum(ph, c)
        q, q_err = _two_sum(t, pl)
        r, r_err = _two_sum(s, q)
        half = np.spacing(np.abs(r)) / 2  # half the gap above |r|; below a power of two the gap halves
        half = np.where((r.view(np.uint64) & np.uint64((1 << 52) - 1)) == 0, half / 2, half)
        splits = [(np.abs(v) < 2.0**995) & ((np.abs(v) > 2.0**-960) | (v == 0)) for v in (a, b)]  # Dekker is exact
        safe = splits[0] & splits[1] & ((np.abs(ph) > 2.0**-900) | (ph == 0)) \
            & np.isfinite(c) & np.isfinite(r) & (r != 0) & (k == 0) \
            & ((q_err == 0) | (np.abs(r_err) + 4 * np.abs(q_err) <= 0.999 * half))
    out[safe] = r[safe]
    exact = np.isfinite(a) & np.isfinite(b) & np.isfinite(c) & ~safe
    if exact.any():
        out[exact] = _EXACT_FMA(a[exact], b[exact], c[exact], k[exact].astype(object)).astype(F64)
    return np.asarray(out)


def _cvt_int(x: np.ndarray, lo: int, hi: int, dtype: type) -> np.ndarray:
    """fp -> int conversion: truncate toward zero, clamp to range, NaN -> 0."""
    with np.errstate(all="ignore"):
        v = np.trunc(x.astype(F64))
        v = np.where(np.isnan(v), 0, np.clip(v, lo, hi))
    return v.astype(dtype)


def _ldexp(x: np.ndarray, e: np.ndarray, t: type) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.ldexp(x.astype(F64), np.clip(e.astype(np.int64), -2000, 2000)).astype(t)


def _bfe(a: np.ndarray, off: np.ndarray, width: np.ndarray, signed: bool) -> np.ndarray:
    o = (off & U32(31)).astype(U64)
    w = (width & U32(31)).astype(U64)
    field = (a.astype(U64) >> o) & ((U64(1) << w) - U64(1))
    if signed:
        sign = np.where(w > 0, (field >> np.maximum(w, U64(1)) - U64(1)) & U64(1), U64(0))
        field = np.where(sign == 1, field | ~((U64(1) << w) - U64(1)), field)
    return np.where(w == 0, U64(0), field).astype(U32)


def _perm(a: np.ndarray, b: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """V_PERM_B32: each result byte picks a byte of {a, b} (b is bytes 0-3) by a selector byte."""
    data = b.astype(U64) | (a.astype(U64) << U64(32))
    out = np.zeros(np.broadcast(a, b, sel).shape, dtype=U32)
    for k in range(4):
        s = ((sel >> U32(8 * k)) & U32(0xFF)).astype(U64)
        byte = (data >> (np.minimum(s, U64(7)) * U64(8))) & U64(0xFF)
        for selector, source_byte in ((8, 1), (9, 3), (10, 5), (11, 7)):  # the sign of byte 1, 3, 5 or 7, replicated
            sign = ((data >> U64(8 * source_byte + 7)) & U64(1)) * U64(0xFF)
            byte = np.where(s == selector, sign, byte)
        byte = np.where(s == 12, U64(0), byte)
        byte = np.where(s >= 13, U64(0xFF), byte)
        out |= (byte.astype(U32) << U32(8 * k))
    return out


# The small float formats gfx950 converts: OCP E4M3FN (fp8), E5M2 (bf8), E2M3 (fp6), E3M2 (bf6), E2M1 (fp4).
SMALL: dict[str, Any] = {"fp8": ml_dtypes.float8_e4m3fn, "bf8": ml_dtypes.float8_e5m2, "fp6": ml_dtypes.float6_e2m3fn,
                         "bf6": ml_dtypes.float6_e3m2fn, "fp4": ml_dtypes.float4_e2m1fn}
SMALL_BITS = {"fp8": 8, "bf8": 8, "fp6": 6, "bf6": 6, "fp4": 4}
# the exact (fp64) value of every code of each small format
CODES = {fmt: np.arange(1 << SMALL_BITS[fmt], dtype=np.uint8).view(dtype).astype(F64) for fmt, dtype in SMALL.items()}


def bf16_to_f32(x: np.ndarray) -> np.ndarray:
    return (x.astype(U32) << U32(16)).view(F32)


def f32_to_bf16_rne(x: np.ndarray) -> np.ndarray:
    bits = x.astype(F32).view(U32)
    rounded = ((bits.astype(U64) + U64(0x7FFF) + ((bits >> U32(16)) & U32(1)).astype(U64)) >> U64(16)).astype(U32)
    return np.where(np.isnan(x), (bits >> U32(16)) | U32(0x40), rounded) & U32(0xFFFF)


Fn = Callable[..., np.ndarray]


def _quiet_nans(a: np.ndarray, b: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The NaN cases V_MIN/V_MAX_F16/F32/F64 share (IEEE mode, which compute kernels run in): a
    signalling NaN in S0, else in S1, gives that NaN quieted; a quiet NaN gives the other operand."""
    quiet = 1 << (np.finfo(a.dtype).nmant - 1)
    bits = np.dtype(f"u{a.dtype.itemsize}")
    r = np.where(np.isnan(b), a, r)
    r = np.where(np.isnan(a), b, r)
    for x in (b, a):
        x_bits = x.view(bits)
        r = np.where(np.isnan(x) & ((x_bits & bits.type(quiet)) == 0), (x_bits | bits.type(quiet)).view(a.dtype), r)
    return np.asarray(r)


def min_num(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """V_MIN_F16/F32/F64 as the CDNA4 pseudo-code has it: -0 below +0, NaNs as _quiet_nans says
    (numpy's fmin returns +0 for fmin(-0, +0), and passes a signalling NaN's partner through)."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    r = np.where((a == 0) & (b == 0), np.where(np.signbit(a), a, b), np.where(a < b, a, b))
    return _quiet_nans(a, b, r)


def max_num(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """V_MAX_F16/F32/F64: +0 above -0, otherwise S0 >= S1 ? S0 : S1, NaNs as for min_num."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    r = np.where((a == 0) & (b == 0), np.where(np.signbit(a), b, a), np.where(a >= b, a, b))
    return _quiet_nans(a, b, r)


# name -> (destination type, source types, function)
VOPS: dict[str, tuple[str, tuple[str, ...], Fn]] = {
    "V_MOV_B32": ("b32", ("b32",), lambda a: a),
    "V_NOT_B32": ("b32", ("b32",), lambda a: ~a),
    "V_BFREV_B32": ("b32", ("b32",), lambda a: np.packbits(np.unpackbits(np.ascontiguousarray(a, dtype="<u4")[..., None].view(np.uint8), axis=-1, bitorder="little")[..., ::-1], axis=-1, bitorder="little").view("<u4")[..., 0]),
    "V_CVT_F32_I32": ("f32", ("i32",), lambda a: a.astype(F32)),
    "V_CVT_F32_U32": ("f32", ("u32",), lambda a: a.astype(F32)),
    "V_CVT_U32_F32": ("u32", ("f32",), lambda a: _cvt_int(a, 0, 2**32 - 1, U32)),
    "V_CVT_I32_F32": ("i32", ("f32",), lambda a: _cvt_int(a, -(2**31), 2**31 - 1, np.int32)),
    "V_CVT_F16_F32": ("f16", ("f32",), lambda a: a.astype(F16)),
    "V_CVT_F32_F16": ("f32", ("f16",), lambda a: a.astype(F32)),
    "V_CVT_F32_F64": ("f32", ("f64",), lambda a: a.astype(F32)),
    "V_CVT_F64_F32": ("f64", ("f32",), lambda a: a.astype(F64)),
    "V_CVT_F64_I32": ("f64", ("i32",), lambda a: a.astype(F64)),
    "V_CVT_F64_U32": ("f64", ("u32",), lambda a: a.astype(F64)),
    "V_CVT_I32_F64": ("i32", ("f64",), lambda a: _cvt_int(a, -(2**31), 2**31 - 1, np.int32)),
    "V_CVT_U32_F64": ("u32", ("f64",), lambda a: _cvt_int(a, 0, 2**32 - 1, U32)),
    "V_CVT_F32_UBYTE0": ("f32", ("u32",), lambda a: (a & U32(0xFF)).astype(F32)),
    "V_CVT_F32_UBYTE1": ("f32", ("u32",), lambda a: ((a >> U32(8)) & U32(0xFF)).astype(F32)),
    "V_CVT_F32_UBYTE2": ("f32", ("u32",), lambda a: ((a >> U32(16)) & U32(0xFF)).astype(F32)),
    "V_CVT_F32_UBYTE3": ("f32", ("u32",), lambda a: (a >> U32(24)).astype(F32)),
    "V_CVT_F32_BF16": ("f32", ("b16",), lambda a: bf16_to_f32(a)),
    "V_TRUNC_F32": ("f32", ("f32",), np.trunc), "V_CEIL_F32": ("f32", ("f32",), np.ceil),
    "V_FLOOR_F32": ("f32", ("f32",), np.floor), "V_RNDNE_F32": ("f32", ("f32",), np.rint),
    "V_FRACT_F32": ("f32", ("f32",), lambda a: np.minimum(a - np.floor(a), F32(np.nextafter(F32(1), F32(0))))),
    "V_SQRT_F32": ("f32", ("f32",), np.sqrt), "V_SQRT_F64": ("f64", ("f64",), np.sqrt),
    "V_RCP_F32": ("f32", ("f32",), lambda a: (1.0 / a.astype(F64)).astype(F32)),
    "V_RCP_F64": ("f64", ("f64",), lambda a: 1.0 / a),
    "V_RSQ_F32": ("f32", ("f32",), lambda a: (1.0 / np.sqrt(a.astype(F64))).astype(F32)),
    "V_EXP_F32": ("f32", ("f32",), lambda a: np.exp2(a.astype(F64)).astype(F32)),
    "V_LOG_F32": ("f32", ("f32",), lambda a: np.log2(a.astype(F64)).astype(F32)),
    "V_FFBH_U32": ("u32", ("u32",), lambda a: _ffbh(a)),
    "V_FFBL_B32": ("u32", ("u32",), lambda a: np.where(a == 0, U32(0xFFFFFFFF), np.log2((a & (~a + U32(1))).astype(F64)).astype(U32))),
    "V_FREXP_EXP_I32_F32": ("i32", ("f32",), lambda a: np.asarray(np.where(np.isfinite(a), np.frexp(a)[1], 0), dtype=np.int32)),
    "V_FREXP_MANT_F32": ("f32", ("f32",), lambda a: np.asarray(np.where(np.isfinite(a), np.frexp(a)[0], a), dtype=F32)),
    "V_CVT_F32_FP8": ("f32", ("b32",), lambda a: CODES["fp8"][a & U32(0xFF)]),
    "V_CVT_F32_BF8": ("f32", ("b32",), lambda a: CODES["bf8"][a & U32(0xFF)]),
    # VOP2
    "V_ADD_F32": ("f32", ("f32", "f32"), np.add), "V_SUB_F32": ("f32", ("f32", "f32"), np.subtract),
    "V_SUBREV_F32": ("f32", ("f32", "f32"), lambda a, b: b - a), "V_MUL_F32": ("f32", ("f32", "f32"), np.multiply),
    "V_MUL_LEGACY_F32": ("f32", ("f32", "f32"), lambda a, b: np.where((a == 0) | (b == 0), F32(0), a * b)),
    "V_MIN_F32": ("f32", ("f32", "f32"), min_num), "V_MAX_F32": ("f32", ("f32", "f32"), max_num),
    "V_ADD_F64": ("f64", ("f64", "f64"), np.add), "V_MUL_F64": ("f64", ("f64", "f64"), np.multiply),
    "V_MIN_F64": ("f64", ("f64", "f64"), min_num), "V_MAX_F64": ("f64", ("f64", "f64"), max_num),
    "V_ADD_F16": ("f16", ("f16", "f16"), np.add), "V_SUB_F16": ("f16", ("f16", "f16"), np.subtract),
    "V_MUL_F16": ("f16", ("f16", "f16"), np.multiply),
    "V_MIN_F16": ("f16", ("f16", "f16"), min_num), "V_MAX_F16": ("f16", ("f16", "f16"), max_num),
    "V_MIN_I32": ("i32", ("i32", "i32"), np.minimum), "V_MAX_I32": ("i32", ("i32", "i32"), np.maximum),
    "V_MIN_U32": ("u32", ("u32", "u32"), np.minimum), "V_MAX_U32": ("u32", ("u32", "u32"), np.maximum),
    "V_LSHRREV_B32": ("b32", ("u32", "b32"), lambda a, b: b >> (a & U32(31))),
    "V_ASHRREV_I32": ("i32", ("u32", "i32"), lambda a, b: b >> (a & U32(31)).astype(np.int32)),
    "V_LSHLREV_B32": ("b32", ("u32", "b32"), lambda a, b: b << (a & U32(31))),
    "V_LSHRREV_B16": ("b16", ("u16", "u16"), lambda a, b: b >> (a & U16(15))),
    "V_ASHRREV_I16": ("i16", ("u16", "i16"), lambda a, b: b >> (a & U16(15)).astype(np.int16)),
    "V_LSHLREV_B16": ("b16", ("u16", "u16"), lambda a, b: b << (a & U16(15))),
    "V_LSHRREV_B64": ("b64", ("u32", "b64"), lambda a, b: b >> (a & U32(63)).astype(U64)),
    "V_LSHLREV_B64": ("b64", ("u32", "b64"), lambda a, b: b << (a & U32(63)).astype(U64)),
    "V_ASHRREV_I64": ("i64", ("u32", "i64"), lambda a, b: b >> (a & U32(63)).astype(np.int64)),
    "V_AND_B32": ("b32", ("b32", "b32"), np.bitwise_and), "V_OR_B32": ("b32", ("b32", "b32"), np.bitwise_or),
    "V_XOR_B32": ("b32", ("b32", "b32"), np.bitwise_xor), "V_XNOR_B32": ("b32", ("b32", "b32"), lambda a, b: ~(a ^ b)),
    "V_ADD_U32": ("u32", ("u32", "u32"), np.add), "V_SUB_U32": ("u32", ("u32", "u32"), np.subtract),
    "V_ADD_I32": ("i32", ("i32", "i32"), np.add), "V_SUB_I32": ("i32", ("i32", "i32"), np.subtract),
    "V_SUBREV_U32": ("u32", ("u32", "u32"), lambda a, b: b - a),
    "V_ADD_U16": ("u16", ("u16", "u16"), np.add), "V_SUB_U16": ("u16", ("u16", "u16"), np.subtract),
    "V_SUBREV_U16": ("u16", ("u16", "u16"), lambda a, b: b - a), "V_MUL_LO_U16": ("u16", ("u16", "u16"), np.multiply),
    "V_MAX_U16": ("u16", ("u16", "u16"), np.maximum), "V_MIN_U16": ("u16", ("u16", "u16"), np.minimum),
    "V_MAX_I16": ("i16", ("i16", "i16"), np.maximum), "V_MIN_I16": ("i16", ("i16", "i16"), np.minimum),
    "V_MUL_U32_U24": ("u32", ("u32", "u32"), lambda a, b: (a & U32(0xFFFFFF)) * (b & U32(0xFFFFFF))),
    "V_MUL_HI_U32_U24": ("u32", ("u32", "u32"), lambda a, b: (((a & U32(0xFFFFFF)).astype(U64) * (b & U32(0xFFFFFF))) >> U64(32)).astype(U32)),
    "V_MUL_I32_I24": ("i32", ("i32", "i32"), lambda a, b: ((a << 8) >> 8).astype(np.int64) * ((b << 8) >> 8)),
    "V_MUL_HI_I32_I24": ("i32", ("i32", "i32"), lambda a, b: ((((a << 8) >> 8).astype(np.int64) * ((b << 8) >> 8)) >> 32)),
    "V_LDEXP_F32": ("f32", ("f32", "i32"), lambda a, b: _ldexp(a, b, F32)),
    "V_LDEXP_F64": ("f64", ("f64", "i32"), lambda a, b: _ldexp(a, b, F64)),
    "V_LDEXP_F16": ("f16", ("f16", "i16"), lambda a, b: _ldexp(a, b, F16)),
    "V_FMAC_F32": ("f32", ("f32", "f32", "f32"), fma32),
    "V_FMA_F32": ("f32", ("f32", "f32", "f32"), fma32),
    "V_FMA_F64": ("f64", ("f64", "f64", "f64"), fma64),
    "V_FMAC_F64": ("f64", ("f64", "f64", "f64"), fma64),
    "V_FMA_F16": ("f16", ("f16", "f16", "f16"), lambda a, b, c: fused(a, b, c, F16)),
    "V_FMAMK_F32": ("f32", ("f32", "f32", "f32"), fma32),  # operands reordered at compile time
    "V_FMAAK_F32": ("f32", ("f32", "f32", "f32"), fma32),
    # VOP3-only
    "V_MUL_LO_U32": ("u32", ("u32", "u32"), lambda a, b: (a.astype(U64) * b).astype(U32)),
    "V_MUL_HI_U32": ("u32", ("u32", "u32"), lambda a, b: ((a.astype(U64) * b) >> U64(32)).astype(U32)),
    "V_MUL_HI_I32": ("i32", ("i32", "i32"), lambda a, b: ((a.astype(np.int64) * b) >> 32).astype(np.int32)),
    "V_ADD3_U32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: a + b + c),
    "V_LSHL_ADD_U32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: (a << (b & U32(31))) + c),
    "V_ADD_LSHL_U32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: (a + b) << (c & U32(31))),
    "V_LSHL_OR_B32": ("b32", ("b32", "u32", "b32"), lambda a, b, c: (a << (b & U32(31))) | c),
    "V_AND_OR_B32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: (a & b) | c),
    "V_OR3_B32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: a | b | c),
    "V_XAD_U32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: (a ^ b) + c),
    "V_BFE_U32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: _bfe(a, b, c, False)),
    "V_BFE_I32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: _bfe(a, b, c, True)),
    "V_BFI_B32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: (a & b) | (~a & c)),
    "V_BFM_B32": ("b32", ("u32", "u32"), lambda a, b: (((U64(1) << (a & U32(31)).astype(U64)) - U64(1)) << (b & U32(31)).astype(U64)).astype(U32)),
    "V_ALIGNBIT_B32": ("b32", ("b32", "b32", "u32"), lambda a, b, c: (((a.astype(U64) << U64(32)) | b) >> (c & U32(31)).astype(U64)).astype(U32)),
    "V_ALIGNBYTE_B32": ("b32", ("b32", "b32", "u32"), lambda a, b, c: (((a.astype(U64) << U64(32)) | b) >> ((c & U32(3)) * U32(8)).astype(U64)).astype(U32)),
    "V_PERM_B32": ("b32", ("b32", "b32", "b32"), _perm),
    "V_MIN3_I32": ("i32", ("i32",) * 3, lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "V_MAX3_I32": ("i32", ("i32",) * 3, lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "V_MIN3_U32": ("u32", ("u32",) * 3, lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "V_MAX3_U32": ("u32", ("u32",) * 3, lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "V_MIN3_F32": ("f32", ("f32",) * 3, lambda a, b, c: min_num(min_num(a, b), c)),
    "V_MAX3_F32": ("f32", ("f32",) * 3, lambda a, b, c: max_num(max_num(a, b), c)),
    "V_MED3_I32": ("i32", ("i32",) * 3, lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))),
    "V_MED3_U32": ("u32", ("u32",) * 3, lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))),
    # V_MAD_LEGACY_* is gfx9's encoding of the gfx8 opcode, without op_sel: V_MAD_U16/I16's arithmetic
    "V_MAD_LEGACY_U16": ("u16", ("u16",) * 3, lambda a, b, c: a * b + c),
    "V_MAD_LEGACY_I16": ("i16", ("i16",) * 3, lambda a, b, c: a * b + c),
    "V_MAD_U32_U24": ("u32", ("u32",) * 3, lambda a, b, c: (a & U32(0xFFFFFF)) * (b & U32(0xFFFFFF)) + c),
    "V_MAD_I32_I24": ("i32", ("i32",) * 3, lambda a, b, c: ((a << 8) >> 8) * ((b << 8) >> 8) + c),
    "V_LSHL_ADD_U64": ("u64", ("u64", "u32", "u64"), lambda a, b, c: (a << (b & U32(7)).astype(U64)) + c),
    "V_CVT_PK_U16_U32": ("b32", ("u32", "u32"), lambda a, b: (a & U32(0xFFFF)) | (b << U32(16))),
    "V_PACK_B32_F16": ("b32", ("b16", "b16"), lambda a, b: a.astype(U32) | (b.astype(U32) << U32(16))),
    "V_CVT_PKRTZ_F16_F32": ("b32", ("f32", "f32"), lambda a, b: _f16_rtz(a) | (_f16_rtz(b) << U32(16))),
    "V_CVT_PK_BF16_F32": ("b32", ("f32", "f32"), lambda a, b: f32_to_bf16_rne(a) | (f32_to_bf16_rne(b) << U32(16))),
    "V_DIV_FIXUP_F32": ("f32", ("f32",) * 3, lambda a, b, c: _div_fixup(a, b, c)),
    "V_DIV_FIXUP_F64": ("f64", ("f64",) * 3, lambda a, b, c: _div_fixup(a, b, c)),
    "V_RCP_IFLAG_F32": ("f32", ("f32",), lambda a: (1.0 / a.astype(F64)).astype(F32)),
    "V_RSQ_F64": ("f64", ("f64",), lambda a: 1.0 / np.sqrt(a)),
    "V_TRUNC_F64": ("f64", ("f64",), np.trunc), "V_CEIL_F64": ("f64", ("f64",), np.ceil),
    "V_FLOOR_F64": ("f64", ("f64",), np.floor), "V_RNDNE_F64": ("f64", ("f64",), np.rint),
    "V_FRACT_F64": ("f64", ("f64",), lambda a: np.minimum(a - np.floor(a), np.nextafter(F64(1), F64(0)))),
    "V_FREXP_EXP_I32_F64": ("i32", ("f64",), lambda a: np.asarray(np.where(np.isfinite(a), np.frexp(a)[1], 0), dtype=np.int32)),
    "V_FREXP_MANT_F64": ("f64", ("f64",), lambda a: np.asarray(np.where(np.isfinite(a), np.frexp(a)[0], a), dtype=F64)),
    "V_TRUNC_F16": ("f16", ("f16",), np.trunc), "V_CEIL_F16": ("f16", ("f16",), np.ceil),
    "V_FLOOR_F16": ("f16", ("f16",), np.floor), "V_RNDNE_F16": ("f16", ("f16",), np.rint),
    "V_FRACT_F16": ("f16", ("f16",), lambda a: np.minimum(a - np.floor(a), np.nextafter(F16(1), F16(0)))),
    "V_SQRT_F16": ("f16", ("f16",), lambda a: np.sqrt(a.astype(F64)).astype(F16)),
    "V_RCP_F16": ("f16", ("f16",), lambda a: (1.0 / a.astype(F64)).astype(F16)),
    "V_RSQ_F16": ("f16", ("f16",), lambda a: (1.0 / np.sqrt(a.astype(F64))).astype(F16)),
    "V_EXP_F16": ("f16", ("f16",), lambda a: np.exp2(a.astype(F64)).astype(F16)),
    "V_LOG_F16": ("f16", ("f16",), lambda a: np.log2(a.astype(F64)).astype(F16)),
    "V_FREXP_MANT_F16": ("f16", ("f16",), lambda a: np.asarray(np.where(np.isfinite(a), np.frexp(a)[0], a), dtype=F16)),
    "V_FREXP_EXP_I16_F16": ("i16", ("f16",), lambda a: np.asarray(np.where(np.isfinite(a), np.frexp(a)[1], 0), dtype=np.int16)),
    "V_CVT_F16_U16": ("f16", ("u16",), lambda a: a.astype(F16)), "V_CVT_F16_I16": ("f16", ("i16",), lambda a: a.astype(F16)),
    "V_CVT_U16_F16": ("u16", ("f16",), lambda a: _cvt_int(a, 0, 2**16 - 1, U16)),
    "V_CVT_I16_F16": ("i16", ("f16",), lambda a: _cvt_int(a, -(2**15), 2**15 - 1, np.int16)),
    "V_CVT_FLR_I32_F32": ("i32", ("f32",), lambda a: _cvt_int(np.floor(a), -(2**31), 2**31 - 1, np.int32)),
    "V_CVT_RPI_I32_F32": ("i32", ("f32",), lambda a: _cvt_int(np.floor(a + F32(0.5)), -(2**31), 2**31 - 1, np.int32)),
    "V_CVT_PK_F16_F32": ("b32", ("f32", "f32"), lambda a, b: to_bits(a.astype(F16), "f16") | (to_bits(b.astype(F16), "f16") << U32(16))),
    "V_CVT_PK_I16_I32": ("b32", ("i32", "i32"), lambda a, b: (np.clip(a, -(2**15), 2**15 - 1).astype(U32) & U32(0xFFFF)) | (np.clip(b, -(2**15), 2**15 - 1).astype(U32) << U32(16))),
    "V_FFBH_I32": ("i32", ("i32",), lambda a: _ffbh((a ^ (a >> 31)).view(U32))),
    "V_SUBREV_F16": ("f16", ("f16", "f16"), lambda a, b: b - a),
    "V_MIN3_F16": ("f16", ("f16",) * 3, lambda a, b, c: min_num(min_num(a, b), c)),
    "V_MAX3_F16": ("f16", ("f16",) * 3, lambda a, b, c: max_num(max_num(a, b), c)),
    "V_MED3_F32": ("f32", ("f32",) * 3, lambda a, b, c: _med3f(a, b, c)),
    "V_MED3_F16": ("f16", ("f16",) * 3, lambda a, b, c: _med3f(a, b, c)),
    "V_MINIMUM3_F32": ("f32", ("f32",) * 3, lambda a, b, c: _minimum(_minimum(a, b), c)),
    "V_MAXIMUM3_F32": ("f32", ("f32",) * 3, lambda a, b, c: _maximum(_maximum(a, b), c)),
    "V_MIN3_I16": ("i16", ("i16",) * 3, lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "V_MAX3_I16": ("i16", ("i16",) * 3, lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "V_MIN3_U16": ("u16", ("u16",) * 3, lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "V_MAX3_U16": ("u16", ("u16",) * 3, lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "V_MED3_I16": ("i16", ("i16",) * 3, lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))),
    "V_MED3_U16": ("u16", ("u16",) * 3, lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))),
    "V_MAD_U16": ("u16", ("u16",) * 3, lambda a, b, c: a * b + c),
    "V_MAD_I16": ("i16", ("i16",) * 3, lambda a, b, c: a * b + c),
    "V_MAD_U32_U16": ("u32", ("u16", "u16", "u32"), lambda a, b, c: a.astype(U32) * b.astype(U32) + c),
    "V_MAD_I32_I16": ("i32", ("i16", "i16", "i32"), lambda a, b, c: a.astype(np.int32) * b.astype(np.int32) + c),
    "V_SAD_U8": ("u32", ("u32",) * 3, lambda a, b, c: _sad(a, b, 8) + c),
    "V_SAD_HI_U8": ("u32", ("u32",) * 3, lambda a, b, c: (_sad(a, b, 8) << U32(16)) + c),
    "V_SAD_U16": ("u32", ("u32",) * 3, lambda a, b, c: _sad(a, b, 16) + c),
    "V_SAD_U32": ("u32", ("u32",) * 3, lambda a, b, c: _sad(a, b, 32) + c),
    "V_MSAD_U8": ("u32", ("u32",) * 3, lambda a, b, c: _sad(a, b, 8, masked=True) + c),
    "V_LERP_U8": ("u32", ("u32",) * 3, lambda a, b, c: sum(((((a >> U32(s)) & U32(0xFF)) + ((b >> U32(s)) & U32(0xFF)) + ((c >> U32(s)) & U32(1))) >> U32(1)) << U32(s) for s in (0, 8, 16, 24))),
    "V_BCNT_U32_B32": ("u32", ("b32", "u32"), lambda a, b: np.unpackbits(np.ascontiguousarray(np.broadcast_to(a, np.broadcast(a, b).shape), dtype="<u4")[..., None].view(np.uint8), axis=-1).sum(axis=-1).astype(U32) + b),
}


def _ffbh(a: np.ndarray) -> np.ndarray:
    """The number of leading zero bits, or -1 (all ones) for 0."""
    return np.where(a == 0, U32(0xFFFFFFFF), U32(31) - np.floor(np.log2(np.maximum(a, U32(1)).astype(F64))).astype(U32))


def _med3f(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """V_MED3_F32/F16: with a NaN operand the min3 of the rest; else the max of the two operands
    that are not the max3."""
    top = max_num(max_num(a, b), c)
    med = np.where(top == a, max_num(b, c), np.where(top == b, max_num(a, c), max_num(a, b)))
    return np.asarray(np.where(np.isnan(a) | np.isnan(b) | np.isnan(c), min_num(min_num(a, b), c), med))


def _minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754-2019 minimum: NaN if either is NaN, and -0 below +0."""
    return np.where(a == b, np.where(np.signbit(a), a, b), np.minimum(a, b))


def _maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(a == b, np.where(np.signbit(a), b, a), np.maximum(a, b))


def _sad(a: np.ndarray, b: np.ndarray, width: int, masked: bool = False) -> np.ndarray:
    """Sum of absolute differences of the unsigned `width`-bit fields of a and b (V_MSAD_U8:
    fields where b is 0 count 0)."""
    total = np.zeros(np.broadcast(a, b).shape, dtype=U64)
    mask = U64((1 << width) - 1)
    for shift in range(0, 32, width):
        x, y = (a.astype(U64) >> U64(shift)) & mask, (b.astype(U64) >> U64(shift)) & mask
        diff = np.where(x > y, x - y, y - x)
        total += np.where(y == 0, U64(0), diff) if masked else diff
    return total.astype(U32)


def _f16_rtz(x: np.ndarray) -> np.ndarray:
    """fp32 -> fp16 rounded toward zero, as bits."""
    h = x.astype(F16)
    with np.errstate(all="ignore"):
        over = np.abs(h.astype(F64)) > np.abs(x.astype(F64))
        h = np.where(over & np.isfinite(x), np.nextafter(h, F16(0)), h)
    return h.view(U16).astype(U32)


CMP_OPS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "F": lambda a, b: np.zeros(np.broadcast(a, b).shape, dtype=bool),
    "LT": np.less, "EQ": np.equal, "LE": np.less_equal, "GT": np.greater, "NE": np.not_equal,
    "LG": lambda a, b: (a < b) | (a > b), "GE": np.greater_equal,
    "O": lambda a, b: ~(np.isnan(a) | np.isnan(b)), "U": lambda a, b: np.isnan(a) | np.isnan(b),
    "NGE": lambda a, b: ~(a >= b), "NLG": lambda a, b: ~((a < b) | (a > b)), "NGT": lambda a, b: ~(a > b),
    "NLE": lambda a, b: ~(a <= b), "NEQ": lambda a, b: ~(a == b), "NLT": lambda a, b: ~(a < b),
    "TRU": lambda a, b: np.ones(np.broadcast(a, b).shape, dtype=bool), "T": lambda a, b: np.ones(np.broadcast(a, b).shape, dtype=bool),
}


def _class(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """V_CMP_CLASS: bit k of the mask tests class k (sNaN, qNaN, -inf, -normal, -denormal, -0,
    +0, +denormal, +normal, +inf)."""
    f = x.astype(F64)
    tiny = np.finfo(x.dtype).tiny
    neg = np.signbit(f)
    nan = np.isnan(f)
    bits = np.asarray(x.view(U16 if x.dtype == F16 else (U32 if x.dtype == F32 else U64))).astype(U64)
    quiet = nan & (((bits >> U64(9 if x.dtype == F16 else (22 if x.dtype == F32 else 51))) & U64(1)) == 1)
    kinds = [nan & ~quiet, quiet, np.isneginf(f), neg & (np.abs(f) >= tiny) & np.isfinite(f),
             neg & (f != 0) & (np.abs(f) < tiny), neg & (f == 0), ~neg & (f == 0),
             ~neg & (f != 0) & (np.abs(f) < tiny), ~neg & (f >= tiny) & np.isfinite(f), np.isposinf(f)]
    out = np.zeros(np.broadcast(x, mask).shape, dtype=bool)
    for k, is_kind in enumerate(kinds):
        out |= is_kind & (((mask >> U32(k)) & U32(1)) == 1)
    return out


def _dpp_source(ctrl: int) -> tuple[np.ndarray, np.ndarray]:
    """For a gfx9 dpp_ctrl: the lane each lane reads its first source from, and whether that lane
    exists (none past the edge of a row or the wave). Per the CDNA4 ISA's DPP_CTRL table, with
    LLVM's spellings (AMDGPUModifierSyntax): within each row of 16 lanes, lane i reads lane i + n
    for row_shl:n and lane i - n for row_shr:n and row_ror:n. row_bcast:15 gives each row lane 15
    of the row before and row_bcast:31 gives rows 2 and 3 lane 31; the table names no source for
    the rows before those (row 0; rows 0 and 1), so they are taken as past the edge."""
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
    whole_wave = {0x130: (lane + 1, lane < 63), 0x134: ((lane + 1) & 63, everywhere),  # wave_shl:1, wave_rol:1
                  0x138: (lane - 1, lane > 0), 0x13C: ((lane - 1) & 63, everywhere),  # wave_shr:1, wave_ror:1
                  0x140: (row + 15 - pos, everywhere), 0x141: ((lane & ~7) + 7 - (lane & 7), everywhere),  # mirrors
                  0x142: (row - 1, lane >= 16), 0x143: (np.full(64, 31), lane >= 32)}  # row_bcast:15, row_bcast:31
    if ctrl not in whole_wave:
        raise Unsupported(f"dpp_ctrl {ctrl:#x}")  # row_newbcast and reserved values: not implemented
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
            elif absf or negf:  # untyped moves (v_cndmask_b32, v_mov_b32) take them as float sign-bit modifiers
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


def _finish(ctx: Ctx, t: str, result: np.ndarray) -> np.ndarray:
    """omod and clamp of float results (VOP3 only)."""
    if not ctx.vop3 or not t.startswith("f"):
        return result
    omod = ctx.field("omod")
    if omod:
        result = result * result.dtype.type((2.0, 4.0, 0.5)[omod - 1])
    if ctx.field("clmp"):
        result = np.clip(np.where(np.isnan(result), 0, result), 0, 1).astype(result.dtype)
    return result


def _write_dest(b: Batch, ctx: Ctx, reg: int, t: str, value: np.ndarray) -> None:
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


# Integer add and subtract with VOP3 clamp saturate to the result type's range (CDNA4 ISA, VOP3
# "CLAMP": integer results are saturated); LLVM selects them for llvm.uadd.sat/usub.sat/sadd.sat.
SATURATING = {"V_ADD_U32", "V_SUB_U32", "V_SUBREV_U32", "V_ADD_U16", "V_SUB_U16", "V_SUBREV_U16", "V_ADD_I32",
              "V_SUB_I32"}


def _saturating(fn: Callable[..., Any], t: str) -> Callable[..., np.ndarray]:
    """`fn` computed exactly (in int64) and clipped to type t's range."""
    signed = t.startswith("i")
    low, high = (-(1 << (BITS[t] - 1)), (1 << (BITS[t] - 1)) - 1) if signed else (0, (1 << BITS[t]) - 1)

    def sat(*args: np.ndarray) -> np.ndarray:
        exact = fn(*(np.asarray(a).astype(np.int64) for a in args))
        return np.asarray(np.clip(exact, low, high)).astype(VIEW[t])
    return sat


def compile_valu(cls: str, inst: Any, pc: int, size: int) -> Op:
    name = base_name(inst.op)
    ctx = Ctx(inst, cls)
    lower = inst.op.name.lower()
    if ctx.dpp and not _dpp_capable(name):
        raise Unsupported(name)
    if name.startswith("V_CMP") and cls in ("VOPC", "VOP3", "VOP3_SDST", "VOPC_SDWA_SDST"):
        return Op(pc, size, lower, "valu", _compare(ctx, name))
    special = _special(ctx, name)
    if special is not None:
        return Op(pc, size, lower, "valu", special)
    if name not in VOPS:
        raise Unsupported(name)
    dt, sts, fn = VOPS[name]
    if ctx.vop3 and ctx.field("clmp") and not dt.startswith("f"):
        if name not in SATURATING:
            raise Unsupported(name)  # other integer ops with clamp are not modelled: such an op stays unsupported
        fn = _saturating(fn, dt)
    dst_reg = _vdst(inst)
    if name == "V_FMAMK_F32":  # d = s0 * K + s1
        reads = [ctx.read(0, "f32"), _lit_read(ctx), ctx.read(1, "f32")]
    elif name == "V_FMAAK_F32":  # d = s0 * s1 + K
        reads = [ctx.read(0, "f32"), ctx.read(1, "f32"), _lit_read(ctx)]
    elif name == "V_FMAC_F32":  # d = s0 * s1 + d
        reads = [ctx.read(0, "f32"), ctx.read(1, "f32"), lambda b: b.v[dst_reg].view(F32)]
    elif name == "V_FMAC_F64":
        reads = [ctx.read(0, "f64"), ctx.read(1, "f64"),
                 lambda b: (b.v[dst_reg].astype(U64) | (b.v[dst_reg + 1].astype(U64) << U64(32))).view(F64)]
    else:
        reads = [ctx.read(k, t) for k, t in enumerate(sts)]

    def run(b: Batch) -> None:
        with np.errstate(all="ignore"):
            result = _finish(ctx, dt, np.asarray(fn(*(r(b) for r in reads))))
        _write_dest(b, ctx, dst_reg, dt, result)
    return Op(pc, size, lower, "valu", run)


def _dpp_capable(name: str) -> bool:
    """Ops whose DPP form runs here: those that write one VGPR only, through `Ctx.lanes`: 32- and
    16-bit table ops and cndmask. Not the carries (the ISA's masks apply to the VGPR write only, and
    what becomes of the carry-out of a lane not written is not said), not the literal forms (DPP
    has no literal) and not 64-bit operands (those take DPP only as row_newbcast, gfx90a on)."""
    if name in VOPS and name not in ("V_FMAMK_F32", "V_FMAAK_F32"):
        dt, sts, _ = VOPS[name]
        return all(BITS[t] < 64 for t in (dt, *sts))
    return name == "V_CNDMASK_B32"


def _lit_read(ctx: Ctx) -> Callable[[Batch], np.ndarray]:
    value = np.asarray(np.uint32(ctx.literal or 0)).view(F32)
    return lambda b: value


def _vdst(inst: Any) -> int:
    """The destination VGPR: the decoder names it in the 9-bit source space (VGPRs from 256), or by
    its number where the encoding's field is 8 bits wide."""
    o = int(inst.vdst.offset)
    return o - 256 if o >= 256 else o


def _compare(ctx: Ctx, name: str) -> Run:
    parts = name.split("_")  # V_CMP[X]_<REL>_<TYPE> or V_CMP[X]_CLASS_<TYPE>
    x = parts[1] == "CMPX"
    rel, t = parts[2], parts[3].lower()
    a = ctx.read(0, t)
    b_ = ctx.read(1, "u32" if rel == "CLASS" else t)
    if ctx.cls == "VOPC":
        dest = VCC
    elif ctx.cls == "VOPC_SDWA_SDST":
        dest = int(ctx.inst.sdst.offset) if ctx.field("sd") else VCC
    else:
        dest = int(ctx.inst.vdst.offset)
    fn = _class if rel == "CLASS" else lookup(CMP_OPS, rel)

    def run(b: Batch) -> None:
        lanes = b.lanes()
        with np.errstate(all="ignore"):
            result = np.broadcast_to(fn(a(b), b_(b)), (b.W, 64)) & lanes
        if dest < 128:  # V_CMPX writes its mask too (VCC in the VOPC encoding), then EXEC: CDNA4 pseudo-code
            b.write_mask64(dest, result)
        if x:
            b.write_mask64(EXEC, result)
    return run


# The fp32 and fp64 division sequence (v_div_scale, v_rcp, Newton steps in fma, v_div_fmas,
# v_div_fixup): per type the result dtype, the exponent bias, div_scale's "N/D near the maximum"
# exponent gap, its power-of-two scale and its "numerator is tiny" exponent.
DIV = {"f32": (F32, 127, 96, 64, 23), "f64": (F64, 1023, 768, 128, 53)}


def _exponent(x: np.ndarray) -> np.ndarray:
    """The biased exponent field of fp16, fp32 or fp64 values."""
    x = np.asarray(x)
    shift, mask = {2: (10, 0x1F), 4: (23, 0xFF), 8: (52, 0x7FF)}[x.dtype.itemsize]
    return ((x.view(f"u{x.dtype.itemsize}").astype(U64) >> U64(shift)) & U64(mask)).astype(np.int64)


def _denormal(x: np.ndarray) -> np.ndarray:
    return np.asarray((x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny))


def _div_fixup(q: np.ndarray, den: np.ndarray, num: np.ndarray) -> np.ndarray:
    """V_DIV_FIXUP_F32/F64: the special cases of num / den (NaN, 0/0, inf/inf, x/0, x/inf,
    underflow, overflow), else the quotient q with the sign of num * den. The text's overflow
    case tests exponent(den) == 255 (2047), which the infinity cases before it already took; a
    quotient whose exponent gap is past the type's range (so large that the scaled Newton steps
    overflow to NaN) is taken as overflow too, which makes the sequence IEEE division there."""
    q, den, num = np.broadcast_arrays(q, den, num)
    t, uint = q.dtype.type, f"u{q.dtype.itemsize}"
    quiet = 1 << (22 if t == F32 else 51)
    sign = np.signbit(den) ^ np.signbit(num)
    nan = np.asarray(0xFFC00000 if t == F32 else 0xFFF8000000000000, dtype=uint).view(t)
    inf, zero = np.where(sign, t(-np.inf), t(np.inf)), np.where(sign, t(-0.0), t(0.0))
    conditions = [np.isnan(num), np.isnan(den), (den == 0) & (num == 0), np.isinf(den) & np.isinf(num),
                  (den == 0) | np.isinf(num), np.isinf(den) | (num == 0),
                  _exponent(num) - _exponent(den) < (-150 if t == F32 else -1075), _exponent(den) == (255 if t == F32 else 2047),
                  _exponent(num) - _exponent(den) > (128 if t == F32 else 1024)]
    choices = [(num.view(uint) | quiet).view(t), (den.view(uint) | quiet).view(t), nan, nan, inf, zero, zero, inf, inf]
    return np.select(conditions, choices, np.where(sign, -np.abs(q), np.abs(q)))


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
    sdst, d = int(ctx.inst.sdst.offset), _vdst(ctx.inst)

    def run(b: Batch) -> None:
        x, den, num = np.broadcast_arrays(s0(b), s1(b), s2(b))
        with np.errstate(all="ignore"):
            quotient, inverse = num / den, 1.0 / den.astype(F64)
            small = _denormal(quotient) | ((quotient == 0) & (num != 0) & np.isfinite(num) & np.isfinite(den))
            up, down = _ldexp(x, np.asarray(k), x.dtype.type), _ldexp(x, np.asarray(-k), x.dtype.type)
            conditions = [(num == 0) | (den == 0), _exponent(num) - _exponent(den) >= gap, _denormal(den),
                          _denormal(inverse) & small, _denormal(inverse), small, _exponent(num) <= tiny]
            result = np.select(conditions, [np.full_like(x, np.nan), np.where(x == den, up, x), up,
                                            np.where(x == den, down, x), down, np.where(x == num, up, x), up], x)
        vcc = conditions[1] | (~conditions[0] & ~conditions[1] & ~conditions[2] & conditions[3]) | \
            (~np.any(conditions[:5], axis=0) & conditions[5])
        _write_dest(b, ctx, d, t, result)
        b.write_mask64(sdst, np.broadcast_to(vcc, (b.W, 64)) & b.lanes())
    return run


def _div_fmas(ctx: Ctx, t: str) -> Run:
    """V_DIV_FMAS_F32/F64: fma(s0, s1, s2), scaled where VCC is set back by the power of two that
    v_div_scale applied. The ISA text writes the scale as 2^32 (f32) and 2^64 (f64) with no sign,
    which cannot undo div_scale's 2^64 (2^128); here it is 2^+k where the scaled quotient s2 is
    large (the denominator was scaled up) and 2^-k where it is small (the numerator was)."""
    reads = [ctx.read(i, t) for i in range(3)]
    _, bias, _, k, _ = DIV[t]
    d = _vdst(ctx.inst)

    def run(b: Batch) -> None:
        x, y, z = np.broadcast_arrays(*(r(b) for r in reads))
        exp2 = np.where(b.mask64(VCC), np.where(_exponent(z) > bias, k, -k), 0)
        result = fused(x, y, z, F32, exp2) if t == "f32" else fma64(x, y, z, exp2)
        _write_dest(b, ctx, d, t, _finish(ctx, t, result))
    return run


def _special(ctx: Ctx, name: str) -> Run | None:
    inst = ctx.inst
    if name == "V_NOP":
        return lambda b: None
    if name in ("V_DIV_SCALE_F32", "V_DIV_SCALE_F64"):
        return _div_scale(ctx, name[-3:].lower())
    if name in ("V_DIV_FMAS_F32", "V_DIV_FMAS_F64"):
        return _div_fmas(ctx, name[-3:].lower())
    if name == "V_CNDMASK_B32":
        a, c = ctx.read(0, "b32"), ctx.read(1, "b32")
        sel = VCC if not ctx.vop3 else int(inst.src2.offset)
        d = _vdst(inst)
        return lambda b: _write_dest(b, ctx, d, "b32", np.where(b.mask64(sel), c(b), a(b)))
    if name == "V_MOV_B64":
        src = opd.vector(ctx.src_number(0), 64, ctx.literal)
        d = _vdst(inst)
        return lambda b: _write_dest(b, ctx, d, "b64", np.broadcast_to(src(b), (b.W, 64)))
    if name in ("V_ADD_CO_U32", "V_SUB_CO_U32", "V_SUBREV_CO_U32", "V_ADDC_CO_U32", "V_SUBB_CO_U32",
                "V_SUBBREV_CO_U32"):
        a, c = ctx.read(0, "u32"), ctx.read(1, "u32")
        carry_out = int(inst.sdst.offset) if ctx.vop3 else VCC
        carry_in = int(inst.src2.offset) if ctx.vop3 else VCC
        uses_in = name in ("V_ADDC_CO_U32", "V_SUBB_CO_U32", "V_SUBBREV_CO_U32")
        rev = "SUBREV" in name or "SUBBREV" in name
        add = "ADD" in name
        d = _vdst(inst)

        def carry(b: Batch) -> None:
            x, y = a(b).astype(np.int64), c(b).astype(np.int64)
            if rev:
                x, y = y, x
            cin = b.mask64(carry_in).astype(np.int64) if uses_in else 0
            total = x + y + cin if add else x - y - cin
            out = (total > 0xFFFFFFFF) if add else (total < 0)
            lanes = b.lanes()
            _write_dest(b, ctx, d, "u32", (total & 0xFFFFFFFF).astype(U32))
            b.write_mask64(carry_out, np.broadcast_to(out, (b.W, 64)) & lanes)
        return carry
    if name in ("V_MAD_U64_U32", "V_MAD_I64_I32"):
        signed = name == "V_MAD_I64_I32"
        a, c = ctx.read(0, "i32" if signed else "u32"), ctx.read(1, "i32" if signed else "u32")
        s2 = opd.vector(int(inst.src2.offset), 64, ctx.literal)
        sd = int(inst.sdst.offset)
        d = _vdst(inst)

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
            _write_dest(b, ctx, d, "b64", np.broadcast_to(total, (b.W, 64)))
            if sd < 128:
                b.write_mask64(sd, over & b.lanes())
        return mad64
    if name == "V_READFIRSTLANE_B32":
        src = opd.vector(ctx.src_number(0), 32, ctx.literal)
        d = _sdst_of_vop3(inst)  # an SGPR, which the decoder names in the VGPR range for the VOP1 form

        def first(b: Batch) -> None:
            ex = b.exec
            lane = np.where(ex.any(axis=1), ex.argmax(axis=1), 0)
            value = np.broadcast_to(src(b), (b.W, 64))[np.arange(b.W), lane]
            b.write_s(d, value.astype(U32))
        return first
    if name == "V_READLANE_B32":
        src = opd.vector(ctx.src_number(0), 32)
        lane_of = opd.scalar(int(inst.src1.offset), 32, ctx.literal)
        d = _sdst_of_vop3(inst)
        return lambda b: b.write_s(d, np.broadcast_to(src(b), (b.W, 64))[np.arange(b.W), lane_of(b) & U32(63)].astype(U32))
    if name == "V_WRITELANE_B32":
        val = opd.scalar(int(inst.src0.offset), 32, ctx.literal)
        lane_of = opd.scalar(int(inst.src1.offset), 32, ctx.literal)
        d = _vdst(inst)

        def writelane(b: Batch) -> None:
            mask = np.zeros((b.W, 64), dtype=bool)
            mask[np.arange(b.W), lane_of(b) & U32(63)] = True
            b.write_v(b.v, d, val(b)[:, None], mask & b.wm[:, None])
        return writelane
    if name in ("V_MBCNT_LO_U32_B32", "V_MBCNT_HI_U32_B32"):
        a, c = ctx.read(0, "u32"), ctx.read(1, "u32")
        hi = name == "V_MBCNT_HI_U32_B32"
        lane = np.arange(64, dtype=np.uint64)
        below = np.where(lane < 32, (U64(1) << lane) - U64(1), U64(0xFFFFFFFF)) if not hi else \
            np.where(lane < 32, U64(0), (U64(1) << (lane - U64(32))) - U64(1))
        d = _vdst(inst)

        def mbcnt(b: Batch) -> None:
            bits = np.broadcast_to(a(b), (b.W, 64)).astype(U64) & below
            count = np.unpackbits(np.ascontiguousarray(bits.astype("<u4"))[..., None].view(np.uint8), axis=-1).sum(axis=-1)
            _write_dest(b, ctx, d, "u32", count.astype(U32) + c(b))
        return mbcnt
    if name == "V_SWAP_B32":
        s0 = ctx.src_number(0) - 256
        d = _vdst(inst)

        def swap(b: Batch) -> None:
            x, y = b.v[s0].copy(), b.v[d].copy()
            b.write_v(b.v, d, x)
            b.write_v(b.v, s0, y)
        return swap
    if name == "V_CVT_PK_F32_FP8" or name == "V_CVT_PK_F32_BF8":
        table = CODES["fp8" if name.endswith("FP8") else "bf8"]
        src = ctx.read(0, "b32")
        hi = bool(ctx.field("opsel") & 1) if ctx.vop3 else (ctx.sdwa and ctx.field("src0_sel", 6) in (5,))
        d = _vdst(inst)

        def pk(b: Batch) -> None:
            word = src(b) >> U32(16) if hi else src(b)
            _write_dest(b, ctx, d, "f32", table[word & U32(0xFF)])
            _write_dest(b, ctx, d + 1, "f32", table[(word >> U32(8)) & U32(0xFF)])
        return pk
    if name in ("V_CVT_PK_FP8_F32", "V_CVT_PK_BF8_F32"):
        return _cvt_to_small(ctx, name[9:12].lower(), "f32", scaled=False)
    scaled = SCALED.fullmatch(name)
    if scaled:
        to, frm = scaled.group(2).lower(), scaled.group(3).lower()
        return _cvt_to_small(ctx, to, frm, scaled=True) if to in SMALL else \
            _cvt_scaled_from_small(ctx, frm, to, bool(scaled.group(1)))
    wide = WIDE_SCALED.fullmatch(name)
    if wide:
        return _cvt_scaled_32(ctx, wide.group(2).lower(), wide.group(3).lower(), wide.group(1) == "2XPK16")
    if name in ("V_PERMLANE16_SWAP_B32", "V_PERMLANE32_SWAP_B32"):
        return _permlane_swap(ctx, 16 if "16" in name else 32)
    if name in ("V_BITOP3_B32", "V_BITOP3_B16"):
        return _bitop3(ctx, name == "V_BITOP3_B16")
    if name in ("V_ACCVGPR_READ", "V_ACCVGPR_WRITE", "V_ACCVGPR_MOV_B32"):
        src_n = ctx.src_number(0)
        d = _vdst(inst)
        if name == "V_ACCVGPR_READ":
            r = src_n - 256
            return lambda b: b.write_v(b.v, d, b.a[r])
        if name == "V_ACCVGPR_MOV_B32":
            r = src_n - 256
            return lambda b: b.write_v(b.a, d, b.a[r])
        src = opd.vector(src_n, 32, ctx.literal)
        return lambda b: b.write_v(b.a, d, src(b))
    return None


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
        raise EmuFault(f"a NaN converted to {fmt.upper()} is not implemented by the emulator (the ISA does not define it)")


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


def _cvt_to_small(ctx: Ctx, fmt: str, src: str, scaled: bool) -> Run:
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
    if scaled and (ctx.field("clmp") or ctx.field("omod")):  # V_CVT_PK_FP8_F32 "ignores: clamp, omod" (ISA table 31)
        raise Unsupported(f"{ctx.inst.op.name} with clamp or omod")
    opsel = ctx.field("opsel")
    shift = U32(16 * ((opsel >> 3) & 1) if bits == 16 else 8 * ((opsel >> 2) & 3))
    mask = U32(((1 << bits) - 1) << int(shift))
    d = _vdst(ctx.inst)

    def run(b: Batch) -> None:
        factor = 1.0 / _e8m0(np.broadcast_to(scale(b), (b.W, 64))) if scale is not None else 1.0  # exact: a power of two
        values = [np.broadcast_to(r(b), (b.W, 64)).astype(F64) * factor for r in reads]
        for v in values:
            _no_nan(b, v, fmt)
        codes = [_to_small(v, fmt) for v in values]
        pair = codes[0] | (codes[1] << U32(bits // 2))
        b.write_v(b.v, d, (b.v[d] & ~mask) | (pair << shift))
    return run


def _cvt_scaled_from_small(ctx: Ctx, fmt: str, dst: str, packed: bool) -> Run:
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
    d = _vdst(ctx.inst)

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
            b.write_v(b.v, d, (b.v[d] & U32(0xFFFF)) | (half << U32(16)) if hi else (b.v[d] & U32(0xFFFF0000)) | half)
    return run


WIDE_SCALED = re.compile(r"V_CVT_SCALEF32_(PK32|2XPK16)_(F32|F16|BF16|FP6|BF6)_(F32|F16|BF16|FP6|BF6)")
SIX = [divmod(6 * k, 32) for k in range(32)]  # (register, bit) of each of 32 packed 6-bit codes


def _cvt_scaled_32(ctx: Ctx, to: str, frm: str, two: bool) -> Run:
    """V_CVT_SCALEF32_PK32_* and _2XPK16_* (CDNA4 pseudo-code): 32 fp6/bf6 codes packed in six VGPRs (code
    k at bits 6k+5:6k of the 192) to or from 32 f32 (32 VGPRs), f16 or bf16 values (element k at bits
    16k+15:16k of 16 VGPRs); 2XPK16 takes 16 f32 values from each of S0 and S1, interleaved (S0's element
    p is code 2p, S1's code 2p+1). The scale is the E8M0 exponent of the last source; values are divided
    by it (to fp6) or multiplied (from fp6) and rounded to nearest even as in `_cvt_to_small` and
    `_cvt_scaled_from_small` (the fp6 descriptions name no rounding mode: MODE's default, the one the
    emulator models, is taken). Multi-register operands must be VGPRs (ISA 6.7.1); no modifier, clamp
    or omod is taken."""
    if ctx.field("abs") or ctx.field("neg") or ctx.field("clmp") or ctx.field("omod"):
        raise Unsupported(f"{ctx.inst.op.name} with modifiers")
    sources = [ctx.src_number(k) - 256 for k in range(2 if two else 1)]
    if min(sources) < 0:
        raise Unsupported(f"{ctx.inst.op.name} with a non-VGPR source")
    scale = opd.vector(ctx.src_number(len(sources)), 32, ctx.literal)
    d = _vdst(ctx.inst)

    def regs(b: Batch, base: int, n: int) -> np.ndarray:
        return np.moveaxis(b.v[base:base + n], 0, -1)  # (wave, lane, register)

    def halves(words: np.ndarray, t: str) -> np.ndarray:
        h = (words[..., None] >> np.array([0, 16], dtype=U32)).reshape(*words.shape[:-1], -1) & U32(0xFFFF)
        return h.astype(U16).view(F16).astype(F64) if t == "f16" else bf16_to_f32(h).astype(F64)

    def quantize(b: Batch) -> None:
        if two:  # interleave S0 and S1: code 2p from S0[p], 2p+1 from S1[p]
            values = np.stack([regs(b, r, 16).view(F32) for r in sources], axis=-1).reshape(b.W, 64, 32).astype(F64)
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
    d = _vdst(ctx.inst)
    lane = np.arange(64)
    low = (lane & rows) == 0
    partner = lane ^ rows

    def run(b: Batch) -> None:
        if not b.whole_waves():
            raise EmuFault(f"{ctx.inst.op.name.lower()} with lanes off in EXEC is not implemented by the emulator "
                           "(the ISA does not say what EXEC, fi and bound_ctrl do)")
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
    d = _vdst(ctx.inst)
    t = "b16" if half else "b32"

    def run(b: Batch) -> None:
        a, c, e = (typed(src(b), t, bool((opsel >> k) & 1)) for k, src in enumerate(srcs))
        out = np.zeros(np.broadcast(a, c, e).shape, dtype=a.dtype)
        for row in range(8):
            if (table >> row) & 1:
                out |= (a if row & 4 else ~a) & (c if row & 2 else ~c) & (e if row & 1 else ~e)
        _write_dest(b, ctx, d, t, out)
    return run


def _sdst_of_vop3(inst: Any) -> int:
    return int(inst.vdst.offset) if int(inst.vdst.offset) < 256 else int(inst.vdst.offset) - 256

