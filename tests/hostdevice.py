"""A stand-in for an AMD GPU, which no machine here has, so that CI runs verify and bench end to end.

Device memory is host memory (a device pointer is a numpy buffer's address); a launch reads its
six pointers back from the kernelParams array the tool packed from the real code object's
metadata, infers M, N, K and E from the buffers' sizes, and does what the kernel named by the
symbol does: the reference kernel's arithmetic through numpy (exact sums, rounded once to bf16),
or nothing for the empty kernel. Events read the host clock. It proves the pipeline (argument
packing, poisoning, download, comparison, timing, records), not any kernel. `watts` and `capped` stand
in for the power sensors; `max_alloc` makes larger allocations fail, as a full device's do. `hung`
makes every launch look deadlocked, which a real GPU cannot do and recover from within one test
process.
"""

from __future__ import annotations

import ctypes
import math
import time

import ml_dtypes
import numpy as np

from wgrad_cli.device.runtime import DeviceInfo, Reading, Watcher
from wgrad_cli.errors import DriverError
from wgrad_cli.problem.abi import Dims
from wgrad_cli.problem.generate import Problem
from wgrad_cli.problem.reference import grad_w
from wgrad_cli.results.records import Counters


class HostDevice:
    crash_prone = False  # launches run here, and a child could not open it again

    def __init__(self, arch: str = "gfx950") -> None:
        self.device = DeviceInfo("amd", 0, "host stand-in", arch, 4, 1000, 2**34, 2**20, "none", "none")
        self.buffers: dict[int, np.ndarray] = {}
        self.launches: list[str] = []
        self.hung = False  # set: launches never finish, as a deadlocked kernel's (done() stays False)
        self.reading_in_flight = False  # set by sensors(): the last recorded event reads as pending once
        self.last_recorded: object = None
        self.hang_at_n: int | None = None  # a launch on a problem with this N sets `hung`
        self.abandoned = False
        self.max_alloc: int | None = None  # a larger allocation fails, as out of device memory does
        self.watts: list[float] = []  # power readings the stand-in reports in turn (none: not reported)
        self.capped: list[bool] = []  # power-limit readings reported in turn (none: not reported)
        self.readings: list[Reading] = []  # what its sensors reported, in order
        self.outputs: list[int] = []  # the output pointer of each launch of a kernel with operands, in order
        self.fills = 0  # memsets (bench's cache flushes)

    def alloc(self, nbytes: int) -> int:
        if self.max_alloc is not None and nbytes > self.max_alloc:
            raise DriverError("hipMalloc failed: hipErrorOutOfMemory (out of memory); free device memory or "
                              "use smaller shapes")
        buf = np.zeros(max(nbytes, 1), dtype=np.uint8)
        self.buffers[buf.ctypes.data] = buf
        return int(buf.ctypes.data)

    def free(self, ptr: int) -> None:
        del self.buffers[ptr]

    def copy_in(self, ptr: int, address: int, nbytes: int) -> None:
        ctypes.memmove(ptr, address, nbytes)

    def copy_out(self, address: int, ptr: int, nbytes: int) -> None:
        ctypes.memmove(address, ptr, nbytes)

    def fill(self, ptr: int, byte: int, nbytes: int) -> None:
        self.fills += 1
        ctypes.memset(ptr, byte, nbytes)

    def load(self, image: bytes, symbol: str, dynamic_shared: int) -> object:
        return symbol

    def resident(self, function: object, block: int, dynamic_shared: int, cluster: int) -> int:
        return self.device.units  # one workgroup per unit at a time

    def launch(self, function: object, grid: int, block: int, dynamic_shared: int,
               kernel_params: int) -> None:
        symbol = str(function)
        self.launches.append(symbol)
        args = (ctypes.c_void_p * 6).from_address(kernel_params)
        C, A, B, scale_A, scale_B, off = (self.buffers[int(ctypes.c_void_p.from_address(a).value or 0)]
                                          for a in args)
        if "empty" in symbol:
            return
        self.outputs.append(int(C.ctypes.data))
        E = off.size // 4 - 1
        M = math.isqrt(A.size * B.size * 2 * E // C.size)
        d = Dims(M, A.size // M, B.size // M, E)
        if d.N == self.hang_at_n:
            self.hung = True
            return
        p = Problem(d, off.view(np.int32), A.reshape(d.N, M), B.reshape(d.K, M),
                    scale_A.reshape(M // 128, d.N, 4), scale_B.reshape(M // 128, d.K, 4), 0, "ocp")
        C.view(np.uint16)[:] = grad_w(p).astype(ml_dtypes.bfloat16).view(np.uint16).reshape(-1)

    def event(self) -> object:
        return [0.0]

    def record(self, event: object) -> None:
        assert isinstance(event, list)
        event[0] = time.perf_counter()
        self.last_recorded = event

    def done(self, event: object) -> bool:
        """As a GPU's event would be, the last one recorded is still pending once, right after a
        sensor reading: the host runs launches at once, and bench keeps only readings taken while
        the timed launch was in flight."""
        if self.reading_in_flight and event is self.last_recorded:
            self.reading_in_flight = False
            return False
        return not self.hung

    def elapsed_ms(self, start: object, stop: object) -> float:
        assert isinstance(start, list) and isinstance(stop, list)
        return 1e3 * (stop[0] - start[0])

    def counters(self) -> Counters | None:
        return None

    def findings(self) -> list[str]:
        return []  # nothing watches the host's launches

    def watch(self, report: Watcher) -> None:
        pass  # a launch here finishes at once

    def abandon(self) -> None:
        self.abandoned = True

    def sensors(self) -> Reading:
        i = len(self.readings)
        self.readings.append(Reading(None, self.watts[i % len(self.watts)] if self.watts else None,
                                     self.capped[i % len(self.capped)] if self.capped else None))
        self.reading_in_flight = True
        return self.readings[-1]

    def close(self) -> None:
        pass
