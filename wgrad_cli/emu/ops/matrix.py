"""Packed math (VOP3P) and matrix instructions (MFMA, scaled MFMA) of gfx950.

Sources, in order of authority:
- AMD's CDNA4 ISA reference: the VOP3P modifiers (op_sel picks the half or dword feeding the low
  result, op_sel_hi the one feeding the high result, neg_lo/neg_hi negate them), the MFMA fields
  (cbsz/blgp select the f8f6f4 formats of A and B: 0 e4m3, 1 e5m2, 2 e2m3, 3 e3m2, 4 e2m1; the acc
  bits put A and B in AGPRs, acc_cd puts C and D there), the E8M0 scale (2^(s-127), 0xFF is NaN,
  one scale per 32 consecutive k of a row of A or a column of B) and the dense MFMA layouts: for
  an MxNxK MFMA lane l holds row (A) or column (B) l % M of the operand, and lane group g = l // M
  holds K / (64 // M) consecutive k starting at g * K / (64 // M); D register i of lane l is
  column l % N and row 4 * (64 // N) * (i // 4) + 4 * g + i % 4.
- docs/emulator.md ("Where the ISA text is silent") for the scaled MFMA's layout, where these rules
  made the upstream HipKittens kernel match an exact reference: with 8-bit formats lane group g
  holds k 16g..16g+15 in operand registers 0-3 and k K/2+16g.. in registers 4-7; the 32-wide
  k-block b of row r (column c) takes its scale from lane r + M*b (c + N*b); the scale byte is
  {op_sel_hi[0], op_sel[0]} for A and {op_sel_hi[1], op_sel[1]} for B.
- Modular's published MXFP4 kernel layout for the 4- and 6-bit formats (one pass: lane group g
  holds the 32 consecutive k starting at 32g, packed from bit 0 up); 6-bit is an assumption by
  analogy, never checked against hardware.

Rounding (an assumption: the hardware's accumulator width is not documented): products of the
8-bit or 16-bit inputs and their power-of-two scales are exact in float64; they are summed in
float64 with C and rounded once to fp32, round to nearest even.

Matrix instructions act on whole waves: the layouts span all 64 lanes. The ISA text does not say
what an MFMA does with lanes off in EXEC (whether they feed A and B, whether their D is written), so
a wave that reaches one with any lane off stops the run (compilers issue them with a full EXEC).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from wgrad_cli.emu.machine import Batch, EmuFault, Op, Unsupported
from wgrad_cli.emu.ops import operands as opd
from wgrad_cli.emu.ops.vector_math import fma32, max_num, min_num

U32, F32, F64 = np.uint32, np.float32, np.float64


def _table(dtype: Any, bits: int) -> np.ndarray:
    """float64 value of every code of a small float format."""
    codes = np.arange(1 << bits, dtype=np.uint8)
    return np.asarray(codes.view(dtype).astype(F64), dtype=F64)


# f8f6f4 format number (cbsz/blgp) -> (bits per element, value of each code)
F8F6F4: dict[int, tuple[int, np.ndarray]] = {
    0: (8, _table(ml_dtypes.float8_e4m3fn, 8)), 1: (8, _table(ml_dtypes.float8_e5m2, 8)),
    2: (6, _table(ml_dtypes.float6_e2m3fn, 6)), 3: (6, _table(ml_dtypes.float6_e3m2fn, 6)),
    4: (4, _table(ml_dtypes.float4_e2m1fn, 4)),
}
E8M0 = np.where(np.arange(256) == 255, np.nan, np.ldexp(1.0, np.arange(256) - 127)).astype(F64)
DENSE_TYPES: dict[str, tuple[int, np.ndarray | None]] = {  # element type -> (bits, code table or None)
    "BF16": (16, None), "F16": (16, None), "F32": (32, None), "I8": (8, None),
    "FP8": F8F6F4[0], "BF8": F8F6F4[1],
}


def _codes(words: np.ndarray, bits: int, count: int) -> np.ndarray:
    """The first `count` little-endian `bits`-wide codes of (..., registers) uint32 words."""
    raw = np.ascontiguousarray(words.astype("<u4")).view(np.uint8)
    if bits == 8:
        return raw[..., :count]
    if bits == 16:
        return raw.view("<u2")[..., :count]
    if bits == 32:
        return words[..., :count]
    flat = np.unpackbits(raw, axis=-1, bitorder="little")[..., : bits * count]
    weights = (1 << np.arange(bits)).astype(np.uint8)
    return np.asarray((flat.reshape(*flat.shape[:-1], count, bits) * weights).sum(axis=-1), dtype=np.uint8)


def _values(codes: np.ndarray, kind: str, table: np.ndarray | None) -> np.ndarray:
    if table is not None:
        return np.asarray(table[codes], dtype=F64)
    if kind == "BF16":
        return (codes.astype(U32) << U32(16)).view(F32).astype(F64)
    if kind == "F16":
        return codes.view(np.float16).astype(F64)
    if kind == "F32":
        return codes.view(F32).astype(F64)
    return codes.view(np.int8).astype(F64)  # I8: exact in float64, summed exactly for these sizes


@dataclass(frozen=True)
class Operand:
    """How one MFMA input sits in its registers: where each lane's elements go in the (rows, K)
    matrix, as a gather order over the (lane, element) values."""

    reg: int
    agpr: bool
    regs: int
    bits: int
    count: int  # elements per lane
    kind: str
    table: np.ndarray | None
    order: np.ndarray  # flat (lane * count + element) index of each (row, k), row-major

    def matrix(self, b: Batch, rows: int, k: int) -> np.ndarray:
        """(W, rows, K) float64 values."""
        file = b.a if self.agpr else b.v
        words = np.moveaxis(file[self.reg: self.reg + self.regs], 0, -1)  # (W, 64, regs)
        vals = _values(_codes(words, self.bits, self.count), self.kind, self.table)
        return vals.reshape(b.W, -1)[:, self.order].reshape(b.W, rows, k)


def _operand(reg: int, agpr: bool, rows: int, k: int, bits: int, kind: str, table: np.ndarray | None,
             split: bool) -> Operand:
    """Lane l holds row l % rows; its elements' k follow the dense ISA layout, or the scaled MFMA's
    8-bit two-pass layout when `split` (see the module docstring)."""
    groups = 64 // rows
    count = k // groups
    lane = np.arange(64)[:, None]
    j = np.arange(count)[None, :]
    g = lane // rows
    ks = (j // 16) * (k // 2) + 16 * g + j % 16 if split else g * count + j
    flat = np.empty(rows * k, dtype=np.int64)
    flat[(lane % rows) * k + ks] = lane * count + j
    return Operand(reg, agpr, -(-count * bits // 32), bits, count, kind, table, flat)


def _out_order(m: int, n: int) -> tuple[np.ndarray, int]:
    """For D = (M, N): the flat (register * 64 + lane) index of each (row, col), and the register count."""
    regs = m * n // 64
    groups = 64 // n
    i = np.arange(regs)[:, None]
    lane = np.arange(64)[None, :]
    row = 4 * groups * (i // 4) + 4 * (lane // n) + i % 4
    flat = np.empty(m * n, dtype=np.int64)
    flat[row * n + lane % n] = i * 64 + lane
    return flat, regs


def _acc_read(src: int, agpr: bool, regs: int) -> Callable[[Batch], np.ndarray]:
    """C as (regs, W, 64) uint32: registers, or an inline constant in every element."""
    if src >= 256:
        r = src - 256
        return lambda b: (b.a if agpr else b.v)[r: r + regs]
    const = opd.vector(src, 32)
    return lambda b: np.broadcast_to(const(b), (regs, b.W, 64))


def _mfma(pc: int, size: int, name: str, m: int, n: int, k: int, a: Operand, b_: Operand,
          scales: Callable[[Batch], tuple[np.ndarray, np.ndarray]] | None, src2: int, vdst: int, acc_cd: bool,
          integer: bool) -> Op:
    out, regs = _out_order(m, n)
    c_read = _acc_read(src2, acc_cd, regs)

    def run(b: Batch) -> None:
        if not b.whole_waves():
            raise EmuFault(f"{name} with lanes off in EXEC is not implemented by the emulator (the ISA does "
                           "not say which lanes of a matrix instruction EXEC turns off)")
        with np.errstate(all="ignore"):
            am, bm = a.matrix(b, m, k), b_.matrix(b, n, k)
            if scales is not None:
                sa, sb = scales(b)  # (W, M, K/32), (W, N, K/32)
                am = (am.reshape(b.W, m, -1, 32) * sa[..., None]).reshape(b.W, m, k)
                bm = (bm.reshape(b.W, n, -1, 32) * sb[..., None]).reshape(b.W, n, k)
            c = c_read(b)
            c_mat = np.moveaxis(c, 0, 1).reshape(b.W, -1)[:, out].reshape(b.W, m, n)
            if integer:
                prod = np.einsum("wmk,wnk->wmn", am.astype(np.int64), bm.astype(np.int64))
                d = (prod + c_mat.view(np.int32)).astype(np.int32).view(U32)
            else:
                d = (np.matmul(am, np.swapaxes(bm, 1, 2)) + c_mat.view(F32).astype(F64)).astype(F32).view(U32)
        flat = np.empty((b.W, regs * 64), dtype=U32)
        flat[:, out] = d.reshape(b.W, -1)
        result = np.moveaxis(flat.reshape(b.W, regs, 64), 1, 0)
        dest = b.a if acc_cd else b.v
        if b.all:
            dest[vdst: vdst + regs] = result
        else:
            np.copyto(dest[vdst: vdst + regs], result, where=b.wm[None, :, None])
    return Op(pc, size, name, "mfma", run)


DENSE = re.compile(r"V_MFMA_(?:SCALE_)?(F32|I32)_(\d+)X(\d+)X(\d+)_([A-Z0-9]+(?:_[A-Z0-9]+)?)$")


def _compile_mfma(inst: Any, pc: int, size: int, scaled: bool) -> Op:
    name: str = inst.op.name
    match = DENSE.match(name)
    if match is None:  # multi-block (_2B/_4B/_16B), f64, xf32 and sparse (SMFMAC) forms
        raise Unsupported(name)
    m, n, k = int(match[2]), int(match[3]), int(match[4])
    types = match[5]
    acc = int(inst.acc)
    src0, src1 = int(inst.src0.offset), int(inst.src1.offset)
    if src0 < 256 or src1 < 256:
        raise Unsupported(name + " with a non-register A or B")
    reg_a, reg_b = src0 - 256, src1 - 256
    if types == "F8F6F4":
        fa, fb = int(inst.cbsz), int(inst.blgp)
        if fa not in F8F6F4 or fb not in F8F6F4:
            raise Unsupported(f"{name} cbsz {fa} blgp {fb}")
        (bits_a, table_a), (bits_b, table_b) = F8F6F4[fa], F8F6F4[fb]
        a = _operand(reg_a, bool(acc & 1), m, k, bits_a, "F8", table_a, bits_a == 8)
        b_ = _operand(reg_b, bool(acc & 2), n, k, bits_b, "F8", table_b, bits_b == 8)
    else:
        kinds = types.split("_")
        ka, kb = kinds[0], kinds[-1]
        if ka not in DENSE_TYPES or kb not in DENSE_TYPES or scaled:
            raise Unsupported(name)
        a = _operand(reg_a, bool(acc & 1), m, k, DENSE_TYPES[ka][0], ka, DENSE_TYPES[ka][1], False)
        b_ = _operand(reg_b, bool(acc & 2), n, k, DENSE_TYPES[kb][0], kb, DENSE_TYPES[kb][1], False)
    scales = _scales(inst, m, n, k) if scaled else None
    return _mfma(pc, size, name.lower(), m, n, k, a, b_, scales, int(inst.src2.offset),
                 int(inst.vdst.offset) & 0xFF, bool(inst.acc_cd), match[1] == "I32")


def _scales(inst: Any, m: int, n: int, k: int) -> Callable[[Batch], tuple[np.ndarray, np.ndarray]]:
    """The E8M0 factors of A's rows and B's columns per 32-wide k-block, (W, rows, K/32) each.
    tinygrad returns scale_src0/1 as raw 9-bit operand numbers (256 + n is VGPR n)."""
    read_a, read_b = opd.vector(int(inst.scale_src0), 32), opd.vector(int(inst.scale_src1), 32)
    opsel, opsel_hi = int(inst.opsel), int(inst.opsel_hi)
    byte_a = 8 * (((opsel_hi & 1) << 1) | (opsel & 1))
    byte_b = 8 * ((((opsel_hi >> 1) & 1) << 1) | ((opsel >> 1) & 1))
    blocks = k // 32

    def factors(word: np.ndarray, shift: int, rows: int, w: int) -> np.ndarray:
        codes = (np.broadcast_to(word, (w, 64)) >> U32(shift)) & U32(0xFF)
        return np.asarray(E8M0[codes[:, : rows * blocks].reshape(w, blocks, rows).transpose(0, 2, 1)],
                          dtype=F64)

    return lambda b: (factors(read_a(b), byte_a, m, b.W), factors(read_b(b), byte_b, n, b.W))


# --- VOP3P packed math -------------------------------------------------------------------------
PK_F32: dict[str, Callable[..., np.ndarray]] = {
    "V_PK_FMA_F32": fma32, "V_PK_MUL_F32": np.multiply, "V_PK_ADD_F32": np.add,
}


# name -> (element type, sources, function on int64/float64 halves); CDNA4 ISA pseudo-code: each 16-bit
# half of D is the operation on the same-numbered halves the op_sel/op_sel_hi bits pick from each source.
# Shift amounts come from the low 4 bits of the selected half of S0 (S0[3:0], S0[19:16] by default).
PK_16: dict[str, tuple[str, int, Callable[..., np.ndarray]]] = {
    "V_PK_MAD_I16": ("i16", 3, lambda a, b, c: a * b + c),
    "V_PK_MAD_U16": ("u16", 3, lambda a, b, c: a * b + c), "V_PK_MUL_LO_U16": ("u16", 2, np.multiply),
    "V_PK_ADD_I16": ("i16", 2, np.add), "V_PK_SUB_I16": ("i16", 2, np.subtract),
    "V_PK_ADD_U16": ("u16", 2, np.add), "V_PK_SUB_U16": ("u16", 2, np.subtract),
    "V_PK_MAX_I16": ("i16", 2, np.maximum), "V_PK_MIN_I16": ("i16", 2, np.minimum),
    "V_PK_MAX_U16": ("u16", 2, np.maximum), "V_PK_MIN_U16": ("u16", 2, np.minimum),
    "V_PK_LSHLREV_B16": ("u16", 2, lambda s, v: v << (s & 15)),
    "V_PK_LSHRREV_B16": ("u16", 2, lambda s, v: v >> (s & 15)),
    "V_PK_ASHRREV_I16": ("i16", 2, lambda s, v: v >> (s & 15)),
    # fp16: the float64 result is exact for mul and add; fma rounds once more only where the float64
    # sum is inexact, which needs operands 2^29 apart (assumption: no such case matters here)
    "V_PK_FMA_F16": ("f16", 3, lambda a, b, c: a * b + c), "V_PK_ADD_F16": ("f16", 2, np.add),
    "V_PK_MUL_F16": ("f16", 2, np.multiply), "V_PK_MIN_F16": ("f16", 2, min_num),
    "V_PK_MAX_F16": ("f16", 2, max_num),
}


def _pk16_value(half: np.ndarray, t: str, negate: int) -> np.ndarray:
    if t == "f16":
        v = half.astype(np.uint16).view(np.float16).astype(F64)
        return -v if negate else v
    if t == "i16":
        return half.astype(np.uint16).view(np.int16).astype(np.int64)
    return half.astype(np.int64)


def _pk16_bits(v: np.ndarray, t: str, clamp: bool) -> np.ndarray:
    """A half's result as 16 bits: integers wrap, or saturate under clamp ("For integer operations, it
    clamps the result to the largest and smallest representable value"); floats clamp to [0, 1]."""
    if t == "f16":
        with np.errstate(all="ignore"):
            h = v.astype(np.float16)
            if clamp:
                h = np.clip(np.where(np.isnan(h), np.float16(0), h), 0, 1).astype(np.float16)
        return h.view(np.uint16).astype(U32)
    if clamp:
        v = np.clip(v, -(1 << 15), (1 << 15) - 1) if t == "i16" else np.clip(v, 0, 0xFFFF)
    return (v & 0xFFFF).astype(U32)


def _half_reads(inst: Any, count: int,
                bits: int) -> list[tuple[Callable[[Batch], np.ndarray], int, int, int, int]]:
    """Per source: (64-bit or 32-bit reader, op_sel bit, op_sel_hi bit, neg_lo bit, neg_hi bit)."""
    opsel, opsel_hi = int(inst.opsel), int(inst.opsel_hi) | (int(inst.opsel_hi2) << 2)
    neg, neg_hi = int(inst.neg), int(inst.neg_hi)
    literal = getattr(inst, "literal", None)
    out = []
    for s in range(count):
        src = int(getattr(inst, f"src{s}").offset)
        read = opd.vector(src, bits, literal)
        if bits == 64 and (c := opd.constant(src, 32, literal, True)) is not None:
            # a packed-f32 operand's inline constant is the 32-bit constant in the low dword (LLVM
            # clears op_sel_hi for it so that the high half takes it too), not a 64-bit one
            read = _dword(c)
        out.append((read, (opsel >> s) & 1, (opsel_hi >> s) & 1, (neg >> s) & 1, (neg_hi >> s) & 1))
    return out



def _dword(value: int) -> Callable[[Batch], np.ndarray]:
    """A 32-bit constant as a 64-bit operand: in the low dword, the high one 0."""
    word = np.asarray(value, dtype=np.uint64)  # 0-d: broadcasts over (W, 64)
    return lambda b: word


def _pick32(word: np.ndarray, hi: int, negate: int) -> np.ndarray:
    """One dword of a 64-bit operand as f32 bits, sign flipped by neg."""
    half = (word >> np.uint64(32)) if hi else word
    bits = (half & np.uint64(0xFFFFFFFF)).astype(U32)
    return bits ^ U32(0x80000000) if negate else bits


def _pick16(word: np.ndarray, hi: int) -> np.ndarray:
    return ((word >> U32(16)) if hi else word) & U32(0xFFFF)


def _compile_vop3p(inst: Any, pc: int, size: int) -> Op:
    name: str = inst.op.name
    lower = name.lower()
    vdst = int(inst.vdst.offset) & 0xFF
    if name in PK_F32:
        fn = PK_F32[name]
        srcs = _half_reads(inst, 3 if name == "V_PK_FMA_F32" else 2, 64)

        def pk(b: Batch) -> None:
            words = [np.broadcast_to(r(b), (b.W, 64)) for r, *_ in srcs]
            with np.errstate(all="ignore"):
                lo = fn(*(_pick32(w, sel, ng).view(F32) for w, (_, sel, _, ng, _) in zip(words, srcs)))
                hi = fn(*(_pick32(w, sel, ng).view(F32) for w, (_, _, sel, _, ng) in zip(words, srcs)))
            b.write_v(b.v, vdst, np.asarray(lo, dtype=F32).view(U32))
            b.write_v(b.v, vdst + 1, np.asarray(hi, dtype=F32).view(U32))
        return Op(pc, size, lower, "valu", pk)
    if name in PK_16:
        t, count, fn16 = PK_16[name]
        reads16 = _half_reads(inst, count, 32)
        clamp = bool(getattr(inst, "clmp", 0))

        def pk16(b: Batch) -> None:
            words = [np.broadcast_to(r(b), (b.W, 64)) for r, *_ in reads16]
            out = np.zeros((b.W, 64), dtype=U32)
            for part, shift in ((0, 0), (1, 16)):
                args = [_pk16_value(_pick16(w, sel_hi if part else sel), t, neg_hi if part else neg)
                        for w, (_, sel, sel_hi, neg, neg_hi) in zip(words, reads16)]
                with np.errstate(all="ignore"):
                    out |= _pk16_bits(np.asarray(fn16(*args)), t, clamp) << U32(shift)
            b.write_v(b.v, vdst, out)
        return Op(pc, size, lower, "valu", pk16)
    if name == "V_PK_MOV_B32":  # D.lo = src0[op_sel[0]], D.hi = src1[op_sel[1]] (CDNA4 ISA: OPSEL for both)
        (r0, sel0, _, _, _), (r1, sel1, _, _, _) = _half_reads(inst, 2, 64)

        def mov(b: Batch) -> None:
            lo, hi = _pick32(r0(b), sel0, 0), _pick32(r1(b), sel1, 0)
            b.write_v(b.v, vdst, lo)
            b.write_v(b.v, vdst + 1, hi)
        return Op(pc, size, lower, "valu", mov)
    if name in ("V_DOT2_F32_BF16", "V_DOT2_F32_F16"):
        to_f64: Callable[[np.ndarray], np.ndarray] = (
            (lambda h: (h << U32(16)).view(F32).astype(F64)) if name.endswith("BF16")
            else (lambda h: h.astype(np.uint16).view(np.float16).astype(F64)))
        (ra, sa_lo, sa_hi, na_lo, na_hi), (rb, sb_lo, sb_hi, nb_lo, nb_hi), \
            (rc, *_rest) = _half_reads(inst, 3, 32)
        neg_c = int(inst.neg) >> 2 & 1

        def dot2(b: Batch) -> None:
            # D = a.lo * b.lo + a.hi * b.hi + c: products exact in float64, one rounding to fp32 (assumption)
            x, y = np.broadcast_to(ra(b), (b.W, 64)), np.broadcast_to(rb(b), (b.W, 64))
            lo = to_f64(_pick16(x, sa_lo)) * to_f64(_pick16(y, sb_lo)) * (-1.0 if na_lo ^ nb_lo else 1.0)
            hi = to_f64(_pick16(x, sa_hi)) * to_f64(_pick16(y, sb_hi)) * (-1.0 if na_hi ^ nb_hi else 1.0)
            c = np.asarray(rc(b)).view(F32).astype(F64) * (-1.0 if neg_c else 1.0)
            with np.errstate(all="ignore"):
                b.write_v(b.v, vdst, (lo + hi + c).astype(F32).view(U32))
        return Op(pc, size, lower, "valu", dot2)
    if name == "V_ACCVGPR_READ":  # AGPR -> VGPR
        src = int(inst.src0.offset) - 256
        return Op(pc, size, "v_accvgpr_read_b32", "valu", lambda b: b.write_v(b.v, vdst, b.a[src]))
    if name == "V_ACCVGPR_WRITE":  # VGPR or constant -> AGPR
        read = opd.vector(int(inst.src0.offset), 32, getattr(inst, "literal", None))
        return Op(pc, size, "v_accvgpr_write_b32", "valu", lambda b: b.write_v(b.a, vdst, read(b)))
    raise Unsupported(name)


def compile_matrix(cls: str, inst: Any, pc: int, size: int) -> Op:
    """VOP3P (packed math, AGPR moves), VOP3P_MFMA and VOP3PX2 (scaled MFMA) instructions."""
    if cls == "VOP3PX2":
        return _compile_mfma(inst, pc, size, scaled=True)
    if cls == "VOP3P_MFMA" or inst.op.name.startswith("V_MFMA"):
        return _compile_mfma(inst, pc, size, scaled=False)
    return _compile_vop3p(inst, pc, size)

