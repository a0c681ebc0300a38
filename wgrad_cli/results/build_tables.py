"""The tables `wgrad build` and `wgrad info` print, from the records they write (records.py), so
that show prints a saved file as the command printed it. Nothing here imports a compiler or code
object reader."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape

from wgrad_cli.compile.resources import Resources
from wgrad_cli.config.targets import TARGETS, Target
from wgrad_cli.output.grid import Grid, plural
from wgrad_cli.results.records import BuildRecord, CompilerRecord


def registers_text(res: Resources, target: Target) -> str:
    """In the target's terms: AMD's VGPRs, AGPRs and SGPRs; NVIDIA's registers per thread."""
    return " ".join(f"{getattr(res, name)}{word}" for name, word in target.registers)


def occupancy_text(res: Resources, target: Target) -> str:
    """In the target's units: AMD's workgroups per CU and waves per SIMD; NVIDIA's blocks and warps per SM."""
    return ", ".join(f"{plural(getattr(res.occupancy, name), word)}/{unit}"
                     for name, word, unit in target.occupancy)


def build_table(records: Sequence[BuildRecord], title: str = "wgrad build") -> Grid:
    """One row per build (the records of shapes that share one, joined): registers (AMD: VGPR, AGPR,
    SGPR), LDS/shared and scratch bytes, spills, occupancy."""
    table = Grid(title)
    table.add_column("kernel")
    table.add_column("target")
    table.add_column("M x N x K, E", "right", detail=True)
    table.add_column("shapes")
    table.add_column("status")
    table.add_column("registers", "right")
    table.add_column("static LDS/smem B", "right")
    table.add_column("scratch B", "right", detail=True)
    table.add_column("spills", "right")
    table.add_column("occupancy")
    table.add_column("limited by", detail=True)
    table.add_column("compile s", "right", detail=True)
    builds: dict[tuple[str, str, int, int, int, int], list[BuildRecord]] = {}
    for record in records:
        builds.setdefault(record.job, []).append(record)
    for shared in builds.values():
        r, res = shared[0], shared[0].resources
        target = TARGETS.get(r.target)  # None: a target this wgrad does not know, from another's file
        figures = [f"{res.shared_bytes:,}", f"{res.scratch_bytes:,}", f"{res.spills:,}"] if res else [""] * 3
        table.add_row(escape(r.kernel), escape(r.target), r.shape.label(),
                      escape(", ".join(s.shape.name for s in shared)),
                      "[green]ok[/]" if r.ok else "[red]FAILED[/]",
                      registers_text(res, target) if res and target else "", *figures,
                      occupancy_text(res, target) if res and target else "",
                      res.occupancy.limited_by if res else "",
                      "cached" if r.cache_hit else f"{r.compile_seconds:.2f}")
    return table


def toolchain_table(records: Sequence[CompilerRecord],
                    title: str = "wgrad info: compilers, in the order they are tried") -> Grid:
    table = Grid(title)
    for name in ("target", "candidate", "kind", "version", "command", "status"):
        table.add_column(name, detail=name in ("kind", "command"))
    for c in records:
        status = "[green]used[/]" if c.chosen else ("usable" if c.usable else f"[dim]{escape(c.reason)}[/]")
        table.add_row(escape(c.target), escape(c.candidate), escape(c.kind or ""), escape(c.version or ""),
                      escape(" ".join(c.command or [])), status)
    return table
