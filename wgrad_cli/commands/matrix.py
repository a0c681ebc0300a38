"""`wgrad matrix`: the config's job matrix for CI."""

from __future__ import annotations

from typing import Any

from wgrad_cli.compile.selection import select
from wgrad_cli.config.kernelspec import load_specs
from wgrad_cli.config.options import Selection


def matrix_command(selection: Selection, shards: int | None) -> dict[str, Any]:
    """GitHub Actions strategy.matrix: one entry per (kernel, target, shape), or per shard."""
    _, records = select(load_specs(), selection)
    if shards:
        return {"include": [{"shard": f"{i}/{shards}"} for i in range(1, shards + 1)]}
    return {"include": [{"kernel": job.kernel.name, "target": job.target, "shape": shape.name}
                        for job, shape in records]}
