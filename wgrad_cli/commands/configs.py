"""`wgrad configs`: the shipped configs."""

from __future__ import annotations

from wgrad_cli.config.kernelspec import load_specs
from wgrad_cli.config.loader import load_config
from wgrad_cli.config.shipped import shipped_configs
from wgrad_cli.config.yamlsource import load
from wgrad_cli.output.console import out
from wgrad_cli.output.grid import Grid


def configs_command() -> None:
    """The shipped configs: name, shapes, kernels, description."""
    table = Grid("wgrad configs: give one to --config by its name")
    table.add_column("name")
    table.add_column("shapes", justify="right")
    table.add_column("kernels")
    table.add_column("description")
    table.add_column("file", detail=True)
    specs = load_specs()
    for name, path in shipped_configs().items():
        config = load_config(path, specs)
        description = load(path)[0].get("description", "")
        table.add_row(name, str(len(config.shapes)), ", ".join(k.name for k in config.kernels),
                      " ".join(str(description).split()), str(path))
    out.print(table)
