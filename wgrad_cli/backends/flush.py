"""The flush that evicts a device's last-level cache between cold runs, from what the driver reports
and the peaks its backend knows (results.records.Peak)."""

from __future__ import annotations

from wgrad_cli.device.runtime import DeviceInfo
from wgrad_cli.results.records import Peak

MiB = 1 << 20


def flush_bytes(device: DeviceInfo, known: Peak | None) -> int:
    """Bytes written between cold runs: twice the last-level cache (the L2 the driver reports, at least;
    `known`: the device's peaks, where its backend knows them)."""
    return 2 * max(device.l2_bytes, known.llc_bytes if known else 0)
