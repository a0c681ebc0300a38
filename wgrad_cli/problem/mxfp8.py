"""MXFP8 (OCP MX v1.0) blocks: E4M3FN values with one E8M0 scale per 32 elements of a row.

Codecs are ml_dtypes' (float8_e4m3fn, float8_e8m0fnu); this module only adds the block
logic: choosing a block's scale, quantizing, and the ABI's scale-word packing.
"""

from __future__ import annotations

from functools import cache

import ml_dtypes
import numpy as np

from wgrad_cli.problem.abi import BLOCK

E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)
E4M3_MAX = float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max)  # 448
E4M3_EMAX = 8  # exponent of 448 = 1.75 * 2^8
E8M0_BIAS = 127
E8M0_NAN = 255
RULES = {
    "ocp": E4M3_EMAX,  # OCP v1.0: block max lands in [256, 512), saturating at 448
    "upstream": 0,  # tinygrad's transpose-quantize: block max lands in [1, 2)
}


def block_exponents(amax: np.ndarray, rule: str) -> np.ndarray:
    """e8m0 byte per block from its max |value|: floor(log2(amax)) - emax + 127, clamped to [0, 254]."""
    # inf: e8 254
    finite = np.maximum(np.nan_to_num(amax.astype(np.float64), nan=0.0, posinf=2.0**1000), 1e-38)
    _, exp = np.frexp(finite)  # amax = f * 2^exp, f in [0.5, 1)
    e8: np.ndarray = np.clip(exp.astype(np.int32) - 1 - RULES[rule] + E8M0_BIAS, 0,
                             E8M0_NAN - 1).astype(np.uint8)
    return e8


def quantize(values: np.ndarray, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """(rows, M) float32 -> e4m3 bytes (rows, M) and e8m0 bytes (rows, M/32); saturating.

    Works in place on `values` to keep peak memory at one copy of the input.
    """
    rows, m = values.shape
    blocks = values.reshape(rows, m // BLOCK, BLOCK)
    amax = np.maximum(blocks.max(axis=2), -blocks.min(axis=2))
    e8 = block_exponents(amax, rule)
    blocks *= np.ldexp(np.float32(1), E8M0_BIAS - e8.astype(np.int32))[:, :, None]
    np.clip(values, -E4M3_MAX, E4M3_MAX, out=values)
    return values.astype(E4M3).view(np.uint8), e8


def pack_scales(e8: np.ndarray) -> np.ndarray:
    """(rows, M/32) e8m0 bytes -> the ABI's (M/128, rows, 4): byte ((m/128)*rows + r)*4 + (m/32)%4."""
    rows, blocks = e8.shape
    return np.ascontiguousarray(e8.reshape(rows, blocks // 4, 4).transpose(1, 0, 2))


def unpack_scales(packed: np.ndarray) -> np.ndarray:
    """Inverse of pack_scales: (M/128, rows, 4) -> (rows, M/32)."""
    steps, rows, _ = packed.shape
    e8: np.ndarray = packed.transpose(1, 0, 2).reshape(rows, steps * 4)
    return e8


@cache
def _values(code: np.dtype, dtype: type) -> np.ndarray:
    """ml_dtypes' value of each of the 256 byte codes, as `dtype`: a lookup beats a cast by a third."""
    table: np.ndarray = np.arange(256, dtype=np.uint8).view(code).astype(dtype)
    return table


def dequantize(q: np.ndarray, e8: np.ndarray, dtype: type = np.float64,
               out: np.ndarray | None = None) -> np.ndarray:
    """e4m3 bytes (rows, L) with e8m0 bytes (rows, L/32) -> exact values; NaN for NaN codes.

    `out` (rows, L) of `dtype` receives the values, to reuse memory across calls.
    """
    rows, length = q.shape
    out = np.take(_values(E4M3, dtype), q, out=out)
    out.reshape(rows, length // BLOCK, BLOCK)[...] *= np.take(_values(E8M0, dtype), e8)[:, :, None]
    return out


def element_range(*operands: np.ndarray) -> tuple[float, float]:
    """The least and greatest value of the e4m3 bytes of `operands` (NaN codes left out; (0, 0) for none)."""
    present = sum(np.bincount(q.ravel(), minlength=256) for q in operands) > 0
    values = _values(E4M3, np.float64)[present]
    values = values[~np.isnan(values)]
    return (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
