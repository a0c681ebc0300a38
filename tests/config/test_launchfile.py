"""Launch files as read: their fields, the argument layout, and every problem of a bad one as one
line (file:line: field: why; allowed), exit 2 through the CLI, never a traceback."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from click.testing import CliRunner
from clirun import assert_user_error

from wgrad_cli.cli import cli
from wgrad_cli.config.launchfile import Buffer, Scalar, load_launch
from wgrad_cli.errors import ConfigError

DATA = Path(__file__).resolve().parents[1] / "data" / "launch"


def test_the_axpy_launch_file_reads_as_typed_arguments_at_their_natural_offsets() -> None:
    launch = load_launch(DATA / "axpy.yaml")
    assert launch.name == "axpy" and launch.symbol == "axpy" and launch.source == (DATA / "axpy.cu").resolve()
    assert launch.grid == (4, 1, 1) and launch.block == (256, 1, 1) and launch.workgroups == 4
    y, x, a, n = launch.args
    assert isinstance(y, Buffer) and y.output and y.initial(b"")[:12] == struct.pack("<3f", 1.0, 2.0, 3.0)
    assert isinstance(x, Buffer) and x.fill == "random" and x.initial(b"\x07" * 4096) == b"\x07" * 4096
    assert a == Scalar("f32", 2.0) and n == Scalar("u32", 1000)
    assert launch.layout() == [0, 8, 16, 20]  # two pointers, then a float and a count packed after them
    assert launch.flops == 0 and launch.published is None and launch.classes == "one"


def test_offsets_place_arguments_and_the_next_one_follows(tmp_path: Path) -> None:
    path = tmp_path / "l.yaml"
    path.write_text("code_object: l.yaml\nsymbol: k\ngrid: [2, 3]\nblock: [64, 2, 1]\nshape: [2, 3, 4]\n"
                    "args:\n  - {buffer: 16, offset: 16}\n  - {scalar: i32, value: -1}\n"
                    "  - {scalar: u64, value: 5}\n")
    launch = load_launch(path)
    assert launch.layout() == [16, 24, 32] and launch.grid == (2, 3, 1) and launch.threads == 128
    assert launch.flops == 2 * 2 * 3 * 4


def test_arguments_that_overlap_or_sit_off_their_alignment_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "l.yaml"
    path.write_text("code_object: l.yaml\nsymbol: k\ngrid: 1\nblock: 64\nargs:\n  - {buffer: 16}\n"
                    "  - {scalar: i32, value: 1, offset: 4}\n  - {scalar: u64, value: 1, offset: 12}\n")
    with pytest.raises(ConfigError) as info:
        load_launch(path)
    assert info.value.lines == [
        f"{path}:7: args[1].offset: 4 overlaps the argument before (which ends at 8); an offset at or after "
        "the end of the argument before",
        f"{path}:8: args[2].offset: 12 is not a multiple of 8; an offset aligned to the argument's size"]


BAD = """\
name: 7
code_object: missing.co
source: there.cu
symbol: ''
grid: [0, 1]
block: [64, 32]
dynamic_lds: -4
classes: some
published: {us: -1}
args:
  - {buffer: 8, fill: values, type: f32, values: [1.0, 2.0, 3.0]}
  - {scalar: u8, value: 300}
  - {buffer: 4, fill: pattern, colour: red}
  - {scalar: i32, value: 1, offset: 2}
  - 5
speed: fast
"""


def test_every_problem_of_a_bad_launch_file_is_one_line_with_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    with pytest.raises(ConfigError) as info:
        load_launch(path)
    lines = info.value.lines
    expect = [f"{path}:16: speed: is not a field of a launch file",
              f"{path}:2: code_object: {tmp_path / 'missing.co'} is not a file",
              f"{path}:3: source: {tmp_path / 'there.cu'} is not a file",
              f"{path}:2: code_object: both given",
              f"{path}:4: symbol: '' is not a name",
              f"{path}:1: name: 7 is not a name",
              f"{path}:5: grid: [0, 1] is not allowed",
              f"{path}:6: block: 2048 threads per workgroup",
              f"{path}:7: dynamic_lds: -4 is not allowed",
              f"{path}:8: classes: 'some' is not allowed",
              f"{path}:11: args[0].values: 3 values of f32 need more than the buffer's 8 bytes",
              f"{path}:12: args[1].value: 300 is out of range",
              f"{path}:13: args[2].colour: is not a field of this argument",
              f"{path}:13: args[2].fill: 'pattern' is not a fill",
              f"{path}:15: args[4]: is neither a buffer nor a scalar",
              f"{path}:9: published: {{'us': -1}} is not allowed"]
    assert [line.split(";")[0] for line in lines] == expect
    assert all(";" in line for line in lines)  # each says what is allowed


def test_the_cli_prints_them_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    for command in (["model"], ["verify", "--device", "emu"]):
        lines = assert_user_error(CliRunner().invoke(cli, [*command, "--launch", str(path)]))
        assert len(lines) == 16 and lines[0].startswith(f"{path}:16: speed:")


def test_launch_and_config_options_exclude_each_other() -> None:
    result = CliRunner().invoke(cli, ["model", "--launch", str(DATA / "axpy.yaml"), "--config", "smoke"])
    assert result.exit_code == 2 and "--launch runs one launch file; leave out --config" in result.output
    result = CliRunner().invoke(cli, ["model"])
    assert result.exit_code == 2 \
        and "give --config (a shape config) or --launch (a launch file)" in result.output
    result = CliRunner().invoke(cli, ["verify", "--device", "emu", "--launch", str(DATA / "axpy.yaml"),
                                      "--json", "x"])
    assert result.exit_code == 2 and "leave out --json" in result.output


def test_class_tolerance_is_a_small_share(tmp_path: Path) -> None:
    path = tmp_path / "l.yaml"
    path.write_text("code_object: l.yaml\nsymbol: k\ngrid: 1\nblock: 64\nclass_tolerance: 0.01\n")
    assert load_launch(path).class_tolerance == 0.01
    path.write_text("code_object: l.yaml\nsymbol: k\ngrid: 1\nblock: 64\nclass_tolerance: 0.5\n")
    with pytest.raises(ConfigError) as info:
        load_launch(path)
    assert info.value.lines == [f"{path}:5: class_tolerance: 0.5 is not allowed; a share of "
                                "wave-instructions from 0 to 0.05 (e.g. 0.01 for 1%)"]
