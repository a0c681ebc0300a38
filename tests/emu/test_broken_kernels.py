"""Deliberately broken variants of the reference kernel (tests/emu/broken/, one bug each) fail
`wgrad verify --device emu` with the diagnostics a GPU run prints: exit 1, the shape FAILED, and
the per-expert table naming the expert that is wrong and how (mismatches or unwritten outputs)."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from emukernels import tiny_config
from wgrad_cli.cli import cli
from wgrad_cli.kernelspec import KERNELS_DIR

pytestmark = pytest.mark.skipif(shutil.which("clang-22") is None, reason="clang-22 (Debian's, for gfx950) is not installed")
BROKEN = Path(__file__).parent / "broken"
ELEMENTS = 256 * 256  # N x K outputs per expert of the tiny shape


def per_expert(output: str) -> dict[int, dict[str, str]]:
    """The per-expert table's rows by expert number."""
    lines = output[output.index("per expert"):].splitlines()
    header = [c.strip() for c in next(line for line in lines if line.startswith("| expert")).strip("|").split("|")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines if line.startswith("|") and line[2:3] != "-"]
    return {int(r[0]): dict(zip(header, r)) for r in rows if r[0].isdigit()}


@pytest.mark.parametrize("bug, expert, mismatched, unwritten", [
    ("wrong_scale_index", 0, True, 0), ("skip_last_32_tokens", 0, True, 0), ("empty_expert_unwritten", 1, False, ELEMENTS)])
def test_a_broken_kernel_fails_verify_on_the_emulator(bug: str, expert: int, mismatched: bool, unwritten: int,
                                                      tmp_path: Path) -> None:
    source = BROKEN / f"{bug}.cu"
    changed = [d for d in difflib.ndiff((KERNELS_DIR / "reference.cu").read_text().splitlines(),
                                        source.read_text().splitlines()) if d[:1] in "+-"]
    assert len([d for d in changed if d.startswith("+")]) == 1 and "BUG" in changed[-1]  # one bug, marked
    result = CliRunner().invoke(cli, ["verify", "--config", str(tiny_config(tmp_path)), "--device", "emu", "--kernel",
                                      "reference", "--kernel-source", str(source), "--include", str(KERNELS_DIR),
                                      "--cache-dir", str(tmp_path / "cache"), "--no-save"])
    assert result.exit_code == 1, result.output
    rows = per_expert(result.output)
    bad, good = rows[expert], rows[1 - expert]
    assert bad["status"] == "FAILED" and good["status"] == "ok"
    assert (int(bad["mismatches"]) > 0) == mismatched and int(bad["unwritten"]) == unwritten
    assert good["mismatches"] == good["unwritten"] == "0"
    total = int(bad["mismatches"])
    assert f"FAILED reference on tiny: {total} mismatches, {unwritten} unwritten" in result.output
    assert "0/1 shapes passed" in result.output
