"""The results path (records, tables, show, compare, speedup, plot) reads files without the device
stack: no compiler, code object reader (ELF, msgpack), driver, device or emulator module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("elftools", "msgpack", "tinygrad", "hip", "cuda", "pynvml", "torch", "triton", "wgrad_cli.emu",
         "wgrad_cli.runtime", "wgrad_cli.backends", "wgrad_cli.compilers", "wgrad_cli.toolchain", "wgrad_cli.build",
         "wgrad_cli.codeobject", "wgrad_cli.launch", "wgrad_cli.session", "wgrad_cli.isolation", "wgrad_cli.measure",
         "wgrad_cli.baselines")
RESULTS = Path(__file__).resolve().parent.parent / "results" / "h200"
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


@pytest.mark.parametrize("argv", [["show", RESULTS / "bench-large.json", RESULTS / "verify-smoke-reference.json"],
                                  ["compare", RESULTS / "bench-large.json", RESULTS / "bench-large.json"]],
                         ids=["show", "compare"])
def test_file_viewers_load_no_device_stack(argv: list[object]) -> None:
    run = subprocess.run([sys.executable, "-c", LOADED, *map(str, argv)], capture_output=True, text=True)
    assert "exit 0" in run.stderr, run.stderr[-2000:]
    loaded = run.stdout.split("\n")[-2].split()
    assert "wgrad_cli.tables" in loaded and "wgrad_cli.records" in loaded  # it ran
    assert heavy(loaded) == []


def test_results_modules_import_no_device_stack() -> None:
    code = ("import sys, wgrad_cli.show, wgrad_cli.compare, wgrad_cli.speedup, wgrad_cli.tables, wgrad_cli.records, "
            "wgrad_cli.plot; "
            "print('\\n'.join(sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert heavy(loaded) == []
