"""The checkout as git knows it: the files it tracks, and a copy of them to run the README's
commands in without touching this one."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def tracked(folder: str = ".", new: bool = False) -> list[str]:
    """The tracked files under `folder`, as paths relative to the checkout, with `new` also those
    not yet added that git does not ignore; skipped outside git (an unpacked sdist has no index to
    tell committed files from a run's)."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout: which files are committed is unknown")
    others = ["--others", "--exclude-standard"] if new else []
    out = subprocess.run(["git", "ls-files", "-z", "--cached", *others, folder], cwd=REPO,
                         capture_output=True, text=True, check=True)
    return [path for path in out.stdout.split("\0") if path]


def copy_checkout(dest: Path) -> Path:
    """A copy of the files git tracks or would add, as they are in the work tree (uncommitted edits
    included), added to a git index of its own: what a fresh clone of this change would hold."""
    for path in tracked(new=True):
        source = REPO / path
        if source.is_file():  # a tracked file deleted in the work tree is not copied
            (dest / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / path)
    for git in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *git], cwd=dest, capture_output=True, check=True)
    return dest
