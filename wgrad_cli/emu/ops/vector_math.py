"""The arithmetic of the vector ALU on numpy arrays: register bits as typed values and back, fused
multiply-adds rounded once, the IEEE min/max and comparison rules, the small float formats and
their exact values, and the division sequence's fix-up; `vector.VOPS` and the special cases
(vector_special.py, vector_convert.py) compute with them.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np

U16, U32, U64 = np.uint16, np.uint32, np.uint64
F16, F32, F64 = np.float16, np.float32, np.float64
BITS = {"b16": 16, "u16": 16, "i16": 16, "f16": 16, "b32": 32, "u32": 32, "i32": 32, "f32": 32,
        "b64": 64, "u64": 64, "i64": 64, "f64": 64}
VIEW = {"b16": U16, "u16": U16, "i16": np.int16, "f16": F16, "b32": U32, "u32": U32, "i32": np.int32,
        "f32": F32, "b64": U64, "u64": U64, "i64": np.int64, "f64": F64}


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
        tie = (r.astype(F64) != s) & ((r.astype(F64) + other.astype(F64)) / 2
                                      == s) & (e != 0) & np.isfinite(s)
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
    a, b, c, k = np.broadcast_arrays(np.asarray(a, F64), np.asarray(b, F64), np.asarray(c, F64),
                                     np.asarray(exp2))
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
        # Dekker is exact
        splits = [(np.abs(v) < 2.0**995) & ((np.abs(v) > 2.0**-960) | (v == 0)) for v in (a, b)]
        safe = splits[0] & splits[1] & ((np.abs(ph) > 2.0**-900) | (ph == 0)) \
            & np.isfinite(c) & np.isfinite(r) & (r != 0) & (k == 0) \
            & ((q_err == 0) | (np.abs(r_err) + 4 * np.abs(q_err) <= 0.999 * half))
    out[safe] = r[safe]
    exact = np.isfinite(a) & np.isfinite(b) & np.isfinite(c) & ~safe
    if exact.any():
        out[exact] = _EXACT_FMA(a[exact], b[exact], c[exact], k[exact].astype(object)).astype(F64)
    return np.asarray(out)


def cvt_int(x: np.ndarray, lo: int, hi: int, dtype: type) -> np.ndarray:
    """fp -> int conversion: truncate toward zero, clamp to range, NaN -> 0."""
    with np.errstate(all="ignore"):
        v = np.trunc(x.astype(F64))
        v = np.where(np.isnan(v), 0, np.clip(v, lo, hi))
    return v.astype(dtype)


def ldexp(x: np.ndarray, e: np.ndarray, t: type) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.ldexp(x.astype(F64), np.clip(e.astype(np.int64), -2000, 2000)).astype(t)


def bfe(a: np.ndarray, off: np.ndarray, width: np.ndarray, signed: bool) -> np.ndarray:
    o = (off & U32(31)).astype(U64)
    w = (width & U32(31)).astype(U64)
    field = (a.astype(U64) >> o) & ((U64(1) << w) - U64(1))
    if signed:
        sign = np.where(w > 0, (field >> np.maximum(w, U64(1)) - U64(1)) & U64(1), U64(0))
        field = np.where(sign == 1, field | ~((U64(1) << w) - U64(1)), field)
    return np.where(w == 0, U64(0), field).astype(U32)


def perm(a: np.ndarray, b: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """V_PERM_B32: each result byte picks a byte of {a, b} (b is bytes 0-3) by a selector byte."""
    data = b.astype(U64) | (a.astype(U64) << U64(32))
    out = np.zeros(np.broadcast(a, b, sel).shape, dtype=U32)
    for k in range(4):
        s = ((sel >> U32(8 * k)) & U32(0xFF)).astype(U64)
        byte = (data >> (np.minimum(s, U64(7)) * U64(8))) & U64(0xFF)
        # the sign of byte 1, 3, 5 or 7, replicated
        for selector, source_byte in ((8, 1), (9, 3), (10, 5), (11, 7)):
            sign = ((data >> U64(8 * source_byte + 7)) & U64(1)) * U64(0xFF)
            byte = np.where(s == selector, sign, byte)
        byte = np.where(s == 12, U64(0), byte)
        byte = np.where(s >= 13, U64(0xFF), byte)
        out |= (byte.astype(U32) << U32(8 * k))
    return out


# The small float formats gfx950 converts: OCP E4M3FN (fp8), E5M2 (bf8), E2M3 (fp6), E3M2 (bf6), E2M1 (fp4).
SMALL: dict[str, Any] = {"fp8": ml_dtypes.float8_e4m3fn, "bf8": ml_dtypes.float8_e5m2,
                         "fp6": ml_dtypes.float6_e2m3fn, "bf6": ml_dtypes.float6_e3m2fn,
                         "fp4": ml_dtypes.float4_e2m1fn}
SMALL_BITS = {"fp8": 8, "bf8": 8, "fp6": 6, "bf6": 6, "fp4": 4}
# the exact (fp64) value of every code of each small format
CODES = {fmt: np.arange(1 << SMALL_BITS[fmt], dtype=np.uint8).view(dtype).astype(F64)
         for fmt, dtype in SMALL.items()}


def bf16_to_f32(x: np.ndarray) -> np.ndarray:
    return (x.astype(U32) << U32(16)).view(F32)


def f32_to_bf16_rne(x: np.ndarray) -> np.ndarray:
    bits = x.astype(F32).view(U32)
    rounded = ((bits.astype(U64) + U64(0x7FFF) + ((bits >> U32(16)) & U32(1)).astype(U64))
               >> U64(16)).astype(U32)
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
        r = np.where(np.isnan(x) & ((x_bits & bits.type(quiet)) == 0),
                     (x_bits | bits.type(quiet)).view(a.dtype), r)
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



def ffbh(a: np.ndarray) -> np.ndarray:
    """The number of leading zero bits, or -1 (all ones) for 0."""
    return np.where(a == 0, U32(0xFFFFFFFF),
                    U32(31) - np.floor(np.log2(np.maximum(a, U32(1)).astype(F64))).astype(U32))


def med3f(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """V_MED3_F32/F16: with a NaN operand the min3 of the rest; else the max of the two operands
    that are not the max3."""
    top = max_num(max_num(a, b), c)
    med = np.where(top == a, max_num(b, c), np.where(top == b, max_num(a, c), max_num(a, b)))
    return np.asarray(np.where(np.isnan(a) | np.isnan(b) | np.isnan(c), min_num(min_num(a, b), c), med))


def minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754-2019 minimum: NaN if either is NaN, and -0 below +0."""
    return np.where(a == b, np.where(np.signbit(a), a, b), np.minimum(a, b))


def maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(a == b, np.where(np.signbit(a), b, a), np.maximum(a, b))


def sad(a: np.ndarray, b: np.ndarray, width: int, masked: bool = False) -> np.ndarray:
    """Sum of absolute differences of the unsigned `width`-bit fields of a and b (V_MSAD_U8:
    fields where b is 0 count 0)."""
    total = np.zeros(np.broadcast(a, b).shape, dtype=U64)
    mask = U64((1 << width) - 1)
    for shift in range(0, 32, width):
        x, y = (a.astype(U64) >> U64(shift)) & mask, (b.astype(U64) >> U64(shift)) & mask
        diff = np.where(x > y, x - y, y - x)
        total += np.where(y == 0, U64(0), diff) if masked else diff
    return total.astype(U32)


def f16_rtz(x: np.ndarray) -> np.ndarray:
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
    "TRU": lambda a, b: np.ones(np.broadcast(a, b).shape, dtype=bool),
    "T": lambda a, b: np.ones(np.broadcast(a, b).shape, dtype=bool),
}


def float_class(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
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



def exponent(x: np.ndarray) -> np.ndarray:
    """The biased exponent field of fp16, fp32 or fp64 values."""
    x = np.asarray(x)
    shift, mask = {2: (10, 0x1F), 4: (23, 0xFF), 8: (52, 0x7FF)}[x.dtype.itemsize]
    return ((x.view(f"u{x.dtype.itemsize}").astype(U64) >> U64(shift)) & U64(mask)).astype(np.int64)


def denormal(x: np.ndarray) -> np.ndarray:
    return np.asarray((x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny))


def div_fixup(q: np.ndarray, den: np.ndarray, num: np.ndarray) -> np.ndarray:
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
                  exponent(num) - exponent(den) < (-150 if t == F32 else -1075),
                  exponent(den) == (255 if t == F32 else 2047),
                  exponent(num) - exponent(den) > (128 if t == F32 else 1024)]
    choices = [(num.view(uint) | quiet).view(t), (den.view(uint) | quiet).view(t), nan, nan, inf, zero, zero,
               inf, inf]
    return np.select(conditions, choices, np.where(sign, -np.abs(q), np.abs(q)))

