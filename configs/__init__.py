"""wgrad's shipped shape configs, one YAML file each, shipped in the wheel as the package data of
wgrad_cli.configs (found with importlib.resources)."""
