"""What the CLI tests share: a user error is status 2 and its lines on stderr, never a traceback; wgrad
run in a fresh process at 100 columns, as on a terminal or piped."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from click.testing import Result

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def assert_user_error(result: Result, *phrases: str) -> list[str]:
    """Status 2, nothing on stdout, no traceback; returns the stderr lines."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit)
    assert result.stdout == ""
    assert "Traceback" not in result.output
    for phrase in phrases:
        assert phrase in result.stderr
    return result.stderr.splitlines()


def run_wgrad(cwd: Path, *args: str, terminal: bool) -> subprocess.CompletedProcess[str]:
    """`wgrad ARGS` in `cwd` at COLUMNS=100 without colour, its stdout without escape codes; `terminal`:
    rich behaves as on a terminal although stdout is a pipe."""
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    env.pop("TTY_COMPATIBLE", None)
    if terminal:
        env["TTY_COMPATIBLE"] = "1"
    proc = subprocess.run([sys.executable, "-m", "wgrad_cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True)
    return subprocess.CompletedProcess(proc.args, proc.returncode, ANSI.sub("", proc.stdout), proc.stderr)
