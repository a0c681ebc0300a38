"""--baselines where torch cannot run or fails: one line, never a traceback."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from click.testing import CliRunner

from wgrad_cli.baselines import guarded
from wgrad_cli.cli import cli
from wgrad_cli.errors import WgradError


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed here")
def test_baselines_without_torch(repo: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["bench", "--config", str(repo / "configs/smoke.yaml"), "--baselines",
                                 "--cache-dir", str(tmp_path / "cache"), "--no-save"])
    assert r.exit_code == 2
    assert r.stderr.splitlines() == ["--baselines: torch is not importable (No module named 'torch'); install torch "
                                     "with GPU support, or leave --baselines out"]
    assert not (tmp_path / "cache").exists()


def test_guarded_turns_a_torch_failure_into_one_line() -> None:
    """torch reports out of memory and missing kernels as RuntimeError, often over several lines."""
    calls: list[int] = []
    guarded("fp8-ceiling", lambda: calls.append(1))()
    assert calls == [1]

    def oom() -> None:
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB.\nGPU 0 has a total capacity of 8 GiB")

    with pytest.raises(WgradError) as exc:
        guarded("bf16-ceiling", oom)()
    assert exc.value.lines == ["--baselines: bf16-ceiling failed in torch (CUDA out of memory. Tried to allocate "
                               "2.00 GiB.); leave --baselines out, or use a torch build and GPU that run it"]
