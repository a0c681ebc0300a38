"""Global and buffer atomics: every update of many lanes, waves and worker processes on one
address takes effect, returned pre-op values are some serial order's (checked as multisets),
cmpswap swaps for exactly one lane, float atomics round to nearest even and keep denormals, lanes
outside EXEC do nothing, buffer atomics past num_records are not done and return 0, and an atomic
outside every allocation stops the run with the sanitizer's line. Model: numpy (ml_dtypes for bf16).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from emukernels import assert_uses, compile_hip, run
from wgrad_cli.emu.device import EmuRuntime
from wgrad_cli.errors import DriverError

NO_OPTIMIZER = ("-O3", "-mllvm", "-amdgpu-atomic-optimizer-strategy=None")  # keep one atomic per lane
R, A = "__ATOMIC_RELAXED", "__HIP_MEMORY_SCOPE_AGENT"

INTS = f"""
KERNEL void ints(unsigned *m, unsigned *ret, unsigned long long *m64, const unsigned *v, int n) {{
  unsigned i = gid() * 256 + tid(), s = tid() & 63, x = v[i];
  ret[i] = __hip_atomic_fetch_add(&m[0], 1u, {R}, {A});
  ret[n + i] = __builtin_amdgcn_atomic_inc32(&m[1], 100u, {R}, "agent");
  unsigned e = 0;
  __hip_atomic_compare_exchange_strong(&m[2], &e, i + 1, {R}, {R}, {A});
  ret[2 * n + i] = e;
  ret[3 * n + i] = __builtin_amdgcn_atomic_dec32(&m[3], 1000u, {R}, "agent");
  __hip_atomic_fetch_add(&m[64 + s], x, {R}, {A});
  __hip_atomic_fetch_sub(&m[128 + s], x, {R}, {A});
  __hip_atomic_fetch_and(&m[192 + s], x | 0x80000000u, {R}, {A});
  __hip_atomic_fetch_or(&m[256 + s], x & 0x0F0F0F0Fu, {R}, {A});
  __hip_atomic_fetch_xor(&m[320 + s], x, {R}, {A});
  __hip_atomic_fetch_min((int *)&m[384 + s], (int)x, {R}, {A});
  __hip_atomic_fetch_max(&m[448 + s], x, {R}, {A});
  if (s & 1) __hip_atomic_fetch_add(&m[512 + s], 1u, {R}, {A});
  __hip_atomic_fetch_add(&m64[s], ((unsigned long long)x << 24) + x, {R}, {A});
  __hip_atomic_fetch_max((long long *)&m64[64 + s], (long long)(int)x * 4099, {R}, {A});
}}
"""


def test_integer_atomics_from_many_lanes_waves_and_workers_all_take_effect() -> None:
    image = compile_hip(INTS, NO_OPTIMIZER)
    assert_uses(image, "global_atomic_add", "global_atomic_inc", "global_atomic_cmpswap", "global_atomic_dec",
                "global_atomic_sub", "global_atomic_and", "global_atomic_or", "global_atomic_xor",
                "global_atomic_smin", "global_atomic_umax", "global_atomic_add_x2", "global_atomic_smax_x2")
    groups = 64  # 256 waves: over the 2 workers' batches, several waves per batch on each address
    n = groups * 256
    rng = np.random.default_rng(5)
    v = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)
    m0 = rng.integers(0, 1 << 32, size=576, dtype=np.uint64).astype(np.uint32)
    m0[:4] = [0, 0, 0, 7]
    m64 = rng.integers(0, 1 << 63, size=128, dtype=np.uint64)
    rt = EmuRuntime(workers=2)
    m, ret, m64_out, _ = run(image, [m0, np.zeros(4 * n, np.uint32), m64, v, n], grid=groups, block=256,
                             rt=rt)
    assert rt.stats[-1].waves == groups * 4
    ret = ret.reshape(4, n)
    # counter: the pre-op values are 0..n-1 in some order
    assert m[0] == n and np.array_equal(np.sort(ret[0]), np.arange(n))
    # inc wraps past 100: the k-th update returns k mod 101
    assert m[1] == n % 101 and np.array_equal(np.sort(ret[1]), np.sort(np.arange(n) % 101))
    # cmpswap: one lane swaps 0 for its i + 1, every other lane sees that value
    winners = np.flatnonzero(ret[2] == 0)
    assert len(winners) == 1 and m[2] == winners[0] + 1 and np.all(np.delete(ret[2], winners) == m[2])
    # dec from 7 with limit 1000: 7, 6, ..., 0, then 1000, 999, ..., 0, 1000, ...
    seq = [7]
    for _ in range(n):
        seq.append(1000 if seq[-1] == 0 else seq[-1] - 1)
    assert m[3] == seq[-1] and np.array_equal(np.sort(ret[3]), np.sort(seq[:-1]))
    slots = v.reshape(-1, 64)
    want = m0.copy()
    want[64:128] += slots.sum(axis=0, dtype=np.uint64).astype(np.uint32)
    want[128:192] -= slots.sum(axis=0, dtype=np.uint64).astype(np.uint32)
    want[192:256] &= np.bitwise_and.reduce(slots | np.uint32(0x80000000), axis=0)
    want[256:320] |= np.bitwise_or.reduce(slots & np.uint32(0x0F0F0F0F), axis=0)
    want[320:384] ^= np.bitwise_xor.reduce(slots, axis=0)
    want[384:448] = np.minimum(m0[384:448].view(np.int32), slots.view(np.int32).min(axis=0)).view(np.uint32)
    want[448:512] = np.maximum(m0[448:512], slots.max(axis=0))
    # lanes outside EXEC do nothing
    want[512:576] += np.where(np.arange(64) & 1, n // 64, 0).astype(np.uint32)
    np.testing.assert_array_equal(m[4:], want[4:])
    big = (slots.astype(np.uint64) << np.uint64(24)) + slots
    np.testing.assert_array_equal(m64_out[:64], m64[:64] + big.sum(axis=0, dtype=np.uint64))
    prod = slots.view(np.int32).astype(np.int64) * 4099
    np.testing.assert_array_equal(m64_out[64:].view(np.int64),
                                  np.maximum(m64[64:].view(np.int64), prod.max(axis=0)))


FLOATS = f"""
#define GP(t) __attribute__((address_space(1))) t *
typedef __bf16 bf2 __attribute__((ext_vector_type(2)));
typedef _Float16 h2 __attribute__((ext_vector_type(2)));
KERNEL void floats(float *f, float *fr, bf2 *b, bf2 *br, h2 *h, h2 *hr, double *d, double *dr, float *one) {{
  unsigned i = tid();
  fr[i] = __hip_atomic_fetch_add(f + i, f[i + 64], {R}, {A});
  br[i] = __builtin_amdgcn_global_atomic_fadd_v2bf16((GP(bf2))b + i, b[i + 64]);
  hr[i] = __builtin_amdgcn_global_atomic_fadd_v2f16((GP(h2))h + i, h[i + 64]);
  dr[i] = __builtin_amdgcn_global_atomic_fadd_f64((GP(double))d + i, d[i + 64]);
  dr[i + 64] = __builtin_amdgcn_global_atomic_fmin_f64((GP(double))d + 128 + i, d[i + 192]);
  dr[i + 128] = __builtin_amdgcn_global_atomic_fmax_f64((GP(double))d + 256 + i, d[i + 320]);
  __hip_atomic_fetch_add(one, 0.25f, {R}, {A});
}}
"""


def _bf16(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))
    x[:4] = [1e-39, -3e-39, 3.0e38, 1.0]  # denormals, an overflow to infinity
    return x.astype(ml_dtypes.bfloat16)


def test_float_atomics_round_to_nearest_even_and_keep_denormals() -> None:
    image = compile_hip(FLOATS, ("-O3", "-munsafe-fp-atomics"))
    assert_uses(image, "global_atomic_add_f32", "global_atomic_pk_add_bf16", "global_atomic_pk_add_f16",
                "global_atomic_add_f64", "global_atomic_min_f64", "global_atomic_max_f64")
    rng = np.random.default_rng(9)
    f = (rng.standard_normal(128) * np.exp2(rng.integers(-30, 30, 128))).astype(np.float32)
    f[:3] = [1e-40, 2.5e-39, -1e-45]  # denormal + denormal stays denormal: not flushed
    f[64:67] = [1e-40, -2e-39, 1e-45]
    b = _bf16(rng, 256)
    h = (rng.standard_normal(256) * np.exp2(rng.integers(-12, 12, 256))).astype(np.float16)
    h[:2], h[128:130] = [6e-8, 3e-5], [1.2e-7, -1e-5]
    d = rng.standard_normal(384) * np.exp2(rng.integers(-60, 60, 384))
    d[128], d[192], d[256], d[320] = np.nan, 1.0, 2.0, np.nan  # the text's min/max: a NaN datum is not stored
    out = run(image, [f, np.zeros(64, np.float32), b.view(np.uint16), np.zeros(128, np.uint16), h,
                      np.zeros(128, np.float16), d, np.zeros(192), np.zeros(1, np.float32)])
    f2, fr, b2, br, h2, hr, d2, dr, one = out
    np.testing.assert_array_equal(fr, f[:64])
    # one rounding, from exact
    want = (f[:64].astype(np.float64) + f[64:].astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(f2[:64].view(np.uint32), want.view(np.uint32))
    assert 0 < f2[0] < np.finfo(np.float32).smallest_normal and f2[2] == 0  # denormals kept
    np.testing.assert_array_equal(br, b[:128].view(np.uint16))
    want_b = (b[:128].astype(np.float64) + b[128:].astype(np.float64)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(b2[:128], want_b.view(np.uint16))
    np.testing.assert_array_equal(hr, h[:128])
    want_h = (h[:128].astype(np.float64) + h[128:].astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(h2[:128].view(np.uint16), want_h.view(np.uint16))
    np.testing.assert_array_equal(d2[:64], d[:64] + d[64:128])
    np.testing.assert_array_equal(dr[:64], d[:64])
    lo, hi = d[128:192], d[192:256]
    np.testing.assert_array_equal(d2[128:192], np.where(hi < lo, hi, lo))
    lo, hi = d[256:320], d[320:384]
    np.testing.assert_array_equal(d2[256:320], np.where(hi > lo, hi, lo))
    assert d2[256] == 2.0 and np.isnan(d2[128])
    assert one[0] == 16.0  # 64 lanes on one address


BUFFER = """
KERNEL void buf(unsigned *u, float *f, unsigned *ret, float *fret, int n) {
  int l = tid();
  __amdgpu_buffer_rsrc_t r = __builtin_amdgcn_make_buffer_rsrc((void *)u, (short)0, n, 0x00020000);
  ret[l] = __builtin_amdgcn_raw_ptr_buffer_atomic_add_i32(l + 1, r, 4 * (l & 31), 0, 0);
  __amdgpu_buffer_rsrc_t q = __builtin_amdgcn_make_buffer_rsrc((void *)f, (short)0, n, 0x00020000);
  if (l != 5) fret[l] = __builtin_amdgcn_raw_ptr_buffer_atomic_fadd_f32(0.5f, q, 4 * l, 0, 0);
}
"""


def test_buffer_atomics_past_num_records_are_not_done_and_return_0() -> None:
    image = compile_hip(BUFFER, NO_OPTIMIZER)
    assert_uses(image, "buffer_atomic_add", "buffer_atomic_add_f32")
    n = 40 * 4  # dwords 40.. lie past num_records
    u = np.arange(64, dtype=np.uint32) * 3
    f = np.arange(64, dtype=np.float32)
    u2, f2, ret, fret = run(image, [u, f, np.zeros(64, np.uint32), np.full(64, -1, np.float32), n])
    # lanes k and k + 32 add k + 1 and k + 33 to dword k, in one order or the other
    for k in range(32):
        assert u2[k] == u[k] + 2 * k + 34
        assert {int(ret[k]), int(ret[k + 32])} in ({int(u[k]), int(u[k]) + k + 1},
                                                   {int(u[k]), int(u[k]) + k + 33})
    np.testing.assert_array_equal(u2[32:], u[32:])
    lanes = np.arange(64)
    # lane 5 is outside EXEC
    np.testing.assert_array_equal(f2, np.where((lanes < 40) & (lanes != 5), f + 0.5, f))
    np.testing.assert_array_equal(fret, np.where(lanes == 5, -1, np.where(lanes < 40, f, 0)))


def test_an_atomic_outside_every_allocation_stops_the_run() -> None:
    image = compile_hip("KERNEL void oob(unsigned *m) { __hip_atomic_fetch_add(&m[gid() * 256 + tid()], "
                        f"1u, {R}, {A}); }}",
                        NO_OPTIMIZER)
    with pytest.raises(DriverError) as info:
        run(image, [np.zeros(300, np.uint32)], grid=2, block=256)
    line = str(info.value)
    assert "\n" not in line and line.startswith("oob: global_atomic_add")
    assert "workgroup (1, 0, 0)" in line and "lane 44" in line and "outside every allocation" in line
