"""The emulator forks its worker processes only while no other thread runs in the process (a lock
held by another thread at the fork would stay held in the child forever): with one running it
runs the launch in-process, and `wgrad verify --device emu` starts no thread of its own."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from emukernels import compile_hip, run, tiny_config
from wgrad_cli.cli import cli
from wgrad_cli.emu import dispatch
from wgrad_cli.emu.device import EmuRuntime

SQUARE = "KERNEL void square(unsigned *out) { unsigned i = gid() * 256 + tid(); out[i] = i * i; }"


def test_no_fork_while_another_thread_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork(_: str) -> None:
        raise AssertionError("forked with another thread running")
    monkeypatch.setattr(dispatch.multiprocessing, "get_context", no_fork)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        out, = run(compile_hip(SQUARE), [np.zeros(256 * 64, np.uint32)], grid=64, block=256,
                   rt=EmuRuntime(workers=2))
    finally:
        stop.set()
        other.join()
    i = np.arange(256 * 64, dtype=np.uint32)
    assert (out == i * i).all()


@pytest.mark.skipif(shutil.which("clang-22") is None,
                    reason="clang-22 (Debian's, for gfx950) is not installed")
def test_verify_forks_its_workers_with_no_other_thread(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: the emulator forks no worker")
    forked: list[int] = []
    fork_context = dispatch.multiprocessing.get_context

    def watched(method: str) -> object:
        forked.append(threading.active_count())
        return fork_context(method)
    monkeypatch.setattr(dispatch.multiprocessing, "get_context", watched)
    result = CliRunner().invoke(cli, ["verify", "--config", str(tiny_config(tmp_path)), "--device", "emu",
                                      "--cache-dir", str(tmp_path / "cache"), "--no-save"])
    assert result.exit_code == 0, result.output
    assert forked == [1]  # the tiny shape's one launch, over workers, with this thread alone
