"""What differs between the targets, in one object per target: how its compilers are found,
how its code objects are read, what its driver allows, what its devices can do at best, and which
runtime opens its devices (a GPU through its vendor's bindings, or gfx950's emulator).

Everything else in wgrad is vendor-neutral and asks the target's backend. The vendor modules are
imported when a backend method first needs them, so a command that never touches a device (show,
compare) never loads a driver binding or the emulator.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wgrad_cli.targets import Target, Vendor

if TYPE_CHECKING:
    from wgrad_cli.codeobject import Param, Resources
    from wgrad_cli.peaks import Peak
    from wgrad_cli.runtime import Device, DeviceInfo, Runtime
    from wgrad_cli.toolchain import Candidate

EMULATED = "emu"  # --device emu: gfx950's emulated device


@dataclass(frozen=True)
class GridLimit:
    """The most a launch may ask for in one dimension: HSA counts work-items in 32 bits, CUDA's
    gridDim.x counts blocks below 2^31."""

    unit: str
    limit: int
    counts_work_items: bool

    def exceeded(self, grid: int, block: int) -> bool:
        return (grid * block if self.counts_work_items else grid) > self.limit


class Backend(ABC):
    vendor: Vendor
    compiler_option: str  # the option that names this target's compiler
    compiler_field: str  # the Toolchains field that holds it
    compiler_variable: str  # the environment variable that does
    install_hint: str  # what to install when no compiler is found
    grid: GridLimit
    runtime_module: str  # the runtime shim that opens this vendor's GPUs
    runtime_packages: str  # what to pip install for it
    torch_baselines: bool  # whether bench's torch baselines run on its devices

    @abstractmethod
    def candidates(self, named: str | None, rocm_path: str | None, shim_dir: Path) -> Iterator[Candidate]:
        """Every compiler looked for, in the order they are preferred (lazily)."""

    @abstractmethod
    def kernel_params(self, data: bytes, base: str) -> tuple[str, list[Param]]:
        """(symbol, arguments) of kernel `base` in one of this target's code objects."""

    @abstractmethod
    def resources(self, data: bytes, build_log: str, base: str, block: int, dynamic_shared: int) -> Resources:
        """The kernel's registers, LDS/shared memory, scratch, spills and occupancy."""

    @abstractmethod
    def peak(self, device: DeviceInfo) -> Peak | None:
        """The device's peak rates and last-level cache, or None where they are not known."""

    def open_runtime(self, device: Device) -> Runtime:
        """A Runtime on GPU `device` of this vendor; DriverError (one line) if there is none."""
        from wgrad_cli.runtime import DriverError, Emulated

        if isinstance(device, Emulated):
            raise DriverError(f"--device {EMULATED} emulates a gfx950 (MI355X); it cannot run {self.vendor} code")
        try:
            shim = importlib.import_module(self.runtime_module)
        except ImportError as exc:
            raise DriverError(f"no {self.vendor} runtime: {exc}; pip install {self.runtime_packages}") from None
        runtime: Runtime = shim.open_device(device)
        return runtime


class Gfx950(Backend):
    vendor: Vendor = "amd"
    compiler_option, compiler_field, compiler_variable = "--hip-cc", "hip_cc", "WGRAD_HIP_CC"
    install_hint = "apt-get install clang-22 lld-22 (Debian), install ROCm (hipcc), or pip install ziglang"
    grid = GridLimit("work-items (grid x block)", 2**32 - 1, True)
    runtime_module, runtime_packages = "wgrad_cli.runtime.hip", "hip-python"
    torch_baselines = False  # torch's ROCm wheels bring their own HIP runtime (see docs/hip.md)

    def candidates(self, named: str | None, rocm_path: str | None, shim_dir: Path) -> Iterator[Candidate]:
        from wgrad_cli.toolchain import amd_candidates

        return amd_candidates(named, rocm_path, shim_dir)

    def kernel_params(self, data: bytes, base: str) -> tuple[str, list[Param]]:
        from wgrad_cli.codeobject import amd_kernel_params

        return amd_kernel_params(data, base)

    def resources(self, data: bytes, build_log: str, base: str, block: int, dynamic_shared: int) -> Resources:
        from wgrad_cli.codeobject import amd_resources

        return amd_resources(data, base, block, dynamic_shared)

    def peak(self, device: DeviceInfo) -> Peak | None:
        from wgrad_cli.peaks import gfx950_peak

        return gfx950_peak(device)

    def open_runtime(self, device: Device) -> Runtime:
        from wgrad_cli.runtime import Emulated

        if isinstance(device, Emulated):
            from wgrad_cli.emu.device import EmuRuntime

            return EmuRuntime(strict_lds=device.strict_lds, timeout=device.kernel_timeout)
        return super().open_runtime(device)


class Sm90a(Backend):
    vendor: Vendor = "nvidia"
    compiler_option, compiler_field, compiler_variable = "--nvcc", "nvcc", "WGRAD_NVCC"
    install_hint = "install the CUDA toolkit >= 12 (nvcc), or pass --nvcc PATH"
    grid = GridLimit("blocks", 2**31 - 1, False)
    runtime_module, runtime_packages = "wgrad_cli.runtime.cuda", "cuda-bindings nvidia-ml-py"
    torch_baselines = True

    def candidates(self, named: str | None, rocm_path: str | None, shim_dir: Path) -> Iterator[Candidate]:
        from wgrad_cli.toolchain import nvidia_candidates

        return nvidia_candidates(named)

    def kernel_params(self, data: bytes, base: str) -> tuple[str, list[Param]]:
        from wgrad_cli.codeobject import nvidia_kernel_params

        return nvidia_kernel_params(data, base)

    def resources(self, data: bytes, build_log: str, base: str, block: int, dynamic_shared: int) -> Resources:
        from wgrad_cli.codeobject import nvidia_resources

        return nvidia_resources(data, build_log, base, block, dynamic_shared)

    def peak(self, device: DeviceInfo) -> Peak | None:
        from wgrad_cli.peaks import datasheet_peak

        return datasheet_peak(device)


BACKENDS: dict[str, Backend] = {"gfx950": Gfx950(), "sm_90a": Sm90a()}
BY_VENDOR: dict[Vendor, Backend] = {b.vendor: b for b in BACKENDS.values()}


def backend(target: Target | str) -> Backend:
    """The backend of a target (or target name)."""
    return BACKENDS[target if isinstance(target, str) else target.name]

