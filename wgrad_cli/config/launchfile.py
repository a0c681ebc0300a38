"""Launch files: one launch of a gfx950 code object whose arguments are not wgrad's ABI, read from
a small YAML file, for `wgrad model --launch` and `wgrad verify --device emu --launch`
(docs/launch-files.md).

A launch file names the code object (or a source and its flags), the kernel symbol, the grid and
block, the dynamic LDS and each argument in order: a buffer (its size, how it is filled, and
optionally the SHA-256 its bytes must have after the run) or a scalar of a given type. Arguments
sit one after another at their natural alignment in the kernel's argument segment, or at the
`offset` given. Every problem is one line: file:line: field: why; what is allowed.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wgrad_cli.config.yamlsource import Key, Problems, load

KEYS = {"name", "description", "code_object", "source", "flags", "include", "symbol", "grid", "block",
        "dynamic_lds", "args", "shape", "classes", "class_tolerance", "published"}
BUFFER_KEYS = {"buffer", "fill", "type", "values", "output", "expect_sha256", "offset"}
SCALAR_KEYS = {"scalar", "value", "offset"}
# a scalar's type: its struct format (little-endian) and whether it holds a float
SCALARS = {"i8": "b", "u8": "B", "i16": "h", "u16": "H", "i32": "i", "u32": "I", "i64": "q", "u64": "Q",
           "f32": "f", "f64": "d"}
FILLS = ("zero", "random", "values")
CLASSES = ("one", "each")
MAX_TOLERANCE = 0.05  # class_tolerance: more than a prologue's worth of difference is another class
POINTER_BYTES = 8
MAX_DIM = 2**31 - 1  # a grid or block dimension as the dispatch packet holds it
SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Buffer:
    """Device memory the kernel gets a pointer to: `size` bytes, filled with zeros, random bytes
    (from the run's seed) or `values` of `type` (the rest zero)."""

    size: int
    fill: str  # one of FILLS
    type: str = "u8"  # of `values`
    values: tuple[int | float, ...] = ()
    output: bool = False  # the kernel writes it: not an input the model counts as read
    expect_sha256: str | None = None  # verify: what its bytes must hash to after the run
    offset: int | None = None  # in the argument segment (None: the next one at 8-byte alignment)

    @property
    def width(self) -> int:
        return POINTER_BYTES

    def initial(self, random: bytes) -> bytes:
        """Its bytes before the launch; `random` is `size` random bytes, used by fill: random."""
        if self.fill == "random":
            return random
        head = b"".join(struct.pack("<" + SCALARS[self.type], v) for v in self.values)
        return head + bytes(self.size - len(head))


@dataclass(frozen=True)
class Scalar:
    type: str  # one of SCALARS
    value: int | float
    offset: int | None = None

    @property
    def width(self) -> int:
        return struct.calcsize(SCALARS[self.type])

    def encode(self) -> bytes:
        return struct.pack("<" + SCALARS[self.type], self.value)


Argument = Buffer | Scalar


@dataclass(frozen=True)
class Published:
    """A measured time of this launch someone published: the model's calibration (docs/model.md)."""

    us: float
    source: str


@dataclass(frozen=True)
class LaunchFile:
    path: Path
    name: str
    description: str
    code_object: Path | None  # a built code object, or None: built from `source`
    source: Path | None
    flags: tuple[str, ...]
    include: tuple[Path, ...]
    symbol: str  # the kernel's symbol, or its base name (extern "C" or Itanium-mangled)
    grid: tuple[int, int, int]  # workgroups
    block: tuple[int, int, int]  # work-items per workgroup
    dynamic_lds: int
    args: tuple[Argument, ...]
    shape: tuple[int, int, int] | None  # M, N, K of a GEMM: FLOPs = 2 M N K
    classes: str  # the model: "one" (every workgroup runs one instruction stream) or "each"
    published: Published | None
    # with classes: one, the share of wave-instructions the checking workgroup may differ by
    class_tolerance: float = 0.0

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def workgroups(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def flops(self) -> int:
        return 2 * self.shape[0] * self.shape[1] * self.shape[2] if self.shape else 0

    def layout(self) -> list[int]:
        """Each argument's offset in the argument segment."""
        at, out = 0, []
        for a in self.args:
            start = a.offset if a.offset is not None else -(-at // a.width) * a.width
            out.append(start)
            at = start + a.width
        return out


def _int(data: dict[str, Any], key: str, path: Key, problems: Problems, least: int,
         default: int | None = None, most: int | None = None) -> int | None:
    value = data.get(key, default)
    if value is None:
        problems.add(path + (key,), "missing", f"an integer >= {least}")
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < least \
            or (most is not None and value > most):
        bound = f"an integer from {least} to {most}" if most is not None else f"an integer >= {least}"
        problems.add(path + (key,), f"{value!r} is not allowed", bound)
        return None
    return int(value)


def _dims(data: dict[str, Any], key: str, problems: Problems) -> tuple[int, int, int]:
    """A grid or block: an integer or a list of 1 to 3 of them, each >= 1 (missing dimensions are 1)."""
    value = data.get(key)
    items = value if isinstance(value, list) else [value]
    ok = 1 <= len(items) <= 3 and all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_DIM
                                      for v in items)
    if value is None or not ok:
        problems.add((key,), "missing" if value is None else f"{value!r} is not allowed",
                     f"a positive integer or a list of 1 to 3 of them ([x, y, z]), each at most {MAX_DIM}")
        return 1, 1, 1
    dims = [*items, 1, 1][:3]
    return dims[0], dims[1], dims[2]


def _path(data: dict[str, Any], key: str, base: Path, problems: Problems) -> Path | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        problems.add((key,), f"{value!r} is not a path", "a file path, relative to the launch file's folder")
        return None
    path = (base / value).resolve()
    if not path.is_file():
        problems.add((key,), f"{path} is not a file", "a file path, relative to the launch file's folder")
    return path


def _strings(data: dict[str, Any], key: str, problems: Problems) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.add((key,), f"{value!r} is not allowed", "a list of strings")
        return ()
    return tuple(value)


def _buffer(a: dict[str, Any], path: Key, problems: Problems) -> Buffer | None:
    size = _int(a, "buffer", path, problems, 1)
    fill = a.get("fill", "zero")
    if fill not in FILLS:
        problems.add(path + ("fill",), f"{fill!r} is not a fill", f"one of {', '.join(FILLS)}")
    kind = a.get("type", "u8")
    if kind not in SCALARS:
        problems.add(path + ("type",), f"{kind!r} is not a type", f"one of {', '.join(SCALARS)}")
        kind = "u8"
    values = a.get("values", [])
    numbers = isinstance(values, list) \
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    if not numbers:
        problems.add(path + ("values",), f"{values!r} is not allowed", "a list of numbers")
        values = []
    elif (fill == "values") != bool(values):
        problems.add(path + ("values",), "given without fill: values" if values else "missing or empty",
                     "a list of numbers with fill: values, and only then")
    elif size is not None and len(values) * struct.calcsize(SCALARS[kind]) > size:
        problems.add(path + ("values",),
                     f"{len(values)} values of {kind} need more than the buffer's {size} bytes",
                     "fewer values or a larger buffer")
    else:
        for v in values:
            if _encodes(kind, v) is not None:
                problems.add(path + ("values",), f"{v!r} {_encodes(kind, v)}", f"a value a {kind} holds")
                break
    output = a.get("output", False)
    if not isinstance(output, bool):
        problems.add(path + ("output",), f"{output!r} is not allowed", "true or false")
    digest = a.get("expect_sha256")
    if digest is not None and not (isinstance(digest, str) and SHA256.fullmatch(digest)):
        problems.add(path + ("expect_sha256",), f"{digest!r} is not a SHA-256", "64 lower-case hex digits")
    offset = _int(a, "offset", path, problems, 0) if "offset" in a else None
    if size is None or fill not in FILLS:
        return None
    return Buffer(size, fill, kind, tuple(values), output is True, digest, offset)


def _encodes(kind: str, value: int | float) -> str | None:
    """Why `value` is no `kind` (None: it is)."""
    if kind[0] != "f" and not isinstance(value, int):
        return "is not an integer"
    try:
        struct.pack("<" + SCALARS[kind], value)
    except struct.error:
        return "is out of range"
    return None


def _scalar(a: dict[str, Any], path: Key, problems: Problems) -> Scalar | None:
    kind = a.get("scalar")
    if kind not in SCALARS:
        problems.add(path + ("scalar",), f"{kind!r} is not a type", f"one of {', '.join(SCALARS)}")
        return None
    value = a.get("value")
    if value is None or isinstance(value, bool) or not isinstance(value, int | float) \
            or _encodes(kind, value):
        why = "missing" if value is None else f"{value!r} {_encodes(kind, value) or 'is not a number'}"
        problems.add(path + ("value",), why, f"a number a {kind} holds")
        return None
    offset = _int(a, "offset", path, problems, 0) if "offset" in a else None
    return Scalar(kind, value, offset)


def _args(data: dict[str, Any], problems: Problems) -> tuple[Argument, ...]:
    items = data.get("args", [])
    if not isinstance(items, list):
        problems.add(("args",), "is not a list",
                     "a list of arguments in order, each {buffer: ...} or {scalar: ...}")
        return ()
    out: list[Argument] = []
    for i, a in enumerate(items):
        path: Key = ("args", i)
        if not isinstance(a, dict) or ("buffer" in a) == ("scalar" in a):
            problems.add(path, "is neither a buffer nor a scalar",
                         "a mapping with buffer: BYTES or scalar: TYPE")
            continue
        keys = BUFFER_KEYS if "buffer" in a else SCALAR_KEYS
        for key in sorted(set(a) - keys, key=str):
            problems.add(path + (key,), "is not a field of this argument",
                         f"one of {', '.join(sorted(keys))}")
        arg = _buffer(a, path, problems) if "buffer" in a else _scalar(a, path, problems)
        if arg is not None:
            out.append(arg)
    return tuple(out)


def _published(data: dict[str, Any], problems: Problems) -> Published | None:
    value = data.get("published")
    if value is None:
        return None
    us, source = (value.get("us"), value.get("source")) if isinstance(value, dict) else (None, None)
    if isinstance(us, bool) or not isinstance(us, int | float) or us <= 0 or not isinstance(source, str) \
            or not source:
        problems.add(("published",), f"{value!r} is not allowed",
                     "us: the published time in microseconds (> 0) and source: where it is published")
        return None
    return Published(float(us), source)


def load_launch(file: Path) -> LaunchFile:
    """The launch file; ConfigError with one line per problem."""
    data, problems = load(file)
    if not isinstance(data, dict):
        problems.add((), "is not a mapping", "a launch file is a YAML mapping (docs/launch-files.md)")
        problems.raise_if_any()
    for key in sorted(set(data) - KEYS, key=str):
        problems.add((key,), "is not a field of a launch file", f"one of {', '.join(sorted(KEYS))}")
    base = file.resolve().parent
    code_object, source = _path(data, "code_object", base, problems), _path(data, "source", base, problems)
    if ("code_object" in data) == ("source" in data):
        problems.add(("code_object",), "both given" if "source" in data else "missing",
                     "either code_object (a built gfx950 code object) or source (with flags), not both")
    if "code_object" in data and ("flags" in data or "include" in data):
        problems.add(("flags",), "given with a code_object", "flags and include go with source")
    symbol = data.get("symbol")
    if not isinstance(symbol, str) or not symbol:
        problems.add(("symbol",), "missing" if symbol is None else f"{symbol!r} is not a name",
                     "the kernel's symbol in the code object, or its name in the source")
    name = data.get("name", file.stem)
    if not isinstance(name, str) or not name:
        problems.add(("name",), f"{name!r} is not a name", "a short name for tables")
    description = data.get("description", "")
    if not isinstance(description, str):
        problems.add(("description",), f"{description!r} is not text", "a line of text")
    grid, block = _dims(data, "grid", problems), _dims(data, "block", problems)
    threads = block[0] * block[1] * block[2]
    if threads > 1024:
        problems.add(("block",), f"{threads} threads per workgroup", "at most 1,024 (gfx950)")
    lds = _int(data, "dynamic_lds", (), problems, 0, 0)
    shape = data.get("shape")
    if shape is not None and not (isinstance(shape, list) and len(shape) == 3
                                  and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1
                                          for v in shape)):
        problems.add(("shape",), f"{shape!r} is not allowed",
                     "[M, N, K] of the GEMM, each >= 1 (FLOPs = 2 M N K)")
        shape = None
    classes = data.get("classes", "one")
    if classes not in CLASSES:
        problems.add(("classes",), f"{classes!r} is not allowed",
                     "one (every workgroup runs one instruction stream; the model checks it on a second) or "
                     "each")
    tolerance = data.get("class_tolerance", 0.0)
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float) \
            or not 0 <= tolerance <= MAX_TOLERANCE:
        problems.add(("class_tolerance",), f"{tolerance!r} is not allowed",
                     f"a share of wave-instructions from 0 to {MAX_TOLERANCE} (e.g. 0.01 for 1%)")
        tolerance = 0.0
    launch = LaunchFile(file, str(name), str(description), code_object, source,
                        _strings(data, "flags", problems),
                        tuple((base / p).resolve() for p in _strings(data, "include", problems)), str(symbol),
                        grid, block, lds or 0, _args(data, problems), tuple(shape) if shape else None,
                        str(classes), _published(data, problems), float(tolerance))
    if not problems.found:  # the layout of arguments that are each well formed
        _check_layout(launch, problems)
    problems.raise_if_any()
    return launch


def _check_layout(launch: LaunchFile, problems: Problems) -> None:
    """Arguments at offsets that suit their size and do not overlap."""
    end = 0
    for i, (a, at) in enumerate(zip(launch.args, launch.layout())):
        if at % min(a.width, POINTER_BYTES):
            problems.add(("args", i, "offset"), f"{at} is not a multiple of {a.width}",
                         "an offset aligned to the argument's size")
        elif at < end:
            problems.add(("args", i, "offset"), f"{at} overlaps the argument before (which ends at {end})",
                         "an offset at or after the end of the argument before")
        end = at + a.width
