"""Waiting for the device with a deadline, so that a deadlocked kernel ends the run with an error.

A kernel under development can wait forever: a barrier nobody arrives at, a `setmaxnreg.inc` the
CTA's registers cannot satisfy. A driver's synchronize would then hang the command (and, on a
lent machine, spend its time). Polling an event instead lets the command stop after `timeout`
seconds. The host cannot stop a running kernel: the runtime is abandoned (its clean-up calls would
block behind the kernel) and the CLI exits at once, which ends the kernel with the process.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from wgrad_cli.errors import KernelHang

if TYPE_CHECKING:
    from wgrad_cli.device.runtime import Runtime

# polling backs off between these: a sample ends at most 0.2 ms late
FIRST_PAUSE_S, LONGEST_PAUSE_S = 1e-5, 2e-4


def wait(rt: Runtime, event: object, timeout: float, what: str) -> None:
    """Return once the work recorded before `event` is done; KernelHang after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    pause = FIRST_PAUSE_S
    while not rt.done(event):
        if time.monotonic() > deadline:
            rt.abandon()
            raise KernelHang(f"{what} did not finish within {timeout:g} s: the kernel looks deadlocked (or "
                             "is slower than --kernel-timeout allows); wgrad exits now, which ends it "
                             "(bench keeps the rows it finished, marked incomplete; verify writes no "
                             "results)")
        time.sleep(pause)
        pause = min(2 * pause, LONGEST_PAUSE_S)


def settle(rt: Runtime, event: object, timeout: float, what: str) -> None:
    """Wait, as wait() does, for everything launched so far."""
    rt.record(event)
    wait(rt, event, timeout, what)
