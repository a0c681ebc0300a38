"""Kernel specs: what wgrad must know to build and launch a kernel, read from the package's kernels/*.yaml
and from a user's own spec files (--spec, a spec beside --kernel-source, a config's `spec:` entry).

A spec names its source, include dirs, per-target flags, the symbol (a base name, looked up in
the code object, never a mangled string), and the launch geometry: `block` threads and
`dynamic_shared` bytes of dynamic shared memory per 1-D workgroup, and a grid that is either one
workgroup per `tile` of one expert's grad_w (`grid: tiles`, the ABI's: E * (N / tile_n) *
(K / tile_k)) or one per compute unit, at most one per tile and no more than the driver says run at
once (`grid: units`, for persistent kernels that loop over the tiles themselves: a workgroup that
waits for a second wave takes its whole share of the tiles late). `cluster` is the workgroups per
cluster a kernel compiles in (CUDA's __cluster_dims__): the grid is always a multiple of it.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from wgrad_cli.config.shipped import KERNELS_DIR
from wgrad_cli.config.targets import MAX_SHARED, TARGETS
from wgrad_cli.config.yamlsource import Key, Problems, load
from wgrad_cli.errors import ConfigError
from wgrad_cli.problem.abi import ALIGN, Dims

SPEC_KEYS = {"name", "description", "source", "include", "symbol", "launch",
             "targets", "needs_hip_headers", "limits"}
# What a size limit's expression may use: the shape's dimensions, integers, + - * // ** and max/min, and
# one comparison (< or <=) at the top
NAMES = ("M", "N", "K", "E")
OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
             ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}
COMPARISONS = {ast.Lt: operator.lt, ast.LtE: operator.le}
FUNCTIONS = {"max": max, "min": min}


class NotALimit(Exception):
    """A size limit's expression uses something NAMES, OPERATORS, COMPARISONS and FUNCTIONS do not allow."""


def _value(node: ast.expr, d: Dims) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name) and node.id in NAMES:
        return int(getattr(d, node.id))
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        left, right = _value(node.left, d), _value(node.right, d)
        if isinstance(node.op, ast.Pow) and not 0 <= right <= 64:
            raise NotALimit(ast.unparse(node))
        return int(OPERATORS[type(node.op)](left, right))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS
            and node.args and not node.keywords):
        return FUNCTIONS[node.func.id](_value(a, d) for a in node.args)
    raise NotALimit(ast.unparse(node))


@dataclass(frozen=True)
class Limit:
    """A shape the kernel cannot take, stated up front in its spec (`limits:`): `require`, an expression
    of M, N, K and E, holds for every shape it is built for, and `why` says what breaks otherwise."""

    require: str
    why: str

    def holds(self, d: Dims) -> bool:
        tree = ast.parse(self.require, mode="eval").body
        if not (isinstance(tree, ast.Compare) and len(tree.ops) == 1 and type(tree.ops[0]) in COMPARISONS):
            raise NotALimit(self.require)
        return bool(COMPARISONS[type(tree.ops[0])](_value(tree.left, d), _value(tree.comparators[0], d)))


@dataclass(frozen=True)
class KernelSpec:
    name: str
    description: str
    source: Path | None  # None: external kernel whose source the user must point at
    include: tuple[Path, ...]
    symbol: str
    tile: tuple[int, int]  # grad_w elements (N, K) per workgroup
    block: int  # threads per workgroup
    dynamic_shared: int  # bytes of dynamic shared memory (LDS) per workgroup, given at launch
    needs_hip_headers: bool
    spec_file: Path
    flags: dict[str, tuple[str, ...]] = field(hash=False)  # target name -> compiler flags
    persistent: bool = False  # grid: units (one workgroup per compute unit) instead of one per tile
    cluster: int = 1  # workgroups per cluster, compiled into the kernel
    limits: tuple[Limit, ...] = ()  # shapes it cannot take

    def beyond(self, d: Dims) -> list[Limit]:
        """The limits shape `d` breaks."""
        return [limit for limit in self.limits if not limit.holds(d)]

    def tiles(self, d: Dims) -> int:
        return d.E * (d.N // self.tile[0]) * (d.K // self.tile[1])

    def grid(self, d: Dims, units: int) -> int:
        """Workgroups to launch where `units` of them fill the device
        (its SMs or CUs, fewer if fewer run at once)."""
        if not self.persistent:
            return self.tiles(d)
        return min(self.tiles(d), max(units - units % self.cluster, self.cluster))

    def with_paths(self, source: Path | None, include: tuple[Path, ...] | None) -> KernelSpec:
        """The same kernel built from a user's checkout (source and include dirs overridden)."""
        return replace(self, source=source or self.source,
                       include=self.include if include is None else include)


def load_specs(directory: Path = KERNELS_DIR) -> dict[str, KernelSpec]:
    """Every kernels/*.yaml spec by name; raises ConfigError listing every problem."""
    return load_user_specs(tuple(sorted(directory.glob("*.yaml"))))


def load_user_specs(files: tuple[Path, ...],
                    known: dict[str, KernelSpec] | None = None) -> dict[str, KernelSpec]:
    """Spec files by name: the shipped ones, or a user's (--spec, a spec beside --kernel-source, a
    config's `spec:` entry), whose names must not be one of `known`'s; raises ConfigError with every
    problem of these files only, so that a bad user spec fails the command that uses it and nothing else."""
    specs: dict[str, KernelSpec] = {}
    all_problems: list[str] = []
    for file in dict.fromkeys(files):
        if not file.is_file():
            all_problems.append(f"{file}: no such file; give a kernel spec file (YAML, as the shipped "
                                "kernels/*.yaml)")
            continue
        data, problems = load(file)
        spec = _parse(data, file, problems)
        taken = (known or {}).get(spec.name) if spec else None
        if spec and taken:
            problems.add(("name",), f"'{spec.name}' is already the name of {taken.spec_file}",
                         "give your kernel a name of its own")
        elif spec and spec.name in specs:
            problems.add(("name",), f"'{spec.name}' is also the name of {specs[spec.name].spec_file}",
                         "names must be unique")
        elif spec:
            specs[spec.name] = spec
        all_problems += problems.found
    if all_problems:
        raise ConfigError(all_problems)
    return specs


def spec_beside(source: Path) -> Path | None:
    """The spec a kernel source carries beside it (mine.hip -> mine.yaml), or None."""
    beside = source.with_suffix(".yaml")
    return beside if beside.is_file() else None


def _parse(data: Any, file: Path, p: Problems) -> KernelSpec | None:
    if not isinstance(data, dict):
        p.add((), "is not a mapping", f"a kernel spec is a mapping with keys {sorted(SPEC_KEYS)}")
        return None
    for key in data.keys() - SPEC_KEYS:
        p.add((key,), "unknown key", f"allowed keys: {', '.join(sorted(SPEC_KEYS))}")
    for key in ("name", "symbol", "launch", "targets"):
        if key not in data:
            p.add((key,), "is missing", "every kernel spec needs name, symbol, launch and targets")
    name, symbol = data.get("name"), data.get("symbol")
    for key, value in (("name", name), ("symbol", symbol)):
        if value is not None and not (isinstance(value, str) and value.isidentifier()):
            p.add((key,), f"{value!r} is not an identifier", f"{key} must be a C identifier")
    source = data.get("source")
    if source is not None and not isinstance(source, str):
        p.add(("source",), f"{source!r} is not a path", "source is a path relative to the spec, or null")
    source_path = file.parent / source if isinstance(source, str) else None
    if source_path and not source_path.is_file():
        p.add(("source",), f"{source_path} does not exist", "source must name an existing file")
    include = _paths(data.get("include", []), ("include",), file.parent, p)
    tile, block, dynamic_shared, persistent, cluster = _launch(data.get("launch"), p)
    flags = _flags(data.get("targets"), p)
    for target in flags or {}:
        if dynamic_shared > TARGETS[target].shared_limit:
            p.add(("launch", "dynamic_shared"),
                  f"{dynamic_shared} bytes is more than a {target} workgroup can have",
                  f"at most {TARGETS[target].shared_limit} for {target} "
                  "(or build this kernel for other targets)")
    limits = _limits(data.get("limits", []), p)
    needs = data.get("needs_hip_headers", False)
    if not isinstance(needs, bool):
        p.add(("needs_hip_headers",), f"{needs!r} is not a boolean", "true or false")
    if p.found:
        return None
    assert isinstance(name, str) and isinstance(symbol, str) and tile and block and flags is not None
    return KernelSpec(name, str(data.get("description", "")), source_path, include, symbol, tile, block,
                      dynamic_shared, bool(needs), file, flags, persistent, cluster, limits)


def _paths(value: Any, path: Key, base: Path, p: Problems) -> tuple[Path, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        p.add(path, f"{value!r} is not a list of paths", "a list of directory paths")
        return ()
    return tuple(base / v for v in value)


LAUNCH_KEYS = {"tile", "block", "dynamic_shared", "grid", "cluster"}
GRIDS = {"tiles": False, "units": True}  # launch.grid -> persistent


def _launch(value: Any, p: Problems) -> tuple[tuple[int, int] | None, int | None, int, bool, int]:
    if not isinstance(value, dict):
        if value is not None:
            p.add(("launch",), f"{value!r} is not a mapping", "launch: {tile: [n, k], block: threads}")
        return None, None, 0, False, 1
    for key in value.keys() - LAUNCH_KEYS:
        p.add(("launch", key), "unknown key", f"launch has {', '.join(sorted(LAUNCH_KEYS))}")
    shared = value.get("dynamic_shared", 0)
    if type(shared) is not int or not 0 <= shared <= MAX_SHARED:
        p.add(("launch", "dynamic_shared"), f"{shared!r} is not a byte count",
              f"dynamic_shared is an integer in [0, {MAX_SHARED}] (bytes per workgroup)")
        shared = 0
    grid = value.get("grid", "tiles")
    if not isinstance(grid, str) or grid not in GRIDS:
        p.add(("launch", "grid"), f"{grid!r} is not a grid",
              "grid is tiles (one workgroup per tile) or units (one per compute unit, looping over tiles)")
        grid = "tiles"
    tile, block = value.get("tile"), value.get("block")
    tile_nk = None
    if isinstance(tile, list) and len(tile) == 2 and all(type(t) is int and t > 0 for t in tile):
        if ALIGN["N"] % tile[0] == 0 and ALIGN["K"] % tile[1] == 0:
            tile_nk = (tile[0], tile[1])
    if tile_nk is None:
        p.add(("launch", "tile"), f"{tile!r} is not two tile sizes dividing {ALIGN['N']} and {ALIGN['K']}",
              "tile: [n, k] with n dividing 256 and k dividing 256, so every legal shape tiles exactly")
    cluster = value.get("cluster", 1)
    # Every legal shape has a multiple of (256 / tile_n) * (256 / tile_k) tiles per expert.
    fewest = (ALIGN["N"] // tile_nk[0]) * (ALIGN["K"] // tile_nk[1]) if tile_nk else 1
    if type(cluster) is not int or not 1 <= cluster <= 8 or (tile_nk and fewest % cluster):
        p.add(("launch", "cluster"), f"{cluster!r} is not a cluster size for this tile",
              f"cluster is an integer in [1, 8] dividing {fewest}, the fewest tiles of an expert")
        cluster = 1
    if type(block) is not int or not 1 <= block <= 1024:
        p.add(("launch", "block"), f"{block!r} is not a thread count", "block is an integer in [1, 1024]")
        return None, None, shared, GRIDS[grid], cluster
    return tile_nk, block, shared, GRIDS[grid], cluster


def _limits(value: Any, p: Problems) -> tuple[Limit, ...]:
    allowed = ("limits is a list of {require: EXPRESSION, why: TEXT}, EXPRESSION comparing (< or <=) "
               "sizes made of M, N, K, E, integers, + - * // ** and max(), min(); "
               "e.g. {require: 256 * M < 2**31, why: ...}")
    if not isinstance(value, list):
        p.add(("limits",), f"{value!r} is not a list", allowed)
        return ()
    out = []
    for i, item in enumerate(value):
        if not (isinstance(item, dict) and item.keys() == {"require", "why"}
                and isinstance(item["require"], str) and isinstance(item["why"], str)):
            p.add(("limits", i), f"{item!r} is not a limit", allowed)
            continue
        limit = Limit(item["require"], item["why"])
        try:
            limit.holds(Dims(ALIGN["M"], ALIGN["N"], ALIGN["K"], 1))
        except (NotALimit, SyntaxError, ZeroDivisionError, ValueError, OverflowError):
            p.add(("limits", i, "require"), f"{limit.require!r} is not a size limit", allowed)
            continue
        out.append(limit)
    return tuple(out)


def _flags(value: Any, p: Problems) -> dict[str, tuple[str, ...]] | None:
    if not isinstance(value, dict) or not value:
        if value is not None:
            p.add(("targets",), f"{value!r} is not a mapping of targets",
                  f"targets: {{{', '.join(TARGETS)}: {{flags: [...]}}}}")
        return None
    out: dict[str, tuple[str, ...]] = {}
    for target, body in value.items():
        if target not in TARGETS:
            p.add(("targets", target), "unknown target", f"targets are {', '.join(TARGETS)}")
            continue
        flags = body.get("flags", []) if isinstance(body, dict) else None
        if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
            p.add(("targets", target, "flags"), f"{flags!r} is not a list of strings", "flags: [-O3, ...]")
            continue
        out[target] = tuple(flags)
    return out
