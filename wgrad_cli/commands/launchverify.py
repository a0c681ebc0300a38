"""`wgrad verify --device emu --launch FILE`: a launch file's kernel run once, whole grid, on the
emulated gfx950. A launch file's kernel has no reference to check against, so the check is what
can be said without one: the launch runs to completion (no fault, no instruction the emulator
lacks, no hang within --kernel-timeout), and every buffer that gives `expect_sha256` holds bytes
with that digest afterwards. The table gives every buffer's digest (to pin one) and what the
launch executed; exit 1 if an expected digest differs (docs/launch-files.md)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from rich.markup import escape

from wgrad_cli.backends.registry import backend
from wgrad_cli.config.launchfile import Buffer, load_launch
from wgrad_cli.config.options import CompilerOptions, Emulated
from wgrad_cli.commands.launchsetup import TARGET, code_object, place
from wgrad_cli.emu.device import EmuRuntime
from wgrad_cli.errors import CheckFailed, SanitizerFindings
from wgrad_cli.output.console import err, out
from wgrad_cli.output.grid import Grid


def verify_launch(path: Path, compilers: CompilerOptions, device: Emulated, seed: int) -> None:
    launch = load_launch(path)
    built = code_object(launch, compilers)
    rt = backend(TARGET).open_runtime(device)  # the emulated device, as --device emu opens it for verify
    assert isinstance(rt, EmuRuntime)  # place() dispatches 3-D grids, which only the emulator's runtime takes
    placed = place(rt, launch, built.image, seed)
    try:
        placed()
        table = Grid(f"wgrad verify {escape(str(path))}: {escape(launch.name)} on the emulated {TARGET}, "
                     f"{launch.workgroups:,} workgroups, seed {seed}")
        for name in ("arg", "buffer bytes", "fill", "sha256 after the run", "expected", "status"):
            table.add_column(name, "right" if name in ("arg", "buffer bytes") else "left")
        failed = 0
        for i, arg in enumerate(launch.args):
            if not isinstance(arg, Buffer):
                continue
            digest = hashlib.sha256(placed.contents(i)).hexdigest()
            status = "-" if arg.expect_sha256 is None else "ok" if digest == arg.expect_sha256 else "FAILED"
            failed += status == "FAILED"
            table.add_row(str(i), f"{arg.size:,}", arg.fill, digest, arg.expect_sha256 or "-", status)
    finally:
        placed.free()
    out.print(table)
    stats = rt.stats[-1]
    err.print(f"ran to completion: {stats.waves:,} waves, {stats.instructions:,} wave-instructions, "
              f"{stats.bytes_loaded:,} bytes loaded, {stats.bytes_stored:,} stored; code object "
              f"{built.sha256[:16]}",
              highlight=False)
    if stats.lds_out_of_range:
        err.print(f"{stats.lds_out_of_range:,} LDS bytes read or written beyond the workgroup's allocation "
                  "(--strict-lds stops at the first)", highlight=False)
    found = rt.findings()
    for line in found:
        err.print(f"[red]SANITIZER[/] {escape(launch.name)}: {escape(line)}", highlight=False, soft_wrap=True)
    if found:
        raise SanitizerFindings(f"{len(found)} sanitizer finding{'s' * (len(found) != 1)} (docs/emulator.md)")
    if failed:
        raise CheckFailed(f"{launch.path}: {failed} buffer{'s' * (failed != 1)} after the run differ from "
                          "expect_sha256")

