"""Baselines for `wgrad bench --baselines`: what a user would otherwise run, timed in the same table.

Each takes the same MXFP8 problem, holds its own copy on the device, and is timed by the same
measure() (cold cache, same stopping rule): torch runs its kernels on the default stream, where
bench records its events and writes its cache flush. torch is not a dependency of wgrad: the
baselines load only where it imports with a CUDA or ROCm device.
- torch-grouped: dequantize both operands' tokens with torch ops (e4m3 -> fp32, times 2^(e8 - 127),
  -> bf16: exact), then one torch._grouped_mm over the experts' token ranges. Dequantization is timed.
- torch-loop: the same dequantization, then one torch.matmul per expert with tokens.
- compiled-grouped and compiled-loop: the same, with the dequantization under torch.compile (one
  fused kernel per operand), compiled for this shape alone (dynamic=False, after
  torch._dynamo.reset()): a compile reused across shapes goes dynamic and its kernels were up to
  ten times slower on later shapes. Recompiling while timed is an error (error_on_recompile).
- autotuned-grouped: the whole torch-grouped path (dequantization and torch._grouped_mm) under
  torch.compile(mode="max-autotune-no-cudagraphs"), compiled for this shape: inductor fuses the
  dequantization and picks among its grouped-GEMM templates by timing them. What a user who
  cares about speed runs. On shapes where inductor's template cannot take the fused path's
  token-major second operand (Triton: "Tensor descriptor last dim must be 1"), the path is
  compiled in two parts instead, and a line says so: the dequantization, writing that operand
  transposed, and the grouped GEMM under max-autotune on operands whose layout is then fixed.
- compiled-dequant: the compiled dequantization of both operands alone, the share of the compiled
  paths that is not GEMM; its rate in values per second is comparable across shapes.
- bf16-ceiling: one cuBLAS bf16 GEMM (torch.mm) of the same FLOPs, 2 N K tokens, on operands
  dequantized beforehand. Dequantization is not timed: the rate of the tensor cores on bf16.
- bf16-grouped and bf16-loop: the torch paths' GEMMs on operands dequantized beforehand (not
  timed). The bf16 rate on this problem's own shape: E N K outputs, each over one expert's
  tokens, which the ceiling's single GEMM (N K outputs over all tokens) does not pay for.
With copies > 1 (bench --rotating), each baseline holds that many copies of its operands (and of
the ones dequantized beforehand) and every call runs on the next copy in turn, as the kernels do.
- fp8-ceiling: one cuBLAS fp8 GEMM (torch._scaled_mm, per-tensor scales of 1, fast accumulation,
  bf16 out) of the same FLOPs on the e4m3 bytes as they are: the block scales are ignored, so its
  output is not the answer. cuBLAS's rate on the fp8 tensor cores, what an fp8 design is held to.
"""

from __future__ import annotations

import itertools
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from wgrad_cli.errors import WgradError
from wgrad_cli.problem.abi import BLOCK, STEP
from wgrad_cli.problem.generate import Problem
from wgrad_cli.results.baseline_names import NAMES


def require_torch() -> Any:
    """The torch module, or a one-line WgradError saying why the baselines cannot run."""
    try:
        import torch
    except ImportError as exc:
        raise WgradError(f"--baselines: torch is not importable ({exc}); install torch with GPU support, "
                         "or leave --baselines out") from None
    if not torch.cuda.is_available():
        raise WgradError("--baselines: torch sees no GPU (torch.cuda.is_available() is False); install a "
                         "CUDA or ROCm build of torch, or leave --baselines out")
    return torch


def _torch_failure(name: str, exc: RuntimeError) -> WgradError:
    """torch's failure (RuntimeError and its kin: out of memory, an operation this build or GPU
    lacks) as one line naming the baseline, in place of a traceback."""
    return WgradError(f"--baselines: {name} failed in torch ({_why(exc)}); leave --baselines out, or use a "
                      "torch build and GPU that run it")


def _why(exc: Exception) -> str:
    """The first line of torch's message."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def guarded(name: str, run: Callable[[], None]) -> Callable[[], None]:
    """`run`, with torch's failures as one line naming the baseline."""
    def call() -> None:
        try:
            run()
        except RuntimeError as exc:
            raise _torch_failure(name, exc) from None
    return call


def unknown(names: tuple[str, ...]) -> list[str]:
    """One error line per name that is not a baseline."""
    return [f"--baseline {n}: no such baseline; choose from {', '.join(NAMES)}"
            for n in names if n not in NAMES]


def baselines(p: Problem, names: tuple[str, ...] = NAMES, copies: int = 1) -> dict[str, Callable[[], None]]:
    """name -> a callable that runs that baseline once on `p`, asynchronously, for each of `names`; on
    the next of `copies` copies of its operands at each call."""
    try:
        made = _baselines(p, names, copies)
    except RuntimeError as exc:
        raise _torch_failure("the set-up", exc) from None
    return {name: guarded(name, run) for name, run in made.items()}


def spin(torch: Any, ms: float, clock_mhz: int) -> None:
    """Keep the stream busy for about `ms` (torch.cuda._sleep spins a single thread for a number of
    clock cycles): queued ahead of a sample, it hides the host's submission of its launches."""
    torch.cuda._sleep(max(1, int(ms * 1e3 * clock_mhz)))


def dequantizer(torch: Any) -> Callable[[Any, Any], Any]:
    """The torch paths' dequantization: e4m3 bytes (rows, L) with their packed e8m0 scales
    (L/128, rows, 4) -> bf16 (rows, L), exact (an e4m3 value times 2^(e8 - 127) is exact in fp32,
    and the conversion rounds it once). The scale is built from its bits: under torch.compile,
    exp2 flushes 2^-127 (e8 0) to zero."""
    def dequantize(q: Any, packed: Any) -> Any:
        rows, length = q.shape
        e8 = packed.permute(1, 0, 2).reshape(rows, length // BLOCK).to(torch.int32)
        bits = torch.where(e8 == 0, 1 << 22, torch.where(e8 == 255, 0x7FC00000, e8 << 23))  # 2^-127; NaN
        values = q.view(torch.float8_e4m3fn).to(torch.float32).view(rows, length // BLOCK, BLOCK)
        return (values * bits.view(torch.float32)[..., None]).view(rows, length).to(torch.bfloat16)
    return dequantize


@dataclass(frozen=True)
class _Copy:
    """One copy of a baseline's operands on the device: e4m3 bytes with their packed scales, and the
    same dequantized beforehand (bf16) or viewed as fp8."""

    a: tuple[Any, Any]
    b: tuple[Any, Any]
    a_bf16: Any
    b_bf16: Any
    a_fp8: Any
    b_fp8: Any
    out: Any  # the per-expert loop's output


def _baselines(p: Problem, names: tuple[str, ...], copies: int) -> dict[str, Callable[[], None]]:
    torch = require_torch()
    d, off = p.dims, p.offsets.tolist()
    lo, hi = off[0], off[-1]
    eager = dequantizer(torch)
    torch._dynamo.reset()  # nothing compiled for another shape is reused (and turned dynamic) here
    torch._dynamo.config.error_on_recompile = False
    compiled = torch.compile(eager, dynamic=False)

    def upload(q: Any, packed: Any) -> tuple[Any, Any]:
        """The operand's tokens lo .. hi (offsets are multiples of a scale word's 128 tokens)."""
        return (torch.from_numpy(np.ascontiguousarray(q[:, lo:hi])).cuda(),
                torch.from_numpy(packed[lo // STEP:hi // STEP]).cuda())

    def copy() -> _Copy:
        a, b = upload(p.A, p.scale_A), upload(p.B, p.scale_B)
        a_fp8, b_fp8 = (q.view(torch.float8_e4m3fn) for q, _ in (a, b))
        out = torch.empty((d.E, d.N, d.K), dtype=torch.bfloat16, device="cuda")
        return _Copy(a, b, *operands(compiled, a, b), a_fp8, b_fp8, out)  # compiles here, in the set-up

    offs = torch.tensor([o - lo for o in off[1:]], dtype=torch.int32, device="cuda")

    def operands(dequantize: Callable[[Any, Any], Any], a: tuple[Any, Any],
                 b: tuple[Any, Any]) -> tuple[Any, Any]:
        return dequantize(*a), dequantize(*b)

    def grouped(x: Any, y: Any, c: _Copy) -> None:
        if hi > lo:
            torch._grouped_mm(x, y.t(), offs=offs, out_dtype=torch.bfloat16)
        else:  # no tokens: _grouped_mm refuses operands without columns, and the answer is zeros
            c.out.zero_()

    def loop(x: Any, y: Any, c: _Copy) -> None:
        for e in range(d.E):
            if off[e + 1] > off[e]:
                torch.matmul(x[:, off[e] - lo:off[e + 1] - lo], y[:, off[e] - lo:off[e + 1] - lo].t(),
                             out=c.out[e])
            else:
                c.out[e].zero_()

    def whole_path(qa: Any, sa: Any, qb: Any, sb: Any) -> Any:
        return torch._grouped_mm(eager(qa, sa), eager(qb, sb).t(), offs=offs, out_dtype=torch.bfloat16)

    def gemm(x: Any, y_t: Any) -> Any:
        return torch._grouped_mm(x, y_t, offs=offs, out_dtype=torch.bfloat16)

    autotune = "max-autotune-no-cudagraphs"
    staged_dequantize = torch.compile(lambda qa, sa, qb, sb: (eager(qa, sa), eager(qb, sb).t().contiguous()),
                                      dynamic=False)
    staged_gemm = torch.compile(gemm, mode=autotune, dynamic=False)
    forms: list[Callable[..., Any]] = [torch.compile(whole_path, mode=autotune, dynamic=False),
                                       lambda qa, sa, qb, sb: staged_gemm(*staged_dequantize(qa, sa, qb, sb))]

    def autotuned_grouped(c: _Copy) -> None:
        if hi > lo:
            forms[0](*c.a, *c.b)
        else:
            c.out.zero_()

    held = [copy() for _ in range(copies)]
    one = torch.ones((), dtype=torch.float32, device="cuda")

    def fp8_mm(c: _Copy) -> None:
        if hi > lo:  # no tokens: no GEMM to time (the other baselines time empty torch calls)
            torch._scaled_mm(c.a_fp8, c.b_fp8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                             use_fast_accum=True)

    def dequantize_only(c: _Copy) -> None:
        operands(compiled, c.a, c.b)

    runs: tuple[Callable[[_Copy], None], ...] = (
        lambda c: grouped(*operands(eager, c.a, c.b), c), lambda c: loop(*operands(eager, c.a, c.b), c),
        lambda c: grouped(*operands(compiled, c.a, c.b), c), lambda c: loop(*operands(compiled, c.a, c.b), c),
        autotuned_grouped, dequantize_only, lambda c: torch.mm(c.a_bf16, c.b_bf16.t()),
        lambda c: grouped(c.a_bf16, c.b_bf16, c), lambda c: loop(c.a_bf16, c.b_bf16, c), fp8_mm)
    chosen = {name: run for name, run in zip(NAMES, runs) if name in names}
    while "autotuned-grouped" in chosen:
        try:
            autotuned_grouped(held[0])  # autotunes here, in the set-up
            break
        except RuntimeError as exc:  # inductor's failure on one shape leaves the other baselines standing
            forms.pop(0)
            if forms:
                print("note: autotuned-grouped: inductor cannot compile the fused path for this shape "
                      f"({_why(exc)}); timing it compiled in two parts", file=sys.stderr)
                continue
            print(_torch_failure("autotuned-grouped", exc).lines[0], "(left out of this shape's rows)",
                  file=sys.stderr)
            traceback.print_exc(limit=-8, file=sys.stderr)
            del chosen["autotuned-grouped"]
    torch.cuda.synchronize()
    torch._dynamo.config.error_on_recompile = True  # a recompile while timed would time the compiler
    return {name: _rotated(run, held) for name, run in chosen.items()}


def _rotated(run: Callable[[_Copy], None], held: list[_Copy]) -> Callable[[], None]:
    """`run` on the next of `held` at each call."""
    turn = itertools.cycle(held)
    return lambda: run(next(turn))
