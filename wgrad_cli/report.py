"""The tables `wgrad build` and `wgrad info` print: builds, and the compilers found."""

from __future__ import annotations

from wgrad_cli.backends.registry import backend
from wgrad_cli.build import BuildResult
from wgrad_cli.compilers import Candidate
from wgrad_cli.grid import Grid


def _occupancy(r: BuildResult) -> str:
    return backend(r.job.target).occupancy_text(r.resources) if r.resources else ""


def _registers(r: BuildResult) -> str:
    return backend(r.job.target).registers_text(r.resources) if r.resources else ""


def build_table(results: list[BuildResult], shapes_of: list[list[str]]) -> Grid:
    """One row per build: registers (AMD: VGPR, AGPR, SGPR), LDS/shared and scratch bytes, spills, occupancy."""
    table = Grid("wgrad build")
    table.add_column("kernel")
    table.add_column("target")
    table.add_column("M x N x K, E", "right", detail=True)
    table.add_column("shapes")
    table.add_column("status")
    table.add_column("registers", "right")
    table.add_column("LDS/smem B", "right")
    table.add_column("scratch B", "right", detail=True)
    table.add_column("spills", "right")
    table.add_column("occupancy")
    table.add_column("limited by", detail=True)
    table.add_column("compile s", "right", detail=True)
    for r, shapes in zip(results, shapes_of):
        d, res = r.job.dims, r.resources
        status = "[green]ok[/]" if r.ok else "[red]FAILED[/]"
        figures = [str(res.shared_bytes), str(res.scratch_bytes), str(res.spills)] if res else [""] * 3
        table.add_row(r.job.kernel.name, r.job.target, d.label(), ", ".join(shapes), status,
                      _registers(r), *figures, _occupancy(r), res.occupancy.limited_by if res else "",
                      "cached" if r.cache_hit else f"{r.compile_seconds:.2f}")
    return table


def toolchain_table(rows: list[tuple[str, Candidate, bool]]) -> Grid:
    table = Grid("wgrad info: compilers, in the order they are tried")
    for name in ("target", "candidate", "kind", "version", "command", "status"):
        table.add_column(name, detail=name in ("kind", "command"))
    for target, c, chosen in rows:
        comp = c.compiler
        status = "[green]used[/]" if chosen else ("usable" if comp else f"[dim]{c.reason}[/]")
        table.add_row(target, c.name, comp.kind if comp else "", comp.version if comp else "",
                      " ".join(comp.argv0) if comp else "", status)
    return table
