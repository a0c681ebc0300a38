"""Reading built code objects: find the kernel symbol, its arguments and its resource use.

gfx950: everything comes from the NT_AMDGPU_METADATA note (msgpack) of the ELF. sm_90a: the
symbol comes from the cubin's symbol table, the arguments from its .nv.info.<symbol> section
(EIATTR_KPARAM_INFO records), the figures from ptxas' --resource-usage report (the cubin keeps
no spill counts), saved with the cache entry at build time.
"""

from __future__ import annotations

import io
import re
import struct
from dataclasses import asdict, dataclass
from typing import Any

import msgpack
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection, SymbolTableSection

from wgrad_cli.abi import ARGS, KERNARG_BYTES, POINTER_BYTES
from wgrad_cli.occupancy import Occupancy, gfx950, sm90

NT_AMDGPU_METADATA = 32
EIFMT_SVAL, EIATTR_KPARAM_INFO = 4, 0x17  # .nv.info attribute format with a size field; parameter record


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


def amd_resources(data: bytes, base: str, block: int, dynamic_shared: int = 0) -> Resources:
    """Find kernel `base` in the metadata, check its arguments against the ABI, read its figures."""
    symbol, _ = amd_kernel_params(data, base)
    k = next(k for k in amd_metadata(data)["amdhsa.kernels"] if k[".name"] == symbol)
    vgprs, agprs, lds = k[".vgpr_count"], k.get(".agpr_count", 0), k[".group_segment_fixed_size"]
    return Resources(k[".name"], vgprs, agprs, k[".sgpr_count"], lds, k[".private_segment_fixed_size"],
                     k[".vgpr_spill_count"] + k[".sgpr_spill_count"], k[".wavefront_size"],
                     gfx950(vgprs, agprs, lds + dynamic_shared, block, k[".wavefront_size"]))


@dataclass(frozen=True)
class Param:
    """One explicit kernel argument as the code object records it."""

    offset: int
    size: int
    kind: str  # AMD: "pointer" or the metadata's value kind; NVIDIA: from the C++ name, else "unrecorded"


def amd_params(kernel: dict[str, Any]) -> list[Param]:
    """Explicit arguments of one kernel's metadata (the hidden ones the runtime fills follow them)."""
    return [Param(a[".offset"], a[".size"], "pointer" if a[".value_kind"] == "global_buffer" else a[".value_kind"])
            for a in kernel[".args"] if not a[".value_kind"].startswith("hidden_")]


def cubin_params(data: bytes, symbol: str) -> list[Param]:
    """Arguments of `symbol` from its .nv.info section, in ordinal order.

    Each EIATTR_KPARAM_INFO body: u32 index, u16 ordinal, u16 offset, u32 whose top 14 bits
    are the size in bytes. Pointers and 8-byte values look alike there.
    """
    section = ELFFile(io.BytesIO(data)).get_section_by_name(f".nv.info.{symbol}")
    if section is None:
        raise CodeObjectError(f"the cubin has no .nv.info.{symbol} section, so its arguments are unknown")
    body, i, params = section.data(), 0, []
    while i + 4 <= len(body):
        fmt, attr, size = body[i], body[i + 1], struct.unpack_from("<H", body, i + 2)[0]
        if fmt == EIFMT_SVAL and attr == EIATTR_KPARAM_INFO:
            _, ordinal, offset, word = struct.unpack_from("<IHHI", body, i + 4)
            params.append((ordinal, Param(offset, word >> 18, "unrecorded")))
        i += 4 + size if fmt == EIFMT_SVAL else 4  # other formats carry at most 2 bytes inline
    return [p for _, p in sorted(params, key=lambda op: op[0])]


BUILTINS = set("vwbcahstijlmxynofdegz")  # Itanium one-letter builtin types


def mangled_kinds(symbol: str) -> list[str] | None:
    """"pointer" or "value" per parameter of an Itanium-mangled function name, for the common
    grammar (builtins, pointers, references, cv-qualifiers, substitutions, plain class names);
    None where the name is not mangled or uses more (templates, nested names, std::)."""
    m = re.match(r"_Z(\d+)", symbol)
    if not m:
        return None
    rest, subs, kinds = symbol[m.end() + int(m.group(1)):], [], []

    def parse(i: int) -> tuple[str, int]:  # (kind of the type starting at i, index after it)
        c = rest[i]
        if c in BUILTINS:
            return "value", i + 1
        if c == "D" and rest[i + 1:i + 2] in tuple("hfdesiacnu"):
            return "value", i + 2
        if c in "PRO":
            _, j = parse(i + 1)
            subs.append("pointer")
            return "pointer", j
        if c in "KVr":
            kind, j = parse(i + 1)
            subs.append(kind)
            return kind, j
        if c == "S" and (s := re.match(r"S([0-9A-Z]*)_", rest[i:])):
            index = int(s.group(1), 36) + 1 if s.group(1) else 0
            return subs[index], i + s.end()
        if c.isdigit() and (n := re.match(r"\d+", rest[i:])):
            subs.append("value")
            return "value", i + n.end() + int(n.group())
        raise ValueError(f"unhandled mangling at {rest[i:]!r}")

    i = 0
    try:
        while i < len(rest):
            kind, i = parse(i)
            kinds.append(kind)
    except (ValueError, IndexError):
        return None
    return [] if kinds == ["value"] and rest == "v" else kinds


def check_params(symbol: str, params: list[Param]) -> None:
    """The ABI: six 8-byte pointers at offsets 0, 8, ..., 40; one message listing every difference."""
    problems = []
    if len(params) != len(ARGS):
        problems.append(f"{len(params)} arguments, the ABI has {len(ARGS)}")
    for i, (p, want) in enumerate(zip(params, ARGS)):
        if p.kind not in ("pointer", "unrecorded") or p.size != POINTER_BYTES or p.offset != i * POINTER_BYTES:
            problems.append(f"argument {i} ({want.name}) is {p.kind} of {p.size} bytes at offset {p.offset}, "
                            f"the ABI wants a {POINTER_BYTES}-byte pointer at offset {i * POINTER_BYTES}")
    if problems:
        raise CodeObjectError(f"kernel {symbol} does not match the ABI ({KERNARG_BYTES}-byte kernarg): "
                              + "; ".join(problems))


def amd_kernel_params(data: bytes, base: str) -> tuple[str, list[Param]]:
    """(symbol, arguments) of kernel `base` in an AMDGPU code object, checked against the ABI."""
    kernels = {k[".name"]: k for k in amd_metadata(data)["amdhsa.kernels"]}
    symbol = match_symbol(list(kernels), base)
    params = amd_params(kernels[symbol])
    check_params(symbol, params)
    return symbol, params


def nvidia_kernel_params(data: bytes, base: str) -> tuple[str, list[Param]]:
    """(symbol, arguments) of kernel `base` in a cubin, checked against the ABI."""
    symbol = match_symbol(cubin_symbols(data), base)
    params = cubin_params(data, symbol)
    kinds = mangled_kinds(symbol)  # the cubin does not say pointer or value; a C++ name does
    if kinds is not None and len(kinds) == len(params):
        params = [Param(p.offset, p.size, kind) for p, kind in zip(params, kinds)]
    check_params(symbol, params)
    return symbol, params


def cubin_symbols(data: bytes) -> list[str]:
    """Names of the functions a cubin defines."""
    elf = ELFFile(io.BytesIO(data))
    symtab = elf.get_section_by_name(".symtab")
    if elf["e_machine"] != "EM_CUDA" or not isinstance(symtab, SymbolTableSection):
        raise CodeObjectError(f"not a cubin (machine {elf['e_machine']})")
    return [s.name for s in symtab.iter_symbols() if s["st_info"]["type"] == "STT_FUNC"]


_PTXAS_FUNC = re.compile(r"Function properties for (\S+)\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, "
                         r"(\d+) bytes spill loads\n.*?Used (\d+) registers(.*)")


def nvidia_resources(data: bytes, ptxas_report: str, base: str, block: int, dynamic_shared: int = 0) -> Resources:
    """Find kernel `base` in the cubin and its figures in ptxas' report from the same build."""
    symbol, _ = nvidia_kernel_params(data, base)
    for m in _PTXAS_FUNC.finditer(ptxas_report):
        if m.group(1) == symbol:
            stack, stores, loads, regs = (int(m.group(i)) for i in range(2, 6))
            smem = re.search(r"(\d+) bytes smem", m.group(6))
            shared = int(smem.group(1)) if smem else 0
            return Resources(symbol, regs, None, None, shared, stack, stores + loads, 32,
                             sm90(regs, shared + dynamic_shared, block))
    raise CodeObjectError(f"ptxas reported no resource usage for {symbol}")
