"""The emulated gfx950 device: the runtime interface (memory, modules, launches, events) over the
emulator, so verify runs a gfx950 code object on the CPU exactly as it would on an MI355X.

Memory is the emulator's heap; a launch runs to completion before `launch` returns (events are
therefore done at once, and their times mean nothing: bench refuses this device), or stops as
LaunchStopped once its watchdog finds it stuck or a worker has spent `timeout` seconds of CPU time on
it (the session's --kernel-timeout). Each launch's
instruction statistics are kept for the results. A fault (an instruction the emulator lacks, an
access outside every allocation or outside a lane's private segment) becomes a one-line DriverError;
any other exception is a bug in the emulator, an EmulatorBug with its traceback.

Each load places a fresh copy of the code object's image in the heap, as hipModuleLoadData does:
its globals start from the image's initial values, and `get_global` finds one by name
(hipModuleGetGlobal) for copy_in and copy_out. The decoded program is shared between loads.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import time
import traceback
from dataclasses import dataclass

import numpy as np

from wgrad_cli.compile.codeobject import CodeObjectError
from wgrad_cli.compile.occupancy import gfx950
from wgrad_cli.config.options import EMU_CPU_SECONDS, HIP_STACK_BYTES
from wgrad_cli.device.runtime import UNREPORTED, DeviceInfo, Reading, Watcher
from wgrad_cli.emu.dispatch import Launch, run
from wgrad_cli.emu.loader import Descriptor, Image, load_image
from wgrad_cli.emu.machine import EmuFault, Stats, Stuck, TimedOut
from wgrad_cli.emu.memory import Heap, Name, Region
from wgrad_cli.emu.ops.scratch import refusal
from wgrad_cli.emu.program import Program
from wgrad_cli.errors import DriverError, EmulatorBug, KernelFault, LaunchStopped, WgradError
from wgrad_cli.results.records import Counters

KERNARG_SLACK = 64  # bytes past the kernarg segment a scalar load may read (one s_load_dwordx16)
UNITS = 256  # MI355X's compute units: persistent kernels size their grid by it


@dataclass(frozen=True)
class Module:
    """A loaded code object (hipModuleLoadData's module): its program and its image's base address."""

    program: Program
    base: int


@dataclass(frozen=True)
class Function:
    module: Module
    kernel: Descriptor


@dataclass(frozen=True)
class Global:
    """A global variable of a loaded module on the device (hipModuleGetGlobal's pointer and size)."""

    name: str
    address: int
    size: int


def regions(image: Image) -> list[Region]:
    """The image's segments as the heap maps them, with their sections and globals for fault lines."""
    names = [Name(x.offset, x.size, x.name) for seg in image.segments for x in seg.sections]
    names += [Name(sym.offset, sym.size, sym.name) for sym in image.objects]
    return [Region(seg.offset, seg.size, seg.writable, f"segment {i} ({seg.permissions})",
                   tuple(n for n in names if seg.offset <= n.offset < seg.offset + seg.size))
            for i, seg in enumerate(image.segments)]


def _dimensions(grid: tuple[int, int, int], block: tuple[int, int, int]) -> int:
    """The launch's dimensions as HIP counts them: up to the last one above 1."""
    return 3 if grid[2] > 1 or block[2] > 1 else 2 if grid[1] > 1 or block[1] > 1 else 1


class EmuRuntime:
    """An emulated gfx950 (MI355X-like) device; `workers` processes run each launch."""

    crash_prone = False  # a fault is a DriverError, and the device lives in this process

    def __init__(self, workers: int | None = None, strict_lds: bool = False,
                 stack_bytes: int = HIP_STACK_BYTES, timeout: float = EMU_CPU_SECONDS, register_fill: int = 0,
                 sanitize: bool = False) -> None:
        version = importlib.metadata.version("tinygrad")
        self.device = DeviceInfo("amd", 0, "emulated gfx950 (wgrad)", "gfx950", UNITS, 0,
                                 os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), 0,
                                 "wgrad emulator", f"tinygrad {version} decoder", emulated=True)
        self.heap = Heap()
        self.workers = workers or os.cpu_count() or 1
        self.strict_lds = strict_lds
        self.stack_bytes = stack_bytes  # per work-item, for kernels with a dynamic stack
        self.timeout = timeout  # CPU seconds each worker may spend on a launch (--kernel-timeout)
        self.report: Watcher | None = None  # hears each launch's headway (watch)
        self.register_fill = register_fill  # VGPRs/AGPRs a launch leaves undefined hold this (a code object
        # whose results change with it reads registers the hardware leaves undefined)
        # watch each launch for missing waits, LDS races, wait states, unwritten reads
        self.sanitize = sanitize
        self.stats: list[Stats] = []  # one per launch, in order
        self._programs: dict[bytes, Program] = {}

    # --- memory ---------------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> int:
        return self.heap.alloc(nbytes)

    def free(self, ptr: int) -> None:
        try:
            self.heap.free(ptr)
        except KeyError as exc:
            raise DriverError(f"free: {exc.args[0]}") from None

    def _span(self, ptr: int, nbytes: int, call: str) -> np.ndarray:
        try:
            return self.heap.span(ptr, nbytes)
        except IndexError as exc:
            raise DriverError(f"{call}: {exc}") from None

    def copy_in(self, ptr: int, address: int, nbytes: int) -> None:
        if nbytes:
            dst = self._span(ptr, nbytes, "copy to the device")
            ctypes.memmove(dst.ctypes.data, address, nbytes)

    def copy_out(self, address: int, ptr: int, nbytes: int) -> None:
        if nbytes:
            src = self._span(ptr, nbytes, "copy from the device")
            ctypes.memmove(address, src.ctypes.data, nbytes)

    def fill(self, ptr: int, byte: int, nbytes: int) -> None:
        if nbytes:
            self._span(ptr, nbytes, "fill")[:] = byte

    # --- modules and launches ----------------------------------------------------------------------
    def load_module(self, image: bytes) -> Module:
        """The code object placed in device memory as the ROCm loader places it (hipModuleLoadData)."""
        program = self._programs.get(image)
        if program is None:
            try:
                program = Program(load_image(image))
            except (CodeObjectError, EmuFault) as exc:
                raise DriverError(f"the emulator cannot load the code object: {exc}") from None
            self._programs[image] = program
        loaded = program.image
        kernels = ", ".join(sorted(loaded.kernels)) or "no kernels"
        base = self.heap.map_image(loaded.span, loaded.align, regions(loaded),
                                   f"the code object of {kernels}")
        for segment in filter(lambda seg: seg.data, loaded.segments):
            self.heap.span(base + segment.offset,
                           len(segment.data))[:] = np.frombuffer(segment.data, dtype=np.uint8)
        for offset, addend in loaded.relative:
            self.heap.span(base + offset, 8)[:] = np.frombuffer(
                (base + addend).to_bytes(8, "little"), dtype=np.uint8)
        return Module(program, base)

    def load(self, image: bytes, symbol: str, dynamic_shared: int) -> object:
        module = self.load_module(image)
        kernel = module.program.image.kernels.get(symbol)
        if kernel is None:
            raise DriverError(f"the code object has no kernel {symbol}; "
                              f"it has {sorted(module.program.image.kernels)}")
        return Function(module, kernel)

    def get_global(self, module: Module, name: str) -> Global:
        """A global variable's device address and size, by its symbol name (hipModuleGetGlobal)."""
        symbol = module.program.image.symbols.get(name)
        if symbol is None:
            symbols = module.program.image.symbols
            known = sorted(n for n in symbols if not n.endswith(".kd") and not n.startswith("__"))
            raise DriverError(f"the code object has no global {name}; it has {known}")
        return Global(name, module.base + symbol.offset, symbol.size)

    def launch(self, function: object, grid: int, block: int, dynamic_shared: int,
               kernel_params: int) -> None:
        self.dispatch(function, (grid, 1, 1), (block, 1, 1), dynamic_shared, kernel_params)

    def dispatch(self, function: object, grid: tuple[int, int, int], block: tuple[int, int, int],
                 dynamic_shared: int, kernel_params: int) -> None:
        """A launch of `grid` workgroups of `block` work-items in up to three dimensions
        (hipModuleLaunchKernel's), run to completion."""
        assert isinstance(function, Function)
        k = function.kernel
        threads = block[0] * block[1] * block[2]
        if threads > k.max_flat_workgroup_size:
            raise DriverError(f"launch of {k.name}: {threads} threads per workgroup, beyond its "
                              f".max_flat_workgroup_size of {k.max_flat_workgroup_size}")
        if (why := refusal(k)) is not None:
            raise DriverError(f"launch of {k.name}: {why}")
        # padded as a HIP runtime's kernarg pool is: compilers load the last arguments with wide
        # s_load_dwordxN that run past kernarg_size
        kernarg = self.heap.alloc(max(k.kernarg_size, 4) + KERNARG_SLACK)
        packet = self.heap.alloc(64)
        try:
            self._write_kernargs(k, kernarg, grid, block, kernel_params)
            launch = Launch(k, grid, block, dynamic_shared, kernarg, packet,
                            cpu_seconds=self.timeout,
                            resident=self.resident(function, threads, dynamic_shared, 1),
                            strict_lds=self.strict_lds,
                            code_base=function.module.base, stack_bytes=self.stack_bytes,
                            register_fill=self.register_fill, sanitize=self.sanitize)
            self._write_packet(packet, launch)
            self._run(launch, function.module.program)
        except EmuFault as exc:
            raise KernelFault(str(exc)) from None
        except Stuck as exc:
            raise LaunchStopped(f"launch of {k.name} can never finish: the emulator stopped it when none of "
                                f"its waves could change what they read any more: {exc}") from None
        except TimedOut as exc:
            raise LaunchStopped(f"launch of {k.name} did not finish within {self.timeout:g} s of CPU time "
                                f"per process (--kernel-timeout) on the emulator, "
                                f"which stopped it: {exc}") from None
        except WgradError:
            raise
        except Exception:  # noqa: BLE001 - anything else is a bug in the emulator: reported whole
            raise EmulatorBug.of(f"launch of {k.name}", traceback.format_exc()) from None
        finally:
            self.heap.free(kernarg)
            self.heap.free(packet)

    def _run(self, launch: Launch, program: Program) -> None:
        """Run the launch, its arguments and dispatch packet in place (the timing model runs it
        its own way: model/runtime.py)."""
        self.stats.append(run(launch, program, self.heap, launch.kernel.name, self.workers, self.report))

    def _write_kernargs(self, k: Descriptor, address: int, grid: tuple[int, int, int],
                        block: tuple[int, int, int], kernel_params: int) -> None:
        """The explicit arguments from kernelParams (one pointer per argument, in order) and the
        hidden ones the HIP runtime fills (grid and block sizes; the rest zero)."""
        segment = self.heap.span(address, max(k.kernarg_size, 4))
        segment[:] = 0
        explicit = [a for a in k.args if not a.kind.startswith("hidden_")]
        pointers = (ctypes.c_void_p * len(explicit)).from_address(kernel_params) if explicit else None
        for i, arg in enumerate(explicit):
            source = pointers[i] if pointers is not None else None
            if source is None:
                raise DriverError(f"launch of {k.name}: kernelParams holds no pointer for argument {i}")
            ctypes.memmove(segment.ctypes.data + arg.offset, source, arg.size)
        dims = _dimensions(grid, block)
        hidden = {"hidden_block_count_x": grid[0], "hidden_block_count_y": grid[1],
                  "hidden_block_count_z": grid[2], "hidden_group_size_x": block[0],
                  "hidden_group_size_y": block[1], "hidden_group_size_z": block[2],
                  "hidden_remainder_x": 0, "hidden_remainder_y": 0, "hidden_remainder_z": 0,
                  "hidden_grid_dims": dims}
        for arg in k.args:
            if arg.kind in hidden and arg.offset + arg.size <= len(segment):
                segment[arg.offset: arg.offset + arg.size] = np.frombuffer(
                    hidden[arg.kind].to_bytes(arg.size, "little"), dtype=np.uint8)

    def _write_packet(self, address: int, launch: Launch) -> None:
        """An hsa_kernel_dispatch_packet_t for the kernel's dispatch pointer (sizes in work-items)."""
        k, grid, block = launch.kernel, launch.grid, launch.block
        packet = self.heap.span(address, 64)
        packet[:] = 0
        fields = np.zeros(64, dtype=np.uint8)
        dims = _dimensions(grid, block)
        fields[2:4] = np.frombuffer(dims.to_bytes(2, "little"), dtype=np.uint8)  # setup: dimensions
        fields[4:10] = np.frombuffer(b"".join(v.to_bytes(2, "little") for v in block), dtype=np.uint8)
        fields[12:24] = np.frombuffer(b"".join((g * b).to_bytes(4, "little")
                                               for g, b in zip(grid, block)), dtype=np.uint8)
        fields[24:28] = np.frombuffer(launch.private_bytes.to_bytes(4, "little"), dtype=np.uint8)
        fields[28:32] = np.frombuffer(
            (k.group_segment_size + launch.dynamic_lds).to_bytes(4, "little"), dtype=np.uint8)
        fields[40:48] = np.frombuffer(launch.kernarg.to_bytes(8, "little"), dtype=np.uint8)
        packet[:] = fields

    def resident(self, function: object, block: int, dynamic_shared: int, cluster: int) -> int:
        assert isinstance(function, Function)
        k = function.kernel
        occ = gfx950(k.vgprs, k.agprs, k.group_segment_size + dynamic_shared, block)
        return UNITS * occ.groups_per_unit // cluster * cluster

    # --- events: a launch is done when `launch` returns -----------------------------------------------
    def event(self) -> object:
        return [0.0]

    def record(self, event: object) -> None:
        assert isinstance(event, list)
        event[0] = time.perf_counter()

    def done(self, event: object) -> bool:
        return True

    def elapsed_ms(self, start: object, stop: object) -> float:
        assert isinstance(start, list) and isinstance(stop, list)
        return float(stop[0] - start[0]) * 1e3

    def sensors(self) -> Reading:
        return UNREPORTED

    def counters(self) -> Counters | None:
        return self.stats[-1].counters() if self.stats else None

    def findings(self) -> list[str]:
        return [f.line() for f in self.stats[-1].findings] if self.stats else []

    def watch(self, report: Watcher) -> None:
        self.report = report

    def abandon(self) -> None:
        pass

    def close(self) -> None:
        self._programs.clear()
