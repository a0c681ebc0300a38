"""Extreme scales and NaN inputs through each kernel on a GPU (marked gpu), against numpy.

What each case does, as docs/kernel-contract.md settles it and docs/numerics.md documents it:
- 2^-127 x 2^127 (e8m0 0 and 254): exact in fp32, the reference kernel passes. The hopper kernel
  dequantizes to bf16 first, and an e4m3 value below 2^-3 times 2^-127 falls under bf16's normal
  range (2^-126), where bf16 keeps fewer bits than e4m3 has: it reports mismatches.
- 2^113 x 2^-113 (e8m0 240 and 14): every value and product is exact in fp32 and in bf16; passes.
- e4m3 subnormal codes only (0x01..0x07, both signs) in A: exact everywhere, passes.
- 2^-100 x 2^-100: products near 2^-182 flush to zero in fp32; numpy's exact sum rounds to zero
  in float32 as well, passes.
- 2^100 x 2^100: products overflow fp32 to +-inf and sums of both signs become NaN, while the
  exact reference rounds to +-inf: the check reports mismatches, as it should for an fp32 kernel.
- e8m0 255 and e4m3 NaN codes: NaN exactly where the reference is NaN, passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from wgrad_cli.backends.registry import backend
from wgrad_cli.config.kernelspec import KernelSpec
from wgrad_cli.config.options import KERNEL_TIMEOUT_S
from wgrad_cli.config.targets import Target
from wgrad_cli.device.launch import prepare, upload
from wgrad_cli.device.runtime import Runtime
from wgrad_cli.device.waiting import settle
from wgrad_cli.measure.check import compare
from wgrad_cli.problem.abi import Dims
from wgrad_cli.problem.generate import Problem, generate
from wgrad_cli.problem.reference import grad_w, row_norms
from wgrad_cli.problem.routing import Routing

pytestmark = pytest.mark.gpu
DIMS = Dims(512, 256, 256, 2)


def scaled(a: int, b: int) -> Callable[[Problem], Problem]:
    return lambda p: replace(p, scale_A=np.full_like(p.scale_A, a), scale_B=np.full_like(p.scale_B, b))


def subnormal_codes(p: Problem) -> Problem:
    rng = np.random.default_rng(5)
    return replace(p, A=(rng.integers(1, 8, p.A.shape) | rng.integers(0, 2, p.A.shape) << 7).astype(np.uint8))


def nan_scale(p: Problem) -> Problem:
    sa = p.scale_A.copy()
    sa[0, 3, 1] = 255  # row 3, tokens 32..63: expert 0
    return replace(p, scale_A=sa)


def nan_code(p: Problem) -> Problem:
    b = p.B.copy()
    b[7, 300] = 0x7F  # column 7, a token of expert 1
    return replace(p, B=b)


CASES = {  # name -> (transform, the kernels that pass the exact check)
    "scales 2^-127 x 2^127": (scaled(0, 254), {"reference"}),
    "scales 2^113 x 2^-113": (scaled(240, 14), {"reference", "hopper"}),
    "e4m3 subnormal codes": (subnormal_codes, {"reference", "hopper"}),
    "scales 2^-100 x 2^-100": (scaled(27, 27), {"reference", "hopper"}),
    "scales 2^100 x 2^100": (scaled(227, 227), set()),
    "e8m0 NaN scale": (nan_scale, {"reference", "hopper"}),
    "e4m3 NaN code": (nan_code, {"reference", "hopper"}),
}


@pytest.mark.parametrize("kernel", ["reference", "hopper"])
@pytest.mark.parametrize("case", CASES)
def test_edge_case(case: str, kernel: str, gpu: Runtime, gpu_target: Target, specs: dict[str, KernelSpec],
                   gpu_build: Callable[[str, Dims], Path]) -> None:
    if gpu_target.name not in specs[kernel].flags:
        pytest.skip(f"{kernel} has no {gpu_target} build")
    transform, passing = CASES[case]
    passes = kernel in passing
    p = transform(generate(DIMS, Routing(), seed=3))
    ref = grad_w(p)
    dev = upload(gpu, p)
    try:
        launch = prepare(gpu, gpu_build(kernel, DIMS), gpu_target, backend(gpu_target), specs[kernel], DIMS,
                         dev.args())
        gpu.fill(dev.pointers["C"], 0xFF, dev.output_bytes)
        launch()
        settle(gpu, gpu.event(), KERNEL_TIMEOUT_S, "the test's launches")
        out = dev.download()
    finally:
        dev.free()
    c = compare(out, ref, *row_norms(p), np.diff(p.offsets))
    assert c.ok == passes and c.unwritten == 0
    if "NaN" in case:
        assert np.isnan(ref).any() and c.nans == 0  # NaN where the reference has NaN, nowhere else
    if not passes:
        assert c.mismatches > 0
    if "2^100" in case:
        assert np.isinf(ref).any()  # the exact sums overflow fp32: the reference rounds them to +-inf
