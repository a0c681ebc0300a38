"""Atomic read-modify-writes: what each atomic does to a memory word, and doing it for every lane of
an instruction, in some serial order, however many lanes share an address.

Semantics from the pseudo-code of AMD's CDNA4 ISA reference (the GLOBAL/FLAT/MUBUF `*_ATOMIC_*`
and DS atomic entries): `tmp = MEM[addr]; MEM[addr] = f(tmp, DATA); RETURN_DATA = tmp`. The memory
callers (memory_ops for global, flat and buffer, lds_atomic_ops for LDS) find the addresses and
registers; this module owns the words.

Floating point: every float atomic rounds to nearest even and keeps denormals. The ISA text says
only `MEM[ADDR].f32 += DATA.f32` (no flush, no mode), LLVM gives gfx940/gfx950 the feature
"memory atomic fadd f32 denormal support" (global f32 atomic adds keep denormals there) and says DS
f32 atomic adds follow the MODE register, which the emulator keeps at HIP's default (denormals
kept, round to nearest even). Packed f16 and bf16 adds are correctly rounded: each half is summed
in f32 and rounded once more, which is exact rounding since f32 carries at least 2p + 2 bits of
either (double rounding is harmless then). min_f64/max_f64 follow the text's `src < tmp ? src :
tmp` literally: a NaN in memory stays, a NaN datum is never stored.

Across processes: the launch's worker processes share the heap, so `serialised()` holds one lock,
shared by the workers of a launch that has global atomics, around each atomic instruction.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from wgrad_cli.emu.machine import Op
from wgrad_cli.emu.ops.vector_math import bf16_to_f32, f32_to_bf16_rne

U32, U64 = np.uint32, np.uint64
F16, F32, F64 = np.float16, np.float32, np.float64

# (memory word, data, second data) -> new word
Fn = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Atomic:
    width: int  # bytes of the memory word: 4 or 8
    fn: Fn
    pair: bool = False  # the data holds a second operand after the first (cmpswap's compare value)
    additive: int = 0  # +1 add, -1 subtract: done as prefix sums, however many lanes share an address


def _integer(dtype: type, signed: type) -> dict[str, Atomic]:
    w = np.dtype(dtype).itemsize
    one, zero = dtype(1), dtype(0)
    return {
        "SWAP": Atomic(w, lambda o, s, c: s),
        "CMPSWAP": Atomic(w, lambda o, s, c: np.where(o == c, s, o), pair=True),
        "ADD": Atomic(w, lambda o, s, c: o + s, additive=1),
        "SUB": Atomic(w, lambda o, s, c: o - s, additive=-1),
        "SMIN": Atomic(w, lambda o, s, c: np.where(s.view(signed) < o.view(signed), s, o)),
        "UMIN": Atomic(w, lambda o, s, c: np.where(s < o, s, o)),
        "SMAX": Atomic(w, lambda o, s, c: np.where(s.view(signed) >= o.view(signed), s, o)),
        "UMAX": Atomic(w, lambda o, s, c: np.where(s >= o, s, o)),
        "AND": Atomic(w, lambda o, s, c: o & s),
        "OR": Atomic(w, lambda o, s, c: o | s),
        "XOR": Atomic(w, lambda o, s, c: o ^ s),
        "INC": Atomic(w, lambda o, s, c: np.where(o >= s, zero, o + one)),
        "DEC": Atomic(w, lambda o, s, c: np.where((o == zero) | (o > s), s, o - one)),
    }


def _float(t: type, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Fn:
    u = U32 if np.dtype(t).itemsize == 4 else U64
    return lambda o, s, c: np.asarray(fn(o.view(t), s.view(t)), dtype=t).view(u)


def _pk_add_bf16(o: np.ndarray, s: np.ndarray, _c: np.ndarray) -> np.ndarray:
    lo = f32_to_bf16_rne(bf16_to_f32(o & U32(0xFFFF)) + bf16_to_f32(s & U32(0xFFFF)))
    hi = f32_to_bf16_rne(bf16_to_f32(o >> U32(16)) + bf16_to_f32(s >> U32(16)))
    return np.asarray(lo | (hi << U32(16)), dtype=U32)


_I32, _I64 = _integer(U32, np.int32), _integer(U64, np.int64)
# The memory atomics of GLOBAL/FLAT/MUBUF by their name after `*_ATOMIC_`.
ATOMICS: dict[str, Atomic] = {
    **_I32, **{f"{k}_X2": a for k, a in _I64.items()},
    "ADD_F32": Atomic(4, _float(F32, np.add)),
    # per half, as numpy does f16
    "PK_ADD_F16": Atomic(4, lambda o, s, c: (o.view(F16) + s.view(F16)).view(U32)),
    "PK_ADD_BF16": Atomic(4, _pk_add_bf16),
    "ADD_F64": Atomic(8, _float(F64, np.add)),
    "MIN_F64": Atomic(8, _float(F64, lambda o, s: np.where(s < o, s, o))),
    "MAX_F64": Atomic(8, _float(F64, lambda o, s: np.where(s > o, s, o))),
}


def _lds_only(w: int, t: type) -> dict[str, Atomic]:
    x2 = "_X2" if w == 8 else ""
    return {
        f"RSUB{x2}": Atomic(w, lambda o, s, c: s - o),
        # c: DATA, the mask; s: DATA2, the bits
        f"MSKOR{x2}": Atomic(w, lambda o, s, c: (o & ~c) | s, pair=True),
        f"CMPST_F{8 * w}": Atomic(w, lambda o, s, c: np.where(o.view(t) == c.view(t), s, o), pair=True),
        f"MIN_F{8 * w}": Atomic(w, _float(t, lambda o, s: np.where(s < o, s, o))),
        f"MAX_F{8 * w}": Atomic(w, _float(t, lambda o, s: np.where(s > o, s, o))),
    }


# Atomics only the DS encoding has (CDNA4 ISA, "LDS Instructions").
LDS_ONLY: dict[str, Atomic] = {**_lds_only(4, F32), **_lds_only(8, F64), "ADD_F64": ATOMICS["ADD_F64"]}


def rmw(mem: np.ndarray, at: np.ndarray, atomic: Atomic, src: np.ndarray,
        cmp: np.ndarray | None) -> np.ndarray:
    with np.errstate(all="ignore"):  # float overflow to inf and NaN compares are the semantics, not faults
        return _rmw(mem, at, atomic, src, cmp)


def _rmw(mem: np.ndarray, at: np.ndarray, atomic: Atomic, src: np.ndarray,
         cmp: np.ndarray | None) -> np.ndarray:
    """Apply `atomic` at byte offsets `at` of the byte array `mem`, one lane after another in lane
    order; each lane's pre-op word. Lanes sharing an address see each other's updates: the lanes
    are done in rounds, round r taking the r-th lane of every address (a fancy-index write of all
    lanes at once would keep one update per address); integer add and subtract in one round of
    prefix sums, since counters are where many lanes meet."""
    dtype = U32 if atomic.width == 4 else U64
    n = len(at)
    cells = at[:, None] + np.arange(atomic.width)
    old = np.zeros(n, dtype=dtype)
    if n == 0:
        return old

    def read(rows: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(mem[cells[rows]]).view(dtype)[:, 0]

    def write(rows: np.ndarray, words: np.ndarray) -> None:
        mem[cells[rows]] = np.ascontiguousarray(words, dtype=dtype).view(np.uint8).reshape(-1, atomic.width)

    order = np.argsort(at, kind="stable")
    first = np.ones(n, dtype=bool)
    first[1:] = at[order][1:] != at[order][:-1]
    heads = np.flatnonzero(first)  # sorted positions where an address's lanes begin
    if len(heads) == n:
        old[:] = read(np.arange(n))
        write(np.arange(n), atomic.fn(old, src, cmp if cmp is not None else src))
        return old
    group = np.cumsum(first) - 1
    if atomic.additive:
        delta = src[order] if atomic.additive > 0 else dtype(0) - src[order]
        inclusive: np.ndarray = np.cumsum(delta, dtype=dtype)
        before = inclusive - delta  # sum of the deltas of earlier sorted lanes
        base = read(order[heads])
        old[order] = base[group] + (before - before[heads][group])
        ends = np.append(heads[1:], n) - 1
        write(order[heads], base + (inclusive[ends] - before[heads]))
        return old
    rank = np.arange(n) - heads[group]
    by_rank = order[np.argsort(rank, kind="stable")]
    bounds = np.cumsum(np.bincount(rank))
    for lo, hi in zip(np.append(0, bounds[:-1]), bounds):
        rows = by_rank[lo:hi]  # distinct addresses
        cur = read(rows)
        write(rows, atomic.fn(cur, src[rows], cmp[rows] if cmp is not None else src[rows]))
        old[rows] = cur
    return old


_LOCK: list[Any] = []  # while forking a launch's workers: the lock they will share, if they need one


@contextlib.contextmanager
def workers_lock(ctx: Any, ops: Iterable[Op]) -> Iterator[None]:
    """Around forking the workers of a launch: if its code has atomics on global memory, a lock
    (from the fork context `ctx`) that every worker inherits and `serialised()` takes, since the
    workers share the heap. A launch without them creates and takes none."""
    if not any(op.name.startswith(("global_atomic", "flat_atomic", "buffer_atomic")) for op in ops):
        yield
        return
    _LOCK.append(ctx.Lock())
    try:
        yield
    finally:
        _LOCK.pop()


def serialised() -> contextlib.AbstractContextManager[Any]:
    """Held around one atomic instruction's read-modify-writes of the shared heap."""
    return _LOCK[-1] if _LOCK else contextlib.nullcontext()
