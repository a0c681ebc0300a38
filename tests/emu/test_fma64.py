"""fp64 fused multiply-add (v_fma_f64, v_fmac_f64, v_div_fmas_f64's 2^k scaling): the vectorized
path against exact rational arithmetic (Python's Fractions, rounded once by float()), lane by lane,
on random operands over the whole exponent range and on the hard cases: results on or next to a
rounding tie, total cancellation, signed zeros, subnormal results, overflow and special values."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from wgrad_cli.emu.ops.vector_math import fma64


def exact(a: float, b: float, c: float, k: int) -> float:
    if math.isfinite(a) and math.isfinite(b) and math.isinf(c):
        return c  # the exact product is finite, even where it would round to an infinity
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return math.ldexp(a * b + c, k)
    value = (Fraction(a) * Fraction(b) + Fraction(c)) * Fraction(2) ** k
    if value == 0:  # IEEE 754 6.3: +0, unless both addends are zeros of the same sign
        return a * b + c if a * b == 0 and c == 0 else 0.0
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def operands(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    def wide(n: int) -> np.ndarray:
        return np.ldexp(rng.uniform(-1, 1, n), rng.integers(-1074, 1024, n))

    a, b = wide(n), rng.standard_normal(n)
    b[: n // 2] = wide(n // 2)
    c = rng.standard_normal(n) * np.ldexp(1.0, rng.integers(-60, 60, n))
    m = n // 8
    with np.errstate(over="ignore"):
        c[:m] = -(a[:m] * b[:m])  # cancels a * b to its rounding error
    # a * b = 1 - 2^-60 (in fp64: 1, and -2^-60 left over) plus c = 2^53 + 2n is 2^-60 below the tie
    # 2^53 + 2n + 1: rounding a * b + c in two steps lands on the tie, half of them on the wrong side
    e = rng.integers(-900, 900, m)
    sign = np.where(rng.integers(0, 2, m) == 0, 1.0, -1.0)
    a[m:2 * m], b[m:2 * m] = sign * np.ldexp(1 + 2.0**-30, e), 1 - 2.0**-30
    c[m:2 * m] = sign * np.ldexp(2.0**53 + 2 * rng.integers(0, 2**20, m), e)
    a[2 * m:3 * m] = np.ldexp(rng.uniform(1, 2, m), -540)  # results near and below the subnormal range
    b[2 * m:3 * m] = np.ldexp(rng.uniform(1, 2, m), -520)
    c[2 * m:3 * m] = np.ldexp(rng.uniform(-1, 1, m), -1065)
    a[3 * m:3 * m + 8] = [0.0, -0.0, 0.0, -0.0, np.inf, np.nan, 1e308, -1e308]
    b[3 * m:3 * m + 8] = [5.0, 5.0, -5.0, 0.0, 2.0, 1.0, 10.0, 10.0]
    c[3 * m:3 * m + 8] = [-0.0, -0.0, 0.0, -0.0, -np.inf, 1.0, 1e308, 0.0]
    return a, b, c


def same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return np.asarray((got.view(np.uint64) == want.view(np.uint64)) | (np.isnan(got) & np.isnan(want)))


def test_fma64_is_rounded_once() -> None:
    rng = np.random.default_rng(64)
    a, b, c = operands(rng, 40_000)
    k = np.where(np.arange(len(a)) % 16 == 0, rng.integers(-128, 129, len(a)), 0)  # v_div_fmas_f64's scaling
    got = fma64(a, b, c, k)
    want = np.array([exact(float(x), float(y), float(z), int(e)) for x, y, z, e in zip(a, b, c, k)])
    bad = np.flatnonzero(~same(got, want))
    assert not len(bad), [(a[i], b[i], c[i], k[i], got[i], want[i]) for i in bad[:3]]
    m = len(a) // 8  # the near-ties: rounding a * b, then the sum, misses half of them
    assert (a[m:2 * m] * b[m:2 * m] + c[m:2 * m] != want[m:2 * m]).mean() > 0.4
