"""A kernel that never ends, on the emulator: `wgrad verify --device emu` stops its launch with one
line (kernel, shape, workgroups, the loop's branch), keeps every other row and exits 3. A spin on a
flag nobody sets stops by its state, within seconds and whatever the clock says; a loop whose state
keeps changing stops at --kernel-timeout seconds of CPU time; a slow emulator is never stopped for
its slowness. Ending such a run (SIGKILL, which it cannot catch; SIGTERM; Ctrl-C's SIGINT to its
process group) leaves none of its worker processes behind."""

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
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from wgrad_cli.cli import cli
from wgrad_cli.config.kernelspec import KERNELS_DIR
from wgrad_cli.emu import dispatch
from wgrad_cli.commands import verify

pytestmark = pytest.mark.skipif(shutil.which("clang-22") is None,
                                reason="clang-22 (Debian's, for gfx950) is not installed")
LINE = "    float acc = 0.0f;\n"
# offsets are never negative: true for ever on `spins`
FLAG = "M == 512 && *(volatile const int *)expert_off >= 0"
SPINS = {
    "spin": f"    while ({FLAG}) {{}}\n",
    # a counter the compiler must keep in a register and change: the waves' state never repeats
    "count": f"    for (unsigned n = 0; {FLAG}; ++n) __asm__ volatile(\"\" : \"+v\"(n));\n",
}
CONFIG = """description: a shape the kernel finishes and one it spins on forever
seed: 3
kernels: [reference]
targets: [gfx950]
shapes:
  - {name: tiny, M: 128, N: 256, K: 256, E: 1, offsets: [0, 128]}
  - {name: spins, M: 512, N: 256, K: 256, E: 2, offsets: [0, 512, 512]}
"""
LOOP = (r"workgroups \d+, \d+, \d+ and \d+ more in the loop of s_cbranch_\w+ at offset 0x[0-9a-f]+ "
        r"back to 0x[0-9a-f]+")


def _built(d: Path, loop: str) -> list[str]:
    """verify's arguments for the reference kernel changed to run `loop` on shape `spins`, built once."""
    reference = (KERNELS_DIR / "reference.cu").read_text()
    assert reference.count(LINE) == 1, "the reference kernel changed: update the line the spin goes before"
    (d / "spin.cu").write_text(reference.replace(LINE, loop + LINE))
    (d / "spin.yaml").write_text(CONFIG)
    args = ["--config", str(d / "spin.yaml"), "--kernel", "reference", "--kernel-source", str(d / "spin.cu"),
            "--include", str(KERNELS_DIR), "--cache-dir", str(d / "cache")]
    built = CliRunner().invoke(cli, ["build", *args])
    assert built.exit_code == 0, built.output
    return [*args, "--device", "emu"]


@pytest.fixture(scope="module")
def spinning(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return _built(tmp_path_factory.mktemp("spinning"), SPINS["spin"])


@pytest.fixture(scope="module")
def counting(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return _built(tmp_path_factory.mktemp("counting"), SPINS["count"])


def _hung(result: Any) -> str:
    assert result.exit_code == 3, result.output
    hung = [line for line in result.stderr.splitlines() if line.startswith("HUNG ")]
    assert len(hung) == 1 and "Traceback" not in result.output, result.stderr
    assert "1/2 shapes passed" in result.stderr
    assert not multiprocessing.active_children()  # the launch's workers were ended with it
    return hung[0]


def test_a_spinning_kernel_stops_by_its_state_with_one_line_and_exit_3(spinning: list[str],
                                                                       tmp_path: Path) -> None:
    out = tmp_path / "verify.json"
    start = time.monotonic()
    # the default limit: an hour
    hung = _hung(CliRunner().invoke(cli, ["verify", *spinning, "--json", str(out)]))
    assert time.monotonic() - start < 60  # the tiny shape's check and a few rounds of spinning
    assert re.fullmatch(r"HUNG reference on spins: launch of \S+ can never finish: the emulator stopped it "
                        r"when none of its waves could change what they read any more: " + LOOP, hung), hung
    doc = json.loads(out.read_text())
    assert [r["shape"]["name"] for r in doc["records"]] == ["tiny"] and doc["records"][0]["ok"]
    assert doc["hung"] == [hung.removeprefix("HUNG ")]


def test_a_loop_whose_state_keeps_changing_stops_at_the_cpu_limit(counting: list[str]) -> None:
    hung = _hung(CliRunner().invoke(cli, ["verify", *counting, "--kernel-timeout", "3", "--no-save"]))
    assert re.fullmatch(r"HUNG reference on spins: launch of \S+ did not finish within 3 s of CPU time "
                        r"per process \(--kernel-timeout\) on the emulator, "
                        r"which stopped it: " + LOOP, hung), hung


def test_a_slow_emulator_is_not_stopped_and_shows_its_progress(spinning: list[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The emulator slowed on purpose (each instruction waits 2 ms, as on a loaded or slow machine):
    the launch takes far longer than --kernel-timeout in wall time, spends far less CPU time, and
    finishes; a log shows its workgroups as they finish."""
    run, slowed = dispatch.execute, {}

    def wait(op: dispatch.Op) -> dispatch.Op:
        def slow(b: Any) -> None:
            time.sleep(0.002)
            op.run(b)
        return replace(op, run=slow)

    def slowly(batch: Any, ops: dict[int, dispatch.Op], *args: Any, **kwargs: Any) -> bool:
        if id(ops) not in slowed:
            slowed[id(ops)] = {pc: wait(op) for pc, op in ops.items()}
        return run(batch, slowed[id(ops)], *args, **kwargs)

    monkeypatch.setattr(dispatch, "execute", slowly)
    monkeypatch.setattr(verify, "LOG_EVERY_SECONDS", 0.0)
    start = time.monotonic()
    # 5 s of CPU: the emulation needs 1-2 s alone, more late in a long test process (a larger heap to collect)
    result = CliRunner().invoke(cli, ["verify", *spinning, "--shape", "tiny",
                                      "--kernel-timeout", "5", "--no-save"])
    assert result.exit_code == 0, result.output
    assert time.monotonic() - start > 10  # slower in wall time than the limit, by far
    lines = re.findall(r"^reference on tiny: \d+ s, ([\d.]+) M wave-instructions emulated, "
                       r"(\d+) of 256 workgroups done$", result.stderr, re.M)
    assert len(lines) > 2 and len({emulated for emulated, _ in lines}) > 2, result.stderr  # visibly moving


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
def test_ending_a_run_leaves_no_worker_behind(counting: list[str], how: str, tmp_path: Path) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: the emulator forks no worker")
    log = tmp_path / "stderr"
    with log.open("w") as stderr:
        run = subprocess.Popen([sys.executable, "-m", "wgrad_cli", "verify", *counting, "--shape", "spins",
                                "--no-save", "--kernel-timeout", "600"], start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 120
        while len(_group(run.pid)) < 3:  # wgrad and two workers forked for the launch
            assert (run.poll() is None
                    and time.monotonic() < deadline), f"no worker was forked: {log.read_text()}"
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
