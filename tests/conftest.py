"""Shared fixtures: real compilers and a real GPU where installed (skipped with the reason where not)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from wgrad_cli.backends.registry import BACKENDS, open_runtime
from wgrad_cli.compile.cache import Cache
from wgrad_cli.compile.compilers import Compiler
from wgrad_cli.compile.jobs import BuildJob, run_builds
from wgrad_cli.compile.toolchain import Toolchains
from wgrad_cli.config.kernelspec import KernelSpec, load_specs
from wgrad_cli.config.targets import TARGETS, Target
from wgrad_cli.device.runtime import Runtime
from wgrad_cli.errors import DriverError, ToolchainError
from wgrad_cli.problem.abi import Dims

REPO = Path(__file__).resolve().parent.parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fuzz-count", default="2000", help="programs per optimisation level of pytest -m fuzz")


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def specs() -> dict[str, KernelSpec]:
    return load_specs()


@pytest.fixture
def toolchains(tmp_path: Path) -> Toolchains:
    return Toolchains(tmp_path / "zig-shim", BACKENDS)


def _compiler(target: str, shim: Path, how: str) -> Compiler:
    try:
        return Toolchains(shim, BACKENDS).select(target, False)
    except ToolchainError as exc:
        pytest.skip(f"no {target} compiler ({how}): {exc}")


@pytest.fixture(scope="session")
def amd_compiler(tmp_path_factory: pytest.TempPathFactory) -> Compiler:
    return _compiler("gfx950", tmp_path_factory.mktemp("shim"), "apt-get install clang-22 lld-22")


@pytest.fixture(scope="session")
def nvcc(tmp_path_factory: pytest.TempPathFactory) -> Compiler:
    return _compiler("sm_90a", tmp_path_factory.mktemp("shim"), "install the CUDA toolkit")


@pytest.fixture(scope="session")
def gpu() -> Iterator[Runtime]:
    """A runtime on device 0 of whichever vendor's driver finds one; skipped, with each
    reason, where none does."""
    reasons = []
    for vendor in ("nvidia", "amd"):
        try:
            rt = open_runtime(vendor, 0)
        except DriverError as exc:
            reasons += exc.lines
            continue
        yield rt
        rt.close()
        return
    pytest.skip("no GPU: " + " | ".join(reasons))


@pytest.fixture(scope="session")
def gpu_target(gpu: Runtime) -> Target:
    return next(t for t in TARGETS.values() if t.device_arch == gpu.device.arch)


@pytest.fixture(scope="session")
def gpu_build(gpu_target: Target, specs: dict[str, KernelSpec],
              tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, Dims], Path]:
    """Builds (kernel name, dims) for the GPU's target with the real compiler; the code object's path."""
    cache = Cache(tmp_path_factory.mktemp("cache"))
    toolchains = Toolchains(cache.root / "zig-shim", BACKENDS)

    def build(kernel: str, dims: Dims) -> Path:
        (result,) = run_builds([BuildJob(specs[kernel], gpu_target.name, dims)], toolchains, cache, {}, 1)
        assert result.ok and result.code_object, result.errors
        return result.code_object

    return build
