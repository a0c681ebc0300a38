"""Compilers: what wgrad knows of one it found (its kind, how to run it, what it says about itself),
and each place it looked, kept with the reason where nothing usable was there (for `wgrad info`).
Each target's backend says where to look and how to run them (backends/)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class Compiler:
    kind: str  # hipcc | clang | zig | nvcc
    argv0: tuple[str, ...]  # how to run it (zig's clang is `python -m ziglang clang`)
    version: str
    identity: str  # everything the compiler says about itself: part of every cache key
    rocm_path: str | None = None  # where HIP headers come from (hipcc finds its own)
    found_by: str = ""
    hip_headers: bool = False  # whether it compiles kernels that include the ROCm HIP headers


@dataclass(frozen=True)
class Candidate:
    name: str  # how it was looked for
    compiler: Compiler | None
    reason: str = ""  # why it cannot be used


@cache
def run_version(argv: tuple[str, ...]) -> str | None:
    """What `argv --version` prints, or None where it does not run."""
    try:
        out = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout + out.stderr if out.returncode == 0 else None


def clang_version(argv: tuple[str, ...]) -> tuple[int, str, str] | None:
    """(major, version, everything it printed) of a clang, or None where it is not one."""
    text = run_version(argv)
    m = re.search(r"clang version (\d+)\.(\S+)", text or "")
    return (int(m.group(1)), f"{m.group(1)}.{m.group(2)}", text.strip()) if m and text else None
