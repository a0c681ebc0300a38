"""`wgrad selfbench`: the host-side pipeline timed against its targets, each as a ratio to a
baseline measured in the same run, so the figures carry over between machines.

- reference: grad_w for M = N = K = size, E experts, uniform routing, in each precision, vs one
  plain np.matmul of the same FLOPs in that precision (target <= 1.25); its peak traced memory
  beyond the inputs and the result, vs the bytes of the dequantized fp32 operands (<= 2.5).
- problem generation for that shape vs drawing as many float32 normals and casting them to
  fp8 (target < 2).
- `wgrad build` of a config with a warm cache vs a cold one, both for the build step itself and
  for the whole command including Python's start-up (target < 2%, on the build step).
- the emulator running a project kernel that is mostly scaled MFMA and LDS traffic (one 512-thread
  workgroup, a 256 x 256 x 128 step) on one core, vs its 50 ms goal (target < 1).
- the emulator's rate on the reference kernel at smoke.yaml's one-expert shape on one core, as
  nanoseconds per lane-instruction vs the 20 ns of its goal of 5 x 10^7 lane-instructions/s
  (target <= 1).
Rows marked informational explain another row: the bare per-expert BLAS time shows what the
grouped shape costs BLAS (k = M/E is a short inner dimension), and the first touch what it costs
to write a result E times the baseline's size into fresh memory.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from wgrad_cli.backends.registry import BACKENDS, EMULATED_TARGET, backend
from wgrad_cli.compile.cache import Cache
from wgrad_cli.compile.jobs import BuildJob, run_builds
from wgrad_cli.compile.toolchain import Toolchains
from wgrad_cli.config.kernelspec import load_specs
from wgrad_cli.config.loader import load_config
from wgrad_cli.config.shipped import config_file, config_name
from wgrad_cli.config.targets import TARGETS
from wgrad_cli.device.launch import prepare
from wgrad_cli.commands import selfbench_mfma as mfma_step
from wgrad_cli.emu.device import EmuRuntime
from wgrad_cli.errors import CheckFailed, ToolchainError
from wgrad_cli.output.console import err, out
from wgrad_cli.output.grid import plural
from wgrad_cli.problem.abi import Dims
from wgrad_cli.problem.generate import generate
from wgrad_cli.problem.mxfp8 import E4M3
from wgrad_cli.problem.reference import PRECISIONS, grad_w
from wgrad_cli.problem.routing import Routing
from wgrad_cli.results.document import write_json
from wgrad_cli.results.records import Ratio
from wgrad_cli.results.tables import selfbench_table

T = TypeVar("T")


def _timed(f: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[float, T]:
    start = time.perf_counter()
    value = f(*args, **kwargs)
    return time.perf_counter() - start, value


def _expert_matmuls(d: Dims, dtype: type, rng: np.random.Generator) -> float:
    """Seconds for E bare matmuls of one expert's size: the BLAS part of the reference, its floor."""
    a: np.ndarray = rng.standard_normal((d.N, d.M // d.E)).astype(dtype)
    b: np.ndarray = rng.standard_normal((d.M // d.E, d.K)).astype(dtype)
    out: np.ndarray = np.ones((d.N, d.K), dtype=dtype)
    start = time.perf_counter()
    for _ in range(d.E):
        np.matmul(a, b, out=out)
    return time.perf_counter() - start


def _first_touch(shape: tuple[int, ...]) -> float:
    """Seconds to allocate and write a float32 array once: the page-fault cost of a result that size."""
    start = time.perf_counter()
    np.ones(shape, dtype=np.float32)
    return time.perf_counter() - start


def reference_ratios(size: int, experts: int, seed: int = 0) -> list[Ratio]:
    d = Dims(size, size, size, experts)
    t_gen, problem = _timed(generate, d, Routing(), seed)
    rng = np.random.default_rng(seed)
    t_base_gen, _ = _timed(lambda: rng.standard_normal((d.N + d.K) * d.M, dtype=np.float32).astype(E4M3))
    shape = f"M=N=K={size}, E={experts}"
    fp32_operands = (d.N + d.K) * d.M * 4
    ratios = [Ratio("problem generation", t_gen, t_base_gen, "s", 2.0, False,
                    f"generate ({shape}) / as many float32 normals + fp8 cast")]
    t_touch = _first_touch((d.E, d.N, d.K))
    for precision, dtype in PRECISIONS.items():
        tracemalloc.start()
        t_ref, result = _timed(grad_w, problem, precision=precision)
        peak = tracemalloc.get_traced_memory()[1] - result.nbytes
        tracemalloc.stop()
        del result
        t_mm, _ = _timed(np.matmul, rng.standard_normal((d.N, d.M)).astype(dtype),
                         rng.standard_normal((d.M, d.K)).astype(dtype))
        ratios += [
            Ratio(f"reference time, {precision}", t_ref, t_mm, "s", 1.25, True,
                  f"grad_w ({shape}) / one {precision} np.matmul of the same FLOPs"),
            Ratio(f"  of which BLAS, {precision}", _expert_matmuls(d, dtype, rng), t_mm, "s", 1.25, True,
                  f"the {experts} per-expert matmuls alone (N x M/E x K, data ready) / "
                  "the same one matmul", True),
            Ratio(f"  of which first touch, {precision}", t_touch, t_mm, "s", 1.25, True,
                  "writing a new E x N x K float32 result once (fresh pages) / the same one matmul", True),
            Ratio(f"reference peak memory, {precision}", peak / 2**20, fp32_operands / 2**20, "MiB", 2.5,
                  True, "traced peak beyond inputs and result / dequantized fp32 operand bytes"),
        ]
    return ratios


def build_ratios(config_path: Path) -> list[Ratio]:
    specs = load_specs()
    config = load_config(config_path, specs)
    jobs = list(dict.fromkeys(BuildJob(k, t, s.dims) for k, t in config.pairs() for s in config.shapes))
    with tempfile.TemporaryDirectory(prefix="wgrad-selfbench-") as tmp:
        cache = Cache(Path(tmp) / "step")
        times = []
        for _ in range(2):
            t, results = _timed(run_builds, jobs, Toolchains(cache.root / "zig-shim", BACKENDS), cache, {},
                                os.cpu_count() or 1)
            if not all(r.ok for r in results):
                raise CheckFailed(f"selfbench: building {config_path} failed; "
                                  f"run wgrad build --config {config_path}")
            times.append(t)
        command = [sys.executable, "-m", "wgrad_cli", "build", "--config", str(config_path),
                   "--cache-dir", f"{tmp}/cmd"]
        runs = [_timed(subprocess.run, command, capture_output=True, check=True)[0] for _ in range(2)]
    what = f"{len(jobs)} builds of {config_path.name}"
    return [
        Ratio("warm build step", times[1], times[0], "s", 0.02, False,
              f"{what}: warm / cold cache, in process"),
        Ratio("warm build command", runs[1], runs[0], "s", 0.02, False,
              f"{what}: the whole `wgrad build`, Python's start-up included", True),
    ]


def emulator_ratios() -> list[Ratio]:
    """The emulator on MFMA-heavy code, against the 50 ms one-core budget for the step (a fixed
    goal, not a measured baseline); nothing without a gfx950 compiler to build the step."""
    with tempfile.TemporaryDirectory(prefix="wgrad-selfbench-step-") as tmp:
        try:
            image = mfma_step.build(
                Toolchains(Path(tmp) / "zig-shim", BACKENDS).select(EMULATED_TARGET, False))
        except ToolchainError as exc:
            err.print(f"selfbench: {exc.lines[0]}; the emulator's MFMA row is skipped")
            return []
    return [Ratio("emulator scaled-MFMA step", mfma_step.step_seconds(image) * 1e3, 50.0, "ms", 1.0, False,
                  "one 512-thread workgroup, 256x256x128 scaled MFMA via LDS, on one core / the 50 ms goal")]


EMU_RATE_GOAL = 5e7  # lane-instructions per second on one core
# a load average above this share of the cores before the run: other work would share its timings
LOADED = 0.5
EMU_RATE_DIMS = Dims(128, 256, 256, 1)  # smoke.yaml's one-expert
SANITIZER_COST = 3.0  # the most verify --sanitize may multiply the emulator's time by


def _emulated_launch(name: str, d: Dims) -> Callable[[bool], tuple[float, int]] | None:
    """A launch of kernel `name` at `d` on the emulator's one worker: timed with or without the
    sanitizer, decoding (and the sanitizer's planning) excluded by a first launch; its seconds and
    lane-instructions. None without a gfx950 compiler to build it."""
    spec = load_specs()[name]
    with tempfile.TemporaryDirectory(prefix="wgrad-selfbench-emu-") as tmp:
        cache = Cache(Path(tmp))
        built = run_builds([BuildJob(spec, EMULATED_TARGET, d)],
                           Toolchains(cache.root / "zig-shim", BACKENDS), cache, {}, 1)[0]
        if not built.ok or built.code_object is None:
            err.print(f"selfbench: the {name} kernel did not build for gfx950 (`wgrad build --target gfx950` "
                      "says why); its emulator rows are skipped")
            return None
        problem = generate(d, Routing(), 0)
        rt = EmuRuntime(workers=1)
        args = []
        for a in (np.zeros(d.E * d.N * d.K, np.uint16), problem.A, problem.B, problem.scale_A,
                  problem.scale_B, problem.offsets):
            args.append(rt.alloc(a.nbytes))
            rt.copy_in(args[-1], a.ctypes.data, a.nbytes)
        kernel = prepare(rt, built.code_object, TARGETS[EMULATED_TARGET], backend(EMULATED_TARGET),
                         spec, d, args)

    def timed(sanitize: bool) -> tuple[float, int]:
        rt.sanitize = sanitize  # read at each launch
        seconds, _ = _timed(kernel)
        return seconds, rt.stats[-1].lane_instructions

    timed(True)  # decodes the code object and plans the sanitizer's checks, as a first launch does
    return timed


def emulator_rate_ratios() -> list[Ratio]:
    """One launch of the reference kernel on the emulator's one worker, decoding excluded; its
    lane-instructions (64 per wave-instruction) per second against the goal; and the sanitizer's
    cost on it and on cdna4 (MFMAs and LDS, where it does the most), against its 3x goal. Nothing
    without a gfx950 compiler to build the kernels."""
    d = EMU_RATE_DIMS
    ratios = []
    for name in ("reference", "cdna4"):
        launch = _emulated_launch(name, d)
        if launch is None:
            continue
        seconds, lanes = launch(False)
        watched, _ = launch(True)
        if name == "reference":
            ratios.append(Ratio("emulator rate, reference kernel", seconds / lanes * 1e9, 1e9 / EMU_RATE_GOAL,
                                "ns", 1.0, True, f"{lanes / seconds:.3g} lane-instructions/s, "
                                f"M={d.M} N={d.N} K={d.K} E={d.E}, one core; "
                                f"ns per lane-instruction / the {EMU_RATE_GOAL:.0e}/s goal's"))
        ratios.append(Ratio(f"sanitizer cost, {name} kernel", watched, seconds, "s", SANITIZER_COST, True,
                            f"the same launch with --sanitize / without, one core "
                            f"(goal: at most {SANITIZER_COST:g}x)"))
    return ratios


def selfbench_command(size: int, experts: int, build_config: Path, json_path: Path | None) -> None:
    build_config = config_file(build_config)
    load_config(build_config, load_specs())  # a bad config is reported now, not after minutes of timing
    cores = os.cpu_count() or 1
    others = os.getloadavg()[0]  # before any timing: the load of the machine's other work
    err.print(f"selfbench: four steps, a few minutes on {plural(cores, 'core')}; "
              f"load average {others:.1f} now", highlight=False)
    with err.status("timing the reference and problem generation"):
        ratios = reference_ratios(size, experts)
    with err.status(f"timing cold and warm builds of {build_config}"):
        ratios += build_ratios(build_config)
    with err.status("timing the emulator's scaled-MFMA step and its rate on the reference kernel"):
        ratios += emulator_ratios() + emulator_rate_ratios()
    table = selfbench_table(ratios,
                            f"wgrad selfbench ({platform.node()}, {plural(os.cpu_count() or 1, 'core')})")
    out.print(table)
    if json_path:
        write_json(json_path, "selfbench", [{**r.__dict__, "ratio": r.ratio, "ok": r.ok} for r in ratios],
                   cores=os.cpu_count(),
                   memory_gib=round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
                   python=platform.python_version(),
                   numpy=np.__version__, size=size, experts=experts, build_config=config_name(build_config),
                   load_average=round(others, 2))
    missed = [r.name for r in ratios if not r.informational and not r.ok]
    if missed and others > LOADED * cores:  # the ratios time this machine's other work too: no verdict
        err.print(f"selfbench: {', '.join(missed)} missed, on a machine already loaded "
                  f"(load average {others:.1f} on {plural(cores, 'core')}): no verdict; "
                  "run it again on an idle machine", highlight=False)
    elif missed:
        raise CheckFailed()
