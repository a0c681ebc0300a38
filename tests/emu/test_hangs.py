"""A kernel that never ends, on the emulator: `wgrad verify --device emu` stops its launch after
--kernel-timeout seconds with one line (kernel, shape, workgroups, the loop's branch), keeps every
other row and exits 3; and ending such a run (SIGKILL, which it cannot catch; SIGTERM; Ctrl-C's
SIGINT to its process group) leaves none of its worker processes behind."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from wgrad_cli.cli import cli
from wgrad_cli.config.kernelspec import KERNELS_DIR

pytestmark = pytest.mark.skipif(shutil.which("clang-22") is None, reason="clang-22 (Debian's, for gfx950) is not installed")
LINE = "    float acc = 0.0f;\n"
SPIN = "    while (M == 512 && *(volatile const int *)expert_off >= 0) {}  // offsets are never negative\n"
CONFIG = """description: a shape the kernel finishes and one it spins on forever
seed: 3
kernels: [reference]
targets: [gfx950]
shapes:
  - {name: tiny, M: 128, N: 256, K: 256, E: 1, offsets: [0, 128]}
  - {name: spins, M: 512, N: 256, K: 256, E: 2, offsets: [0, 512, 512]}
"""


@pytest.fixture(scope="module")
def spinning(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """verify's arguments for the reference kernel changed to spin on shape `spins`, built once."""
    d = tmp_path_factory.mktemp("spinning")
    reference = (KERNELS_DIR / "reference.cu").read_text()
    assert reference.count(LINE) == 1, "the reference kernel changed: update the line the spin goes before"
    (d / "spin.cu").write_text(reference.replace(LINE, SPIN + LINE))
    (d / "spin.yaml").write_text(CONFIG)
    args = ["--config", str(d / "spin.yaml"), "--kernel", "reference", "--kernel-source", str(d / "spin.cu"),
            "--include", str(KERNELS_DIR), "--cache-dir", str(d / "cache")]
    built = CliRunner().invoke(cli, ["build", *args])
    assert built.exit_code == 0, built.output
    return [*args, "--device", "emu"]


def test_a_spinning_kernel_stops_with_one_line_and_exit_3(spinning: list[str], tmp_path: Path) -> None:
    out = tmp_path / "verify.json"
    start = time.monotonic()
    result = CliRunner().invoke(cli, ["verify", *spinning, "--kernel-timeout", "8", "--json", str(out)])
    assert result.exit_code == 3, result.output
    assert time.monotonic() - start < 60  # the tiny shape's check, and 8 s of spinning (the first takes 2 s on an idle 2-core machine)
    hung = [line for line in result.stderr.splitlines() if line.startswith("HUNG ")]
    assert len(hung) == 1 and "Traceback" not in result.output, result.stderr
    assert re.fullmatch(r"HUNG reference on spins: launch of \S+ did not finish within 8 s \(--kernel-timeout\) on the "
                        r"emulator, which stopped it: workgroups \d+, \d+, \d+ and \d+ more in the loop of s_cbranch_\w+ at "
                        r"offset 0x[0-9a-f]+ back to 0x[0-9a-f]+", hung[0]), hung[0]
    assert "1/2 shapes passed" in result.stderr
    doc = json.loads(out.read_text())
    assert [r["shape"]["name"] for r in doc["records"]] == ["tiny"] and doc["records"][0]["ok"]
    assert doc["hung"] == [hung[0].removeprefix("HUNG ")]
    assert not multiprocessing.active_children()  # the launch's workers were ended with it


def _group(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group `pgid`, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "SIGINT to the group"])
def test_ending_a_run_leaves_no_worker_behind(spinning: list[str], how: str, tmp_path: Path) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: the emulator forks no worker")
    log = tmp_path / "stderr"
    with log.open("w") as stderr:
        run = subprocess.Popen([sys.executable, "-m", "wgrad_cli", "verify", *spinning, "--shape", "spins", "--no-save",
                                "--kernel-timeout", "600"], start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=stderr)
    try:
        deadline = time.monotonic() + 120
        while len(_group(run.pid)) < 3:  # wgrad and two workers forked for the launch
            assert run.poll() is None and time.monotonic() < deadline, f"no worker was forked: {log.read_text()}"
            time.sleep(0.1)
        if how == "SIGINT to the group":
            os.killpg(run.pid, signal.SIGINT)
        else:
            run.send_signal(signal.Signals[how])
        run.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _group(run.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _group(run.pid) == [], log.read_text()
    finally:
        for pid in _group(run.pid):  # never leave a spinning worker to the machine
            os.kill(pid, signal.SIGKILL)
        run.kill()
        run.wait()
