"""The peak rates and cache sizes bench reports against (registry.peak, from a DeviceInfo), and the
cold-run flush sized from them (flush.py)."""

from __future__ import annotations

import pytest

from wgrad_cli.backends.flush import flush_bytes
from wgrad_cli.backends.registry import peak
from wgrad_cli.device.runtime import DeviceInfo

MiB = 1 << 20


def device(name: str, arch: str, units: int, mhz: int, l2: int) -> DeviceInfo:
    return DeviceInfo(vendor="amd" if arch.startswith("gfx") else "nvidia", index=0, name=name, arch=arch,
                      units=units, max_clock_mhz=mhz, memory_bytes=141 << 30, l2_bytes=l2, driver="d",
                      runtime="r")


MI355X = device("AMD Instinct MI355X", "gfx950", 256, 2400, 4 * MiB)
H200 = device("NVIDIA H200", "sm_90", 132, 1980, 60 * MiB)
A100 = device("NVIDIA A100-SXM4-80GB", "sm_80", 108, 1410, 40 * MiB)


def test_gfx950_from_units_and_clock() -> None:
    p = peak(MI355X)
    assert p is not None
    assert p.matrix_tflops == pytest.approx(256 * 2400e6 * 8192 / 1e12)
    assert p.matrix_tflops == pytest.approx(5033, abs=1)
    assert (p.matrix_label, p.bf16_tflops, p.llc_bytes) == ("MXFP8", p.matrix_tflops / 2, 288 * MiB)
    assert p.source == "256 CU x 2400 MHz x 8192 FLOP/clk"


def test_gfx950_scales_with_the_device() -> None:
    p = peak(device("AMD Instinct MI350X", "gfx950", 256, 2200, 4 * MiB))
    assert p is not None and p.matrix_tflops == pytest.approx(4613.7, abs=0.1)


def test_h200_datasheet_row() -> None:
    p = peak(H200)
    assert p is not None
    assert (p.matrix_tflops, p.matrix_label, p.bf16_tflops, p.hbm_gbps) == (1979.0, "FP8", 989.0, 4800.0)
    assert p.llc_bytes == 60 * MiB  # the L2 the driver reports
    assert "H200" in p.source


def test_h200_by_name_not_arch() -> None:
    """Hopper's figures come from the part's name: an sm_90 the table does not name has no peak."""
    assert peak(device("NVIDIA GH100 engineering sample", "sm_90", 132, 1980, 50 * MiB)) is None


def test_unknown_device() -> None:
    assert peak(A100) is None


@pytest.mark.parametrize("dev, expected", [
    (MI355X, 2 * 288 * MiB),  # Infinity Cache plus L2 beats the 4 MiB the driver reports
    # the driver's, when larger
    (device("AMD Instinct MI355X", "gfx950", 256, 2400, 512 * MiB), 2 * 512 * MiB),
    (H200, 2 * 60 * MiB),
    (A100, 2 * 40 * MiB),  # unknown device: the driver's L2
], ids=["gfx950", "gfx950-large-l2", "h200", "unknown"])
def test_flush_bytes(dev: DeviceInfo, expected: int) -> None:
    assert flush_bytes(dev, peak(dev)) == expected
