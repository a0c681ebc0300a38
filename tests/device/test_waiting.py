"""The device wait's deadline: a finished launch returns, a deadlocked one ends the run (exit 3)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostdevice import HostDevice

from wgrad_cli.config.shipped import CONFIGS_DIR
from wgrad_cli.device.runtime import Runtime
from wgrad_cli.device.waiting import settle, wait
from wgrad_cli.errors import KernelHang


def test_finished_work_returns() -> None:
    host = HostDevice()
    event = host.event()
    settle(host, event, 0.01, "the work")
    assert event != [0.0] and not host.abandoned  # recorded, then found done


def test_stuck_work_raises_after_the_deadline_and_abandons_the_runtime() -> None:
    host = HostDevice()
    host.hung = True
    began = time.monotonic()
    with pytest.raises(KernelHang) as exc:
        wait(host, host.event(), 0.05, "hopper on 8k")
    assert 0.05 <= time.monotonic() - began < 2
    assert host.abandoned and exc.value.exit_code == 3
    (line,) = exc.value.lines
    assert line.startswith("hopper on 8k did not finish within 0.05 s: the kernel looks deadlocked")


# The empty kernel's signature, spinning while expert_off[0] >= 0 (always): a kernel that never ends.
# The volatile read keeps the compiler from dropping the loop.
HANG = ("{} void wgrad_empty_kernel(unsigned short*, const unsigned char*, const unsigned char*, const "
        "unsigned char*, const unsigned char*, const int* off) {{ while (*(volatile const int*)off >= 0) "
        "{{}} }}\n")
GLOBAL = {"nvidia": "__global__", "amd": "__attribute__((global))"}


@pytest.mark.gpu
def test_a_deadlocked_kernel_on_the_gpu_ends_the_run(gpu: Runtime, repo: Path, tmp_path: Path) -> None:
    """The real thing: a kernel that never ends, as --kernel empty's source. It runs in a child
    process, because only the end of its process stops it."""
    source, out = tmp_path / "hang.cu", tmp_path / "v.json"
    source.write_text(HANG.format(GLOBAL[gpu.device.vendor]))
    r = subprocess.run([sys.executable, "-m", "wgrad_cli", "verify", "--config",
                        str(CONFIGS_DIR / "smoke.yaml"), "--shape", "one-expert", "--kernel", "empty",
                        "--kernel-source", str(source), "--kernel-timeout", "2", "--cache-dir",
                        str(tmp_path / "cache"), "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "did not finish within 2 s: the kernel looks deadlocked" in r.stdout + r.stderr
    assert not out.exists()
