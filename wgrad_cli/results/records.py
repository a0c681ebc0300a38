"""The records wgrad's commands write, as types: one schema, versioned, read back by every consumer.

A results document is the run's provenance (tool, version, commit, device, target, config hash,
seed, date, ...) and one record per (kernel, shape[, run]): a VerifyRow or a BenchRow; selfbench's
document has one Ratio per timing of the tool's own host side, build's one BuildRecord per (kernel,
target, shape), info's one CompilerRecord per compiler candidate. Files of
an older schema are upgraded as they are read (fields they lack take the defaults below); a
newer or unknown schema, or a record that lacks a field or has one of another kind, is one
error line naming the file and the record. This module imports nothing of the device stack, so
that show, compare, speedup and plot read results on any machine.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, replace
from functools import cached_property
from pathlib import Path
from collections.abc import Iterator
from typing import Any, TypeVar, Union

from wgrad_cli.compile.resources import Resources
from wgrad_cli.config.options import Criterion
from wgrad_cli.errors import WgradError

# 1: files before this module (no "schema" field in the oldest); 2: every record typed, bench
# rows with their flush kind, spin, sensor overlap and throttling, the compare gate's provenance;
# 3: modelled bench rows (`model`), which an older wgrad must not read as measured; 4: a modelled
# row's per-instruction profile (`model.profile`), a verify row's modelled time (`modelled`); 5: the
# clock a modelled kernel holds under the power limit (`model.held_ghz`, `modelled.held_ghz`); 6: a bench
# row's inputs (`inputs`), rotating copies (`rotating`), interleaved rounds and paired speed-ups (`paired`);
# what sets a modelled kernel's clock (`model.matrix_duty`, `model.toggle`), the launch's fixed time (cause
# `launch`, `model.profile.launch_us`) and the held-out band beside each time (`model.band`, `modelled.band`)
SCHEMA = 6
COMMANDS = ("verify", "bench")  # the documents of device runs, which compare, speedup and plot read
SHOWN = (*COMMANDS, "selfbench", "build", "info")  # every document show prints

T = TypeVar("T")
INLINE = {"inline": True}  # a field whose dataclass is written as its parent's own fields, in its place


class RecordError(ValueError):
    """A field missing or of another kind, said in words (where it is and what is wrong)."""


@dataclass(frozen=True)
class ShapeRef:
    """The shape a record was measured on, as the config named and routed it."""

    name: str
    M: int
    N: int
    K: int
    E: int
    routing: str

    def label(self) -> str:
        """As the tables print dims (abi.Dims.label)."""
        return f"{self.M} x {self.N} x {self.K}, {self.E}"


@dataclass(frozen=True)
class Errors:
    """A kernel's output against the reference (check.compare makes them, check.combine joins them)."""

    elements: int
    max_abs_error: float
    max_rel_row_error: float  # max |error| / max |reference| of the same grad_w row
    diff_norm: float  # ||out - ref|| over elements finite in both
    ref_norm: float  # ||ref|| over the same elements
    mismatches: int  # finite elements beyond tolerance, or NaN where the reference has none (or back)
    nans: int  # NaN outputs where the reference is not NaN
    unwritten: int  # outputs still holding the poison pattern
    ok: bool
    rel_frobenius: float  # ||out - ref|| / ||ref||


@dataclass(frozen=True)
class Summary:
    """The figures of one shape's timing samples (stats.summarize), written inline in its BenchRow."""

    samples: int
    median_ms: float
    min_ms: float
    p20_ms: float
    p80_ms: float
    mean_ms: float
    rel_stdev: float  # sample standard deviation / mean


@dataclass(frozen=True)
class Sampled:
    """numpy on sampled rows, where the whole output was checked against the device's reference."""

    overall: Errors
    experts: list[Errors]


@dataclass(frozen=True)
class Counters:
    """What a kernel's launch executed, where the device counts it (the emulator)."""

    waves: int
    instructions: dict[str, int]  # wave-instructions by class
    lane_instructions: int  # 64 per wave-instruction, the unit emulators are rated in
    bytes_loaded: int
    bytes_stored: int
    lds_out_of_range: int = 0  # LDS bytes read as 0 or dropped beyond the workgroup's allocation


@dataclass(frozen=True, kw_only=True)
class CodeObject:
    """Which code object ran (absent for baselines, which run torch's)."""

    code_object_sha256: str | None = None
    compiler: str | None = None
    flags: list[str] | None = None
    build_errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ModelledTime:
    """A verified kernel's time on the timing model (verify --model; docs/model.md): a modelled figure,
    never a measurement."""

    machine: str
    clock_ghz: float
    microseconds: float
    tflops: float
    limiter: str
    held_ghz: float | None = None  # the clock held under the power limit (None: the clock given)
    band: str | None = None  # schema 6: the model's held-out error band and validation version


@dataclass(frozen=True, kw_only=True)
class VerifyRow(CodeObject):
    index: int  # place in the unsharded run
    kernel: str
    target: str = ""
    shape: ShapeRef
    seed: int
    ok: bool
    reference: str  # how the output was checked, in words
    overall: Errors
    experts: list[Errors]
    sampled: Sampled | None = None
    counters: Counters | None = None  # what the launch executed, where the device counts it (the emulator)
    modelled: ModelledTime | None = None  # its time on the timing model, where verify --model asked for it
    shard: int | None = None  # in merged files, the shard that ran it


@dataclass(frozen=True)
class InstructionTime:
    """One instruction of a modelled kernel's code object: its wave-executions over the grid and the
    time it accounts for by cause (model/cu.py gives every SIMD clock one cause and one instruction)."""

    pc: int  # its offset in the code object
    text: str  # its disassembly (LLVM's where llvm-objdump was found, else the mnemonic)
    executions: int
    causes_us: dict[str, float]  # the causes it took time for


@dataclass(frozen=True)
class CodeRegion:
    """A stretch of the code object: a natural loop (from its first instruction to its last) or the
    straight code before, between or after the outermost loops."""

    name: str
    first_pc: int
    last_pc: int
    depth: int  # loops around it: 0 for straight code and outermost loops


@dataclass(frozen=True)
class Profile:
    """A modelled row's time by instruction: the instructions' times and the time no instruction
    took (SIMDs idle: their waves done, or the grid's tail; the bandwidth floors; the launch's fixed
    time, schema 6) sum to the row's."""

    instructions: list[InstructionTime]
    regions: list[CodeRegion]
    idle_us: float
    bandwidth_us: float
    launch_us: float = 0.0


@dataclass(frozen=True)
class ModelFigures:
    """How a modelled row's time came about (wgrad model, docs/model.md): the machine file and
    clock, the cause that took the most time, the time by cause (summing to the row's time), the
    floor the grid's MFMAs set, and which workgroups the emulator ran."""

    machine: str
    clock_ghz: float
    limiter: str
    causes_us: dict[str, float]
    mfma_floor_us: float
    workgroups: int
    classes: int  # workgroups with one instruction stream form a class, emulated once
    emulated: list[int]
    resident: int  # workgroups per CU at once
    hbm_bytes: int
    published_us: float | None = None  # a launch file's published measured time (the model's calibration)
    published_source: str | None = None  # where that time is published
    profile: Profile | None = None  # wgrad model --profile
    # the clock held under the power limit (None, before schema 5: the clock given)
    held_ghz: float | None = None
    matrix_duty: float | None = None  # schema 6: the matrix pipes' share of the time, and the share of MFMA
    toggle: float | None = None  # operand bits changing between MFMAs: what sets the clock held
    # the model's held-out error band and validation version ("" with figures changed)
    band: str | None = None


@dataclass(frozen=True)
class Inputs:
    """What a bench row's operands held: the pattern they were drawn from and, as drawn, the range
    of their e4m3 elements and of their block scales (powers of two)."""

    pattern: str  # random (problem.generate, from the seed) or a constant: problem.PATTERNS
    # random: each 32-block of N(0, 1) values times 2^k, |k| <= octaves; None for a constant
    octaves: int | None
    element_min: float
    element_max: float
    scale_min: int  # least block scale exponent (e8m0 - 127) of either operand
    scale_max: int

    def label(self) -> str:
        spread = f" 2^+-{self.octaves}" if self.octaves is not None else ""
        return (f"{self.pattern}{spread}: [{self.element_min:g}, {self.element_max:g}] "
                f"x 2^[{self.scale_min}, {self.scale_max}]")


@dataclass(frozen=True)
class Paired:
    """A kernel's speed-up over one baseline from interleaved rounds: per round, the baseline's
    time over the kernel's; the median and 20th-80th percentiles of those ratios."""

    baseline: str
    rounds: int
    median: float
    p20: float
    p80: float


@dataclass(frozen=True, kw_only=True)
class BenchRow(CodeObject):
    index: int  # place in the unsharded run; -1 for the calibration row
    kernel: str
    target: str = ""
    shape: ShapeRef
    seed: int
    run: int = 1
    cache: str  # cold or hot
    summary: Summary = field(metadata=INLINE)
    stop: str  # one of stopping.REASONS
    wall_seconds: float
    flops: int
    min_bytes: int
    tflops: float
    gbps: float
    pct_peak: float | None = None
    clock_mhz: int | None = None
    power_w: float | None = None
    power_capped: float | None = None  # share of sensor readings with the power limit holding the clock down
    calibration: bool = False
    baseline: bool = False
    batch: int = 1  # launches per sample (hot)
    grid: int | None = None
    flush_bytes: int = 0
    flush: str | None = None  # how the cache was flushed (options.FLUSHES); None in files before the choice
    # a spin kernel ahead of each sample hid the host's submission (multi-launch)
    spin_ms: float | None = None
    overlap: float | None = None  # share of sensor readings taken while the timed launch ran
    throttled: float | None = None  # share of samples whose overlapping reading saw the clock held down
    discarded: int = 0  # throttled samples left out of the figures (--discard-throttled)
    shard: int | None = None  # in merged files, the shard that ran it
    model: ModelFigures | None = None  # set: the time is modelled (wgrad model), not measured
    inputs: Inputs | None = None  # None in files before schema 6
    rotating: int | None = None  # cold without a flush: the copies of the inputs rotated per launch
    interleaved: bool = False  # sampled in rounds with the other paths of its shape (bench --interleave)
    paired: list[Paired] = field(default_factory=list)  # a kernel's interleaved speed-ups, one per baseline

    @property
    def modelled(self) -> bool:
        return self.model is not None


@dataclass(frozen=True)
class Ratio:
    """One selfbench timing: a measurement against a baseline of the same run, and its target."""

    name: str
    measured: float
    baseline: float
    unit: str
    target: float  # the ratio measured / baseline must stay below (or at, for <=) this
    inclusive: bool
    what: str
    informational: bool = False  # explains another row; no target of its own

    @property
    def ratio(self) -> float:
        return self.measured / self.baseline

    @property
    def ok(self) -> bool:
        return self.ratio <= self.target if self.inclusive else self.ratio < self.target


@dataclass(frozen=True, kw_only=True)
class BuildRecord:
    """One shape's build: the compile of its (kernel, target, dims), which shapes of the same dims share."""

    shape: ShapeRef
    kernel: str
    target: str
    ok: bool
    code_object: str | None
    compile_seconds: float
    cache_hit: bool
    compiler: str  # kind and version; blank where none was found
    resources: Resources | None
    errors: list[str]

    @property
    def job(self) -> tuple[str, str, int, int, int, int]:
        """What identifies the compile: kernel, target and the dims it was built for."""
        s = self.shape
        return self.kernel, self.target, s.M, s.N, s.K, s.E


@dataclass(frozen=True)
class CompilerRecord:
    """One compiler candidate of a target, in the order they are tried, and whether it is the one used."""

    target: str
    candidate: str
    usable: bool
    chosen: bool
    kind: str | None
    version: str | None
    command: list[str] | None
    reason: str  # why it is not usable; blank where it is


Row = Union[VerifyRow, BenchRow]


def _fail(where: str, what: str) -> RecordError:
    return RecordError(f"{where} {what}")


def _convert(hint: Any, value: Any, where: str) -> Any:
    """`value` read as `hint` (a dataclass, list, dict, optional or plain type); RecordError if it
    is not one."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        (inner,) = [o for o in options if o is not type(None)]
        return _convert(inner, value, where)
    if origin is list:
        if not isinstance(value, list):
            raise _fail(where, f"is {type(value).__name__}, not a list")
        (inner,) = typing.get_args(hint)
        return [_convert(inner, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _fail(where, f"is {type(value).__name__}, not an object")
        return value
    if is_dataclass(hint):
        return build(hint, value, where)  # type: ignore[arg-type]
    if hint is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if hint is Any or (isinstance(hint, type) and isinstance(value, hint)
                       and not (hint is int and isinstance(value, bool))):
        return value
    raise _fail(where, f"is {value!r}, not a {getattr(hint, '__name__', hint)}")


def build(cls: type[T], data: Any, where: str) -> T:
    """An instance of the dataclass `cls` from its JSON object: a field it lacks takes its default
    (how files of schema 1 are upgraded), or is an error where the field has none; fields it does
    not know are left out."""
    if not isinstance(data, dict):
        raise _fail(where, f"is {type(data).__name__}, not an object")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if f.metadata.get("inline"):
            kwargs[f.name] = build(hints[f.name], data, where)
        elif f.name in data:
            kwargs[f.name] = _convert(hints[f.name], data[f.name], f"{where}.{f.name}")
        elif f.default is MISSING and f.default_factory is MISSING:
            raise _fail(where, f"lacks {f.name}")
    return cls(**kwargs)


def to_json(record: Any) -> dict[str, Any]:
    """A record (or any of these dataclasses) as its JSON object."""
    out: dict[str, Any] = {}
    for f in fields(record):
        value = _json_value(getattr(record, f.name))
        if f.metadata.get("inline"):
            out.update(value)
        else:
            out[f.name] = value
    return out


def _json_value(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return to_json(value)
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


ROW_TYPES: dict[str,
                type[VerifyRow] | type[BenchRow] | type[Ratio] | type[BuildRecord] | type[CompilerRecord]] = {
    "verify": VerifyRow, "bench": BenchRow, "selfbench": Ratio, "build": BuildRecord, "info": CompilerRecord}


@dataclass(frozen=True)
class DeviceRef:
    """The device a file's run used, as far as its readers need it."""

    name: str | None = None


@dataclass(frozen=True)
class Peak:
    """What a device could do at best, as bench records it: the peak rates and last-level cache its
    backend knows, dense, no sparsity."""

    matrix_tflops: float  # dense rate for the kernel's inputs: MXFP8 (gfx950) or FP8 (Hopper)
    matrix_label: str
    bf16_tflops: float
    hbm_gbps: float
    llc_bytes: int  # the last-level cache a cold run must flush (L2 plus AMD's Infinity Cache)
    source: str


@dataclass(frozen=True)
class Provenance:
    """What a results file's environment says that its readers use, typed; None where the file does
    not say it (an older schema, or another command's document)."""

    host: str | None = None
    date: str | None = None
    cores: int | None = None  # selfbench's host
    config: str | None = None  # a shipped config's name, or the path of the config given
    config_sha256: str | None = None
    seed: int | None = None
    target: str | None = None
    device: DeviceRef | None = None
    shard: list[int] | None = None  # [i, n] of a --shard i/n run
    incomplete: str | None = None  # why a run stopped early, its rows measured before it saved
    peak: Peak | None = None  # bench's peak table entry for the device
    criterion: Criterion | None = None  # bench's stopping rule


@dataclass(frozen=True)
class Document:
    """A results file: its provenance and its records, typed."""

    command: str  # one of SHOWN
    records: list[Any]  # of the command's type in ROW_TYPES
    environment: dict[str, Any]  # everything else the file says, written back as is (merge)
    path: Path | None = None

    @cached_property
    def provenance(self) -> Provenance:
        """The environment's fields that readers use; the loader reads them first, so a file with one
        of another kind is refused as it is read."""
        return build(Provenance, self.environment, "environment")

    @property
    def device_name(self) -> str | None:
        return self.provenance.device.name if self.provenance.device else None

    @property
    def machine(self) -> str:
        """Where it ran, as a title says it: the device; for selfbench the host and its cores; for
        build and info, which run no kernel, the host."""
        host = self.provenance.host or "an unnamed host"
        if self.command == "selfbench":
            return f"{host} ({self.provenance.cores or '?'} cores)"
        return host if self.command in ("build", "info") else self.device_name or "an unnamed device"

    @property
    def bench_rows(self) -> list[BenchRow]:
        return [r for r in self.records if isinstance(r, BenchRow)]

    @property
    def verify_rows(self) -> list[VerifyRow]:
        return [r for r in self.records if isinstance(r, VerifyRow)]

    @property
    def ratios(self) -> list[Ratio]:
        return [r for r in self.records if isinstance(r, Ratio)]

    @property
    def builds(self) -> list[BuildRecord]:
        return [r for r in self.records if isinstance(r, BuildRecord)]

    @property
    def compilers(self) -> list[CompilerRecord]:
        return [r for r in self.records if isinstance(r, CompilerRecord)]

    @property
    def modelled(self) -> bool:
        """The file's times are modelled (wgrad model), not measured."""
        return any(r.modelled for r in self.bench_rows)


def document_from_json(doc: Any, where: str, commands: tuple[str, ...] = COMMANDS) -> Document:
    """A Document from a parsed results file; WgradError (one line) for anything wgrad cannot read."""
    if not (isinstance(doc, dict) and doc.get("tool") == "wgrad" and isinstance(doc.get("records"), list)):
        raise WgradError(f"{where}: not a wgrad results document (no tool: wgrad and records list)")
    schema = doc.get("schema", 1)
    if type(schema) is not int or not 1 <= schema <= SCHEMA:
        raise WgradError(f"{where}: results schema {schema!r}; this wgrad reads schemas 1 to "
                         f"{SCHEMA} (upgrade wgrad for a newer file)")
    command = doc.get("command")
    if command not in commands:
        raise WgradError(f"{where}: a {command!r} document; this needs one of {', '.join(commands)}")
    row = ROW_TYPES[command]
    try:
        records = [build(row, r, f"record {i}") for i, r in enumerate(doc["records"])]
    except RecordError as exc:
        raise WgradError(f"{where}: {exc}; give a results file wgrad wrote") from None
    environment = {k: v for k, v in doc.items() if k not in ("records", "command")}
    read = Document(command, records, environment)
    try:
        read.provenance
    except RecordError as exc:
        raise WgradError(f"{where}: {exc}; give a results file wgrad wrote") from None
    return read


def read_document(path: Path, commands: tuple[str, ...] = COMMANDS) -> Document:
    """A results file, typed: WgradError (one line) when it cannot be read, is not wgrad's, is of a
    schema this wgrad does not read, or has a record it cannot read."""
    try:
        doc = json.loads(path.read_text())
    except OSError as exc:
        raise WgradError(f"{path}: cannot read it ({exc.strerror}); give a results file wgrad wrote")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise WgradError(f"{path}: not JSON ({exc}); give a results file wgrad wrote")
    read = document_from_json(doc, str(path), commands)
    return replace(read, path=path)


def read_each(paths: list[Path], commands: tuple[str, ...],
              problems: list[str]) -> Iterator[tuple[Path, Document]]:
    """Each file of `paths` that reads, with its document, in order; one that does not adds its one
    line to `problems` (the caller raises them all together, with any of its own in between)."""
    for path in paths:
        try:
            yield path, read_document(path, commands)
        except WgradError as exc:
            problems += exc.lines
