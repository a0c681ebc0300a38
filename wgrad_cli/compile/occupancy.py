"""How many workgroups fit on one compute unit / SM, from a kernel's resource use.

Only the limits that a kernel's own figures decide are modelled: registers, LDS / shared
memory, waves or warps per unit. Hardware figures are the vendors' published ones.
"""

from __future__ import annotations

from dataclasses import dataclass


def _ceil(x: int, step: int) -> int:
    return -(-x // step) * step


@dataclass(frozen=True)
class Occupancy:
    groups_per_unit: int  # workgroups per CU (AMD) / blocks per SM (NVIDIA)
    waves_per_simd: int | None  # AMD: resident waves on each of the CU's 4 SIMDs
    warps_per_sm: int | None  # NVIDIA: resident warps per SM
    limited_by: str


def gfx950(vgprs: int, agprs: int, lds_bytes: int, block: int, wave: int = 64) -> Occupancy:
    """CDNA3/4: a unified 512-entry VGPR+AGPR file per SIMD lane, granule 8, AGPRs start at a
    4-aligned offset; at most 8 waves per SIMD; 160 KiB LDS per CU; a workgroup's waves spread
    over the CU's 4 SIMDs."""
    regs = _ceil(_ceil(vgprs, 4) + agprs, 8) if agprs else _ceil(max(vgprs, 1), 8)
    waves_by_regs = min(8, 512 // regs)
    waves_per_group = -(-block // wave)
    waves_per_simd_per_group = -(-waves_per_group // 4)
    limits = {"registers": waves_by_regs // waves_per_simd_per_group,
              "LDS": 160 * 1024 // lds_bytes if lds_bytes else 1 << 30}
    reason = min(limits, key=lambda k: limits[k])
    groups = limits[reason]
    return Occupancy(groups, groups * waves_per_simd_per_group, None, reason)


def sm90(registers: int, shared_bytes: int, block: int) -> Occupancy:
    """Hopper: 64K registers per SM allocated per warp in 256-register units, 64 warps and 32
    blocks per SM, 228 KiB shared memory per SM with 1 KiB reserved per block (128-byte units)."""
    warps = -(-block // 32)
    per_warp = _ceil(max(registers, 1) * 32, 256)
    limits = {"warps": 64 // warps, "blocks": 32, "registers": (65536 // per_warp) // warps,
              "shared memory": 228 * 1024 // _ceil(shared_bytes + 1024, 128)}
    reason = min(limits, key=lambda k: limits[k])
    groups = limits[reason]
    return Occupancy(groups, None, groups * warps, reason)
