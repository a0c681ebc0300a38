"""Deliberately broken variants of the reference kernel (one line of it changed each) fail
`wgrad verify --device emu` with the diagnostics a GPU run prints: exit 1, the shape FAILED, and
the per-expert table naming the expert that is wrong and how (mismatches or unwritten outputs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from emukernels import tiny_config

from wgrad_cli.cli import cli
from wgrad_cli.config.kernelspec import KERNELS_DIR

pytestmark = pytest.mark.usefixtures("amd_compiler")  # wgrad's own gfx950 compiler, else skipped
# each bug: the reference kernel's line and what it becomes
BUGS = {
    "wrong_scale_index": ("    return ((m / 128) * rows + row) * 4 + (m / 32) % 4;",
                          "    return ((m / 128) * rows + row) * 4 + (m / 64) % 4;"
                          "  // a 64-token block per scale"),
    "skip_last_32_tokens": ("    for (long long m = expert_off[e]; m < expert_off[e + 1]; ++m)",
                            "    for (long long m = expert_off[e]; m < expert_off[e + 1] - 32; ++m)"),
    "empty_expert_unwritten": ("    for (long long m = expert_off[e]; m < expert_off[e + 1]; ++m)",
                               "    if (expert_off[e] == expert_off[e + 1]) return;  // leaves the poison\n"
                               "    for (long long m = expert_off[e]; m < expert_off[e + 1]; ++m)"),
}
ELEMENTS = 256 * 256  # N x K outputs per expert of the tiny shape


def per_expert(output: str) -> dict[int, dict[str, str]]:
    """The per-expert table's rows by expert number."""
    lines = output[output.index("per expert"):].splitlines()
    header = [c.strip() for c in next(line for line in lines
                                      if line.startswith("| expert")).strip("|").split("|")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines
            if line.startswith("|") and line[2:3] != "-"]
    # counts as numbers
    return {int(r[0]): dict(zip(header, (c.replace(",", "") for c in r))) for r in rows if r[0].isdigit()}


@pytest.mark.parametrize("bug, expert, mismatched, unwritten", [
    ("wrong_scale_index", 0, True, 0), ("skip_last_32_tokens", 0, True, 0),
    ("empty_expert_unwritten", 1, False, ELEMENTS)])
def test_a_broken_kernel_fails_verify_on_the_emulator(bug: str, expert: int, mismatched: bool, unwritten: int,
                                                      tmp_path: Path) -> None:
    line, broken = BUGS[bug]
    reference = (KERNELS_DIR / "reference.cu").read_text()
    assert reference.count(line + "\n") == 1, "the reference kernel changed: update the bug's line"
    source = tmp_path / f"{bug}.cu"
    source.write_text(reference.replace(line + "\n", broken + "\n"))
    result = CliRunner().invoke(cli, ["verify", "--config", str(tiny_config(tmp_path)), "--device", "emu",
                                      "--kernel", "reference", "--kernel-source", str(source),
                                      "--include", str(KERNELS_DIR),
                                      "--cache-dir", str(tmp_path / "cache"), "--no-save"])
    assert result.exit_code == 1, result.output
    rows = per_expert(result.output)
    bad, good = rows[expert], rows[1 - expert]
    assert bad["status"] == "FAILED" and good["status"] == "ok"
    assert (int(bad["mismatches"]) > 0) == mismatched and int(bad["unwritten"]) == unwritten
    assert good["mismatches"] == good["unwritten"] == "0"
    total = int(bad["mismatches"])
    assert f"FAILED reference on tiny: {total:,} mismatches, {unwritten:,} unwritten" in result.output
    assert "0/1 shapes passed" in result.output
