"""A user's own kernel spec (--spec, beside --kernel-source, a config's {spec: FILE}): checked as the
shipped ones are, and a bad one fails only the command that uses it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from clirun import assert_user_error
from wgrad_cli.cli import cli

OWN = Path(__file__).resolve().parents[1] / "data" / "ownkernel"


@pytest.fixture
def own(tmp_path: Path) -> Path:
    for file in OWN.iterdir():
        shutil.copy(file, tmp_path)
    return tmp_path


def matrix(*args: str) -> list[str]:
    """The kernels of `wgrad matrix ARGS`' jobs (it loads the config and the specs, builds nothing)."""
    result = CliRunner().invoke(cli, ["matrix", *args])
    assert result.exit_code == 0, result.output
    return sorted({job["kernel"] for job in json.loads(result.stdout)["include"]})


def test_spec_given_three_ways(own: Path) -> None:
    assert matrix("--config", str(own / "tiny.yaml")) == ["rowquad"]
    assert matrix("--config", "smoke", "--spec", str(own / "rowquad.yaml")) == ["rowquad"]
    assert matrix("--config", "smoke", "--spec", str(own / "rowquad.yaml"), "--kernel", "rowquad",
                  "--kernel", "reference") == ["reference", "rowquad"]
    assert matrix("--config", "smoke", "--kernel-source", str(own / "rowquad.hip")) == ["rowquad"]


def test_a_typo_in_a_user_spec_fails_only_the_command_that_uses_it(own: Path) -> None:
    spec = own / "rowquad.yaml"
    spec.write_text(spec.read_text().replace("block: 256", "blok: 256"))
    for args in (["--config", "smoke", "--spec", str(spec)], ["--config", str(own / "tiny.yaml")]):
        lines = assert_user_error(CliRunner().invoke(cli, ["matrix", *args]))
        assert lines == [f"{spec}:9: launch.blok: unknown key; "
                         "launch has block, cluster, dynamic_shared, grid, tile",
                         f"{spec}:7: launch.block: None is not a thread count; "
                         "block is an integer in [1, 1024]"]
    assert CliRunner().invoke(cli, ["configs"]).exit_code == 0
    assert matrix("--config", "smoke") == ["reference"]


def test_a_user_spec_may_not_take_a_shipped_kernel_name_or_be_missing(own: Path) -> None:
    spec = own / "rowquad.yaml"
    spec.write_text(spec.read_text().replace("name: rowquad", "name: reference"))
    (line,) = assert_user_error(CliRunner().invoke(cli, ["matrix", "--config", "smoke", "--spec", str(spec)]))
    assert (line.startswith(f"{spec}:3: name: 'reference' is already the name of ")
            and "reference.yaml" in line)
    (line,) = assert_user_error(CliRunner().invoke(cli, ["matrix", "--config", "smoke",
                                                         "--spec", str(own / "no.yaml")]))
    assert line == (f"{own / 'no.yaml'}: no such file; "
                    "give a kernel spec file (YAML, as the shipped kernels/*.yaml)")
