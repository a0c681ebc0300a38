"""The results path (records, tables, show, compare, speedup, plot) reads files without the device stack."""

from __future__ import annotations

import subprocess
import sys

DEVICE_STACK = ("wgrad_cli.runtime", "wgrad_cli.emu", "wgrad_cli.isolation", "wgrad_cli.launch", "torch", "cuda",
                "hip", "triton")


def test_show_compare_speedup_and_plot_import_no_device_stack() -> None:
    code = ("import sys, wgrad_cli.show, wgrad_cli.compare, wgrad_cli.speedup, wgrad_cli.tables, wgrad_cli.records, "
            "wgrad_cli.plot; "
            "print('\\n'.join(sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert [m for m in loaded if m.split(".")[0] in DEVICE_STACK or m.startswith(DEVICE_STACK)] == []
