"""A problem on the device and a kernel ready to launch on it.

Before anything runs, the code object must be for this device's architecture, its arguments
must match the ABI (codeobject.kernel_params) and the grid must be one the driver can launch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wgrad_cli.compile.codeobject import CodeObjectError
from wgrad_cli.config.kernelspec import KernelSpec
from wgrad_cli.config.targets import Target
from wgrad_cli.device.backend import TargetBackend
from wgrad_cli.device.kernargs import Kernargs, pack
from wgrad_cli.device.runtime import Runtime
from wgrad_cli.errors import WgradError
from wgrad_cli.problem.abi import ARGS, Dims
from wgrad_cli.problem.generate import Problem


@dataclass
class DeviceProblem:
    """A problem's operands on the device, in ABI order, and its output buffer."""

    rt: Runtime
    dims: Dims
    pointers: dict[str, int] = field(default_factory=dict)  # ABI argument name -> device pointer

    @property
    def output_bytes(self) -> int:
        return 2 * self.dims.E * self.dims.N * self.dims.K

    def args(self, output: int | None = None) -> list[int]:
        """The six pointers in ABI order, C replaced by `output` when given."""
        return [output if a.name == "C" and output is not None else self.pointers[a.name] for a in ARGS]

    def download(self, ptr: int | None = None) -> np.ndarray:
        """An output buffer (C unless given) as uint16 bf16 bits, (E, N, K)."""
        d = self.dims
        host = np.empty((d.E, d.N, d.K), dtype=np.uint16)
        self.rt.copy_out(host.ctypes.data, self.pointers["C"] if ptr is None else ptr, host.nbytes)
        return host

    def free(self) -> None:
        for ptr in self.pointers.values():
            self.rt.free(ptr)
        self.pointers.clear()


def upload(rt: Runtime, p: Problem) -> DeviceProblem:
    """Copy the operands to fresh device buffers and allocate the output (contents undefined)."""
    dev = DeviceProblem(rt, p.dims)
    host = {"A": p.A, "B": p.B, "scale_A": p.scale_A, "scale_B": p.scale_B, "expert_off": p.offsets}
    try:
        dev.pointers["C"] = rt.alloc(dev.output_bytes)
        for name, array in host.items():
            data = np.ascontiguousarray(array)
            dev.pointers[name] = rt.alloc(data.nbytes)
            rt.copy_in(dev.pointers[name], data.ctypes.data, data.nbytes)
    except WgradError:
        dev.free()
        raise
    return dev


@dataclass(frozen=True)
class Kernel:
    """A loaded kernel, its grid and its packed arguments; calling it launches once (asynchronously)."""

    rt: Runtime
    function: object
    grid: int
    block: int
    kernargs: Kernargs
    dynamic_shared: int

    def __call__(self) -> None:
        self.rt.launch(self.function, self.grid, self.block, self.dynamic_shared, self.kernargs.address)


def prepare(rt: Runtime, code_object: Path, target: Target, backend: TargetBackend, spec: KernelSpec,
            dims: Dims, args: list[int]) -> Kernel:
    """Load a built kernel of `target` (whose backend is `backend`) for launching with `args`; WgradError
    before any launch if it cannot run."""
    device = rt.device
    if device.arch != target.device_arch:
        raise WgradError(f"{spec.name}: its {target} code object cannot run on device {device.index} "
                         f"({device.name}, {device.arch}); {target} needs a {target.device_arch} device")
    image = code_object.read_bytes()
    try:
        symbol, params = backend.kernel_params(image, spec.symbol)
    except CodeObjectError as exc:
        raise WgradError(f"{spec.name} ({code_object}): {exc}") from None
    problems = backend.launch_problems(image, symbol, spec.name, spec.block, spec.dynamic_shared)
    if problems:
        raise WgradError(problems)
    grid = spec.grid(dims, device.units)
    limit = backend.grid
    if limit.exceeded(grid, spec.block):
        raise WgradError(f"{spec.name}: M={dims.M} N={dims.N} K={dims.K} E={dims.E} needs {grid} workgroups "
                         f"of {spec.block} threads, beyond the driver's {limit.limit} {limit.unit} per "
                         "dimension; use fewer experts or a smaller N x K")
    function = rt.load(image, symbol, spec.dynamic_shared)
    if spec.persistent:  # one workgroup per unit, but only as many as run at once: no second wave
        resident = rt.resident(function, spec.block, spec.dynamic_shared, spec.cluster)
        if resident < spec.cluster:
            raise WgradError(f"{spec.name}: {device.name} cannot run one "
                             f"{'cluster' if spec.cluster > 1 else 'workgroup'} of it at a time "
                             f"({spec.cluster} x {spec.block} threads, {spec.dynamic_shared} bytes of "
                             "dynamic shared memory each); lower launch.block or launch.dynamic_shared in "
                             "its spec")
        grid = spec.grid(dims, min(device.units, resident))
    return Kernel(rt, function, grid, spec.block, pack(params, args), spec.dynamic_shared)
