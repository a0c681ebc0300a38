"""AMD's HSA code objects (gfx950's .hsaco): the NT_AMDGPU_METADATA note, and from it a kernel's
arguments and resources."""

from __future__ import annotations

import io
from typing import Any

import msgpack
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection

from wgrad_cli.compile.codeobject import CodeObjectError, Param, check_params, match_symbol
from wgrad_cli.compile.occupancy import gfx950
from wgrad_cli.compile.resources import Resources

NT_AMDGPU_METADATA = 32


def metadata(data: bytes) -> dict[str, Any]:
    """The decoded NT_AMDGPU_METADATA note of an AMDGPU code object."""
    elf = ELFFile(io.BytesIO(data))
    if elf["e_machine"] != "EM_AMDGPU":
        raise CodeObjectError(f"not an AMDGPU code object (machine {elf['e_machine']})")
    for section in elf.iter_sections():
        if isinstance(section, NoteSection):
            for note in section.iter_notes():
                n_type: object = note["n_type"]  # pyelftools leaves AMDGPU's note types as numbers
                if note["n_name"] == "AMDGPU" and n_type == NT_AMDGPU_METADATA:
                    meta: dict[str, Any] = msgpack.unpackb(note["n_descdata"], raw=False)
                    return meta
    raise CodeObjectError("the code object has no AMDGPU metadata note")


def arguments(kernel: dict[str, Any]) -> list[Param]:
    """Explicit arguments of one kernel's metadata (the hidden ones the runtime fills follow them)."""
    return [Param(a[".offset"], a[".size"],
                  "pointer" if a[".value_kind"] == "global_buffer" else a[".value_kind"])
            for a in kernel[".args"] if not a[".value_kind"].startswith("hidden_")]


def kernel_params(data: bytes, base: str) -> tuple[str, list[Param]]:
    """(symbol, arguments) of kernel `base` in an AMDGPU code object, checked against the ABI."""
    kernels = {k[".name"]: k for k in metadata(data)["amdhsa.kernels"]}
    symbol = match_symbol(list(kernels), base)
    params = arguments(kernels[symbol])
    check_params(symbol, params)
    return symbol, params


def resources(data: bytes, base: str, block: int, dynamic_shared: int = 0) -> Resources:
    """Find kernel `base` in the metadata, check its arguments against the ABI, read its figures."""
    symbol, _ = kernel_params(data, base)
    k = next(k for k in metadata(data)["amdhsa.kernels"] if k[".name"] == symbol)
    vgprs, agprs, lds = k[".vgpr_count"], k.get(".agpr_count", 0), k[".group_segment_fixed_size"]
    return Resources(k[".name"], vgprs, agprs, k[".sgpr_count"], lds, k[".private_segment_fixed_size"],
                     k[".vgpr_spill_count"] + k[".sgpr_spill_count"], k[".wavefront_size"],
                     gfx950(vgprs, agprs, lds + dynamic_shared, block, k[".wavefront_size"]))
