"""amdsmi's readings through the HIP shim, with a fake amdsmi module (no AMD GPU here): each one
guarded, the power cap from the violation status where the metrics table has no throttle bits."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest

from wgrad_cli.device.hip import _amdsmi_sensors
from wgrad_cli.device.runtime import Reading


class AmdSmiException(Exception):
    pass


def fake_amdsmi(clock: Any, violation: Any, metrics: dict[str, Any]) -> SimpleNamespace:
    def fail() -> Any:
        raise AmdSmiException("not supported")

    return SimpleNamespace(
        amdsmi_init=lambda: None, amdsmi_get_processor_handle_from_bdf=lambda bus: bus,
        AmdSmiClkType=SimpleNamespace(GFX="gfx"),
        amdsmi_get_clock_info=lambda h, kind: fail() if clock is None else {"clk": clock},
        amdsmi_get_power_info=lambda h: {"current_socket_power": 1012},
        amdsmi_get_violation_status=lambda h: fail() if violation is None else {"active_ppt_pwr": violation},
        amdsmi_get_gpu_metrics_info=lambda h: metrics)


@pytest.mark.parametrize("clock, violation, metrics, expected", [
    (2400, True, {"indep_throttle_status": "N/A"}, Reading(2400, 1012.0, True)),  # MI350: metrics v1.8
    # older amdsmi: the throttle bits
    (2400, "N/A", {"indep_throttle_status": 0}, Reading(2400, 1012.0, False)),
    (None, None, {}, Reading(None, 1012.0, None)),  # the clock read fails: blank, not the end of the run
    ("N/A", None, {"indep_throttle_status": 2}, Reading(None, 1012.0, True)),
])
def test_readings(monkeypatch: pytest.MonkeyPatch, clock: Any, violation: Any, metrics: dict[str, Any],
                  expected: Reading) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", fake_amdsmi(clock, violation, metrics))
    assert _amdsmi_sensors("0000:75:00.0")() == expected


def test_without_amdsmi_nothing_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    assert _amdsmi_sensors("0000:75:00.0")() == Reading(None, None, None)
