"""The CLI turns every user error into status 2 and one stderr line per problem, never a traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from clirun import assert_user_error

from wgrad_cli.cli import cli

BAD = """\
seed: -1
kernels: [reference, nosuch]
shapes:
  - {name: a, M: 100, N: 256, K: 256, E: 1}
  - {name: a, M: 256, N: 256, K: 256, E: 2, offsets: [0, 64, 256]}
"""
BAD_PROBLEMS = [(1, "seed"), (2, "kernels[1].name"), (4, "shapes[0].M"), (5, "shapes[1].name"),
                (5, "shapes[1].offsets[1]")]
GOOD = """\
kernels: [reference]
shapes:
  - {name: a, M: 128, N: 256, K: 256, E: 1}
  - {name: b, M: 1024, N: 512, K: 256, E: 4, routing: zipf}
"""


def write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def assert_bad_config_lines(lines: list[str], config: Path) -> None:
    assert sorted((int(line.split(":")[1]), line.split(": ")[1]) for line in lines) == BAD_PROBLEMS
    assert all(line.startswith(f"{config}:") and "; " in line for line in lines)


@pytest.mark.parametrize("command", ["build", "matrix"])
def test_bad_config_one_line_per_problem(tmp_path: Path, command: str) -> None:
    config = write(tmp_path, BAD)
    lines = assert_user_error(run(command, "--config", config))
    assert_bad_config_lines(lines, config)


def installed_command() -> str:
    """The wgrad command installed with this interpreter (a venv's bin, used without activating it),
    else the one on PATH."""
    beside = Path(sys.executable).parent / "wgrad"
    wgrad = str(beside) if beside.exists() else shutil.which("wgrad")
    assert wgrad, "the wgrad command is not installed"
    return wgrad


def test_bad_config_installed_command(tmp_path: Path) -> None:
    wgrad = installed_command()
    config = write(tmp_path, BAD)
    for command in ("build", "matrix"):
        proc = subprocess.run([wgrad, command, "--config", str(config)], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == ""
        assert "Traceback" not in proc.stderr
        assert_bad_config_lines(proc.stderr.splitlines(), config)


def test_installed_command_usage_error(tmp_path: Path) -> None:
    wgrad = installed_command()
    proc = subprocess.run([wgrad, "build", "--config", str(write(tmp_path, GOOD)), "--shard", "3/2"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "Invalid value for '--shard'" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", ["build", "matrix"])
def test_missing_config_file(tmp_path: Path, command: str) -> None:
    missing = tmp_path / "nope.yaml"
    [line] = assert_user_error(run(command, "--config", missing))
    assert line.startswith(f"--config {missing}: no such file, and no shipped config has that name; "
                           "give a YAML file or one of ci, ")


def test_yaml_syntax_error(tmp_path: Path) -> None:
    config = write(tmp_path, "seed: 1\nshapes: [\n  {name: a\n")
    [line] = assert_user_error(run("matrix", "--config", config))
    assert (line.startswith(f"{config}:") and ": (YAML): " in line
            and line.endswith("the file must be valid YAML"))


def test_missing_config_option() -> None:
    result = run("build")
    assert result.exit_code == 2
    assert "Missing option '--config'" in result.stderr


@pytest.mark.parametrize("shard, why", [
    ("0/2", "'0/2': i must be in 1..n"),
    ("3/2", "'3/2': i must be in 1..n"),
    ("x", "'x' is not i/n"),
    ("1/2/3", "'1/2/3' is not i/n"),
    ("1/0", "'1/0': i must be in 1..n"),
])
def test_bad_shard_is_a_usage_error(tmp_path: Path, shard: str, why: str) -> None:
    result = run("build", "--config", write(tmp_path, GOOD), "--shard", shard)
    assert_user_error(result, "Usage: ", "Invalid value for '--shard'", why)


@pytest.mark.parametrize("args", [
    ["--kernel-source", "k.cpp"],
    ["--include", "inc"],
    ["--kernel-source", "k.cpp", "--kernel", "reference", "--kernel", "upstream"],
], ids=["no-kernel", "include-no-kernel", "two-kernels"])
@pytest.mark.parametrize("command", ["build", "matrix"])
def test_kernel_source_needs_exactly_one_kernel(tmp_path: Path, command: str, args: list[str]) -> None:
    [line] = assert_user_error(run(command, "--config", write(tmp_path, GOOD), *args))
    assert line == ("--kernel-source/--include: name exactly one --kernel they belong to "
                    "(or put the kernel's spec beside its source, as mine.yaml beside mine.hip)")


@pytest.mark.parametrize("flag, value, expected", [
    ("--shape", "c", "--shape c: not in {config}; choose from a, b"),
    ("--target", "gfx942", "--target gfx942: not in {config}; choose from gfx950, sm_90a"),
])
@pytest.mark.parametrize("command", ["build", "matrix"])
def test_unknown_selection(tmp_path: Path, command: str, flag: str, value: str, expected: str) -> None:
    config = write(tmp_path, GOOD)
    [line] = assert_user_error(run(command, "--config", config, flag, "a" if flag == "--shape" else "gfx950",
                                   flag, value))
    assert line == expected.format(config=config)


def test_unknown_kernel_flag(tmp_path: Path) -> None:
    config = write(tmp_path, GOOD)
    [line] = assert_user_error(run("matrix", "--config", config, "--kernel", "cutlass"))
    assert line.startswith(f"{config}:1: kernels[0].name: unknown kernel 'cutlass'; known kernels: ")


def test_kernel_source_that_does_not_exist(tmp_path: Path) -> None:
    config = write(tmp_path, GOOD)
    lines = assert_user_error(run("matrix", "--config", config, "--kernel", "upstream",
                                  "--kernel-source", tmp_path / "missing.cpp",
                                  "--include", tmp_path / "nope"))
    assert lines == [f"--kernel-source {tmp_path / 'missing.cpp'}: no such file; "
                     "give the kernel's source file",
                     f"--include {tmp_path / 'nope'}: not a directory; give an existing include dir"]


def test_kernel_flag_keeps_the_targets_it_builds(tmp_path: Path) -> None:
    """--kernel upstream on a config for gfx950 and sm_90a: only gfx950 remains (upstream is AMD-only)."""
    (tmp_path / "up.cpp").write_text("// stands in for the user's checkout\n")
    both = write(tmp_path, "targets: [gfx950, sm_90a]\n" + GOOD, "both.yaml")
    result = run("matrix", "--config", both, "--kernel", "upstream", "--kernel-source", tmp_path / "up.cpp",
                 "--shape", "b")
    assert result.exit_code == 0, result.output
    assert (json.loads(result.stdout)
            == {"include": [{"kernel": "upstream", "target": "gfx950", "shape": "b"}]})
    only_nv = write(tmp_path, "targets: [sm_90a]\n" + GOOD, "nv.yaml")
    [line] = assert_user_error(run("matrix", "--config", only_nv, "--kernel", "upstream", "--kernel-source",
                                   tmp_path / "up.cpp"))
    assert line.endswith("targets: --kernel upstream builds for none of sm_90a; "
                         "choose a kernel that builds for one of them")


def test_matrix_of_a_good_config(tmp_path: Path) -> None:
    """The contrast to the errors above: same options, valid values, status 0 and JSON on stdout."""
    result = run("matrix", "--config", write(tmp_path, GOOD), "--shape", "b", "--target", "sm_90a")
    assert result.exit_code == 0, result.output
    assert (json.loads(result.stdout)
            == {"include": [{"kernel": "reference", "target": "sm_90a", "shape": "b"}]})
    result = run("matrix", "--config", write(tmp_path, GOOD), "--shards", "3")
    assert json.loads(result.stdout) == {"include": [{"shard": "1/3"}, {"shard": "2/3"}, {"shard": "3/3"}]}


@pytest.mark.parametrize("args", [
    ["--config", "{bad}"],
    ["--config", "{missing}"],
    ["--config", "{good}", "--shape", "zzz"],
    ["--config", "{good}", "--kernel-source", "k.cpp"],
    ["--config", "{good}", "--shard", "0/2"],
], ids=["bad-config", "missing-config", "unknown-shape", "kernel-source", "bad-shard"])
def test_failed_validation_leaves_json_alone(tmp_path: Path, args: list[str]) -> None:
    paths = {"bad": write(tmp_path, BAD, "bad.yaml"), "good": write(tmp_path, GOOD, "good.yaml"),
             "missing": tmp_path / "missing.yaml"}
    out = tmp_path / "out.json"
    out.write_text("sentinel, not JSON\n")
    before = out.stat().st_mtime_ns
    result = run("build", *[a.format(**paths) for a in args], "--json", out,
                 "--cache-dir", tmp_path / "cache")
    assert_user_error(result)
    assert out.read_text() == "sentinel, not JSON\n"
    assert out.stat().st_mtime_ns == before
    assert not (tmp_path / "cache").exists()


def test_bad_yaml_tag_is_a_config_error(tmp_path: Path) -> None:
    config = write(tmp_path, "shapes:\n  - {name: a, M: !!int abc, N: 256, K: 256, E: 1}\n")
    [line] = assert_user_error(run("matrix", "--config", config))
    assert line.startswith(f"{config}:2: ")


def test_unwritable_places_are_one_line_errors(tmp_path: Path) -> None:
    config = write(tmp_path, "shapes:\n  - {name: a, M: 128, N: 256, K: 256, E: 1}\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    [line] = assert_user_error(run("build", "--config", config, "--cache-dir", str(blocker / "cache")))
    assert line.startswith(f"cache {blocker / 'cache'}: not writable")
    [line] = assert_user_error(run("info", "--cache-dir", str(tmp_path / "c"),
                                   "--json", str(blocker / "x.json")))
    assert line == f"--json {blocker / 'x.json'}: {blocker} is a file, not a folder; give a path in a folder"


@pytest.mark.parametrize("args, option", [
    (["verify", "--config", "smoke", "--device", "emu", "--json", "{x}"], "--json"),
    (["verify", "--config", "smoke", "--device", "emu", "--csv", "{x}"], "--csv"),
    (["model", "--config", "smoke", "--json", "{x}"], "--json"),
    (["model", "--config", "smoke", "--trace", "{x}"], "--trace"),
    (["build", "--config", "smoke", "--json", "{x}"], "--json"),
    (["plot", "results/h200/bench-large.json", "-o", "{x}"], "--output"),
    (["merge", "results/h200/bench-large.json", "--json", "{x}"], "--json"),
])
def test_output_paths_are_checked_before_any_work(tmp_path: Path, repo: Path, args: list[str], option: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing folder is refused, not made; /proc takes no new file: one line each, before a build."""
    monkeypatch.chdir(repo)
    missing = tmp_path / "no" / "such" / "x.json"
    [line] = assert_user_error(run(*[a.replace("{x}", str(missing)) for a in args]))
    assert line == (f"{option} {missing}: the folder {missing.parent} does not exist; "
                    "create it first, or give a path in an existing folder")
    assert not (tmp_path / "no").exists()
    [line] = assert_user_error(run(*[a.replace("{x}", "/proc/x.json") for a in args]))
    assert (line.startswith(f"{option} /proc/x.json: cannot write in /proc (")
            and line.endswith("writable folder"))
