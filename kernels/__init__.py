"""wgrad's kernels: each spec (<name>.yaml) beside its source, shipped in the wheel as the package
data of wgrad_cli.kernels (found with importlib.resources)."""
