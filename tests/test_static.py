"""Static checks as tests, so the one test command covers them: mypy --strict, ruff and vulture."""

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


def test_no_unused_code(repo: Path) -> None:
    """vulture, with the settings in pyproject.toml: a function, class, variable or attribute that
    nothing uses fails (names only data formats or other programs read are listed there)."""
    proc = subprocess.run([sys.executable, "-m", "vulture"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_checks_hip_calls_against_the_stubs(repo: Path, tmp_path: Path) -> None:
    """The HIP shim cannot run here; mypy with the project's settings must catch a wrong hip-python call."""
    bad = tmp_path / "bad_hip.py"
    bad.write_text("from hip import hip\n\n\ndef f() -> None:\n    hip.hipMalloc(1, 2)\n"
                   "    hip.hipNoSuchCall()\n")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(repo / "pyproject.toml"),
                           str(bad)],
                          cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 1
    assert 'Too many arguments for "hipMalloc"' in proc.stdout
    assert 'Module has no attribute "hipNoSuchCall"' in proc.stdout
