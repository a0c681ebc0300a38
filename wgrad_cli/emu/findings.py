"""A sanitizer finding (sanitize.py), as a launch's statistics carry it back from its workers."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Finding:
    """One kind of finding: a check, the instruction that met it and the other one involved (-1: none),
    where it was first met and how."""

    check: str  # waits, race, hazard, initcheck
    pc: int
    text: str
    other: int
    workgroup: int
    wave: int
    where: str  # the register or LDS address
    what: str
    times: int = 1

    def line(self) -> str:
        """`check: workgroup, wave: instruction at offset: register or LDS address, what was missing`."""
        again = f" ({self.times:,} times)" if self.times > 1 else ""
        return (f"{self.check}: workgroup {self.workgroup}, wave {self.wave}: {self.text} at {self.pc:#x}: "
                f"{self.where} {self.what}{again}")

    @property
    def key(self) -> tuple[str, int, int]:
        return self.check, self.pc, self.other


def merged(*lists: Iterable[Finding]) -> list[Finding]:
    """One finding per (check, instruction, other instruction): the first met, with the times added."""
    out: dict[tuple[str, int, int], Finding] = {}
    for f in (f for one in lists for f in one):
        known = out.get(f.key)
        out[f.key] = f if known is None else replace(known, times=known.times + f.times)
    return sorted(out.values(), key=lambda f: (f.pc, f.check, f.other))
