"""The code object cache on its own: keys follow contents, entries are checked before use."""

from __future__ import annotations

import json
import os
from pathlib import Path

from wgrad_cli.compile.cache import Cache


def setup(tmp_path: Path) -> tuple[Cache, Path, Path]:
    src, header = tmp_path / "k.cu", tmp_path / "k.h"
    src.write_text("source 1")
    header.write_text("header 1")
    return Cache(tmp_path / "cache"), src, header


def test_store_then_lookup(tmp_path: Path) -> None:
    cache, src, header = setup(tmp_path)
    assert cache.lookup("base") is None
    stored = cache.store("base", [src, header], b"\x7fELF object", ".hsaco", {"resources": {"x": 1}})
    found = cache.lookup("base")
    assert found == stored and found.code_object.read_bytes() == b"\x7fELF object"
    assert found.meta["resources"] == {"x": 1} and found.code_object.suffix == ".hsaco"
    assert cache.lookup("other base") is None


def test_content_not_time_decides(tmp_path: Path) -> None:
    cache, src, header = setup(tmp_path)
    stored = cache.store("base", [src, header], b"one", ".o", {})
    os.utime(header, ns=(1, 1))  # touched, same content: still a hit, and the new stat is remembered
    assert cache.lookup("base") == stored
    assert json.loads((tmp_path / "cache/manifests/base.json").read_text())["deps"][1][2] == 1
    header.write_text("header 2")
    assert cache.lookup("base") is None
    two = cache.store("base", [src, header], b"two", ".o", {})
    header.write_text("header 1")  # back: the first entry is found again
    assert cache.lookup("base") == stored and two.key != stored.key
    header.unlink()
    assert cache.lookup("base") is None


def test_damaged_entries_are_misses(tmp_path: Path) -> None:
    cache, src, header = setup(tmp_path)
    stored = cache.store("base", [src], b"object bytes", ".o", {})
    stored.code_object.write_bytes(b"object by")  # truncated
    assert cache.lookup("base") is None
    cache.store("base", [src], b"object bytes", ".o", {})
    (tmp_path / "cache/manifests/base.json").write_text("")
    assert cache.lookup("base") is None


def test_atomic_writes_leave_no_temporaries(tmp_path: Path) -> None:
    cache, src, header = setup(tmp_path)
    cache.store("base", [src, header], b"x", ".o", {})
    leftovers = [p for p in (tmp_path / "cache").rglob("*") if p.name.startswith(".") or p.suffix == ".tmp"]
    assert leftovers == []
