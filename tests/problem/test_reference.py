"""The reference is right: hand-computed cases, an independent float64 path, NaN rules, rows, norms.

The independent path here reads the ABI's layouts itself: e4m3 bytes decoded by ml_dtypes, e8m0
scales taken from the packed bytes with the ABI's byte formula ((m/128)*rows + r)*4 + (m/32)%4
and turned into 2^(byte-127) with ldexp, and the per-expert sums done with np.einsum. It uses no
helper of wgrad_cli.problem.mxfp8.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from wgrad_cli.problem.abi import Dims
from wgrad_cli.problem.generate import Problem, generate
from wgrad_cli.problem.reference import grad_w, row_norms, sample_rows
from wgrad_cli.problem.routing import Routing

E4M3 = ml_dtypes.float8_e4m3fn


# ---------------------------------------------------------------- independent helpers


def byte_index(rows: int, M: int) -> np.ndarray:
    """(rows, M) index into the flat packed scale array, straight from docs/kernel-contract.md."""
    r = np.arange(rows)[:, None]
    m = np.arange(M)[None, :]
    return ((m // 128) * rows + r) * 4 + (m // 32) % 4


def scales_f64(packed: np.ndarray, rows: int, M: int) -> np.ndarray:
    byte = packed.reshape(-1)[byte_index(rows, M)].astype(np.int64)
    s: np.ndarray = np.where(byte == 255, np.nan, np.ldexp(1.0, byte - 127))
    return s


def deq(q: np.ndarray, packed: np.ndarray) -> np.ndarray:
    rows, M = q.shape
    values: np.ndarray = q.view(E4M3).astype(np.float64) * scales_f64(packed, rows, M)
    return values


def pack_by_formula(e8: np.ndarray) -> np.ndarray:
    """(rows, M/32) bytes -> (M/128, rows, 4) by writing every byte at its ABI address."""
    rows, blocks = e8.shape
    M = blocks * 32
    flat = np.zeros(rows * blocks, dtype=np.uint8)
    idx = byte_index(rows, M)[:, ::32]  # one token per block
    flat[idx] = e8
    return flat.reshape(M // 128, rows, 4)


def expected_f64(p: Problem) -> tuple[np.ndarray, np.ndarray]:
    """float64 (E, N, K) sums and the sums of |products| (for error bounds)."""
    d = p.dims
    a, b = deq(p.A, p.scale_A), deq(p.B, p.scale_B)
    out, mag = np.zeros((d.E, d.N, d.K)), np.zeros((d.E, d.N, d.K))
    for e in range(d.E):
        lo, hi = int(p.offsets[e]), int(p.offsets[e + 1])
        out[e] = np.einsum("nm,km->nk", a[:, lo:hi], b[:, lo:hi])
        mag[e] = np.einsum("nm,km->nk", np.abs(a[:, lo:hi]), np.abs(b[:, lo:hi]))
    return out, mag


def random_codes(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Random e4m3 bytes, NaN codes (0x7F, 0xFF) moved to +-448."""
    q = rng.integers(0, 256, size=shape, dtype=np.uint8)
    q[(q & 0x7F) == 0x7F] ^= 1
    return q


def make(d: Dims, offsets: list[int], A: np.ndarray, B: np.ndarray, sa: np.ndarray,
         sb: np.ndarray) -> Problem:
    return Problem(d, np.array(offsets, dtype=np.int32), A, B, sa, sb, seed=0, quantization="ocp")


def random_problem(d: Dims, offsets: list[int], seed: int, lo: int = 112, hi: int = 142) -> Problem:
    rng = np.random.default_rng(seed)
    A, B = random_codes(rng, (d.N, d.M)), random_codes(rng, (d.K, d.M))
    ea = rng.integers(lo, hi + 1, size=(d.N, d.M // 32), dtype=np.uint8)
    eb = rng.integers(lo, hi + 1, size=(d.K, d.M // 32), dtype=np.uint8)
    return make(d, offsets, A, B, pack_by_formula(ea), pack_by_formula(eb))


# ---------------------------------------------------------------- (1) hand-computed cases


def test_helpers_agree_with_abi_by_hand() -> None:
    # the test's own byte formula: row 3, token 40 -> step 0, slot 1 -> byte 13
    assert byte_index(256, 256)[3, 40] == 13
    assert byte_index(256, 256)[255, 255] == (1 * 256 + 255) * 4 + 3
    assert E4M3(1.5).view(np.uint8) == 0x3C and E4M3(-2.0).view(np.uint8) == 0xC0


def test_hand_single_expert() -> None:
    d = Dims(128, 256, 256, 1)
    rng = np.random.default_rng(0)
    A = np.zeros((256, 128), dtype=np.uint8)
    B = np.zeros((256, 128), dtype=np.uint8)
    # scale bytes everywhere random, so reading the wrong byte gives a wrong number
    sa = rng.integers(0, 255, size=(1, 256, 4), dtype=np.uint8)
    sb = rng.integers(0, 255, size=(1, 256, 4), dtype=np.uint8)
    # token 5 (block 0): g[5, 3] = 1.5 * 2^3 = 12, x[5, 7] = -2 * 2^-1 = -1
    A[3, 5], sa.reshape(-1)[3 * 4 + 0] = 0x3C, 130
    B[7, 5], sb.reshape(-1)[7 * 4 + 0] = 0xC0, 126
    # token 40 (block 1): g[40, 3] = 0.5 * 2^0, x[40, 7] = 3 * 2^1 = 6, x[40, 9] = 1 * 2^0
    A[3, 40], sa.reshape(-1)[3 * 4 + 1] = 0x30, 127
    B[7, 40], sb.reshape(-1)[7 * 4 + 1] = 0x44, 128
    B[9, 40], sb.reshape(-1)[9 * 4 + 1] = 0x38, 127
    ref = grad_w(make(d, [0, 128], A, B, sa, sb))
    assert ref.shape == (1, 256, 256) and ref.dtype == np.float32
    want = np.zeros((1, 256, 256), dtype=np.float32)
    want[0, 3, 7] = 12 * -1 + 0.5 * 6  # -9
    want[0, 3, 9] = 0.5 * 1
    np.testing.assert_array_equal(ref, want)
    assert ref[0, 3, 7] == -9.0


def test_hand_two_experts_second_step() -> None:
    d = Dims(256, 256, 256, 2)
    A = np.zeros((256, 256), dtype=np.uint8)
    B = np.zeros((256, 256), dtype=np.uint8)
    sa = np.full((2, 256, 4), 127, dtype=np.uint8)
    sb = np.full((2, 256, 4), 127, dtype=np.uint8)
    fa, fb = sa.reshape(-1), sb.reshape(-1)
    # expert 0 (tokens 0..127): token 0: 1 * 1; token 127 (block 3): (-0.5 * 2) * (4 * 2^-1) = -2
    A[0, 0], B[255, 0] = 0x38, 0x38
    A[0, 127], fa[0 * 4 + 3] = 0xB0, 128
    B[255, 127], fb[255 * 4 + 3] = 0x48, 126
    # expert 1 (tokens 128..255, scale step 1):
    # token 130 (block 4, slot 0): g = 1.5 * 2^4 = 24, x[., 255] = -1 * 2^-2, x[., 3] = 1
    A[0, 130], fa[(1 * 256 + 0) * 4 + 0] = 0x3C, 131
    B[255, 130], fb[(1 * 256 + 255) * 4 + 0] = 0xB8, 125
    B[3, 130] = 0x38
    # token 255 (block 7, slot 3): g = 2^-9 (subnormal) * 2^13 = 16, x = 448 * 2^-10 = 0.4375
    A[0, 255], fa[(1 * 256 + 0) * 4 + 3] = 0x01, 140
    B[255, 255], fb[(1 * 256 + 255) * 4 + 3] = 0x7E, 117
    ref = grad_w(make(d, [0, 128, 256], A, B, sa, sb))
    want = np.zeros((2, 256, 256), dtype=np.float32)
    want[0, 0, 255] = 1 * 1 + (-1) * 2  # -1
    want[1, 0, 255] = 24 * -0.25 + 16 * 0.4375  # -6 + 7 = 1
    want[1, 0, 3] = 24
    np.testing.assert_array_equal(ref, want)
    # the same tokens in one expert sum to zero at [0, 255]
    one = grad_w(make(Dims(256, 256, 256, 1), [0, 256], A, B, sa, sb))
    assert one[0, 0, 255] == 0.0 and one[0, 0, 3] == 24.0


def test_hand_empty_experts_are_zero() -> None:
    d = Dims(128, 256, 256, 3)
    A = np.full((256, 128), 0x38, dtype=np.uint8)  # all ones
    B = np.full((256, 128), 0x40, dtype=np.uint8)  # all twos
    s = np.full((1, 256, 4), 127, dtype=np.uint8)
    ref = grad_w(make(d, [0, 0, 128, 128], A, B, s, s))
    assert (ref[0] == 0).all() and (ref[2] == 0).all()
    assert (ref[1] == 256.0).all()  # 128 tokens of 1 * 2


# ---------------------------------------------------------------- (2) independent float64 path


CASES = {  # name: (dims, offsets, seed)
    "uniform": (Dims(512, 256, 256, 4), [0, 128, 256, 384, 512], 10),
    "empty experts": (Dims(512, 256, 256, 4), [0, 0, 256, 256, 512], 11),
    "inner range": (Dims(512, 256, 256, 2), [128, 256, 384], 12),  # off[0] > 0, off[E] < M
    "one expert": (Dims(384, 256, 512, 4), [0, 0, 0, 384, 384], 13),
}


@pytest.mark.parametrize("case", list(CASES))
def test_matches_independent_float64(case: str) -> None:
    d, offsets, seed = CASES[case]
    p = random_problem(d, offsets, seed)
    ref = grad_w(p)
    exp, mag = expected_f64(p)
    assert ref.shape == (d.E, d.N, d.K) and ref.dtype == np.float32
    assert np.isfinite(exp).all()
    # float32 rounding (half an ulp, 2^-24 relative) + float64 summation (< 2^-44 of sum |products|)
    assert (np.abs(ref - exp) <= 2.0**-24 * np.abs(exp) + 2.0**-44 * mag).all()
    assert (ref == exp.astype(np.float32)).mean() > 0.999
    counts = np.diff(offsets)
    for e in np.flatnonzero(counts == 0):
        assert (ref[e] == 0).all()
    for e in np.flatnonzero(counts > 0):
        assert (ref[e] != 0).mean() > 0.99


def test_inner_range_ignores_outside_tokens() -> None:
    d, offsets, _ = CASES["inner range"]
    p = random_problem(d, offsets, seed=1)
    # garbage outside [off[0], off[E]): other codes, NaN codes, NaN scales
    A, B = p.A.copy(), p.B.copy()
    A[:, :128], A[:, 384:] = 0x7F, 0xFF
    B[:, :128] = 0x7E
    sa = p.scale_A.copy()
    sa[0], sa[3] = 255, 255  # steps 0 and 3 = tokens 0..127 and 384..511
    q = make(d, offsets, A, B, sa, p.scale_B)
    np.testing.assert_array_equal(grad_w(q), grad_w(p))
    # and both equal the sums over tokens 128..255 and 256..383 only
    a, b = deq(p.A, p.scale_A), deq(p.B, p.scale_B)
    e1 = np.einsum("nm,km->nk", a[:, 256:384], b[:, 256:384])
    np.testing.assert_allclose(grad_w(p)[1], e1, rtol=2.0**-23, atol=0)


def test_generated_problem_matches_independent_float64() -> None:
    p = generate(Dims(512, 256, 256, 3), Routing("zipf"), 17)
    exp, mag = expected_f64(p)
    ref = grad_w(p)
    assert (np.abs(ref - exp) <= 2.0**-24 * np.abs(exp) + 2.0**-44 * mag).all()


def test_float32_precision_within_fp32_summation_bound() -> None:
    # the float32 path rounds products and sums in fp32: within gamma_n * sum|products| of exact
    p = generate(Dims(512, 256, 256, 2), Routing(), 18)
    exp, mag = expected_f64(p)
    ref32 = grad_w(p, precision="float32")
    assert ref32.dtype == np.float32 and ref32.shape == (2, 256, 256)
    n = np.diff(p.offsets).astype(np.float64)[:, None, None]
    gamma = n * 2.0**-24 / (1 - n * 2.0**-24)
    err = np.abs(ref32 - exp)
    assert (err <= gamma * mag + 2.0**-24 * np.abs(exp)).all()
    assert err.max() > 0  # it is a different, rounded computation


def test_extreme_scales() -> None:
    """Scale bytes near 254 and near 0, where float64 is exact and float32 is not.

    Each expert's products span fewer than 53 bits (scale bytes vary by at most 2 within an expert,
    e4m3 values span 2^-9..448), so every float64 sum here is exact in any order.
    A float32 result (this reference's output type, or an fp32 kernel's accumulator) overflows to
    +-inf where |sum| > 2^128 and rounds to (signed) zero below 2^-150; an fp32 kernel that first
    dequantizes an operand with scale byte 254 already overflows (448 * 2^127 > fp32 max).
    """
    d = Dims(512, 256, 256, 4)
    rng = np.random.default_rng(8)
    A, B = random_codes(rng, (256, 512)), random_codes(rng, (256, 512))
    ea, eb = np.zeros((256, 16), dtype=np.uint8), np.zeros((256, 16), dtype=np.uint8)

    def fill(e8: np.ndarray, expert: int, lo: int, hi: int) -> None:
        e8[:, 4 * expert:4 * expert + 4] = rng.integers(lo, hi + 1, size=(e8.shape[0], 4))

    for expert, (a_lo, a_hi), (b_lo, b_hi) in [
        (0, (226, 228), (26, 28)),  # 2^100 * 2^-100: ordinary results
        (1, (226, 228), (226, 228)),  # 2^100 * 2^100: ~2^200
        (2, (26, 28), (26, 28)),  # 2^-100 * 2^-100: ~2^-200
        (3, (254, 254), (0, 0)),  # the extreme bytes: 2^127 * 2^-127
    ]:
        fill(ea, expert, a_lo, a_hi)
        fill(eb, expert, b_lo, b_hi)
    p = make(d, [0, 128, 256, 384, 512], A, B, pack_by_formula(ea), pack_by_formula(eb))
    exp, _ = expected_f64(p)
    with np.errstate(over="ignore", under="ignore"):
        ref = grad_w(p)
    assert np.isfinite(exp).all() and (exp != 0).mean() > 0.99
    # experts 0 and 3: exact value, exactly rounded to float32
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(ref[[0, 3]], exp[[0, 3]].astype(np.float32))
    assert 2.0**-20 < np.abs(exp[0]).max() < 2.0**40
    # expert 1: float64 holds ~2^200, float32 overflows to inf of the right sign
    assert np.abs(exp[1][exp[1] != 0]).min() > 2.0**150
    nz = exp[1] != 0
    assert np.isinf(ref[1][nz]).all()
    np.testing.assert_array_equal(np.sign(ref[1][nz]), np.sign(exp[1][nz]))
    # expert 2: float64 holds ~2^-200, float32 underflows to zero
    assert np.abs(exp[2]).max() < 2.0**-150
    assert (ref[2] == 0).all()


# ---------------------------------------------------------------- (3) NaN propagation


NAN_DIMS, NAN_OFF = Dims(512, 256, 256, 3), [128, 256, 256, 384]  # expert 1 empty; 0..127, 384.. outside


def nan_case(where: str) -> tuple[np.ndarray, np.ndarray]:
    """(baseline, result) after poisoning one spot."""
    p = random_problem(NAN_DIMS, NAN_OFF, seed=3)
    A, B, sa, sb = p.A.copy(), p.B.copy(), p.scale_A.copy(), p.scale_B.copy()
    N, K = NAN_DIMS.N, NAN_DIMS.K
    kind, pos = where.split("@")
    m = int(pos)
    if kind == "A7F":
        A[5, m] = 0x7F
    elif kind == "AFF":
        A[5, m] = 0xFF
    elif kind == "BFF":
        B[9, m] = 0xFF
    elif kind == "sA":
        sa.reshape(-1)[((m // 128) * N + 17) * 4 + (m // 32) % 4] = 255
    elif kind == "sB":
        sb.reshape(-1)[((m // 128) * K + 33) * 4 + (m // 32) % 4] = 255
    return grad_w(p), grad_w(make(NAN_DIMS, NAN_OFF, A, B, sa, sb))


@pytest.mark.parametrize(("where", "expert", "row", "col"), [
    ("A7F@130", 0, 5, None),
    ("AFF@255", 0, 5, None),  # last token of expert 0
    ("A7F@256", 2, 5, None),  # first token of expert 2 (expert 1 = [256, 256) is empty)
    ("AFF@383", 2, 5, None),
    ("BFF@300", 2, None, 9),
    ("BFF@128", 0, None, 9),
    ("sA@290", 2, 17, None),  # a whole 32-block of row 17 is NaN, even where its codes are 0
    ("sB@160", 0, None, 33),
])
def test_nan_hits_exactly_the_affected_outputs(where: str, expert: int, row: int | None,
                                               col: int | None) -> None:
    base, got = nan_case(where)
    want_nan = np.zeros(base.shape, dtype=bool)
    if row is not None:
        want_nan[expert, row, :] = True
    else:
        want_nan[expert, :, col] = True
    assert not np.isnan(base).any()
    np.testing.assert_array_equal(np.isnan(got), want_nan)
    np.testing.assert_array_equal(got[~want_nan], base[~want_nan])


@pytest.mark.parametrize("where", ["A7F@0", "AFF@127", "BFF@384", "BFF@511", "sA@100", "sB@400"])
def test_nan_outside_every_expert_changes_nothing(where: str) -> None:
    base, got = nan_case(where)
    np.testing.assert_array_equal(got, base)


def test_nan_scale_hits_zero_codes() -> None:
    # a NaN scale over a block whose codes are all zero still poisons the sums (0 * NaN = NaN)
    p = random_problem(NAN_DIMS, NAN_OFF, seed=4)
    A, sa = p.A.copy(), p.scale_A.copy()
    A[17, 288:320] = 0x00
    sa.reshape(-1)[((288 // 128) * 256 + 17) * 4 + (288 // 32) % 4] = 255
    got = grad_w(make(NAN_DIMS, NAN_OFF, A, p.B, sa, p.scale_B))
    assert np.isnan(got[2, 17]).all()
    assert np.isnan(got).sum() == 256


# ---------------------------------------------------------------- (4) grad_w(rows=...), (5) row_norms


def test_grad_w_rows_equals_grad_w_at_those_rows() -> None:
    # scale bytes 126..128: every float64 sum is exact, so any summation order gives the same bits
    d = Dims(512, 256, 256, 3)
    p = random_problem(d, [0, 128, 128, 512], seed=5, lo=126, hi=128)
    rows = np.array([0, 7, 100, 255, 7])
    full = grad_w(p)
    got = grad_w(p, rows)
    assert got.shape == (3, 5, 256) and got.dtype == np.float32
    np.testing.assert_array_equal(got, full[:, rows])
    assert (got[1] == 0).all()


def test_grad_w_rows_on_generated_problem() -> None:
    p = generate(Dims(512, 512, 256, 4), Routing("empty"), 6)
    rows = np.array([3, 511, 256, 0])
    np.testing.assert_array_max_ulp(grad_w(p, rows), grad_w(p)[:, rows], maxulp=1)


def test_row_norms_match_direct_norms() -> None:
    d = Dims(512, 256, 256, 3)
    offsets = [128, 256, 256, 512]
    p = random_problem(d, offsets, seed=7)
    a, b = deq(p.A, p.scale_A), deq(p.B, p.scale_B)
    na, nb = row_norms(p)
    assert na.shape == (3, 256) and nb.shape == (3, 256)
    for e in range(3):
        lo, hi = offsets[e], offsets[e + 1]
        np.testing.assert_allclose(na[e], np.linalg.norm(a[:, lo:hi], axis=1), rtol=1e-13, atol=0)
        np.testing.assert_allclose(nb[e], np.linalg.norm(b[:, lo:hi], axis=1), rtol=1e-13, atol=0)
    assert (na[1] == 0).all() and (nb[1] == 0).all()
    assert (na[0] > 0).all() and (nb[2] > 0).all()
    rows = np.array([9, 2, 200])
    na_r, nb_r = row_norms(p, rows)
    assert na_r.shape == (3, 3)
    np.testing.assert_array_equal(na_r, na[:, rows])
    np.testing.assert_array_equal(nb_r, nb)


def test_row_norms_hand_values() -> None:
    d = Dims(128, 256, 256, 1)
    A = np.zeros((256, 128), dtype=np.uint8)
    B = np.zeros((256, 128), dtype=np.uint8)
    A[4, 0], A[4, 1] = 0x40, 0x44  # 2 and 3 (scale 2^1): 4 and 6 -> sqrt(52)
    B[0, 100] = 0xB8  # -1, scale 2^-3
    sa = np.full((1, 256, 4), 128, dtype=np.uint8)
    sb = np.full((1, 256, 4), 124, dtype=np.uint8)
    na, nb = row_norms(make(d, [0, 128], A, B, sa, sb))
    assert na[0, 4] == np.sqrt(52.0) and na[0, 5] == 0
    assert nb[0, 0] == 0.125


def test_sampled_rows_per_expert_match_the_whole() -> None:
    p = generate(Dims(1024, 512, 256, 4), Routing("zipf"), 3)
    rows = sample_rows(p, 5, np.random.default_rng(0))
    assert rows.shape == (4, 5) and all(len(set(r)) == 5 and list(r) == sorted(r) for r in rows)
    assert len({tuple(r) for r in rows}) > 1  # each expert gets its own draw
    whole, (na, nb) = grad_w(p), row_norms(p)
    picked = np.take_along_axis(whole, rows[:, :, None], axis=1)
    np.testing.assert_array_equal(grad_w(p, rows), picked)
    sa, sb = row_norms(p, rows)
    np.testing.assert_allclose(sa, np.take_along_axis(na, rows, axis=1), rtol=1e-12)
    np.testing.assert_allclose(sb, nb, rtol=1e-12)
