"""The one narrow interface between wgrad and a GPU driver, and how to open it.

Everything above it (problem upload, argument packing, timing, verification, reports) is shared
and knows no vendor. The two implementations, hip.py (hip-python) and cuda.py (cuda-bindings'
driver API), mirror each other call for call, and share what they do alike around those calls
(DriverRuntime); each driver call's status is checked where it is made, and a failure names the
call, the driver's code and what to do.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from wgrad_cli.config.targets import Vendor
from wgrad_cli.errors import DriverError
from wgrad_cli.results.records import Counters


def c_text(value: object) -> str:
    """A C string the bindings hand back, as text: bytes (cuda-bindings), str or a CStr object
    (hip-python, by version), cut at the first NUL; "" for None."""
    if value is None:
        return ""
    text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    return text.split("\0")[0]


def checked(call: str, result: tuple[Any, ...], success: object, describe: Callable[[Any], tuple[Any, Any]],
            hints: dict[str, str], api: str) -> Any:
    """The value (or values) of a binding's (status, values...) result when status is `success`;
    else a DriverError naming the call, the code, the driver's description of it and what to do."""
    status, *values = result
    if status != success:
        name = getattr(status, "name", str(status))
        try:
            _, text = describe(status)
        except RuntimeError:  # the library that would describe the code is gone
            text = None
        what = c_text(text) or "no description from the driver"
        raise DriverError(f"{call} failed: {name} ({what}); "
                          f"{hints.get(name, f'see the {api} documentation for this code')}")
    return values[0] if len(values) == 1 else tuple(values)


@dataclass(frozen=True)
class Headway:
    """How far a running launch has got, where the device can see inside one (the emulator)."""

    workgroups_done: int
    workgroups: int
    wave_instructions: int  # executed so far: moves while workgroups run long loops


Watcher = Callable[[Headway], None]


@dataclass(frozen=True)
class Reading:
    """What the device's sensors say while a launch runs; None where the platform does not report it."""

    clock_mhz: int | None
    power_w: float | None  # the board's power draw
    power_capped: bool | None  # whether the board's power limit holds the clock down


UNREPORTED = Reading(None, None, None)


@dataclass(frozen=True)
class DeviceInfo:
    vendor: Vendor
    index: int
    name: str
    arch: str  # gfx950, sm_90, ...: compared with Target.device_arch before any launch
    units: int  # compute units (AMD) or multiprocessors (NVIDIA)
    max_clock_mhz: int
    memory_bytes: int
    l2_bytes: int
    driver: str
    runtime: str
    emulated: bool = False  # the CPU runs the code object (wgrad's gfx950 emulator): no timing, no sensors


class Runtime(Protocol):
    """A device context: memory, modules, launches and events on one device, default stream."""

    device: DeviceInfo
    # A kernel's fault can end the process (HIP aborts) or leave the device unusable in it (CUDA
    # poisons its context): a GPU driver's. verify and bench then run each piece of work in a child
    # that opens the device again (isolation.py); the emulator's faults are errors, and it stays here.
    crash_prone: bool

    def alloc(self, nbytes: int) -> int: ...
    def free(self, ptr: int) -> None: ...
    def copy_in(self, ptr: int, address: int, nbytes: int) -> None: ...
    def copy_out(self, address: int, ptr: int, nbytes: int) -> None: ...
    def fill(self, ptr: int, byte: int, nbytes: int) -> None: ...
    def load(self, image: bytes, symbol: str, dynamic_shared: int) -> object: ...
    def launch(self, function: object, grid: int, block: int, dynamic_shared: int,
               kernel_params: int) -> None: ...
    def resident(self, function: object, block: int, dynamic_shared: int, cluster: int) -> int:
        """Workgroups of `function` the device runs at once, in whole clusters of `cluster`: more, and
        a persistent grid's last ones wait for a second wave."""
        ...
    def event(self) -> object: ...
    def record(self, event: object) -> None: ...
    def done(self, event: object) -> bool:
        """Whether the work recorded before `event` has finished; never blocks (waiting.py polls it)."""
        ...
    def elapsed_ms(self, start: object, stop: object) -> float:
        """Milliseconds between two events, once `stop` is done."""
        ...
    def sensors(self) -> Reading:
        """The clock, the board's power and whether its power limit holds the clock down, now: a kernel
        held at the limit is bound by power (its energy per launch), not by its instructions."""
        ...
    def counters(self) -> Counters | None:
        """What the last launch executed (waves, instructions by class, bytes), where the device can
        count it (the emulator); None on a GPU."""
        ...
    def findings(self) -> list[str]:
        """The sanitizer's findings in the last launch, one line each, where the device watches for them
        (the emulator with --sanitize); none on a GPU."""
        ...
    def watch(self, report: Watcher) -> None:
        """Have each later launch report its headway while it runs, where the device can see inside a
        launch (the emulator); a GPU cannot, and reports nothing."""
        ...
    def abandon(self) -> None:
        """A kernel is stuck: from now on free and close make no driver call (it would block behind it)."""
        ...
    def close(self) -> None: ...


def ready(call: str, result: tuple[Any, ...], not_ready: object,
          ok: Callable[[str, tuple[Any, ...]], Any]) -> bool:
    """An event query's answer: False while the work before the event runs, True once it is done;
    any other status is the driver's error (`ok` raises it)."""
    if result[0] == not_ready:
        return False
    ok(call, result)
    return True


class DriverRuntime(ABC):
    """What a GPU driver's Runtime (hip.py, cuda.py) does alike around its own calls: it keeps the
    modules it loads and unloads them on close, makes no driver call once a stuck kernel was
    abandoned, reads its sensors through the vendor's management library, and counts nothing."""

    crash_prone = True  # a fault aborts the process (HIP) or poisons its context (CUDA)
    device: DeviceInfo

    def __init__(self, sensors: Callable[[], Reading]) -> None:
        self._sensors = sensors
        self._modules: list[object] = []
        self._abandoned = False

    @abstractmethod
    def _free(self, ptr: int) -> None: ...

    @abstractmethod
    def _unload(self, module: object) -> None: ...

    def _release(self) -> None:
        """What close frees after the modules, where the driver holds more (CUDA's primary context)."""

    def free(self, ptr: int) -> None:
        if not self._abandoned:
            self._free(ptr)

    def sensors(self) -> Reading:
        return self._sensors()

    def counters(self) -> Counters | None:
        return None  # a GPU counts nothing here

    def findings(self) -> list[str]:
        return []  # nothing watches a GPU's waves

    def watch(self, report: Watcher) -> None:
        pass  # a GPU launch is opaque until it ends

    def abandon(self) -> None:
        self._abandoned = True

    def close(self) -> None:
        if self._abandoned:
            return
        for module in self._modules:
            self._unload(module)
        self._release()
