"""Emulator bugs the differential fuzzer (test_fuzz.py) found, one small program each, compiled at
test time and checked against the same C++ run on the host CPU. Each test also checks that the
machine code has the instruction form the bug was in."""

from __future__ import annotations

import re

from emukernels import listing
from fuzzrun import Config, build_device, check, handwritten, need_clang, source


def assert_matches_host(name: str, body: str, opt: int, stages: tuple[str, ...] = (), pattern: str = "",
                        helpers: str = "", inline_all: bool = False) -> None:
    need_clang()
    p = handwritten(name, body, stages, helpers)
    cfg = Config(opt, inline_all=inline_all)
    if pattern:
        asm = listing(build_device(source([p]), cfg))
        assert re.search(pattern, asm), f"no instruction matches {pattern}"
    verdict = check([p], cfg)[0]
    assert verdict.status == "ok", f"{verdict.status}: {verdict.detail}"


def test_flat_access_to_lds_through_the_shared_aperture() -> None:
    """At -O0 clang reaches a kernel's __shared__ array with flat instructions on an address in the
    shared aperture; the emulator sent them to global memory, where they faulted."""
    assert_matches_host("flatlds", "return in[lane] * 0x9e3779b9ull;", 0, ("lds32", "lds64"),
                        r"flat_store_dwordx2 v\[\d+:\d+\], v\[\d+:\d+\]\s", inline_all=True)


def test_saturating_integer_add_and_subtract() -> None:
    """v_add_u32/v_sub_u32/v_add_i32/v_sub_i32/v_add_u16 with clamp saturate (clang's selection of
    llvm.uadd.sat and friends); the emulator refused them as not implemented."""
    body = """u32 a = in[lane], b = in[lane + 64]; i32 c = (i32)in[lane + 128], d = (i32)in[lane + 192];
  u16 e = (u16)in[lane + 256], f = (u16)in[lane + 320];
  u64 h = mix((u64)__builtin_elementwise_add_sat(a, b), (u64)__builtin_elementwise_sub_sat(a, b));
  h = mix(h, (u64)(u32)__builtin_elementwise_add_sat(c, d));
  h = mix(h, (u64)(u32)__builtin_elementwise_sub_sat(c, d));
  return mix(h, (u64)__builtin_elementwise_add_sat(e, f));"""
    for opt in (1, 3):
        assert_matches_host("sat", body, opt, pattern=r"v_add_u32_e64 [^\n]* clamp")


def test_flat_atomic_on_lds_through_the_shared_aperture() -> None:
    """At -O0 an atomic on a __shared__ variable is a flat atomic on a shared-aperture address; the
    emulator sent it to global memory, where it faulted."""
    assert_matches_host("flatldsatomic", "return in[lane] * 0x9e3779b9ull;", 0, ("ldsatomic",),
                        r"flat_atomic_add v\d+, v\[\d+:\d+\], v\d+\s", inline_all=True)


def test_vgpr_indexing_mode() -> None:
    """Register-resident arrays at dynamic indices: clang walks the distinct indices with
    s_set_gpr_idx_on / v_mov_b32 / s_set_gpr_idx_off, scalar instructions in between; the emulator
    refused them."""
    body = """u32 arr[16]; u64 wide[16];
  for (u32 j = 0; j < 16u; ++j) arr[j] = in[j + lane] * 3u + j;
  arr[in[lane + 100] & 15u] = lane;
  for (u32 j = 0; j < 16u; ++j) wide[j] = (u64)arr[(j * 7u) & 15u] << 32 | in[j];
  for (u32 j = 0; j < in[3] % 16u; ++j) wide[j] = wide[in[j + 8] & 15u] ^ j;
  return mix(mix(arr[in[lane + 200] & 15u], arr[in[7] & 15u]), wide[in[lane + 300] & 15u]);"""
    for opt in (1, 3):
        assert_matches_host("gpridx", body, opt, pattern=r"s_set_gpr_idx_on s\d+, gpr_idx\((SRC0|DST)\)")


def test_fma_of_an_overflowing_product_and_an_infinity() -> None:
    """fma(a, b, -inf) with a * b finite but past the fp64 range is -inf (the product is exact, not
    rounded to +inf first); the emulator's v_fma_f64 gave NaN."""
    body = """double big = (double)((in[lane] & 0xFFFFu) | 1u) * 0x1p1000;
  double r = __builtin_fma(big, big, -__builtin_inf()), s = __builtin_fma(big, -big, __builtin_inf());
  double t = __builtin_fma(big, 0x1p-2000, -__builtin_inf());
  return mix(mix(hf64(r), hf64(s)), hf64(t));"""
    assert_matches_host("fmainf", body, 1, pattern=r"v_fma_f64 ")


def test_packed_f32_fma_with_inline_constants() -> None:
    """-O3 vectorizes a loop of fmaf(x, 0, -1) into v_pk_fma_f32 with inline constants 0 and -1.0:
    an inline constant of a packed-f32 operand is the 32-bit constant (LLVM clears op_sel_hi so the
    high half takes it too); the emulator read the 64-bit -1.0, whose low dword is 0."""
    body = """float arr[32];
  for (u32 j = 0; j < 32u; ++j) arr[j] = __builtin_fmaf(0.0f, bf32(in[j]), -1.0f);
  return mix(mix(hf32(arr[lane & 31u]), hf32(arr[(lane + 7u) & 31u])), (u64)cvt_i32(arr[in[lane] & 31u]));"""
    assert_matches_host("pkfma", body, 3, pattern=r"v_pk_fma_f32 v\[\d+:\d+\], [sv]\[\d+:\d+\], 0, -1\.0")


def test_scalar_bitset() -> None:
    """Clearing one bit of a wave-uniform value past the inline constants: clang emits s_bitset0_b32
    (s_bitset1_b32 to set one), which the emulator refused; both share one implementation."""
    body = """u32 x = in[1] | 0x100u, y = in[2] & ~0x2000u;
  return mix(mix((u64)(lane < x), (u64)(lane + y)), (u64)x);"""
    assert_matches_host("bitset", body, 3, pattern=r"s_bitset0_b32 s\d+, 13\s")


def test_scalar_count_of_sign_bits() -> None:
    """A wave-uniform i64 -> f32 conversion normalises with s_flbit_i32 (the number of leading bits
    equal to the sign bit, CDNA4 pseudo-code); the emulator returned one less."""
    body = """float f = (float)((i64)((u64)in[0] << 32 | in[1])),
        g = (float)((i64)((u64)in[2] << 32 | in[3]));
  return mix(mix(hf32(f), hf32(g)), (u64)lane);"""
    assert_matches_host("flbit", body, 1, pattern=r"s_flbit_i32 s\d+, s\d+\s")


def test_min_and_max_order_signed_zeros() -> None:
    """clang turns `v < -0.0f ? v : -0.0f` into v_min_f32 with -0.0 (and the `> 0` form into
    v_max_f32 with 0), relying on V_MIN/V_MAX ordering -0 below +0 (CDNA4 pseudo-code); the
    emulator's numpy fmin/fmax returned whichever operand came second."""
    body = """float z = (in[lane] & 1u) ? 0.0f : -0.0f, a = bf32(in[lane + 64]);
  double w = (in[lane + 128] & 1u) ? 0.0 : -0.0, b = bf64((u64)in[lane + 192] << 32 | in[lane + 256]);
  float lo = z < -0.0f ? z : -0.0f, hi = z > 0.0f ? z : 0.0f, alo = a < -0.0f ? a : -0.0f;
  double wlo = w < -0.0 ? w : -0.0, whi = w > 0.0 ? w : 0.0, bhi = b > 0.0 ? b : 0.0;
  u64 h = mix(mix(hf32(lo), hf32(hi)), hf32(alo));
  return mix(mix(h, mix(hf64(wlo), hf64(whi))), hf64(bhi));"""
    for opt in (1, 3):
        assert_matches_host("minmaxzero", body, opt, pattern=r"v_min_f32_e32 v\d+, 0x80000000")
