"""SDWA with an SGPR or inline-constant source (gfx9: the S0/S1 bit turns a source's 8-bit field
from a VGPR into an SGPR or constant): what clang-22 -O3 emits for byte and word extraction next to
a scalar value, and direct encodings of source and destination selects, sign extension and a VOPC
form. Expected values: numpy, from the ISA's SDWA definitions."""

from __future__ import annotations

import re

import numpy as np

from emukernels import compile_hip, listing, run

GROUPS = 3
LANES = 64 * GROUPS
COMPILED = """
KERNEL void sdwa_c(unsigned *out, const unsigned *a, unsigned s0) {
  unsigned s = s0 ^ (gid() * 0x01010101u);  // a scalar that differs per workgroup
  unsigned i = gid() * 64 + tid(), x = a[i];
  unsigned *o = out + i * 4;
  o[0] = s - ((x >> 8) & 0xff);
  o[1] = (s >> 16) - (x >> 16);
  o[2] = ((x >> 8) & 0xff) < s ? 7 : 9;
  o[3] = ((x >> 8) & 0xff) * ((s >> 16) & 0xff) + (unsigned short)x * (unsigned short)(s >> 16);
}
"""
ENCODED = """
KERNEL void sdwa_asm(unsigned *out, const unsigned *a, const unsigned *b) {
  unsigned i = gid() * 64 + tid(), x = a[i];
  unsigned s = __builtin_amdgcn_readfirstlane(b[i]);
  unsigned r0, r1, r2, r3 = x, r4;
  unsigned long long m;
  asm volatile("v_add_u32_sdwa %0, %1, %2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_1 src1_sel:WORD_0"
               : "=v"(r0) : "s"(s), "v"(x));
  asm volatile("v_sub_u32_sdwa %0, %1, %2 dst_sel:WORD_1 dst_unused:UNUSED_PAD "
               "src0_sel:WORD_1 src1_sel:BYTE_3"
               : "=v"(r1) : "v"(x), "s"(s));
  asm volatile("v_add_u32_sdwa %0, 3, %1 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:BYTE_2"
               : "=v"(r2) : "v"(x));
  asm volatile("v_mov_b32_sdwa %0, %1 dst_sel:BYTE_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_2"
               : "+v"(r3) : "s"(s));
  asm volatile("v_cmp_gt_i32_sdwa %0, sext(%1), %2 src0_sel:BYTE_3 src1_sel:WORD_0"
               : "=s"(m) : "s"(s), "v"(x));
  asm volatile("v_max_i32_sdwa %0, sext(%1), %2 dst_sel:DWORD dst_unused:UNUSED_PAD "
               "src0_sel:WORD_0 src1_sel:DWORD"
               : "=v"(r4) : "s"(s), "v"(x));
  unsigned *o = out + i * 6;
  o[0] = r0; o[1] = r1; o[2] = r2; o[3] = r3; o[4] = (unsigned)(m >> tid()) & 1; o[5] = r4;
}
"""


def sdwa_with_scalar(image: bytes) -> list[str]:
    """The image's SDWA instructions that read an SGPR or a constant."""
    return [line for line in listing(image).splitlines()
            if re.search(r"_sdwa\s", line)
            and re.search(r"_sdwa\s+[^,]+(,\s*\S+)*?,\s*(sext\()?(s\d+|\d+)\b", line)]


def inputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 2**32, LANES, dtype=np.uint64).astype(np.uint32),
            rng.integers(0, 2**32, LANES, dtype=np.uint64).astype(np.uint32))


def check(got: np.ndarray, want: list[np.ndarray]) -> None:
    for col, w in enumerate(want):
        w = np.asarray(w).astype(np.int64).astype(np.uint32)
        bad = np.flatnonzero(got[:, col] != w)
        assert not len(bad), f"o[{col}] lane {bad[0]}: {got[bad[0], col]:#x} != {w[bad[0]]:#x}"


def test_clang_o3_sdwa_with_an_sgpr_matches_the_host() -> None:
    image = compile_hip(COMPILED)
    scalar_forms = sdwa_with_scalar(image)
    assert any("v_sub_u32_sdwa" in line for line in scalar_forms), scalar_forms  # an SGPR src0
    assert any("v_mul_u32_u24_sdwa" in line for line in scalar_forms), scalar_forms  # an SGPR src1
    x, _ = inputs(1)
    s0 = 0x9C3A_F00D
    out, = run(image, [np.zeros(LANES * 4, np.uint32), x, s0], grid=GROUPS, block=64)[:1]
    s = np.uint32(s0) ^ (np.arange(LANES, dtype=np.uint32) // 64 * np.uint32(0x01010101))
    b1 = (x >> 8) & 0xFF
    check(out.reshape(LANES, 4), [s - b1, (s >> 16) - (x >> 16), np.where(b1 < s, 7, 9),
                                  b1 * ((s >> 16) & 0xFF) + (x & 0xFFFF) * ((s >> 16) & 0xFFFF)])


def test_sdwa_scalar_sources_follow_the_selects() -> None:
    image = compile_hip(ENCODED)
    assert len(sdwa_with_scalar(image)) == 6
    x, b = inputs(2)
    b[64:128] = 0xFF80_7F01  # negative byte 3 and word 0 as sign-extended sources
    out, = run(image, [np.zeros(LANES * 6, np.uint32), x, b], grid=GROUPS, block=64)[:1]
    s = np.repeat(b[::64], 64)  # readfirstlane: lane 0's value, per wave
    i64 = np.int64
    sbyte3 = ((s >> 24) & 0xFF).astype(np.uint8).view(np.int8).astype(i64)
    sword0 = (s & 0xFFFF).astype(np.uint16).view(np.int16).astype(i64)
    check(out.reshape(LANES, 6), [
        ((s >> 8) & 0xFF) + (x & 0xFFFF),
        (((x >> 16) - (s >> 24)) & 0xFFFF) << 16,
        3 + ((x >> 16) & 0xFF),
        (x & 0xFFFF00FF) | (((s >> 16) & 0xFF) << 8),
        sbyte3 > (x & 0xFFFF).astype(i64),
        np.maximum(sword0, x.view(np.int32).astype(i64)),
    ])
