"""Machine records (JSON): one document per run, naming the tool and the code that ran."""

from __future__ import annotations

import datetime
import hashlib
import json
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from rich.markup import escape

import wgrad_cli
from wgrad_cli import __version__
from wgrad_cli.config.shipped import kernel_files
from wgrad_cli.errors import WgradError
from wgrad_cli.output.atomic import set_aside, write_text
from wgrad_cli.output.console import err
from wgrad_cli.results.records import SCHEMA

PACKAGE = Path(wgrad_cli.__file__).resolve().parent  # the package's own folder, in a checkout or installed


def git_commit() -> str | None:
    """HEAD of the tool's checkout, with -dirty when tracked files differ from it."""
    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(["git", *args], capture_output=True, text=True, cwd=PACKAGE, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    # installed outside a checkout (a wheel in a venv)
    if git("ls-files", "--error-unmatch", "__init__.py") is None:
        return None
    head = git("rev-parse", "HEAD")
    return head and head + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def source_files() -> list[tuple[str, Path]]:
    """(name, path) of every file source_sha256 covers: the package's Python source and every kernel file."""
    root = PACKAGE
    files = [(str(p.relative_to(root)), p) for p in root.glob("**/*.py")]
    return sorted(files + [(f"kernels/{p.name}", p) for p in kernel_files()])


def source_sha256() -> str:
    """One hash of the tool's own Python source and kernels: names the code that ran even where
    the checkout's git history is missing or stale (a copy sent to a GPU machine)."""
    digest = hashlib.sha256()
    for name, path in source_files():
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def keep_old(path: Path) -> None:
    """A file already at `path` moved aside (NAME.1.json, ...) and said in one line,
    never replaced silently."""
    try:
        kept = set_aside(path)
    except OSError as exc:
        raise WgradError(f"{path}: exists and cannot be moved aside ({exc.strerror}); "
                         "give another path") from None
    if kept:
        err.print(escape(f"{path} existed: the old file is now {kept}"), highlight=False, soft_wrap=True)


def write_json(path: Path, command: str, records: list[dict[str, Any]], **extra: Any) -> None:
    """One document per run: tool, schema (records.py), version, commit, source hash, date, then one
    record per result."""
    doc = {"tool": "wgrad", "schema": SCHEMA, "version": __version__, "commit": git_commit(),
           "source_sha256": source_sha256(), "command": command,
           "argv": ["wgrad", *sys.argv[1:]], "host": platform.node(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), **extra,
           "records": records}
    keep_old(path)
    try:
        write_text(path, json.dumps(doc, indent=1) + "\n")
    except OSError as exc:
        raise WgradError(f"--json {path}: cannot write it ({exc.strerror}); give a path in a writable folder")
