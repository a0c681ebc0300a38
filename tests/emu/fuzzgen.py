"""A generator of random, well-defined C++ programs for differential testing of the emulator.

One program is one gfx950 kernel and its host twin, rendered from the same tree: helper
functions (expression trees over i32/u32/i64/u64/f32/f64, loops with data-dependent trip counts,
divergent branches and early returns, switches, local arrays that spill to scratch, non-inlined
calls, file-scope variables) and a list of kernel stages (compute, an LDS round trip across a
barrier, an LDS atomic, a wave shuffle, global atomics, a divergent exit). The device runs the
stages once per work-item; the host runs each stage over every lane of a workgroup in turn, which
is what a barrier allows, and models the wave-level builtins on its copy of the wave.

Nothing is undefined: signed + - * wrap through the unsigned type (C++20 makes the conversion
back modular), shift counts are masked, division guards zero and INT_MIN / -1, float-to-int
conversions are range-checked, and float results enter the checksum through a NaN-canonicalising
bit cast (NaN payloads differ between x86 and AMD; every other bit must match). Only operations
IEEE 754 defines exactly are used (+ - * / sqrt fma, rounding to integral, ldexp, copysign).

Everything comes from one integer seed, so a program is reproduced from its seed and options.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field

INTS = ("i32", "u32", "i64", "u64")
FLOATS = ("f32", "f64")
TYPES = INTS + FLOATS
UNSIGNED = {"i32": "u32", "u32": "u32", "i64": "u64", "u64": "u64"}
BITS = {"i32": 32, "u32": 32, "i64": 64, "u64": 64, "f32": 32, "f64": 64}
NARROW = {"u8": "u32", "i8": "i32", "u16": "u32", "i16": "i32"}  # array element types, and what they widen to
CTYPE = {"i32": "i32", "u32": "u32", "i64": "i64", "u64": "u64", "f32": "float", "f64": "double",
         **{t: t for t in NARROW}}
IN_WORDS = 1024  # the input buffer every kernel reads, u32 words (a power of two: indices are masked)
ATOM_OPS = ("add", "xor", "or", "and", "min", "max")
ATOM_SLOTS = 16  # words of each global-atomics buffer per operation: different operations do not commute

PRELUDE = r"""
typedef signed char i8; typedef unsigned char u8; typedef short i16; typedef unsigned short u16;
typedef int i32; typedef unsigned u32; typedef long long i64; typedef unsigned long long u64;
#ifdef __AMDGCN__
#define KERNEL extern "C" __attribute__((global)) __attribute__((launch_bounds(256)))
#define DEV __attribute__((device))
#define SHARED __attribute__((shared))
#define GVAR __attribute__((device))
#define CVAR __attribute__((constant))
#define BARRIER() do { __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup"); __builtin_amdgcn_s_barrier(); \
                       __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup"); } while (0)
#define ATOMIC(op, p, v) __hip_atomic_fetch_##op(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT)
#define LDS_ATOMIC(op, p, v) __hip_atomic_fetch_##op(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP)
#else
#define DEV
#define GVAR
#define CVAR
#define ATOMIC(op, p, v) __atomic_fetch_##op(p, v, __ATOMIC_RELAXED)
#define LDS_ATOMIC ATOMIC
#endif
#ifdef FUZZ_NO_CALLS
#define NOINL __attribute__((always_inline))
#define INL __attribute__((always_inline))
#else
#define NOINL __attribute__((noinline))
#define INL inline
#endif
#define FN static DEV INL
#define I32_MIN ((i32)0x80000000u)
#define I64_MIN ((i64)0x8000000000000000ull)
FN u64 mix(u64 h, u64 v) { return (h ^ v) * 0x100000001b3ull + (h >> 29); }
FN u64 hf32(float x) { return x != x ? 0x7fc00000ull : (u64)__builtin_bit_cast(u32, x); }
FN u64 hf64(double x) { return x != x ? 0x7ff8000000000000ull : __builtin_bit_cast(u64, x); }
FN float bf32(u32 x) { return __builtin_bit_cast(float, x); }
FN double bf64(u64 x) { return __builtin_bit_cast(double, x); }
FN i32 div_i32(i32 a, i32 b) { return b == 0 || (a == I32_MIN && b == -1) ? a : a / b; }
FN i32 rem_i32(i32 a, i32 b) { return b == 0 || (a == I32_MIN && b == -1) ? a : a % b; }
FN i64 div_i64(i64 a, i64 b) { return b == 0 || (a == I64_MIN && b == -1) ? a : a / b; }
FN i64 rem_i64(i64 a, i64 b) { return b == 0 || (a == I64_MIN && b == -1) ? a : a % b; }
FN u32 div_u32(u32 a, u32 b) { return b == 0 ? a : a / b; }
FN u32 rem_u32(u32 a, u32 b) { return b == 0 ? a : a % b; }
FN u64 div_u64(u64 a, u64 b) { return b == 0 ? a : a / b; }
FN u64 rem_u64(u64 a, u64 b) { return b == 0 ? a : a % b; }
FN i32 cvt_i32(double x) { return x > -2147483649.0 && x < 2147483648.0 ? (i32)x : 7; }
FN u32 cvt_u32(double x) { return x > -1.0 && x < 4294967296.0 ? (u32)x : 7u; }
FN i64 cvt_i64(double x) { return x >= -9223372036854775808.0 && x < 9223372036854775808.0 ? (i64)x : 7; }
FN u64 cvt_u64(double x) { return x > -1.0 && x < 18446744073709551616.0 ? (u64)x : 7u; }
FN float csign_f32(float a, float b) { return b != b ? a : __builtin_copysignf(a, b); }
FN double csign_f64(double a, double b) { return b != b ? a : __builtin_copysign(a, b); }
FN u32 clz32(u32 x) { return x ? (u32)__builtin_clz(x) : 32u; }
FN u32 ctz64(u64 x) { return x ? (u32)__builtin_ctzll(x) : 64u; }
"""


# --- the tree ----------------------------------------------------------------------------------
@dataclass
class Expr:
    """`fmt` with @0, @1, ... standing for the kids' text."""

    ty: str
    fmt: str
    kids: list[Expr] = field(default_factory=list)
    # it keeps its kid in range (an index mask, a trip count): a reducer must not unwrap it
    bound: bool = False

    def render(self) -> str:
        text = self.fmt
        for i in reversed(range(len(self.kids))):  # @10 before @1
            text = text.replace(f"@{i}", self.kids[i].render())
        return text


@dataclass
class Stmt:
    """`fmt` with @0.. for expressions and #0.. for blocks; `decl` names the variable it declares."""

    fmt: str
    exprs: list[Expr] = field(default_factory=list)
    blocks: list[list[Stmt]] = field(default_factory=list)
    decl: str = ""

    def render(self, indent: int = 1) -> str:
        text = self.fmt
        for i in reversed(range(len(self.exprs))):
            text = text.replace(f"@{i}", self.exprs[i].render())
        for i in reversed(range(len(self.blocks))):
            text = text.replace(f"#{i}", render_block(self.blocks[i], indent + 1, indent))
        return "  " * indent + text


def render_block(block: list[Stmt], indent: int, outer: int) -> str:
    inner = "".join(s.render(indent) + "\n" for s in block)
    return "{\n" + inner + "  " * outer + "}"


@dataclass
class Func:
    name: str
    params: list[tuple[str, str]]  # (type, name) after the common (lane, wg, in)
    body: list[Stmt]
    noinline: bool

    def render(self) -> str:
        extra = "".join(f", {CTYPE[t]} {n}" for t, n in self.params)
        attr = "NOINL" if self.noinline else "INL"
        return (f"static DEV {attr} u64 {self.name}(u32 lane, u32 wg, const u32 *in{extra}) "
                + render_block(self.body, 1, 0) + "\n")


@dataclass
class Stage:
    """One step of the kernel, run by every work-item (kinds: see render_device)."""

    kind: str
    a: int = 0
    b: int = 0
    op: str = ""
    func: str = ""


@dataclass
class Program:
    seed: int
    name: str
    block: int
    grid: int
    globals: list[str]  # file-scope definitions, in order
    funcs: list[Func]
    stages: list[Stage]

    @property
    def lanes(self) -> int:
        return self.block * self.grid

    def render(self) -> str:
        parts = [f"// program {self.name}: seed {self.seed}, {self.grid} x {self.block}\n"]
        parts += [g + "\n" for g in self.globals]
        parts += [f.render() for f in self.funcs]
        parts.append("#ifdef __AMDGCN__\n" + self.render_device() + "#else\n" + self.render_host()
                     + "#endif\n")
        return "".join(parts)

    # the kernel: one work-item
    def render_device(self) -> str:
        lines = [f"KERNEL void {self.name}(const u32 *in, u64 *out, u32 *a32, u64 *a64) {{",
                 "  u32 lane = __builtin_amdgcn_workitem_id_x(), wg = __builtin_amdgcn_workgroup_id_x();",
                 f"  u64 acc = 0x{self.seed & 0xFFFFFFFF:08x}ull;"]
        if any(s.kind in ("lds32", "lds64") for s in self.stages):
            lines.append(f"  SHARED u64 lds[{self.block}];")
        if any(s.kind == "ldsatomic" for s in self.stages):
            lines.append("  SHARED u32 ldsa;")
        for s in self.stages:
            lines += ["  " + t for t in _device_stage(s, self.block)]
        lines += [f"  out[wg * {self.block}u + lane] = acc;", "}"]
        return "\n".join(lines) + "\n"

    # its twin: every workgroup in turn, every stage over all lanes of the workgroup
    def render_host(self) -> str:
        n = self.block
        lines = [f'extern "C" void {self.name}(const u32 *in, u64 *out, u32 *a32, u64 *a64) {{',
                 f"  for (u32 wg = 0; wg < {self.grid}u; ++wg) {{",
                 f"    u64 accs[{n}], prev[{n}], lds[{n}]; u32 ldsa = 0; bool live[{n}];",
                 "    (void)lds; (void)ldsa; (void)prev;",
                 f"    for (u32 lane = 0; lane < {n}u; ++lane) {{ accs[lane] = "
                 f"0x{self.seed & 0xFFFFFFFF:08x}ull; live[lane] = true; }}"]
        for s in self.stages:
            lines += ["    " + t for t in _host_stage(s, n)]
        lines += [f"    for (u32 lane = 0; lane < {n}u; ++lane) if (live[lane]) out[wg * {n}u + lane] = "
                  "accs[lane];",
                  "  }", "}"]
        return "\n".join(lines) + "\n"


def _perm(s: Stage, n: int) -> str:
    return f"((lane * {s.a}u + {s.b}u) % {n}u)"


def _device_stage(s: Stage, n: int) -> list[str]:
    if s.kind == "call":
        return [f"acc = mix(acc, {s.func}(lane, wg, in));"]
    if s.kind == "lds32":
        return [f"lds[lane] = (u32)(acc >> {s.a % 33});", "BARRIER();",
                f"acc = mix(acc, (u32)lds[{_perm(s, n)}]);", "BARRIER();"]
    if s.kind == "lds64":
        return ["lds[lane] = acc;", "BARRIER();", f"acc = mix(acc, lds[{_perm(s, n)}]);", "BARRIER();"]
    if s.kind == "ldsatomic":
        return [f"if (lane == 0) ldsa = {s.a}u;", "BARRIER();",
                f"LDS_ATOMIC({s.op}, &ldsa, (u32)(acc >> {s.b % 33}));", "BARRIER();",
                "acc = mix(acc, ldsa);", "BARRIER();"]
    if s.kind == "bpermute":
        return [f"acc = mix(acc, (u32)__builtin_amdgcn_ds_bpermute((i32)(((lane * {s.a}u + {s.b}u) & 63u) "
                f"<< 2), (i32)(u32)(acc >> {s.b % 33})));"]
    if s.kind == "readlane":
        return [f"acc = mix(acc, (u32)__builtin_amdgcn_readlane((i32)(u32)acc, {s.a % 64}));"]
    if s.kind == "atomic32":
        return [f"ATOMIC({s.op}, &a32[{ATOM_SLOTS * ATOM_OPS.index(s.op)}u + (lane * {s.a}u + wg) % "
                f"{ATOM_SLOTS}u], (u32)(acc >> {s.b % 33}));"]
    if s.kind == "atomic64":
        return [f"ATOMIC({s.op}, &a64[{ATOM_SLOTS * ATOM_OPS.index(s.op)}u + (lane * {s.a}u + wg) % "
                f"{ATOM_SLOTS}u], acc * {2 * s.b + 1}ull);"]
    if s.kind == "exit":
        return [f"if (((acc >> {s.a % 60}) & 3u) == {s.b % 4}u) {{ out[wg * {n}u + lane] = ~acc; return; }}"]
    raise ValueError(s.kind)


def _host_stage(s: Stage, n: int) -> list[str]:
    each = f"for (u32 lane = 0; lane < {n}u; ++lane) if (live[lane]) "
    if s.kind == "call":
        return [each + f"accs[lane] = mix(accs[lane], {s.func}(lane, wg, in));"]
    if s.kind == "lds32":
        return [each + f"lds[lane] = (u32)(accs[lane] >> {s.a % 33});",
                each + f"accs[lane] = mix(accs[lane], (u32)lds[{_perm(s, n)}]);"]
    if s.kind == "lds64":
        return [each + "lds[lane] = accs[lane];", each + f"accs[lane] = mix(accs[lane], lds[{_perm(s, n)}]);"]
    if s.kind == "ldsatomic":
        return [f"ldsa = {s.a}u;", each + f"LDS_ATOMIC({s.op}, &ldsa, (u32)(accs[lane] >> {s.b % 33}));",
                each + "accs[lane] = mix(accs[lane], ldsa);"]
    if s.kind == "bpermute":  # ds_bpermute: lane l reads lane (addr / 4) % 64 of its own wave
        return [f"for (u32 lane = 0; lane < {n}u; ++lane) prev[lane] = accs[lane];",
                each + f"accs[lane] = mix(accs[lane], (u32)(prev[(lane & ~63u) + ((lane * {s.a}u + {s.b}u) "
                       f"& 63u)] >> {s.b % 33}));"]
    if s.kind == "readlane":
        return [f"for (u32 lane = 0; lane < {n}u; ++lane) prev[lane] = accs[lane];",
                each + f"accs[lane] = mix(accs[lane], (u32)prev[(lane & ~63u) + {s.a % 64}u]);"]
    if s.kind == "atomic32":
        return [each + f"ATOMIC({s.op}, &a32[{ATOM_SLOTS * ATOM_OPS.index(s.op)}u + (lane * {s.a}u + wg) % "
                       f"{ATOM_SLOTS}u], (u32)(accs[lane] >> {s.b % 33}));"]
    if s.kind == "atomic64":
        return [each + f"ATOMIC({s.op}, &a64[{ATOM_SLOTS * ATOM_OPS.index(s.op)}u + (lane * {s.a}u + wg) % "
                       f"{ATOM_SLOTS}u], accs[lane] * {2 * s.b + 1}ull);"]
    if s.kind == "exit":
        return [each + f"if (((accs[lane] >> {s.a % 60}) & 3u) == {s.b % 4}u) "
                f"{{ out[wg * {n}u + lane] = ~accs[lane]; live[lane] = false; }}"]
    raise ValueError(s.kind)


# --- generation --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Features:
    """What a program may contain: file-scope variables and non-inlined calls need a loader that
    maps the code object's data and a dynamic stack at -O0; recursion always needs the latter."""

    globals_: bool = True
    calls: bool = True
    recursion: bool = False
    shared: bool = True  # LDS stages and wave builtins
    atomics: bool = True


@dataclass
class Var:
    name: str
    ty: str
    mutable: bool = True
    size: int = 0  # elements, for a local array


@dataclass
class GlobalSym:
    """A file-scope variable: "table" (const array), "scalar", "struct" (one member), or "lane"
    (an array with one slot per work-item, written only by stage functions at the work-item's slot)."""

    name: str
    ty: str
    size: int
    kind: str
    member: str = ""


class Gen:
    def __init__(self, seed: int, features: Features) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.f = features
        self.n = 0
        self.helpers: list[Func] = []  # callable from expressions; they write no global
        self.globals: list[str] = []
        self.gsyms: list[GlobalSym] = []
        self.budget = 0
        self.block_size = 64
        self.writes = False  # whether the function being generated may write "lane" globals

    def fresh(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, ty: str) -> Expr:
        r = self.rng
        if ty in INTS:
            bits = BITS[ty]
            v = r.choice([0, 1, 2, 3, 7, 31, 32, 63, 255, 0x80, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
                          (1 << bits) - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1, r.getrandbits(bits),
                          r.getrandbits(bits), r.getrandbits(12)]) & ((1 << bits) - 1)
            return Expr(ty, f"({ty})0x{v:08x}u" if bits == 32 else f"({ty})0x{v:016x}ull")
        pick = r.random()
        if pick < 0.08:
            return Expr(ty, "__builtin_inff()" if ty == "f32" else "__builtin_inf()")
        if pick < 0.12:
            return Expr(ty, "__builtin_nanf(\"\")" if ty == "f32" else "__builtin_nan(\"\")")
        v = r.choice([0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1e30, -1e-30, 1e-40, 1e-310, 2.0 ** 24 + 1,
                      2.0 ** 53 + 2, 0.1, r.uniform(-1e4, 1e4), r.uniform(-1, 1), float(r.getrandbits(20))])
        if ty == "f32":
            v = struct.unpack("<f", struct.pack("<f", v))[0] if abs(v) < 3e38 else 0.0
        suffix = "f" if ty == "f32" else ""
        if v == 0.0:
            return Expr(ty, f"{'-' if struct.pack('<d', v)[7] & 0x80 else ''}0.0{suffix}")
        return Expr(ty, f"{v.hex()}{suffix}")

    def leaf(self, ty: str, scope: list[Var], depth: int) -> Expr:
        r = self.rng
        vs = [v for v in scope if v.ty == ty and not v.size]
        pick = r.random()
        if vs and pick < 0.55:
            return Expr(ty, r.choice(vs).name)
        if depth > 0 and pick < 0.75:
            return self.load_in(ty, scope, depth - 1)
        if depth > 0 and self.gsyms and pick < 0.9:
            return self.global_read(ty, scope, depth - 1)
        return self.const(ty)

    def index(self, scope: list[Var], mask: int, depth: int) -> Expr:
        """A u32 index in [0, mask]: data- and lane-dependent."""
        return Expr("u32", f"((@0) & {mask}u)", [self.expr("u32", scope, min(depth, 2))], bound=True)

    def load_in(self, ty: str, scope: list[Var], depth: int) -> Expr:
        i = self.index(scope, IN_WORDS - 2, depth)
        if ty in ("u32", "i32", "f32"):
            return Expr(ty, {"u32": "in[@0]", "i32": "(i32)in[@0]", "f32": "bf32(in[@0])"}[ty], [i])
        wide = "((u64)in[@0] << 32 | in[(@0) + 1])"
        return Expr(ty, {"u64": wide, "i64": f"(i64){wide}", "f64": f"bf64{wide}"}[ty], [i])

    def global_read(self, ty: str, scope: list[Var], depth: int) -> Expr:
        g = self.rng.choice(self.gsyms)
        if g.kind == "table":
            e = Expr(g.ty, f"{g.name}[@0]", [self.index(scope, g.size - 1, depth)])
        elif g.kind == "lane":
            e = Expr(g.ty, f"{g.name}[gid]")
        elif g.kind == "struct":
            e = Expr(g.ty, f"{g.name}.{g.member}")
        else:
            e = Expr(g.ty, g.name)
        return self.convert(e, ty)

    def convert(self, e: Expr, ty: str) -> Expr:
        if e.ty == ty:
            return e
        if ty in INTS and e.ty in FLOATS:
            return Expr(ty, f"cvt_{ty}(@0)", [e])
        # through a narrow type: byte/short extracts
        if ty in INTS and e.ty in INTS and self.rng.random() < 0.3:
            narrow = self.rng.choice(["u8", "i8", "u16", "i16"])
            return Expr(ty, f"({ty})({narrow})(@0)", [e])
        return Expr(ty, f"({CTYPE[ty]})(@0)", [e])

    def expr(self, ty: str, scope: list[Var], depth: int) -> Expr:
        r = self.rng
        if depth <= 0 or r.random() < 0.18:
            return self.leaf(ty, scope, depth)
        d = depth - 1
        if ty in FLOATS:
            return self.float_expr(ty, scope, d)
        u, bits = UNSIGNED[ty], BITS[ty]

        def sub(t: str = ty) -> Expr:
            return self.expr(t, scope, d)

        k = r.randrange(14)
        if k <= 2:
            op = r.choice("+-*")
            return Expr(ty, f"(({ty})(({u})(@0) {op} ({u})(@1)))", [sub(), sub()])
        if k == 3:
            return Expr(ty, f"((@0) {r.choice('&|^')} (@1))", [sub(), sub()])
        if k == 4:
            if r.random() < 0.5:
                return Expr(ty, f"(({ty})(({u})(@0) << ((@1) & {bits - 1}u)))", [sub(), sub("u32")])
            return Expr(ty, f"((@0) >> ((@1) & {bits - 1}u))", [sub(), sub("u32")])
        if k == 5:
            return Expr(ty, f"{r.choice(['div', 'rem'])}_{ty}(@0, @1)", [sub(), sub()])
        if k == 6:
            return Expr(ty, r.choice([f"(({ty})(0 - ({u})(@0)))", "(~(@0))", f"(({ty})!(@0))"]), [sub()])
        if k == 7:
            t = r.choice(TYPES)
            return Expr(ty, f"(({ty})((@0) {r.choice(['<', '<=', '==', '!=', '>', '>='])} (@1)))",
                        [self.expr(t, scope, d), self.expr(t, scope, d)])
        if k == 8:
            return Expr(ty, "((@0) ? (@1) : (@2))", [self.cond(scope, d), sub(), sub()])
        if k == 9:
            return self.convert(self.expr(r.choice(TYPES), scope, d), ty)
        if k == 10:
            f = r.choice(["(u32)__builtin_popcountll((u64)(@0))", "clz32((u32)(@0))", "ctz64((u64)(@0))",
                          "__builtin_bswap32((u32)(@0))", "__builtin_bitreverse32((u32)(@0))",
                          "(u32)(((u64)(u32)(@0) * (u64)(u32)(@0)) >> 32)"])
            return self.convert(Expr("u32", f, [sub()]), ty)
        if k == 11:
            return Expr(ty, "(@0 < @1 ? @0 : @1)" if r.random() < 0.5 else "(@0 > @1 ? @0 : @1)",
                        [self.leaf(ty, scope, 0), self.leaf(ty, scope, 0)])
        if k == 12 and self.helpers and self.budget > 0 and not any(v.name.startswith("j") for v in scope):
            # not in a loop: calls there multiply the work, and emulating -O0 code is slow
            return self.convert(self.call(scope, d), ty)
        return self.leaf(ty, scope, d)

    def float_expr(self, ty: str, scope: list[Var], d: int) -> Expr:
        r = self.rng
        s = "f" if ty == "f32" else ""

        def sub() -> Expr:
            return self.expr(ty, scope, d)

        k = r.randrange(11)
        if k <= 3:
            return Expr(ty, f"((@0) {r.choice('+-*/')} (@1))", [sub(), sub()])
        if k == 4:
            return Expr(ty, f"__builtin_fma{s}(@0, @1, @2)", [sub(), sub(), sub()])
        if k == 5:
            f = r.choice(["sqrt", "fabs", "floor", "ceil", "trunc", "rint"])
            return Expr(ty, f"__builtin_{f}{s}(@0)", [sub()])
        if k == 6:  # copysign from a NaN is out: x86 and AMD give NaNs of different signs
            return Expr(ty, r.choice(["(-(@0))", f"csign_{ty}(@0, @1)"]), [sub(), sub()])
        if k == 7:
            return Expr(ty, f"__builtin_ldexp{s}(@0, (i32)((@1) % 300u) - 150)",
                        [sub(), self.expr("u32", scope, d)])
        if k == 8:
            return Expr(ty, "((@0) ? (@1) : (@2))", [self.cond(scope, d), sub(), sub()])
        if k == 9:
            return self.convert(self.expr(r.choice(TYPES), scope, d), ty)
        return Expr(ty, "(@0 < @1 ? @0 : @1)" if r.random() < 0.5 else "(@0 > @1 ? @0 : @1)",
                    [self.leaf(ty, scope, 0), self.leaf(ty, scope, 0)])

    def cond(self, scope: list[Var], depth: int) -> Expr:
        t = self.rng.choice(TYPES + ("u32", "u32"))
        op = self.rng.choice(["<", "<=", "==", "!=", ">", ">="])
        return Expr("i32", f"((@0) {op} (@1))", [self.expr(t, scope, depth), self.expr(t, scope, depth)])

    def call(self, scope: list[Var], depth: int) -> Expr:
        fn = self.rng.choice(self.helpers)
        self.budget -= 4
        args = [self.expr(t, scope, min(depth, 2)) for t, _ in fn.params]
        holes = "".join(f", @{i}" for i in range(len(args)))
        return Expr("u64", f"{fn.name}(lane, wg, in{holes})", args)

    def block(self, scope: list[Var], depth: int, loop: bool) -> list[Stmt]:
        scope = list(scope)
        out: list[Stmt] = []
        for _ in range(self.rng.randint(1, 4)):
            if self.budget <= 0:
                break
            out.append(self.stmt(scope, depth, loop))
        return out

    def stmt(self, scope: list[Var], depth: int, loop: bool) -> Stmt:
        """One statement; a declaration is appended to `scope`."""
        r = self.rng
        self.budget -= 1
        mutable = [v for v in scope if v.mutable and not v.size]
        arrays = [v for v in scope if v.size]
        k = r.randrange(13)
        if k <= 2 or not mutable:
            v = Var(self.fresh("v"), r.choice(TYPES))
            s = Stmt(f"{CTYPE[v.ty]} {v.name} = @0;", [self.expr(v.ty, scope, 4)], decl=v.name)
            scope.append(v)
            return s
        if k <= 4:
            v = r.choice(mutable)
            return Stmt(f"{v.name} = @0;", [self.expr(v.ty, scope, 4)])
        if k == 5 and depth > 0:
            return Stmt("if (@0) #0 else #1", [self.cond(scope, 3)],
                        [self.block(scope, depth - 1, loop), self.block(scope, depth - 1, loop)])
        loops = sum(1 for v in scope if v.name.startswith("j"))
        if k == 6 and depth > 0 and loops < 2:  # at most two nested: emulating -O0 code is slow
            i = Var(self.fresh("j"), "u32", mutable=False)
            bound = Expr("u32", f"((@0) % {r.choice([3, 5, 8])}u)", [self.expr("u32", scope, 2)], bound=True)
            return Stmt(f"for (u32 {i.name} = 0; {i.name} < @0; ++{i.name}) #0", [bound],
                        [self.block(scope + [i], depth - 1, True)])
        if k == 7 and depth > 0:
            cases = sorted(r.sample(range(8), r.randint(1, 4)))
            blocks = [self.block(scope, depth - 1, loop) for _ in cases] + [self.block(scope, 0, loop)]
            text = "switch ((u32)(@0) & 7u) {"
            for j, c in enumerate(cases):
                text += f" case {c}: #{j}" + (" break;" if r.random() < 0.7 else " [[fallthrough]];")
            text += f" default: #{len(cases)} break; }}"
            return Stmt(text, [self.expr("u32", scope, 3)], blocks)
        if k == 8:
            if arrays and r.random() < 0.6:
                a = r.choice(arrays)
                return Stmt(f"{a.name}[@0] = @1;",
                            [self.index(scope, a.size - 1, 3), self.element(a, scope, 3)])
            a = Var(self.fresh("arr"), r.choice(("u32", "u64", "f32", "f64", "i32", "u8", "i8", "u16",
                                                 "i16")),
                    size=r.choice([16, 32, 64]))
            i = Var(self.fresh("j"), "u32", mutable=False)
            s = Stmt(f"{CTYPE[a.ty]} {a.name}[{a.size}]; for (u32 {i.name} = 0; {i.name} < {a.size}u; "
                     f"++{i.name}) {a.name}[{i.name}] = @0;", [self.element(a, scope + [i], 2)], decl=a.name)
            scope.append(a)
            return s
        if k == 9 and arrays:
            a, v = r.choice(arrays), r.choice(mutable)
            wide = NARROW.get(a.ty, a.ty)
            read = Expr(wide, f"({CTYPE[wide]}){a.name}[@0]", [self.index(scope, a.size - 1, 3)])
            return Stmt(f"{v.name} = @0;", [self.convert(read, v.ty)])
        if k == 10:
            return Stmt("if (@0) return @1;", [self.cond(scope, 3), self.checksum(scope)])
        if k == 11 and loop:
            return Stmt(f"if (@0) {r.choice(['break', 'continue'])};", [self.cond(scope, 2)])
        lanes = [g for g in self.gsyms if g.kind == "lane"]
        if k == 12 and lanes and self.writes:
            g = r.choice(lanes)
            return Stmt(f"{g.name}[gid] = @0;", [self.expr(g.ty, scope, 3)])
        v = r.choice(mutable)
        return Stmt(f"{v.name} = @0;", [self.expr(v.ty, scope, 3)])

    def element(self, a: Var, scope: list[Var], depth: int) -> Expr:
        """A value for an element of array `a` (8- and 16-bit elements: a 32-bit value narrowed)."""
        if a.ty in NARROW:
            return Expr(a.ty, f"({a.ty})(@0)", [self.expr(NARROW[a.ty], scope, depth)])
        return self.expr(a.ty, scope, depth)

    def checksum(self, scope: list[Var]) -> Expr:
        text = "0x9e3779b97f4a7c15ull"
        for v in [v for v in scope if v.name not in ("lane", "wg") and not v.size][-6:]:
            h = {"f32": f"hf32({v.name})", "f64": f"hf64({v.name})"}.get(v.ty, f"(u64){v.name}")
            text = f"mix({text}, {h})"
        return Expr("u64", text)

    def func(self, name: str, size: int, params: list[tuple[str, str]], writes: bool) -> Func:
        scope = [Var("lane", "u32", False), Var("wg", "u32", False), Var("gid", "u32", False)]
        scope += [Var(n, t) for t, n in params]
        self.budget, self.writes = size, writes
        body = [Stmt(f"u32 gid = wg * {self.block_size}u + lane; (void)gid;")]
        while self.budget > 0:
            for s in self.block(scope, 3, False):
                body.append(s)
                if s.decl:
                    scope.append(self.declared(s))
        body.append(Stmt("return @0;", [self.checksum(scope)]))
        return Func(name, params, body, self.f.calls and self.rng.random() < 0.5)

    @staticmethod
    def declared(s: Stmt) -> Var:
        ty = next(t for t in CTYPE if s.fmt.startswith(CTYPE[t] + " "))
        if s.decl.startswith("arr"):
            return Var(s.decl, ty, size=int(s.fmt.split("[", 1)[1].split("]", 1)[0]))
        return Var(s.decl, ty)

    def make_globals(self, prefix: str, lanes: int) -> None:
        r = self.rng
        for _ in range(r.randint(1, 4)):
            kind = r.choice(["table", "table", "scalar", "struct", "lane"])
            ty = r.choice(TYPES)
            name = f"{prefix}_g{len(self.gsyms)}"
            if kind == "table":
                size = r.choice([4, 16, 64])
                vals = ", ".join(self.const(ty).render() for _ in range(size))
                space = r.choice(["CVAR", "GVAR"])
                self.globals.append(f"static {space} const {CTYPE[ty]} {name}[{size}] = {{{vals}}};")
                self.gsyms.append(GlobalSym(name, ty, size, kind))
            elif kind == "scalar":
                self.globals.append(f"static GVAR {CTYPE[ty]} {name} = {self.const(ty).render()};")
                self.gsyms.append(GlobalSym(name, ty, 0, kind))
            elif kind == "struct":
                t2 = r.choice(TYPES)
                self.globals.append(f"struct {name}_t {{ {CTYPE[ty]} x; u8 pad; {CTYPE[t2]} y; }};\n"
                                    f"static GVAR {name}_t {name} = {{{self.const(ty).render()}, 3, "
                                    f"{self.const(t2).render()}}};")
                self.gsyms += [GlobalSym(name, ty, 0, kind, "x"), GlobalSym(name, t2, 0, kind, "y")]
            else:  # zero-initialised (.bss) or with a few values (.data)
                init = ("" if r.random() < 0.5
                        else " = {" + ", ".join(self.const(ty).render() for _ in range(3)) + "}")
                self.globals.append(f"static GVAR {CTYPE[ty]} {name}[{lanes}]{init};")
                self.gsyms.append(GlobalSym(name, ty, lanes, kind))

    def program(self, name: str) -> Program:
        r = self.rng
        block = r.choice([64, 64, 128, 256]) if self.f.shared else 64
        grid = r.choice([1, 1, 2, 3])
        self.block_size = block
        if self.f.globals_:
            self.make_globals(name, block * grid)
        if self.f.recursion:
            self.helpers.append(self.recursive(f"{name}_rec"))
        for j in range(r.randint(0, 3)):
            params = [(r.choice(TYPES), f"p{i}") for i in range(r.randint(0, 3))]
            self.helpers.append(self.func(f"{name}_h{j}", r.randint(4, 16), params, False))
        tops = [self.func(f"{name}_t{j}", r.randint(6, 22), [], True) for j in range(r.randint(1, 2))]
        kinds = ["call"] * 3
        if self.f.shared:
            kinds += ["lds32", "lds64", "ldsatomic", "bpermute", "readlane"]
        if self.f.atomics:
            kinds += ["atomic32", "atomic64"]
        stages = [Stage("call", func=tops[0].name)]
        for _ in range(r.randint(0, 5)):
            kind = r.choice(kinds)
            stages.append(Stage(kind, r.randrange(1, 1 << 16), r.randrange(1 << 16),
                                r.choice(ATOM_OPS), r.choice(tops).name))
        if r.random() < 0.4:  # a divergent exit: last where later stages need every lane (barriers, shuffles)
            stages.insert(len(stages) if self.f.shared else r.randrange(1, len(stages) + 1),
                          Stage("exit", r.randrange(64), r.randrange(4)))
        return Program(self.seed, name, block, grid, self.globals, self.helpers + tops, stages)

    def recursive(self, name: str) -> Func:
        """A recursion as deep as the data says (at most 15 calls): a dynamic stack."""
        body = [Stmt("if ((p0 & 15u) == 0u) return p1;"),
                Stmt(f"return mix({name}(lane, wg, in, p0 - 1u, p1 * 3u + in[(p0 + lane) & "
                     f"{IN_WORDS - 1}u]), p0);")]
        return Func(name, [("u32", "p0"), ("u64", "p1")], body, True)


def generate(seed: int, features: Features = Features()) -> Program:
    return Gen(seed, features).program(f"k{seed}")
