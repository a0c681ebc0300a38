"""Packed 16-bit VOP3P math (v_pk_*_u16/i16/f16: each half of D from the halves op_sel/op_sel_hi pick,
neg_lo/neg_hi on fp16 only, clamp saturating integers) and v_mad_u16 / v_mad_legacy_u16, against numpy
from the CDNA4 ISA pseudo-code ("For integer operations, [clamp] clamps the result to the largest and
smallest representable value")."""

from __future__ import annotations

import numpy as np

from emukernels import assert_uses, compile_hip, run

SOURCE = """
typedef short s2 __attribute__((ext_vector_type(2)));
typedef unsigned short u2 __attribute__((ext_vector_type(2)));
typedef _Float16 h2 __attribute__((ext_vector_type(2)));
KERNEL void pk(unsigned *out, const unsigned *a, const unsigned *b, const unsigned *c) {
  unsigned i = __builtin_amdgcn_workitem_id_x();
  unsigned x = a[i], y = b[i], z = c[i];
  unsigned *o = out + i * 16;
  u2 ux = __builtin_bit_cast(u2, x), uy = __builtin_bit_cast(u2, y), uz = __builtin_bit_cast(u2, z);
  s2 sx = __builtin_bit_cast(s2, x), sy = __builtin_bit_cast(s2, y), sz = __builtin_bit_cast(s2, z);
  h2 hx = __builtin_bit_cast(h2, x), hy = __builtin_bit_cast(h2, y), hz = __builtin_bit_cast(h2, z);
  o[0] = __builtin_bit_cast(unsigned, ux + uy);
  o[1] = __builtin_bit_cast(unsigned, sx - sy);
  o[2] = __builtin_bit_cast(unsigned, ux * uy + uz);
  o[3] = __builtin_bit_cast(unsigned, sx * sy + sz);
  o[4] = __builtin_bit_cast(unsigned, uy << (ux & (u2){15, 15}));
  o[5] = __builtin_bit_cast(unsigned, sy >> (sx & (s2){15, 15}));
  o[6] = __builtin_bit_cast(unsigned, sx > sy ? sx : sy);
  o[7] = __builtin_bit_cast(unsigned, ux < uy ? ux : uy);
  o[8] = __builtin_bit_cast(unsigned, hx * hy + hz);
  o[9] = __builtin_bit_cast(unsigned, __builtin_elementwise_min(hx, hy));
  unsigned r;
  asm volatile("v_pk_add_u16 %0, %1, %2 clamp" : "=v"(r) : "v"(x), "v"(y)); o[10] = r;
  asm volatile("v_pk_sub_i16 %0, %1, %2 clamp" : "=v"(r) : "v"(x), "v"(y)); o[11] = r;
  asm volatile("v_pk_add_f16 %0, %1, %2 op_sel:[1,0] op_sel_hi:[0,1] neg_lo:[0,1]"
               : "=v"(r) : "v"(x), "v"(y)); o[12] = r;
  asm volatile("v_mad_legacy_u16 %0, %1, %2, %3" : "=v"(r) : "v"(x), "v"(y), "v"(z)); o[13] = r;
  asm volatile("v_mad_u16 %0, %1, %2, %3" : "=v"(r) : "v"(x), "v"(y), "v"(z)); o[14] = r;
  o[15] = (unsigned short)((unsigned short)x * (unsigned short)y + (unsigned short)z);
}
"""


def halves(v: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = (v & 0xFFFF).astype(np.uint16), (v >> 16).astype(np.uint16)
    if kind == "i":
        return lo.view(np.int16).astype(np.int64), hi.view(np.int16).astype(np.int64)
    if kind == "f":
        return lo.view(np.float16).astype(np.float64), hi.view(np.float16).astype(np.float64)
    return lo.astype(np.int64), hi.astype(np.int64)


def pack(lo: np.ndarray, hi: np.ndarray, kind: str = "u") -> np.ndarray:
    if kind == "f":
        lo, hi = (np.asarray(v).astype(np.float16).view(np.uint16).astype(np.int64) for v in (lo, hi))
    return ((np.asarray(lo) & 0xFFFF) | ((np.asarray(hi) & 0xFFFF) << 16)).astype(np.uint32)


def test_packed_16bit_math_and_mad_u16() -> None:
    image = compile_hip(SOURCE)
    assert_uses(image, "v_pk_add_u16", "v_pk_sub_i16", "v_pk_mad_u16", "v_pk_lshlrev_b16", "v_pk_ashrrev_i16",
                "v_pk_max_i16", "v_pk_min_u16", "v_pk_fma_f16", "v_pk_min_f16", "v_pk_add_f16", "v_mad_u16",
                "v_mad_legacy_u16")
    rng = np.random.default_rng(16)
    ints = [rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32) for _ in range(3)]
    floats = [(rng.standard_normal((64, 2)) * 8).astype(np.float16).view(np.uint32)[:, 0] for _ in range(3)]
    x, y, z = (np.concatenate([i[:32], f[32:]]) for i, f in zip(ints, floats))
    out, = run(image, [np.zeros(64 * 16, np.uint32), x, y, z])[:1]
    got = out.reshape(64, 16)
    (ux, uy, uz), (sx, sy, sz) = (halves(v, "u") for v in (x, y, z)), (halves(v, "i") for v in (x, y, z))
    hx, hy, hz = (halves(v, "f") for v in (x, y, z))
    f16 = slice(32, 64)  # fp16 checks only on the lanes holding finite fp16 pairs
    want = {
        0: pack(ux[0] + uy[0], ux[1] + uy[1]),
        1: pack(sx[0] - sy[0], sx[1] - sy[1]),
        2: pack(ux[0] * uy[0] + uz[0], ux[1] * uy[1] + uz[1]),
        3: pack(sx[0] * sy[0] + sz[0], sx[1] * sy[1] + sz[1]),
        4: pack(uy[0] << (ux[0] & 15), uy[1] << (ux[1] & 15)),
        5: pack(sy[0] >> (sx[0] & 15), sy[1] >> (sx[1] & 15)),
        6: pack(np.maximum(sx[0], sy[0]), np.maximum(sx[1], sy[1])),
        7: pack(np.minimum(ux[0], uy[0]), np.minimum(ux[1], uy[1])),
        10: pack(np.minimum(ux[0] + uy[0], 0xFFFF), np.minimum(ux[1] + uy[1], 0xFFFF)),
        11: pack(np.clip(sx[0] - sy[0], -32768, 32767), np.clip(sx[1] - sy[1], -32768, 32767)),
        13: ((ux[0] * uy[0] + uz[0]) & 0xFFFF).astype(np.uint32),
        14: ((ux[0] * uy[0] + uz[0]) & 0xFFFF).astype(np.uint32),
        15: ((ux[0] * uy[0] + uz[0]) & 0xFFFF).astype(np.uint32),
    }
    for col, w in want.items():
        bad = np.flatnonzero(got[:, col] != w)
        assert not len(bad), f"o[{col}] lane {bad[0]}: {got[bad[0], col]:#x} != {int(w[bad[0]]):#x}"
    with np.errstate(all="ignore"):  # the integer lanes hold NaN and infinite halves
        want_f = {
            # fma: one rounding, exact in float64 here
            8: pack(hx[0] * hy[0] + hz[0], hx[1] * hy[1] + hz[1], "f"),
            9: pack(np.minimum(hx[0], hy[0]), np.minimum(hx[1], hy[1]), "f"),
            12: pack(hx[1] - hy[0], hx[0] + hy[1], "f"),  # op_sel:[1,0] op_sel_hi:[0,1] neg_lo:[0,1]
        }
    for col, w in want_f.items():
        bad = np.flatnonzero(got[f16, col] != w[f16])
        assert not len(bad), (f"o[{col}] lane {32 + bad[0]}: {got[32 + bad[0], col]:#x} != "
                              f"{int(w[f16][bad[0]]):#x}")


def test_pk_mov_b32_takes_each_half_from_the_operand_op_sel_picks() -> None:
    """v_pk_mov_b32 (CDNA4 pseudo-code): D[31:0] = src0's dword op_sel[0] picks, D[63:32] = src1's
    dword op_sel[1] picks; op_sel_hi plays no part (clang emits op_sel:[1,0] when it spills)."""
    image = compile_hip("""
typedef unsigned long long u64;
KERNEL void pkmov(u64 *out, const u64 *a, const u64 *b) {
  unsigned i = tid();
  u64 x = a[i], y = b[i], r;
  u64 *o = out + i * 4;
  asm volatile("v_pk_mov_b32 %0, %1, %2 op_sel:[0,0]" : "=v"(r) : "v"(x), "v"(y)); o[0] = r;
  asm volatile("v_pk_mov_b32 %0, %1, %2 op_sel:[0,1]" : "=v"(r) : "v"(x), "v"(y)); o[1] = r;
  asm volatile("v_pk_mov_b32 %0, %1, %2 op_sel:[1,0]" : "=v"(r) : "v"(x), "v"(y)); o[2] = r;
  asm volatile("v_pk_mov_b32 %0, %1, %2 op_sel:[1,1] op_sel_hi:[0,0]" : "=v"(r) : "v"(x), "v"(y)); o[3] = r;
}""")
    assert_uses(image, r"v_pk_mov_b32")
    rng = np.random.default_rng(5)
    a, b = (rng.integers(0, 2**63, 64, dtype=np.uint64) for _ in range(2))
    out, _, _ = run(image, [np.zeros(64 * 4, np.uint64), a, b])
    dwords = [(v & np.uint64(0xFFFFFFFF), v >> np.uint64(32)) for v in (a, b)]
    for k, (sel0, sel1) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
        lo, hi = dwords[0][sel0], dwords[1][sel1]
        assert (out[k::4] == lo | (hi << np.uint64(32))).all(), (sel0, sel1)
