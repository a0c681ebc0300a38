"""The compiler settings of one run (--hip-cc, --nvcc, --rocm-path, their variables) and the
compiler each target gets from them: its backend says where to look (compilers.py finds them)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from wgrad_cli.compile.builder import BuildBackend
from wgrad_cli.compile.compilers import Candidate, Compiler
from wgrad_cli.config.options import CompilerOptions
from wgrad_cli.errors import CompilerUnusable, ToolchainError


@dataclass(frozen=True)
class Toolchains:
    """The compiler settings of one run (flags and environment), resolved lazily per target by its backend."""

    shim_dir: Path
    backends: Mapping[str, BuildBackend]  # by target
    hip_cc: str | None = None
    nvcc: str | None = None
    rocm_path: str | None = None

    @classmethod
    def chosen(cls, options: CompilerOptions, cache_root: Path,
               backends: Mapping[str, BuildBackend]) -> Toolchains:
        """The command line's compilers; zig's lld shim lives in the cache."""
        return cls(cache_root / "zig-shim", backends, options.hip_cc, options.nvcc, options.rocm_path)

    def named(self, target: str) -> str | None:
        """The compiler given on the command line for this target, if any."""
        named: str | None = getattr(self, self.backends[target].compiler_field)
        return named

    def candidates(self, target: str) -> Iterator[Candidate]:
        return self.backends[target].candidates(self.named(target), self.rocm_path, self.shim_dir)

    def explicit(self, target: str) -> tuple[str, str] | None:
        """(option or variable, value) when the user named this target's compiler."""
        b = self.backends[target]
        flag, var, value = b.compiler_option, b.compiler_variable, self.named(target)
        if value:
            return flag, value
        return (f"${var}", os.environ[var]) if os.environ.get(var) else None

    def select(self, target: str, needs_hip_headers: bool) -> Compiler:
        """The first usable compiler for `target`; ToolchainError saying what is missing otherwise.

        A compiler the user named is the only one tried: when it does not work, that is an error
        (CompilerUnusable), never a quiet switch to another one."""
        named = self.explicit(target)
        if named:
            where = f"{named[0]} {named[1]}"
            found = next(self.candidates(target))
            if found.compiler is None:
                raise CompilerUnusable(f"{where}: {found.reason.removeprefix(named[1] + ' ')}; give a "
                                       f"working compiler, or drop {named[0]} to let wgrad find one (`wgrad "
                                       "info`)")
            if needs_hip_headers and not found.compiler.hip_headers:
                raise CompilerUnusable(f"{where}: this kernel includes the ROCm 7 HIP headers and this "
                                       "compiler has none; give hipcc, or add --rocm-path DIR")
            return found.compiler
        tried = []
        for c in self.candidates(target):
            if c.compiler and (c.compiler.hip_headers or not needs_hip_headers):
                return c.compiler
            tried.append(c)
        usable = [c.compiler for c in tried if c.compiler]
        if usable and needs_hip_headers:
            raise ToolchainError(
                f"{target}: this kernel includes the ROCm 7 HIP headers, but the compilers found "
                f"({', '.join(c.found_by for c in usable)}) have none: install ROCm 7 (hipcc), or pass "
                "--rocm-path DIR (or set ROCM_PATH) to a ROCm install for clang to use")
        how = self.backends[target].install_hint
        raise ToolchainError(f"{target}: no usable compiler "
                             f"({'; '.join(f'{c.name}: {c.reason}' for c in tried)}); {how}")
