"""What device/ asks of a target's backend: how to open its devices, read a kernel's arguments from
its code objects and which launches its driver allows. backends/ makes one object per target; the
commands pick it from backends/registry.py and hand it down (Session.backend)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from wgrad_cli.compile.builder import BuildBackend
from wgrad_cli.compile.codeobject import Param
from wgrad_cli.config.options import Device
from wgrad_cli.device.runtime import Runtime


@dataclass(frozen=True)
class GridLimit:
    """The most a launch may ask for in one dimension: HSA counts work-items in 32 bits, CUDA's
    gridDim.x counts blocks below 2^31."""

    unit: str
    limit: int
    counts_work_items: bool

    def exceeded(self, grid: int, block: int) -> bool:
        return (grid * block if self.counts_work_items else grid) > self.limit


class TargetBackend(Protocol):
    @property
    def grid(self) -> GridLimit:
        """The driver's launch limit."""

    def open_runtime(self, device: Device) -> Runtime:
        """A Runtime on `device`; DriverError (one line) if there is none."""

    def kernel_params(self, data: bytes, base: str) -> tuple[str, list[Param]]:
        """(symbol, arguments) of kernel `base` in one of this target's code objects."""

    def launch_problems(self, image: bytes, symbol: str, name: str, block: int,
                        dynamic_shared: int) -> list[str]:
        """What the code object's own records say a launch breaks, one line each."""


class RunBackend(TargetBackend, BuildBackend, Protocol):
    """All a run (device/session.py) asks of a target's backend: to build its kernels and to run them."""
