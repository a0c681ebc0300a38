"""wgrad's gfx950 emulator behind the stand-in HIP runtime (libamdhip64.c), for tests only.

With WGRAD_STANDIN_BACKEND=hipstandin.emulated (and tests/ on PYTHONPATH) the stand-in's hipInit
imports this module into the process that loaded it, wgrad's own or the child interpreter that
wgrad_cli.device.isolation runs each (kernel, shape) in, and calls install(). From then on device memory,
modules and launches go to one EmuRuntime: device pointers are its heap addresses, a module is its
code object's bytes, and a launch passes the kernelParams the shim packed to EmuRuntime.launch as
they are, so the kernel a verify run checks was computed from what crossed hip-python.
"""

from __future__ import annotations

import ctypes
import itertools
import sys
import traceback
from collections.abc import Callable

from wgrad_cli.emu.device import EmuRuntime
from wgrad_cli.errors import DriverError

# HIP's status codes that a failed call here returns (the stand-in describes them)
INVALID_VALUE, INVALID_IMAGE, NOT_FOUND, LAUNCH_FAILURE = 1, 200, 500, 719

Address = ctypes.c_size_t  # a pointer, as the integer a ctypes callback receives


def _call(status: int, argtypes: list[type], work: Callable[..., None]) -> ctypes._CFuncPtr:
    """A C callback returning hipSuccess after work(*args), else `status`, the reason printed on stderr as
    HIP's runtime prints its own (a DriverError's line; anything else with its traceback: a bug here)."""
    def callback(*args: object) -> int:
        try:
            work(*args)
        except DriverError as exc:
            print(f"HIP stand-in, emulated device: {exc}", file=sys.stderr)
            return status
        except Exception:  # a ctypes callback may not raise: it would be printed and answered with 0
            traceback.print_exc()
            return status
        return 0

    return ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(callback)


def _store(out: int, value: int) -> None:
    ctypes.c_size_t.from_address(out).value = value


class Emulated:
    """The backend table the stand-in calls, over one EmuRuntime; handles count up from 1."""

    def __init__(self) -> None:
        self.rt = EmuRuntime()
        self.modules: dict[int, bytes] = {}
        self.functions: dict[int, object] = {}
        self.handles = itertools.count(1)

    def malloc(self, out: int, size: int) -> None:
        _store(out, self.rt.alloc(size))

    def load(self, out: int, image: int, size: int) -> None:
        handle = next(self.handles)
        self.modules[handle] = ctypes.string_at(image, size)
        _store(out, handle)

    def function(self, out: int, module: int, name: bytes) -> None:
        handle = next(self.handles)
        self.functions[handle] = self.rt.load(self.modules[module], name.decode(), 0)
        _store(out, handle)

    def launch(self, function: int, grid: int, block: int, lds: int, params: int) -> None:
        self.rt.launch(self.functions[function], grid, block, lds, params)

    def table(self) -> list[tuple[str, ctypes._CFuncPtr]]:
        """The stand-in's Backend struct, field by field."""
        a, u = Address, ctypes.c_uint
        return [
            ("malloc", _call(INVALID_VALUE, [a, ctypes.c_size_t], self.malloc)),
            ("free", _call(INVALID_VALUE, [a], self.rt.free)),
            ("copy_in", _call(INVALID_VALUE, [a, a, ctypes.c_size_t], self.rt.copy_in)),
            ("copy_out", _call(INVALID_VALUE, [a, a, ctypes.c_size_t], self.rt.copy_out)),
            ("fill", _call(INVALID_VALUE, [a, ctypes.c_int, ctypes.c_size_t], self.rt.fill)),
            ("load", _call(INVALID_IMAGE, [a, a, ctypes.c_size_t], self.load)),
            ("unload", _call(INVALID_VALUE, [a], self.modules.pop)),
            ("function", _call(NOT_FOUND, [a, a, ctypes.c_char_p], self.function)),
            ("launch", _call(LAUNCH_FAILURE, [a, u, u, u, a], self.launch)),
        ]


_installed: list[object] = []  # the callbacks live as long as the process: the stand-in keeps calling them


def install(set_backend: int) -> None:
    """Hand the stand-in (through wgradStandinSetBackend at `set_backend`) a backend over a fresh emulator."""
    fields = Emulated().table()
    Table = type("Backend", (ctypes.Structure,), {"_fields_": [(name, type(f)) for name, f in fields]})
    table = Table(*(f for _, f in fields))
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(set_backend)(ctypes.byref(table))  # the stand-in copies the table
    _installed.extend(fields)
