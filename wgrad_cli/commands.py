"""What the CLI commands do, apart from parsing their options (cli.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from rich.markup import escape

from wgrad_cli.build import BuildJob, BuildResult, resolve_compilers, result_json, run_builds
from wgrad_cli.cache import Cache, default_root
from wgrad_cli.config import Config, Shape, load_config, source_problem
from wgrad_cli.errors import ToolchainError, WgradError
from wgrad_cli.grid import Grid, plural
from wgrad_cli.kernelspec import KernelSpec, load_specs
from wgrad_cli.report import build_table, err, out, progress, toolchain_table, write_json
from wgrad_cli.shipped import config_file, config_name, shipped_configs
from wgrad_cli.targets import TARGETS
from wgrad_cli.toolchain import Toolchains
from wgrad_cli.yamlsource import load


def select(specs: dict[str, KernelSpec], config_path: Path, kernels: tuple[str, ...], targets: tuple[str, ...], shapes: tuple[str, ...],
           kernel_source: Path | None, includes: tuple[Path, ...]) -> tuple[Config, list[tuple[BuildJob, Shape]]]:
    """Load the config (with the CLI's kernel choice) and list its (build job, shape) records."""
    config_path = config_file(config_path)
    if (kernel_source or includes) and len(kernels) != 1:
        raise WgradError("--kernel-source/--include: name exactly one --kernel they belong to")
    missing = ([f"--kernel-source {kernel_source}: no such file; give the kernel's source file"]
               if kernel_source and not kernel_source.is_file() else [])
    if kernel_source and not missing and source_problem(kernel_source):
        missing.append(f"--kernel-source {kernel_source}: {source_problem(kernel_source)}; give the kernel's C++ "
                       "source (UTF-8 text)")
    missing += [f"--include {d}: not a directory; give an existing include dir" for d in includes if not d.is_dir()]
    if missing:
        raise WgradError(missing)
    overrides = {kernels[0]: (kernel_source, includes or None)} if kernel_source or includes else {}
    config = load_config(config_path, specs, overrides, kernel_names=kernels or None)
    for flag, chosen, known in (("--target", targets, config.targets), ("--shape", shapes, [s.name for s in config.shapes])):
        unknown = [c for c in chosen if c not in known]
        if unknown:
            raise WgradError(f"{flag} {', '.join(unknown)}: not in {config_path}; choose from {', '.join(known)}")
    records = [(BuildJob(kernel, target, shape.dims), shape)
               for kernel, target in config.pairs() if not targets or target in targets
               for shape in config.shapes if not shapes or shape.name in shapes]
    return config, records


T = TypeVar("T")


def shard_jobs(jobs: list[T], shard: tuple[int, int] | None, what: str = "build jobs") -> list[T]:
    """Slice i of n (1-based), round robin over the jobs (build jobs, or verify and bench records) in
    config order; an empty slice is an error (a CI matrix with more shards than jobs would pass while
    doing nothing)."""
    if shard is None:
        return jobs
    i, n = shard
    if i > len(jobs):
        raise WgradError(f"--shard {i}/{n}: this selection has {plural(len(jobs), what[:-1], what)}, so slice {i} "
                         f"would be empty; use at most {len(jobs)} shards")
    return jobs[i - 1::n]


Skipped = dict[tuple[str, bool], tuple[ToolchainError, list[BuildJob]]]


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


def build_command(config_path: Path, kernels: tuple[str, ...], targets: tuple[str, ...], shapes: tuple[str, ...],
                  kernel_source: Path | None, includes: tuple[Path, ...], cache_dir: Path | None, hip_cc: str | None,
                  nvcc: str | None, rocm_path: str | None, shard: tuple[int, int] | None, workers: int,
                  json_path: Path | None, isa_dir: Path | None) -> None:
    config, records = select(load_specs(), config_path, kernels, targets, shapes, kernel_source, includes)
    jobs = shard_jobs(list(dict.fromkeys(job for job, _ in records)), shard)
    cache = Cache(cache_dir or default_root())
    cache.check_writable()
    toolchains = Toolchains(cache.root / "zig-shim", hip_cc, nvcc, rocm_path)
    compilers = resolve_compilers(jobs, toolchains)
    skipped: Skipped = {}
    for job in jobs:
        key = (job.target, job.kernel.needs_hip_headers)
        missing = compilers[key]
        if isinstance(missing, ToolchainError):
            skipped.setdefault(key, (missing, []))[1].append(job)
    runnable = [job for job in jobs if (job.target, job.kernel.needs_hip_headers) not in skipped]
    with progress("compiling", len(runnable)) as bar:
        def done(r: BuildResult) -> None:
            bar.update(bar.task_ids[0], advance=1, description=f"{r.job.label} {'ok' if r.ok else 'FAILED'}")

        results = run_builds(runnable, toolchains, cache, config.limits, workers, isa_dir, done)
    by_job = {r.job: r for r in results}
    shapes_of = [[s.name for job, s in records if job == r.job] for r in results]
    if results:
        out.print(build_table(results, shapes_of))
    for r in results:
        for line in r.errors:
            err.print(f"[red]{r.job.label}:[/] {escape(line)}", highlight=False)
    for line in skipped_lines(skipped, config.targets):
        err.print(f"[yellow]{escape(line)}[/]", highlight=False)
    if json_path:
        write_json(json_path, "build", [
            {"shape": {"name": shape.name, "M": job.dims.M, "N": job.dims.N, "K": job.dims.K, "E": job.dims.E,
                       "routing": shape.routing.describe()},
             **result_json(by_job[job])} for job, shape in records if job in by_job], config=config_name(config.path),
            skipped=[{"target": target, "kernels": sorted({j.kernel.name for j in skipped_jobs}), "builds": len(skipped_jobs),
                      "reason": " ".join(exc.lines)} for (target, _), (exc, skipped_jobs) in skipped.items()])
    failed = sum(not r.ok for r in results)
    hits = sum(r.cache_hit for r in results)
    limits = ", ".join(f"{k} <= {v}" for k, v in sorted(config.limits.items())) or "none"
    left_out = [job for _, skipped_jobs in skipped.values() for job in skipped_jobs]
    skips = f", {plural(len(left_out), 'build')} skipped" if skipped else ""
    err.print(f"{len(results) - failed}/{plural(len(results), 'build')} ok, {hits} from the cache{skips}; "
              f"limits: {limits}", highlight=False)
    asked = [j for j in left_out if j.target in targets or j.kernel.name in kernels]
    if failed or asked or not results:
        raise SystemExit(1)


def matrix_command(config_path: Path, kernels: tuple[str, ...], targets: tuple[str, ...], shapes: tuple[str, ...],
                   kernel_source: Path | None, includes: tuple[Path, ...], shards: int | None) -> dict[str, Any]:
    """GitHub Actions strategy.matrix: one entry per (kernel, target, shape), or per shard."""
    _, records = select(load_specs(), config_path, kernels, targets, shapes, kernel_source, includes)
    if shards:
        return {"include": [{"shard": f"{i}/{shards}"} for i in range(1, shards + 1)]}
    return {"include": [{"kernel": job.kernel.name, "target": job.target, "shape": shape.name}
                        for job, shape in records]}


def info_command(cache_dir: Path | None, hip_cc: str | None, nvcc: str | None, rocm_path: str | None,
                 json_path: Path | None) -> None:
    toolchains = Toolchains((cache_dir or default_root()) / "zig-shim", hip_cc, nvcc, rocm_path)
    rows = []
    for target in TARGETS:
        candidates = list(toolchains.candidates(target))
        first = next((c for c in candidates if c.compiler), None)
        rows += [(target, c, c is first) for c in candidates]
    out.print(toolchain_table(rows))
    if json_path:
        write_json(json_path, "info", [
            {"target": t, "candidate": c.name, "usable": c.compiler is not None, "chosen": chosen,
             "kind": c.compiler.kind if c.compiler else None, "version": c.compiler.version if c.compiler else None,
             "command": list(c.compiler.argv0) if c.compiler else None, "reason": c.reason} for t, c, chosen in rows])


def configs_command() -> None:
    """The shipped configs: name, shapes, kernels, description."""
    table = Grid("wgrad configs: give one to --config by its name")
    table.add_column("name")
    table.add_column("shapes", justify="right")
    table.add_column("kernels")
    table.add_column("description")
    table.add_column("file", detail=True)
    specs = load_specs()
    for name, path in shipped_configs().items():
        config = load_config(path, specs)
        description = load(path)[0].get("description", "")
        table.add_row(name, str(len(config.shapes)), ", ".join(k.name for k in config.kernels),
                      " ".join(str(description).split()), str(path))
    out.print(table)
