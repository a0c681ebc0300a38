"""Which MXFP8 -> bf16 dequantization should the torch baselines time? The one a user who cared
about speed would write, provided it gives the same bits as the exact one.

Forms, each on both operands of a wgrad problem (values (rows, M) e4m3, scales (M/128, rows, 4) e8m0):
- fp32: e4m3 -> fp32, times 2^(e8 - 127) in fp32, -> bf16 (what baselines.py timed until 2026-12-03);
- bf16: e4m3 -> bf16, times the scale as a bf16 (exact: 2^-127 .. 2^127 and NaN are bf16 values),
  one bf16 multiply, which rounds the exact product once, as the fp32 form's final conversion does;
- compiled: torch.compile of the fp32 form (one fused kernel), where inductor runs.
Each form is checked bit for bit against fp32 on the problem's data and on every e4m3 code times
every e8m0 scale, then timed alone and inside the torch-grouped path, cold (a write of 240 MiB, four
times the 60 MiB L2, before each sample), median of 25 samples after 3 warm-up runs.
Run from the repository root on an NVIDIA GPU with torch: python3 results/h200/dequant_probe.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from wgrad_cli.abi import BLOCK, Dims
from wgrad_cli.problem import generate
from wgrad_cli.routing import Routing

SHAPES = {"square-8k": Dims(8192, 8192, 8192, 8), "qwen3-30b-down": Dims(32768, 2048, 768, 16),
          "dsv3-down": Dims(65536, 7168, 2048, 8)}
SAMPLES, WARMUP = 25, 3


def e8_rows(packed: torch.Tensor) -> torch.Tensor:
    rows = packed.shape[1]
    return packed.permute(1, 0, 2).reshape(rows, -1)


def fp32(q: torch.Tensor, packed: torch.Tensor) -> torch.Tensor:
    rows, m = q.shape
    e8 = e8_rows(packed).to(torch.float32)
    scale = torch.where(e8 == 255, torch.nan, torch.exp2(e8 - 127))
    values = q.view(torch.float8_e4m3fn).to(torch.float32).view(rows, m // BLOCK, BLOCK) * scale[..., None]
    return values.view(rows, m).to(torch.bfloat16)


def bf16(q: torch.Tensor, packed: torch.Tensor) -> torch.Tensor:
    rows, m = q.shape
    e8 = e8_rows(packed).to(torch.float32)
    scale = torch.where(e8 == 255, torch.nan, torch.exp2(e8 - 127)).to(torch.bfloat16)
    values = q.view(torch.float8_e4m3fn).to(torch.bfloat16).view(rows, m // BLOCK, BLOCK) * scale[..., None]
    return values.view(rows, m)


def same_bits(x: torch.Tensor, y: torch.Tensor) -> tuple[int, int]:
    """(differing elements, NaN positions that differ), NaNs compared by position only."""
    nx, ny = x.isnan(), y.isnan()
    bits = (x.view(torch.int16) != y.view(torch.int16)) & ~(nx & ny)
    return int(bits.sum()), int((nx != ny).sum())


def cold_ms(run: Callable[[], Any], flush: torch.Tensor) -> float:
    for _ in range(WARMUP):
        run()
    times = []
    for i in range(SAMPLES):
        flush.fill_(i & 0xFF)
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return sorted(times)[len(times) // 2]


def main() -> None:
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    forms: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {"fp32": fp32, "bf16": bf16}
    try:
        compiled = torch.compile(fp32, dynamic=False)
        compiled(torch.zeros((256, 128), dtype=torch.uint8, device="cuda"),
                 torch.full((1, 256, 4), 127, dtype=torch.uint8, device="cuda"))
        forms["compiled"] = compiled
    except Exception as exc:  # report why inductor cannot run here, and go on without it
        print(f"compiled: not run ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")
    # Every e4m3 code times every e8m0 scale: 256 rows of 256 x 32 codes, row r's scales all r.
    codes = torch.arange(256, dtype=torch.uint8, device="cuda").repeat(256, 32)
    scales = torch.arange(256, dtype=torch.uint8, device="cuda")[None, :, None].expand(256 * 32 // 128, 256, 4)
    scales = scales.contiguous()
    exact_all = fp32(codes, scales)
    for name, form in forms.items():
        print(f"every code x every scale, {name} against fp32: (differing, NaN mismatches) = "
              f"{same_bits(form(codes, scales), exact_all)}")
    flush = torch.empty(2 * 60 * 2**20 * 2, dtype=torch.uint8, device="cuda")
    for label, d in SHAPES.items():
        p = generate(d, Routing(), 1)
        qa, sa, qb, sb = (torch.from_numpy(x).cuda() for x in (p.A, p.scale_A, p.B, p.scale_B))
        offs = torch.tensor(p.offsets[1:] - p.offsets[0], dtype=torch.int32, device="cuda")
        reference = fp32(qa, sa), fp32(qb, sb)
        for name, form in forms.items():
            got = form(qa, sa), form(qb, sb)
            check = [same_bits(g, r) for g, r in zip(got, reference)]
            deq = cold_ms(lambda: (form(qa, sa), form(qb, sb)), flush)
            path = cold_ms(lambda: torch._grouped_mm(form(qa, sa), form(qb, sb).t(), offs=offs,
                                                     out_dtype=torch.bfloat16), flush)
            print(f"{label:<16} {name:<9} bits vs fp32 {check}  dequantize {deq * 1e3:9,.1f} us  "
                  f"torch-grouped path {path * 1e3:9,.1f} us")
        a, b = reference
        gemm = cold_ms(lambda: torch._grouped_mm(a, b.t(), offs=offs, out_dtype=torch.bfloat16), flush)
        print(f"{label:<16} bf16-grouped (operands ready) {gemm * 1e3:9,.1f} us")


if __name__ == "__main__":
    main()
