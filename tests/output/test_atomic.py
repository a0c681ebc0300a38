"""Atomic writes: a reader sees the old file or the whole new one; a path that is no regular file
(a device such as /dev/null, a pipe) is written in place, never replaced by a file."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

from wgrad_cli.output.atomic import write_text


def test_a_file_is_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text("old")
    write_text(path, "new")
    assert path.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_a_pipe_is_written_through_not_replaced(tmp_path: Path) -> None:
    """What `--json /dev/null` or a named pipe asks for: the bytes go to the reader, and the pipe
    is still a pipe afterwards (renaming a file over it, as for a regular file, would leave a file
    where /dev/null was)."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(pipe.read_text()))
    reader.start()
    write_text(pipe, "through")
    reader.join(timeout=10)
    assert got == ["through"] and stat.S_ISFIFO(os.stat(pipe).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]
