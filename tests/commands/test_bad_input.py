"""Every command, fed undecodable bytes, wrong encodings and results files of another schema:
one line on stderr, exit status 2, never a traceback."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from clirun import assert_user_error
from rows import BENCH, write

from wgrad_cli.cli import cli
from wgrad_cli.results.document import write_json
from wgrad_cli.results.records import SCHEMA, to_json

UNREADABLE = {
    "binary": b"\x7fELF\x02\x01\x01\x00\x00\xff\xfe",
    "latin-1": "description: caf\u00e9 cr\u00e8me\nshapes: []\n".encode("latin-1"),
    "utf-16": "shapes: []\n".encode("utf-16"),
    "control": b"seed: 1\x01\n",
}


def files(tmp_path: Path, suffix: str) -> list[Path]:
    out = []
    for name, data in UNREADABLE.items():
        path = tmp_path / f"{name}{suffix}"
        path.write_bytes(data)
        out.append(path)
    return out


def one_line(*args: str | Path) -> str:
    [line] = assert_user_error(CliRunner().invoke(cli, [str(a) for a in args]))
    return line


@pytest.mark.parametrize("command", ["build", "matrix", "verify", "bench"])
def test_undecodable_configs(tmp_path: Path, command: str) -> None:
    for config in files(tmp_path, ".yaml"):
        line = one_line(command, "--config", config)
        assert line.startswith(f"{config}:") and "; " in line


def test_selfbench_checks_its_config_first(tmp_path: Path) -> None:
    for config in files(tmp_path, ".yaml"):
        assert one_line("selfbench", "--size", "256", "--build-config", config).startswith(f"{config}:")


@pytest.mark.parametrize("command", ["build", "matrix", "verify", "bench"])
def test_undecodable_kernel_sources(tmp_path: Path, command: str) -> None:
    for source in files(tmp_path, ".cu"):
        if source.name.startswith("control"):
            continue  # a control character is text a compiler reports on
        line = one_line(command, "--config", "smoke", "--kernel", "reference", "--kernel-source", source)
        assert line.startswith(f"--kernel-source {source}: ") and "UTF-8" in line


def results_files(tmp_path: Path) -> list[Path]:
    """Files no results reader may trip over: undecodable, another schema, records of the wrong kind."""
    bad = files(tmp_path, ".json")
    future = write(tmp_path / "future.json", "bench", BENCH)
    future.write_text(future.read_text().replace(f'"schema": {SCHEMA}', '"schema": 99'))
    older = write(tmp_path / "older.json", "bench", [{"index": 0, "kernel": "reference"}])
    kinds = tmp_path / "kinds.json"
    write_json(kinds, "bench", [1, "two", None])  # type: ignore[list-item]
    fields = write(tmp_path / "fields.json", "bench",
                   [{**to_json(BENCH[1]), "shape": "square", "median_ms": "fast"}])
    return [*bad, future, older, kinds, fields]


def test_results_readers(tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", "bench", BENCH)
    for path in results_files(tmp_path):
        for command in (["show", path], ["show", "--format", "csv", path], ["compare", good, path],
                        ["compare", path, good], ["speedup", path],
                        ["merge", path, "--json", tmp_path / "m.json"]):
            line = one_line(*command)
            assert str(path) in line, (command, line)
        assert not (tmp_path / "m.json").exists()


def test_future_schema_says_to_upgrade(tmp_path: Path) -> None:
    future = write(tmp_path / "future.json", "bench", BENCH)
    future.write_text(future.read_text().replace(f'"schema": {SCHEMA}', '"schema": 99'))
    assert one_line("show", future) == (f"{future}: results schema 99; this wgrad reads schemas 1 to "
                                        f"{SCHEMA} (upgrade wgrad for a newer file)")


def test_files_take_the_umask(tmp_path: Path) -> None:
    """Results and cache files are as readable as any new file (mkstemp alone makes them 0600)."""
    from wgrad_cli.output.atomic import UMASK

    path = write(tmp_path / "r.json", "bench", BENCH)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~UMASK
