"""What a device could do at best: the peak rates and cache sizes bench reports against (each
target's backend knows its devices' peaks), and the flush that evicts the last-level cache.
Dense rates, no sparsity.
"""

from __future__ import annotations

from dataclasses import dataclass

from wgrad_cli.device.runtime import DeviceInfo

MiB = 1 << 20


@dataclass(frozen=True)
class Peak:
    matrix_tflops: float  # dense rate for the kernel's inputs: MXFP8 (gfx950) or FP8 (Hopper)
    matrix_label: str
    bf16_tflops: float
    hbm_gbps: float
    llc_bytes: int  # the last-level cache a cold run must flush (L2 plus AMD's Infinity Cache)
    source: str


def flush_bytes(device: DeviceInfo, known: Peak | None) -> int:
    """Bytes written between cold runs: twice the last-level cache (the L2 the driver reports, at least;
    `known`: the device's peaks, where its backend knows them)."""
    return 2 * max(device.l2_bytes, known.llc_bytes if known else 0)
