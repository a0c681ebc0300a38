"""The package list, which pyproject.toml cannot state: every wgrad_cli package found, plus the
top-level kernels/ and configs/ folders shipped inside the package as wgrad_cli.kernels and
wgrad_cli.configs (package data, found with importlib.resources)."""

from setuptools import find_packages, setup

DATA = {"wgrad_cli.kernels": "kernels", "wgrad_cli.configs": "configs"}

setup(packages=[*find_packages(include=["wgrad_cli", "wgrad_cli.*"]), *DATA], package_dir=DATA)
