"""`wgrad model --launch FILE`: a launch file's kernel through the timing model, as one modelled
bench row (with the published time the file gives, if any: the model's calibration).

Its workgroups are one class (`classes: one`, the default: one instruction stream, emulated once
and checked on the last workgroup) or each their own (`classes: each`). The grid reads the launch's
input buffers (every buffer not marked `output`) from HBM once, an equal share in each workgroup
(schedule.py)."""

from __future__ import annotations

import hashlib
import platform
import time
from pathlib import Path

import numpy as np
from rich.markup import escape

from wgrad_cli.backends.registry import peak
from wgrad_cli.config.launchfile import Buffer, LaunchFile, load_launch
from wgrad_cli.config.options import CompilerOptions, ModelOptions, ModelViews, Output
from wgrad_cli.config.shipped import config_name
from wgrad_cli.commands.launchsetup import TARGET, Built, code_object, place
from wgrad_cli.device.session import RunEnvironment
from wgrad_cli.commands.model import machine_of, save_modelled, say_classes, views_of
from wgrad_cli.model.launch import Modelled
from wgrad_cli.model.machine import Machine
from wgrad_cli.model.runtime import ModelRuntime, Plan
from wgrad_cli.model.schedule import Sharing
from wgrad_cli.model.timeline import Timeline
from wgrad_cli.output.console import err, out
from wgrad_cli.results.files import default_path
from wgrad_cli.results.records import BenchRow, Profile, ShapeRef, Summary
from wgrad_cli.results.tables import model_table, profile_tables

ROUTING = "launch file"  # what a launch file's row says in place of the ABI's routing


def plan_of(launch: LaunchFile) -> Plan:
    """A launch file says nothing of which workgroups read which bytes: its inputs are read from
    HBM once over the grid (the compulsory traffic), an equal share by each workgroup, and every
    load besides from the last-level cache."""
    groups = launch.workgroups
    inputs = sum(a.size for a in launch.args if isinstance(a, Buffer) and not a.output)
    share = -(-inputs // groups)
    return Plan([0] * groups if launch.classes == "one" else None,
                Sharing(list(range(groups)), dict.fromkeys(range(groups), share)), launch.class_tolerance)


def _row(launch: LaunchFile, built: Built, m: Modelled, machine: Machine, rt: ModelRuntime, seed: int,
         wall: float, profile: Profile | None) -> BenchRow:
    ms = m.seconds * 1e3
    tflops = launch.flops / m.seconds / 1e12
    known = peak(rt.device)
    moved = sum(a.size for a in launch.args if isinstance(a, Buffer))
    published = launch.published
    M, N, K = launch.shape or (0, 0, 0)
    return BenchRow(
        code_object_sha256=built.sha256, compiler=built.compiler, flags=built.flags, index=0,
        kernel=launch.name, target=TARGET, shape=ShapeRef(launch.name, M, N, K, 1, ROUTING), seed=seed,
        cache="modelled", summary=Summary(1, ms, ms, ms, ms, ms, 0.0), stop="modelled",
        wall_seconds=round(wall, 3), flops=launch.flops, min_bytes=moved, tflops=tflops,
        gbps=moved / m.seconds / 1e9,
        pct_peak=100 * tflops / known.matrix_tflops if known and launch.flops else None,
        clock_mhz=round(m.clock_ghz * 1000), grid=launch.workgroups,
        model=m.figures(machine, profile, published.us if published else None,
                        published.source if published else None))


def model_launch_file(path: Path, compilers: CompilerOptions, output: Output, chip: ModelOptions,
                      views: ModelViews, seed: int) -> None:
    began = time.perf_counter()
    launch = load_launch(path)
    m = machine_of(chip)
    built = code_object(launch, compilers)
    rt = ModelRuntime(m, views.profile)
    rt.timeline = Timeline() if views.trace else None
    placed = place(rt, launch, built.image, seed)
    try:
        rt.plan = plan_of(launch)
        placed()
    finally:
        placed.free()
    err.print(f"modelled device: {rt.device.name}; machine file {chip.machine}; seed {seed}; "
              f"{launch.workgroups:,} workgroups", highlight=False)
    profile = views_of(rt, built.path, views.trace, launch.name)
    if views.trace:
        err.print(escape(f"trace of one CU: {views.trace}"), highlight=False)
    modelled = rt.modelled[-1]
    row = _row(launch, built, modelled, m, rt, seed, time.perf_counter() - began, profile)
    out.print(model_table([row], f"wgrad model: {rt.device.name} ({TARGET}), {launch.name}, seed {seed}"))
    for table in profile_tables([row]):
        out.print(table)
    say_classes([row])
    if modelled.spread:
        err.print(f"the checking workgroup's wave-instructions were {100 * modelled.spread:.2f}% from its "
                  f"class's (class_tolerance {launch.class_tolerance:g})", highlight=False)
    if output.no_save:
        return
    env = RunEnvironment(config_name(path), hashlib.sha256(path.read_bytes()).hexdigest(), seed, ROUTING,
                         TARGET, rt.device, platform.python_version(), np.__version__)
    save_modelled(output.json_path or default_path("model", launch.name, (), m.arch, None, m.clock_ghz),
                  output, [row], env, chip, m, None)
