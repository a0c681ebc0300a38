"""`wgrad build`: compile every (kernel, target, dims) of a config, cached, and report resource use."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape

from wgrad_cli.backends.registry import BACKENDS
from wgrad_cli.compile.cache import Cache
from wgrad_cli.compile.jobs import BuildJob, BuildResult, failures, resolve_compilers, run_builds
from wgrad_cli.compile.selection import select, shard_jobs
from wgrad_cli.compile.toolchain import Toolchains
from wgrad_cli.config.kernelspec import load_specs
from wgrad_cli.config.options import CompilerOptions, Selection, Shard
from wgrad_cli.config.shipped import config_name
from wgrad_cli.errors import CheckFailed, ToolchainError
from wgrad_cli.output.console import err, out, progress
from wgrad_cli.output.grid import plural
from wgrad_cli.results.build_tables import build_table
from wgrad_cli.results.document import write_json
from wgrad_cli.results.records import BuildRecord, ShapeRef, to_json

Skipped = dict[tuple[str, bool], tuple[ToolchainError, list[BuildJob]]]


def build_record(result: BuildResult, shape: ShapeRef) -> BuildRecord:
    """The record of one shape's build (records of shapes with the same dims share the build)."""
    return BuildRecord(shape=shape, kernel=result.job.kernel.name, target=result.job.target, ok=result.ok,
                       code_object=str(result.code_object) if result.code_object else None,
                       compile_seconds=round(result.compile_seconds, 4), cache_hit=result.cache_hit,
                       compiler=result.compiler, resources=result.resources, errors=result.errors)


def skipped_lines(skipped: Skipped, targets: tuple[str, ...]) -> list[str]:
    """One line per target (or per target's kernels that need HIP headers) that has no compiler:
    what is missing, how to get it, and how to leave it out."""
    lines = []
    for (target, headers), (exc, jobs) in skipped.items():
        kernels = sorted({j.kernel.name for j in jobs})
        others = [t for t in targets if t != target]
        if headers:
            what, skip = f"{plural(len(jobs), 'build')} of {', '.join(kernels)}", "leave those kernels out"
        else:
            what = plural(len(jobs), "build")
            skip = f"pass --target {' --target '.join(others)}" if others else "leave this target out"
        lines.append(f"{target}: skipped {what}: {' '.join(exc.lines).removeprefix(target + ': ')}; "
                     f"to build the rest only, {skip}")
    return lines


def build_command(selection: Selection, compilers: CompilerOptions, shard: Shard | None, workers: int,
                  json_path: Path | None, isa_dir: Path | None) -> None:
    config, records = select(load_specs(), selection)
    jobs = shard_jobs(list(dict.fromkeys(job for job, _ in records)), shard)
    cache = Cache.writable(compilers.cache_dir)
    toolchains = Toolchains.chosen(compilers, cache.root, BACKENDS)
    resolved = resolve_compilers(jobs, toolchains)
    skipped: Skipped = {}
    for job in jobs:
        key = (job.target, job.kernel.needs_hip_headers)
        missing = resolved[key]
        if isinstance(missing, ToolchainError):
            skipped.setdefault(key, (missing, []))[1].append(job)
    runnable = [job for job in jobs if (job.target, job.kernel.needs_hip_headers) not in skipped]
    with progress("compiling", len(runnable)) as bar:
        def done(r: BuildResult) -> None:
            bar.update(bar.task_ids[0], advance=1, description=f"{r.job.label} {'ok' if r.ok else 'FAILED'}")

        results = run_builds(runnable, toolchains, cache, config.limits, workers, isa_dir, done)
    by_job = {r.job: r for r in results}
    built = [build_record(by_job[job], ShapeRef(shape.name, job.dims.M, job.dims.N, job.dims.K, job.dims.E,
                                                shape.routing.describe()))
             for job, shape in records if job in by_job]
    if built:
        out.print(build_table(built))
    for who, lines in failures(results):
        err.print(f"[red]{escape(who)}:[/]", highlight=False)
        for line in lines:
            err.print(f"  {escape(line)}", highlight=False)
    for kernel in dict.fromkeys(job.kernel for job in runnable if job.kernel.dynamic_shared):
        err.print(f"{escape(kernel.name)}: {kernel.dynamic_shared:,} B of dynamic shared memory per "
                  "workgroup at launch (its spec's launch.dynamic_shared) beside the static bytes above; "
                  "the occupancy counts both", highlight=False)
    for line in skipped_lines(skipped, config.targets):
        err.print(f"[yellow]{escape(line)}[/]", highlight=False)
    if json_path:
        write_json(json_path, "build", [to_json(r) for r in built], config=config_name(config.path),
            skipped=[{"target": target, "kernels": sorted({j.kernel.name for j in skipped_jobs}),
                      "builds": len(skipped_jobs), "reason": " ".join(exc.lines)}
                     for (target, _), (exc, skipped_jobs) in skipped.items()])
    failed = sum(not r.ok for r in results)
    hits = sum(r.cache_hit for r in results)
    limits = ", ".join(f"{k} <= {v}" for k, v in sorted(config.limits.items())) or "none"
    left_out = [job for _, skipped_jobs in skipped.values() for job in skipped_jobs]
    skips = f", {plural(len(left_out), 'build')} skipped" if skipped else ""
    err.print(f"{len(results) - failed}/{plural(len(results), 'build')} ok, {hits} from the cache{skips}; "
              f"limits: {limits}", highlight=False)
    asked = [j for j in left_out if j.target in selection.targets or j.kernel.name in selection.kernels]
    if failed or asked or not results:
        raise CheckFailed()
