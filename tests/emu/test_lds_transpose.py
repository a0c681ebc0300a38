"""ds_read_b64_tr_b8 / _tr_b16 against a numpy model of the transpose: within every 16 lanes, lane
l's 8-bit element n is byte l & 7 of the 8 bytes lane (l & ~15) + ((l >> 3) & 1) + 2n addressed
(docs/emulator.md); 16-bit element n is element l & 3 of lane (l & ~15) + ((l >> 2) & 3) + 4n."""

from __future__ import annotations

import numpy as np

from emukernels import assert_uses, compile_hip, run

SOURCE = """
typedef int v2i __attribute__((ext_vector_type(2)));
typedef short v4s __attribute__((ext_vector_type(4)));
#define LDS(T, p) ((__attribute__((address_space(3))) T *)(p))
KERNEL void transpose(const int *in, const int *addr8, const int *addr16, v2i *out) {
  __attribute__((shared)) int lds[256];
  int l = tid();
  for (int i = 0; i < 4; i++) lds[4 * l + i] = in[4 * l + i];
  __builtin_amdgcn_s_waitcnt(0);
  __builtin_amdgcn_s_barrier();
  __attribute__((address_space(3))) char *base = LDS(char, lds);
  out[l] = __builtin_amdgcn_ds_read_tr8_b64_v2i32(LDS(v2i, base + addr8[l]));
  out[64 + l] = __builtin_bit_cast(v2i, __builtin_amdgcn_ds_read_tr16_b64_v4i16(LDS(v4s, base + addr16[l])));
}
"""


def test_transpose_reads() -> None:
    image = compile_hip(SOURCE)
    assert_uses(image, "ds_read_b64_tr_b8", "ds_read_b64_tr_b16")
    rng = np.random.default_rng(5)
    data = rng.integers(0, 2**32, size=256, dtype=np.uint32)
    addr8 = (8 * rng.permutation(128)[:64]).astype(np.int32)
    addr16 = (8 * rng.permutation(128)[:64]).astype(np.int32)
    *_, out = run(image, [data, addr8, addr16, np.zeros((128, 2), dtype=np.uint32)])
    mem = data.view(np.uint8)
    got = out.view(np.uint8).reshape(128, 8)
    want8 = np.array([[mem[addr8[(lane & ~15) + ((lane >> 3) & 1) + 2 * n] + (lane & 7)] for n in range(8)]
                      for lane in range(64)], dtype=np.uint8)
    want16 = np.array([[mem[addr16[(lane & ~15) + ((lane >> 2) & 3) + 4 * n] + 2 * (lane & 3) + half]
                        for n in range(4) for half in range(2)] for lane in range(64)], dtype=np.uint8)
    np.testing.assert_array_equal(got[:64], want8)
    np.testing.assert_array_equal(got[64:], want16)
