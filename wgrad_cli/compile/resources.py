"""A kernel's resource use as its code object records it (hsaco.py, cubin.py): what build checks
against a config's limits, writes with each build record and prints in its table. Nothing here
reads a code object, so that show reads build records on any machine."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from wgrad_cli.compile.occupancy import Occupancy


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
