"""VSKIP (s_setvskip): CDNA4 ISA, SOPC: VSKIP = S0[S1[4:0]]; while it is set the wave passes over
its vector instructions (VALU, vector memory, LDS) without running them, and runs its scalar ones.
Four waves, each with its own bits (read from memory, so per wave): bit 0 skips a VALU add, bit 1 a
global store and an LDS write; `s_setvskip 0, 0` ends each region, and what follows runs in every
wave. AITER's one-stage fused-MoE kernels guard their output atomics this way."""

from __future__ import annotations

import numpy as np

from emukernels import assert_uses, compile_hip, run

SOURCE = """
KERNEL void vskip(unsigned *out, unsigned *stored, const unsigned *bits) {
  static SHARED unsigned lds[256];
  unsigned i = tid(), w = __builtin_amdgcn_readfirstlane(bits[i / 64]), x = i, s = 0;
  lds[i] = 5;
  __builtin_amdgcn_s_barrier();
  asm volatile("s_setvskip %1, 0\\n\\tv_add_u32 %0, 100, %0\\n\\ts_setvskip 0, 0\\n\\t"
               "s_add_u32 %2, %2, 1\\n\\tv_add_u32 %0, 1000, %0"
               : "+v"(x), "+s"(w), "+s"(s));
  asm volatile("s_setvskip %0, 1\\n\\tglobal_store_dword %1, %2, off\\n\\tds_write_b32 %3, %2\\n\\t"
               "s_setvskip 0, 0\\n\\ts_waitcnt vmcnt(0) lgkmcnt(0)"
               :: "s"(w), "v"(stored + i), "v"(x), "v"(i * 4) : "memory");
  __builtin_amdgcn_s_barrier();
  out[i] = x + (s << 16) + (lds[i] << 24);
}
"""


def test_vskip_passes_over_vector_instructions_per_wave() -> None:
    image = compile_hip(SOURCE)
    assert_uses(image, "s_setvskip")
    bits = np.array([0b00, 0b01, 0b10, 0b11], dtype=np.uint32)
    poison = np.uint32(0xDEADBEEF)
    out, stored, _ = run(image, [np.zeros(256, np.uint32), np.full(256, poison, np.uint32), bits], block=256)
    lane = np.arange(256, dtype=np.uint32)
    wave = bits[lane // 64]
    x = lane + 1000 + np.where(wave & 1, 0, 100).astype(np.uint32)
    lds = np.where(wave & 2, 5, x).astype(np.uint32)
    np.testing.assert_array_equal(out, x + (1 << 16) + (lds << 24))  # the scalar add ran in every wave
    np.testing.assert_array_equal(stored, np.where(wave & 2, poison, x))
