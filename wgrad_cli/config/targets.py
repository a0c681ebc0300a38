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
    # how its build tables speak of a kernel's resources (results.records' field, then the word after it):
    registers: tuple[tuple[str, str], ...]  # AMD: VGPRs, AGPRs and SGPRs; NVIDIA: registers per thread
    occupancy: tuple[tuple[str, str, str], ...]  # Occupancy's field, what it counts and per what
    # LDS / shared memory one workgroup may use, bytes (a kernel spec is checked against it)
    shared_limit: int

    def __str__(self) -> str:
        return self.name


TARGETS: dict[str, Target] = {
    "gfx950": Target("gfx950", "amd", ".hsaco", "gfx950",
                     (("registers", "v"), ("agprs", "a"), ("sgprs", "s")),
                     (("groups_per_unit", "WG", "CU"), ("waves_per_simd", "wave", "SIMD")), 160 * 1024),
    # compute capability 9.0 only
    "sm_90a": Target("sm_90a", "nvidia", ".cubin", "sm_90", (("registers", ""),),
                     (("groups_per_unit", "block", "SM"), ("warps_per_sm", "warp", "SM")), 227 * 1024),
}
MAX_SHARED = max(t.shared_limit for t in TARGETS.values())  # the most any target's workgroup may use
