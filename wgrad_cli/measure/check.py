"""Comparing a kernel's bf16 grad_w with the exact reference.

Tolerance, per element (docs/numerics.md): one bf16 ulp of the exact value (covers both
round-to-nearest and the upstream kernel's truncation) plus the worst-case error of summing
the expert's n products in fp32 in any order, gamma_n * sum|a_m b_m| with
gamma_n = n u / (1 - n u), u = 2^-24, and sum|a_m b_m| bounded by ||a_n|| ||b_k||.
A float32 reference carries that summation error too, so the term is then allowed twice; a
reference kernel's bf16 output (shapes too large for numpy) carries it and its own rounding, so
both terms are then allowed twice.
NaN is expected exactly where the reference is NaN. Outputs still holding the poison pattern
written before the launch were never written by the kernel.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from wgrad_cli.results.records import Errors

BF16 = np.dtype(ml_dtypes.bfloat16)
POISON = np.uint16(0xFFFF)  # a NaN no kernel stores (canonical NaN is 0x7FC0)
U32 = 2.0**-24
BF16_MIN_ULP = 2.0**-133
REFERENCES = {"float64": (1, 1), "float32": (1, 2), "bf16": (2, 2)}  # reference kind -> (ulps, sums) allowed


def bf16_ulp(x: np.ndarray) -> np.ndarray:
    """Spacing of bf16 numbers at |x| (the subnormal spacing below 2^-126)."""
    _, exp = np.frexp(np.abs(x).astype(np.float64))  # |x| = f * 2^exp, f in [0.5, 1); frexp(0) = (0, 0)
    ulp: np.ndarray = np.where(x == 0, BF16_MIN_ULP, np.maximum(np.ldexp(1.0, exp - 8), BF16_MIN_ULP))
    return ulp


def gamma(n: np.ndarray) -> np.ndarray:
    """Worst-case relative error factor of an n-term fp32 sum."""
    nu = n * U32
    return nu / (1 - nu)


def errors(elements: int, max_abs_error: float, max_rel_row_error: float, diff_norm: float, ref_norm: float,
           mismatches: int, nans: int, unwritten: int, ok: bool) -> Errors:
    """The figures as a record holds them, with ||out - ref|| / ||ref||."""
    if ref_norm:
        rel_frobenius = diff_norm / ref_norm
    else:
        rel_frobenius = 0.0 if diff_norm == 0 else float("inf")
    return Errors(elements, max_abs_error, max_rel_row_error, diff_norm, ref_norm, mismatches, nans,
                  unwritten, ok, rel_frobenius)


def combine(parts: list[Errors]) -> Errors:
    """One comparison of the parts together (e.g. of every expert)."""
    return errors(
        elements=sum(c.elements for c in parts),
        max_abs_error=max((c.max_abs_error for c in parts), default=0.0),
        max_rel_row_error=max((c.max_rel_row_error for c in parts), default=0.0),
        diff_norm=float(np.hypot.reduce([c.diff_norm for c in parts])) if parts else 0.0,
        ref_norm=float(np.hypot.reduce([c.ref_norm for c in parts])) if parts else 0.0,
        mismatches=sum(c.mismatches for c in parts), nans=sum(c.nans for c in parts),
        unwritten=sum(c.unwritten for c in parts), ok=all(c.ok for c in parts))


@np.errstate(invalid="ignore")  # inf - inf where both overflowed: masked out below
def compare(out_bits: np.ndarray, ref: np.ndarray, norm_a: np.ndarray, norm_b: np.ndarray,
            tokens: np.ndarray, reference: str = "float64") -> Errors:
    """out_bits: uint16 bf16 (E, R, K); ref: float32 (E, R, K); norms (E, R) and (E, K); tokens (E,).

    `reference` says what `ref` is: numpy in float64 or float32, or a reference kernel's bf16 output.
    """
    out = out_bits.view(BF16).astype(np.float64)
    exact = ref.astype(np.float64)
    unwritten = out_bits == POISON
    ref_nan, out_nan = np.isnan(exact), np.isnan(out) & ~unwritten
    both = ~ref_nan & ~np.isnan(out)
    err = np.where(both & (out != exact), np.abs(out - exact), 0.0)  # equal infinities are no error
    ulps, sums = REFERENCES[reference]
    bound = sums * gamma(tokens.astype(np.float64))[:, None, None] * norm_a[:, :, None] * norm_b[:, None, :]
    over = both & ~(err <= ulps * bf16_ulp(exact) + bound)
    mismatches = int(over.sum() + (ref_nan & ~out_nan & ~unwritten).sum() + (out_nan & ~ref_nan).sum())
    row_scale = np.max(np.where(ref_nan, 0.0, np.abs(exact)), axis=2, keepdims=True)
    rel_row = np.divide(err, row_scale, out=np.where(err > 0, np.inf, 0.0), where=row_scale > 0)
    finite = both & np.isfinite(exact)
    return errors(
        elements=int(out_bits.size),
        max_abs_error=float(err.max(initial=0.0)),
        max_rel_row_error=float(rel_row.max(initial=0.0)),
        diff_norm=float(np.linalg.norm((out - exact)[finite])),
        ref_norm=float(np.linalg.norm(exact[finite])),
        mismatches=mismatches,
        nans=int((out_nan & ~ref_nan).sum()),
        unwritten=int(unwritten.sum()),
        ok=mismatches == 0 and not unwritten.any(),
    )
