"""Memory: global loads and stores of every width (signed and unsigned bytes and shorts, dwordx2/3/4),
buffer loads and stores through a V# (lanes past num_records read 0 and write nothing), and LDS
(ds_read/ds_write b32/b64/b128, read2st64/write2st64) shared across the waves of a workgroup
through s_barrier. Expected values: numpy, from the ISA text."""

from __future__ import annotations

import numpy as np

from emukernels import assert_uses, compile_hip, run

GLOBAL = """
typedef unsigned u2 __attribute__((ext_vector_type(2)));
typedef unsigned u3 __attribute__((ext_vector_type(3)));
typedef unsigned u4 __attribute__((ext_vector_type(4)));
typedef _Float16 h2 __attribute__((ext_vector_type(2)));
KERNEL void mem(unsigned *out, const signed char *sb, const unsigned char *ub, const short *ss,
                const unsigned short *us, const u2 *w2, const u3 *w3, const u4 *w4, const _Float16 *h, h2 *oh,
                unsigned char *ob, unsigned short *os, u2 *o2, u3 *o3, u4 *o4) {
  unsigned i = gid() * 256 + tid();
  out[i * 4 + 0] = (int)sb[i] + (unsigned)ub[i];
  out[i * 4 + 1] = (int)ss[i] ^ (unsigned)us[i];
  h2 v = oh[i]; v.y = h[2 * i]; v.x += h[2 * i + 1];
  oh[i] = v;
  ob[i] = (unsigned char)(ub[i] + 1); os[i] = (unsigned short)(us[i] * 3);
  o2[i] = w2[i] + 1u; o3[i] = w3[i] * 2u; o4[i] = w4[i] ^ 0xF0F0F0F0u;
}
"""
LDS = """
typedef unsigned u2 __attribute__((ext_vector_type(2)));
typedef unsigned u4 __attribute__((ext_vector_type(4)));
#define SYNC() do { __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup"); __builtin_amdgcn_s_barrier(); \\
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup"); } while (0)
KERNEL void lds(unsigned *out, const unsigned *in) {
  SHARED unsigned s1[256];
  SHARED u2 s2[256];
  SHARED u4 s4[256];
  SHARED unsigned s3[512];
  unsigned t = tid(), i = gid() * 256 + t;
  unsigned x = in[i];
  s1[t] = x;
  s2[t] = (u2){x, x + 1};
  s4[t] = (u4){x, x * 5u, t, gid()};
  s3[t] = x * 3u; s3[t + 256] = ~x;
  SYNC();
  unsigned a = s1[255 - t] + s1[t ^ 64];
  u2 b = s2[t ^ 128];
  u4 c = s4[t ^ 0x55];
  unsigned e = s3[255 - t] - s3[511 - t];
  SYNC();
  s1[t ^ 1] = a; 
  SYNC();
  out[i * 4 + 0] = s1[t] ^ b.x; out[i * 4 + 1] = b.y; out[i * 4 + 2] = c.x + c.y;
  out[i * 4 + 3] = c.z * 1000u + c.w + e;
}
"""
BUFFER = """
KERNEL void buf(unsigned *out, unsigned *src, unsigned records) {
  __amdgpu_buffer_rsrc_t r = __builtin_amdgcn_make_buffer_rsrc(src, 0, records, 0x00027000);
  unsigned t = tid();
  unsigned a = __builtin_amdgcn_raw_buffer_load_b32(r, t * 4, 0, 0);
  unsigned short s = __builtin_amdgcn_raw_buffer_load_b16(r, t * 2 + 1, 0, 0);
  unsigned char c = __builtin_amdgcn_raw_buffer_load_b8(r, t * 3 + 16, 0, 0);
  typedef unsigned u4 __attribute__((ext_vector_type(4)));
  u4 v = __builtin_amdgcn_raw_buffer_load_b128(r, t * 16, 0, 0);
  out[t * 4] = a; out[t * 4 + 1] = s; out[t * 4 + 2] = c; out[t * 4 + 3] = v.x + v.y + v.z + v.w;
  __builtin_amdgcn_raw_buffer_store_b32(a + 1, r, t * 4, 0, 0);
}
"""
N = 512


def test_global_loads_and_stores_of_every_width() -> None:
    image = compile_hip(GLOBAL)
    assert_uses(image, "global_load_sbyte", "global_load_ubyte", "global_load_sshort", "global_load_ushort",
                "global_load_dwordx2", "global_load_dwordx3", "global_load_dwordx4", "global_store_byte",
                "global_store_short", "global_store_dwordx3", "global_store_dwordx4", r"v_\w+_sdwa")
    rng = np.random.default_rng(7)
    ub = rng.integers(0, 256, N).astype(np.uint8)
    us = rng.integers(0, 65536, N).astype(np.uint16)
    # a u3 is 16 bytes
    w = [rng.integers(0, 2**32, (N, k), dtype=np.uint64).astype(np.uint32) for k in (2, 4, 4)]
    h = rng.standard_normal(2 * N).astype(np.float16)
    oh0 = rng.standard_normal(2 * N).astype(np.float16)
    args = [np.zeros(4 * N, np.uint32), ub.view(np.int8), ub, us.view(np.int16), us, *w, h, oh0.copy(),
            np.zeros(N, np.uint8), np.zeros(N, np.uint16), *(np.zeros_like(a) for a in w)]
    results = run(image, args, grid=2, block=256)  # every array argument, in order
    out, oh, ob, os_, o2, o3, o4 = results[0], *results[9:]
    got = out.reshape(N, 4)
    assert (got[:, 0] == (ub.view(np.int8).astype(np.int64) + ub).astype(np.uint32)).all()
    assert (got[:, 1] == (us.view(np.int16).astype(np.int32) ^ us.astype(np.int32)).astype(np.uint32)).all()
    old = oh0.reshape(N, 2)
    want_h = np.stack([old[:, 0] + h[1::2], h[0::2]], axis=1)  # v.y replaced, then v.x += h[2i+1]
    assert (oh.reshape(N, 2).view(np.uint16) == want_h.view(np.uint16)).all()
    assert (ob == ub + np.uint8(1)).all() and (os_ == us * np.uint16(3)).all()
    assert (o2 == w[0] + np.uint32(1)).all() and (o3[:, :3] == w[1][:, :3] * np.uint32(2)).all()
    assert (o4 == w[2] ^ np.uint32(0xF0F0F0F0)).all()


def test_lds_reads_and_writes_across_the_waves_of_a_workgroup() -> None:
    image = compile_hip(LDS)
    assert_uses(image, "ds_write_b32", "ds_write_b64", "ds_write_b128", "ds_read_b32", "ds_read_b64",
                "ds_read_b128", "ds_read2st64_b32", "ds_write2st64_b32", "s_barrier")
    x = np.random.default_rng(11).integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    got = run(image, [np.zeros(4 * N, np.uint32), x], grid=2, block=256)[0].reshape(N, 4)
    for g in range(2):
        xs, t = x[g * 256: (g + 1) * 256], np.arange(256)
        a = xs[255 - t] + xs[t ^ 64]
        e = xs[255 - t] * np.uint32(3) - ~xs[255 - t]
        c = t ^ 0x55
        want = np.stack([a[t ^ 1] ^ xs[t ^ 128], xs[t ^ 128] + np.uint32(1),
                         xs[c] * np.uint32(6), (c * 1000 + g + e.astype(np.int64)) & 0xFFFFFFFF], axis=1)
        assert (got[g * 256: (g + 1) * 256] == want.astype(np.uint32)).all(), f"workgroup {g}"


def test_buffer_lanes_past_num_records_read_zero_and_write_nothing() -> None:
    image = compile_hip(BUFFER)
    assert_uses(image, "buffer_load_dword", "buffer_load_ushort", "buffer_load_ubyte", "buffer_load_dwordx4",
                "buffer_store_dword")
    records = 100  # bytes: lanes 0..24 in range for dwords, fewer for the wider loads
    src = np.arange(64 * 4, dtype=np.uint32) * np.uint32(0x01010101) + np.uint32(0x03020100)
    out, after = run(image, [np.zeros(4 * 64, np.uint32), src.copy(), records], block=64)
    raw, t = src.view(np.uint8), np.arange(64)

    def load(offset: np.ndarray, size: int) -> np.ndarray:
        ok = offset + size <= records
        v = [int.from_bytes(raw[o: o + size].tobytes(), "little") if k else 0 for o, k in zip(offset, ok)]
        return np.array(v, dtype=np.uint64)

    got = out.reshape(64, 4)
    assert (got[:, 0] == load(t * 4, 4)).all()
    assert (got[:, 1] == load(t * 2 + 1, 2)).all()
    assert (got[:, 2] == load(t * 3 + 16, 1)).all()
    # dwordx4 is range-checked per dword: lane 6 keeps one
    quads = [load(t * 16 + 4 * k, 4) for k in range(4)]
    assert (got[:, 3] == (sum(quads) & 0xFFFFFFFF)).all()
    stored = np.where(t * 4 + 4 <= records, load(t * 4, 4) + 1, src[:64])
    assert (after[:64] == stored.astype(np.uint32)).all() and (after[64:] == src[64:]).all()
