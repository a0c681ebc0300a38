"""Vector ALU (VOP1/VOP2/VOP3/VOP3SD/VOPC): integer carries and high halves, shifts, compares with
cndmask, fp32 rounding (mul, fma, the square root sequence), conversions to and
from integers and fp16, byte permutes. Expected values: numpy, from the ISA's definitions."""

from __future__ import annotations

import numpy as np

from emukernels import assert_uses, compile_hip, run

from wgrad_cli.emu.ops.vector_math import max_num, min_num

SOURCE = """
KERNEL void valu(unsigned *out, const unsigned *a, const unsigned *b, const float *f, const float *g) {
  unsigned i = gid() * 256 + tid();
  unsigned x = a[i], y = b[i];
  float p = f[i], q = g[i];
  unsigned long long wide = (unsigned long long)x * y + ((unsigned long long)y << 20);
  unsigned *o = out + i * 24;
  o[0] = x + y; o[1] = x - y; o[2] = x * y; o[3] = (unsigned)(((unsigned long long)x * y) >> 32);
  o[4] = (unsigned)wide; o[5] = (unsigned)(wide >> 32);
  o[6] = x < y ? x ^ y : x | y;
  o[7] = (int)x >> (y & 31); o[8] = x << (y & 31); o[9] = x >> (y & 31);
  o[10] = __builtin_bit_cast(unsigned, p * q + 1.0f);
  o[11] = __builtin_bit_cast(unsigned, __builtin_fmaf(p, q, -p));
  o[12] = __builtin_bit_cast(unsigned, p - q * 0.25f);
  o[13] = (unsigned)(int)p; o[14] = __builtin_bit_cast(unsigned, (float)(int)x);
  o[15] = __builtin_bit_cast(unsigned, (float)x);
  o[16] = __builtin_popcount(x) + __builtin_clz(x | 1);
  o[17] = (x & 0xff) * (y >> 24) + (short)(x >> 16);
  o[18] = __builtin_bit_cast(unsigned, __builtin_fminf(p, q) + __builtin_fmaxf(p, q) * 0.5f);
  o[19] = (unsigned)(__builtin_bit_cast(unsigned short, (_Float16)p));
  o[20] = __builtin_bit_cast(unsigned, (float)(_Float16)q);
  o[21] = __builtin_bit_cast(unsigned, __builtin_sqrtf(__builtin_fabsf(p)));
  o[22] = p < q ? 1u : (p == q ? 2u : 3u);
  o[23] = (x >> 8 & 0xff) | ((y & 0xff) << 16);
}
"""
LANES = 512


def bits(v: np.ndarray) -> np.ndarray:
    return np.asarray(v, dtype=np.float32).view(np.uint32)


def expected(x: np.ndarray, y: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    u64 = np.uint64
    x64, y64 = x.astype(u64), y.astype(u64)
    wide = x64 * y64 + (y64 << u64(20))
    sh = y & np.uint32(31)
    with np.errstate(all="ignore"):
        f16 = p.astype(np.float16)
        cols = [
            x + y, x - y, x * y, (x64 * y64) >> u64(32), wide & u64(0xFFFFFFFF), wide >> u64(32),
            np.where(x < y, x ^ y, x | y), (x.view(np.int32) >> sh.astype(np.int32)).view(np.uint32), x << sh,
            x >> sh, bits((p.astype(np.float64) * q + 1).astype(np.float32)),  # contracted to one fma
            bits((p.astype(np.float64) * q - p).astype(np.float32)),  # one rounding: exact in float64 first
            bits((p.astype(np.float64) - q.astype(np.float64) * 0.25).astype(np.float32)),
            p.astype(np.int32).view(np.uint32), bits(x.view(np.int32).astype(np.float32)),
            bits(x.astype(np.float32)), np.array([bin(v).count("1") + 32 - int(v | 1).bit_length()
                                                  for v in x]),
            (x & 0xFF) * (y >> 24)
            + ((x >> 16).astype(np.uint16).view(np.int16).astype(np.int32)).view(np.uint32),
            bits(np.minimum(p, q) + np.maximum(p, q) * np.float32(0.5)), f16.view(np.uint16),
            bits(q.astype(np.float16).astype(np.float32)), bits(np.sqrt(np.abs(p))),
            np.where(p < q, 1, np.where(p == q, 2, 3)), ((x >> 8) & 0xFF) | ((y & 0xFF) << 16),
        ]
    return np.stack([np.asarray(c).astype(np.uint64).astype(np.uint32) for c in cols], axis=1)


def test_valu_matches_the_isa() -> None:
    image = compile_hip(SOURCE)
    assert_uses(image, r"v_add_u32_e32", r"v_sub_co_u32_e(32|64)", r"v_mul_hi_u32", r"v_mad_u64_u32",
                r"v_lshl_add_u64", r"v_cmp_lt_f32_e64", r"v_cndmask_b32_e(32|64)", r"v_fma_f32",
                r"v_cvt_f16_f32_e32", r"v_cvt_f32_f16_e32", r"v_cvt_i32_f32_e32",
                r"v_cvt_f32_u32_e32", r"v_ffbh_u32_e32", r"v_bcnt_u32_b32", r"v_mad_u32_u24", r"v_perm_b32",
                r"v_sqrt_f32_e32", r"v_ashrrev_i32_e32")
    rng = np.random.default_rng(5)
    x = rng.integers(0, 2**32, LANES, dtype=np.uint64).astype(np.uint32)
    y = rng.integers(0, 2**32, LANES, dtype=np.uint64).astype(np.uint32)
    y[:64] = x[:64]  # equal operands: the other compare outcome
    p = (rng.standard_normal(LANES) * 1000).astype(np.float32)
    q = (rng.standard_normal(LANES) * 3).astype(np.float32)
    q[64:80] = p[64:80]
    p[80:96] = np.float32(65519.0)  # rounds up to fp16 infinity
    out, = run(image, [np.zeros(LANES * 24, np.uint32), x, y, p, q], grid=2, block=256)[:1]
    got = out.reshape(LANES, 24)
    want = expected(x, y, p, q)
    for col in range(24):
        bad = np.flatnonzero(got[:, col] != want[:, col])
        assert not len(bad), f"o[{col}] lane {bad[0]}: {got[bad[0], col]:#x} != {want[bad[0], col]:#x}"


def test_min_max_follow_the_pseudo_code_on_zeros_and_nans() -> None:
    """V_MIN/V_MAX_F16/F32/F64: -0 below +0 in either operand order; a quiet NaN gives the other
    operand; a signalling NaN gives that NaN quieted (IEEE mode)."""
    for dtype, bits, snan, qbit in ((np.float16, np.uint16, 0x7C01, 0x200),
                                    (np.float32, np.uint32, 0x7F800001, 1 << 22),
                                    (np.float64, np.uint64, 0x7FF0000000000001, 1 << 51)):
        z, nz = dtype(0.0), dtype(-0.0)
        a = np.array([z, nz, z, nz, np.nan, 1, 2], dtype)
        b = np.array([nz, z, z, nz, 3, np.nan, -1], dtype)
        lo, hi = min_num(a, b), max_num(a, b)
        assert list(np.signbit(lo[:4])) == [True, True, False, True]
        assert list(np.signbit(hi[:4])) == [False, False, False, True]
        assert list(lo[4:]) == [3, 1, -1] and list(hi[4:]) == [3, 1, 2]
        s = np.array([snan], bits).view(dtype)
        one = np.ones(1, dtype)
        for r in (min_num(s, one), min_num(one, s), max_num(s, one), max_num(one, s)):
            assert int(r.view(bits)[0]) == snan | qbit
