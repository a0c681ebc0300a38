"""Human tables (rich) and machine records (JSON) for the commands' results."""

from __future__ import annotations

import datetime
import hashlib
import json
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from wgrad_cli import __version__
from wgrad_cli.atomic import write_text
from wgrad_cli.build import BuildResult
from wgrad_cli.errors import WgradError
from wgrad_cli.records import SCHEMA
from wgrad_cli.grid import Grid, plural
from wgrad_cli.toolchain import Candidate

# soft_wrap: lines go out whole; a terminal wraps them itself, and pipes and CI logs keep them intact
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def cell(value: float | None, form: str) -> str:
    """A table cell for an optional number: blank where it was not measured."""
    return "" if value is None else format(value, form)


def progress(what: str, total: int, ticking: bool = True) -> Progress:
    """A transient progress bar on stderr with one task of `total` steps (progress.task_ids[0]);
    unless `ticking`, it has no refresh thread and redraws only on update(refresh=True)."""
    bar = Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("{task.description}"), console=err, transient=True, auto_refresh=ticking)
    bar.add_task("", total=total)
    return bar


def git_commit() -> str | None:
    """HEAD of the tool's checkout, with -dirty when tracked files differ from it."""
    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(["git", *args], capture_output=True, text=True, cwd=Path(__file__).parent, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    if git("ls-files", "--error-unmatch", "__init__.py") is None:  # installed outside a checkout (a wheel in a venv)
        return None
    head = git("rev-parse", "HEAD")
    return head and head + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def source_sha256() -> str:
    """One hash of the tool's own Python source and kernels: names the code that ran even where
    the checkout's git history is missing or stale (a copy sent to a GPU machine)."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted([*root.glob("**/*.py"), *root.glob("kernels/*")]):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def write_json(path: Path, command: str, records: list[dict[str, Any]], **extra: Any) -> None:
    """One document per run: tool, schema (records.py), version, commit, source hash, date, then one
    record per result."""
    doc = {"tool": "wgrad", "schema": SCHEMA, "version": __version__, "commit": git_commit(), "source_sha256": source_sha256(),
           "command": command,
           "argv": ["wgrad", *sys.argv[1:]], "host": platform.node(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), **extra,
           "records": records}
    try:
        write_text(path, json.dumps(doc, indent=1) + "\n")
    except OSError as exc:
        raise WgradError(f"--json {path}: cannot write it ({exc.strerror}); give a path in a writable folder")


def _occupancy(r: BuildResult) -> str:
    if not r.resources:
        return ""
    o = r.resources.occupancy
    if o.waves_per_simd is not None:
        return f"{plural(o.groups_per_unit, 'WG')}/CU, {plural(o.waves_per_simd, 'wave')}/SIMD"
    return f"{plural(o.groups_per_unit, 'block')}/SM, {plural(o.warps_per_sm or 0, 'warp')}/SM"


def _registers(r: BuildResult) -> str:
    res = r.resources
    if res is None:
        return ""
    return f"{res.registers}v {res.agprs}a {res.sgprs}s" if res.sgprs is not None else str(res.registers)


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
