"""`wgrad emu-check`: per gfx950 code object of a config, the instructions the emulator lacks and
those naming registers past the kernel's allocation, found before anything runs; a report, so it
exits 0 either way."""

from __future__ import annotations

import re
import struct
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from emukernels import UNSUPPORTED_MNEMONIC, compile_hip, tiny_config

from wgrad_cli.cli import cli
from wgrad_cli.config.kernelspec import KERNELS_DIR
from wgrad_cli.compile.codeobject import CodeObjectError
from wgrad_cli.commands.emucheck import coverage, table_opcodes
from wgrad_cli.emu.loader import load_image

needs_clang = pytest.mark.usefixtures("amd_compiler")  # wgrad's own gfx950 compiler, else skipped
STORE = "C[(e * N + n) * K + k] = bf16_bits(acc);"


def emu_check(tmp_path: Path, *extra: str) -> list[str]:
    result = CliRunner().invoke(cli, ["emu-check", "--config", str(tiny_config(tmp_path)), "--cache-dir",
                                      str(tmp_path / "cache"), *extra], terminal_width=100)
    assert result.exit_code == 0, result.output
    assert all(len(line) <= 100 for line in result.output.splitlines())
    return [line for line in result.output.splitlines() if line.startswith("| reference")]


@needs_clang
def test_the_reference_kernel_needs_nothing_the_emulator_lacks(tmp_path: Path) -> None:
    rows = emu_check(tmp_path)
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert len(rows) == 1 and cells[:2] == ["reference", "tiny"] and int(cells[2].replace(",", "")) > 100
    assert cells[3:] == ["0", "0", ""]


@needs_clang
def test_a_kernel_with_an_unimplemented_instruction_is_listed_before_it_runs(tmp_path: Path) -> None:
    source = (KERNELS_DIR / "reference.cu").read_text()
    assert STORE in source
    sine = tmp_path / "sine.cu"  # the reference kernel storing sin(2 pi acc): one v_sin_f32
    sine.write_text(source.replace(STORE, STORE.replace("bf16_bits(acc)",
                                                        "bf16_bits(__builtin_amdgcn_sinf(acc))")))
    rows = emu_check(tmp_path, "--kernel", "reference", "--kernel-source", str(sine), "--include",
                     str(KERNELS_DIR))
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[3:] == ["1", "0", UNSUPPORTED_MNEMONIC]


@needs_clang
def test_a_register_past_the_allocation_is_reported_before_it_runs(tmp_path: Path) -> None:
    source = (KERNELS_DIR / "reference.cu").read_text()
    past = tmp_path / "past.cu"  # inline asm naming v200 without a clobber: LLVM's count leaves it out
    past.write_text(source.replace(STORE, STORE + ' asm volatile("v_mov_b32 v200, %0" :: "v"(acc));'))
    result = CliRunner().invoke(cli, ["emu-check", "--config", str(tiny_config(tmp_path)), "--cache-dir",
                                      str(tmp_path / "cache"), "--kernel", "reference", "--kernel-source",
                                      str(past), "--include", str(KERNELS_DIR)], terminal_width=100)
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if line.startswith("| reference"))
    assert [c.strip() for c in row.strip("|").split("|")][3:5] == ["0", "1"]
    assert re.search(r"v_mov_b32(_e32)? at offset 0x[0-9a-f]+: it names v200 \(vdst\), beyond the \d+ VGPRs",
                     result.output), result.output


def test_a_code_object_the_loader_refuses_is_an_error_not_a_traceback() -> None:
    """Its one R_AMDGPU_RELATIVE64 turned into R_AMDGPU_ABS64 (type 3): emu-check reports the
    loader's CodeObjectError as a line (a failed build's row) instead of ending in a traceback."""
    image = bytearray(compile_hip("DEVICE unsigned counter[4];\nDEVICE unsigned *where = counter;\n"
                                  "KERNEL void count(unsigned *out) { out[tid()] = *where; }\n"))
    (offset, _), = load_image(bytes(image)).relative
    at = image.index(struct.pack("<QQ", offset, 13))
    image[at + 8] = 3
    with pytest.raises(CodeObjectError, match="R_AMDGPU_ABS64"):
        coverage(bytes(image), "count")


def test_the_docs_list_the_opcodes_the_tables_implement(repo: Path) -> None:
    text = (repo / "docs" / "emulator.md").read_text()
    listed = text.split("<!-- table opcodes -->\n", 1)[1].split("<!-- end -->", 1)[0]
    assert listed.strip() == textwrap.fill(", ".join(table_opcodes()), 100), \
        "regenerate docs/emulator.md's list: textwrap.fill(', '.join(table_opcodes()), 100)"
