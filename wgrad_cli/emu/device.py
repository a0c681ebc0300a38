"""The emulated gfx950 device: the runtime interface (memory, modules, launches, events) over the
emulator, so verify runs a gfx950 code object on the CPU exactly as it would on an MI355X.

Memory is the emulator's heap; a launch runs to completion before `launch` returns (events are
therefore done at once, and their times mean nothing: bench refuses this device), or stops as
LaunchStopped once it has run `timeout` seconds (the session's --kernel-timeout). Each launch's
instruction statistics are kept for the results. A fault (an instruction the emulator lacks, an
access outside every allocation or outside a lane's private segment) becomes a one-line DriverError;
any other exception is a bug in the emulator, an EmulatorBug with its traceback.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import time
import traceback
from dataclasses import dataclass

import numpy as np

from wgrad_cli.codeobject import CodeObjectError
from wgrad_cli.emu.dispatch import Launch, run
from wgrad_cli.emu.loader import Descriptor, load_image
from wgrad_cli.emu.machine import EmuFault, Stats, TimedOut
from wgrad_cli.emu.memory import Heap
from wgrad_cli.emu.program import Program
from wgrad_cli.emu.scratch_ops import refusal
from wgrad_cli.errors import EmulatorBug, LaunchStopped, WgradError
from wgrad_cli.occupancy import gfx950
from wgrad_cli.runtime import KERNEL_TIMEOUT_S, UNREPORTED, DeviceInfo, DriverError, Reading

NAME = "emu"  # what --device takes
KERNARG_SLACK = 64  # bytes past the kernarg segment a scalar load may read (one s_load_dwordx16)
UNITS = 256  # MI355X's compute units: persistent kernels size their grid by it


@dataclass(frozen=True)
class Function:
    program: Program
    kernel: Descriptor


class EmuRuntime:
    """An emulated gfx950 (MI355X-like) device; `workers` processes run each launch."""

    crash_prone = False  # a fault is a DriverError, and the device lives in this process

    def __init__(self, workers: int | None = None, strict_lds: bool = False, timeout: float = KERNEL_TIMEOUT_S) -> None:
        version = importlib.metadata.version("tinygrad")
        self.device = DeviceInfo("amd", 0, "emulated gfx950 (wgrad)", "gfx950", UNITS, 0,
                                 os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), 0,
                                 "wgrad emulator", f"tinygrad {version} decoder", emulated=True)
        self.heap = Heap()
        self.workers = workers or os.cpu_count() or 1
        self.strict_lds = strict_lds
        self.timeout = timeout  # seconds of wall time a launch may take (--kernel-timeout)
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
    def load(self, image: bytes, symbol: str, dynamic_shared: int) -> object:
        program = self._programs.get(image)
        if program is None:
            try:
                program = Program(load_image(image))
            except (CodeObjectError, EmuFault) as exc:
                raise DriverError(f"the emulator cannot load the code object: {exc}") from None
            self._programs[image] = program
        kernel = program.image.kernels.get(symbol)
        if kernel is None:
            raise DriverError(f"the code object has no kernel {symbol}; it has {sorted(program.image.kernels)}")
        return Function(program, kernel)

    def launch(self, function: object, grid: int, block: int, dynamic_shared: int, kernel_params: int) -> None:
        assert isinstance(function, Function)
        k = function.kernel
        if block > k.max_flat_workgroup_size:
            raise DriverError(f"launch of {k.name}: {block} threads per workgroup, beyond its "
                              f".max_flat_workgroup_size of {k.max_flat_workgroup_size}")
        if (why := refusal(k)) is not None:
            raise DriverError(f"launch of {k.name}: {why}")
        # padded as a HIP runtime's kernarg pool is: compilers load the last arguments with wide
        # s_load_dwordxN that run past kernarg_size
        kernarg = self.heap.alloc(max(k.kernarg_size, 4) + KERNARG_SLACK)
        packet = self.heap.alloc(64)
        try:
            self._write_kernargs(k, kernarg, grid, block, kernel_params)
            self._write_packet(packet, k, grid, block, dynamic_shared, kernarg)
            launch = Launch(k, (grid, 1, 1), (block, 1, 1), dynamic_shared, kernarg, packet, self.strict_lds,
                            time.monotonic() + self.timeout, self.resident(function, block, dynamic_shared, 1))
            self.stats.append(run(launch, function.program, self.heap, k.name, self.workers))
        except EmuFault as exc:
            raise DriverError(str(exc)) from None
        except TimedOut as exc:
            raise LaunchStopped(f"launch of {k.name} did not finish within {self.timeout:g} s (--kernel-timeout) on the "
                                f"emulator, which stopped it: {exc}") from None
        except WgradError:
            raise
        except Exception:  # noqa: BLE001 - anything else is a bug in the emulator: reported whole
            raise EmulatorBug.of(f"launch of {k.name}", traceback.format_exc()) from None
        finally:
            self.heap.free(kernarg)
            self.heap.free(packet)

    def _write_kernargs(self, k: Descriptor, address: int, grid: int, block: int, kernel_params: int) -> None:
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
        hidden = {"hidden_block_count_x": grid, "hidden_block_count_y": 1, "hidden_block_count_z": 1,
                  "hidden_group_size_x": block, "hidden_group_size_y": 1, "hidden_group_size_z": 1,
                  "hidden_remainder_x": 0, "hidden_remainder_y": 0, "hidden_remainder_z": 0, "hidden_grid_dims": 1}
        for arg in k.args:
            if arg.kind in hidden and arg.offset + arg.size <= len(segment):
                segment[arg.offset: arg.offset + arg.size] = np.frombuffer(
                    hidden[arg.kind].to_bytes(arg.size, "little"), dtype=np.uint8)

    def _write_packet(self, address: int, k: Descriptor, grid: int, block: int, dynamic: int, kernarg: int) -> None:
        """An hsa_kernel_dispatch_packet_t for the kernel's dispatch pointer (sizes in work-items)."""
        packet = self.heap.span(address, 64)
        packet[:] = 0
        fields = np.zeros(64, dtype=np.uint8)
        fields[2:4] = np.frombuffer((1).to_bytes(2, "little"), dtype=np.uint8)  # setup: 1 dimension
        fields[4:10] = np.frombuffer(b"".join(v.to_bytes(2, "little") for v in (block, 1, 1)), dtype=np.uint8)
        fields[12:24] = np.frombuffer(b"".join(v.to_bytes(4, "little") for v in (grid * block, 1, 1)), dtype=np.uint8)
        fields[24:28] = np.frombuffer(k.private_segment_size.to_bytes(4, "little"), dtype=np.uint8)
        fields[28:32] = np.frombuffer((k.group_segment_size + dynamic).to_bytes(4, "little"), dtype=np.uint8)
        fields[40:48] = np.frombuffer(kernarg.to_bytes(8, "little"), dtype=np.uint8)
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

    def counters(self) -> dict[str, object] | None:
        return self.stats[-1].to_json() if self.stats else None

    def abandon(self) -> None:
        pass

    def close(self) -> None:
        self._programs.clear()


def open_device() -> EmuRuntime:
    return EmuRuntime()
