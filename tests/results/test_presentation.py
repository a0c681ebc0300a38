"""The results path (records, tables, report, show, compare, speedup, plot) reads files without the device
stack: no compiler, code object reader (ELF, msgpack), driver, device or emulator module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from clirun import run_wgrad

HEAVY = ("elftools", "msgpack", "tinygrad", "hip", "cuda", "pynvml", "torch", "triton", "wgrad_cli.emu",
         "wgrad_cli.device.runtime", "wgrad_cli.backends", "wgrad_cli.compile.compilers",
         "wgrad_cli.compile.toolchain", "wgrad_cli.compile.jobs", "wgrad_cli.compile.codeobject",
         "wgrad_cli.device.launch", "wgrad_cli.device.session", "wgrad_cli.device.isolation",
         "wgrad_cli.measure.sampling", "wgrad_cli.measure.baselines")
RESULTS = Path(__file__).resolve().parent.parent.parent / "results" / "h200"
# runs the CLI in this process, then prints every module it loaded
LOADED = """import sys
from wgrad_cli.cli import main
sys.argv = ["wgrad", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    print("exit", exc.code, file=sys.stderr)
print(*sorted(sys.modules))
"""


def heavy(loaded: list[str]) -> list[str]:
    return sorted(m for m in loaded if m.split(".")[0] in HEAVY or m.startswith(HEAVY))


def loaded_by(argv: list[object], cwd: Path | None = None) -> list[str]:
    """The modules `wgrad ARGV` loads, once it has exited 0."""
    run = subprocess.run([sys.executable, "-c", LOADED, *map(str, argv)], capture_output=True, text=True,
                         cwd=cwd)
    assert "exit 0" in run.stderr, run.stderr[-2000:]
    loaded = run.stdout.split("\n")[-2].split()
    assert "wgrad_cli.results.tables" in loaded and "wgrad_cli.results.records" in loaded  # it ran
    return loaded


@pytest.mark.parametrize("argv", [["show", RESULTS / "bench-large.json",
                                   RESULTS / "verify-smoke-reference.json"],
                                  ["compare", RESULTS / "bench-large.json", RESULTS / "bench-large.json"]],
                         ids=["show", "compare"])
def test_file_viewers_load_no_device_stack(argv: list[object]) -> None:
    assert heavy(loaded_by(argv)) == []


def test_showing_build_and_info_files_loads_no_compiler(tmp_path: Path, amd_compiler: object) -> None:
    for argv in (["build", "--config", "smoke", "--target", "gfx950", "--json", "build.json"],
                 ["info", "--json", "info.json"]):
        assert run_wgrad(tmp_path, *argv, "--cache-dir", "cache", terminal=False).returncode == 0
    loaded = loaded_by(["show", "build.json", "info.json"], tmp_path)
    assert "wgrad_cli.results.build_tables" in loaded and heavy(loaded) == []


def test_results_modules_import_no_device_stack() -> None:
    code = ("import sys, wgrad_cli.commands.show, wgrad_cli.results.compare, wgrad_cli.results.speedup, "
            "wgrad_cli.results.tables, wgrad_cli.results.records, wgrad_cli.results.build_tables, "
            "wgrad_cli.compile.resources, wgrad_cli.results.plot, wgrad_cli.commands.files; "
            "print('\\n'.join(sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.split()
    assert heavy(loaded) == []
