"""Buffer loads and stores move exactly their bytes (ubyte, dword, dwordx3 loads; short stores),
lanes whose offset + size runs past num_records of a raw (stride 0) buffer read 0 and write
nothing, and lanes outside EXEC keep their registers and memory. Model: numpy."""

from __future__ import annotations

import numpy as np

from emukernels import assert_uses, compile_hip, run

SOURCE = """
typedef unsigned v3u __attribute__((ext_vector_type(3)));
KERNEL void buf(const unsigned char *src, int n, unsigned *out, unsigned short *dst) {
  int l = tid();
  __amdgpu_buffer_rsrc_t r = __builtin_amdgcn_make_buffer_rsrc((void *)src, (short)0, n, 0x00020000);
  unsigned x = __builtin_amdgcn_raw_buffer_load_b32(r, 4 * l, 0, 0);
  unsigned y = __builtin_amdgcn_raw_buffer_load_b8(r, 3 * l + 1, 0, 0);
  v3u z = __builtin_amdgcn_raw_buffer_load_b96(r, 12 * l, 0, 0);
  out[5 * l] = x; out[5 * l + 1] = y; out[5 * l + 2] = z.x; out[5 * l + 3] = z.y; out[5 * l + 4] = z.z;
  __amdgpu_buffer_rsrc_t w = __builtin_amdgcn_make_buffer_rsrc((void *)dst, (short)0, 90, 0x00020000);
  if ((l & 3) != 1) __builtin_amdgcn_raw_buffer_store_b16((unsigned short)(x ^ 0xABCDu), w, 2 * l + 1, 0, 0);
}
"""


def test_buffer_bytes_and_bounds() -> None:
    image = compile_hip(SOURCE)
    assert_uses(image, "buffer_load_dword", "buffer_load_ubyte", "buffer_load_dwordx3", "buffer_store_short")
    rng = np.random.default_rng(11)
    src = rng.integers(0, 256, size=1024, dtype=np.uint8)
    n = 156  # a multiple of 12 and 4: no access straddles the end (per-dword checking is not modelled)
    dst = np.full(70, 0x5555, dtype=np.uint16)
    _, out, stored = run(image, [src, n, np.zeros(320, dtype=np.uint32), dst])

    def load(offset: int, size: int) -> int:
        return int.from_bytes(src[offset: offset + size].tobytes(), "little") if offset + size <= n else 0

    want = np.zeros((64, 5), dtype=np.uint32)
    memory = bytearray(dst.tobytes())
    for lane in range(64):
        x = load(4 * lane, 4)
        want[lane] = [x, load(3 * lane + 1, 1), load(12 * lane, 4) if 12 * lane + 12 <= n else 0,
                      load(12 * lane + 4, 4) if 12 * lane + 12 <= n else 0,
                      load(12 * lane + 8, 4) if 12 * lane + 12 <= n else 0]
        offset = 2 * lane + 1
        if lane & 3 != 1 and offset + 2 <= 90:
            memory[offset: offset + 2] = ((x ^ 0xABCD) & 0xFFFF).to_bytes(2, "little")
    np.testing.assert_array_equal(out.reshape(64, 5), want)
    np.testing.assert_array_equal(stored.view(np.uint8), np.frombuffer(bytes(memory), dtype=np.uint8))
