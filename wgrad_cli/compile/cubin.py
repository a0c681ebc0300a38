"""NVIDIA's cubins (sm_90a): a kernel's arguments from .nv.info, its resources from ptxas' report."""

from __future__ import annotations

import io
import re
import struct

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from wgrad_cli.compile.codeobject import CodeObjectError, Param, check_params, mangled_kinds, match_symbol
from wgrad_cli.compile.occupancy import sm90
from wgrad_cli.compile.resources import Resources

EIFMT_SVAL, EIATTR_KPARAM_INFO = 4, 0x17  # .nv.info attribute format with a size field; parameter record


def arguments(data: bytes, symbol: str) -> list[Param]:
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


def symbols(data: bytes) -> list[str]:
    """Names of the functions a cubin defines."""
    elf = ELFFile(io.BytesIO(data))
    symtab = elf.get_section_by_name(".symtab")
    if elf["e_machine"] != "EM_CUDA" or not isinstance(symtab, SymbolTableSection):
        raise CodeObjectError(f"not a cubin (machine {elf['e_machine']})")
    return [s.name for s in symtab.iter_symbols() if s["st_info"]["type"] == "STT_FUNC"]


def kernel_params(data: bytes, base: str) -> tuple[str, list[Param]]:
    """(symbol, arguments) of kernel `base` in a cubin, checked against the ABI."""
    symbol = match_symbol(symbols(data), base)
    params = arguments(data, symbol)
    kinds = mangled_kinds(symbol)  # the cubin does not say pointer or value; a C++ name does
    if kinds is not None and len(kinds) == len(params):
        params = [Param(p.offset, p.size, kind) for p, kind in zip(params, kinds)]
    check_params(symbol, params)
    return symbol, params


_PTXAS_FUNC = re.compile(r"Function properties for (\S+)\n\s*(\d+) bytes stack frame, (\d+) bytes spill "
                         r"stores, (\d+) bytes spill loads\n.*?Used (\d+) registers(.*)")


def resources(data: bytes, ptxas_report: str, base: str, block: int, dynamic_shared: int = 0) -> Resources:
    """Find kernel `base` in the cubin and its figures in ptxas' report from the same build."""
    symbol, _ = kernel_params(data, base)
    for m in _PTXAS_FUNC.finditer(ptxas_report):
        if m.group(1) == symbol:
            stack, stores, loads, regs = (int(m.group(i)) for i in range(2, 6))
            smem = re.search(r"(\d+) bytes smem", m.group(6))
            shared = int(smem.group(1)) if smem else 0
            return Resources(symbol, regs, None, None, shared, stack, stores + loads, 32,
                             sm90(regs, shared + dynamic_shared, block))
    raise CodeObjectError(f"ptxas reported no resource usage for {symbol}")
