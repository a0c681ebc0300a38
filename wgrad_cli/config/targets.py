"""GPU targets wgrad builds for, and what differs between their vendors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Vendor = Literal["amd", "nvidia"]


@dataclass(frozen=True)
class Target:
    name: str
    vendor: Vendor
    suffix: str  # code object file suffix
    device_arch: str  # what the device reports when it can run this target's code objects

    def __str__(self) -> str:
        return self.name


TARGETS: dict[str, Target] = {
    "gfx950": Target("gfx950", "amd", ".hsaco", "gfx950"),
    "sm_90a": Target("sm_90a", "nvidia", ".cubin", "sm_90"),  # arch-specific: compute capability 9.0 only
}
