"""Reading built code objects: find the kernel symbol and its resource use.

gfx950: everything comes from the NT_AMDGPU_METADATA note (msgpack) of the ELF. sm_90a: the
symbol comes from the cubin's symbol table, the figures from ptxas' --resource-usage report
(the cubin keeps no spill counts), saved with the cache entry at build time.
"""

from __future__ import annotations

import io
import re
from dataclasses import asdict, dataclass
from typing import Any

import msgpack
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection, SymbolTableSection

from wgrad_cli.abi import KERNARG_BYTES, POINTER_BYTES, ARGS
from wgrad_cli.occupancy import Occupancy, gfx950, sm90

NT_AMDGPU_METADATA = 32


class CodeObjectError(Exception):
    """The code object is not what the kernel spec promises (symbol, arguments)."""


@dataclass(frozen=True)
class Resources:
    symbol: str
    registers: int  # VGPRs (AMD) / registers per thread (NVIDIA)
    agprs: int | None
    sgprs: int | None
    shared_bytes: int  # static LDS / shared memory per workgroup
    scratch_bytes: int  # private segment / stack frame per thread
    spills: int  # AMD: VGPR + SGPR spill count; NVIDIA: spill store + load bytes
    wave_size: int
    occupancy: Occupancy

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any]) -> Resources:
        return Resources(**{**d, "occupancy": Occupancy(**d["occupancy"])})


def match_symbol(names: list[str], base: str) -> str:
    """The one name that is `base` itself (extern "C") or its Itanium mangling (_Z<len><base>...)."""
    hits = [n for n in names if n == base or n.startswith(f"_Z{len(base)}{base}")]
    if len(hits) != 1:
        raise CodeObjectError(f"expected one kernel named {base!r}, found {hits or 'none'} among {names}")
    return hits[0]


def amd_metadata(data: bytes) -> dict[str, Any]:
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


def amd_resources(data: bytes, base: str, block: int) -> Resources:
    """Find kernel `base` in the metadata, check its arguments against the ABI, read its figures."""
    kernels = {k[".name"]: k for k in amd_metadata(data)["amdhsa.kernels"]}
    k = kernels[match_symbol(list(kernels), base)]
    check_amd_args(k)
    vgprs, agprs, lds = k[".vgpr_count"], k.get(".agpr_count", 0), k[".group_segment_fixed_size"]
    return Resources(k[".name"], vgprs, agprs, k[".sgpr_count"], lds, k[".private_segment_fixed_size"],
                     k[".vgpr_spill_count"] + k[".sgpr_spill_count"], k[".wavefront_size"],
                     gfx950(vgprs, agprs, lds, block, k[".wavefront_size"]))


def check_amd_args(kernel: dict[str, Any]) -> None:
    """The ABI: six 8-byte global pointers at offsets 0, 8, ..., 40 (hidden arguments may follow)."""
    explicit = [a for a in kernel[".args"] if not a[".value_kind"].startswith("hidden_")]
    problems = []
    if len(explicit) != len(ARGS):
        problems.append(f"{len(explicit)} arguments, the ABI has {len(ARGS)}")
    for i, (arg, want) in enumerate(zip(explicit, ARGS)):
        kind, size, offset = arg[".value_kind"], arg[".size"], arg[".offset"]
        if kind != "global_buffer" or size != POINTER_BYTES or offset != i * POINTER_BYTES:
            problems.append(f"argument {i} ({want.name}) is {kind} of {size} bytes at offset {offset}, "
                            f"the ABI wants a {POINTER_BYTES}-byte pointer at offset {i * POINTER_BYTES}")
    if problems:
        raise CodeObjectError(f"kernel {kernel['.name']} does not match the ABI ({KERNARG_BYTES}-byte kernarg): "
                              + "; ".join(problems))


def cubin_symbols(data: bytes) -> list[str]:
    """Names of the functions a cubin defines."""
    elf = ELFFile(io.BytesIO(data))
    symtab = elf.get_section_by_name(".symtab")
    if elf["e_machine"] != "EM_CUDA" or not isinstance(symtab, SymbolTableSection):
        raise CodeObjectError(f"not a cubin (machine {elf['e_machine']})")
    return [s.name for s in symtab.iter_symbols() if s["st_info"]["type"] == "STT_FUNC"]


_PTXAS_FUNC = re.compile(r"Function properties for (\S+)\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, "
                         r"(\d+) bytes spill loads\n.*?Used (\d+) registers(.*)")


def nvidia_resources(data: bytes, ptxas_report: str, base: str, block: int) -> Resources:
    """Find kernel `base` in the cubin and its figures in ptxas' report from the same build."""
    symbol = match_symbol(cubin_symbols(data), base)
    for m in _PTXAS_FUNC.finditer(ptxas_report):
        if m.group(1) == symbol:
            stack, stores, loads, regs = (int(m.group(i)) for i in range(2, 6))
            smem = re.search(r"(\d+) bytes smem", m.group(6))
            shared = int(smem.group(1)) if smem else 0
            return Resources(symbol, regs, None, None, shared, stack, stores + loads, 32, sm90(regs, shared, block))
    raise CodeObjectError(f"ptxas reported no resource usage for {symbol}")
