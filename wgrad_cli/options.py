"""The settings a user chooses on the command line, as small frozen objects the CLI builds once and
the layers below take as values."""

from __future__ import annotations

from dataclasses import dataclass

EMULATED = "emu"  # --device emu: gfx950's emulated device
# zero: a memset of zeros (as nvbench's and triton's flushes); pattern: a byte that changes every
# sample; read: a reduction over the buffer that writes nothing back (needs torch)
FLUSHES = ("zero", "pattern", "read")


@dataclass(frozen=True)
class Emulated:
    """--device emu: gfx950's emulated device (wgrad_cli.emu), and how strict its sanitizer is."""

    strict_lds: bool = False  # stop at an LDS access beyond the workgroup's allocation (hardware: reads 0, drops writes)

    def __str__(self) -> str:
        return EMULATED


Device = int | Emulated  # a device index, or the emulated gfx950
