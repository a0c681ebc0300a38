"""Every option of every command is honoured or refused on each path it can take, never parsed and
dropped: on the config path each option's value reaches the command's body (a parameter of it, or a
field of an option object it takes); on the --launch path each option is in the command's allow-list
and reaches the launch file's run, or is refused in one line."""

from __future__ import annotations

import dataclasses
import inspect
import json
import types
import typing
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from clirun import assert_user_error

from wgrad_cli.cli import MODEL_LAUNCH, VERIFY_LAUNCH, cli

DATA = Path(__file__).resolve().parents[1] / "data" / "launch"
# command -> (its launch allow-list, the module and function its --launch path runs, options it needs)
LAUNCHES = {"verify": (VERIFY_LAUNCH, "wgrad_cli.commands.launchverify", "verify_launch",
                       ["--device", "emu"]),
            "model": (MODEL_LAUNCH, "wgrad_cli.commands.launchmodel", "model_launch_file", [])}


def options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option)]


def raw_value(p: click.Option, tmp_path: Path) -> list[str]:
    """A value the option parses, distinct from its default, as given on the command line."""
    flag = max(p.opts, key=len)
    if p.is_flag:
        return [flag]
    t = p.type
    if isinstance(t, click.Choice):
        return [flag, str(t.choices[-1])]
    if isinstance(t, click.IntRange):
        return [flag, str((t.min or 0) + 32)]
    if isinstance(t, click.FloatRange):
        return [flag, str((t.min or 0) + 1.25)]
    if isinstance(t, click.Path):
        return [flag, str(tmp_path) if t.exists else str(tmp_path / f"given-{p.name}")]
    special = {"device": "emu", "shard": "1/1", "emu_register_fill": "0x1234",
               "figures": "vmem_latency_cycles=1600"}
    return [flag, special.get(p.name or "", f"given-{p.name}")]


def dataclass_fields(annotation: Any) -> set[str]:
    """The field names of the option objects an annotation names (a union of them, too)."""
    args = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    return {f.name for a in args if dataclasses.is_dataclass(a) for f in dataclasses.fields(a)}


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_on_the_config_path_every_option_reaches_the_command(name: str) -> None:
    command = cli.commands[name]
    assert command.callback is not None
    body = inspect.unwrap(command.callback)
    hints = typing.get_type_hints(body)
    reached = set(inspect.signature(body).parameters)
    for parameter in inspect.signature(body).parameters:
        reached |= dataclass_fields(hints[parameter])
    dropped = [max(p.opts, key=len) for p in options(command) if p.expose_value and p.name not in reached
               and p.name != "launch"]
    assert dropped == [], f"wgrad {name}: options parsed and then dropped"
    assert not any(p.kind is p.VAR_KEYWORD for p in inspect.signature(body).parameters.values())


@pytest.mark.parametrize("name", sorted(LAUNCHES))
def test_on_the_launch_path_every_option_is_refused_in_one_line_or_reaches_the_launch(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    accepts, module, function, needed = LAUNCHES[name]
    command = cli.commands[name]
    names = {p.name for p in options(command)}
    assert set(accepts) <= names, "the allow-list names an option the command lacks"
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(f"{module}.{function}", lambda *args: calls.append(args))
    for p in options(command):
        if p.name == "launch":
            continue
        given = raw_value(p, tmp_path)
        args = [name, "--launch", str(DATA / "axpy.yaml"), *([] if p.name == "device" else needed), *given]
        result = CliRunner().invoke(cli, args)
        if p.name not in accepts:
            lines = assert_user_error(result)
            assert lines == [f"--launch runs one launch file; leave out {given[0]}, which a launch file "
                             "does not take"], args
            continue
        assert result.exit_code == 0, (args, result.output)
        if not p.expose_value:  # --wide: its callback sets the table layout as it is parsed
            continue
        assert found(given[-1] if not p.is_flag else "True", calls[-1]), \
            f"{args}: the value did not reach {function}"


def found(raw: str, values: Any) -> bool:
    """Whether the value given on the command line is among the arguments (inside their option objects)."""
    wanted = {raw, str(Path(raw))}
    for convert in (lambda v: int(v, 0), float):
        try:
            wanted.add(str(convert(raw)))
        except ValueError:
            pass
    if str(values) in wanted:
        return True
    if dataclasses.is_dataclass(values) and not isinstance(values, type):
        return any(found(raw, getattr(values, f.name)) for f in dataclasses.fields(values))
    return isinstance(values, tuple | list) and any(found(raw, v) for v in values)


@pytest.mark.usefixtures("amd_compiler")
def test_model_launch_honours_profile_trace_figure_and_clock(tmp_path: Path) -> None:
    out, trace = tmp_path / "m.json", tmp_path / "t.json"
    result = CliRunner().invoke(cli, ["model", "--launch", str(DATA / "reference.yaml"), "--profile",
                                      "--trace", str(trace), "--figure", "vmem_latency_cycles=1600",
                                      "--clock", "2.0", "--seed", "5", "--json", str(out), "--cache-dir",
                                      str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    (row,) = doc["records"]
    assert doc["modelled"]["clock_ghz"] == 2.0 and doc["modelled"]["figures"] == ["vmem_latency_cycles=1600"]
    assert row["seed"] == 5 and row["clock_mhz"] == 2000
    seconds = row["median_ms"] / 1e3  # the modelled row's rates, in their units
    assert row["tflops"] == pytest.approx(row["flops"] / seconds / 1e12, rel=1e-12)
    assert row["gbps"] == pytest.approx(row["min_bytes"] / seconds / 1e9, rel=1e-12)
    assert row["model"]["profile"] is not None and "the 12 instructions that take the most" in result.stdout
    assert json.loads(trace.read_text())["traceEvents"] and f"trace of one CU: {trace}" in result.stderr
