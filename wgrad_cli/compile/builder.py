"""What compile/ asks of a target's backend: where its compilers are looked for, the command lines
that build and disassemble, and how a code object's resources are read. backends/ makes one object
per target; the commands pick them from backends/registry.py and hand them down (Toolchains)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from wgrad_cli.compile.compilers import Candidate, Compiler
from wgrad_cli.compile.resources import Resources


class BuildBackend(Protocol):
    @property
    def compiler_option(self) -> str:
        """The option that names this target's compiler."""

    @property
    def compiler_field(self) -> str:
        """The CompilerOptions field that holds it."""

    @property
    def compiler_variable(self) -> str:
        """The environment variable that does."""

    @property
    def install_hint(self) -> str:
        """What to install when no compiler is found."""

    @property
    def isa_suffix(self) -> str:
        """The ISA the compiler writes with compile_argv(isa=True)."""

    def candidates(self, named: str | None, rocm_path: str | None, shim_dir: Path) -> Iterator[Candidate]:
        """Every compiler looked for, in the order they are preferred (lazily)."""

    def compile_argv(self, compiler: Compiler, source: Path, output: Path, depfile: Path,
                     defines: dict[str, int], includes: tuple[Path, ...], flags: tuple[str, ...],
                     isa: bool = False) -> list[str]:
        """The full command that builds `source` into `output` (assembly text when `isa`)."""

    def disassemble_argv(self, compiler: Compiler, code_object: Path) -> list[str] | None:
        """A command printing a code object's machine code, or None: compile_argv(isa=True) gives it."""

    def resources(self, data: bytes, build_log: str, base: str, block: int, dynamic_shared: int) -> Resources:
        """The kernel's registers, LDS/shared memory, scratch, spills and occupancy."""
