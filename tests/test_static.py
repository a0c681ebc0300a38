"""Static checks as tests, so the one test command covers them: mypy --strict and ruff."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_mypy_strict(repo: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff(repo: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "wgrad_cli", "tests"], cwd=repo,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
