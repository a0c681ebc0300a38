"""How exactly Hopper's fp8 tensor cores sum one 32-token block: the precision an fp8-wgmma MXFP8
design (per-block partial sums, promoted to fp32 with the block scales) would inherit.

One cuBLAS fp8 GEMM with K = 32 (torch._scaled_mm, per-tensor scales of 1, fp32 out) is one k32
tensor-core dot product per output, with no promotion inside it. Each output is compared with its
exact float64 value in the units of wgrad's check, u ||a|| ||b|| (u = 2^-24): the check allows an
expert of n tokens gamma_n ||a|| ||b||, about n of these units, beyond one bf16 ulp of the result.
Run from the repository root on an NVIDIA GPU with torch: python3 results/h200/fp8_accum_probe.py.
Written for call A2 of run-log-hopper-v24-2026-12-03.txt (whose rows 2^-10 and 2^-12 had
a = 2^-j, which e4m3 rounds to 0; the split factors came after)."""

from __future__ import annotations

import numpy as np
import torch

U = 2.0 ** -24


def e4m3(x: np.ndarray) -> torch.Tensor:
    """float32 values (already e4m3-representable or saturating) -> e4m3 codes on the GPU."""
    return torch.from_numpy(x.astype(np.float32)).cuda().to(torch.float8_e4m3fn)


def ocp_blocks(rng: np.random.Generator, rows: int) -> np.ndarray:
    """rows x 32 N(0, 1) values quantized as wgrad's problems are (OCP: block max into [256, 448])."""
    v = rng.standard_normal((rows, 32))
    e8 = np.floor(np.log2(np.abs(v).max(1, keepdims=True))) - 8
    return np.clip(v / 2.0 ** e8, -448, 448)


def probe(name: str, a: np.ndarray, b: np.ndarray, fast: bool) -> None:
    """a: R x 32, b: C x 32 (values); prints the worst errors of the R x C k32 dot products."""
    qa, qb = e4m3(a), e4m3(b)
    one = torch.ones((), dtype=torch.float32, device="cuda")
    got = torch._scaled_mm(qa, qb.t(), scale_a=one, scale_b=one, out_dtype=torch.float32,
                           use_fast_accum=fast).double().cpu().numpy()
    va, vb = qa.float().double().cpu().numpy(), qb.float().double().cpu().numpy()
    exact = va @ vb.T
    err = np.abs(got - exact)
    units = err / (U * np.linalg.norm(va, axis=1)[:, None] * np.linalg.norm(vb, axis=1)[None, :])
    print(f"{name:<34} fast={int(fast)}  outputs {err.size:>9,}  exact {np.mean(err == 0):6.1%}  "
          f"worst err in u||a||||b|| {units.max():10.1f}  p99.9 {np.quantile(units, 0.999):8.1f}  "
          f"share > 128 units {np.mean(units > 128):.2e}  first output {got[0, 0]:.9g}")


def main() -> None:
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    rng = np.random.default_rng(0)
    # One large product (16 x 16) and 31 small ones (2^-j, split between a and b so that both
    # factors stay e4m3 values, which reach down to 2^-9): which small terms survive the block's sum.
    for j in (4, 5, 6, 8, 10, 12, 14):
        a, b = np.full((16, 32), 2.0 ** -((j + 1) // 2)), np.full((16, 32), 2.0 ** -(j // 2))
        a[:, 0] = b[:, 0] = 16.0
        probe(f"256 + 31 x 2^-{j} (exact {256 + 31 * 2.0 ** -j:.9g})", a, b, True)
    for fast in (True, False):
        probe("wgrad's data (OCP-quantized N(0,1))", ocp_blocks(rng, 2048), ocp_blocks(rng, 2048), fast)
        codes = rng.integers(0, 256, (2, 2048, 32), dtype=np.uint8)
        codes[(codes & 0x7F) == 0x7F] = 0  # no NaN codes
        va = torch.from_numpy(codes).cuda().view(torch.float8_e4m3fn).float().cpu().numpy()
        probe("every finite e4m3 code, uniform", va[0], va[1], fast)


if __name__ == "__main__":
    main()
