"""Division and the other vector ops the compiler emits in ordinary code: the fp32 and fp64
division sequences (v_div_scale, v_rcp, fma Newton steps, v_div_fmas, v_div_fixup) against IEEE
division, which the ISA says the sequence matches (correctly rounded), over normal, subnormal,
huge, zero, infinite and NaN operands; and byte-sum, lerp, med3, fp16 and fp64 rounding ops
against numpy written from each opcode's pseudo-code."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from emukernels import assert_uses, compile_hip, run

DIVIDE32 = """
KERNEL void divide(float *out, const float *a, const float *b) {
  unsigned i = gid() * 256 + tid(); out[i] = a[i] / b[i];
}
"""
DIVIDE64 = """
KERNEL void divide64(double *out, const double *a, const double *b) {
  unsigned i = tid(); out[i] = a[i] / b[i];
}
"""
DIVIDE = DIVIDE32 + DIVIDE64


def operands(rng: np.random.Generator, n: int, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """Numerators and denominators: random magnitudes over the whole exponent range (quotients
    that overflow, underflow into subnormals or vanish), and the special values in every pair."""
    info = np.finfo(dtype)
    span = info.maxexp - info.minexp
    a = (rng.standard_normal(n)
         * np.exp2(rng.integers(info.minexp - info.nmant, info.maxexp, n))).astype(dtype)
    b = (rng.standard_normal(n)
         * np.exp2(rng.integers(info.minexp - info.nmant, info.maxexp, n))).astype(dtype)
    near = rng.integers(0, n, n // 4)  # quotients near 1 and near the limits of the normal range
    with np.errstate(over="ignore"):
        b[near] = (a[near] * rng.uniform(0.5, 2, len(near))
                   * np.exp2(rng.integers(-span, span, len(near)) // 8)).astype(dtype)
    # quotients of exactly 1 or 3 halves of the smallest subnormal (ties: 0 and 2 units), and one ulp
    # either side of them: the sequence must scale these too, though they round to 0 or 1 unit
    ties = rng.integers(0, n, n // 8)
    b[ties] = np.ldexp(rng.uniform(1, 2, len(ties)),
                       rng.integers(info.nmant + 8, info.maxexp // 2, len(ties))).astype(dtype)
    a[ties] = np.ldexp(b[ties] * rng.choice([1, 3, -1], len(ties)),
                       info.minexp - info.nmant - 1).astype(dtype)
    a[ties] = np.where(rng.random(len(ties)) < 0.5, a[ties],
                       np.nextafter(a[ties], rng.choice([-np.inf, np.inf], len(ties)).astype(dtype)))
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -3.0, info.tiny, info.tiny / 4, info.max,
                         info.smallest_subnormal], dtype=dtype)
    pairs = np.array([(x, y) for x in specials for y in specials], dtype=dtype)
    a[:len(pairs)], b[:len(pairs)] = pairs[:, 0], pairs[:, 1]
    return a, b


def same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Bitwise equal, any NaN matching any NaN."""
    uint = f"u{got.dtype.itemsize}"
    return (got.view(uint) == want.view(uint)) | (np.isnan(got) & np.isnan(want))


def test_fp32_division_is_ieee_division() -> None:
    image = compile_hip(DIVIDE32)
    assert_uses(image, "v_div_scale_f32", "v_div_fmas_f32", "v_div_fixup_f32", r"v_rcp_f32_e32")
    a, b = operands(np.random.default_rng(7), 512, np.float32)
    got, _, _ = run(image, [np.zeros(512, np.float32), a, b], grid=2, block=256)
    with np.errstate(all="ignore"):
        want = a / b
    bad = np.flatnonzero(~same(got, want))
    assert not len(bad), (f"{a[bad[0]]!r} / {b[bad[0]]!r}: {got[bad[0]]!r}, IEEE {want[bad[0]]!r} "
                          f"({len(bad)} lanes)")


def test_fp64_division_is_ieee_division() -> None:
    image = compile_hip(DIVIDE64)
    assert_uses(image, "v_div_scale_f64", "v_div_fmas_f64", "v_div_fixup_f64", r"v_rcp_f64_e32",
                r"v_fmac_f64_e32")
    a, b = operands(np.random.default_rng(8), 256, np.float64)
    got, _, _ = run(image, [np.zeros(256, np.float64), a, b], block=256)
    with np.errstate(all="ignore"):
        want = a / b
    bad = np.flatnonzero(~same(got, want))
    assert not len(bad), (f"{a[bad[0]]!r} / {b[bad[0]]!r}: {got[bad[0]]!r}, IEEE {want[bad[0]]!r} "
                          f"({len(bad)} lanes)")


MISC = """
#define BITS16(v) ((unsigned)__builtin_bit_cast(unsigned short, (_Float16)(v)))
KERNEL void misc(unsigned *o, const unsigned *a, const unsigned *b, const float *f,
                 const _Float16 *hh, const double *g) {
  unsigned i = tid(), x = a[i], y = b[i];
  float p = f[i];
  _Float16 hx = hh[2 * i], hy = hh[2 * i + 1];
  double q = g[i];
  unsigned *r = o + i * 12;
  r[0] = __builtin_amdgcn_sad_u8(x, y, 7u);
  r[1] = __builtin_amdgcn_msad_u8(x, y, 3u);
  r[2] = __builtin_amdgcn_lerp(x, y, x ^ y);
  r[3] = __builtin_amdgcn_sad_hi_u8(x, y, 5u);
  r[4] = __builtin_amdgcn_sad_u16(x, y, 9u);
  r[5] = __builtin_bit_cast(unsigned, __builtin_amdgcn_fmed3f(p, p * 3.0f, 1.0f - p));
  r[6] = BITS16(__builtin_fmaf16(hx, hy, (_Float16)1.5f)) | BITS16(__builtin_floorf16(hx)) << 16;
  r[7] = BITS16(__builtin_sqrtf16(__builtin_fabsf16(hx))) | BITS16(hx * hy) << 16;
  unsigned long long fq = __builtin_bit_cast(unsigned long long, __builtin_fma(q, q, -1.0));
  unsigned long long tq = __builtin_bit_cast(unsigned long long,
                                             __builtin_trunc(q * 3.0) - __builtin_floor(q));
  r[8] = (unsigned)fq; r[9] = (unsigned)(fq >> 32); r[10] = (unsigned)tq; r[11] = (unsigned)(tq >> 32);
}
"""


def _bytes(v: np.ndarray, width: int) -> list[np.ndarray]:
    return [(v.astype(np.int64) >> s) & ((1 << width) - 1) for s in range(0, 32, width)]


def test_byte_sums_med3_fp16_and_fp64_ops_match_their_pseudo_code() -> None:
    image = compile_hip(MISC)
    assert_uses(image, "v_sad_u8", "v_msad_u8", "v_lerp_u8", "v_sad_hi_u8", "v_sad_u16", "v_med3_f32",
                "v_fma_f16", r"v_floor_f16.*", r"v_sqrt_f16.*", "v_fma_f64", r"v_trunc_f64.*",
                r"v_floor_f64.*")
    rng = np.random.default_rng(11)
    n = 64
    x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    y = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    y[:8] &= np.uint32(0x00FF00FF)  # zero bytes: v_msad_u8 skips them
    p = rng.uniform(-4, 4, n).astype(np.float32)
    h = rng.uniform(-40, 40, 2 * n).astype(np.float16)
    q = rng.uniform(-1e3, 1e3, n)
    out, *_ = run(image, [np.zeros(n * 12, np.uint32), x, y, p, h, q])
    got = out.reshape(n, 12)
    hx, hy = h[0::2], h[1::2]
    xb, yb, cb = _bytes(x, 8), _bytes(y, 8), _bytes(x ^ y, 8)
    sad8 = sum(np.abs(u - v) for u, v in zip(xb, yb))
    med = np.sort(np.stack([p, p * np.float32(3), np.float32(1) - p]), axis=0)[1]
    f16 = [(hx.astype(np.float64) * hy + 1.5).astype(np.float16), np.floor(hx),
           np.sqrt(np.abs(hx).astype(np.float64)).astype(np.float16),
           (hx.astype(np.float64) * hy).astype(np.float16)]
    fma = np.array([float(Fraction(v) * Fraction(v) - 1) for v in q])
    tq = np.trunc(q * 3.0) - np.floor(q)
    want = np.stack([
        sad8 + 7, sum(np.where(v == 0, 0, np.abs(u - v)) for u, v in zip(xb, yb)) + 3,
        sum(((u + v + (c & 1)) >> 1) << (8 * k) for k, (u, v, c) in enumerate(zip(xb, yb, cb))),
        (sad8 << 16) + 5, sum(np.abs(u - v) for u, v in zip(_bytes(x, 16), _bytes(y, 16))) + 9,
        med.view(np.uint32), f16[0].view(np.uint16) | (f16[1].view(np.uint16).astype(np.uint32) << 16),
        f16[2].view(np.uint16) | (f16[3].view(np.uint16).astype(np.uint32) << 16),
        fma.view(np.uint64) & 0xFFFFFFFF, fma.view(np.uint64) >> np.uint64(32),
        tq.view(np.uint64) & 0xFFFFFFFF, tq.view(np.uint64) >> np.uint64(32)],
                    axis=1).astype(np.uint64).astype(np.uint32)
    for col in range(12):
        bad = np.flatnonzero(got[:, col] != want[:, col])
        assert not len(bad), f"r[{col}] lane {bad[0]}: {got[bad[0], col]:#x} != {want[bad[0], col]:#x}"
