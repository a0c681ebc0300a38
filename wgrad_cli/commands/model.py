"""`wgrad model`: each kernel of a config on each shape through the timing model of an MI355X
(docs/model.md), printed and saved as bench rows labelled modelled, with the limiter and the time
by cause. The problems, builds, argument packing and launches are verify's; only the device
differs (model/runtime.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
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
from wgrad_cli.errors import INTERRUPTED, Interrupted, KernelFault, LaunchStopped, StoppedLaunches
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
                        flops(p.dims, p.offsets.tolist()) / m.seconds / 1e12, m.limiter,
                        round(m.clock_ghz, 4), machine.band or None)


def views_of(rt: ModelRuntime, code_object: Path, trace: Path | None, what: str) -> Profile | None:
    """The last launch's time per instruction (with rt.profile), and with `trace` (rt.timeline filled by
    the launch) one CU's timeline of it written there."""
    modelled, program = rt.modelled[-1], rt.programs[-1]
    text = disassembly(code_object, rt.machine.arch) if rt.profile or trace else {}
    if trace and rt.timeline is not None:
        names = {d.pc: text.get(d.pc, d.mnemonic) for d in program.decoded}
        write_trace(trace, rt.timeline, names, rt.machine.issue_cycles, modelled.clock_ghz,
                    f"{what}: one modelled CU ({rt.device.name}) running the class of workgroup "
                    f"{modelled.critical}, on the critical path")
    return instruction_profile(modelled, program, text) if rt.profile else None


def trace_path(trace: Path | None, rec: Record, several: bool) -> Path | None:
    """Where a record's trace goes: the file given; with several records, one named after each
    beside it; in a folder given, <kernel>-<shape>.json."""
    if trace is None or (not several and not trace.is_dir()):
        return trace
    if trace.is_dir():
        return trace / f"{rec.job.kernel.name}-{rec.shape.name}.json"
    return trace.with_name(f"{trace.stem}-{rec.job.kernel.name}-{rec.shape.name}{trace.suffix or '.json'}")


@dataclass
class Stops:
    """What stopped records of a modelled run: faults and hangs (a line each; the other records still
    run) and Ctrl-C (the rest are left out)."""

    faulted: list[str] = field(default_factory=list)
    hung: list[str] = field(default_factory=list)
    interrupted: bool = False

    def raise_any(self, done: int, of: int) -> None:
        """The run's status where a record was stopped: 130, 6 or 3, after the rows are saved."""
        for line in self.faulted:
            err.print(f"[red]FAULTED[/] {escape(line)}", highlight=False, soft_wrap=True)
        for line in self.hung:
            err.print(f"[red]HUNG[/] {escape(line)}", highlight=False, soft_wrap=True)
        if self.interrupted:
            raise Interrupted(f"{INTERRUPTED}: {done} of {of} rows finished")
        if self.faulted:
            raise KernelFault()
        if self.hung:
            raise StoppedLaunches()


def machine_of(chip: ModelOptions) -> Machine:
    m = load(chip.machine).with_figures(chip.figures)
    return m.at_clock(chip.clock) if chip.clock is not None else m


def model_records(s: Session, m: Machine, records: list[Record], views: ModelViews = ModelViews(),
                  stops: Stops | None = None) -> tuple[Session, list[BenchRow]]:
    """`records` of the session (its builds and problems) on the timing model of `m`: the session
    with the model as its device, and the rows (with `views`' profile and traces). With `stops`, a
    record that faults or hangs is noted there and the others run, and Ctrl-C keeps the rows so far."""
    rt = ModelRuntime(m, views.profile)
    s = replace(s, rt=rt)
    rows: list[BenchRow] = []
    paths = [trace_path(views.trace, rec, len(records) > 1) for rec in records]
    if views.trace and len(records) > 1:
        err.print(escape(f"traces of one CU each, to come: {', '.join(map(str, paths))}"), highlight=False,
                  soft_wrap=True)
    with progress("modelling", len(records)) as bar:
        for rec, path in zip(records, paths):
            bar.update(bar.task_ids[0], description=escape(f"{rec.job.kernel.name} on {rec.shape.name}"))
            try:
                rows.append(model_record(s, rt, rec, path))
            except (KernelFault, LaunchStopped) as exc:
                if stops is None:
                    raise
                (stops.faulted if isinstance(exc, KernelFault) else stops.hung).append(
                    f"{rec.job.kernel.name} on {rec.shape.name}: {' '.join(exc.lines)}")
                continue
            except KeyboardInterrupt:
                if stops is None:
                    raise
                stops.interrupted = True
                break
            if path or views.profile:
                critical = rt.modelled[-1]
                err.print(escape(f"{rec.job.kernel.name} on {rec.shape.name}: the critical path (the CU "
                                 f"that ends last) runs workgroup {critical.critical}'s class, of "
                                 f"{critical.classes}" + (f"; trace of that CU: {path}" if path else "")),
                          highlight=False, soft_wrap=True)
            bar.update(bar.task_ids[0], advance=1)
    return s, rows


def model_command(selection: Selection, compilers: CompilerOptions, output: Output, chip: ModelOptions,
                  views: ModelViews, seed: int | None, shard: Shard | None) -> None:
    m = machine_of(chip)
    run = RunOptions(Emulated(), seed, None, shard)
    s = open_session(replace(selection, targets=(m.arch,)), compilers, run, edge_cases=False,
                     extra=lambda _: [], backends=BACKENDS)
    err.print(f"modelled device: {m.name} at {m.clock_ghz:g} GHz; machine file {chip.machine}; seed "
              f"{s.seed}; {m.band or 'figures changed: no held-out band'}", highlight=False)
    s.rt.close()
    stops = Stops()
    s, rows = model_records(s, m, s.records, views, stops)
    rt = s.rt
    out.print(model_table(rows, f"wgrad model: {rt.device.name} ({s.target}), seed {s.seed}"))
    for table in profile_tables(rows):
        out.print(table)
    say_classes(rows)
    say_tails(rows, s.records, m)
    if not output.no_save:
        path = output.json_path or default_path("model", selection.config_path.stem,
                                                [r.job.kernel.name for r in s.records],
                                                m.arch, shard, m.clock_ghz)
        save_modelled(path, output, rows, s.environment(), chip, m, shard, stops)
    stops.raise_any(len(rows), len(s.records))


def say_tails(rows: list[BenchRow], records: list[Record], m: Machine) -> None:
    """Where a grid leaves CUs without a workgroup, one line per row: its causes are those of a
    part-filled chip (the idle CUs are its tail), and the N = K that gives every CU a workgroup at
    its expert count (emulator-sized configs model a few workgroups on 256 CUs)."""
    by_index = {rec.index: rec for rec in records}
    for r in rows:
        fig, rec = r.model, by_index.get(r.index)
        if fig is None or rec is None or rec.job.kernel.persistent or fig.workgroups >= m.compute_units:
            continue
        spec, side = rec.job.kernel, 256
        while spec.tiles(replace(rec.shape.dims, N=side, K=side)) < m.compute_units:
            side += 256
        share = 100 * fig.causes_us.get("tail", 0.0) / max(r.summary.median_ms * 1e3, 1e-12)
        err.print(escape(f"{r.kernel} on {r.shape.name}: {fig.workgroups:,} workgroups on {m.compute_units} "
                         f"CUs: {share:.0f}% of the time is the tail of idle CUs, and the causes are those "
                         f"of a part-filled chip; N = K = {side:,} with E = {rec.shape.dims.E} gives every "
                         f"CU a workgroup ({spec.tiles(replace(rec.shape.dims, N=side, K=side)):,}), or "
                         "model a larger config (wgrad configs)"), highlight=False, soft_wrap=True)


def say_classes(rows: list[BenchRow]) -> None:
    for r in rows:
        assert r.model is not None
        err.print(f"{escape(r.kernel)} on {escape(r.shape.name)}: {r.model.classes} class"
                  f"{'es' * (r.model.classes != 1)} of {r.model.workgroups:,} workgroups; emulated "
                  f"workgroups {', '.join(map(str, r.model.emulated))}", highlight=False)


def save_modelled(path: Path, output: Output, rows: list[BenchRow], env: RunEnvironment, chip: ModelOptions,
                  m: Machine, shard: Shard | None, stops: Stops | None = None) -> None:
    known = peak(env.device)
    stops = stops or Stops()
    lost = {"faulted": stops.faulted, "hung": stops.hung,
            "incomplete": INTERRUPTED if stops.interrupted else None}
    save(path, output.csv_path, "bench", rows, **to_json(env), shard=list(shard) if shard else None,
         **{k: v for k, v in lost.items() if v},
         modelled={"machine": chip.machine, "clock_ghz": m.clock_ghz, "figures": list(chip.figures),
                   "sources": m.sources},
         peak={**known.__dict__, "source": f"modelled: {known.source}"} if known else None)
    err.print(escape(f"results (modelled): {path}"
                     + (f", {output.csv_path}" if output.csv_path else "")), highlight=False)
