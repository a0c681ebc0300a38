"""What verify and bench share: pick the device and target, build the kernels, describe the run.

Records are (kernel, shape) pairs of the config for the chosen target, numbered in config order
before sharding, so every shard knows its place in the whole run.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from wgrad_cli.compile.cache import Cache, sha256_file
from wgrad_cli.compile.jobs import BuildJob, BuildResult, failures, run_builds
from wgrad_cli.compile.selection import select, shard_jobs
from wgrad_cli.compile.toolchain import Toolchains
from wgrad_cli.config.kernelspec import KernelSpec, load_specs
from wgrad_cli.config.loader import Config, Shape
from wgrad_cli.config.options import CompilerOptions, Device, RunOptions, Selection
from wgrad_cli.config.shipped import config_name
from wgrad_cli.config.targets import TARGETS, Target
from wgrad_cli.device.backend import RunBackend
from wgrad_cli.device.runtime import DeviceInfo, Runtime
from wgrad_cli.errors import DriverError, NoDevice, WgradError
from wgrad_cli.output.console import progress
from wgrad_cli.problem.abi import Dims
from wgrad_cli.problem.routing import edge_routings
from wgrad_cli.results.records import CodeObject, ShapeRef


@dataclass(frozen=True)
class RunEnvironment:
    """Where and on what a run ran: the environment its results file starts with (records.Provenance
    reads it back)."""

    config: str  # a shipped config's name, or the path of the config given
    config_sha256: str
    seed: int
    quantization: str
    target: str
    device: DeviceInfo
    python: str
    numpy: str


@dataclass(frozen=True)
class Record:
    index: int  # place in the unsharded run
    job: BuildJob
    shape: Shape

    def shape_ref(self) -> ShapeRef:
        """The shape as a results record names it."""
        d = self.shape.dims
        return ShapeRef(self.shape.name, d.M, d.N, d.K, d.E, self.shape.routing.describe())


@dataclass
class Session:
    config: Config
    target: Target
    backend: RunBackend  # the target's
    rt: Runtime
    records: list[Record]
    builds: dict[BuildJob, BuildResult]
    seed: int
    specs: dict[str, KernelSpec]  # every kernel spec, for the helper kernels (reference, empty)
    kernel_timeout: float  # seconds a launch may run before the run stops as hung (waiting.py)

    @cached_property
    def events(self) -> tuple[object, object]:
        """One pair of device events that brackets every timed sample of the run."""
        return self.rt.event(), self.rt.event()

    def by_shape(self) -> dict[Shape, list[Record]]:
        """The records grouped by shape, in order of first appearance: one problem serves each group."""
        groups: dict[Shape, list[Record]] = {}
        for rec in self.records:
            groups.setdefault(rec.shape, []).append(rec)
        return groups

    def code_object(self, job: BuildJob) -> CodeObject:
        """Which code object ran: its hash, compiler and flags."""
        b = self.builds[job]
        return CodeObject(code_object_sha256=sha256_file(b.code_object) if b.code_object else None,
                          compiler=b.compiler, flags=list(job.kernel.flags[job.target]),
                          build_errors=b.errors)

    def environment(self) -> RunEnvironment:
        return RunEnvironment(config_name(self.config.path), sha256_file(self.config.path), self.seed,
                              self.config.quantization, self.target.name, self.rt.device,
                              platform.python_version(), np.__version__)


def probe(targets: list[str], device: Device, backends: Mapping[str, RunBackend]) -> tuple[Target, Runtime]:
    """The first target whose backend opens device `device` with a matching architecture; NoDevice where
    none opens one, DriverError where only devices of other architectures are."""
    failures, found = [], False
    for name in targets:
        target = TARGETS[name]
        try:
            rt = backends[name].open_runtime(device)
        except DriverError as exc:
            failures += [f"{name}: {line}" for line in exc.lines]
            continue
        if rt.device.arch == target.device_arch:
            return target, rt
        failures.append(f"{name}: device {device} is {rt.device.name} ({rt.device.arch}); {name} code needs "
                        f"{target.device_arch}")
        rt.close()
        found = True
    if found:
        raise DriverError(failures)
    raise NoDevice(failures or ["no target to run: the config and --target leave none"], targets)


def open_session(selection: Selection, compilers: CompilerOptions, run: RunOptions, edge_cases: bool,
                 extra: Callable[[Dims], list[tuple[str, Dims]]],
                 backends: Mapping[str, RunBackend]) -> Session:
    """Load the config, open the device (through the first of its targets' `backends` that has one),
    choose the records (sharded) and build what they need.

    `extra` maps a record's dims to the helper kernels the command will run for it, as (kernel
    name, dims) builds: the reference kernel for shapes verified on the device, bench's empty kernel.
    """
    specs = load_specs()
    config, pairs = select(specs, selection)
    # targets with work, config order
    target, rt = probe(list(dict.fromkeys(job.target for job, _ in pairs)), run.device, backends)
    expanded = [(job, shape) for job, shape in pairs if job.target == target.name]
    if edge_cases:
        expanded += [(job, replace(shape, name=f"{shape.name}+{suffix}", routing=routing))
                     for job, shape in pairs if job.target == target.name
                     for suffix, routing in edge_routings(shape.dims.E)]
    try:
        records = shard_jobs([Record(i, job, shape) for i, (job, shape) in enumerate(expanded)], run.shard,
                             "(kernel, shape) records")
    except WgradError:
        rt.close()
        raise
    jobs = list(dict.fromkeys([r.job for r in records] + [
        BuildJob(specs[name], target.name, dims) for r in records for name, dims in extra(r.shape.dims)]))
    cache = Cache.writable(compilers.cache_dir)
    toolchains = Toolchains.chosen(compilers, cache.root, backends)
    with progress("compiling", len(jobs)) as bar:
        results = run_builds(jobs, toolchains, cache, config.limits, os.cpu_count() or 1,
                             on_done=lambda r: bar.update(bar.task_ids[0], advance=1,
                                                          description=r.job.label))
    failed = [line for who, lines in failures(results)
              for line in ([f"{who}: {lines[0]}"] if len(lines) == 1
                           else [f"{who}:", *(f"  {e}" for e in lines)])]
    if failed:
        rt.close()
        raise WgradError(["builds failed (see wgrad build for the table):", *failed])
    return Session(config, target, backends[target.name], rt, records, {r.job: r for r in results},
                   config.seed if run.seed is None else run.seed, specs, run.wait_seconds)
