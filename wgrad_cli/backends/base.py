"""What every target's backend says: the one place its vendor's differences live (compilers and their
command lines, code object readers, launch limits, peaks, the runtime that opens its devices)."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from wgrad_cli.config.options import EMULATED, Device, Emulated
from wgrad_cli.config.targets import Vendor
from wgrad_cli.device.backend import GridLimit
from wgrad_cli.errors import DriverError

if TYPE_CHECKING:
    from wgrad_cli.compile.codeobject import Param
    from wgrad_cli.compile.compilers import Candidate, Compiler
    from wgrad_cli.compile.resources import Resources
    from wgrad_cli.device.runtime import DeviceInfo, Runtime
    from wgrad_cli.results.records import Peak


class Backend(ABC):
    vendor: Vendor
    compiler_option: str  # the option that names this target's compiler
    compiler_field: str  # the CompilerOptions field that holds it
    compiler_variable: str  # the environment variable that does
    install_hint: str  # what to install when no compiler is found
    isa_suffix: str  # the ISA the compiler writes with compile_argv(isa=True)
    shared_limit: int  # LDS / shared memory one workgroup may use, bytes
    grid: GridLimit
    runtime_module: str  # the runtime shim that opens this vendor's GPUs
    runtime_packages: str  # what to pip install for it
    torch_baselines: bool  # whether bench's torch baselines run on its devices
    emulated: bool = False  # whether --device emu runs its code objects

    @abstractmethod
    def candidates(self, named: str | None, rocm_path: str | None, shim_dir: Path) -> Iterator[Candidate]:
        """Every compiler looked for, in the order they are preferred (lazily)."""

    @abstractmethod
    def compile_argv(self, compiler: Compiler, source: Path, output: Path, depfile: Path,
                     defines: dict[str, int], includes: tuple[Path, ...], flags: tuple[str, ...],
                     isa: bool = False) -> list[str]:
        """The full command that builds `source` into `output` (assembly text when `isa`)."""

    def disassemble_argv(self, compiler: Compiler, code_object: Path) -> list[str] | None:
        """A command printing a code object's machine code, where one is installed and
        `compile_argv(isa=True)` is not exact; None: the ISA comes from compile_argv(isa=True)."""
        return None

    @abstractmethod
    def kernel_params(self, data: bytes, base: str) -> tuple[str, list[Param]]:
        """(symbol, arguments) of kernel `base` in one of this target's code objects."""

    @abstractmethod
    def resources(self, data: bytes, build_log: str, base: str, block: int, dynamic_shared: int) -> Resources:
        """The kernel's registers, LDS/shared memory, scratch, spills and occupancy."""

    def launch_problems(self, image: bytes, symbol: str, name: str, block: int,
                        dynamic_shared: int) -> list[str]:
        """What the code object's own records say a launch of `block` threads and `dynamic_shared` bytes
        breaks, before the driver refuses it with a code that does not say why; one line each."""
        return []

    @abstractmethod
    def peak(self, device: DeviceInfo) -> Peak | None:
        """The device's peak rates and last-level cache, or None where they are not known."""

    def open_runtime(self, device: Device) -> Runtime:
        """A Runtime on GPU `device` of this vendor; DriverError (one line) if there is none."""
        if isinstance(device, Emulated):
            raise DriverError(f"--device {EMULATED} emulates a gfx950 (MI355X); it cannot run {self.vendor} "
                              "code")
        try:
            shim = importlib.import_module(self.runtime_module)
        except ImportError as exc:
            raise DriverError(f"no {self.vendor} runtime: {exc}; pip install "
                              f"{self.runtime_packages}") from None
        runtime: Runtime = shim.open_device(device)
        return runtime
