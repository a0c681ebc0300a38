"""compare(): the tolerance policy of docs/numerics.md, on real problems and on hand-made values."""

from __future__ import annotations

import dataclasses
from functools import cache

import ml_dtypes
import numpy as np
import pytest

from wgrad_cli.measure.check import bf16_ulp, compare, gamma
from wgrad_cli.problem.abi import Dims
from wgrad_cli.problem.generate import Problem, generate
from wgrad_cli.problem.mxfp8 import dequantize, unpack_scales
from wgrad_cli.problem.reference import grad_w, row_norms
from wgrad_cli.problem.routing import Routing
from wgrad_cli.results.records import Errors

BF16 = ml_dtypes.bfloat16
NAN_BITS = np.uint16(0x7FC0)  # canonical bf16 NaN
POISON_BITS = np.uint16(0xFFFF)


def rne(ref: np.ndarray) -> np.ndarray:
    """bf16 bits of ref rounded to nearest even (ml_dtypes' cast)."""
    return ref.astype(BF16).view(np.uint16)


def truncate(ref: np.ndarray) -> np.ndarray:
    """bf16 bits as the upstream kernel stores them: the high half of the fp32 value."""
    return (np.ascontiguousarray(ref, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


@cache
def setup() -> tuple[Problem, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A problem with expert 1 empty, its reference, norms and token counts (do not modify)."""
    p = generate(Dims(512, 256, 256, 3), Routing("explicit", offsets=(0, 128, 128, 512)), 31)
    ref = grad_w(p)
    na, nb = row_norms(p)
    tokens = np.diff(p.offsets)
    return p, ref, na, nb, tokens


def run(bits: np.ndarray, ref: np.ndarray | None = None, **kw: str) -> Errors:
    _, r, na, nb, tokens = setup()
    return compare(bits, r if ref is None else ref, na, nb, tokens, **kw)


# ---------------------------------------------------------------- whole outputs


def test_rounded_reference_passes() -> None:
    _, ref, *_ = setup()
    c = run(rne(ref))
    assert c.ok and c.mismatches == 0 and c.nans == 0 and c.unwritten == 0
    assert c.elements == 3 * 256 * 256
    assert 0 < c.max_abs_error <= float((bf16_ulp(ref) / 2).max())
    assert 0 < c.rel_frobenius < 2.0**-8
    assert c.ok is True and c.mismatches == 0


def test_truncation_passes() -> None:
    _, ref, *_ = setup()
    bits = truncate(ref)
    err = np.abs(bits.view(BF16).astype(np.float64) - ref)
    ulp = bf16_ulp(ref)
    # truncation really is worse than rounding: some errors exceed half an ulp, none reaches one
    assert (err > 0.75 * ulp).any()
    assert (err < ulp).all()
    c = run(bits)
    assert c.ok and c.mismatches == 0


def test_few_ulps_on_large_element_fails() -> None:
    _, ref, na, nb, tokens = setup()
    e, n, k = np.unravel_index(np.argmax(np.abs(ref)), ref.shape)
    ulp = float(bf16_ulp(ref[e, n, k]))
    bound = float(gamma(np.array(tokens[e], dtype=np.float64)) * na[e, n] * nb[e, k])
    assert bound < 1.5 * ulp  # so 3 ulps (at least 2.5 after rounding) exceed ulp + bound
    bits = rne(ref)
    bits[e, n, k] += 3  # magnitude up by 3 bf16 ulps
    c = run(bits)
    assert not c.ok
    assert c.mismatches == 1 and c.nans == 0 and c.unwritten == 0
    assert c.max_abs_error >= 2.5 * ulp
    bits[e, n, k] -= 3  # back to the rounded value
    assert run(bits).ok


def test_dropped_32_token_block_in_one_output_fails() -> None:
    p, ref, na, nb, tokens = setup()
    a = dequantize(p.A, unpack_scales(p.scale_A))
    b = dequantize(p.B, unpack_scales(p.scale_B))
    n, k = 17, 40
    # expert 2 = tokens 128..511: contributions of its 12 blocks to grad_w[2, n, k]
    parts = (a[n, 128:512] * b[k, 128:512]).reshape(12, 32).sum(axis=1)
    assert abs(parts.sum() - ref[2, n, k]) <= 2.0**-20 * abs(ref[2, n, k])
    j = int(np.argmax(np.abs(parts)))
    tol = float(bf16_ulp(ref[2, n, k]) + gamma(np.array(tokens[2], dtype=np.float64)) * na[2, n] * nb[2, k])
    assert abs(parts[j]) > 2 * tol
    bits = rne(ref)
    bits[2, n, k] = rne(np.array(ref[2, n, k] - parts[j], dtype=np.float32))
    c = run(bits)
    assert not c.ok and c.mismatches == 1 and c.nans == 0


def test_dropped_32_token_block_in_one_expert_fails() -> None:
    p, ref, _, _, _ = setup()
    A = p.A.copy()
    A[:, 256:288] = 0  # expert 2 (tokens 128..511) loses one 32-token block in every output
    bits = rne(grad_w(dataclasses.replace(p, A=A)))
    c = run(bits)
    assert not c.ok
    # the tolerance's Cauchy-Schwarz term is loose, and blocks differ by up to 2^16 in scale, so only
    # outputs where that block matters fail: here over a fifth of expert 2, and nothing elsewhere
    assert 0.2 * 256 * 256 < c.mismatches <= 256 * 256
    np.testing.assert_array_equal(bits[:2], rne(ref)[:2])
    assert c.max_rel_row_error > 2.0**-4


def test_poison_counts_as_unwritten_and_fails() -> None:
    _, ref, *_ = setup()
    bits = rne(ref)
    bits[2, 10, 20] = POISON_BITS
    c = run(bits)
    assert not c.ok
    assert c.unwritten == 1 and c.nans == 0
    bits[0] = POISON_BITS  # a whole expert never written
    c = run(bits)
    assert not c.ok and c.unwritten == 256 * 256 + 1


def test_nan_where_reference_finite_fails() -> None:
    _, ref, *_ = setup()
    bits = rne(ref)
    bits[0, 1, 2] = NAN_BITS
    bits[2, 3, 4] = 0xFFC0  # negative quiet NaN, not the poison pattern
    c = run(bits)
    assert not c.ok
    assert c.nans == 2 and c.mismatches == 2 and c.unwritten == 0


def test_nan_expected_and_present_passes() -> None:
    _, ref, *_ = setup()
    ref_nan = ref.copy()
    ref_nan[2, 5, :] = np.nan  # e.g. an e4m3 NaN in row 5 of expert 2's tokens
    bits = rne(ref_nan)
    assert (bits[2, 5] & 0x7FFF > 0x7F80).all()
    bits[2, 5] = NAN_BITS
    c = run(bits, ref_nan)
    assert c.ok and c.mismatches == 0 and c.nans == 0
    # a finite value where NaN is expected is a mismatch (but not a NaN)
    bits[2, 5, 7] = rne(np.array(1.0, dtype=np.float32))
    c = run(bits, ref_nan)
    assert not c.ok and c.mismatches == 1 and c.nans == 0


# ---------------------------------------------------------------- empty experts


def test_empty_expert_zero_passes() -> None:
    _, ref, *_ = setup()
    assert (ref[1] == 0).all()
    bits = rne(ref)
    bits[1, :, :128] = 0x8000  # -0.0 equals 0
    assert run(bits).ok


def test_empty_expert_nonzero_fails() -> None:
    _, ref, *_ = setup()
    bits = rne(ref)
    bits[1, 7, 9] = rne(np.array(0.01, dtype=np.float32))  # above 2^-8
    c = run(bits)
    assert not c.ok and c.mismatches == 1


@pytest.mark.parametrize("value", [1e-3, 2.0**-100, 2.0**-126])
def test_empty_expert_tiny_nonzero_fails(value: float) -> None:
    _, ref, *_ = setup()
    bits = rne(ref)
    bits[1, 7, 9] = rne(np.array(value, dtype=np.float32))
    c = run(bits)
    assert not c.ok and c.mismatches == 1


# ---------------------------------------------------------------- the tolerance, by hand


def one(ref: float, out: float, tokens: int = 128, na: float = 0.0, nb: float = 0.0,
        **kw: str) -> Errors:
    r = np.full((1, 1, 1), ref, dtype=np.float32)
    bits = rne(np.full((1, 1, 1), out, dtype=np.float32))
    return compare(bits, r, np.full((1, 1), na), np.full((1, 1), nb), np.array([tokens]), **kw)


def test_one_ulp_passes_two_fail_without_summation_term() -> None:
    assert one(1.0, 1.0).ok
    assert one(1.0, 1.0 + 2.0**-7).ok  # exactly one ulp
    assert one(1.0, 1.0 - 2.0**-8).ok  # one ulp below 1.0 is 2^-8 (binade below)
    assert not one(1.0, 1.0 + 2.0**-6).ok  # two ulps
    assert not one(3.0, 3.0 + 2.0**-5).ok  # two ulps at 3.0 (spacing 2^-6)
    assert one(3.0, 3.0 + 2.0**-6).ok


def test_summation_term_widens_tolerance() -> None:
    # n = 2^14: gamma ~ 2^-10; ||a|| ||b|| = 6 -> bound ~ 0.00587 < 2^-7; two ulps off = 2^-6
    out = 1.0 + 2.0**-6
    assert not one(1.0, out, tokens=2**14, na=2.0, nb=3.0).ok
    assert one(1.0, out, tokens=2**14, na=2.0, nb=3.0, reference="float32").ok  # 2 * bound
    assert one(1.0, out, tokens=2**14, na=2.0, nb=6.0).ok  # bound ~ 0.0117


def test_bf16_ulp_values() -> None:
    x = np.array([1.0, -1.0, 3.0, 255.0, 256.0, 2.0**-126, 2.0**-130, 2.0**-140, 1.5 * 2.0**100])
    want = np.array([2.0**-7, 2.0**-7, 2.0**-6, 1.0, 2.0, 2.0**-133, 2.0**-133, 2.0**-133, 2.0**93])
    np.testing.assert_array_equal(bf16_ulp(x), want)


def test_bf16_ulp_is_the_gap_to_the_next_bf16() -> None:
    rng = np.random.default_rng(0)
    bits = rng.integers(0x0001, 0x7F7F, size=2000).astype(np.uint16)  # positive finite bf16
    x = bits.view(BF16).astype(np.float64)
    nxt = (bits + 1).view(BF16).astype(np.float64)
    np.testing.assert_array_equal(bf16_ulp(x), nxt - x)


def test_bf16_ulp_at_zero_is_subnormal_spacing() -> None:
    assert bf16_ulp(np.array([0.0]))[0] == 2.0**-133


def test_gamma_formula() -> None:
    n = np.array([0.0, 1.0, 128.0, 2.0**20])
    u = 2.0**-24
    np.testing.assert_array_equal(gamma(n), n * u / (1 - n * u))
    assert gamma(np.array(0, dtype=np.float64)) == 0
    assert gamma(np.array(2.0**20, dtype=np.float64)) == pytest.approx(1 / 15, rel=1e-15)
    assert gamma(np.array(1, dtype=np.float64)) == pytest.approx(2.0**-24 * (1 + 2.0**-24), rel=1e-15)
    assert gamma(np.array(2.0**23, dtype=np.float64)) == pytest.approx(1.0, rel=1e-15)  # n u = 1/2


def test_overflow_to_the_same_infinity_passes() -> None:
    _, ref, *_ = setup()
    ref_inf = ref.copy()
    ref_inf[2, 3, 4], ref_inf[2, 3, 5] = np.inf, -np.inf  # exact sums beyond fp32: both sides overflow
    bits = rne(ref_inf)
    assert run(bits, ref_inf).ok
    bits[2, 3, 5] = rne(np.array(np.inf, dtype=np.float32))  # the wrong sign
    bits[2, 3, 6] = rne(np.array(np.inf, dtype=np.float32))  # inf where the sum is finite
    c = run(bits, ref_inf)
    assert not c.ok and c.mismatches == 2
