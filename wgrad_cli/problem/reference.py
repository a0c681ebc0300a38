"""The exact numpy reference for grad_w, whole or for sampled rows.

Operands are dequantized exactly (an e4m3 value times a power of two) and multiplied by BLAS.
With float64 (the default) products are exact and the sum's error is below 2^-40 of the sum
of |products| for any M the ABI allows; rounded once to float32, the result is the exact value
to fp32 precision, 2^16 times finer than the bf16 ulp being checked. float32 is about twice as
fast, and its sum carries the same worst-case error as a kernel's fp32 accumulation: the
comparison then allows that error twice (check.py).
Work goes expert by expert and in row chunks, so memory beyond the result stays near one
expert's dequantized operands, reused from expert to expert.
"""

from __future__ import annotations

import numpy as np

from wgrad_cli.problem.abi import STEP
from wgrad_cli.problem.generate import Problem
from wgrad_cli.problem.mxfp8 import dequantize, unpack_scales

ROWS = 2048  # grad_w rows per matmul: bounds a float64 temporary to 2048 x K
PRECISIONS = {"float64": np.float64, "float32": np.float32}


def expert_operands(p: Problem, e: int, rows: np.ndarray | None = None, dtype: type = np.float64,
                    buffers: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Dequantized (rows of A, all of B) over expert e's tokens; into `buffers` (flat) when given."""
    lo, hi = int(p.offsets[e]), int(p.offsets[e + 1])
    a_rows = slice(None) if rows is None else rows
    qa, qb = p.A[a_rows, lo:hi], p.B[:, lo:hi]
    into = [None, None] if buffers is None else [buf[:q.size].reshape(q.shape)
                                                 for buf, q in zip(buffers, (qa, qb))]
    a = dequantize(qa, unpack_scales(p.scale_A[lo // STEP:hi // STEP, a_rows]), dtype, into[0])
    b = dequantize(qb, unpack_scales(p.scale_B[lo // STEP:hi // STEP]), dtype, into[1])
    return a, b


@np.errstate(over="ignore")
def grad_w(p: Problem, rows: np.ndarray | None = None, precision: str = "float64") -> np.ndarray:
    """float32 (E, N, K): grad_w[e] = sum over expert e's tokens of g[m, n] * x[m, k].

    With `rows`, only those grad_w rows: indices into N, the same for every expert (R,) or one
    set per expert (E, R) as sample_rows draws them; the result is then (E, R, K).
    Sums beyond fp32's range become +-inf, and below it 0, as rounding the exact value does.
    """
    d, dtype = p.dims, PRECISIONS[precision]
    out = np.zeros((d.E, d.N if rows is None else rows.shape[-1], d.K), dtype=np.float32)
    # Fresh memory is slow to touch: one operand pair and one float64 block serve every expert.
    most = int(np.diff(p.offsets).max(initial=0))
    buffers = (np.empty(out.shape[1] * most, dtype=dtype), np.empty(d.K * most, dtype=dtype))
    wide = None if dtype is np.float32 else np.empty((min(ROWS, out.shape[1]), d.K), dtype=dtype)
    for e in range(d.E):
        if p.offsets[e + 1] > p.offsets[e]:
            a, b = expert_operands(p, e, _of_expert(rows, e), dtype, buffers)
            for n0 in range(0, len(a), ROWS):
                block = out[e, n0:n0 + ROWS]
                if wide is None:
                    np.matmul(a[n0:n0 + ROWS], b.T, out=block)
                else:
                    np.matmul(a[n0:n0 + ROWS], b.T, out=wide[:len(block)])
                    block[...] = wide[:len(block)]  # the one rounding, float64 -> float32
    return out


def sample_rows(p: Problem, count: int, rng: np.random.Generator) -> np.ndarray:
    """(E, count) sorted distinct random grad_w rows per expert, for shapes too large to check whole."""
    count = min(count, p.dims.N)
    return np.sort(np.stack([rng.choice(p.dims.N, size=count, replace=False) for _ in range(p.dims.E)]),
                   axis=1)


def _of_expert(rows: np.ndarray | None, e: int) -> np.ndarray | None:
    return rows if rows is None or rows.ndim == 1 else rows[e]


def row_norms(p: Problem, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Euclidean norms over each expert's tokens: of A's rows (E, N or R) and B's rows (E, K).

    ||a_n|| * ||b_k|| bounds sum |a_n,m * b_k,m| (Cauchy-Schwarz), which bounds fp32 summation error.
    """
    d = p.dims
    na, nb = np.zeros((d.E, d.N if rows is None else rows.shape[-1])), np.zeros((d.E, d.K))
    for e in range(d.E):
        if p.offsets[e + 1] > p.offsets[e]:
            a, b = expert_operands(p, e, _of_expert(rows, e))
            na[e], nb[e] = np.sqrt(np.einsum("ij,ij->i", a, a)), np.sqrt(np.einsum("ij,ij->i", b, b))
    return na, nb
