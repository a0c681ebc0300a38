"""The `wgrad` command line: config -> problem -> build -> run -> check -> report."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, TypeVar

import click

from wgrad_cli import __version__
from wgrad_cli.config.options import (
    EMULATED,
    DATA_PATTERNS,
    FLUSHES,
    HIP_STACK_BYTES,
    HIP_STACK_CAP,
    DEFAULT_MACHINE,
    EMU_CPU_SECONDS,
    KERNEL_TIMEOUT_S,
    BenchOptions,
    CompilerOptions,
    Device,
    Emulated,
    EmulatorOptions,
    LaunchSelection,
    ModelOptions,
    ModelViews,
    Output,
    RunOptions,
    Selection,
    Shard,
    VerifyOptions,
)
from wgrad_cli.config.shipped import CONFIGS_DIR
from wgrad_cli.errors import INTERRUPTED, Interrupted, KernelHang, WgradError

F = TypeVar("F", bound=Callable[..., Any])


class Group(click.Group):
    """Prints a WgradError's lines (one per problem) and exits with its status, no traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KernelHang as exc:  # the device is stuck: exit now, skipping clean-up that would wait for it
            for line in exc.lines:
                click.echo(line, err=True)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(exc.exit_code)
        except WgradError as exc:
            for line in exc.lines:
                click.echo(line, err=True)
            ctx.exit(exc.exit_code)
        except (KeyboardInterrupt, click.Abort):
            # Ctrl-C where no command saves rows: the shell's status for it
            click.echo(f"\n{INTERRUPTED}", err=True)
            ctx.exit(Interrupted.exit_code)


def parse_device(_ctx: click.Context, _param: click.Parameter, value: str) -> Device:
    """--device: a device index (0, 1, ...) or emu, the emulated gfx950."""
    if value == EMULATED:
        return Emulated()
    if value.isdigit():
        return int(value)
    raise click.BadParameter(f"{value!r} is neither a device index (0, 1, ...) nor {EMULATED} "
                             "(the emulated gfx950)")


def parse_register_fill(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | None:
    """--emu-register-fill: a 32-bit value, decimal or 0x hexadecimal."""
    if value is None:
        return None
    try:
        fill = int(value, 0)
    except ValueError:
        fill = -1
    if not 0 <= fill < 1 << 32:
        raise click.BadParameter(f"{value!r} is not a 32-bit value (such as 0, 0xffffffff or 0x7fc00000)")
    return fill


def parse_shard(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        i, n = (int(v) for v in value.split("/"))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not i/n; use e.g. 2/4 (the second of four slices)")
    if not 1 <= i <= n:
        raise click.BadParameter(f"{value!r}: i must be in 1..n")
    return i, n


def writable(_ctx: click.Context, param: click.Parameter, value: str | Path | None) -> Path | None:
    """An output file's option (--json, --csv, -o; --trace and --isa may name a folder): refused in
    one line before any work where it cannot be written, its folder missing included."""
    from wgrad_cli.output.atomic import unwritable

    if value is None:
        return None
    why = unwritable(max(param.opts, key=len), Path(value), str(value).endswith("/") or Path(value).is_dir(),
                     param.name in ("trace", "isa_dir"))
    if why:
        raise WgradError(why)
    return Path(value)


def _wide(_ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    from wgrad_cli.output.grid import set_layout

    set_layout("auto", value)


def wide_option(f: F) -> F:
    """--wide: tables with every column (by default they keep the essential ones, to fit 100 columns)."""
    return click.option("--wide", is_flag=True, expose_value=False, is_eager=True, callback=_wide,
                        help="Print every column of the tables (default: the essential ones).")(f)


def gathered(cls: type[Any], name: str) -> Callable[[F], F]:
    """The command gets the options named as `cls`'s fields as one `cls` object, its parameter `name`
    (fields without an option here take their defaults)."""
    names = [field.name for field in fields(cls)]

    def wrap(f: F) -> F:
        @functools.wraps(f)
        def command(**params: Any) -> Any:
            own = {n: params.pop(n) for n in names if n in params}
            return f(**params, **{name: cls(**own)})

        return command  # type: ignore[return-value]

    return wrap


def toolchain_options(nvcc: bool = True) -> Callable[[F], F]:
    """--cache-dir, --hip-cc, --nvcc (where the command builds sm_90a) and --rocm-path, as `compilers`."""
    def add(f: F) -> F:
        f = gathered(CompilerOptions, "compilers")(f)
        f = click.option("--rocm-path", type=click.Path(exists=True, file_okay=False), envvar="ROCM_PATH",
                         help="ROCm install whose HIP headers clang uses (default $ROCM_PATH).")(f)
        if nvcc:
            f = click.option("--nvcc", help="nvcc to use for sm_90a (default "
                                            "$WGRAD_NVCC, $CUDA_HOME, PATH).")(f)
        f = click.option("--hip-cc", help="hipcc or clang to use for gfx950 (default "
                                          "$WGRAD_HIP_CC, then discovery).")(f)
        f = click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
                         help="Code object cache (default $WGRAD_CACHE_DIR or ~/.cache/wgrad).")(f)
        return f

    return add


def selection_options(targets: bool = True, kernel_help: str = "Build these kernels instead of the config's.",
                      source_help: str = "Source file for the one --kernel (e.g. your checkout "
                                         "of the upstream kernel); without --kernel, your own kernel with "
                                         "its spec beside it (mine.yaml beside mine.hip).",
                      launch: tuple[str, ...] | None = None
                      ) -> Callable[[F], F]:
    """--config, --kernel, --target (where the command has a choice of targets), --shape, --kernel-source,
    --include and --spec, as `selection`. With `launch` (the allow-list: the names of the command's other
    options that apply to a launch file), also --launch FILE in place of --config: `selection` is then a
    LaunchSelection, and any option given that `launch` does not name is refused in one line."""
    def add(f: F) -> F:
        f = launch_path(launch)(f) if launch is not None else gathered(Selection, "selection")(f)
        f = click.option("--spec", "spec_files", multiple=True,
                         type=click.Path(dir_okay=False, path_type=Path),
                         help="Your own kernel's spec file (YAML, as kernels/*.yaml; repeatable): its "
                              "kernel runs on the config's shapes in place of the config's kernels, unless "
                              "--kernel names them.")(f)
        f = click.option("--include", "includes", multiple=True, type=click.Path(path_type=Path),
                         help="Include dir for --kernel-source's kernel (repeatable).")(f)
        f = click.option("--kernel-source", type=click.Path(path_type=Path), help=source_help)(f)
        f = click.option("--shape", "shapes", multiple=True, help="Only these shapes (repeatable).")(f)
        if targets:
            f = click.option("--target", "targets", multiple=True, help="Only these targets (repeatable).")(f)
        f = click.option("--kernel", "kernels", multiple=True, help=kernel_help)(f)
        f = click.option("--config", "config_path", required=launch is None, type=click.Path(path_type=Path),
                         help="YAML shape config: a file, or a shipped config's name (`wgrad "
                              "configs` lists them).")(f)
        if launch is not None:
            f = click.option("--launch", type=click.Path(dir_okay=False, path_type=Path),
                             help="A launch file: one launch of a code object whose arguments are "
                                  "not wgrad's ABI (docs/launch-files.md); in place of --config.")(f)
        return f

    return add


def launch_path(accepts: tuple[str, ...]) -> Callable[[F], F]:
    """`selection` from --config and its choices, or from --launch: then the options given (on the
    command line) that `accepts` does not name are refused, one line for all."""
    names = [field.name for field in fields(Selection)]

    def wrap(f: F) -> F:
        @functools.wraps(f)
        def command(**params: Any) -> Any:
            launch, own = params.pop("launch"), {n: params.pop(n) for n in names if n in params}
            if launch is None:
                if own["config_path"] is None:
                    raise click.UsageError("give --config (a shape config) or --launch (a launch file)")
                return f(**params, selection=Selection(**own))
            ctx = click.get_current_context()
            given = [max(p.opts, key=len) for p in ctx.command.params
                     if p.name not in (*accepts, "launch")
                     and ctx.get_parameter_source(p.name or "") is click.core.ParameterSource.COMMANDLINE]
            if given:
                raise WgradError(f"--launch runs one launch file; leave out {', '.join(given)}, "
                                 "which a launch file does not take")
            return f(**params, selection=LaunchSelection(launch))

        return command  # type: ignore[return-value]

    return wrap


# The options (parameter names) that apply to a launch file, besides --launch, on each command that takes
# one: it is one launch on the emulated gfx950, without a config's kernels, shapes, shards or reference.
VERIFY_LAUNCH = ("device", "seed", "kernel_timeout", "strict_lds", "emu_stack_bytes", "emu_register_fill",
                 "sanitize", "cache_dir", "hip_cc", "rocm_path", "wide")
MODEL_LAUNCH = ("machine", "clock", "figures", "profile", "trace", "seed", "json_path", "csv_path", "no_save",
                "cache_dir", "hip_cc", "rocm_path", "wide")


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="wgrad")
def cli() -> None:
    """Build, verify and benchmark grouped MXFP8 weight-gradient kernels (gfx950, sm_90a)."""


@cli.command()
@selection_options()
@toolchain_options()
@wide_option
@click.option("--shard", callback=parse_shard, help="Build only slice i of n of the build "
                                                    "jobs (CI matrices).")
@click.option("-j", "--jobs", "workers", type=click.IntRange(min=1), default=os.cpu_count() or 1,
              show_default=True, help="Compiles at once.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), callback=writable,
              help="Write records here.")
@click.option("--isa", "isa_dir", type=click.Path(file_okay=False, path_type=Path), callback=writable,
              help="Write each code object's ISA here (gfx950 .s; sm_90a .sass with cuobjdump, else .ptx).")
def build(selection: Selection, compilers: CompilerOptions, shard: Shard | None, workers: int,
          json_path: Path | None, isa_dir: Path | None) -> None:
    """Compile every (kernel, target, M/N/K/E) of a config, cached, and report resource use."""
    from wgrad_cli.commands.build import build_command

    build_command(selection, compilers, shard, workers, json_path, isa_dir)


@cli.command()
@selection_options()
@click.option("--shards", type=click.IntRange(min=1),
              help="Emit n shard entries (for build, verify or bench --shard i/n).")
def matrix(selection: Selection, shards: int | None) -> None:
    """Print the config's job matrix as JSON (GitHub Actions strategy.matrix)."""
    from wgrad_cli.commands.matrix import matrix_command

    click.echo(json.dumps(matrix_command(selection, shards)))


@cli.command()
@toolchain_options()
@wide_option
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), callback=writable,
              help="Write records here.")
def info(compilers: CompilerOptions, json_path: Path | None) -> None:
    """Show the compilers found for each target, in the order they are tried, and why any is skipped."""
    from wgrad_cli.commands.info import info_command

    info_command(compilers, json_path)


def run_options(f: F) -> F:
    """Options of the commands that run kernels on a device (verify, bench), as `run` and `output`."""
    f = gathered(RunOptions, "run")(gathered(Output, "output")(f))
    f = wide_option(f)
    f = click.option("--no-save", is_flag=True, help="Write no results file.")(f)
    f = click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), callback=writable,
                     help="Also write the records as CSV here.")(f)
    f = click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
                     callback=writable,
                     help="Results file (default "
                          "results/<command>-<config>-<kernels>-<arch>[-shard-i-of-n].json; an existing file "
                          "is kept, numbered .1).")(f)
    f = click.option("--shard", callback=parse_shard,
                     help="Run only slice i of n of the (kernel, shape) records.")(f)
    f = click.option("--seed", type=click.IntRange(min=0), help="Problem seed (default: the config's).")(f)
    f = click.option("--device", callback=parse_device, default="0", show_default=True, metavar="N|emu",
                     help="Device index, or emu: the emulated gfx950 (an MI355X run on the "
                          "CPU; verify only).")(f)
    f = click.option("--kernel-timeout", type=click.FloatRange(min=0, min_open=True),
                     help="Seconds any one wait for a GPU may take before the run stops as hung "
                          f"(a deadlocked kernel), exit status 3; default {KERNEL_TIMEOUT_S:g}. On the "
                          "emulator: CPU seconds each of its processes may spend on one launch, "
                          f"default {EMU_CPU_SECONDS:g}; its watchdog stops a spinning kernel sooner, "
                          "by its state.")(f)
    return f


@cli.command()
@selection_options(launch=VERIFY_LAUNCH)
@toolchain_options()
@run_options
@gathered(VerifyOptions, "checks")
@click.option("--reference", type=click.Choice(["auto", "numpy", "device"]), default="auto",
              show_default=True, help="numpy: every element against numpy; device: the reference kernel on "
                                      "the same device, plus numpy on sampled rows; auto: numpy up to 2^38 "
                                      "FLOPs, device beyond.")
@click.option("--rows", type=click.IntRange(min=1), default=64, show_default=True,
              help="Rows per expert that numpy checks when the reference is the device's.")
@click.option("--edge-cases", is_flag=True,
              help="Also run every shape with half its experts empty, all tokens in one expert, "
                   "and skewed routing.")
@click.option("--per-expert", is_flag=True, help="Print every shape's per-expert table (failures "
                                                 "always get one).")
@click.option("--model", is_flag=True,
              help="With --device emu: also model each verified kernel's time on an MI355X at 2.4 GHz "
                   "(as wgrad model does) and show it beside the check, labelled modelled.")
@click.option("--strict-lds", is_flag=True,
              help="With --device emu: stop at the first LDS access beyond the workgroup's "
                   "allocation (the hardware reads 0 and drops the write; by default the emulator does the "
                   "same and counts them).")
@click.option("--emu-stack-bytes", type=click.IntRange(min=16, max=HIP_STACK_CAP),
              help="With --device emu: the stack per work-item of kernels with a dynamic "
                   "stack (recursion, alloca), as hipDeviceSetLimit(hipLimitStackSize) sets "
                   f"it; default {HIP_STACK_BYTES}, the HIP runtime's.")
@click.option("--emu-register-fill", callback=parse_register_fill, metavar="VALUE",
              help="With --device emu: the value every VGPR and AGPR a launch leaves undefined "
                   "starts with (default 0); a kernel whose results change with it reads registers "
                   "it never wrote.")
@click.option("--sanitize", is_flag=True,
              help="With --device emu: also check each wave for missing s_waitcnt, LDS races, "
                   "the ISA's required wait states and reads of never-written registers or LDS; findings "
                   "exit 7 (docs/emulator.md).")
def verify(selection: Selection | LaunchSelection, compilers: CompilerOptions, run: RunOptions,
           output: Output, checks: VerifyOptions, strict_lds: bool, emu_stack_bytes: int | None,
           emu_register_fill: int | None, sanitize: bool) -> None:
    """Run kernels on fresh random problems and check every output; exit 1 if any shape fails."""
    from wgrad_cli.backends.registry import emulated_device, emulated_only
    from wgrad_cli.commands.launchverify import verify_launch
    from wgrad_cli.commands.verify import verify_command

    emulator = EmulatorOptions(strict_lds, emu_stack_bytes, emu_register_fill, sanitize)
    if checks.model:
        emulated_only(run.device, "--model: the modelled launches")
    run = replace(run, device=emulated_device(run.device, emulator, run.kernel_timeout))
    if isinstance(selection, LaunchSelection):
        verify_launch(selection.path, compilers, emulated_only(run.device, "--launch: launch files"),
                      run.seed or 0)
    else:
        verify_command(selection, compilers, run, output, checks)


@cli.command("emu-check")
@selection_options(targets=False, kernel_help="Check these kernels instead of the config's.",
                   source_help="Source file for the one --kernel, or your own kernel with its "
                               "spec beside it.")
@toolchain_options(nvcc=False)
@wide_option
def emu_check(selection: Selection, compilers: CompilerOptions) -> None:
    """List, per gfx950 code object of a config, the instructions the emulator lacks (before running it)."""
    from wgrad_cli.commands.emucheck import emu_check_command

    emu_check_command(selection, compilers)


@cli.command()
@selection_options()
@toolchain_options()
@run_options
@gathered(BenchOptions, "timing")
@click.option("--hot", is_flag=True, help="Back-to-back launches, operands left in cache (default: cold).")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Measure every shape this many times in the run (each a row).")
@click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True,
              help="Launches before sampling.")
@click.option("--min-samples", type=click.IntRange(min=2), default=10, show_default=True)
@click.option("--min-time", type=click.FloatRange(min=0), default=0.5, show_default=True,
              help="Seconds of kernel time to sample at least.")
@click.option("--max-noise", type=click.FloatRange(min=0), default=0.005, show_default=True,
              help="Stop once the relative standard deviation is at most this.")
@click.option("--timeout", type=click.FloatRange(min=0), default=15.0, show_default=True,
              help="Seconds of wall time per shape after which sampling stops regardless (the "
                   "table says so).")
@click.option("--baselines", is_flag=True,
              help="Also time, per shape, torch's paths (dequantize, eager or under torch.compile, then "
                   "_grouped_mm or a matmul per expert; the whole path under max-autotune), the compiled "
                   "dequantization alone, a cuBLAS bf16 GEMM of the same FLOPs, torch's GEMMs on "
                   "already dequantized operands (the bf16 rate on the same shape), and a cuBLAS fp8 "
                   "GEMM of the same FLOPs on the e4m3 bytes, block scales ignored (the fp8 "
                   "rate; needs torch with a GPU).")
@click.option("--baseline", "only_baselines", multiple=True,
              help="Only this baseline (repeatable; implies --baselines).")
@click.option("--flush", type=click.Choice(FLUSHES), default="zero",
              show_default=True, help="How a cold sample's cache is flushed: a memset of zeros, of "
                                      "a byte that changes every sample, or a read of the buffer "
                                      "by torch (docs/timing.md).")
@click.option("--discard-throttled", is_flag=True,
              help="Leave samples whose clock, read while they ran, was held down out of the figures.")
@click.option("--interleave/--no-interleave", default=None,
              help="Sample each shape's kernels and baselines in alternating rounds, the speed-up per round, "
                   "or each path in a block of its own (default: rounds where baselines are timed; "
                   "docs/timing.md).")
@click.option("--rotating", type=click.IntRange(min=2), metavar="N",
              help="Cold without a flush: each launch reads the next of at least N copies of the "
                   "inputs, as many as exceed the last-level cache together, a spin ahead of each "
                   "sample (needs torch).")
@click.option("--data", type=click.Choice(DATA_PATTERNS), default="random", show_default=True,
              help="The inputs' values: random from the seed, or every value zero or one (to see the data's "
                   "effect on clock and time).")
def bench(selection: Selection, compilers: CompilerOptions, run: RunOptions, output: Output,
          timing: BenchOptions) -> None:
    """Time kernels on fresh random problems (cold cache by default): TFLOP/s, GB/s, % of peak."""
    from wgrad_cli.commands.bench import bench_command

    bench_command(selection, compilers, run, output, timing)


@cli.command()
@selection_options(targets=False, launch=MODEL_LAUNCH)
@toolchain_options(nvcc=False)
@wide_option
@gathered(ModelOptions, "chip")
@gathered(ModelViews, "views")
@gathered(Output, "output")
@click.option("--machine", default=DEFAULT_MACHINE, show_default=True,
              help="Machine file of the modelled chip.")
@click.option("--clock", type=click.FloatRange(min=0.1, max=5.0), metavar="GHZ",
              help="Shader clock in GHz (default: the machine file's peak, 2.4; about 2.0 is seen "
                   "under matrix load).")
@click.option("--figure", "figures", multiple=True, metavar="NAME=VALUE",
              help="Set one figure of the machine file, e.g. vmem_latency_cycles=1600 (repeatable; to "
                   "see how much a figure no source publishes moves the time).")
@click.option("--profile", is_flag=True,
              help="Also the time per instruction by cause, its top instructions and loops (saved "
                   "with each row; wgrad show prints it again).")
@click.option("--trace", type=click.Path(), metavar="FILE.json|FOLDER/", callback=writable,
              help="Write one CU's timeline (SIMDs, waves, pipes) as a trace Perfetto "
                   "and chrome://tracing open (wgrad plot draws it); with several kernels or shapes, "
                   "FILE-<kernel>-<shape>.json each, named before the run; a FOLDER/ "
                   "gets <kernel>-<shape>.json each.")
@click.option("--seed", type=click.IntRange(min=0), help="Problem seed (default: the config's).")
@click.option("--shard", callback=parse_shard, help="Model only slice i of n of the (kernel, shape) records.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), callback=writable,
              help="Results file (default "
                   "results/model-<config>-<kernels>-gfx950-<clock>GHz[-shard-i-of-n].json; an existing file "
                   "is kept, numbered .1).")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), callback=writable,
              help="Also write CSV here.")
@click.option("--no-save", is_flag=True, help="Write no results file.")
def model(selection: Selection | LaunchSelection, compilers: CompilerOptions, output: Output,
          chip: ModelOptions, views: ModelViews, seed: int | None, shard: Shard | None) -> None:
    """Model each gfx950 kernel's time on an MI355X from the instruction stream the emulator executes
    (docs/model.md): rows labelled modelled, with the limiter and the time by cause."""
    from wgrad_cli.commands.launchmodel import model_launch_file
    from wgrad_cli.commands.model import model_command

    if isinstance(selection, LaunchSelection):
        model_launch_file(selection.path, compilers, output, chip, views, seed or 0)
    else:
        model_command(selection, compilers, output, chip, views, seed, shard)


@cli.command()
@click.argument("base", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option("--threshold", type=click.FloatRange(min=0), default=0.05, show_default=True,
              help="Relative slow-down of the median, beyond its noise, that counts as a regression.")
@click.option("--allow-different", "allow", multiple=True,
              type=click.Choice(["device", "target", "config", "seed"]),
              help="Compare files that differ in this (repeatable); by default such files are "
                   "refused (exit 2).")
@wide_option
def compare(base: Path, new: Path, threshold: float, allow: tuple[str, ...]) -> None:
    """Per-shape deltas between two results files of one experiment, with a noise-aware verdict per
    row (faster, slower, same within noise); exit 1 on any regression (CI gate)."""
    from wgrad_cli.commands.files import compare_command

    compare_command(base, new, threshold, allow)


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--kernel", "kernels", multiple=True,
              help="Only this kernel's rows (repeatable; default: every kernel).")
@click.option("--markdown", is_flag=True, help="Print the table as Markdown, every column (as in docs/).")
@click.option("--every-run", is_flag=True, help="A row per run of a bench --repeat file, not only the first.")
@wide_option
def speedup(files: tuple[Path, ...], kernels: tuple[str, ...], markdown: bool, every_run: bool) -> None:
    """Speed-ups over the baselines across bench results files (run with --baselines), with the
    geometric mean per kernel over every row given, and each file's device, date and baselines."""
    from wgrad_cli.commands.files import speedup_command

    speedup_command(list(files), kernels, markdown, every_run)


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              callback=writable, help="The figure: FILE.png or FILE.svg (needs matplotlib: "
                                      "pip install 'wgrad[plot]').")
def plot(files: tuple[Path, ...], out: Path) -> None:
    """Plot bench and model results files: per shape, each kernel's TFLOP/s next to its baselines, and a
    roofline (FLOP per byte from the minimum bytes, against the files' recorded peaks and bandwidth);
    or the CU traces of wgrad model --trace, one above the other (the name given to --trace finds the
    files it wrote for several shapes)."""
    from wgrad_cli.commands.files import plot_command

    plot_command(list(files), out)


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "form", type=click.Choice(["table", "markdown", "csv", "json"]),
              help="table: boxed; markdown: aligned Markdown; csv and json: every column "
                   "(default: table on a terminal, markdown elsewhere).")
@click.option("--calibration", is_flag=True,
              help="One table of the files' modelled rows against their published times "
                   "(wgrad model --launch).")
@click.option("--versus", metavar="KERNEL",
              help="One table of the files' modelled rows, each kernel against KERNEL's row of "
                   "the same shape, clock and figures: both times and the speed-up.")
@click.option("--plot", type=click.Path(path_type=Path), metavar="PATH",
              help="With --calibration: also draw modelled against published time on log axes "
                   "(.png or .svg).")
@wide_option
def show(files: tuple[Path, ...], form: str | None, calibration: bool, versus: str | None,
         plot: Path | None) -> None:
    """Print results files (verify, bench, selfbench, build, info) as the tables the commands printed."""
    from wgrad_cli.commands.show import show_command

    show_command(list(files), form, calibration, versus, plot)


@cli.command()
@click.argument("shards", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), callback=writable,
              required=True, help="Write the merged results here.")
@wide_option
def merge(shards: tuple[Path, ...], json_path: Path) -> None:
    """Join the --shard i/n results files of one run into one file and table."""
    from wgrad_cli.commands.files import merge_command

    merge_command(list(shards), json_path)


@cli.command()
@click.option("--size", type=click.IntRange(min=256), default=8192, show_default=True, help="M = N = K.")
@click.option("--experts", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--build-config", type=click.Path(path_type=Path), default=CONFIGS_DIR / "ci.yaml",
              show_default="the shipped ci config",
              help="Config whose cold and warm builds are timed.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), callback=writable,
              help="Write records here.")
def selfbench(size: int, experts: int, build_config: Path, json_path: Path | None) -> None:
    """Time the host-side pipeline against its targets: reference, problem generation, warm builds."""
    from wgrad_cli.commands.selfbench import selfbench_command

    selfbench_command(size, experts, build_config, json_path)


@cli.command()
@wide_option
def configs() -> None:
    """List the shipped configs: each can be given to --config by its name."""
    from wgrad_cli.commands.configs import configs_command

    configs_command()


def main() -> None:
    cli(prog_name="wgrad")
