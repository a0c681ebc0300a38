"""The exact numpy reference for grad_w, whole or for sampled rows.

Operands are dequantized exactly to float64 (an e4m3 value times a power of two), multiplied
and summed in float64 by BLAS, then rounded once to float32. Products are exact; the float64
sum's error is below 2^-40 of the sum of |products| for any M the ABI allows, so the float32
result is the exact value to fp32 precision, 2^16 times finer than the bf16 ulp being checked.
Work goes expert by expert and in column chunks, so memory beyond the result stays near one
expert's dequantized operands.
"""

from __future__ import annotations

import numpy as np

from wgrad_cli.mxfp8 import dequantize, unpack_scales
from wgrad_cli.problem import Problem
from wgrad_cli.abi import BLOCK

COLUMNS = 2048  # grad_w columns per float64 matmul: bounds the float64 temporary to N x 2048


def expert_operands(p: Problem, e: int, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Dequantized float64 (rows of A, all of B) over expert e's tokens."""
    lo, hi = int(p.offsets[e]), int(p.offsets[e + 1])
    sa, sb = unpack_scales(p.scale_A), unpack_scales(p.scale_B)
    a_rows = slice(None) if rows is None else rows
    a = dequantize(p.A[a_rows, lo:hi], sa[a_rows, lo // BLOCK:hi // BLOCK])
    b = dequantize(p.B[:, lo:hi], sb[:, lo // BLOCK:hi // BLOCK])
    return a, b


def grad_w(p: Problem) -> np.ndarray:
    """float32 (E, N, K): grad_w[e] = sum over expert e's tokens of g[m, n] * x[m, k]."""
    d = p.dims
    out = np.zeros((d.E, d.N, d.K), dtype=np.float32)
    for e in range(d.E):
        if p.offsets[e + 1] > p.offsets[e]:
            a, b = expert_operands(p, e)
            for k0 in range(0, d.K, COLUMNS):
                out[e, :, k0:k0 + COLUMNS] = a @ b[k0:k0 + COLUMNS].T
    return out


def grad_w_rows(p: Problem, rows: np.ndarray) -> np.ndarray:
    """float32 (E, len(rows), K): the same for the grad_w rows `rows` (indices into N) of every expert."""
    d = p.dims
    out = np.zeros((d.E, len(rows), d.K), dtype=np.float32)
    for e in range(d.E):
        if p.offsets[e + 1] > p.offsets[e]:
            a, b = expert_operands(p, e, rows)
            out[e] = a @ b.T
    return out


def row_norms(p: Problem, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Euclidean norms over each expert's tokens: of A's rows (E, N or len(rows)) and B's rows (E, K).

    ||a_n|| * ||b_k|| bounds sum |a_n,m * b_k,m| (Cauchy-Schwarz), which bounds fp32 summation error.
    """
    d = p.dims
    n = d.N if rows is None else len(rows)
    na, nb = np.zeros((d.E, n)), np.zeros((d.E, d.K))
    for e in range(d.E):
        if p.offsets[e + 1] > p.offsets[e]:
            a, b = expert_operands(p, e, rows)
            na[e], nb[e] = np.sqrt(np.einsum("ij,ij->i", a, a)), np.sqrt(np.einsum("ij,ij->i", b, b))
    return na, nb
