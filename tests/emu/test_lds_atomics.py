"""LDS atomics: every lane of every wave of a workgroup on one LDS word takes effect, each workgroup
on its own LDS, RTN forms return some serial order's pre-op values, compare-store swaps for one
lane, packed bf16/f16 adds round to nearest even, and an atomic beyond the allocation is not done,
returns 0 and is counted. Model: numpy (ml_dtypes for bf16)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from emukernels import assert_uses, compile_hip, run
from wgrad_cli.emu.device import EmuRuntime

SOURCE = """
#define R __ATOMIC_RELAXED
#define WG __HIP_MEMORY_SCOPE_WORKGROUP
#define LP(t) __attribute__((address_space(3))) t *
#define SYNC() do { __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup"); __builtin_amdgcn_s_barrier(); \\
                    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup"); } while (0)
typedef __bf16 bf2 __attribute__((ext_vector_type(2)));
typedef _Float16 h2 __attribute__((ext_vector_type(2)));
KERNEL void lds(unsigned *out, const unsigned *init, const unsigned *v, const bf2 *bv,
                const h2 *hv, int far) {
  SHARED unsigned s[64];
  SHARED unsigned long long s64[4];
  SHARED float f[2];
  SHARED bf2 pb[16];
  SHARED h2 ph[16];
  unsigned t = tid(), g = gid(), i = g * 256 + t, x = v[i];
  if (t < 64) s[t] = init[t];
  if (t < 4) s64[t] = 1ull << 40;
  if (t < 2) f[t] = 0.0f;
  if (t < 16) { pb[t] = bv[t]; ph[t] = hv[t]; }
  SYNC();
  out[i] = __hip_atomic_fetch_add(&s[0], 1u, R, WG);
  out[768 + i] = __builtin_amdgcn_atomic_inc32(&s[1], 100u, R, "workgroup");
  unsigned e = 0;
  __hip_atomic_compare_exchange_strong(&s[2], &e, t + 1, R, R, WG);
  out[1536 + i] = e;
  out[2304 + i] = __hip_atomic_exchange(&s[3], t, R, WG);
  out[3072 + i] = __builtin_bit_cast(unsigned, __hip_atomic_fetch_add(&f[0], 1.0f, R, WG));
  __hip_atomic_fetch_add(&f[1], 0.25f, R, WG);
  __hip_atomic_fetch_max(&s[8 + (t & 7)], x, R, WG);
  __hip_atomic_fetch_min((int *)&s[16 + (t & 7)], (int)x, R, WG);
  __hip_atomic_fetch_sub(&s[24 + (t & 7)], x, R, WG);
  __hip_atomic_fetch_and(&s[32 + (t & 7)], x | 0xF0000000u, R, WG);
  __hip_atomic_fetch_or(&s[40 + (t & 7)], x & 0x01010101u, R, WG);
  __hip_atomic_fetch_xor(&s[48 + (t & 7)], x, R, WG);
  if (t & 1) __hip_atomic_fetch_add(&s[56 + (t & 7)], 1u, R, WG);
  __hip_atomic_fetch_add(&s64[t & 3], (unsigned long long)x << 16, R, WG);
  if (t < 16) {
    __builtin_amdgcn_ds_atomic_fadd_v2bf16((LP(bf2))pb + t, bv[16 + t]);
    __builtin_amdgcn_ds_atomic_fadd_v2f16((LP(h2))ph + t, hv[16 + t]);
  }
  if (t == 0) out[3840 + g] = __hip_atomic_fetch_add(&s[far], 5u, R, WG);
  SYNC();
  if (t < 64) out[3844 + 64 * g + t] = s[t];
  if (t < 4) { out[4036 + 8 * g + 2 * t] = (unsigned)s64[t];
               out[4037 + 8 * g + 2 * t] = (unsigned)(s64[t] >> 32); }
  if (t < 2) out[4060 + 2 * g + t] = __builtin_bit_cast(unsigned, f[t]);
  if (t < 16) { out[4066 + 32 * g + t] = __builtin_bit_cast(unsigned, pb[t]);
                out[4082 + 32 * g + t] = __builtin_bit_cast(unsigned, ph[t]); }
}
"""


def test_lds_atomics_per_workgroup() -> None:
    image = compile_hip(SOURCE, ("-O3", "-mllvm", "-amdgpu-atomic-optimizer-strategy=None"))
    assert_uses(image, "ds_add_rtn_u32", "ds_inc_rtn_u32", "ds_cmpst_rtn_b32", "ds_wrxchg_rtn_b32",
                "ds_add_rtn_f32", "ds_add_f32", "ds_max_u32", "ds_min_i32", "ds_sub_u32", "ds_and_b32",
                "ds_or_b32", "ds_xor_b32", "ds_add_u32", "ds_add_u64", "ds_pk_add_bf16", "ds_pk_add_f16")
    rng = np.random.default_rng(3)
    init = rng.integers(0, 1 << 32, size=64, dtype=np.uint64).astype(np.uint32)
    init[:4] = 0
    v = rng.integers(0, 1 << 32, size=768, dtype=np.uint64).astype(np.uint32)
    bv = (rng.standard_normal(64) * np.exp2(rng.integers(-10, 10, 64))).astype(ml_dtypes.bfloat16)
    bv[0], bv[32] = 1e-39, 2e-39  # denormal halves stay denormal
    hv = (rng.standard_normal(64) * np.exp2(rng.integers(-8, 8, 64))).astype(np.float16)
    rt = EmuRuntime(workers=1)
    out, *_ = run(image, [np.zeros(4200, np.uint32), init, v, bv.view(np.uint16), hv, 1000], grid=3,
                  block=256, rt=rt)
    assert rt.stats[-1].lds_out_of_range == 3 * 4  # one dword per workgroup, beyond its allocation
    lanes = np.arange(256)
    for g in range(3):
        mine = slice(256 * g, 256 * g + 256)
        s = out[3844 + 64 * g: 3908 + 64 * g]
        assert s[0] == 256 and np.array_equal(np.sort(out[mine]), lanes)
        assert s[1] == 256 % 101 and np.array_equal(np.sort(out[768:][mine]), np.sort(lanes % 101))
        winners = np.flatnonzero(out[1536:][mine] == 0)
        assert len(winners) == 1 and s[2] == winners[0] + 1 \
            and np.all(np.delete(out[1536:][mine], winners) == s[2])
        xchg = out[2304:][mine]  # each lane gets the value before it: 0 and all lanes but the last one's
        assert np.array_equal(np.sort(np.append(xchg, s[3])), np.append(0, lanes))
        assert np.array_equal(np.sort(out[3072:][mine].view(np.float32)), lanes.astype(np.float32))
        assert out[4060 + 2 * g: 4062 + 2 * g].view(np.float32).tolist() == [256.0, 64.0]
        x = v[mine].reshape(-1, 8)
        np.testing.assert_array_equal(s[8:16], np.maximum(init[8:16], x.max(axis=0)))
        np.testing.assert_array_equal(s[16:24].view(np.int32),
                                      np.minimum(init[16:24].view(np.int32), x.view(np.int32).min(axis=0)))
        np.testing.assert_array_equal(s[24:32], init[24:32]
                                      - x.sum(axis=0, dtype=np.uint64).astype(np.uint32))
        np.testing.assert_array_equal(s[32:40], init[32:40]
                                      & np.bitwise_and.reduce(x | np.uint32(0xF0000000)))
        np.testing.assert_array_equal(s[40:48], init[40:48] | np.bitwise_or.reduce(x & np.uint32(0x01010101)))
        np.testing.assert_array_equal(s[48:56], init[48:56] ^ np.bitwise_xor.reduce(x))
        np.testing.assert_array_equal(s[56:64], init[56:64]
                                      + np.where(np.arange(8) & 1, 32, 0).astype(np.uint32))
        s64 = out[4036 + 8 * g: 4044 + 8 * g].view(np.uint64)
        np.testing.assert_array_equal(s64, np.uint64(1 << 40) + (v[mine].reshape(-1, 4).astype(np.uint64)
                                                                 << np.uint64(16)).sum(axis=0))
        assert out[3840 + g] == 0  # beyond the allocation: not done, returns 0
        pb = out[4066 + 32 * g: 4082 + 32 * g].view(ml_dtypes.bfloat16)
        want_b = (bv[:32].astype(np.float64) + bv[32:].astype(np.float64)).astype(ml_dtypes.bfloat16)
        np.testing.assert_array_equal(pb.view(np.uint16), want_b.view(np.uint16))
        ph = out[4082 + 32 * g: 4098 + 32 * g].view(np.float16)
        want_h = (hv[:32].astype(np.float64) + hv[32:].astype(np.float64)).astype(np.float16)
        np.testing.assert_array_equal(ph.view(np.uint16), want_h.view(np.uint16))
