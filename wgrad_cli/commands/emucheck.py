"""`wgrad emu-check`: which instructions of each gfx950 code object the emulator lacks, and which name
registers beyond the kernel's allocation, found by decoding the code object before anything runs
(a run stops at the first such instruction a wave reaches)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from rich.markup import escape

from wgrad_cli.backends.registry import BACKENDS, EMULATED_TARGET
from wgrad_cli.compile.cache import Cache
from wgrad_cli.compile.codeobject import CodeObjectError, match_symbol
from wgrad_cli.compile.jobs import run_builds
from wgrad_cli.compile.selection import select
from wgrad_cli.compile.toolchain import Toolchains
from wgrad_cli.config.kernelspec import load_specs
from wgrad_cli.config.options import CompilerOptions, Selection
from wgrad_cli.emu.loader import load_image
from wgrad_cli.emu.ops import atomic as atomic_ops
from wgrad_cli.emu.ops import lds as lds_ops
from wgrad_cli.emu.ops import lds_atomic as lds_atomic_ops
from wgrad_cli.emu.ops import matrix as matrix_ops
from wgrad_cli.emu.ops import scalar as scalar_ops
from wgrad_cli.emu.ops import vector as vector_ops
from wgrad_cli.emu.ops import vector_special
from wgrad_cli.emu.ops import vmem as memory_ops
from wgrad_cli.emu.program import Program
from wgrad_cli.emu.registers import beyond
from wgrad_cli.errors import CheckFailed, WgradError
from wgrad_cli.output.console import err, out
from wgrad_cli.output.grid import Grid, plural

TARGET = EMULATED_TARGET


@dataclass(frozen=True)
class Coverage:
    instructions: int  # in the code object's text
    missing: dict[str, int]  # mnemonic -> how many times it occurs, for those the emulator lacks
    overruns: tuple[str, ...]  # "mnemonic at offset: why" for each naming a register past the allocation


def coverage(image: bytes, kernel: str) -> Coverage:
    """What the emulator would refuse in the code object's text when it runs `kernel` (its
    allocation bounds the registers; code the kernel never reaches counts too)."""
    program = Program(load_image(image))
    descriptor = program.image.kernels[match_symbol(list(program.image.kernels), kernel)]
    overruns = tuple(f"{program.ops[pc].name} at offset {pc:#x}: {why}"
                     for pc, found in program.registers.items()
                     if (why := beyond(found, descriptor)) is not None)
    return Coverage(len(program.decoded),
                    dict(sorted(Counter(op.name for op in program.unsupported()).items())), overruns)


def table_opcodes() -> list[str]:
    """The opcodes held in the emulator's tables by name, lower case: most of what it implements. The
    rest (compares, the scaled conversions' families, exec ops, branches, MFMA families, buffer and
    LDS-DMA forms) are cases in code; `wgrad emu-check` names what a code object lacks."""
    names = [*vector_ops.VOPS, *vector_special.SPECIAL, *scalar_ops.SOP2, *scalar_ops.SOP1_32,
             *scalar_ops.SOP1_64, *scalar_ops.SAVEEXEC, *scalar_ops.WREXEC, *lds_ops.READS, *lds_ops.WRITES,
             *lds_ops.READ2, *lds_ops.WRITE2, *lds_ops.TRANSPOSE, *matrix_ops.PK_F32, *matrix_ops.PK_16,
             *(f"GLOBAL_LOAD_{k}" for k in memory_ops.LOADS),
             *(f"GLOBAL_STORE_{k}" for k in memory_ops.STORES),
             *(f"GLOBAL_ATOMIC_{k}" for k in atomic_ops.ATOMICS), *lds_atomic_ops.LDS_ATOMICS]
    return sorted({n.lower() for n in names})


def emu_check_command(selection: Selection, compilers: CompilerOptions) -> None:
    """Build the config's gfx950 code objects as `wgrad build` does (cached) and print, per code
    object, its instruction count and the instructions the emulator does not implement."""
    specs = load_specs()
    config, records = select(specs, selection)
    if TARGET not in config.targets:
        raise WgradError(f"{selection.config_path}: no {TARGET} target; the emulator runs gfx950 code "
                         "objects only")
    records = [(job, shape) for job, shape in records if job.target == TARGET]
    jobs = list(dict.fromkeys(job for job, _ in records))
    cache = Cache.writable(compilers.cache_dir)
    toolchains = Toolchains.chosen(compilers, cache.root, BACKENDS)
    with err.status(f"building {plural(len(jobs), 'gfx950 code object')}"):
        results = run_builds(jobs, toolchains, cache, {}, len(jobs))
    table = Grid(f"wgrad emu-check {selection.config_path.name}: what the emulator cannot run")
    for name, justify in (("kernel", "left"), ("shapes", "left"), ("M x N x K, E", "right"),
                          ("instructions", "right"), ("unsupported", "right"), ("past regs", "right"),
                          ("mnemonics", "left")):
        table.add_column(name, "right" if justify == "right" else "left", detail=name == "M x N x K, E")
    problems: list[str] = []
    notes: list[str] = []  # register overruns: a report, like the instructions the emulator lacks
    for r in results:
        names = ", ".join(s.name for job, s in records if job == r.job)
        if r.code_object is None:
            problems += [f"{r.job.label}: {line}" for line in r.errors]
            table.add_row(r.job.kernel.name, names, r.job.dims.label(), "", "", "", "[red]not built[/]")
            continue
        try:
            c = coverage(r.code_object.read_bytes(), r.job.kernel.symbol)
        except CodeObjectError as exc:  # the loader refuses it (an unknown relocation, say)
            problems.append(f"{r.job.label}: the emulator cannot load it: {exc}")
            table.add_row(r.job.kernel.name, names, r.job.dims.label(), "", "", "", "[red]cannot load[/]")
            continue
        lacking = sum(c.missing.values())
        table.add_row(r.job.kernel.name, names, r.job.dims.label(), f"{c.instructions:,}",
                      f"[red]{lacking}[/]" if lacking else "[green]0[/]",
                      f"[red]{len(c.overruns)}[/]" if c.overruns else "[green]0[/]",
                      ", ".join(f"{m} x{n}" if n > 1 else m for m, n in c.missing.items()))
        notes += [f"{r.job.label}: {line}" for line in c.overruns]
    out.print(table)
    for line in notes:
        err.print(f"[yellow]{escape(line)}[/]", highlight=False)
    for line in problems:  # a failed compile, or no gfx950 compiler (how to get one)
        err.print(f"[red]{escape(line)}[/]", highlight=False)
    if problems:
        raise CheckFailed()
