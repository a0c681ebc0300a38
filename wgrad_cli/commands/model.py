"""`wgrad model`: each kernel of a config on each shape through the timing model of an MI355X
(docs/model.md), printed and saved as bench rows labelled modelled, with the limiter and the time
by cause. The problems, builds, argument packing and launches are verify's; only the device
differs (model/runtime.py)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from rich.markup import escape

from wgrad_cli.backends.registry import BACKENDS, peak
from wgrad_cli.config.kernelspec import KernelSpec
from wgrad_cli.config.options import (
    CompilerOptions,
    Emulated,
    ModelOptions,
    ModelViews,
    Output,
    RunOptions,
    Selection,
    Shard,
)
from wgrad_cli.device.launch import DeviceProblem, prepare, upload
from wgrad_cli.device.session import Record, RunEnvironment, Session, open_session
from wgrad_cli.emu.device import EmuRuntime
from wgrad_cli.model.launch import Modelled
from wgrad_cli.model.machine import Machine, load
from wgrad_cli.model.profile import disassembly, instruction_profile
from wgrad_cli.model.runtime import ModelRuntime, Plan
from wgrad_cli.model.schedule import Sharing
from wgrad_cli.model.timeline import Timeline
from wgrad_cli.model.tracefile import write_trace
from wgrad_cli.output.console import err, out, progress
from wgrad_cli.problem.abi import flops, min_bytes
from wgrad_cli.problem.generate import Problem, generate
from wgrad_cli.results.files import default_path, save
from wgrad_cli.results.records import BenchRow, ModelledTime, Profile, Summary, to_json
from wgrad_cli.results.tables import model_table, profile_tables

SCALE_BLOCK = 32  # tokens per e8m0 scale


def plan_for(spec: KernelSpec, p: Problem, grid: int) -> Plan:
    """Classes and sharing of a launch of `spec` on `p`: a kernel with one workgroup per tile (the
    ABI's grid, expert-major) runs one stream per expert token count, and the tiles of an expert
    read that expert's tokens of A and B; a persistent kernel's workgroups are each their own."""
    if spec.persistent:
        return Plan()
    d = p.dims
    per_expert = spec.tiles(d) // d.E
    tokens = [int(p.offsets[e + 1] - p.offsets[e]) for e in range(d.E)]
    owner = [g // per_expert for g in range(grid)]
    inputs = {e: (d.N + d.K) * t * (SCALE_BLOCK + 1) // SCALE_BLOCK for e, t in enumerate(tokens)}
    return Plan([tokens[e] for e in owner], Sharing(owner, inputs))


def _row(s: Session, rec: Record, p: Problem, m: Modelled, machine: Machine, grid: int, wall: float,
         profile: Profile | None) -> BenchRow:
    d = rec.shape.dims
    work, least = flops(d, p.offsets.tolist()), min_bytes(d)
    ms = m.seconds * 1e3
    known = peak(s.rt.device)
    tflops = work / m.seconds / 1e12
    code = s.code_object(rec.job)
    return BenchRow(
        code_object_sha256=code.code_object_sha256, compiler=code.compiler, flags=code.flags,
        build_errors=code.build_errors, index=rec.index, kernel=rec.job.kernel.name, target=rec.job.target,
        shape=rec.shape_ref(), seed=s.seed, run=1, cache="modelled",
        summary=Summary(1, ms, ms, ms, ms, ms, 0.0), stop="modelled", wall_seconds=round(wall, 3), flops=work,
        min_bytes=least, tflops=tflops, gbps=least / m.seconds / 1e9,
        pct_peak=100 * tflops / known.matrix_tflops if known else None, clock_mhz=round(m.clock_ghz * 1000),
        grid=grid, model=m.figures(machine, profile))


def model_record(s: Session, rt: ModelRuntime, rec: Record, trace: Path | None = None) -> BenchRow:
    """One (kernel, shape) modelled; with rt.profile, its time per instruction; with `trace`, one
    CU's timeline written there."""
    began = time.perf_counter()
    p = generate(rec.shape.dims, rec.shape.routing, s.seed, s.config.quantization)
    dev = upload(rt, p)
    rt.timeline = Timeline() if trace else None
    try:
        grid = launch(s, rt, rec, p, dev)
    finally:
        dev.free()
    code_object = s.builds[rec.job].code_object
    assert code_object is not None
    profile = views_of(rt, code_object, trace, f"{rec.job.kernel.name} on {rec.shape.name}")
    return _row(s, rec, p, rt.modelled[-1], rt.machine, grid, time.perf_counter() - began, profile)


def launch(s: Session, rt: ModelRuntime, rec: Record, p: Problem, dev: DeviceProblem) -> int:
    """The record's kernel launched once on the model, on problem `p` uploaded as `dev` (rt.modelled
    gets its time); returns its grid."""
    code_object = s.builds[rec.job].code_object
    assert code_object is not None
    kernel = prepare(rt, code_object, s.target, s.backend, rec.job.kernel, p.dims, dev.args())
    rt.plan = plan_for(rec.job.kernel, p, kernel.grid)
    kernel()
    return kernel.grid


def modelled_time(machine: Machine, s: Session, rec: Record, p: Problem, dev: DeviceProblem) -> ModelledTime:
    """verify --model: the record's time on `machine`, on the problem verify generated and uploaded to the
    emulated device (the model runs on that device's memory)."""
    assert isinstance(s.rt, EmuRuntime)
    rt = ModelRuntime(machine, heap=s.rt.heap)
    launch(replace(s, rt=rt), rt, rec, p, dev)
    m = rt.modelled[-1]
    return ModelledTime(machine.name, machine.clock_ghz, m.seconds * 1e6,
                        flops(p.dims, p.offsets.tolist()) / m.seconds
                        / 1e12, m.limiter, round(m.clock_ghz, 4))


def views_of(rt: ModelRuntime, code_object: Path, trace: Path | None, what: str) -> Profile | None:
    """The last launch's time per instruction (with rt.profile), and with `trace` (rt.timeline filled by
    the launch) one CU's timeline of it written there."""
    modelled, program = rt.modelled[-1], rt.programs[-1]
    text = disassembly(code_object, rt.machine.arch) if rt.profile or trace else {}
    if trace and rt.timeline is not None:
        names = {d.pc: text.get(d.pc, d.mnemonic) for d in program.decoded}
        write_trace(trace, rt.timeline, names, rt.machine.issue_cycles, modelled.clock_ghz,
                    f"{what}: one modelled CU ({rt.device.name})")
    return instruction_profile(modelled, program, text) if rt.profile else None


def trace_path(trace: Path | None, rec: Record, several: bool) -> Path | None:
    """Where a record's trace goes: the file given, or with several records, one named after it."""
    if trace is None or not several:
        return trace
    return trace.with_name(f"{trace.stem}-{rec.job.kernel.name}-{rec.shape.name}{trace.suffix or '.json'}")


def machine_of(chip: ModelOptions) -> Machine:
    m = load(chip.machine).with_figures(chip.figures)
    return m.at_clock(chip.clock) if chip.clock is not None else m


def model_records(s: Session, m: Machine, records: list[Record], views: ModelViews = ModelViews()
                  ) -> tuple[Session, list[BenchRow]]:
    """`records` of the session (its builds and problems) on the timing model of `m`: the session
    with the model as its device, and the rows (with `views`' profile and traces)."""
    rt = ModelRuntime(m, views.profile)
    s = replace(s, rt=rt)
    rows: list[BenchRow] = []
    with progress("modelling", len(records)) as bar:
        for rec in records:
            bar.update(bar.task_ids[0], description=escape(f"{rec.job.kernel.name} on {rec.shape.name}"))
            path = trace_path(views.trace, rec, len(records) > 1)
            rows.append(model_record(s, rt, rec, path))
            if path:
                err.print(escape(f"trace of one CU: {path}"), highlight=False)
            bar.update(bar.task_ids[0], advance=1)
    return s, rows


def model_command(selection: Selection, compilers: CompilerOptions, output: Output, chip: ModelOptions,
                  views: ModelViews, seed: int | None, shard: Shard | None) -> None:
    m = machine_of(chip)
    run = RunOptions(Emulated(), seed, None, shard)
    s = open_session(replace(selection, targets=(m.arch,)), compilers, run, edge_cases=False,
                     extra=lambda _: [], backends=BACKENDS)
    err.print(f"modelled device: {m.name} at {m.clock_ghz:g} GHz; machine file {chip.machine}; seed {s.seed}",
              highlight=False)
    s.rt.close()
    s, rows = model_records(s, m, s.records, views)
    rt = s.rt
    out.print(model_table(rows, f"wgrad model: {rt.device.name} ({s.target}), seed {s.seed}"))
    for table in profile_tables(rows):
        out.print(table)
    say_classes(rows)
    if output.no_save:
        return
    path = output.json_path or default_path("model", selection.config_path.stem, m.arch, shard)
    save_modelled(path, output, rows, s.environment(), chip, m, shard)


def say_classes(rows: list[BenchRow]) -> None:
    for r in rows:
        assert r.model is not None
        err.print(f"{escape(r.kernel)} on {escape(r.shape.name)}: {r.model.classes} class"
                  f"{'es' * (r.model.classes != 1)} of {r.model.workgroups:,} workgroups; emulated "
                  f"workgroups {', '.join(map(str, r.model.emulated))}", highlight=False)


def save_modelled(path: Path, output: Output, rows: list[BenchRow], env: RunEnvironment, chip: ModelOptions,
                  m: Machine, shard: Shard | None) -> None:
    known = peak(env.device)
    save(path, output.csv_path, "bench", rows, **to_json(env), shard=list(shard) if shard else None,
         modelled={"machine": chip.machine, "clock_ghz": m.clock_ghz, "figures": list(chip.figures),
                   "sources": m.sources},
         peak={**known.__dict__, "source": f"modelled: {known.source}"} if known else None)
    err.print(escape(f"results (modelled): {path}" + (f", {output.csv_path}" if output.csv_path else "")),
              highlight=False)
