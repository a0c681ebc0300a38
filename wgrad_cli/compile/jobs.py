"""`wgrad build`: one compile per (kernel, target, M/N/K/E define set), cached, in parallel."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wgrad_cli.compile.builder import BuildBackend
from wgrad_cli.compile.cache import Cache, Entry, sha256_text
from wgrad_cli.compile.codeobject import CodeObjectError
from wgrad_cli.compile.compilers import Compiler
from wgrad_cli.compile.resources import Resources
from wgrad_cli.compile.toolchain import Toolchains
from wgrad_cli.config.kernelspec import KernelSpec
from wgrad_cli.config.targets import TARGETS
from wgrad_cli.errors import CompilerUnusable, ToolchainError
from wgrad_cli.output.atomic import write_text
from wgrad_cli.problem.abi import Dims

ERROR_LINES = 12
COMMAND = "command: "  # the last line of a failed compile's errors


@dataclass(frozen=True)
class BuildJob:
    kernel: KernelSpec
    target: str
    dims: Dims

    @property
    def label(self) -> str:
        d = self.dims
        return f"{self.kernel.name}-{self.target}-M{d.M}-N{d.N}-K{d.K}-E{d.E}"


@dataclass
class BuildResult:
    job: BuildJob
    ok: bool = False
    code_object: Path | None = None
    compile_seconds: float = 0.0
    cache_hit: bool = False
    compiler: str = ""
    resources: Resources | None = None
    errors: list[str] = field(default_factory=list)


def failures(results: list[BuildResult]) -> list[tuple[str, list[str]]]:
    """The failed builds' errors, each distinct list once: (the builds it is of, its lines, with the
    first build's command line). A kernel that does not compile fails the same way for every shape,
    and says so once."""
    grouped: dict[tuple[str, str, tuple[str, ...]], list[BuildResult]] = {}
    for r in results:
        if r.errors:  # the command lines differ in the shape's defines
            same = tuple(line for line in r.errors if not line.startswith(COMMAND))
            grouped.setdefault((r.job.kernel.name, r.job.target, same), []).append(r)
    return [(rs[0].job.label if len(rs) == 1 else f"{kernel}-{target} ({len(rs)} shapes: "
             f"{', '.join(r.job.label.removeprefix(f'{kernel}-{target}-') for r in rs)})", rs[0].errors)
            for (kernel, target, _), rs in grouped.items()]


def limit_failures(res: Resources, limits: dict[str, int]) -> list[str]:
    """One message per resource figure above its configured limit."""
    out = []
    for name, limit in sorted(limits.items()):
        value = getattr(res, name)
        if value is not None and value > limit:
            out.append(f"{name} = {value} exceeds the limit {limit}")
    return out


def _first_errors(log: str) -> list[str]:
    lines = [line for line in log.splitlines() if line.strip()]
    errors = [i for i, line in enumerate(lines) if re.search(r"\berror\b", line, re.I)]
    start = errors[0] if errors else 0
    return lines[start:start + ERROR_LINES]


def _parse_depfile(text: str) -> list[Path]:
    """Files named in a make-style dependency file (the part after the first ':')."""
    body = text.replace("\\\n", " ").split(":", 1)[1] if ":" in text else ""
    return [Path(p.replace("\\ ", " ")) for p in re.findall(r"(?:\\ |\S)+", body)]


def _run(command: list[str]) -> tuple[int, str]:
    """Exit status and combined output; a program that cannot start is exit status 127."""
    try:
        proc = subprocess.run(command, capture_output=True)
    except OSError as exc:
        return 127, f"error: cannot run {command[0]}: {exc.strerror}"
    # a compiler quotes the source in its messages, whatever its bytes
    return proc.returncode, (proc.stdout + proc.stderr).decode(errors="replace")


def build_one(job: BuildJob, backend: BuildBackend, compiler: Compiler, cache: Cache, limits: dict[str, int],
              isa_dir: Path | None) -> BuildResult:
    """Compile (or find in the cache) one job with its target's backend,
    read its resources and check its limits."""
    assert job.kernel.source is not None
    source = job.kernel.source.resolve()

    def argv(out: Path, dep: Path, isa: bool = False) -> list[str]:
        return backend.compile_argv(compiler, source, out, dep, job.dims.defines(), job.kernel.include,
                                    job.kernel.flags[job.target], isa)

    result = BuildResult(job, compiler=f"{compiler.kind} {compiler.version}")
    # the launch's dynamic shared memory enters the occupancy figures stored with the entry
    base = sha256_text(compiler.identity, *argv(Path("@OUT"), Path("@DEP")),
                       f"dynamic_shared={job.kernel.dynamic_shared}")
    entry = cache.lookup(base)
    result.cache_hit = entry is not None
    if entry is None:
        built = _compile(job.target, source, argv, cache, base,
                         lambda code, log: {
                             "resources": backend.resources(code, log, job.kernel.symbol, job.kernel.block,
                                                            job.kernel.dynamic_shared).to_json()})
        if isinstance(built, list):
            result.errors = built
            return result
        entry = built
        result.compile_seconds = entry.meta["compile_seconds"]
    if isa_dir is not None:
        result.errors += _write_isa(backend, compiler, entry.code_object, isa_dir / job.label,
                                    lambda o: argv(o, Path(os.devnull), True))
    result.code_object = entry.code_object
    result.resources = Resources.from_json(entry.meta["resources"])
    result.errors += limit_failures(result.resources, limits)
    result.ok = not result.errors
    return result


def build_source(target: str, backend: BuildBackend, compiler: Compiler, source: Path,
                 includes: tuple[Path, ...], flags: tuple[str, ...], cache: Cache) -> Entry | list[str]:
    """A source built with its own flags alone (no shape defines, no ABI check: a launch file's),
    from the cache where it was built before; error lines if it fails."""
    def argv(out: Path, dep: Path) -> list[str]:
        return backend.compile_argv(compiler, source, out, dep, {}, includes, flags)

    base = sha256_text(compiler.identity, *argv(Path("@OUT"), Path("@DEP")))
    return cache.lookup(base) or _compile(target, source, argv, cache, base, lambda code, log: {})


def _compile(target: str, source: Path, argv: Callable[[Path, Path], list[str]], cache: Cache, base: str,
             describe: Callable[[bytes, str], dict[str, Any]]) -> Entry | list[str]:
    """Run the compiler in a scratch dir and commit the object to the cache with what `describe`
    reads of it (from the object and the build log); error lines if it fails."""
    suffix = TARGETS[target].suffix
    with tempfile.TemporaryDirectory(prefix="wgrad-build-") as tmp:
        out, dep = Path(tmp) / f"kernel{suffix}", Path(tmp) / "kernel.d"
        command = argv(out, dep)
        start = time.perf_counter()
        status, log = _run(command)
        seconds = time.perf_counter() - start
        if status != 0 or not out.exists():
            return [*_first_errors(log), f"{COMMAND}{shlex.join(command)}"]
        code = out.read_bytes()
        try:
            about = describe(code, log)
        except CodeObjectError as exc:
            return [str(exc)]
        deps = [p if p.is_absolute() else Path(tmp, p) for p in _parse_depfile(os.fsdecode(dep.read_bytes()))]
        deps = [p for p in deps if p.is_file() and not p.is_relative_to(tmp)]
        return cache.store(base, [source, *deps], code, suffix,
                           {"command": command, "compile_seconds": seconds, **about})


def _write_isa(backend: BuildBackend, compiler: Compiler, code_object: Path, dest: Path,
               asm_argv: Callable[[Path], list[str]]) -> list[str]:
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        disassemble = backend.disassemble_argv(compiler, code_object)
        command = disassemble or asm_argv(dest.with_suffix(backend.isa_suffix))
        status, log = _run(command)
        if status != 0:
            return [*_first_errors(log), f"{COMMAND}{shlex.join(command)}"]
        if disassemble:
            write_text(dest.with_suffix(".sass"), log)
    except OSError as exc:
        return [f"--isa {dest.parent}: cannot write there ({exc.strerror})"]
    return []


def resolve_compilers(jobs: list[BuildJob],
                      toolchains: Toolchains) -> dict[tuple[str, bool], Compiler | ToolchainError]:
    """The compiler of every (target, needs HIP headers) the jobs use, or why there is none."""
    compilers: dict[tuple[str, bool], Compiler | ToolchainError] = {}
    for job in jobs:
        key = (job.target, job.kernel.needs_hip_headers)
        if key not in compilers:
            try:
                compilers[key] = toolchains.select(*key)
            except CompilerUnusable:
                raise
            except ToolchainError as exc:
                compilers[key] = exc
    return compilers


def run_builds(jobs: list[BuildJob], toolchains: Toolchains, cache: Cache, limits: dict[str, int],
               workers: int, isa_dir: Path | None = None,
               on_done: Callable[[BuildResult], None] = lambda r: None) -> list[BuildResult]:
    """Build every job with `workers` compiles at once; failures are results, never exceptions
    (except a compiler the user named that does not work: CompilerUnusable)."""
    compilers = resolve_compilers(jobs, toolchains)

    def work(job: BuildJob) -> BuildResult:
        compiler = compilers[(job.target, job.kernel.needs_hip_headers)]
        if isinstance(compiler, ToolchainError):
            result = BuildResult(job, errors=compiler.lines)
        else:
            result = build_one(job, toolchains.backends[job.target], compiler, cache, limits, isa_dir)
        on_done(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(work, jobs))

