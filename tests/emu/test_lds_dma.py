"""Loads that write LDS directly (global_load_lds_dwordx4, buffer_load_dword ... lds): lane l's bytes
land at M0 + instruction offset + l * size (the immediate offset also moves the memory address),
lanes outside EXEC write nothing, and out-of-range buffer lanes write zeros. Model: numpy."""

from __future__ import annotations

import numpy as np

from emukernels import assert_uses, compile_hip, run

SOURCE = """
#define LDS(p) ((__attribute__((address_space(3))) void *)(p))
KERNEL void dma(const int *src, int *out, int n) {
  __attribute__((shared)) int lds[1024];
  int l = tid();
  for (int i = 0; i < 16; i++) lds[16 * l + i] = -1;
  __builtin_amdgcn_s_waitcnt(0);
  __builtin_amdgcn_s_barrier();
  if ((l & 7) != 3) {
    __builtin_amdgcn_global_load_lds((__attribute__((address_space(1))) void *)(src + 4 * l),
                                     LDS(lds + 8), 16, 32, 0);
    __amdgpu_buffer_rsrc_t r = __builtin_amdgcn_make_buffer_rsrc((void *)src, (short)0, n, 0x00020000);
    __builtin_amdgcn_raw_ptr_buffer_load_lds(r, LDS(lds + 512), 4, 4 * l, 0, 12, 0);
  }
  __builtin_amdgcn_s_waitcnt(0);
  __builtin_amdgcn_s_barrier();
  for (int i = 0; i < 16; i++) out[16 * l + i] = lds[16 * l + i];
}
"""


def test_lds_dma_loads() -> None:
    image = compile_hip(SOURCE)
    assert_uses(image, "global_load_lds_dwordx4", "buffer_load_dword")
    src = np.arange(1000, 1300, dtype=np.int32)
    n = 200  # bytes of the buffer resource: lanes whose 4 bytes end past it read 0
    _, out = run(image, [src, np.zeros(1024, dtype=np.int32), n])
    want = np.full(1024, -1, dtype=np.int32)
    for lane in range(64):
        if lane & 7 == 3:
            continue
        first = (32 + 32 + 16 * lane) // 4  # M0 = byte 32 (lds + 8), offset 32, 16 bytes per lane
        want[first: first + 4] = src[(16 * lane + 32) // 4: (16 * lane + 32) // 4 + 4]
        offset = 4 * lane + 12  # voffset + immediate, checked against num_records
        want[(2048 + 12 + 4 * lane) // 4] = src[offset // 4] if offset + 4 <= n else 0
    np.testing.assert_array_equal(out, want)
