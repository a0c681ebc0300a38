"""VGPR indexing with an index past the wave's VGPRs: CDNA4 ISA 3.6.1 defines it (a source reads
VGPR0, a destination makes the move a no-op), and clang -O3 relies on it when it hoists an array
read whose index is out of range on a path that discards the value. Direct encodings, one wave
with an in-range index and one with an out-of-range index; expected values from that text."""

from __future__ import annotations

import numpy as np

from emukernels import compile_hip, run

ENCODED = """
KERNEL void gpr_index(unsigned *out, const unsigned *a, const unsigned *index) {
  unsigned i = gid() * 64 + tid(), x = a[i], y = x ^ 0x5a5a5a5au;
  unsigned k = __builtin_amdgcn_readfirstlane(index[gid()]);
  unsigned got, kept = x;
  asm volatile("v_mov_b32 v0, %2\\n"
               "s_set_gpr_idx_on %1, gpr_idx(SRC0)\\n"
               "v_mov_b32 %0, %3\\n"
               "s_set_gpr_idx_off"
               : "=&v"(got) : "s"(k), "v"(~x), "v"(y) : "v0");
  asm volatile("s_set_gpr_idx_on %1, gpr_idx(DST)\\n"
               "v_mov_b32 %0, %2\\n"
               "s_set_gpr_idx_off"
               : "+v"(kept) : "s"(k), "v"(y));
  out[2 * i] = got; out[2 * i + 1] = kept;
}
"""


def test_an_index_past_the_vgprs_reads_vgpr0_and_writes_nothing() -> None:
    image = compile_hip(ENCODED)
    x = np.random.default_rng(3).integers(0, 2**32, 128, dtype=np.uint64).astype(np.uint32)
    index = np.array([0, 200], np.uint32)  # wave 0 in range (the named registers), wave 1 past them
    out, = run(image, [np.zeros(256, np.uint32), x, index], grid=2, block=64)[:1]
    got, kept = out.reshape(128, 2).T
    y = x ^ np.uint32(0x5A5A5A5A)
    np.testing.assert_array_equal(got[:64], y[:64])  # index 0: the named source
    np.testing.assert_array_equal(kept[:64], y[:64])  # index 0: the named destination written
    np.testing.assert_array_equal(got[64:], ~x[64:])  # past the VGPRs: VGPR0's value
    np.testing.assert_array_equal(kept[64:], x[64:])  # past the VGPRs: nothing written
