"""Vector-memory edges the CDNA4 ISA text settles: LDS DMA of bytes, shorts and 3 dwords (lane stride 4,
or 16 for 3- and 4-dword loads with the 4th dword left alone: "Memory Buffer Load to LDS"), and buffer
DWORDx2/x4 accesses range-checked per dword ("Range Checking": a load straddling num_records keeps its
in-range dwords, a store writes only those). Model: numpy from those rules."""

from __future__ import annotations

import numpy as np

from emukernels import assert_uses, compile_hip, run

DMA = """
#define LDS(p) ((__attribute__((address_space(3))) void *)(p))
#define GLB(p) ((__attribute__((address_space(1))) void *)(p))
KERNEL void dma(const unsigned char *src, unsigned *out) {
  __attribute__((shared)) unsigned lds[2048];
  unsigned l = tid();
  for (unsigned i = l; i < 2048; i += 64) lds[i] = 0xDEADBEEFu;
  __builtin_amdgcn_s_waitcnt(0);
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_global_load_lds(GLB(src + l), LDS(lds), 1, 0, 0);
  __builtin_amdgcn_global_load_lds(GLB(src + 2 * l + 256), LDS(lds + 256), 2, 0, 0);
  __builtin_amdgcn_global_load_lds(GLB(src + 12 * l + 512), LDS(lds + 512), 12, 0, 0);
  __builtin_amdgcn_s_waitcnt(0);
  __builtin_amdgcn_s_barrier();
  for (unsigned i = l; i < 2048; i += 64) out[i] = lds[i];
}
"""

STRADDLE = """
KERNEL void straddle(const unsigned *src, unsigned *dst, unsigned *out, int n) {
  unsigned l = tid();
  __amdgpu_buffer_rsrc_t r = __builtin_amdgcn_make_buffer_rsrc((void *)src, (short)0, n, 0x00020000);
  __amdgpu_buffer_rsrc_t w = __builtin_amdgcn_make_buffer_rsrc((void *)dst, (short)0, n, 0x00020000);
  typedef unsigned v4 __attribute__((ext_vector_type(4)));
  typedef unsigned v2 __attribute__((ext_vector_type(2)));
  v4 q = __builtin_amdgcn_raw_buffer_load_b128(r, 16 * l, 0, 0);
  v2 d = __builtin_amdgcn_raw_buffer_load_b64(r, 8 * l + 4, 0, 0);
  out[6 * l + 0] = q.x; out[6 * l + 1] = q.y; out[6 * l + 2] = q.z; out[6 * l + 3] = q.w;
  out[6 * l + 4] = d.x; out[6 * l + 5] = d.y;
  v4 s = {l, l + 100, l + 200, l + 300};
  __builtin_amdgcn_raw_buffer_store_b128(s, w, 16 * l, 0, 0);
}
"""


def test_lds_dma_bytes_shorts_and_three_dwords() -> None:
    image = compile_hip(DMA)
    assert_uses(image, "global_load_lds_ubyte", "global_load_lds_ushort", "global_load_lds_dwordx3")
    src = np.random.default_rng(8).integers(0, 256, 2048, dtype=np.uint8)
    _, out = run(image, [src, np.zeros(2048, np.uint32)])
    want = np.full(2048, 0xDEADBEEF, dtype=np.uint32)
    lane = np.arange(64)
    want[lane] = src[lane]  # one dword per lane, the byte zero-extended
    want[256 + lane] = src[256 + 2 * lane].astype(np.uint32) | (src[257 + 2 * lane].astype(np.uint32) << 8)
    words = src[512: 512 + 12 * 64].view("<u4").reshape(64, 3)
    for k in range(3):  # 16 bytes per lane; the 4th dword keeps its old value
        want[512 + 4 * lane + k] = words[:, k]
    bad = np.flatnonzero(out != want)
    assert not len(bad), f"LDS dword {bad[0]}: {out[bad[0]]:#x} != {want[bad[0]]:#x}"


def test_buffer_dwordx4_straddling_num_records_is_checked_per_dword() -> None:
    image = compile_hip(STRADDLE)
    assert_uses(image, "buffer_load_dwordx4", "buffer_load_dwordx2", "buffer_store_dwordx4")
    n = 1000  # bytes: lane 62's 16 bytes start at 992, so dwords 992 and 996 are in range, 1000 and 1004 not
    src = np.arange(1, 513, dtype=np.uint32) * np.uint32(0x01000193)
    dst = np.full(512, 0xFFFFFFFF, dtype=np.uint32)
    _, stored, out = run(image, [src, dst, np.zeros(64 * 6, np.uint32), n])
    got = out.reshape(64, 6)
    lane = np.arange(64)

    def dword(offset: np.ndarray) -> np.ndarray:
        return np.where(offset + 4 <= n, src[np.minimum(offset // 4, 511)], 0).astype(np.uint32)

    for k in range(4):
        assert (got[:, k] == dword(16 * lane + 4 * k)).all(), f"dwordx4 component {k}"
    for k in range(2):
        assert (got[:, 4 + k] == dword(8 * lane + 4 + 4 * k)).all(), f"dwordx2 component {k}"
    assert got[62, 1] != 0 and got[62, 2] == 0  # the straddling load keeps its in-range dwords
    want = dst.copy()
    for k in range(4):
        offset = 16 * lane + 4 * k
        ok = offset + 4 <= n
        want[(offset // 4)[ok]] = (lane + 100 * k)[ok]
    assert (stored == want).all()
