"""`wgrad verify`: run each kernel on a fresh random problem and check every output.

Per shape: generate the problem (the seed is printed and recorded), upload it, poison the output
(0xFFFF, a NaN no kernel stores), launch, download, compare. The reference is numpy (float64,
exact to fp32 precision) where the shape is small enough; beyond that the project's reference
kernel runs on the same device on the same inputs, and numpy checks a random sample of rows
of every expert as well. Each record says which reference was used.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from wgrad_cli.compile.jobs import BuildJob
from wgrad_cli.device import isolation
from wgrad_cli.device.isolation import Crash
from wgrad_cli.device.launch import DeviceProblem, prepare, upload
from wgrad_cli.device.session import Record, Session
from wgrad_cli.device.waiting import settle
from wgrad_cli.errors import DriverError, EmulatorBug, KernelFault, LaunchStopped, WgradError
from wgrad_cli.measure.check import BF16, POISON, combine, compare
from wgrad_cli.problem.abi import Dims, flops
from wgrad_cli.problem.generate import Problem, generate
from wgrad_cli.problem.reference import grad_w, row_norms, sample_rows
from wgrad_cli.results.records import CodeObject, Counters, Errors, ModelledTime, Sampled, VerifyRow

NUMPY_MAX_FLOPS = 2**38  # auto: numpy up to ~0.27 TFLOP (seconds on a few cores), the device reference beyond
COMPARE_BLOCK_ELEMENTS = 2**20  # outputs per compare() call in per_expert


@dataclass(frozen=True)
class Outcome:
    record: Record
    seed: int
    reference: str  # how the output was checked, in words
    experts: list[Errors]  # against the reference, whole
    sampled: list[Errors] | None = None  # numpy on sampled rows, where the reference was the device's
    counters: Counters | None = None  # what the kernel's launch executed, where the device counts it
    findings: tuple[str, ...] = ()  # the sanitizer's lines for the kernel's launch (verify --sanitize)
    routing: str | None = None  # why the problem's offsets are not what its routing promises (the row fails)
    modelled: ModelledTime | None = None  # its time on the timing model, where verify --model asked for it

    @property
    def overall(self) -> Errors:
        return combine(self.experts)

    @property
    def ok(self) -> bool:
        return self.overall.ok and (self.sampled is None or combine(self.sampled).ok) and self.routing is None

    def row(self, code: CodeObject) -> VerifyRow:
        """The results record, with the code object that ran (Session.code_object)."""
        sampled = None if self.sampled is None else Sampled(combine(self.sampled), self.sampled)
        return VerifyRow(code_object_sha256=code.code_object_sha256, compiler=code.compiler, flags=code.flags,
                         build_errors=code.build_errors, index=self.record.index,
                         kernel=self.record.job.kernel.name, target=self.record.job.target,
                         shape=self.record.shape_ref(), seed=self.seed, ok=self.ok,
                         reference=self.reference, overall=self.overall,
                         experts=self.experts, sampled=sampled,
                         counters=self.counters, modelled=self.modelled)


def per_expert(out_bits: np.ndarray, ref: np.ndarray, norms: tuple[np.ndarray, np.ndarray],
               tokens: np.ndarray, reference: str) -> list[Errors]:
    """compare() for each expert, on every core: each expert in blocks of whole rows (a row's
    relative error needs the whole row), so the float64 temporaries stay a few MiB each instead of
    several GiB for an 8192 x 8192 expert, and check.combine joins the blocks."""
    na, nb = norms
    rows = max(1, COMPARE_BLOCK_ELEMENTS // out_bits.shape[2])
    row_blocks = [slice(r, r + rows) for r in range(0, out_bits.shape[1], rows)]

    def one(block: tuple[int, slice]) -> Errors:
        e, r = block
        return compare(out_bits[e:e + 1, r], ref[e:e + 1, r], na[e:e + 1, r], nb[e:e + 1],
                       tokens[e:e + 1], reference)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # numpy releases the GIL
        parts = list(pool.map(one, [(e, r) for e in range(len(tokens)) for r in row_blocks]))
    n = len(row_blocks)
    return [combine(parts[e * n:(e + 1) * n]) for e in range(len(tokens))]


def device_reference_possible(mode: str, d: Dims) -> bool:
    """Whether `mode` may check a shape of these dims against the reference kernel: always for
    device, never for numpy, for auto when even routing every token could exceed NUMPY_MAX_FLOPS."""
    return mode == "device" or (mode == "auto" and 2 * d.N * d.K * d.M > NUMPY_MAX_FLOPS)


def run_kernel(s: Session, job: BuildJob, dev: DeviceProblem, output: int) -> np.ndarray:
    """Poison `output`, launch once into it, wait, and return its bf16 bits (E, N, K)."""
    build = s.builds[job]
    assert build.code_object is not None
    kernel = prepare(s.rt, build.code_object, s.target, s.backend, job.kernel, dev.dims, dev.args(output))
    s.rt.fill(output, 0xFF, dev.output_bytes)
    kernel()
    settle(s.rt, s.events[1], s.kernel_timeout, job.label)
    return dev.download(output)


def check(s: Session, rec: Record, p: Problem, dev: DeviceProblem, mode: str, rows: int) -> Outcome:
    """Run one kernel on the uploaded problem and compare its output with the reference `mode` picks."""
    tokens = np.diff(p.offsets)
    try:
        out = run_kernel(s, rec.job, dev, dev.pointers["C"])
    except DriverError as exc:  # name the shape: a fault on the emulator (or a GPU) is a property of both
        raise type(exc)([f"{rec.job.kernel.name} on {rec.shape.name}: {line}"
                         for line in exc.lines]) from None
    except EmulatorBug as exc:  # the same, on its first line only: the rest is the traceback
        raise EmulatorBug([f"{rec.job.kernel.name} on {rec.shape.name}: {exc.lines[0]}",
                           *exc.lines[1:]]) from None
    counters = s.rt.counters()
    findings = tuple(s.rt.findings())
    if mode == "numpy" or (mode == "auto" and flops(p.dims, p.offsets.tolist()) <= NUMPY_MAX_FLOPS):
        return Outcome(rec, p.seed, "numpy float64, every element",
                       per_expert(out, grad_w(p), row_norms(p), tokens, "float64"), counters=counters,
                       findings=findings)
    picked = sample_rows(p, rows, np.random.default_rng(p.seed))
    sampled = per_expert(np.take_along_axis(out, picked[:, :, None], axis=1), grad_w(p, picked),
                         row_norms(p, picked), tokens, "float64")
    how = f"numpy float64 on {picked.shape[1]} random rows per expert"
    reference = s.specs["reference"]
    if rec.job.kernel.name == reference.name:
        return Outcome(rec, p.seed, how, sampled, counters=counters, findings=findings)
    scratch = s.rt.alloc(dev.output_bytes)
    try:
        ref_bits = run_kernel(s, BuildJob(reference, rec.job.target, p.dims), dev, scratch)
    finally:
        s.rt.free(scratch)
    if (ref_bits == POISON).any():
        raise WgradError(f"{rec.shape.name}: the reference kernel left outputs unwritten, so it cannot be "
                         "the reference; run wgrad verify --kernel reference --reference numpy on this shape")
    whole = per_expert(out, ref_bits.view(BF16).astype(np.float32), row_norms(p), tokens, "bf16")
    return Outcome(rec, p.seed, f"reference kernel on the device, every element; {how}", whole, sampled,
                   counters, findings)


# verify --model: the time of a record's kernel on the timing model, on the problem as checked and uploaded
Model = Callable[[Session, Record, Problem, DeviceProblem], ModelledTime]


def routing_problem(rec: Record, p: Problem) -> str | None:
    """Why the problem's expert offsets break what the shape's routing promises (an expert it fills left
    without tokens, or one it empties given some), or None: a routing that routed nothing would
    otherwise pass, its output and the reference both zero."""
    promised = rec.shape.routing.empty_experts(p.dims.M, p.dims.E)
    empty = int((np.diff(p.offsets) == 0).sum())
    if promised is None or empty == promised:
        return None
    return (f"{rec.shape.routing.describe()} routing leaves {promised} of {p.dims.E} experts without tokens, "
            f"but the problem's offsets leave {empty} ({p.offsets.tolist()})")


def check_record(s: Session, job: tuple[Record, str, int, Model | None]) -> Outcome:
    """One record (and its reference mode and rows) on its own upload of the shape's problem; with a
    Model, that upload modelled too."""
    rec, mode, rows, model = job
    p = generate(rec.shape.dims, rec.shape.routing, s.seed, s.config.quantization)
    dev = upload(s.rt, p)
    try:
        outcome = replace(check(s, rec, p, dev, mode, rows), routing=routing_problem(rec, p))
        return replace(outcome, modelled=model(s, rec, p, dev)) if model else outcome
    finally:
        dev.free()


@dataclass(frozen=True)
class Callbacks:
    """What verify tells its caller as it goes: a record begins, is checked, crashed its process,
    was stopped as hung or faulted (its line)."""

    on_start: Callable[[str], None]
    on_done: Callable[[Outcome], None]
    on_crash: Callable[[Crash], None]
    on_hang: Callable[[str], None]
    on_fault: Callable[[str], None]


def verify(s: Session, mode: str, rows: int, tell: Callbacks, model: Model | None = None) -> list[Outcome]:
    """Check every record, each in a process of its own where a fault could end the process (isolation.py):
    a record whose process crashed goes to on_crash, one whose launch the emulator stopped as hung
    goes to on_hang (its line), one whose kernel faulted on the emulator to on_fault, and the others
    still run."""
    outcomes = []
    for rec in s.records:
        what = f"{rec.job.kernel.name} on {rec.shape.name}"
        tell.on_start(what)
        try:
            result = isolation.run(s, what, check_record, (rec, mode, rows, model))
        except LaunchStopped as exc:
            tell.on_hang(f"{what}: {exc.lines[0]}")
            continue
        except KernelFault as exc:
            tell.on_fault(" ".join(exc.lines))
            continue
        if isinstance(result, Crash):
            tell.on_crash(result)
            continue
        outcomes.append(result)
        tell.on_done(result)
    return sorted(outcomes, key=lambda o: o.record.index)

