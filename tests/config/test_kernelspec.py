"""Kernel spec files: the shipped ones load; every broken field is reported with its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from wgrad_cli.config.kernelspec import load_specs
from wgrad_cli.errors import ConfigError
from wgrad_cli.problem.abi import Dims

GOOD = """\
name: mine
source: k.cu
symbol: my_kernel
launch: {tile: [32, 64], block: 128}
targets:
  gfx950: {flags: [-O3]}
"""


def spec_dir(tmp_path: Path, text: str) -> Path:
    (tmp_path / "k.cu").write_text("// kernel\n")
    (tmp_path / "mine.yaml").write_text(text)
    return tmp_path


def test_shipped_specs(specs: dict[str, object]) -> None:
    ref, hk = specs["reference"], specs["upstream"]
    assert (ref.source.name == "reference.cu" and ref.tile == (16, 16)  # type: ignore[attr-defined]
            and ref.block == 256)  # type: ignore[attr-defined]
    assert set(ref.flags) == {"gfx950", "sm_90a"} and not ref.needs_hip_headers  # type: ignore[attr-defined]
    assert (hk.source is None and hk.needs_hip_headers  # type: ignore[attr-defined]
            and set(hk.flags) == {"gfx950"})  # type: ignore[attr-defined]
    # docs/kernel-contract.md's grid
    assert hk.grid(Dims(8192, 8192, 8192, 8), 256) == 8 * 32 * 32  # type: ignore[attr-defined]


def test_good_spec(tmp_path: Path) -> None:
    spec = load_specs(spec_dir(tmp_path, GOOD))["mine"]
    # one per tile, whatever the units
    assert spec.grid(Dims(128, 256, 512, 3), 132) == 3 * (256 // 32) * (512 // 64)
    assert spec.flags == {"gfx950": ("-O3",)} and spec.source == tmp_path / "k.cu"
    assert not spec.persistent and spec.cluster == 1


@pytest.mark.parametrize("units, dims, grid", [
    (132, Dims(8192, 8192, 8192, 8), 132),  # more tiles than SMs: one per SM
    (133, Dims(8192, 8192, 8192, 8), 132),  # rounded down to whole clusters
    (132, Dims(128, 256, 256, 1), 4),  # fewer tiles than SMs: one per tile (4 tiles of 128 x 128)
    (1, Dims(128, 256, 256, 1), 2),  # never less than one cluster
])
def test_persistent_grid(tmp_path: Path, units: int, dims: Dims, grid: int) -> None:
    text = GOOD.replace("{tile: [32, 64], block: 128}",
                        "{tile: [128, 128], block: 128, grid: units, cluster: 2}")
    spec = load_specs(spec_dir(tmp_path, text))["mine"]
    assert spec.persistent and spec.cluster == 2 and spec.grid(dims, units) == grid
    assert spec.grid(dims, units) % spec.cluster == 0


@pytest.mark.parametrize("old, new, line, field, why", [
    ("symbol: my_kernel", "symbol: 3d", 3, "symbol",
     "'3d' is not an identifier; symbol must be a C identifier"),
    ("source: k.cu", "source: missing.cu", 2, "source", "missing.cu does not exist"),
    ("[32, 64]", "[48, 64]", 4, "launch.tile", "[48, 64] is not two tile sizes dividing 256 and 256"),
    ("block: 128", "block: 2048", 4, "launch.block", "2048 is not a thread count"),
    ("block: 128", "block: 128, grid: sms", 4, "launch.grid", "'sms' is not a grid; grid is tiles"),
    ("block: 128", "block: 128, grid: [1]", 4, "launch.grid", "[1] is not a grid"),
    # 256 / 32 * 256 / 64 = 32 tiles at least per expert: a cluster of 3 would leave a workgroup without its
    # peers
    ("block: 128", "block: 128, cluster: 3", 4, "launch.cluster", "3 is not a cluster size for this tile"),
    ("block: 128", "block: 128, cluster: 16", 4, "launch.cluster",
     "dividing 32, the fewest tiles of an expert"),
    ("gfx950: {flags: [-O3]}", "gfx942: {flags: [-O3]}", 6, "targets.gfx942", "unknown target"),
    ("flags: [-O3]", "flags: -O3", 6, "targets.gfx950.flags", "'-O3' is not a list of strings"),
    ("name: mine\n", "name: mine\ncolour: red\n", 2, "colour", "unknown key"),
    ("symbol: my_kernel\n", "", 1, "symbol", "is missing"),
])
def test_bad_spec(tmp_path: Path, old: str, new: str, line: int, field: str, why: str) -> None:
    directory = spec_dir(tmp_path, GOOD.replace(old, new))
    with pytest.raises(ConfigError) as exc:
        load_specs(directory)
    (only,) = exc.value.lines
    assert only.startswith(f"{directory / 'mine.yaml'}:{line}: {field}: ") and why in only


def test_duplicate_names(tmp_path: Path) -> None:
    directory = spec_dir(tmp_path, GOOD)
    (directory / "other.yaml").write_text(GOOD)
    with pytest.raises(ConfigError, match="other.yaml:1: name: 'mine' is also the name of"):
        load_specs(directory)
