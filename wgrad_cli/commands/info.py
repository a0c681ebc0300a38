"""`wgrad info`: the compilers found for each target."""

from __future__ import annotations

from pathlib import Path

from wgrad_cli.backends.registry import BACKENDS
from wgrad_cli.compile.cache import default_root
from wgrad_cli.compile.toolchain import Toolchains
from wgrad_cli.config.options import CompilerOptions
from wgrad_cli.config.targets import TARGETS
from wgrad_cli.output.console import out
from wgrad_cli.results.build_tables import toolchain_table
from wgrad_cli.results.document import write_json
from wgrad_cli.results.records import CompilerRecord, to_json


def info_command(compilers: CompilerOptions, json_path: Path | None) -> None:
    toolchains = Toolchains.chosen(compilers, compilers.cache_dir or default_root(), BACKENDS)
    rows = []
    for target in TARGETS:
        candidates = list(toolchains.candidates(target))
        first = next((c for c in candidates if c.compiler), None)
        for c in candidates:
            comp = c.compiler
            rows.append(CompilerRecord(target, c.name, comp is not None, c is first,
                                       comp.kind if comp else None, comp.version if comp else None,
                                       list(comp.argv0) if comp else None, c.reason))
    out.print(toolchain_table(rows))
    if json_path:
        write_json(json_path, "info", [to_json(r) for r in rows])
