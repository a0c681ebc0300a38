"""What the CLI commands do, apart from parsing their options (cli.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.markup import escape

from wgrad_cli.build import BuildJob, BuildResult, resolve_compilers, result_json, run_builds
from wgrad_cli.cache import Cache, default_root
from wgrad_cli.config import load_config
from wgrad_cli.errors import CheckFailed, ToolchainError
from wgrad_cli.grid import Grid, plural
from wgrad_cli.kernelspec import load_specs
from wgrad_cli.console import err, out, progress
from wgrad_cli.document import write_json
from wgrad_cli.report import build_table, toolchain_table
from wgrad_cli.options import CompilerOptions, Selection, Shard
from wgrad_cli.selection import select, shard_jobs
from wgrad_cli.shipped import config_name, shipped_configs
from wgrad_cli.targets import TARGETS
from wgrad_cli.toolchain import Toolchains
from wgrad_cli.yamlsource import load


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


def build_command(selection: Selection, compilers: CompilerOptions, shard: Shard | None, workers: int,
                  json_path: Path | None, isa_dir: Path | None) -> None:
    config, records = select(load_specs(), selection)
    jobs = shard_jobs(list(dict.fromkeys(job for job, _ in records)), shard)
    cache = Cache.writable(compilers.cache_dir)
    toolchains = Toolchains.chosen(compilers, cache.root)
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
    asked = [j for j in left_out if j.target in selection.targets or j.kernel.name in selection.kernels]
    if failed or asked or not results:
        raise CheckFailed()


def matrix_command(selection: Selection, shards: int | None) -> dict[str, Any]:
    """GitHub Actions strategy.matrix: one entry per (kernel, target, shape), or per shard."""
    _, records = select(load_specs(), selection)
    if shards:
        return {"include": [{"shard": f"{i}/{shards}"} for i in range(1, shards + 1)]}
    return {"include": [{"kernel": job.kernel.name, "target": job.target, "shape": shape.name}
                        for job, shape in records]}


def info_command(compilers: CompilerOptions, json_path: Path | None) -> None:
    toolchains = Toolchains.chosen(compilers, compilers.cache_dir or default_root())
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
