"""LDS atomics (DS encoding): read-modify-writes of the workgroup's LDS, with and without return.

Addressing as for the other DS instructions (lds_ops: VGPR address + 16-bit offset); the operand
is DATA (data0), the second operand of compare-store and mask-or is DATA2 (data1), and the RTN
forms return the pre-op word to vdst (CDNA4 ISA, "LDS Instructions": `tmp = MEM[addr]; ...;
RETURN_DATA = tmp`; compare-store is `MEM = tmp == DATA ? DATA2 : tmp`). An atomic whose word is
not wholly inside the workgroup's allocation is not done and returns 0, its bytes beyond counted
as for reads and writes (the ISA's out-of-range rule: reads 0, writes discarded). LDS belongs to
one workgroup, which one process runs, so no lock is needed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wgrad_cli.emu.machine import Batch, EmuFault, Op
from wgrad_cli.emu.ops import atomic as atomic_ops
from wgrad_cli.emu.ops.lanes import to_regs, where, words
from wgrad_cli.emu.ops.lds import ds_fields, lds_index

# DS opcode without "DS_" and the RTN marker -> the atomic's name in atomic_ops
_KINDS = {
    "ADD_U32": "ADD", "SUB_U32": "SUB", "RSUB_U32": "RSUB", "INC_U32": "INC", "DEC_U32": "DEC",
    "MIN_I32": "SMIN", "MAX_I32": "SMAX", "MIN_U32": "UMIN", "MAX_U32": "UMAX", "AND_B32": "AND",
    "OR_B32": "OR", "XOR_B32": "XOR", "MSKOR_B32": "MSKOR", "CMPST_B32": "CMPSWAP", "CMPST_F32": "CMPST_F32",
    "MIN_F32": "MIN_F32", "MAX_F32": "MAX_F32", "ADD_F32": "ADD_F32", "PK_ADD_F16": "PK_ADD_F16",
    "PK_ADD_BF16": "PK_ADD_BF16", "ADD_U64": "ADD_X2", "SUB_U64": "SUB_X2", "RSUB_U64": "RSUB_X2",
    "INC_U64": "INC_X2", "DEC_U64": "DEC_X2", "MIN_I64": "SMIN_X2", "MAX_I64": "SMAX_X2",
    "MIN_U64": "UMIN_X2", "MAX_U64": "UMAX_X2", "AND_B64": "AND_X2", "OR_B64": "OR_X2", "XOR_B64": "XOR_X2",
    "MSKOR_B64": "MSKOR_X2", "CMPST_B64": "CMPSWAP_X2", "CMPST_F64": "CMPST_F64", "MIN_F64": "MIN_F64",
    "MAX_F64": "MAX_F64", "ADD_F64": "ADD_F64",
}
# DS opcode -> (atomic, returns the pre-op word); each kind has a plain and an RTN form, and the
# exchanges have only RTN forms
_ALL = atomic_ops.ATOMICS | atomic_ops.LDS_ONLY
LDS_ATOMICS: dict[str, tuple[atomic_ops.Atomic, bool]] = {
    **{f"DS_{k}": (_ALL[a], False) for k, a in _KINDS.items()},
    **{"DS_{}_RTN_{}".format(*k.rsplit("_", 1)): (_ALL[a], True) for k, a in _KINDS.items()},
    "DS_WRXCHG_RTN_B32": (atomic_ops.ATOMICS["SWAP"], True),
    "DS_WRXCHG_RTN_B64": (atomic_ops.ATOMICS["SWAP_X2"], True),
}


def lds_rmw(b: Batch, addr: np.ndarray, waves: np.ndarray, lanes: np.ndarray, atomic: atomic_ops.Atomic,
            src: np.ndarray, cmp: np.ndarray | None) -> np.ndarray:
    """The atomic at each (wave, lane)'s LDS address with its operand (and compare value); the
    pre-op words, 0 where the word is not wholly inside the allocation (not done)."""
    width = atomic.width
    if np.any(addr % width):
        lane = int(np.flatnonzero(addr % width)[0])
        raise EmuFault(f"LDS address {int(addr[lane]):#x} not aligned to {width} bytes "
                       f"({where(b, int(waves[lane]), int(lanes[lane]))})")
    idx, inside = lds_index(b, addr, width, waves, lanes, write=True)
    done = np.ones(len(waves), dtype=bool) if inside is None else np.asarray(inside.all(axis=1))
    if inside is not None:
        b.stats.lds_out_of_range += int(inside.size - np.count_nonzero(inside))
    old = np.zeros(len(waves), dtype=src.dtype)
    old[done] = atomic_ops.rmw(b.lds, idx[done, 0], atomic, src[done], None if cmp is None else cmp[done])
    return old


def compile_lds_atomic(inst: Any, pc: int, size: int) -> Op:
    name = inst.op.name
    vaddr, vdst, data0, data1, off0, off1, acc = ds_fields(inst)
    offset = off0 | (off1 << 8)
    atomic, returns = LDS_ATOMICS[name]
    width = atomic.width
    what = name.lower()

    def run(b: Batch) -> None:
        waves, lanes = np.nonzero(b.lanes())
        regs = b.a if acc else b.v
        addr = (b.v[vaddr][waves, lanes].astype(np.int64) + offset) & 0xFFFFFFFF
        src = words(regs, data1 if atomic.pair else data0, width, 1, waves, lanes)[:, 0]
        cmp = words(regs, data0, width, 1, waves, lanes)[:, 0] if atomic.pair else None
        old = lds_rmw(b, addr, waves, lanes, atomic, src, cmp)
        if returns:
            to_regs(regs, vdst, old.view(np.uint8).reshape(-1, width), False, None, waves, lanes)
    return Op(pc, size, what, "lds", run)
