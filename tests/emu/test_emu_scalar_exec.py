"""Scalar ALU and SMEM (SOP1/SOP2/SOPC/SOPK, 64-bit ops and carries, SCC, s_cselect, branches),
and exec masks: divergent if/else and loops whose trip count differs per lane and per wave
(s_and_saveexec, s_andn2_saveexec, s_cbranch_execz/execnz). Expected values: plain Python."""

from __future__ import annotations

import numpy as np

from emukernels import assert_uses, compile_hip, run

M32, M64 = 0xFFFFFFFF, (1 << 64) - 1

SALU = """
KERNEL void salu(unsigned *out, unsigned a, unsigned b, unsigned long long c,
                 const unsigned *__restrict__ tab) {
  unsigned long long d = c * b + (c >> (a & 63)) - (c << 3);
  unsigned acc = a;
  for (unsigned j = 0; j < (b & 7) + 2; ++j) acc = acc * 3u + tab[j];
  unsigned r0 = (a < b ? a - b : b - a) ^ (unsigned)(d >> 32);
  unsigned r1 = __builtin_popcountll(c) + __builtin_ctz(b | 0x80000000u) + ((int)a > (int)b ? 100u : 7u);
  unsigned r2 = (a >> 4 & 0xfff) | (unsigned)(short)b;
  unsigned r3 = (int)a < 0 ? a & 0xffff : a | 0x1234;
  if (tid() < 4) { unsigned v[4] = {acc, r0 + (unsigned)d, r1, r2 ^ r3}; out[tid()] = v[tid()]; }
}
"""
DIVERGE = """
KERNEL void diverge(unsigned *out, const unsigned *n) {
  unsigned i = gid() * 256 + tid();
  unsigned k = n[i];
  unsigned acc = i;
  if (k & 1) acc = acc * 7u + 3u; else acc ^= 0x5555u;
  for (unsigned j = 0; j < k; ++j) { acc = acc * 1664525u + 1013904223u; if ((acc >> 28) == 5u) break; }
  out[i] = acc;
}
"""


def s32(v: int) -> int:
    return v - (1 << 32) if v & 0x80000000 else v


def salu_expected(a: int, b: int, c: int, tab: list[int]) -> list[int]:
    d = (c * b + (c >> (a & 63)) - (c << 3)) & M64
    acc = a
    for j in range((b & 7) + 2):
        acc = (acc * 3 + tab[j]) & M32
    r0 = ((a - b if a < b else b - a) & M32) ^ (d >> 32)
    ctz = ((b | 0x80000000) & -(b | 0x80000000)).bit_length() - 1
    r1 = bin(c).count("1") + ctz + (100 if s32(a) > s32(b) else 7)
    sb = b & 0xFFFF
    r2 = ((a >> 4) & 0xFFF) | ((sb - 0x10000 if sb & 0x8000 else sb) & M32)
    r3 = a & 0xFFFF if s32(a) < 0 else a | 0x1234
    return [acc, (r0 + d) & M32, r1, r2 ^ r3]


def test_salu_and_smem_match_the_isa() -> None:
    image = compile_hip(SALU)
    assert_uses(image, r"s_load_dwordx2", r"s_load_dword", r"s_add_u32", r"s_addc_u32", r"s_sub_u32",
                r"s_subb_u32", r"s_mul_hi_u32", r"s_lshl_b64", r"s_lshr_b64", r"s_bcnt1_i32_b64",
                r"s_ff1_i32_b32", r"s_bfe_u32", r"s_sext_i32_i16", r"s_cmp_lt_i32", r"s_cselect_b32",
                r"s_cbranch_scc0", r"s_and_saveexec_b64")
    tab = [0x9E3779B9, 17, 0xFFFFFFFF, 5, 0x80000000, 12345, 7, 99, 0xDEADBEEF, 3]
    for a, b, c in [(0x89ABCDEF, 0x1234567F, 0xFEDCBA9876543210), (5, 0xFFFF8001, 0x8000000000000001),
                    (0x7FFFFFFF, 0x80000000, 0xFFFFFFFFFFFFFFFF), (40, 40, 1 << 40)]:
        out, _ = run(image, [np.zeros(4, np.uint32), a, b, c, np.array(tab, np.uint32)])
        assert out.tolist() == salu_expected(a, b, c, tab), (hex(a), hex(b), hex(c))


def diverge_expected(n: np.ndarray) -> list[int]:
    want = []
    for i, k in enumerate(n.tolist()):
        acc = (i * 7 + 3) & M32 if k & 1 else i ^ 0x5555
        for _ in range(k):
            acc = (acc * 1664525 + 1013904223) & M32
            if acc >> 28 == 5:
                break
        want.append(acc)
    return want


def test_divergent_lanes_and_waves_follow_their_own_paths() -> None:
    image = compile_hip(DIVERGE)
    assert_uses(image, r"s_and_saveexec_b64", r"s_andn2_saveexec_b64", r"s_cbranch_execz",
                r"s_cbranch_execnz", r"s_branch", r"v_cmp_ne_u32_e32")
    rng = np.random.default_rng(3)
    n = rng.integers(0, 40, 512).astype(np.uint32)
    n[64:128] = 0  # a wave that skips the loop
    n[128:192] = 77  # a wave whose lanes all run long
    n[200] = 300  # one lane far longer than the rest of its wave
    out, _ = run(image, [np.zeros(512, np.uint32), n], grid=2, block=256)
    assert out.tolist() == diverge_expected(n)
