"""Atomic file writes: a reader sees the old file or the whole new one, never a half-written one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# read once, at import, while one thread runs: setting it to read it is not thread-safe
UMASK = _umask()


def write_bytes(path: Path, data: bytes) -> None:
    """`data` into `path`, mode 0666 less the umask like any new file (mkstemp's own is 0600). A path
    that is not a regular file (/dev/null, a pipe) is written in place: renaming over it would
    replace the device or pipe with a file."""
    if path.exists() and not path.is_file():
        with open(path, "wb") as f:
            f.write(data)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~UMASK)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode())


def set_aside(path: Path) -> Path | None:
    """Where an existing `path` was moved so that a new file can take its name without losing it
    (`x.json` -> `x.1.json`, the first number free), or None where there was none."""
    if not path.is_file():
        return None
    n = 1
    while (kept := path.with_name(f"{path.stem}.{n}{path.suffix}")).exists():
        n += 1
    os.replace(path, kept)
    return kept


def unwritable(option: str, path: Path, is_folder: bool, folder_ok: bool) -> str | None:
    """Why `option`'s output `path` (a file; with `folder_ok` perhaps a folder for several files, as
    `is_folder` says) cannot be written, in one line, before any work starts; None where it can.
    The folder written in must exist."""
    if is_folder and not folder_ok:
        return f"{option} {path}: is a folder; give a file's path"
    where = path if is_folder else path.parent
    if where.exists() and not where.is_dir():
        return f"{option} {path}: {where} is a file, not a folder; give a path in a folder"
    if not where.is_dir():
        return (f"{option} {path}: the folder {where} does not exist; "
                "create it first, or give a path in an existing folder")
    try:
        fd, probe = tempfile.mkstemp(dir=where, prefix=".wgrad-probe.")
    except OSError as exc:
        return f"{option} {path}: cannot write in {where} ({exc.strerror}); give a path in a writable folder"
    os.close(fd)
    os.unlink(probe)
    return None
