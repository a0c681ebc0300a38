"""MXFP8 block logic: scale choice, quantize/dequantize, and the ABI's scale packing."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from wgrad_cli.problem.mxfp8 import block_exponents, dequantize, pack_scales, quantize, unpack_scales

E4M3 = ml_dtypes.float8_e4m3fn


def spread_values(rng: np.random.Generator, rows: int, m: int, octaves: int = 20) -> np.ndarray:
    """float32 normals times a random power of two per 32-block."""
    v = rng.standard_normal((rows, m), dtype=np.float32)
    oct_ = rng.integers(-octaves, octaves + 1, size=(rows, m // 32, 1))
    v.reshape(rows, m // 32, 32)[...] *= np.ldexp(np.float32(1), oct_).astype(np.float32)
    return v


# ---------------------------------------------------------------- block_exponents


def test_block_exponents_known_values() -> None:
    amax = np.array([1.0, 1.999, 2.0, 0.999, 448.0, 256.0, 255.9, 3.0 * 2.0**-20], dtype=np.float32)
    # upstream: floor(log2(amax)) + 127
    assert block_exponents(amax, "upstream").tolist() == [127, 127, 128, 126, 135, 135, 134, 108]
    # ocp: floor(log2(amax)) - 8 + 127
    assert block_exponents(amax, "ocp").tolist() == [119, 119, 120, 118, 127, 127, 126, 100]
    assert block_exponents(amax, "ocp").dtype == np.uint8


@pytest.mark.parametrize(("rule", "lo", "hi"), [("ocp", 256.0, 512.0), ("upstream", 1.0, 2.0)])
def test_block_exponents_put_block_max_in_range(rule: str, lo: float, hi: float) -> None:
    rng = np.random.default_rng(1)
    # magnitudes over 2^-100 .. 2^100, plus exact powers of two and values just below them
    amax = np.ldexp(rng.uniform(0.5, 1.0, 4000), rng.integers(-100, 101, 4000)).astype(np.float32)
    pow2 = np.ldexp(np.float32(1), np.arange(-100, 101)).astype(np.float32)
    below = np.nextafter(pow2, np.float32(0))
    amax = np.concatenate([amax, pow2, below])
    e8 = block_exponents(amax, rule)
    scaled = amax.astype(np.float64) * np.ldexp(1.0, 127 - e8.astype(np.int64))
    assert scaled.min() >= lo
    assert scaled.max() < hi


def test_block_exponents_clamp_at_zero() -> None:
    # upstream: max(amax, 1e-38) keeps log2 >= -127 (1e-38 = 2^-126.2), so 2^-127 and below give 0
    tiny = np.array([2.0**-126, 2.0**-127, 2.0**-149, 0.0], dtype=np.float32)
    assert block_exponents(tiny, "upstream").tolist() == [1, 0, 0, 0]
    ocp = np.array([2.0**-119, 2.0**-120, 2.0**-126, 0.0], dtype=np.float32)
    assert block_exponents(ocp, "ocp").tolist() == [0, 0, 0, 0]
    assert block_exponents(np.array([2.0**-118], dtype=np.float32), "ocp").tolist() == [1]


def test_block_exponents_clamp_at_254() -> None:
    big = np.array([2.0**126, 2.0**127, 2.0**128, 2.0**300])
    assert block_exponents(big, "upstream").tolist() == [253, 254, 254, 254]
    big_ocp = np.array([2.0**134, 2.0**135, 2.0**136, 2.0**300])
    assert block_exponents(big_ocp, "ocp").tolist() == [253, 254, 254, 254]
    fmax = np.array([np.finfo(np.float32).max], dtype=np.float32)  # 2^127.99..
    assert block_exponents(fmax, "upstream").tolist() == [254]
    assert block_exponents(fmax, "ocp").tolist() == [246]
    # never the NaN code
    assert (block_exponents(np.array([1e300]), "upstream") != 255).all()


@pytest.mark.parametrize("rule", ["ocp", "upstream"])
def test_block_exponents_inf_clamps_to_254(rule: str) -> None:
    # clamp(floor(log2(inf)) + 127, 0, 254) = 254 (np.frexp(inf) alone would give exponent 0 -> 126/118)
    amax = np.array([np.inf, 1.0], dtype=np.float32)
    assert block_exponents(amax, rule).tolist() == [254, 127 if rule == "upstream" else 119]


# ---------------------------------------------------------------- quantize


@pytest.mark.parametrize("rule", ["ocp", "upstream"])
def test_all_zero_blocks(rule: str) -> None:
    v = np.zeros((3, 128), dtype=np.float32)
    v[1, 32:64] = 1.0  # one non-zero block; the others stay zero
    q, e8 = quantize(v.copy(), rule)
    assert q.dtype == np.uint8 and e8.dtype == np.uint8
    assert e8.shape == (3, 4)
    zero_blocks = np.ones((3, 4), dtype=bool)
    zero_blocks[1, 1] = False
    assert (e8[zero_blocks] == 0).all()
    assert (q.reshape(3, 4, 32)[zero_blocks] == 0).all()
    assert e8[1, 1] == (127 if rule == "upstream" else 119)
    np.testing.assert_array_equal(dequantize(q, e8), v.astype(np.float64))


@pytest.mark.parametrize("rule", ["ocp", "upstream"])
def test_quantize_round_trip_within_e4m3_precision(rule: str) -> None:
    rng = np.random.default_rng(2)
    x = spread_values(rng, 16, 512)
    q, e8 = quantize(x.copy(), rule)
    assert q.shape == (16, 512) and e8.shape == (16, 16)
    y = dequantize(q, e8)
    x64 = x.astype(np.float64)
    scale = np.repeat(np.ldexp(1.0, e8.astype(np.int64) - 127), 32, axis=1)
    err = np.abs(y - x64)
    # normal e4m3 range (|x| >= 2^-6 * scale): relative error <= 2^-4 (3 mantissa bits, round to nearest);
    # subnormals: absolute error <= half the subnormal spacing 2^-9 * scale.
    # ocp only: a scaled value above 448 saturates to 448 (block max lands in [256, 512)).
    allowed = np.maximum(2.0**-4 * np.abs(x64), 2.0**-10 * scale)
    if rule == "ocp":
        allowed = np.maximum(allowed, np.abs(x64) - 448.0 * scale)
    assert (err <= allowed).all()
    # and the bound is not vacuous: e4m3 rounding error of normal values really reaches ~2^-5 relative
    normal = np.abs(x64) >= 2.0**-6 * scale
    assert (err[normal] / np.abs(x64[normal])).max() > 2.0**-6
    # signs are kept
    nz = y != 0
    assert (np.sign(y[nz]) == np.sign(x64[nz])).all()


@pytest.mark.parametrize(("rule", "top"), [("ocp", (0x78, 0x7E)), ("upstream", (0x38, 0x3F))])
def test_quantize_exact_for_representable_values(rule: str, top: tuple[int, int]) -> None:
    rng = np.random.default_rng(3)
    rows, m = 8, 256
    # random non-NaN codes; each block's first code sets the block max (exponent 8 for ocp, 0 for upstream)
    limit = 0x7F if rule == "ocp" else 0x40
    mag = rng.integers(0, limit, size=(rows, m), dtype=np.uint8)
    mag.reshape(rows, m // 32, 32)[:, :, 0] = rng.integers(top[0], top[1] + 1, size=(rows, m // 32))
    codes = mag | (rng.integers(0, 2, size=(rows, m), dtype=np.uint8) << 7)
    e8 = rng.integers(100, 150, size=(rows, m // 32), dtype=np.uint8)
    x = (codes.view(E4M3).astype(np.float64)
         * np.repeat(np.ldexp(1.0, e8.astype(np.int64) - 127), 32, axis=1)).astype(np.float32)
    q, got_e8 = quantize(x.copy(), rule)
    np.testing.assert_array_equal(got_e8, e8)
    np.testing.assert_array_equal(q, codes)
    np.testing.assert_array_equal(dequantize(q, got_e8), x.astype(np.float64))


@pytest.mark.parametrize("rule", ["ocp", "upstream"])
def test_quantize_saturates_without_nan(rule: str) -> None:
    fmax = np.finfo(np.float32).max
    v = np.zeros((2, 64), dtype=np.float32)
    v[0, :32] = np.linspace(-1.0, 1.0, 32) * float(fmax)
    v[1, 32:] = np.float32(3e38)
    v[1, 32] = -fmax
    q, e8 = quantize(v.copy(), rule)
    assert not ((q & 0x7F) == 0x7F).any()  # no e4m3 NaN
    assert (e8 != 255).all()
    y = dequantize(q, e8)
    assert np.isfinite(y).all()
    # the block max comes back as +-(largest e4m3 value) * scale, within e4m3 precision of the input
    assert (q[0, 0] & 0x7F) <= 0x7E and (q[0, 31] & 0x7F) >= (0x78 if rule == "ocp" else 0x38)
    assert abs(y[0, 31] - float(fmax)) <= 2.0**-3 * float(fmax)
    assert y[0, 0] == -y[0, 31]
    assert y[1, 32] < 0 and (y[1, 33:] > 0).all()


def test_quantize_inf_saturates_at_largest_scale() -> None:
    v = np.ones((1, 32), dtype=np.float32)
    v[0, 0] = np.inf
    v[0, 1] = -np.inf
    q, e8 = quantize(v.copy(), "upstream")
    assert e8.tolist() == [[254]]
    assert q[0, 0] == 0x7E and q[0, 1] == 0xFE  # +-448
    assert (q[0, 2:] == 0).all()  # 1.0 * 2^-127 is far below e4m3's smallest subnormal
    assert not ((q & 0x7F) == 0x7F).any()


# ---------------------------------------------------------------- scale packing


def test_pack_unpack_inverse() -> None:
    rng = np.random.default_rng(4)
    e8 = rng.integers(0, 255, size=(40, 24), dtype=np.uint8)  # 40 rows, M = 768
    packed = pack_scales(e8)
    assert packed.shape == (6, 40, 4)
    assert packed.flags.c_contiguous
    np.testing.assert_array_equal(unpack_scales(packed), e8)
    other = rng.integers(0, 255, size=(3, 16, 4), dtype=np.uint8)
    np.testing.assert_array_equal(pack_scales(unpack_scales(other)), other)


def test_pack_matches_abi_byte_formula() -> None:
    rng = np.random.default_rng(5)
    rows, m = 24, 512
    e8 = rng.integers(0, 255, size=(rows, m // 32), dtype=np.uint8)
    flat = pack_scales(e8).reshape(-1)
    assert flat.size == rows * m // 32
    for r in range(rows):
        for mm in range(0, m, 8):  # every block, several tokens per block
            assert flat[((mm // 128) * rows + r) * 4 + (mm // 32) % 4] == e8[r, mm // 32]
    # a concrete byte: row 5, token 300 -> step 2, block 9 (slot 1)
    assert flat[(2 * rows + 5) * 4 + 1] == e8[5, 9]


def test_pack_uint32_view_is_tinygrad_mx_pack() -> None:
    rng = np.random.default_rng(6)
    rows, m = 16, 512
    e8 = rng.integers(0, 255, size=(rows, m // 32), dtype=np.uint8)
    words = pack_scales(e8).view("<u4").reshape(m // 128, rows)
    # mx_pack: (N, M/32) -> reshape (N, M/128, 4) -> view uint32 -> transpose -> (M/128, N)
    mx = np.ascontiguousarray(e8.reshape(rows, m // 128, 4)).view("<u4").reshape(rows, m // 128).T
    np.testing.assert_array_equal(words, mx)
    # and by hand: the word's low byte is the step's first block
    for s in range(m // 128):
        for r in range(rows):
            b = [int(e8[r, 4 * s + i]) for i in range(4)]
            assert int(words[s, r]) == b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24


# ---------------------------------------------------------------- dequantize


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dequantize_nan_codes(dtype: type) -> None:
    q = np.full((2, 64), 0x38, dtype=np.uint8)  # 1.0 everywhere
    q[0, 3] = 0x7F
    q[0, 40] = 0xFF
    q[1, 10] = 0x00  # zero in a NaN-scaled block is still NaN
    e8 = np.full((2, 2), 127, dtype=np.uint8)
    e8[1, 0] = 255
    y = dequantize(q, e8, dtype)
    assert y.dtype == dtype
    nan = np.zeros((2, 64), dtype=bool)
    nan[0, 3] = nan[0, 40] = True
    nan[1, :32] = True
    np.testing.assert_array_equal(np.isnan(y), nan)
    np.testing.assert_array_equal(y[~nan], np.ones((~nan).sum()))


def test_dequantize_e8m0_zero_is_two_to_minus_127() -> None:
    q = np.zeros((1, 32), dtype=np.uint8)
    q[0, 0] = 0x38  # 1.0
    q[0, 1] = 0xC0  # -2.0
    q[0, 2] = 0x01  # 2^-9, smallest e4m3 subnormal
    e8 = np.zeros((1, 1), dtype=np.uint8)
    y = dequantize(q, e8)
    assert y[0, 0] == 2.0**-127
    assert y[0, 1] == -(2.0**-126)
    assert y[0, 2] == 2.0**-136
    y32 = dequantize(q, e8, np.float32)
    assert y32[0, 0] == np.float32(2.0**-127)  # fp32 subnormal, still exact
    assert y32[0, 2] == np.float32(2.0**-136)


def test_dequantize_largest_values() -> None:
    q = np.full((1, 32), 0x7E, dtype=np.uint8)  # 448
    e8 = np.full((1, 1), 254, dtype=np.uint8)
    assert dequantize(q, e8)[0, 0] == 448.0 * 2.0**127  # exact in float64
    with np.errstate(over="ignore"):
        assert np.isposinf(dequantize(q, e8, np.float32)[0, 0])  # beyond fp32's range
