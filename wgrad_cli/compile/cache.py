"""A content-addressed cache of code objects, safe under concurrent builds.

A build's *base key* hashes the compiler's identity and its full command line (source path
included). A manifest per base key lists every file the compiler read (its own dependency
output) with size, mtime and sha256. The *full key* is the base key plus every file's hash, so
any earlier build of the same contents is found again (a header changed and changed back).
Lookup re-hashes only files whose size or mtime changed, so a warm check costs a few stats.

Objects are stored by content hash under objects/<full key>/, and meta.json (written last, with
the object's sha256) commits an entry: a missing or truncated object fails the check and is
rebuilt. Every write is atomic, so concurrent processes at worst both build the same entry.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wgrad_cli.errors import WgradError
from wgrad_cli.output.atomic import write_bytes, write_text


def sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def sha256_text(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def default_root() -> Path:
    base = os.environ.get("WGRAD_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "wgrad")
    return Path(base)


@dataclass(frozen=True)
class Entry:
    key: str
    code_object: Path
    meta: dict[str, Any]


@dataclass(frozen=True)
class Cache:
    root: Path

    @classmethod
    def writable(cls, root: Path | None) -> Cache:
        """The cache at `root` (None: default_root()), checked to be writable."""
        cache = cls(root or default_root())
        cache.check_writable()
        return cache

    def check_writable(self) -> None:
        """Fail early, with the reason, rather than in the middle of a parallel build."""
        try:
            (self.root / "objects").mkdir(parents=True, exist_ok=True)
            write_text(self.root / ".writable", "")
        except OSError as exc:
            raise WgradError(f"cache {self.root}: not writable ({exc.strerror}); pass --cache-dir DIR "
                             "or set WGRAD_CACHE_DIR to a writable folder")

    def _manifest(self, base: str) -> Path:
        return self.root / "manifests" / f"{base}.json"

    def lookup(self, base: str) -> Entry | None:
        """The entry built from exactly the files the compiler read last time, if still valid."""
        try:
            deps = json.loads(self._manifest(base).read_text())["deps"]
            now = []
            for path, size, mtime_ns, digest in deps:
                st = os.stat(path)
                if (st.st_size, st.st_mtime_ns) != (size, mtime_ns):
                    digest = sha256_file(Path(path))
                now.append([path, st.st_size, st.st_mtime_ns, digest])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        entry = self._entry(_full_key(base, now))
        if entry and now != deps:  # same contents, new stats: remember them so the next check is stats only
            write_text(self._manifest(base), json.dumps({"deps": now}))
        return entry

    def _entry(self, key: str) -> Entry | None:
        folder = self.root / "objects" / key
        try:
            meta = json.loads((folder / "meta.json").read_text())
            code = folder / meta["file"]
            if code.stat().st_size != meta["size"] or sha256_file(code) != meta["sha256"]:
                return None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return Entry(key, code, meta)

    def store(self, base: str, deps: list[Path], code: bytes, suffix: str, meta: dict[str, Any]) -> Entry:
        """Commit a fresh build: the object, then its meta, then the manifest that finds it."""
        records = []
        for dep in sorted(set(deps)):
            st = os.stat(dep)
            records.append([str(dep), st.st_size, st.st_mtime_ns, sha256_file(dep)])
        key = _full_key(base, records)
        digest = hashlib.sha256(code).hexdigest()
        folder = self.root / "objects" / key
        name = f"{digest[:16]}{suffix}"
        write_bytes(folder / name, code)
        meta = {**meta, "file": name, "size": len(code), "sha256": digest}
        write_text(folder / "meta.json", json.dumps(meta, indent=1))
        write_text(self._manifest(base), json.dumps({"deps": records}))
        return Entry(key, folder / name, meta)


def _full_key(base: str, deps: list[list[Any]]) -> str:
    return sha256_text(base, *(f"{path}:{digest}" for path, _, _, digest in deps))
