"""Differential testing of the emulator against the host CPU: generated programs (fuzzgen) built
by clang-22 for x86-64 (run natively through ctypes) and for gfx950 (run on the emulator), every
lane's checksum and every atomic total compared bit for bit.

Many programs share one compilation unit, so a batch costs two compiler runs. A mismatch is
reduced (statements deleted, expressions replaced by constants or sub-expressions, while the
mismatch persists) and printed with its seed and optimisation level.

    python tests/emu/fuzzrun.py --count 10000 --opt 0,1,3        # a campaign
    python tests/emu/fuzzrun.py --seed 1234 --opt 3 --show        # one program, its source and verdict
"""

from __future__ import annotations

import _ctypes
import argparse
import contextlib
import ctypes
import hashlib
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from emukernels import run  # noqa: E402
from fuzzgen import (  # noqa: E402
    ATOM_OPS,
    ATOM_SLOTS,
    IN_WORDS,
    PRELUDE,
    Expr,
    Features,
    Func,
    Program,
    Stage,
    Stmt,
    generate,
)

from wgrad_cli.config.options import HIP_STACK_CAP
from wgrad_cli.emu.device import EmuRuntime  # noqa: E402
from wgrad_cli.errors import DriverError, EmulatorBug, LaunchStopped  # noqa: E402

CLANG, LLD = "clang-22", "ld.lld-22"  # one compiler for both sides: the oracle's premise
COMMON = ("-std=c++20", "-ffp-contract=off", "-fno-fast-math", "-w")
HOST = (CLANG, "-x", "c++", *COMMON, "-O1", "-fPIC", "-shared")
DEVICE = (CLANG, "-x", "hip", *COMMON, "--offload-arch=gfx950", "--offload-device-only",
          "--no-gpu-bundle-output", "-nogpuinc", "-nogpulib", "-c")
# what the emulator says when it declines a kernel, as opposed to a fault of the kernel
REFUSALS = ("is not implemented", "dynamic stack", "cannot load", "cannot decode", "does not support")
_CACHE = Path(tempfile.gettempdir()) / "wgrad-fuzz"
HANG_SECONDS = 60
# a second value for the VGPRs and AGPRs a launch leaves undefined (the emulator's default is 0)
REGISTER_FILL = 0x5A5A_A5A5


@dataclass(frozen=True)
class Config:
    """How programs are built: the optimisation level, what they may contain, and whether every
    call is inlined (FUZZ_NO_CALLS: the emulator cannot run -O0's calls without a dynamic stack)."""

    opt: int
    features: Features = Features()
    inline_all: bool = False
    extra: tuple[str, ...] = ()  # more device compiler flags
    codegen_O0: bool = False  # the IR optimised at `opt`, machine code from the backend at -O0 (tells a
    # backend miscompile from an emulator bug: the same program, other instructions)

    def flags(self) -> tuple[str, ...]:
        return (f"-O{self.opt}", *(("-DFUZZ_NO_CALLS",) if self.inline_all else ()), *self.extra)

    def describe(self) -> str:
        return " ".join(self.flags()[: 2 if self.inline_all else 1] + self.extra) \
            + (" (codegen -O0)" if self.codegen_O0 else "")


@dataclass
class Verdict:
    seed: int
    status: str  # ok, wrong, fault, hang, refused, crash (the emulator's own error), or undefined: a
    # wrong result or fault that changes with the registers a launch leaves undefined (the machine
    # code reads them, which the compiler must not do for a well-defined program)
    detail: str = ""


@dataclass
class Buffers:
    """One program's arguments: the input words, the per-lane output and the two atomic buffers."""

    inp: np.ndarray
    out: np.ndarray
    a32: np.ndarray
    a64: np.ndarray

    def copy(self) -> Buffers:
        return Buffers(self.inp.copy(), self.out.copy(), self.a32.copy(), self.a64.copy())


def inputs(seed: int, lanes: int) -> Buffers:
    """Input words drawn from edge values of every type (zeros, extremes, NaN, infinities,
    denormals) and random bits."""
    rng = np.random.default_rng(seed)
    special = np.array([0, 1, 2, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0x3F800000, 0xBF800000, 0x7F800000,
                        0xFF800000, 0x7FC00000, 0x00000001, 0x807FFFFF, 0x00800000, 0x4B800001, 0x3FF00000,
                        0xFFEFFFFF, 255, 256, 0xFFFF, 31, 32, 63, 64], dtype=np.uint32)
    words = rng.integers(0, 1 << 32, IN_WORDS, dtype=np.uint64).astype(np.uint32)
    pick = rng.random(IN_WORDS)
    words[pick < 0.25] = rng.choice(special, int((pick < 0.25).sum()))
    small = (pick >= 0.25) & (pick < 0.45)
    words[small] = rng.integers(-20, 20, int(small.sum())).astype(np.uint32)
    floats = (pick >= 0.45) & (pick < 0.6)
    words[floats] = rng.standard_normal(int(floats.sum())).astype(np.float32).view(np.uint32)
    a32 = rng.integers(0, 1 << 32, ATOM_SLOTS * len(ATOM_OPS), dtype=np.uint64).astype(np.uint32)
    a64 = rng.integers(0, 1 << 63, ATOM_SLOTS * len(ATOM_OPS), dtype=np.uint64) * 2 + 1
    return Buffers(words, np.full(lanes, 0xDEADBEEFCAFEF00D, dtype=np.uint64), a32, a64)


def need_clang() -> None:
    """Skip the calling test where clang-22 (both targets) is not installed."""
    import pytest  # only the tests need it

    if shutil.which(CLANG) is None:
        pytest.skip(f"{CLANG} is not installed (Debian: apt-get install clang-22 lld-22)")


def handwritten(name: str, body: str, stages: tuple[str, ...] = (), helpers: str = "", block: int = 64,
                grid: int = 1, seed: int = 1) -> Program:
    """A program written by hand for a regression test: `helpers` (C++ at file scope), one function
    with `body` (over lane, wg, gid and in; returns u64) and the kernel stages named after it."""
    f = Func(f"{name}_t0", [], [Stmt(f"u32 gid = wg * {block}u + lane; (void)gid;"), Stmt(body)],
             noinline=False)
    kinds = [Stage("call", func=f.name)] + [Stage(k, 5, 3, "add") for k in stages]
    return Program(seed, name, block, grid, [helpers] if helpers else [], [f], kinds)


def source(programs: list[Program]) -> str:
    return PRELUDE + "".join(p.render() for p in programs)


def _build(text: str, argv: tuple[str, ...], suffix: str) -> Path:
    """clang's output for `text`, cached by content and command; CalledProcessError on failure."""
    key = hashlib.sha256((text + " ".join(argv)).encode()).hexdigest()[:24]
    out = _CACHE / f"{key}{suffix}"
    if not out.exists():
        _CACHE.mkdir(parents=True, exist_ok=True)
        src = _CACHE / f"{key}.{os.getpid()}.cpp"  # campaigns may build the same unit at once
        src.write_text(text)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        subprocess.run([*argv, str(src), "-o", str(tmp)], check=True, capture_output=True, text=True)
        tmp.replace(out)
        src.unlink()
    return out


@contextlib.contextmanager
def host_library(text: str) -> Iterator[ctypes.CDLL]:
    """The host build of `text`, loaded afresh: dlopen of a path already loaded returns that library,
    file-scope variables and all, so a second check of the same unit (another optimisation level,
    a reducer candidate) would start from the first run's globals. A private copy is loaded and
    closed after use."""
    with tempfile.TemporaryDirectory() as tmp:
        private = Path(tmp) / "host.so"
        shutil.copyfile(_build(text, HOST, ".so"), private)
        lib = ctypes.CDLL(str(private))
        try:
            yield lib
        finally:
            _ctypes.dlclose(lib._handle)


def build_device(text: str, config: Config) -> bytes:
    if not config.codegen_O0:
        return _build(text, (*DEVICE, *config.flags()), ".hsaco").read_bytes()
    bitcode = _build(text, (*DEVICE, *config.flags(), "-emit-llvm"), ".bc")
    obj = bitcode.with_suffix(".O0.o")
    if not obj.exists():  # the optimised IR through the backend with its optimisations off, then linked
        subprocess.run([CLANG, "--target=amdgcn-amd-amdhsa", "-mcpu=gfx950", "-nogpulib", "-O0", "-c",
                        str(bitcode), "-o", str(obj)], check=True, capture_output=True)
    image = obj.with_suffix(".hsaco")
    if not image.exists():
        subprocess.run([LLD, "-shared", str(obj), "-o", str(image)], check=True, capture_output=True)
    return image.read_bytes()


def run_host(lib: ctypes.CDLL, p: Program, buffers: Buffers) -> Buffers:
    b = buffers.copy()
    getattr(lib, p.name)(*(a.ctypes.data_as(ctypes.c_void_p) for a in (b.inp, b.out, b.a32, b.a64)))
    return b


def run_device(image: bytes, rt: EmuRuntime, p: Program, buffers: Buffers) -> Buffers | Verdict:
    """The program's buffers after a launch on the emulator, or why there are none."""
    b = buffers.copy()
    try:
        inp, out, a32, a64 = run(image, [b.inp, b.out, b.a32, b.a64], p.grid, p.block, rt=rt, symbol=p.name)
    except LaunchStopped as exc:  # every generated program ends within milliseconds
        return Verdict(p.seed, "hang", str(exc))
    except DriverError as exc:
        line = str(exc)
        return Verdict(p.seed, "refused" if any(r in line for r in REFUSALS) else "fault", line)
    except EmulatorBug as exc:
        return Verdict(p.seed, "crash", "\n".join(exc.lines))
    except Exception:  # noqa: BLE001 - outside a launch too, any other exception is the emulator's bug
        return Verdict(p.seed, "crash", traceback.format_exc())
    return Buffers(inp, out, a32, a64)


def compare(p: Program, host: Buffers, dev: Buffers) -> Verdict:
    for what, h, d in (("lane", host.out, dev.out), ("atomic32 slot", host.a32, dev.a32),
                       ("atomic64 slot", host.a64, dev.a64)):
        bad = np.flatnonzero(h != d)
        if bad.size:
            i = int(bad[0])
            return Verdict(p.seed, "wrong",
                           f"{bad.size} wrong; {what} {i}: host {int(h[i]):#x}, emulator {int(d[i]):#x}")
    return Verdict(p.seed, "ok")


def check(programs: list[Program], config: Config, timeout: float = HANG_SECONDS) -> list[Verdict]:
    """Build the programs as one unit for both sides and compare each; a build failure is the
    generator's bug and raises."""
    text = source(programs)
    with host_library(text) as lib:
        return _check(programs, lib, build_device(text, config), config, timeout)


def _check(programs: list[Program], lib: ctypes.CDLL, image: bytes, config: Config,
           timeout: float) -> list[Verdict]:
    # -O0 frames of local arrays are big
    rt = EmuRuntime(workers=1, timeout=timeout, stack_bytes=HIP_STACK_CAP)
    filled = EmuRuntime(workers=1, timeout=timeout, stack_bytes=HIP_STACK_CAP, register_fill=REGISTER_FILL)
    verdicts = []
    for p in programs:
        buffers = inputs(p.seed, p.lanes)
        host = run_host(lib, p, buffers)
        dev = run_device(image, rt, p, buffers)
        verdict = dev if isinstance(dev, Verdict) else compare(p, host, dev)
        if verdict.status in ("wrong", "fault") and not _same(dev, run_device(image, filled, p, buffers)):
            verdict = Verdict(p.seed, "undefined",
                              f"{verdict.status} ({verdict.detail}); with the registers the launch "
                              f"leaves undefined holding {REGISTER_FILL:#x} instead of 0 the outcome changes")
        verdicts.append(verdict)
    return verdicts


def _same(a: Buffers | Verdict, b: Buffers | Verdict) -> bool:
    if isinstance(a, Verdict) or isinstance(b, Verdict):
        return a == b
    return all((x == y).all() for x, y in ((a.out, b.out), (a.a32, b.a32), (a.a64, b.a64)))


# --- reduction -----------------------------------------------------------------------------------
def _stmt_lists(p: Program) -> Iterator[list[Stmt]]:
    def walk(block: list[Stmt]) -> Iterator[list[Stmt]]:
        yield block
        for s in block:
            for b in s.blocks:
                yield from walk(b)
    for f in p.funcs:
        yield from walk(f.body)


def _expr_slots(p: Program) -> Iterator[tuple[list[Expr], int]]:
    def walk(slots: list[Expr]) -> Iterator[tuple[list[Expr], int]]:
        for i in range(len(slots)):
            yield slots, i
            yield from walk(slots[i].kids)
    for block in _stmt_lists(p):
        for s in block:
            yield from walk(s.exprs)


def _zero(ty: str) -> Expr:
    return Expr(ty, {"f32": "0.0f", "f64": "0.0"}.get(ty, f"({ty})0"))


def _status_apart(p: Program, config: Config) -> str | None:
    """The program's verdict status, checked in a forked child: a deletion can leave a loop without
    its step or an index without its bound, and the host side then crashes or spins; such a
    candidate (and one that does not compile) gets None."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)

    def child() -> None:
        try:
            send.send(check([p], config)[0].status)
        except subprocess.CalledProcessError:
            send.send(None)

    proc = ctx.Process(target=child, daemon=True)
    proc.start()
    send.close()
    try:
        status = receive.recv() if receive.poll(2 * HANG_SECONDS) else None
    except EOFError:  # the child died
        status = None
    proc.kill()
    proc.join()
    return status


def reduce(p: Program, config: Config, verdict: Verdict, seconds: float = 300.0) -> Program:
    """A smaller program with the same kind of failure: greedy deletion of stages and statements,
    then replacement of expressions by a same-typed sub-expression or zero, until nothing more
    goes or the time is up."""
    stop = time.monotonic() + seconds

    def same(candidate: Program) -> bool:
        return _status_apart(candidate, config) == verdict.status

    progress = True
    while progress and time.monotonic() < stop:
        progress = False
        for i in reversed(range(len(p.stages))):
            if len(p.stages) > 1 and time.monotonic() < stop:
                s = p.stages.pop(i)
                if same(p):
                    progress = True
                else:
                    p.stages.insert(i, s)
        for f in list(p.funcs):  # a function nothing calls any more
            others = " ".join([s.func for s in p.stages] + [g.render() for g in p.funcs if g is not f])
            if not re.search(rf"\b{f.name}\b", others):
                p.funcs.remove(f)
        for block in list(_stmt_lists(p)):
            for i in reversed(range(len(block))):
                if time.monotonic() > stop:
                    break
                if block[i].fmt.startswith(("return", "u32 gid")):
                    continue
                s = block.pop(i)
                if same(p):
                    progress = True
                else:
                    block.insert(i, s)
        for slots, i in list(_expr_slots(p)):
            if time.monotonic() > stop:
                break
            old = slots[i]
            for new in [k for k in old.kids if k.ty == old.ty and not old.bound] + [_zero(old.ty)]:
                if new.render() == old.render():
                    continue
                slots[i] = new
                if same(p):
                    progress = True
                    break
                slots[i] = old
    return p


# --- campaigns -----------------------------------------------------------------------------------
@dataclass
class Tally:
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)  # (config, status)
    failures: list[tuple[Config, Verdict]] = field(default_factory=list)
    refusals: Counter[str] = field(default_factory=Counter)

    def add(self, config: Config, v: Verdict) -> None:
        self.counts[(config.describe(), v.status)] += 1
        if v.status == "refused":  # the reason without the kernel's name and offset
            self.refusals[re.sub(r"^.*?: .*? at offset 0x[0-9a-f]+: ", "", v.detail)[:160]] += 1
        elif v.status != "ok":
            self.failures.append((config, v))

    def table(self) -> str:
        rows = sorted({c for c, _ in self.counts})
        kinds = ("ok", "wrong", "fault", "undefined", "hang", "crash", "refused")
        lines = [f"{'config':28} {'programs':>8}" + "".join(f" {k:>9}" for k in kinds)]
        for c in rows:
            n = [self.counts[(c, k)] for k in kinds]
            lines.append(f"{c:28} {sum(n):8}" + "".join(f" {x:9}" for x in n))
        lines += [f"refused ({n}): {why}" for why, n in self.refusals.most_common()]
        return "\n".join(lines)


def campaign(seeds: Sequence[int], configs: list[Config], batch: int, log: Callable[[str], None],
             timeout: float = HANG_SECONDS) -> Tally:
    tally = Tally()
    for start in range(0, len(seeds), batch):
        chunk = seeds[start: start + batch]
        for config in configs:
            programs = [generate(s, config.features) for s in chunk]
            for v in check(programs, config, timeout):
                tally.add(config, v)
                if v.status not in ("ok", "refused"):
                    log(f"seed {v.seed} {config.describe()}: {v.status}: {v.detail.strip().splitlines()[-1]}")
        log(f"seeds {seeds[0]}..{chunk[-1]} done")
    return tally


def features(text: str) -> Features:
    off = {f.strip() for f in text.split(",") if f.strip()}
    known = {"globals", "calls", "recursion", "shared", "atomics"}
    if off - known:
        raise SystemExit(f"unknown feature(s) {sorted(off - known)}; known: {sorted(known)}")
    return Features(globals_="globals" not in off, calls="calls" not in off, recursion="recursion" in off,
                    shared="shared" not in off, atomics="atomics" not in off)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=300, help="programs per optimisation level")
    ap.add_argument("--first", type=int, default=0, help="first seed")
    ap.add_argument("--seed", type=int, help="check this one seed only")
    ap.add_argument("--opt", default="0,1,3", help="optimisation levels, comma-separated")
    ap.add_argument("--without", default="", help="features left out, of globals,calls,shared,atomics")
    ap.add_argument("--recursion", action="store_true", help="add a recursive helper (a dynamic stack)")
    ap.add_argument("--inline-all-at-O0", action="store_true", help="-DFUZZ_NO_CALLS at -O0")
    ap.add_argument("--batch", type=int, default=40, help="programs per compilation unit")
    ap.add_argument("--show", action="store_true", help="print the program's source")
    ap.add_argument("--device-flag", action="append", default=[], help="a further gfx950 compiler flag")
    ap.add_argument("--seeds", help="check these seeds only, comma-separated")
    ap.add_argument("--codegen-O0", action="store_true",
                    help="optimise the IR at --opt, generate code at -O0")
    ap.add_argument("--reduce", type=float, default=300.0, help="seconds to reduce each failure (0: do not)")
    ap.add_argument("--timeout", type=float, default=HANG_SECONDS, help="seconds a launch may run")
    a = ap.parse_args()
    feats = features(a.without + (",recursion" if a.recursion else ""))
    try:
        opts = [int(o) for o in a.opt.split(",")]
    except ValueError:
        raise SystemExit(f"--opt {a.opt!r}: give levels such as 0,1,3") from None
    configs = [Config(o, feats, a.inline_all_at_O0 and o == 0, tuple(a.device_flag), a.codegen_O0)
               for o in opts]
    seeds: Sequence[int] = (range(a.seed, a.seed + 1) if a.seed is not None
                            else range(a.first, a.first + a.count))
    if a.seeds:
        seeds = [int(s) for s in a.seeds.split(",")]
    if a.show and a.seed is not None:
        print(source([generate(a.seed, feats)]))
    t0 = time.monotonic()
    tally = campaign(seeds, configs, a.batch, lambda line: print(line, flush=True), a.timeout)
    print(tally.table())
    print(f"{sum(tally.counts.values())} programs in {time.monotonic() - t0:.0f} s")
    for config, v in tally.failures[:20]:
        if a.reduce > 0 and v.status in ("wrong", "fault", "undefined", "crash", "hang"):
            small = reduce(generate(v.seed, config.features), config, v, a.reduce)
            print(f"--- seed {v.seed} {config.describe()}: {v.status}, reduced:\n{source([small])}")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
