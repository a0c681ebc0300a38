"""Random MXFP8 wgrad problems in the ABI's exact layouts, reproducible from a seed.

g and x are zero-mean normals times a power of two drawn per (row, 32-block), so block scales
differ across rows and blocks over many octaves and outputs take both signs. The spread is
kept where every product and sum stays inside fp32's normal range (docs/kernel-contract.md,
"Edge cases"), so a correct fp32 kernel is exact up to summation order.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from wgrad_cli.problem.abi import BLOCK, Dims
from wgrad_cli.problem.mxfp8 import pack_scales, quantize
from wgrad_cli.problem.routing import Routing

OCTAVES = 8  # block magnitudes span 2^-8 .. 2^8 around N(0, 1)
# what a problem's values are drawn from: random (from the seed, as above) or every value the same, so
# that the data's effect on a power-limited device's clock and time can be seen (docs/timing.md)
PATTERNS: dict[str, float | None] = {"random": None, "zeros": 0.0, "ones": 1.0}
CHUNK_BYTES = 32 << 20  # generate this much float32 at a time: bounded memory, cache-friendly


@dataclass(frozen=True)
class Problem:
    dims: Dims
    offsets: np.ndarray  # int32 (E+1,)
    A: np.ndarray  # uint8 e4m3 (N, M) = g^T
    B: np.ndarray  # uint8 e4m3 (K, M) = x^T
    scale_A: np.ndarray  # uint8 e8m0 (M/128, N, 4)
    scale_B: np.ndarray  # uint8 e8m0 (M/128, K, 4)
    seed: int
    quantization: str

    @property
    def tokens(self) -> int:
        return int(self.offsets[-1] - self.offsets[0])


def random_operand(rows: int, M: int, rule: str,
                   seed: np.random.SeedSequence) -> tuple[np.ndarray, np.ndarray]:
    """(rows, M) quantized values and (rows, M/32) e8m0 bytes.

    Generated in row chunks of about CHUNK_BYTES of float32, each from its own generator spawned
    from `seed`, on every core (numpy's generators and ufuncs release the GIL): the bytes depend
    on the seed and the shape only, never on the number of threads.
    """
    q = np.empty((rows, M), dtype=np.uint8)
    e8 = np.empty((rows, M // BLOCK), dtype=np.uint8)
    step = max(1, CHUNK_BYTES // (4 * M))
    starts = range(0, rows, step)

    def chunk(r0: int, chunk_seed: np.random.SeedSequence) -> None:
        rng, r1 = np.random.default_rng(chunk_seed), min(rows, r0 + step)
        values = rng.standard_normal((r1 - r0, M), dtype=np.float32)
        octave = rng.integers(-OCTAVES, OCTAVES + 1, size=(r1 - r0, M // BLOCK, 1), dtype=np.int32)
        values.reshape(r1 - r0, M // BLOCK, BLOCK)[...] *= np.ldexp(np.float32(1), octave)
        q[r0:r1], e8[r0:r1] = quantize(values, rule)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(chunk, starts, seed.spawn(len(starts))))
    return q, e8


def generate(dims: Dims, routing: Routing, seed: int, quantization: str = "ocp") -> Problem:
    """A fresh problem; the same (dims, routing, seed, quantization) always gives the same bytes."""
    route_seed, a_seed, b_seed = np.random.SeedSequence(seed).spawn(3)
    offsets = np.array(routing.offsets_for(dims.M, dims.E, np.random.default_rng(route_seed)), dtype=np.int32)
    A, ea = random_operand(dims.N, dims.M, quantization, a_seed)
    B, eb = random_operand(dims.K, dims.M, quantization, b_seed)
    return Problem(dims, offsets, A, B, pack_scales(ea), pack_scales(eb), seed, quantization)


def patterned(p: Problem, pattern: str) -> Problem:
    """`p` with every value of both operands set to `pattern`'s constant and quantized as the generator
    quantizes (the routing kept); `p` itself for random."""
    value = PATTERNS[pattern]
    if value is None:
        return p

    def constant(rows: int) -> tuple[np.ndarray, np.ndarray]:
        q, e8 = quantize(np.full((rows, p.dims.M), value, dtype=np.float32), p.quantization)
        return q, pack_scales(e8)

    (A, scale_A), (B, scale_B) = constant(p.dims.N), constant(p.dims.K)
    return Problem(p.dims, p.offsets, A, B, scale_A, scale_B, p.seed, p.quantization)
