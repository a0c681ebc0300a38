"""A kernel spec's size limits (`limits:`): read with the spec, each a bad one refused in one line;
the cdna4 kernel's agree with the static_assert its compiler applies, at both edges; and build and
verify refuse a shape past them, one line per kernel and shape, before anything compiles."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from clirun import assert_user_error

from wgrad_cli.backends.registry import BACKENDS
from wgrad_cli.cli import cli
from wgrad_cli.compile.cache import Cache
from wgrad_cli.compile.compilers import Compiler
from wgrad_cli.compile.jobs import BuildJob, build_one
from wgrad_cli.config.kernelspec import KernelSpec, load_specs
from wgrad_cli.errors import ConfigError
from wgrad_cli.problem.abi import Dims

# (dims, the limit it breaks or None): each limit of cdna4's just inside and just past its edge
EDGES = [
    (Dims(8_388_480, 256, 256, 1), None),
    (Dims(8_388_608, 256, 256, 1), "256 * M < 2**31"),
    (Dims(1_048_448, 65_536, 256, 1), None),
    (Dims(1_048_576, 65_536, 256, 1), "4 * max(N, K) * (M // 128) < 2**31"),
    (Dims(1_048_576, 256, 65_536, 1), "4 * max(N, K) * (M // 128) < 2**31"),
]


@pytest.mark.parametrize("dims, broken", EDGES)
def test_cdna4s_limits_are_its_compilers(dims: Dims, broken: str | None, specs: dict[str, KernelSpec],
                                         amd_compiler: Compiler, tmp_path: Path) -> None:
    spec = specs["cdna4"]
    assert [limit.require for limit in spec.beyond(dims)] == ([broken] if broken else [])
    built = build_one(BuildJob(spec, "gfx950", dims), BACKENDS["gfx950"], amd_compiler, Cache(tmp_path), {},
                      None)
    assert built.ok == (broken is None), built.errors
    if broken:
        assert any("shape too large for 32-bit buffer offsets" in line for line in built.errors)


def test_build_and_verify_refuse_a_shape_past_them_before_compiling(tmp_path: Path) -> None:
    config = tmp_path / "big.yaml"
    config.write_text("description: past cdna4's 32-bit buffer offsets\nseed: 1\nquantization: ocp\n"
                      "kernels: [cdna4, reference]\ntargets: [gfx950]\nshapes:\n"
                      "  - {name: huge, M: 8388608, N: 256, K: 256, E: 1}\n"
                      "  - {name: fine, M: 128, N: 256, K: 256, E: 1}\n")
    cache = tmp_path / "cache"
    for command in (["build"], ["verify", "--device", "emu"], ["model"]):
        lines = assert_user_error(CliRunner().invoke(cli, [*command, "--config", str(config), "--cache-dir",
                                                           str(cache)]))
        assert lines == ["cdna4 on huge (M=8,388,608, N=256, K=256): a 256-row tile of A or B must fit "
                         "32-bit buffer offsets (256 * M < 2**31, cdna4.yaml); leave the kernel or the "
                         "shape out (--kernel, --shape), or make the shape smaller"], command
        assert not cache.exists() or not any(cache.rglob("*.hsaco")), "compiled before refusing"


@pytest.mark.parametrize("limits, why", [
    ("[{require: 'M < 2**31'}]", "is not a limit"),
    ("[{require: '__import__(\"os\")', why: x}]", "is not a size limit"),
    ("[{require: 'M < N < K', why: x}]", "is not a size limit"),
    ("[{require: 'M * 2', why: x}]", "is not a size limit"),
    ("[{require: '2**M < 1', why: x}]", "is not a size limit"),
    ("{require: 'M < 1', why: x}", "is not a list"),
])
def test_a_bad_limit_is_one_line(tmp_path: Path, limits: str, why: str) -> None:
    text = (Path(__file__).parents[2] / "kernels" / "reference.yaml").read_text()
    (tmp_path / "reference.yaml").write_text(
        text.replace("source: reference.cu",
                     f"source: {Path(__file__).parents[2] / 'kernels' / 'reference.cu'}")
        + f"limits: {limits}\n")
    with pytest.raises(ConfigError) as info:
        load_specs(tmp_path)
    (line,) = info.value.lines
    assert why in line and "limits" in line
