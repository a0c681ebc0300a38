"""Scaled and dense MFMA on the emulator against numpy models written from the operand layouts:
the CDNA4 ISA's dense layouts (lane l holds row/column l % M; lane group l // M holds consecutive
k; D register i of lane l is row 4*(64/N)*(i//4) + 4*(l//N) + i%4, column l % N) and, where the
ISA text is silent on the scaled MFMA, the placement docs/emulator.md records (8-bit
operands: k 16g..16g+15 in registers 0-3 and K/2+16g.. in registers 4-7 of lane group g; the
scale of 32-wide k-block b of row r in lane r + M*b, byte {op_sel_hi, op_sel}).

The models map each (row, k) to its lane and byte, the inverse of how the emulator is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest
from emukernels import assert_uses, compile_hip, run

from wgrad_cli.emu.ops import matrix as matrix_ops
from wgrad_cli.errors import DriverError

FORMATS = {0: ml_dtypes.float8_e4m3fn, 1: ml_dtypes.float8_e5m2}
SCALED = """
typedef int v8i __attribute__((ext_vector_type(8)));
typedef float vf __attribute__((ext_vector_type({regs})));
KERNEL void mfma_scaled(const v8i *a, const v8i *b, const int *sa, const int *sb, vf *d) {{
  int l = tid();
  d[l] = __builtin_amdgcn_mfma_scale_f32_{m}x{m}x{k}_f8f6f4(a[l], b[l], d[l], {cbsz}, {blgp}, {opa}, sa[l],
                                                            {opb}, sb[l]);
}}
"""


def scaled_image(m: int, cbsz: int, blgp: int, opa: int, opb: int) -> bytes:
    k = 32 * 64 // m
    return compile_hip(SCALED.format(regs=m * m // 64, m=m, k=k, cbsz=cbsz, blgp=blgp, opa=opa, opb=opb))


def lane_and_byte(m: int, k: int, row: int, kk: int) -> tuple[int, int]:
    """Which lane and which of its 32 operand bytes hold (row, kk) of an 8-bit scaled-MFMA operand."""
    half, rest = divmod(kk, k // 2)
    group, j = divmod(rest, 16)
    return row + m * group, 16 * half + j


def model_scaled(m: int, a: np.ndarray, b: np.ndarray, sa: np.ndarray, sb: np.ndarray, c: np.ndarray,
                 cbsz: int, blgp: int, opa: int, opb: int) -> np.ndarray:
    """D as (64 lanes, registers) float32 from per-lane operand bytes (64, 32), scale words
    (64,) and C (64, regs)."""
    k = 32 * 64 // m
    amat, bmat = np.zeros((m, k)), np.zeros((m, k))
    for r in range(m):
        for kk in range(k):
            lane, byte = lane_and_byte(m, k, r, kk)
            amat[r, kk] = float(a[lane, byte:byte + 1].view(FORMATS[cbsz])[0])
            bmat[r, kk] = float(b[lane, byte:byte + 1].view(FORMATS[blgp])[0])

    def scale(words: np.ndarray, opsel: int, r: int, block: int) -> float:
        # opsel = {op_sel_hi, op_sel} as a 2-bit number
        code = (int(words[r + m * block]) >> (8 * opsel)) & 0xFF
        return float("nan") if code == 0xFF else 2.0 ** (code - 127)

    regs = m * m // 64
    cmat = np.zeros((m, m))
    for lane in range(64):
        for i in range(regs):
            cmat[4 * (64 // m) * (i // 4) + 4 * (lane // m) + i % 4, lane % m] = c[lane, i]
    d = cmat.copy()
    with np.errstate(all="ignore"):
        for blk in range(k // 32):
            part = amat[:, 32 * blk: 32 * blk + 32] @ bmat[:, 32 * blk: 32 * blk + 32].T
            fa = np.array([scale(sa, opa, r, blk) for r in range(m)])
            fb = np.array([scale(sb, opb, col, blk) for col in range(m)])
            d += part * fa[:, None] * fb[None, :]
    rows = [[d[4 * (64 // m) * (i // 4) + 4 * (lane // m) + i % 4, lane % m] for i in range(regs)]
            for lane in range(64)]
    with np.errstate(over="ignore"):
        return np.array(rows).astype(np.float32)


def operand_bytes(rng: np.random.Generator, fmt: int) -> np.ndarray:
    """Random finite codes of the format, (64 lanes, 32 bytes)."""
    codes = rng.integers(0, 256, size=(64, 32), dtype=np.uint8)
    values = codes.view(FORMATS[fmt]).astype(np.float64)
    return np.where(np.isfinite(values), codes, 0x38).astype(np.uint8)


def scale_words(rng: np.random.Generator, low: int = 118, high: int = 136) -> np.ndarray:
    return rng.integers(low, high, size=(64, 4), dtype=np.uint8).view("<u4")[:, 0].copy()


Case = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def case(seed: int, m: int, cbsz: int, blgp: int) -> Case:
    rng = np.random.default_rng(seed)
    regs = m * m // 64
    return (operand_bytes(rng, cbsz), operand_bytes(rng, blgp), scale_words(rng), scale_words(rng),
            rng.standard_normal((64, regs)).astype(np.float32))


def emulate(m: int, cbsz: int, blgp: int, opa: int, opb: int, data: Case) -> np.ndarray:
    a, b, sa, sb, c = data
    image = scaled_image(m, cbsz, blgp, opa, opb)
    *_, d = run(image, [a, b, sa, sb, c.copy()])
    return d


def check(m: int, cbsz: int, blgp: int, opa: int, opb: int, data: Case) -> None:
    got = emulate(m, cbsz, blgp, opa, opb, data)
    want = model_scaled(m, *data, cbsz, blgp, opa, opb)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=0, equal_nan=True)


@pytest.mark.parametrize("m,cbsz,blgp,opa,opb", [
    (16, 0, 0, 0, 0), (16, 1, 1, 3, 2), (16, 0, 1, 1, 3), (16, 1, 0, 2, 1),
    (32, 0, 0, 0, 0), (32, 1, 0, 3, 1), (32, 0, 1, 2, 2),
])
def test_scaled_mfma_formats_and_scale_bytes(m: int, cbsz: int, blgp: int, opa: int, opb: int) -> None:
    image = scaled_image(m, cbsz, blgp, opa, opb)
    assert_uses(image, f"v_mfma_scale_f32_{m}x{m}x{32 * 64 // m}_f8f6f4")
    check(m, cbsz, blgp, opa, opb, case(m * 100 + cbsz * 10 + blgp, m, cbsz, blgp))


@pytest.mark.parametrize("m", [16, 32])
def test_scaled_mfma_nan_and_extreme_scales(m: int) -> None:
    a, b, sa, sb, c = case(7 + m, m, 0, 1)
    bytes_a, bytes_b = sa.view(np.uint8).reshape(64, 4), sb.view(np.uint8).reshape(64, 4)
    bytes_a[3, 1] = 0xFF  # NaN scale: row 3's first k-block, byte 1 (op_sel = 1)
    bytes_a[m + 5, 1] = 254  # 2^127 on row 5's second block ...
    bytes_b[m + 5, 2] = 254  # ... with 2^127 on column 5's: overflows to inf where products are nonzero
    bytes_a[9, 1], bytes_b[9, 2] = 0, 0  # 2^-127 * 2^-127: underflows fp32 but not the exact sum
    data = (a, b, sa, sb, c)
    check(m, 0, 1, 1, 2, data)
    got = emulate(m, 0, 1, 1, 2, data)
    assert np.isnan(got).any() and np.isinf(got).any()


def test_a_wrong_layout_or_scale_rule_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison catches the emulator errors seen elsewhere: k read contiguously, or one
    lane's scale applied to the whole 128-long dot."""
    data = case(3, 16, 0, 0)
    check(16, 0, 0, 0, 0, data)
    real_operand = matrix_ops._operand

    def contiguous(reg: int, agpr: bool, rows: int, k: int, bits: int, kind: str, table: np.ndarray | None,
                   split: bool) -> matrix_ops.Operand:
        return real_operand(reg, agpr, rows, k, bits, kind, table, False)
    monkeypatch.setattr(matrix_ops, "_operand", contiguous)
    with pytest.raises(AssertionError):
        check(16, 0, 0, 0, 0, data)
    monkeypatch.setattr(matrix_ops, "_operand", real_operand)
    real_scales = matrix_ops._scales

    def one_scale(inst: object, m: int, n: int, k: int) -> Callable[..., tuple[np.ndarray, ...]]:
        factors = real_scales(inst, m, n, k)  # the lane's first k-block factor for all blocks
        return lambda b: tuple(np.repeat(f[..., :1], f.shape[-1], axis=-1) for f in factors(b))
    monkeypatch.setattr(matrix_ops, "_scales", one_scale)
    with pytest.raises(AssertionError):
        check(16, 0, 0, 0, 0, data)


DENSE = """
typedef __bf16 v8bf __attribute__((ext_vector_type(8)));
typedef float v{regs}f __attribute__((ext_vector_type({regs})));
KERNEL void mfma_dense(const v8bf *a, const v8bf *b, v{regs}f *d) {{
  int l = tid();
  d[l] = __builtin_amdgcn_mfma_f32_{m}x{m}x{k}_bf16(a[l], b[l], d[l], 0, 0, 0);
}}
"""


@pytest.mark.parametrize("m", [16, 32])
def test_dense_bf16_mfma(m: int) -> None:
    k = 8 * 64 // m
    regs = m * m // 64
    image = compile_hip(DENSE.format(regs=regs, m=m, k=k))
    assert_uses(image, f"v_mfma_f32_{m}x{m}x{k}_bf16")
    rng = np.random.default_rng(m)
    a = rng.standard_normal((64, 8)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((64, 8)).astype(ml_dtypes.bfloat16)
    c = rng.standard_normal((64, regs)).astype(np.float32)
    *_, d = run(image, [a.view(np.uint16), b.view(np.uint16), c.copy()])
    amat, bmat, cmat = np.zeros((m, k)), np.zeros((m, k)), np.zeros((m, m))
    for row in range(m):
        for kk in range(k):  # lane group kk // 8 holds k 8g..8g+7 of row `row`
            amat[row, kk] = float(a[row + m * (kk // 8), kk % 8])
            bmat[row, kk] = float(b[row + m * (kk // 8), kk % 8])
    for lane in range(64):
        for i in range(regs):
            cmat[4 * (64 // m) * (i // 4) + 4 * (lane // m) + i % 4, lane % m] = c[lane, i]
    full = amat @ bmat.T + cmat
    want = np.array([[full[4 * (64 // m) * (i // 4) + 4 * (lane // m) + i % 4, lane % m] for i in range(regs)]
                     for lane in range(64)], dtype=np.float32)
    np.testing.assert_allclose(d, want, rtol=2e-6)


PARTIAL = """
typedef __bf16 v8bf __attribute__((ext_vector_type(8)));
typedef float v4f __attribute__((ext_vector_type(4)));
KERNEL void mfma_partial(const v8bf *a, const v8bf *b, v4f *d, const int *on) {
  int l = gid() * 64 + tid();
  v4f acc = d[l];
  if (on[l]) acc = __builtin_amdgcn_mfma_f32_16x16x32_bf16(a[l], b[l], acc, 0, 0, 0);
  d[l] = acc;
}
"""


@pytest.mark.parametrize("off", [None, 5])
def test_mfma_with_lanes_off_in_exec_stops_the_run(off: int | None) -> None:
    """The ISA leaves an MFMA under a partial EXEC undefined: one line naming it, never a result."""
    image = compile_hip(PARTIAL)
    assert_uses(image, "v_mfma_f32_16x16x32_bf16")
    on = np.ones(128, np.int32)
    operands = [np.zeros((128, 8), np.uint16), np.zeros((128, 8), np.uint16), np.ones((128, 4), np.float32)]
    if off is None:  # every lane of both waves on: it runs (the values are test_dense_bf16_mfma's concern)
        *_, d, _ = run(image, [*operands, on], grid=2)
        assert (d == 1).all()
        return
    on[64 + off] = 0  # one lane of the second wave
    with pytest.raises(DriverError) as caught:
        run(image, [*operands, on], grid=2)
    assert len(caught.value.lines) == 1
    assert re.search(r"v_mfma_f32_16x16x32_bf16 at offset 0x[0-9a-f]+: v_mfma_f32_16x16x32_bf16 with lanes "
                     r"off in "
                     "EXEC is not implemented", caught.value.lines[0]), caught.value.lines
