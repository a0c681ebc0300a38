"""Launching: buffers, argument packing and launches on a real GPU (marked gpu);
refusals before any launch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from wgrad_cli.backends.registry import BACKENDS, backend
from wgrad_cli.compile.cache import Cache
from wgrad_cli.compile.compilers import Compiler
from wgrad_cli.compile.jobs import BuildJob, run_builds
from wgrad_cli.compile.toolchain import Toolchains
from wgrad_cli.config.kernelspec import KernelSpec
from wgrad_cli.config.options import KERNEL_TIMEOUT_S
from wgrad_cli.config.targets import TARGETS, Target
from wgrad_cli.device.launch import prepare, upload
from wgrad_cli.device.runtime import DeviceInfo, Runtime
from wgrad_cli.device.waiting import settle
from wgrad_cli.errors import WgradError
from wgrad_cli.measure.check import POISON, compare
from wgrad_cli.problem.abi import Dims
from wgrad_cli.problem.generate import generate
from wgrad_cli.problem.reference import grad_w, row_norms
from wgrad_cli.problem.routing import Routing

SMALL = Dims(256, 256, 512, 2)


@pytest.mark.gpu
def test_copy_fill_roundtrip(gpu: Runtime) -> None:
    host = np.arange(4096, dtype=np.uint8)
    ptr = gpu.alloc(host.nbytes)
    try:
        gpu.copy_in(ptr, host.ctypes.data, host.nbytes)
        back = np.empty_like(host)
        gpu.copy_out(back.ctypes.data, ptr, back.nbytes)
        assert (back == host).all()
        gpu.fill(ptr, 0xAB, 1000)
        settle(gpu, gpu.event(), KERNEL_TIMEOUT_S, "the test's launches")
        gpu.copy_out(back.ctypes.data, ptr, back.nbytes)
        assert (back[:1000] == 0xAB).all() and (back[1000:] == host[1000:]).all()
    finally:
        gpu.free(ptr)


@pytest.mark.gpu
def test_device_info(gpu: Runtime, gpu_target: Target) -> None:
    d = gpu.device
    assert d.units > 0 and d.max_clock_mhz > 0 and d.memory_bytes > 2**30 and d.l2_bytes > 2**20
    assert d.arch == gpu_target.device_arch and d.name and d.driver and d.runtime
    reading = gpu.sensors()
    clock, power, capped = reading.clock_mhz, reading.power_w, reading.power_capped
    if d.vendor == "nvidia":  # NVML comes with the driver; amdsmi is an optional ROCm package
        assert clock is not None and power is not None and capped is not None
    assert clock is None or 0 < clock <= d.max_clock_mhz
    assert power is None or 10 < power < 2000, power  # watts, not milliwatts


@pytest.mark.gpu
def test_reference_kernel_runs_and_checks(gpu: Runtime, gpu_target: Target, specs: dict[str, KernelSpec],
                                          gpu_build: Callable[[str, Dims], Path]) -> None:
    p = generate(SMALL, Routing("zipf"), seed=5)
    dev = upload(gpu, p)
    try:
        kernel = prepare(gpu, gpu_build("reference", SMALL), gpu_target, backend(gpu_target),
                         specs["reference"], SMALL, dev.args())
        gpu.fill(dev.pointers["C"], 0xFF, dev.output_bytes)
        kernel()
        settle(gpu, gpu.event(), KERNEL_TIMEOUT_S, "the test's launches")
        c = compare(dev.download(), grad_w(p), *row_norms(p), np.diff(p.offsets))
        assert c.ok and c.unwritten == 0 and c.elements == SMALL.E * SMALL.N * SMALL.K
        assert kernel.kernargs.raw() == b"".join(v.to_bytes(8, "little") for v in dev.args())
    finally:
        dev.free()


@pytest.mark.gpu
def test_empty_kernel_leaves_the_poison(gpu: Runtime, gpu_target: Target, specs: dict[str, KernelSpec],
                                        gpu_build: Callable[[str, Dims], Path]) -> None:
    p = generate(SMALL, Routing(), seed=5)
    dev = upload(gpu, p)
    try:
        gpu.fill(dev.pointers["C"], 0xFF, dev.output_bytes)
        prepare(gpu, gpu_build("empty", SMALL), gpu_target, backend(gpu_target), specs["empty"], SMALL,
                dev.args())()
        settle(gpu, gpu.event(), KERNEL_TIMEOUT_S, "the test's launches")
        c = compare(dev.download(), grad_w(p), *row_norms(p), np.diff(p.offsets))
        assert not c.ok and c.unwritten == c.elements and (dev.download() == POISON).all()
    finally:
        dev.free()


@pytest.mark.gpu
def test_refused_before_launch(gpu: Runtime, gpu_target: Target, specs: dict[str, KernelSpec],
                               gpu_build: Callable[[str, Dims], Path], tmp_path: Path) -> None:
    ref, code = specs["reference"], gpu_build("reference", SMALL)
    args = [0] * 6
    other = replace(gpu_target, device_arch="sm_80" if gpu_target.vendor == "nvidia" else "gfx942")
    with pytest.raises(WgradError, match=f"cannot run on device 0 .*{gpu.device.arch}"):
        prepare(gpu, code, other, backend(other), ref, SMALL, args)
    with pytest.raises(WgradError, match="expected one kernel named 'other_kernel'"):
        prepare(gpu, code, gpu_target, backend(gpu_target), replace(ref, symbol="other_kernel"), SMALL, args)
    if gpu_target.vendor == "nvidia":  # CUDA's limit is on blocks: 2^31 - 1 per dimension
        huge = Dims(128, 2**20, 2**20, 8)
        with pytest.raises(WgradError, match="beyond the driver's 2147483647 blocks"):
            prepare(gpu, code, gpu_target, backend(gpu_target), ref, huge, args)


class NoAmdDevice:
    """Stands in for an AMD device's runtime, which cannot run here: prepare must refuse before
    it loads anything, so every call but `device` fails the test."""

    def __init__(self, arch: str) -> None:
        self.device = DeviceInfo("amd", 0, "AMD Instinct (stand-in)", arch, 256, 2400, 2**38, 2**22, "", "")

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"prepare called {name} before refusing")


class FewResident:
    """Stands in for an H200's runtime where the driver runs only `resident` workgroups of the kernel
    at once (the driver's answer cannot be produced here): prepare must size a persistent grid by it."""

    def __init__(self, resident: int) -> None:
        self.device = DeviceInfo("nvidia", 0, "H200 (stand-in)", "sm_90", 132, 1980, 2**37, 2**25, "", "")
        self.answer = resident
        self.asked: list[tuple[int, int, int]] = []

    def load(self, image: bytes, symbol: str, dynamic_shared: int) -> object:
        return symbol

    def resident(self, function: object, block: int, dynamic_shared: int, cluster: int) -> int:
        self.asked.append((block, dynamic_shared, cluster))
        return self.answer


@pytest.mark.parametrize("resident, grid", [(264, 132), (132, 132), (120, 120), (62, 62), (7, 6)])
def test_a_persistent_grid_is_what_runs_at_once(resident: int, grid: int, nvcc: Compiler,
                                                specs: dict[str, KernelSpec], tmp_path: Path) -> None:
    """One workgroup per SM, fewer where the driver runs fewer at once (in whole clusters): a cluster
    that waits for a second wave would take its whole share of the tiles late."""
    dims = Dims(1024, 2048, 2048, 8)  # 1,024 tiles of 128 x 128: more than any grid here
    spec = replace(specs["reference"], tile=(128, 128), persistent=True, cluster=2)
    (built,) = run_builds([BuildJob(specs["reference"], "sm_90a", dims)],
                          Toolchains(tmp_path / "shim", BACKENDS), Cache(tmp_path / "cache"), {}, 1)
    assert built.ok and built.code_object
    rt = FewResident(resident)
    kernel = prepare(rt, built.code_object, TARGETS["sm_90a"],  # type: ignore[arg-type]
                     backend(TARGETS["sm_90a"]), spec, dims, [0] * 6)
    assert kernel.grid == grid and rt.asked == [(spec.block, spec.dynamic_shared, 2)]
    # grid: tiles never asks
    assert prepare(rt, built.code_object, TARGETS["sm_90a"],  # type: ignore[arg-type]
                   backend(TARGETS["sm_90a"]), specs["reference"], dims,
                   [0] * 6).grid == specs["reference"].tiles(dims) and len(rt.asked) == 1


def test_a_persistent_kernel_that_cannot_run_is_refused(nvcc: Compiler, specs: dict[str, KernelSpec],
                                                        tmp_path: Path) -> None:
    spec = replace(specs["reference"], tile=(128, 128), persistent=True, cluster=2)
    (built,) = run_builds([BuildJob(specs["reference"], "sm_90a", SMALL)],
                          Toolchains(tmp_path / "shim", BACKENDS), Cache(tmp_path / "cache"), {}, 1)
    assert built.ok and built.code_object
    with pytest.raises(WgradError, match=r"reference: H200 \(stand-in\) cannot run one cluster of it at a "
                                         r"time \(2 x \d+ threads, \d+ bytes of dynamic shared memory "
                                         r"each\)"):
        prepare(FewResident(1), built.code_object, TARGETS["sm_90a"],  # type: ignore[arg-type]
                backend(TARGETS["sm_90a"]), spec, SMALL, [0] * 6)


@pytest.mark.gpu
def test_the_hopper_grid_runs_in_one_wave(gpu: Runtime, gpu_target: Target,
                                          gpu_build: Callable[[str, Dims], Path],
                                          specs: dict[str, KernelSpec]) -> None:
    """The driver's own answer for the shipped persistent kernel: its clusters of two all fit at once."""
    if gpu_target.name != "sm_90a":
        pytest.skip("the hopper kernel is for sm_90a")
    dims = Dims(1024, 2048, 2048, 8)
    spec = specs["hopper"]
    kernel = prepare(gpu, gpu_build("hopper", dims), gpu_target, backend(gpu_target), spec, dims, [0] * 6)
    resident = gpu.resident(kernel.function, spec.block, spec.dynamic_shared, spec.cluster)
    every_unit = gpu.device.units - gpu.device.units % spec.cluster
    assert resident % spec.cluster == 0 and resident >= every_unit  # one cluster on every pair of SMs at once
    assert kernel.grid == every_unit


@pytest.mark.parametrize("arch, dims, message", [
    ("gfx942", Dims(128, 256, 256, 1), "its gfx950 code object cannot run on device 0 .* gfx942"),
    ("gfx950", Dims(128, 8192, 8192, 64),
     "needs 16777216 workgroups of 256 threads, beyond the driver's 4294967295 work-items"),
])
def test_amd_refusals_before_any_call(arch: str, dims: Dims, message: str, amd_compiler: Compiler,
                                      specs: dict[str, KernelSpec], tmp_path: Path) -> None:
    (built,) = run_builds([BuildJob(specs["reference"], "gfx950", dims)],
                          Toolchains(tmp_path / "shim", BACKENDS), Cache(tmp_path / "cache"), {}, 1)
    assert built.ok and built.code_object
    with pytest.raises(WgradError, match=message):
        prepare(NoAmdDevice(arch), built.code_object, TARGETS["gfx950"],  # type: ignore[arg-type]
                backend(TARGETS["gfx950"]), specs["reference"], dims, [0] * 6)
