"""What every code object reader gives (hsaco.py for gfx950, cubin.py for sm_90a): the kernel's
symbol, its arguments checked against the ABI, and its resource use (resources.py).

gfx950: everything comes from the NT_AMDGPU_METADATA note (msgpack) of the ELF. sm_90a: the
symbol comes from the cubin's symbol table, the arguments from its .nv.info.<symbol> section
(EIATTR_KPARAM_INFO records), the figures from ptxas' --resource-usage report (the cubin keeps
no spill counts), saved with the cache entry at build time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wgrad_cli.problem.abi import ARGS, KERNARG_BYTES, POINTER_BYTES


class CodeObjectError(Exception):
    """The code object is not what the kernel spec promises (symbol, arguments)."""


def match_symbol(names: list[str], base: str) -> str:
    """The one name that is `base` itself (extern "C") or its Itanium mangling (_Z<len><base>...)."""
    hits = [n for n in names if n == base or n.startswith(f"_Z{len(base)}{base}")]
    if len(hits) != 1:
        raise CodeObjectError(f"expected one kernel named {base!r}, found {hits or 'none'} among {names}")
    return hits[0]


@dataclass(frozen=True)
class Param:
    """One explicit kernel argument as the code object records it."""

    offset: int
    size: int
    kind: str  # AMD: "pointer" or the metadata's value kind; NVIDIA: from the C++ name, else "unrecorded"


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
        if p.kind not in ("pointer", "unrecorded") or p.size != POINTER_BYTES \
                or p.offset != i * POINTER_BYTES:
            problems.append(f"argument {i} ({want.name}) is {p.kind} of {p.size} bytes at offset {p.offset}, "
                            f"the ABI wants a {POINTER_BYTES}-byte pointer at offset {i * POINTER_BYTES}")
    if problems:
        raise CodeObjectError(f"kernel {symbol} does not match the ABI ({KERNARG_BYTES}-byte kernarg): "
                              + "; ".join(problems))


