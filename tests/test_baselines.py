"""--baselines where torch cannot run: one line, exit 2, before any build or device is touched."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from click.testing import CliRunner

from wgrad_cli.cli import cli


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed here")
def test_baselines_without_torch(repo: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["bench", "--config", str(repo / "configs/smoke.yaml"), "--baselines",
                                 "--cache-dir", str(tmp_path / "cache"), "--no-save"])
    assert r.exit_code == 2
    assert r.stderr.splitlines() == ["--baselines: torch is not importable (No module named 'torch'); install torch "
                                     "with GPU support, or leave --baselines out"]
    assert not (tmp_path / "cache").exists()
