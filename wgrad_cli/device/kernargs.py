"""Kernel arguments packed from the code object's own records, in the form both drivers take.

cuLaunchKernel and hipModuleLaunchKernel both accept `kernelParams`: an array of pointers, one
per argument, each pointing at that argument's bytes. The bytes sit in one buffer laid out as the
code object records them (offset, size), so one packing serves both vendors.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from wgrad_cli.compile.codeobject import Param


@dataclass(frozen=True)
class Kernargs:
    buffer: ctypes.Array[ctypes.c_char]  # the arguments at their offsets
    pointers: ctypes.Array[ctypes.c_void_p]  # kernelParams: one pointer into `buffer` per argument

    @property
    def address(self) -> int:
        """What the launch call takes as kernelParams; valid while this object lives."""
        return ctypes.addressof(self.pointers)

    def raw(self) -> bytes:
        return bytes(self.buffer.raw)


def pack(params: list[Param], values: list[int]) -> Kernargs:
    """Each value little-endian at its parameter's offset and size; one value per parameter."""
    if len(values) != len(params):
        raise ValueError(f"{len(values)} values for {len(params)} parameters")
    buffer = ctypes.create_string_buffer(max((p.offset + p.size for p in params), default=0))
    base = ctypes.addressof(buffer)
    for p, value in zip(params, values):
        ctypes.memmove(base + p.offset, value.to_bytes(p.size, "little"), p.size)
    return Kernargs(buffer, (ctypes.c_void_p * len(params))(*(base + p.offset for p in params)))
