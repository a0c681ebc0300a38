"""What a run works on: the config loaded with the command line's choice of kernels, targets and
shapes, as (build job, shape) records, and the slice of them a shard runs."""

from __future__ import annotations

from typing import TypeVar

from wgrad_cli.compile.jobs import BuildJob
from wgrad_cli.config.kernelspec import KernelSpec, load_user_specs, spec_beside
from wgrad_cli.config.loader import Config, Shape, load_config, source_problem
from wgrad_cli.config.options import Selection, Shard
from wgrad_cli.config.shipped import config_file
from wgrad_cli.errors import WgradError
from wgrad_cli.output.grid import plural


def select(specs: dict[str, KernelSpec], chosen: Selection) -> tuple[Config, list[tuple[BuildJob, Shape]]]:
    """Load the config (with the CLI's kernel choice) and list its (build job, shape) records."""
    config_path = config_file(chosen.config_path)
    kernels, targets, shapes = chosen.kernels, chosen.targets, chosen.shapes
    kernel_source, includes = chosen.kernel_source, chosen.includes
    beside = spec_beside(kernel_source) if kernel_source and not kernels and kernel_source.is_file() else None
    spec_files = chosen.spec_files + ((beside,) if beside else ())
    if spec_files:
        own = load_user_specs(spec_files, specs)
        specs = {**specs, **own}
        kernels = kernels or tuple(own)  # the user's kernels on the config's shapes
    if (kernel_source or includes) and len(kernels) != 1:
        raise WgradError("--kernel-source/--include: name exactly one --kernel they belong to (or put the "
                         "kernel's spec beside its source, as mine.yaml beside mine.hip)")
    missing = ([f"--kernel-source {kernel_source}: no such file; give the kernel's source file"]
               if kernel_source and not kernel_source.is_file() else [])
    if kernel_source and not missing and source_problem(kernel_source):
        missing.append(f"--kernel-source {kernel_source}: {source_problem(kernel_source)}; "
                       "give the kernel's C++ source (UTF-8 text)")
    missing += [f"--include {d}: not a directory; give an existing include dir"
                for d in includes if not d.is_dir()]
    if missing:
        raise WgradError(missing)
    overrides = {kernels[0]: (kernel_source, includes or None)} if kernel_source or includes else {}
    config = load_config(config_path, specs, overrides, kernel_names=kernels or None)
    for flag, asked, known in (("--target", targets, config.targets),
                               ("--shape", shapes, [s.name for s in config.shapes])):
        unknown = [c for c in asked if c not in known]
        if unknown:
            raise WgradError(f"{flag} {', '.join(unknown)}: not in {config_path}; "
                             f"choose from {', '.join(known)}")
    records = [(BuildJob(kernel, target, shape.dims), shape)
               for kernel, target in config.pairs() if not targets or target in targets
               for shape in config.shapes if not shapes or shape.name in shapes]
    # a kernel's stated size limits, before anything compiles (one line per kernel, shape and limit)
    beyond = dict.fromkeys(
        f"{job.kernel.name} on {shape.name} (M={shape.dims.M:,}, N={shape.dims.N:,}, K={shape.dims.K:,}): "
        f"{limit.why} ({limit.require}, {job.kernel.spec_file.name}); leave the kernel or the shape out "
        "(--kernel, --shape), or make the shape smaller"
        for job, shape in records for limit in job.kernel.beyond(shape.dims))
    if beyond:
        raise WgradError(list(beyond))
    return config, records


T = TypeVar("T")


def shard_jobs(jobs: list[T], shard: Shard | None, what: str = "build jobs") -> list[T]:
    """Slice i of n (1-based), round robin over the jobs (build jobs, or verify and bench records) in
    config order; an empty slice is an error (a CI matrix with more shards than jobs would pass while
    doing nothing)."""
    if shard is None:
        return jobs
    i, n = shard
    if i > len(jobs):
        raise WgradError(f"--shard {i}/{n}: this selection has {plural(len(jobs), what[:-1], what)}, "
                         f"so slice {i} would be empty; use at most {len(jobs)} shards")
    return jobs[i - 1::n]
