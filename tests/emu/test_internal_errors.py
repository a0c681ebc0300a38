"""An exception inside the emulator that is neither an instruction it lacks nor a fault of the
kernel is reported as a bug of the emulator, with its traceback and exit status 5: never as a
missing instruction, a failed check or bad input."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from emukernels import UNSUPPORTED, UNSUPPORTED_MNEMONIC, compile_hip, run, tiny_config

from wgrad_cli.cli import cli
from wgrad_cli.emu import program
from wgrad_cli.emu.loader import load_image
from wgrad_cli.emu.ops import vector as vector_ops
from wgrad_cli.errors import EmulatorBug

ADD = "KERNEL void add(unsigned *out, const unsigned *a) { unsigned i = tid(); out[i] = a[i] + 3u; }"


def broken(*_: object) -> None:
    raise ZeroDivisionError("injected")


def test_a_bug_in_an_op_compiler_is_not_a_missing_instruction(monkeypatch: pytest.MonkeyPatch) -> None:
    image = compile_hip(UNSUPPORTED)
    lacking = [op.name for op in program.Program(load_image(image)).unsupported()]
    assert lacking == [UNSUPPORTED_MNEMONIC]  # a table miss: the instruction is unsupported

    def lookup_bug(*_: object) -> None:
        raise KeyError("a table the compiler reads")  # any KeyError but Unsupported's is a bug
    monkeypatch.setattr(program, "compile_valu", lookup_bug)
    with pytest.raises(EmulatorBug) as caught:
        program.Program(load_image(image))
    lines = caught.value.lines
    assert lines[0].startswith("compiling v_") and "internal error of the emulator" in lines[0]
    assert "KeyError: 'a table the compiler reads'" in lines


def test_a_bug_in_an_op_is_an_emulator_bug_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    image = compile_hip(ADD)
    out, _ = run(image, [np.zeros(64, np.uint32), np.arange(64, dtype=np.uint32)])
    assert (out == np.arange(64) + 3).all()
    monkeypatch.setattr(vector_ops, "write_dest", broken)
    with pytest.raises(EmulatorBug) as caught:
        run(image, [np.zeros(64, np.uint32), np.arange(64, dtype=np.uint32)])
    assert caught.value.lines[0].startswith("launch of add: internal error of the emulator")
    assert "ZeroDivisionError: injected" in caught.value.lines


@pytest.mark.skipif(shutil.which("clang-22") is None,
                    reason="clang-22 (Debian's, for gfx950) is not installed")
def test_verify_reports_a_bug_in_a_worker_with_its_traceback(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    """The tiny shape's 2048 waves run in forked workers, which inherit the broken op."""
    monkeypatch.setattr(vector_ops, "write_dest", broken)
    result = CliRunner().invoke(cli, ["verify", "--config", str(tiny_config(tmp_path)), "--device", "emu",
                                      "--cache-dir", str(tmp_path / "cache"), "--no-save"])
    assert result.exit_code == EmulatorBug.exit_code == 5, result.output
    lines = result.stderr.splitlines()
    assert any(re.match(r"reference on tiny: launch of \S+, in a worker process: internal error of the "
                        r"emulator", line)
               for line in lines), result.stderr
    assert "Traceback (most recent call last):" in lines and "ZeroDivisionError: injected" in lines
