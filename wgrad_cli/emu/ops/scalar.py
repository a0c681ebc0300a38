"""Scalar instructions: SOP1, SOP2, SOPC, SOPK, SOPP (branches, barrier, end) and SMEM loads.

Semantics are the CDNA4 ISA reference's pseudo-code for each opcode ("Scalar ALU Operations",
"Scalar Memory Operations", "Program Flow Control"). Each function here turns one decoded
instruction into a closure over a Batch; values are per wave, shape (W,).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from wgrad_cli.emu.machine import EXEC, VCC, Batch, EmuFault, Op, Run, Unsupported, lookup
from wgrad_cli.emu.ops import operands as opd

U32, U64 = np.uint32, np.uint64
M32 = 0xFFFFFFFF


def _i32(x: np.ndarray) -> np.ndarray:
    return x.astype(U32).view(np.int32)


def _i64(x: np.ndarray) -> np.ndarray:
    return x.astype(U64).view(np.int64)


def _lit(inst: Any) -> int | None:
    return getattr(inst, "literal", None)


# --- SOP2 -----------------------------------------------------------------------------------
# name -> (64-bit operands, function of (a, b, scc) -> (result, new scc or None))
Sop2 = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray | None]]


def _nz(d: np.ndarray) -> np.ndarray:
    return np.asarray(d != 0)


def _carry32(total: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (total & M32).astype(U32), total > M32


def _bfe(a: np.ndarray, b: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    offset = (b & U32(bits - 1)).astype(np.int64)
    width = ((b >> U32(16)) & U32(0x7F)).astype(np.int64)
    a64 = a.astype(U64)
    field = (a64 >> offset.astype(U64)) & ((U64(1) << np.minimum(width, 63).astype(U64)) - U64(1))
    field = np.where(width >= 64, a64 >> offset.astype(U64), field)
    if signed:
        sign = (field >> np.maximum(width - 1, 0).astype(U64)) & U64(1)
        ext = np.where((width > 0) & (width < 64) & (sign == 1),
                       ~((U64(1) << np.minimum(width, 63).astype(U64)) - U64(1)), U64(0))
        field = field | ext
    field = np.where(width == 0, U64(0), field)
    return field.astype(U32) if bits == 32 else field


SOP2: dict[str, tuple[bool, Sop2]] = {
    "S_ADD_U32": (False, lambda a, b, c: _carry32(a.astype(np.int64) + b)),
    "S_SUB_U32": (False, lambda a, b, c: ((a - b).astype(U32), b > a)),
    "S_ADD_I32": (False, lambda a, b, c: (lambda r: (r, ((_i32(a) >= 0) == (_i32(b) >= 0))
                                                     & ((_i32(r) >= 0)
                                                        != (_i32(a) >= 0))))((a + b).astype(U32))),
    "S_SUB_I32": (False, lambda a, b, c: (lambda r: (r, ((_i32(a) >= 0) != (_i32(b) >= 0))
                                                     & ((_i32(r) >= 0)
                                                        != (_i32(a) >= 0))))((a - b).astype(U32))),
    "S_ADDC_U32": (False, lambda a, b, c: _carry32(a.astype(np.int64) + b + c)),
    "S_SUBB_U32": (False,
                   lambda a, b, c: ((a.astype(np.int64) - b - c).astype(np.int64).astype(U64).astype(U32),
                                    b.astype(np.int64) + c > a)),
    "S_MIN_I32": (False, lambda a, b, c: (np.where(_i32(a) < _i32(b), a, b), _i32(a) < _i32(b))),
    "S_MIN_U32": (False, lambda a, b, c: (np.where(a < b, a, b), a < b)),
    "S_MAX_I32": (False, lambda a, b, c: (np.where(_i32(a) > _i32(b), a, b), _i32(a) > _i32(b))),
    "S_MAX_U32": (False, lambda a, b, c: (np.where(a > b, a, b), a > b)),
    "S_CSELECT_B32": (False, lambda a, b, c: (np.where(c != 0, a, b), None)),
    "S_CSELECT_B64": (True, lambda a, b, c: (np.where(c != 0, a, b), None)),
    "S_MUL_I32": (False, lambda a, b, c: ((a.astype(U64) * b.astype(U64)).astype(U32), None)),
    "S_MUL_HI_U32": (False, lambda a, b, c: (((a.astype(U64) * b.astype(U64)) >> U64(32)).astype(U32), None)),
    "S_MUL_HI_I32": (False, lambda a, b, c: (((_i32(a).astype(np.int64) * _i32(b))
                                              >> 32).astype(np.int64).astype(U64).astype(U32), None)),
    "S_BFM_B32": (False, lambda a, b, c: ((((U64(1) << (a & U32(31)).astype(U64)) - U64(1))
                                           << (b & U32(31)).astype(U64)).astype(U32), None)),
    "S_BFE_U32": (False, lambda a, b, c: (lambda r: (r, _nz(r)))(_bfe(a, b, 32, False))),
    "S_BFE_I32": (False, lambda a, b, c: (lambda r: (r, _nz(r)))(_bfe(a, b, 32, True))),
    "S_ABSDIFF_I32": (False, lambda a, b, c: (lambda r: (r, _nz(r)))(
        np.abs(_i32(a).astype(np.int64) - _i32(b)).astype(U64).astype(U32))),
    "S_PACK_LL_B32_B16": (False, lambda a, b, c: ((a & U32(0xFFFF)) | (b << U32(16)), None)),
    "S_PACK_LH_B32_B16": (False, lambda a, b, c: ((a & U32(0xFFFF)) | (b & U32(0xFFFF0000)), None)),
    "S_PACK_HH_B32_B16": (False, lambda a, b, c: ((a >> U32(16)) | (b & U32(0xFFFF0000)), None)),
}
for _n in (1, 2, 3, 4):
    SOP2[f"S_LSHL{_n}_ADD_U32"] = (False,
                                   (lambda n: lambda a, b, c: _carry32((a.astype(np.int64) << n) + b))(_n))
for _w, _t in ((32, U32), (64, U64)):
    _sfx = f"B{_w}"
    _m = _t(_w - 1)
    SOP2[f"S_AND_{_sfx}"] = (_w == 64, lambda a, b, c: (lambda r: (r, _nz(r)))(a & b))
    SOP2[f"S_OR_{_sfx}"] = (_w == 64, lambda a, b, c: (lambda r: (r, _nz(r)))(a | b))
    SOP2[f"S_XOR_{_sfx}"] = (_w == 64, lambda a, b, c: (lambda r: (r, _nz(r)))(a ^ b))
    SOP2[f"S_ANDN2_{_sfx}"] = (_w == 64, lambda a, b, c: (lambda r: (r, _nz(r)))(a & ~b))
    SOP2[f"S_ORN2_{_sfx}"] = (_w == 64, lambda a, b, c: (lambda r: (r, _nz(r)))(a | ~b))
    SOP2[f"S_NAND_{_sfx}"] = (_w == 64, lambda a, b, c: (lambda r: (r, _nz(r)))(~(a & b)))
    SOP2[f"S_NOR_{_sfx}"] = (_w == 64, lambda a, b, c: (lambda r: (r, _nz(r)))(~(a | b)))
    SOP2[f"S_XNOR_{_sfx}"] = (_w == 64, lambda a, b, c: (lambda r: (r, _nz(r)))(~(a ^ b)))
    SOP2[f"S_LSHL_{_sfx}"] = (_w == 64, (lambda t, m: lambda a, b, c: (lambda r: (r, _nz(r)))(
        a << (b & m).astype(t)))(_t, _m))
    SOP2[f"S_LSHR_{_sfx}"] = (_w == 64, (lambda t, m: lambda a, b, c: (lambda r: (r, _nz(r)))(
        a >> (b & m).astype(t)))(_t, _m))
SOP2["S_ASHR_I32"] = (False, lambda a, b, c: (lambda r: (r, _nz(r)))(
    (_i32(a) >> (b & U32(31)).astype(np.int32)).view(U32)))
SOP2["S_ASHR_I64"] = (True, lambda a, b, c: (lambda r: (r, _nz(r)))(
    (_i64(a) >> (b & U64(63)).astype(np.int64)).view(U64)))
SOP2["S_BFE_U64"] = (True, lambda a, b, c: (lambda r: (r, _nz(r)))(_bfe(a, b.astype(U32), 64, False)))
SOP2["S_BFE_I64"] = (True, lambda a, b, c: (lambda r: (r, _nz(r)))(_bfe(a, b.astype(U32), 64, True)))
SOP2["S_BFM_B64"] = (True, lambda a, b, c: ((((U64(1) << (a & U64(63))) - U64(1)) << (b & U64(63))), None))
# src1 is 32-bit
SHIFT_AMOUNT_32 = {"S_LSHL_B64", "S_LSHR_B64", "S_ASHR_I64", "S_BFE_U64", "S_BFE_I64", "S_BFM_B64"}


def sop2(inst: Any, name: str) -> Run:
    wide, fn = lookup(SOP2, name)
    a = opd.scalar(inst.ssrc0.offset, 64 if wide else 32, _lit(inst))
    b = opd.scalar(inst.ssrc1.offset, 64 if wide and name not in SHIFT_AMOUNT_32 else 32, _lit(inst))
    wide_b = wide and name not in SHIFT_AMOUNT_32
    d = inst.sdst.offset

    def run(bt: Batch) -> None:
        bv = b(bt)
        r, scc = fn(a(bt), bv if wide_b or not wide else bv.astype(U64), bt.scc.astype(U32))
        if wide:
            bt.write_s64(d, r)
        else:
            bt.write_s(d, np.asarray(r).astype(U32))
        if scc is not None:
            bt.write_scc(np.asarray(scc, dtype=bool))
    return run


# --- SOP1 -----------------------------------------------------------------------------------
def _popcount64(x: np.ndarray) -> np.ndarray:
    bits = np.unpackbits(np.ascontiguousarray(x.astype(U64)).view(np.uint8).reshape(-1, 8), axis=1)
    return np.asarray(bits.sum(axis=1), dtype=U32)


def _ff1(x: np.ndarray) -> np.ndarray:
    x = x.astype(U64)
    low = x & (~x + U64(1))
    idx = np.where(x == 0, -1, np.log2(np.maximum(low, U64(1)).astype(np.float64)).astype(np.int64))
    return idx.astype(np.int64).astype(U64).astype(U32)


def _flbit(x: np.ndarray, bits: int) -> np.ndarray:
    x = x.astype(U64)
    top = np.floor(np.log2(np.maximum(x, U64(1)).astype(np.float64))).astype(np.int64)
    # float64 rounding can push 2^k - 1 up to k for large values: correct it exactly
    top = np.where((U64(1) << top.astype(U64)) > x, top - 1, top)
    return np.where(x == 0, -1, bits - 1 - top).astype(np.int64).astype(U64).astype(U32)


SAVEEXEC = {"S_AND_SAVEEXEC_B64": lambda a, e: a & e, "S_OR_SAVEEXEC_B64": lambda a, e: a | e,
            "S_XOR_SAVEEXEC_B64": lambda a, e: a ^ e, "S_ANDN2_SAVEEXEC_B64": lambda a, e: a & ~e,
            "S_ORN2_SAVEEXEC_B64": lambda a, e: a | ~e, "S_NAND_SAVEEXEC_B64": lambda a, e: ~(a & e),
            "S_NOR_SAVEEXEC_B64": lambda a, e: ~(a | e), "S_XNOR_SAVEEXEC_B64": lambda a, e: ~(a ^ e),
            "S_ANDN1_SAVEEXEC_B64": lambda a, e: ~a & e, "S_ORN1_SAVEEXEC_B64": lambda a, e: ~a | e}
WREXEC = {"S_ANDN1_WREXEC_B64": lambda a, e: ~a & e, "S_ANDN2_WREXEC_B64": lambda a, e: a & ~e}

SOP1_32: dict[str, Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray | None]]] = {
    "S_MOV_B32": lambda a, s: (a, None),
    "S_NOT_B32": lambda a, s: (lambda r: (r, _nz(r)))(~a),
    "S_BCNT0_I32_B32": lambda a, s: (lambda r: (r, _nz(r)))(U32(32) - _popcount64(a)),
    "S_BCNT1_I32_B32": lambda a, s: (lambda r: (r, _nz(r)))(_popcount64(a)),
    "S_FF0_I32_B32": lambda a, s: (_ff1((~a).astype(U32)), None),
    "S_FF1_I32_B32": lambda a, s: (_ff1(a), None),
    "S_FLBIT_I32_B32": lambda a, s: (_flbit(a, 32), None),
    "S_FLBIT_I32": lambda a, s: (np.where((a == 0) | (a == M32), U32(M32),
                                          _flbit(np.where(_i32(a) < 0, ~a, a).astype(U32), 32)), None),
    "S_SEXT_I32_I8": lambda a, s: ((a & U32(0xFF)).astype(np.uint8).view(np.int8).astype(np.int32).view(U32),
                                   None),
    "S_SEXT_I32_I16": lambda a, s: ((a & U32(0xFFFF)).astype(np.uint16).view(np.int16).astype(np.int32)
                                    .view(U32), None),
    "S_ABS_I32": lambda a, s: (lambda r: (r, _nz(r)))(np.abs(_i32(a).astype(np.int64)).astype(U64)
                                                      .astype(U32)),
    "S_CMOV_B32": lambda a, s: (a, None),
}
SOP1_64: dict[str, Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray | None]]] = {
    "S_MOV_B64": lambda a, s: (a, None),
    "S_NOT_B64": lambda a, s: (lambda r: (r, _nz(r)))(~a),
    "S_CMOV_B64": lambda a, s: (a, None),
    "S_BCNT1_I32_B64": lambda a, s: (lambda r: (r.astype(U64), _nz(r)))(_popcount64(a)),
    "S_BCNT0_I32_B64": lambda a, s: (lambda r: (r.astype(U64), _nz(r)))(U32(64) - _popcount64(a)),
    "S_FF1_I32_B64": lambda a, s: (_ff1(a).astype(U64), None),
    "S_FF0_I32_B64": lambda a, s: (_ff1(~a).astype(U64), None),
    "S_FLBIT_I32_B64": lambda a, s: (_flbit(a, 64).astype(U64), None),
}
RESULT_32_FROM_64 = {"S_BCNT1_I32_B64", "S_BCNT0_I32_B64", "S_FF1_I32_B64", "S_FF0_I32_B64",
                     "S_FLBIT_I32_B64"}


def _brev32(a: np.ndarray) -> np.ndarray:
    bits = np.unpackbits(np.ascontiguousarray(a.astype("<u4")).view(np.uint8).reshape(-1, 4), axis=1,
                         bitorder="little")
    return np.packbits(bits[:, ::-1], axis=1, bitorder="little").view("<u4").reshape(-1).astype(U32)


SOP1_32["S_BREV_B32"] = lambda a, s: (_brev32(a), None)  # after _brev32's definition


def _bitset(name: str, d: int, bit: Callable[[Batch], np.ndarray]) -> Run:
    """S_BITSET0/1_B32/B64 (CDNA4 pseudo-code): D0[S0[4:0]] (S0[5:0] for B64) = 0 or 1, the other
    bits of D0 kept."""
    wide, value = name.endswith("B64"), name.startswith("S_BITSET1")
    t = U64 if wide else U32
    old = opd.scalar(d, 64 if wide else 32)

    def run(bt: Batch) -> None:
        mask = np.left_shift(np.ones(bt.W, dtype=t), (bit(bt) & U32(63 if wide else 31)).astype(t))
        r = (old(bt) | mask) if value else (old(bt) & ~mask)
        if wide:
            bt.write_s64(d, r)
        else:
            bt.write_s(d, r)
    return run


def sop1(inst: Any, name: str, pc: int, size: int) -> tuple[Run, bool]:
    d = inst.sdst.offset
    src = inst.ssrc0.offset
    if name in SAVEEXEC or name in WREXEC:
        a = opd.scalar(src, 64, _lit(inst))
        fn: Callable[[np.ndarray, np.ndarray], np.ndarray] = SAVEEXEC.get(name) or WREXEC[name]
        exec64 = opd.scalar(EXEC, 64)

        def saveexec(bt: Batch) -> None:
            old = exec64(bt)
            new = fn(a(bt), old)
            bt.write_s64(EXEC, new)
            bt.write_s64(d, new if name in WREXEC else old)
            bt.write_scc(new != 0)
        return saveexec, False
    # PCs are offsets into the image; the registers hold device addresses (the image's base + offset)
    if name == "S_GETPC_B64":
        return (lambda bt: bt.write_s64(d, np.full(bt.W, U64(bt.code_base + pc + size)))), False
    if name in ("S_SETPC_B64", "S_SWAPPC_B64"):
        a = opd.scalar(src, 64)

        def setpc(bt: Batch) -> None:
            target = a(bt).astype(np.int64) - bt.code_base
            if name == "S_SWAPPC_B64":
                bt.write_s64(d, np.full(bt.W, U64(bt.code_base + pc + size)))
            bt.pc[:] = np.where(bt.wm, target, bt.pc)
        return setpc, True
    if name in ("S_MOVRELS_B32", "S_MOVRELS_B64", "S_MOVRELD_B32", "S_MOVRELD_B64"):
        raise Unsupported(name)
    if name in ("S_BITSET0_B32", "S_BITSET1_B32", "S_BITSET0_B64", "S_BITSET1_B64"):
        return _bitset(name, d, opd.scalar(src, 32, _lit(inst))), False
    if name in SOP1_64:
        a = opd.scalar(src, 64, _lit(inst))
        fn64 = SOP1_64[name]

        def run64(bt: Batch) -> None:
            r, scc = fn64(a(bt), bt.scc)
            if name == "S_CMOV_B64":
                r = np.where(bt.scc, r, opd.scalar(d, 64)(bt))
            if name in RESULT_32_FROM_64:
                bt.write_s(d, r.astype(U32))
            else:
                bt.write_s64(d, r)
            if scc is not None:
                bt.write_scc(scc)
        return run64, False
    fn32 = lookup(SOP1_32, name)
    a32 = opd.scalar(src, 32, _lit(inst))

    def run32(bt: Batch) -> None:
        r, scc = fn32(a32(bt), bt.scc)
        if name == "S_CMOV_B32":
            r = np.where(bt.scc, r, bt.s[d])
        bt.write_s(d, np.asarray(r).astype(U32))
        if scc is not None:
            bt.write_scc(scc)
    return run32, False


# --- SOPC and SOPK --------------------------------------------------------------------------
CMP = {"EQ": np.equal, "LG": np.not_equal, "GT": np.greater, "GE": np.greater_equal, "LT": np.less,
       "LE": np.less_equal}


def sopc(inst: Any, name: str) -> Run:
    kind = name.split("_")
    if name.startswith("S_BITCMP"):
        wide = name.endswith("B64")
        a = opd.scalar(inst.ssrc0.offset, 64 if wide else 32, _lit(inst))
        b = opd.scalar(inst.ssrc1.offset, 32, _lit(inst))
        want = 1 if name.startswith("S_BITCMP1") else 0
        return lambda bt: bt.write_scc(((a(bt).astype(U64) >> (b(bt) & U32(63 if wide else 31)).astype(U64))
                                        & U64(1)) == want)
    if name == "S_SETVSKIP":
        # CDNA4 ISA, SOPC: VSKIP = S0[S1[4:0]]; while set the wave skips its vector instructions
        bits = opd.scalar(inst.ssrc0.offset, 32, _lit(inst))
        at = opd.scalar(inst.ssrc1.offset, 32, _lit(inst))
        return lambda bt: bt.set_vskip(((bits(bt) >> (at(bt) & U32(31))) & U32(1)).astype(bool))
    if not name.startswith("S_CMP_"):
        raise Unsupported(name)
    rel, typ = kind[2], kind[3]
    wide = typ == "U64"
    a = opd.scalar(inst.ssrc0.offset, 64 if wide else 32, _lit(inst))
    b = opd.scalar(inst.ssrc1.offset, 64 if wide else 32, _lit(inst))
    conv = _i32 if typ == "I32" else (lambda x: x)
    return lambda bt: bt.write_scc(CMP[rel](conv(a(bt)), conv(b(bt))))


def sopk(inst: Any, name: str, pc: int, size: int) -> tuple[Run, bool]:
    d = inst.sdst.offset
    imm = inst.simm16 & 0xFFFF
    simm = imm - 0x10000 if imm & 0x8000 else imm
    if name == "S_MOVK_I32":
        return (lambda bt: bt.write_s(d, np.full(bt.W, U32(simm & M32)))), False
    if name == "S_CMOVK_I32":
        return (lambda bt: bt.write_s(d, np.where(bt.scc, U32(simm & M32), bt.s[d]))), False
    if name == "S_ADDK_I32":
        def addk(bt: Batch) -> None:
            a = bt.s[d]
            r = (a.astype(np.int64) + simm).astype(np.int64).astype(U64).astype(U32)
            bt.write_scc(((_i32(a) >= 0) == (simm >= 0)) & ((_i32(r) >= 0) != (_i32(a) >= 0)))
            bt.write_s(d, r)
        return addk, False
    if name == "S_MULK_I32":
        return (lambda bt: bt.write_s(d, (bt.s[d].astype(np.int64) * simm).astype(U64).astype(U32))), False
    if name.startswith("S_CMPK_"):
        _, _, rel, typ = name.split("_")
        if typ == "I32":
            return (lambda bt: bt.write_scc(CMP[rel](_i32(bt.s[d]), np.int32(simm)))), False
        return (lambda bt: bt.write_scc(CMP[rel](bt.s[d], U32(imm)))), False
    if name == "S_CALL_B64":
        target = pc + 4 + simm * 4

        def call(bt: Batch) -> None:
            bt.write_s64(d, np.full(bt.W, U64(bt.code_base + pc + size)))
            bt.pc[:] = np.where(bt.wm, target, bt.pc)
        return call, True
    raise Unsupported(name)


# --- SOPP -----------------------------------------------------------------------------------
NOPS = {"S_NOP", "S_WAITCNT", "S_SLEEP", "S_SETPRIO", "S_ICACHE_INV", "S_TTRACEDATA", "S_SET_GPR_IDX_OFF",
        "S_INCPERFLEVEL", "S_DECPERFLEVEL", "S_ENDPGM_ORDERED_PS_DONE"}


def sopp(inst: Any, name: str, pc: int) -> tuple[Run, bool, str]:
    """(run, jumps, class)."""
    imm = inst.simm16 & 0xFFFF
    target = pc + 4 + (imm - 0x10000 if imm & 0x8000 else imm) * 4
    if name in NOPS:
        return (lambda bt: None), False, "other"
    if name == "S_ENDPGM":
        def end(bt: Batch) -> None:
            bt.done |= bt.wm
        return end, True, "branch"
    if name == "S_BARRIER":
        def barrier(bt: Batch) -> None:
            bt.at_barrier |= bt.wm
            bt.pc[bt.wm] += 4
        return barrier, True, "barrier"
    conds: dict[str, Callable[[Batch], np.ndarray]] = {
        "S_BRANCH": lambda bt: np.ones(bt.W, dtype=bool),
        "S_CBRANCH_SCC0": lambda bt: ~bt.scc, "S_CBRANCH_SCC1": lambda bt: bt.scc,
        "S_CBRANCH_VCCZ": lambda bt: (bt.s[VCC] | bt.s[VCC + 1]) == 0,
        "S_CBRANCH_VCCNZ": lambda bt: (bt.s[VCC] | bt.s[VCC + 1]) != 0,
        "S_CBRANCH_EXECZ": lambda bt: (bt.s[EXEC] | bt.s[EXEC + 1]) == 0,
        "S_CBRANCH_EXECNZ": lambda bt: (bt.s[EXEC] | bt.s[EXEC + 1]) != 0,
    }
    if name not in conds:
        raise Unsupported(name)
    cond = conds[name]

    def branch(bt: Batch) -> None:
        take = cond(bt)
        bt.pc[:] = np.where(bt.wm, np.where(take, target, bt.pc + 4), bt.pc)
    return branch, True, "branch"


# --- SMEM -----------------------------------------------------------------------------------
def smem(inst: Any, name: str) -> Run:
    counts = {"S_LOAD_DWORD": 1, "S_LOAD_DWORDX2": 2, "S_LOAD_DWORDX4": 4, "S_LOAD_DWORDX8": 8,
              "S_LOAD_DWORDX16": 16}
    if name in ("S_DCACHE_INV", "S_DCACHE_WB", "S_DCACHE_INV_VOL", "S_DCACHE_WB_VOL"):
        return lambda bt: None
    if name in ("S_MEMTIME", "S_MEMREALTIME"):
        d0 = inst.sdata.offset
        return lambda bt: bt.write_s64(d0, np.full(bt.W, U64(sum(bt.stats.by_class.values()))))
    if name not in counts:
        raise Unsupported(name)
    n = counts[name]
    base = opd.scalar(inst.sbase.offset, 64)
    raw = inst.offset
    register = opd.scalar(raw & 0x7F)
    immediate = (raw - (1 << 21)) if raw & (1 << 20) else raw  # a signed 21-bit byte offset

    def offset(bt: Batch) -> np.ndarray:
        return np.full(bt.W, immediate, dtype=np.int64) if inst.imm else register(bt).astype(np.int64)
    extra = opd.scalar(inst.soffset.offset) if inst.soffset_en else None
    d = inst.sdata.offset

    def load(bt: Batch) -> None:
        addr = (base(bt).astype(np.int64) + offset(bt) + (extra(bt).astype(np.int64) if extra else 0)) & ~3
        addr = addr[bt.wm]
        words = addr[:, None] + 4 * np.arange(n)
        fault = bt.heap.check(words.astype(np.uint64), 4)
        if fault is not None:
            raise EmuFault(f"scalar load of {n * 4} bytes at {fault.address:#x} "
                           f"{bt.heap.describe(fault, False)}")
        data = bt.heap.bytes[(bt.heap.offsets(words.astype(np.uint64))[..., None] + np.arange(4)).reshape(-1)]
        values = data.view(U32).reshape(-1, n)
        for k in range(n):
            full = bt.s[d + k].copy()
            full[bt.wm] = values[:, k]
            bt.write_s(d + k, full)
        bt.stats.bytes_loaded += 4 * n * len(addr)
    return load


def compile_scalar(cls: str, inst: Any, name: str, pc: int, size: int) -> Op:
    if cls == "SOP2":
        return Op(pc, size, name.lower(), "salu", sop2(inst, name))
    if cls == "SOP1":
        run, jumps = sop1(inst, name, pc, size)
        return Op(pc, size, name.lower(), "branch" if jumps else "salu", run, jumps)
    if cls == "SOPC":
        return Op(pc, size, name.lower(), "salu", sopc(inst, name))
    if cls == "SOPK":
        run, jumps = sopk(inst, name, pc, size)
        return Op(pc, size, name.lower(), "branch" if jumps else "salu", run, jumps)
    if cls == "SOPP":
        run, jumps, klass = sopp(inst, name, pc)
        return Op(pc, size, name.lower(), klass, run, jumps)
    if cls == "SMEM":
        return Op(pc, size, name.lower(), "smem", smem(inst, name))
    raise Unsupported(name)

