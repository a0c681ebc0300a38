"""gfx950's fp8/bf8 and bf16 conversions: v_cvt_pk_fp8_f32 / v_cvt_pk_bf8_f32 (round to nearest even,
two results into the half of D that op_sel[3] picks, the other half kept; overflow NaN for fp8 and
infinity for bf8 with MODE.FP16_OVFL clear), v_cvt_scalef32_[pk_]f32_fp8/bf8 (the byte or half op_sel
picks, times 2^(e - 127) for the E8M0 exponent e of the scale operand) and v_cvt_pk_bf16_f32 (round to
nearest even). Expected values: the formats decoded and rounded here in numpy from the OCP definitions
and the CDNA4 ISA pseudo-code, not through the emulator's tables."""

from __future__ import annotations

import numpy as np

from emukernels import assert_uses, compile_hip, run

SOURCE = """
KERNEL void cvt(unsigned *out, const float *f, const float *g, const unsigned *q, const float *s) {
  unsigned i = tid();
  float x = f[i], y = g[i];
  unsigned *o = out + i * 12;
  unsigned w = __builtin_amdgcn_cvt_pk_fp8_f32(x, y, 0x5A5A5A5A, false);
  o[0] = __builtin_amdgcn_cvt_pk_fp8_f32(-x, y, w, true);
  o[1] = __builtin_amdgcn_cvt_pk_bf8_f32(x, y, 0x12345678, false);
  unsigned long long p, r;  // inline asm: clang-22 keeps only .x of these builtins' float2 results
  asm volatile("v_cvt_scalef32_pk_f32_fp8 %0, %1, %2 op_sel:[1,0,0]" : "=v"(p) : "v"(q[i]), "v"(s[i]));
  o[2] = (unsigned)p; o[3] = (unsigned)(p >> 32);
  o[4] = __builtin_bit_cast(unsigned, __builtin_amdgcn_cvt_scalef32_f32_fp8(q[i], s[i], 2));
  o[5] = __builtin_bit_cast(unsigned, __builtin_amdgcn_cvt_scalef32_f32_bf8(q[i], s[i], 1));
  __bf16 a = (__bf16)x, b = (__bf16)y;
  o[6] = (unsigned)__builtin_bit_cast(unsigned short, a)
         | ((unsigned)__builtin_bit_cast(unsigned short, b) << 16);
  asm volatile("v_cvt_scalef32_pk_f32_bf8 %0, %1, %2" : "=v"(r) : "v"(q[i]), "v"(s[i]));
  o[7] = (unsigned)r; o[8] = (unsigned)(r >> 32);
}
"""


def decode(code: int, bf8: bool) -> float:
    """OCP E4M3FN (no infinities, 0x7F/0xFF NaN) or E5M2 (IEEE-like) code -> value."""
    sign = -1.0 if code & 0x80 else 1.0
    if bf8:
        e, m = (code >> 2) & 31, code & 3
        if e == 31:
            return sign * np.inf if m == 0 else np.nan
        return sign * (m / 4 * 2.0**-14 if e == 0 else (1 + m / 4) * 2.0 ** (e - 15))
    e, m = (code >> 3) & 15, code & 7
    if e == 15 and m == 7:
        return np.nan
    return sign * (m / 8 * 2.0**-6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))


def encode(x: float, bf8: bool) -> int:
    """Round to nearest, ties to the even code, as if the exponent were unbounded; a result past the
    largest finite value is NaN (0x7F) for fp8 and infinity for bf8. At the top, fp8's tie 464 goes down
    to 448 (mantissa 110 even) while bf8's tie 61440 goes up to 2^16 (57344 has an odd mantissa)."""
    if np.isnan(x):
        return 0x7F
    sign = 0x80 if np.signbit(x) else 0
    if (abs(x) >= 61440.0) if bf8 else (abs(x) > 464.0):
        return sign | (0x7C if bf8 else 0x7F)
    codes = [c for c in range(0x80) if np.isfinite(decode(c, bf8))]
    dist = [abs(abs(x) - decode(c, bf8)) for c in codes]
    best = min(dist)
    ties = [c for c, d in zip(codes, dist) if d == best]
    return sign | (min(ties, key=lambda c: c & 1) if len(ties) > 1 else ties[0])


def bf16(x: np.ndarray) -> np.ndarray:
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return (((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF).astype(np.uint32)


def test_fp8_bf8_and_bf16_conversions() -> None:
    image = compile_hip(SOURCE)
    assert_uses(image, "v_cvt_pk_fp8_f32", "v_cvt_pk_bf8_f32", "v_cvt_scalef32_pk_f32_fp8",
                "v_cvt_scalef32_f32_fp8", "v_cvt_scalef32_f32_bf8", "v_cvt_scalef32_pk_f32_bf8",
                "v_cvt_pk_bf16_f32")
    rng = np.random.default_rng(21)
    x = (rng.standard_normal(64) * np.exp2(rng.integers(-12, 10, 64))).astype(np.float32)
    y = (rng.standard_normal(64) * 40).astype(np.float32)
    # ties, overflow, subnormal
    x[:8] = [1.0625, 1.1875, 464.0, 470.0, 1000.0, np.inf, 2.0**-10, 3 * 2.0**-11]
    y[:4] = [57344.0 + 4096, -7e4, 2.0**-17, np.float32(1.00390625)]
    q = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    q[:2] = [0x7F7F7F7F, 0xFFFF7C00]  # fp8 NaN bytes; bf8 infinity
    e = rng.integers(100, 150, 64)
    e[:2] = [255, 0]  # the NaN scale and 2^-127
    with np.errstate(over="ignore"):
        s = np.ldexp(rng.uniform(1, 2, 64), e - 127).astype(np.float32)
    s[:2] = [np.inf, 2.0**-127]
    s[0] = np.float32(np.nan)
    out, = run(image, [np.zeros(64 * 12, np.uint32), x, y, q, s])[:1]
    got = out.reshape(64, 12)
    for i in range(64):
        lo = encode(float(x[i]), False) | encode(float(y[i]), False) << 8
        hi = encode(-float(x[i]), False) | encode(float(y[i]), False) << 8
        assert got[i, 0] == lo | hi << 16, f"lane {i}: cvt_pk_fp8 {got[i, 0]:#x}"
        bf = encode(float(x[i]), True) | encode(float(y[i]), True) << 8
        assert got[i, 1] == 0x12340000 | bf, f"lane {i}: cvt_pk_bf8 {got[i, 1]:#x}"
        exp_field = (int(s[i].view(np.uint32)) >> 23) & 0xFF
        factor = np.nan if exp_field == 255 else 2.0 ** (exp_field - 127)
        byte = [(int(q[i]) >> (8 * k)) & 0xFF for k in range(4)]
        want = [decode(byte[2], False) * factor, decode(byte[3], False) * factor,
                decode(byte[2], False) * factor, decode(byte[1], True) * factor,
                decode(byte[0], True) * factor, decode(byte[1], True) * factor]
        cols = [2, 3, 4, 5, 7, 8]
        for col, w in zip(cols, want):
            g = got[i, col:col + 1].view(np.float32)[0]
            assert (np.isnan(w) and np.isnan(g)) or g == np.float32(w), f"lane {i} o[{col}]: {g} != {w}"
    assert (got[:, 6] & 0xFFFF == bf16(x)).all() and (got[:, 6] >> 16 == bf16(y)).all()
