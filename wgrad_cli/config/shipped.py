"""Files shipped inside the package (kernel specs and sources, shape configs), found through
importlib.resources so that an installed wheel works from any directory."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from wgrad_cli.errors import WgradError


def package_dir(name: str) -> Path:
    """A data folder of the package as a real path: compilers and YAML loading need files on disk.

    The folders are kernels/ and configs/ at the checkout's top level, installed as the packages
    wgrad_cli.kernels and wgrad_cli.configs (setup.py maps them), so a wheel and an editable install
    both find them here."""
    folder = resources.files(f"wgrad_cli.{name}")
    if not isinstance(folder, Path):
        raise WgradError(f"wgrad's {name}/ is not on disk ({folder}); install wgrad as files (pip install), "
                         "not as a zip archive")
    return folder


KERNELS_DIR = package_dir("kernels")
CONFIGS_DIR = package_dir("configs")


def kernel_files() -> list[Path]:
    """Every file of the shipped kernels (specs, sources, headers)."""
    return sorted(p for p in KERNELS_DIR.iterdir() if p.is_file() and p.suffix not in (".py", ".pyc"))


def shipped_configs() -> dict[str, Path]:
    """The configs that come with wgrad, by name (file name without .yaml)."""
    return {p.stem: p for p in sorted(CONFIGS_DIR.glob("*.yaml"))}


def config_file(value: Path) -> Path:
    """--config's file: an existing path, else the name of a shipped config (`ci` or `ci.yaml`)."""
    if value.is_file():
        return value
    shipped = shipped_configs()
    name = value.name.removesuffix(".yaml")
    if str(value) in (name, f"{name}.yaml") and name in shipped:
        return shipped[name]
    raise WgradError(f"--config {value}: no such file, and no shipped config has that name; give a YAML file "
                     f"or one of {', '.join(shipped)} (`wgrad configs` lists them)")


def config_name(path: Path) -> str:
    """How a results file names a config: a shipped one by its name, any other by the path as given,
    so that no file holds a path of the machine that ran it."""
    return path.stem if path.resolve().parent == CONFIGS_DIR.resolve() else str(path)
