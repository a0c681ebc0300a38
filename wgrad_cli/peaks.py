"""What each device could do at best: the peak rates and cache sizes bench reports against.

gfx950's matrix peak follows from the device (CUs x clock x 8192 MXFP8 FLOP per CU per clock:
MI355X 256 x 2.4 GHz = 5,033 TFLOP/s); Hopper's from NVIDIA's datasheet for the part, since
its boost clock is not the clock the datasheet figures use. Dense rates, no sparsity.
"""

from __future__ import annotations

from dataclasses import dataclass

from wgrad_cli.runtime import DeviceInfo

MiB = 1 << 20


@dataclass(frozen=True)
class Peak:
    matrix_tflops: float  # dense rate for the kernel's inputs: MXFP8 (gfx950) or FP8 (Hopper)
    matrix_label: str
    bf16_tflops: float
    hbm_gbps: float
    llc_bytes: int  # the last-level cache a cold run must flush (L2 plus AMD's Infinity Cache)
    source: str


DATASHEET = {  # name fragment (first match wins) -> (fp8, bf16 TFLOP/s, HBM GB/s): NVIDIA datasheets, dense
    "H200 NVL": (1671.0, 835.0, 4800.0),
    "H200": (1979.0, 989.0, 4800.0),
    "H100 80GB HBM3": (1979.0, 989.0, 3350.0),
}


def gfx950_peak(device: DeviceInfo) -> Peak:
    mxfp8 = device.units * device.max_clock_mhz * 1e6 * 8192 / 1e12
    return Peak(mxfp8, "MXFP8", mxfp8 / 2, 8000.0, 256 * MiB + 32 * MiB,
                f"{device.units} CU x {device.max_clock_mhz} MHz x 8192 FLOP/clk")


def datasheet_peak(device: DeviceInfo) -> Peak | None:
    for fragment, (fp8, bf16, hbm) in DATASHEET.items():
        if fragment in device.name:
            return Peak(fp8, "FP8", bf16, hbm, device.l2_bytes, f"NVIDIA {fragment} datasheet")
    return None


def flush_bytes(device: DeviceInfo, known: Peak | None) -> int:
    """Bytes written between cold runs: twice the last-level cache (the L2 the driver reports, at least;
    `known`: the device's peaks, where its backend knows them)."""
    return 2 * max(device.l2_bytes, known.llc_bytes if known else 0)
