"""Shared fixtures: real compilers where installed (skipped with the reason where not)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wgrad_cli.errors import ToolchainError
from wgrad_cli.kernelspec import KernelSpec, load_specs
from wgrad_cli.toolchain import Compiler, Toolchains

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def specs() -> dict[str, KernelSpec]:
    return load_specs()


@pytest.fixture
def toolchains(tmp_path: Path) -> Toolchains:
    return Toolchains(tmp_path / "zig-shim")


def _compiler(target: str, shim: Path, how: str) -> Compiler:
    try:
        return Toolchains(shim).select(target, False)
    except ToolchainError as exc:
        pytest.skip(f"no {target} compiler ({how}): {exc}")


@pytest.fixture(scope="session")
def amd_compiler(tmp_path_factory: pytest.TempPathFactory) -> Compiler:
    return _compiler("gfx950", tmp_path_factory.mktemp("shim"), "apt-get install clang-22 lld-22")


@pytest.fixture(scope="session")
def nvcc(tmp_path_factory: pytest.TempPathFactory) -> Compiler:
    return _compiler("sm_90a", tmp_path_factory.mktemp("shim"), "install the CUDA toolkit")
