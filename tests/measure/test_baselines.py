"""--baselines where torch cannot run or fails: one line, never a traceback."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

from wgrad_cli.cli import cli
from wgrad_cli.config.shipped import CONFIGS_DIR
from wgrad_cli.device.runtime import Runtime
from wgrad_cli.errors import WgradError
from wgrad_cli.measure.baselines import dequantizer, guarded
from wgrad_cli.problem.mxfp8 import dequantize, pack_scales


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed here")
def test_baselines_without_torch(repo: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["bench", "--config", str(CONFIGS_DIR / "smoke.yaml"), "--baselines",
                                 "--cache-dir", str(tmp_path / "cache"), "--no-save"])
    assert r.exit_code == 2
    assert r.stderr.splitlines() == ["--baselines: torch is not importable (No module named 'torch'); "
                                     "install torch with GPU support, or leave --baselines out"]
    assert not (tmp_path / "cache").exists()


def test_guarded_turns_a_torch_failure_into_one_line() -> None:
    """torch reports out of memory and missing kernels as RuntimeError, often over several lines."""
    calls: list[int] = []
    guarded("fp8-ceiling", lambda: calls.append(1))()
    assert calls == [1]

    def oom() -> None:
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB.\n"
                           "GPU 0 has a total capacity of 8 GiB")

    with pytest.raises(WgradError) as exc:
        guarded("bf16-ceiling", oom)()
    assert exc.value.lines == ["--baselines: bf16-ceiling failed in torch (CUDA out of memory. Tried to "
                               "allocate 2.00 GiB.); leave --baselines out, or use a torch build and GPU "
                               "that run it"]


@pytest.mark.gpu
def test_dequantizer_is_exact_eager_and_compiled(gpu: Runtime) -> None:
    """Every e4m3 code times every e8m0 scale, bit for bit against the exact values rounded once to
    bf16 (NaN where either is NaN). Under torch.compile an exp2-built scale flushed 2^-127 to zero."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no GPU")
    codes = np.tile(np.arange(256, dtype=np.uint8), (256, 32))  # row r: every code 32 times, all at scale r
    e8 = np.repeat(np.arange(256, dtype=np.uint8)[:, None], codes.shape[1] // 32, axis=1)
    with np.errstate(over="ignore"):  # 448 x 2^127 is inf in bf16, as on the GPU
        exact = dequantize(codes, e8).astype(ml_dtypes.bfloat16)
    want_nan, want_bits = np.isnan(exact), exact.view(np.uint16)
    q, packed = torch.from_numpy(codes).cuda(), torch.from_numpy(pack_scales(e8)).cuda()
    eager = dequantizer(torch)
    for form in (eager, torch.compile(eager)):
        got = form(q, packed).view(torch.int16).cpu().numpy().view(np.uint16)
        got_nan = np.isnan(got.view(ml_dtypes.bfloat16))
        assert (got_nan == want_nan).all()
        assert (got[~want_nan] == want_bits[~want_nan]).all()
