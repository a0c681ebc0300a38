"""Shape configs: YAML files naming kernels, targets, shapes, routing, seed and resource limits.

Loading validates everything at once and raises ConfigError with one line per problem,
`file:line: field: what is wrong; what is allowed`, so a user fixes a config in one pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wgrad_cli.config.kernelspec import KernelSpec, load_user_specs
from wgrad_cli.config.targets import TARGETS
from wgrad_cli.config.yamlsource import Key, Problems, load, not_text
from wgrad_cli.errors import ConfigError
from wgrad_cli.problem.abi import Dims, dims_problems, offsets_problems
from wgrad_cli.problem.routing import Routing

TOP_KEYS = {"description", "seed", "quantization", "kernels", "targets", "limits", "routing", "shapes"}
SHAPE_KEYS = {"name", "M", "N", "K", "E", "routing", "offsets", "note"}
LIMIT_KEYS = {"registers", "agprs", "sgprs", "shared_bytes", "scratch_bytes", "spills"}
QUANTIZATIONS = ("ocp", "upstream")
MAX_DIM = 2**31 - 1  # offsets are int32
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Shape:
    name: str
    dims: Dims
    routing: Routing


@dataclass(frozen=True)
class Config:
    path: Path
    seed: int
    quantization: str
    kernels: tuple[KernelSpec, ...]
    targets: tuple[str, ...]
    limits: dict[str, int]
    shapes: tuple[Shape, ...]

    def pairs(self) -> list[tuple[KernelSpec, str]]:
        """(kernel, target) pairs to build: every listed target the kernel supports."""
        return [(k, t) for k in self.kernels for t in self.targets if t in k.flags]


Overrides = dict[str, tuple[Path | None, tuple[Path, ...] | None]]


def load_config(path: Path, specs: dict[str, KernelSpec], overrides: Overrides | None = None,
                kernel_names: tuple[str, ...] | None = None) -> Config:
    """Read and validate `path`.

    `overrides` maps kernel name -> (source, include dirs) given on the command line;
    `kernel_names` replaces the config's kernel list (the CLI's --kernel).
    """
    specs = dict(specs)  # with the config's own {spec: FILE} kernels added
    data, p = load(path)
    if not isinstance(data, dict):
        p.add((), f"is a {type(data).__name__}",
              f"a config is a mapping with keys {', '.join(sorted(TOP_KEYS))}")
        p.raise_if_any()
    for key in sorted(data.keys() - TOP_KEYS, key=str):
        p.add((key,), "unknown key", f"allowed keys: {', '.join(sorted(TOP_KEYS))}")
    seed = data.get("seed", 0)
    if type(seed) is not int or seed < 0:
        p.add(("seed",), f"{seed!r} is not a non-negative integer", "seed is an integer >= 0")
    quant = data.get("quantization", "ocp")
    if quant not in QUANTIZATIONS:
        p.add(("quantization",), f"{quant!r} is unknown", f"one of {', '.join(QUANTIZATIONS)}")
    kernel_list = list(kernel_names) if kernel_names else data.get("kernels", ["reference"])
    kernels = _kernels(kernel_list, specs, overrides or {}, path.parent, p)
    targets = _targets(data.get("targets"), kernels, p, from_flags=bool(kernel_names))
    limits = _limits(data.get("limits", {}), p)
    default_routing = _routing(data.get("routing", "uniform"), ("routing",), None, p)
    shapes = _shapes(data.get("shapes"), default_routing, p)
    p.raise_if_any()
    return Config(path, seed, quant, kernels, targets, limits, shapes)


def _kernels(value: Any, specs: dict[str, KernelSpec], overrides: Overrides, base: Path,
             p: Problems) -> tuple[KernelSpec, ...]:
    if not isinstance(value, list) or not value:
        p.add(("kernels",), f"{value!r} is not a non-empty list",
              "kernels: [name, ...] or [{name, source, include}]")
        return ()
    out = []
    for i, item in enumerate(value):
        path: Key = ("kernels", i)
        entry = {"name": item} if isinstance(item, str) else item
        if isinstance(entry, dict) and "spec" in entry and "name" not in entry:
            spec = _user_spec(entry["spec"], path + ("spec",), base, specs, p)
            if spec is None:
                continue
            entry = {**entry, "name": spec.name}
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            p.add(path, f"{item!r} names no kernel",
                  "a kernel name, {spec: FILE}, or {name, source, include}")
            continue
        for key in sorted(entry.keys() - {"name", "spec", "source", "include"}, key=str):
            p.add(path + (key,), "unknown key", "a kernel entry has name (or spec), source and include")
        spec = specs.get(entry["name"])
        if spec is None:
            p.add(path + ("name",), f"unknown kernel {entry['name']!r}",
                  f"known kernels: {', '.join(sorted(specs))}; "
                  "or {spec: FILE}, your own kernel's spec file")
            continue
        source = _path(entry.get("source"), path + ("source",), base, p)
        include = None
        if "include" in entry:
            inc = entry["include"]
            if isinstance(inc, list) and all(isinstance(v, str) for v in inc):
                include = tuple(_resolve(v, base) for v in inc)
            else:
                p.add(path + ("include",), f"{inc!r} is not a list of paths", "include: [dir, ...]")
        flag_source, flag_include = overrides.get(spec.name, (None, None))
        spec = spec.with_paths(flag_source or source, flag_include if flag_include is not None else include)
        if spec.source is None:
            p.add(path + ("source",), f"kernel {spec.name!r} is external and no source was given",
                  "set source: in the config or pass --kernel-source PATH (your checkout of its source file)")
        elif not spec.source.is_file():
            p.add(path + ("source",), f"{spec.source} does not exist", "source must name an existing file")
        elif source_problem(spec.source):
            p.add(path + ("source",), f"{spec.source}: {source_problem(spec.source)}",
                  "a kernel source is UTF-8 text")
        for j, inc_dir in enumerate(spec.include):
            if not inc_dir.is_dir():
                p.add(path + ("include", j), f"{inc_dir} is not a directory",
                      "include dirs must exist (for upstream: your HipKittens checkout's include/)")
        out.append(spec)
    names = [k.name for k in out]
    for name in {n for n in names if names.count(n) > 1}:
        p.add(("kernels",), f"kernel {name!r} is listed twice", "list each kernel once")
    return tuple(out)


def _user_spec(value: Any, path: Key, base: Path, specs: dict[str, KernelSpec],
               p: Problems) -> KernelSpec | None:
    """The kernel of a config's `{spec: FILE}` entry (FILE relative to the config), added to `specs`;
    its file's problems join the config's."""
    file = _path(value, path, base, p)
    if file is None:
        if value is None:
            p.add(path, "is empty", "spec: a kernel spec file (relative to the config file)")
        return None
    known = [s for s in specs.values() if s.spec_file.resolve() == file.resolve()] if file.is_file() else []
    if known:
        return known[0]
    try:
        (spec,) = load_user_specs((file,), specs).values()
    except ConfigError as exc:
        p.found += exc.lines
        return None
    specs[spec.name] = spec
    return spec


def source_problem(source: Path) -> str | None:
    """Why a kernel source cannot be compiled as text (a binary or Latin-1 file), or None."""
    try:
        bad = not_text(source.read_bytes())
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    return f"line {bad[0]}: {bad[1]}" if bad else None


def _path(value: Any, path: Key, base: Path, p: Problems) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str):
        p.add(path, f"{value!r} is not a path", "a file path (relative to the config file)")
        return None
    return _resolve(value, base)


def _resolve(value: str, base: Path) -> Path:
    """A config's path: ~ expanded, relative ones taken from the config file's folder."""
    expanded = Path(value).expanduser()
    return expanded if expanded.is_absolute() else base / expanded


def _targets(value: Any, kernels: tuple[KernelSpec, ...], p: Problems, from_flags: bool) -> tuple[str, ...]:
    """The config's targets; with kernels chosen by --kernel, those the kernels cannot build are dropped."""
    if value is None:
        return tuple(t for t in TARGETS if any(t in k.flags for k in kernels))
    if not isinstance(value, list) or not value or not all(isinstance(t, str) for t in value):
        p.add(("targets",), f"{value!r} is not a non-empty list of targets",
              f"targets: a list of {', '.join(TARGETS)}")
        return ()
    built = [t for t in dict.fromkeys(value) if not kernels or any(t in k.flags for k in kernels)]
    for i, target in enumerate(value):
        if target not in TARGETS:
            p.add(("targets", i), f"unknown target {target!r}", f"targets are {', '.join(TARGETS)}")
        elif target not in built and not from_flags:
            p.add(("targets", i), f"no listed kernel builds for {target}",
                  "list a kernel whose spec has this target, or drop the target")
    if from_flags and kernels and not built:
        names = ", ".join(k.name for k in kernels)
        p.add(("targets",), f"--kernel {names} builds for none of {', '.join(value)}",
              "choose a kernel that builds for one of them")
    return tuple(built)


def _limits(value: Any, p: Problems) -> dict[str, int]:
    if not isinstance(value, dict):
        p.add(("limits",), f"{value!r} is not a mapping", f"limits: {{{', '.join(sorted(LIMIT_KEYS))}: int}}")
        return {}
    out = {}
    for key, limit in value.items():
        if key not in LIMIT_KEYS:
            p.add(("limits", key), "unknown limit", f"limits are {', '.join(sorted(LIMIT_KEYS))}")
        elif type(limit) is not int or limit < 0:
            p.add(("limits", key), f"{limit!r} is not a non-negative integer", "a limit is an integer >= 0")
        else:
            out[key] = limit
    return out


def _routing(value: Any, path: Key, E: int | None, p: Problems) -> Routing:
    entry = {"kind": value} if isinstance(value, str) else value
    allowed = ("uniform, zipf, empty, single, or {kind: zipf, s: 1.2} / {kind: empty, experts: n} / "
               "{kind: single, expert: e}")
    if not isinstance(entry, dict) or entry.get("kind") not in ("uniform", "zipf", "empty", "single"):
        p.add(path, f"{value!r} is not a routing", allowed)
        return Routing()
    params = {"uniform": set(), "zipf": {"s"}, "empty": {"experts"}, "single": {"expert"}}[entry["kind"]]
    for key in sorted(entry.keys() - params - {"kind"}, key=str):
        p.add(path + (key,), f"unknown key for {entry['kind']} routing",
              f"{entry['kind']} takes {sorted(params) or 'nothing'}")
    s = entry.get("s", 1.2) if "s" in params else 1.2
    if type(s) not in (int, float) or not 0 < s <= 10:
        p.add(path + ("s",), f"{s!r} is not a Zipf exponent", "s is a number in (0, 10]")
        s = 1.2
    empty = entry.get("experts", 1) if "experts" in params else 1
    if type(empty) is not int or empty < 1 or (E is not None and empty > E):
        p.add(path + ("experts",), f"{empty!r} is not a number of experts",
              f"experts is an integer in [1, E={E or 'E'}]")
        empty = 1
    expert = entry.get("expert") if "expert" in params else None
    if expert is not None and (type(expert) is not int or expert < 0 or (E is not None and expert >= E)):
        p.add(path + ("expert",), f"{expert!r} is not an expert index",
              f"expert is an integer in [0, E-1={E - 1 if E else 'E-1'}]")
        expert = None
    return Routing(entry["kind"], float(s), empty, expert)


def _shapes(value: Any, default: Routing, p: Problems) -> tuple[Shape, ...]:
    if not isinstance(value, list) or not value:
        why = "is missing" if value is None else ("is empty" if value == [] else f"{value!r} is not a list")
        p.add(("shapes",), why, "shapes is a non-empty list of {name, M, N, K, E}")
        return ()
    shapes: list[Shape] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(value):
        path: Key = ("shapes", i)
        if not isinstance(entry, dict):
            p.add(path, f"{entry!r} is not a mapping", "a shape is {name, M, N, K, E[, routing | offsets]}")
            continue
        for key in sorted(entry.keys() - SHAPE_KEYS, key=str):
            p.add(path + (key,), "unknown key", f"shape keys: {', '.join(sorted(SHAPE_KEYS))}")
        name = entry.get("name")
        if not isinstance(name, str) or not NAME.match(name):
            p.add(path + ("name",), "is missing" if name is None else f"{name!r} is not a shape name",
                  "a name of letters, digits, '.', '_', '-'")
        elif name in seen:
            p.add(path + ("name",), f"{name!r} is also the name of shapes[{seen[name]}]",
                  "shape names must be unique")
        else:
            seen[name] = i
        nums: dict[str, int] = {}
        for key in ("M", "N", "K", "E"):
            v = entry.get(key)
            if v is None:
                p.add(path + (key,), "is missing", "every shape needs M, N, K and E")
            elif type(v) is not int:
                p.add(path + (key,), f"{v!r} is not an integer", f"{key} is an integer")
            elif v > MAX_DIM:
                p.add(path + (key,), f"{v} is too large", f"{key} must fit in int32 (<= {MAX_DIM})")
            else:
                nums[key] = v
        if len(nums) < 4:
            continue
        dims = Dims(**nums)
        bad = dims_problems(dims)
        for key, why, allowed in bad:
            p.add(path + (key,), why, allowed)
        routing = _shape_routing(entry, path, dims, default, p) if not bad else default
        if isinstance(name, str):
            shapes.append(Shape(name, dims, routing))
    return tuple(shapes)


def _shape_routing(entry: dict[str, Any], path: Key, dims: Dims, default: Routing, p: Problems) -> Routing:
    if "offsets" in entry and "routing" in entry:
        p.add(path + ("offsets",), "is given together with routing",
              "give either routing or explicit offsets")
    if "offsets" not in entry:
        routing = (_routing(entry["routing"], path + ("routing",), dims.E, p)
                   if "routing" in entry else default)
        if routing.kind == "empty" and routing.empty > dims.E:
            p.add(path + ("routing",), f"{routing.empty} empty experts but E = {dims.E}",
                  "experts must be <= E")
        if routing.kind == "single" and routing.expert is not None and routing.expert >= dims.E:
            p.add(path + ("routing",), f"expert {routing.expert} but E = {dims.E}", "expert must be < E")
        return routing
    offsets = entry["offsets"]
    if not isinstance(offsets, list):
        p.add(path + ("offsets",), f"{offsets!r} is not a list",
              f"offsets is a list of E+1 = {dims.E + 1} integers")
        return default
    bad = [i for i, v in enumerate(offsets) if type(v) is not int]
    for i in bad:
        p.add(path + ("offsets", i), f"{offsets[i]!r} is not an integer", "offsets are int32 token indices")
    if bad:
        return default
    for index, why, allowed in offsets_problems(offsets, dims):
        p.add(path + ("offsets",) + (() if index is None else (index,)), why, allowed)
    return Routing("explicit", offsets=tuple(offsets))
