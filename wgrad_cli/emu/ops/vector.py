"""Vector ALU instructions: VOP1, VOP2, VOP3, VOP3SD, VOPC and their SDWA and DPP forms.

Each opcode is a row of `VOPS`: the destination type, the source types and a numpy function of
the typed sources (vector_math.py); the encoding's modifiers (abs, neg, clamp, omod, op_sel, SDWA
selects) are applied around it (vector_encoding.py), as the CDNA4 ISA reference's "Vector ALU
Operations" chapter and each opcode's pseudo-code define them; a DPP form reads its first source
from another lane (`Dpp`). Lanes outside EXEC keep their old values (VOPC writes 0 for them into
its mask). Float arithmetic is IEEE round-to-nearest-even as numpy does it; fused multiply-adds
are rounded once (see `fused`). Compares are compiled here; the ops that are not one function of
typed sources are rows of vector_special.py's tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from wgrad_cli.emu.machine import EXEC, VCC, Batch, Op, Run, Unsupported, lookup
from wgrad_cli.emu.ops.vector_encoding import Ctx, base_name, finish, lit_read, vdst, write_dest
from wgrad_cli.emu.ops.vector_math import (
    BITS,
    CMP_OPS,
    CODES,
    F16,
    F32,
    F64,
    U16,
    U32,
    U64,
    VIEW,
    Fn,
    bf16_to_f32,
    bfe,
    cvt_int,
    div_fixup,
    f16_rtz,
    f32_to_bf16_rne,
    ffbh,
    float_class,
    fma32,
    fma64,
    fused,
    ldexp,
    max_num,
    maximum,
    med3f,
    min_num,
    minimum,
    perm,
    sad,
    to_bits,
)
from wgrad_cli.emu.ops.vector_special import special

# name -> (destination type, source types, function)
VOPS: dict[str, tuple[str, tuple[str, ...], Fn]] = {
    "V_MOV_B32": ("b32", ("b32",), lambda a: a),
    "V_NOT_B32": ("b32", ("b32",), lambda a: ~a),
    "V_BFREV_B32": ("b32", ("b32",),
                    lambda a: np.packbits(
                        np.unpackbits(np.ascontiguousarray(a, dtype="<u4")[..., None].view(np.uint8),
                                      axis=-1, bitorder="little")[..., ::-1],
                        axis=-1, bitorder="little").view("<u4")[..., 0]),
    "V_CVT_F32_I32": ("f32", ("i32",), lambda a: a.astype(F32)),
    "V_CVT_F32_U32": ("f32", ("u32",), lambda a: a.astype(F32)),
    "V_CVT_U32_F32": ("u32", ("f32",), lambda a: cvt_int(a, 0, 2**32 - 1, U32)),
    "V_CVT_I32_F32": ("i32", ("f32",), lambda a: cvt_int(a, -(2**31), 2**31 - 1, np.int32)),
    "V_CVT_F16_F32": ("f16", ("f32",), lambda a: a.astype(F16)),
    "V_CVT_F32_F16": ("f32", ("f16",), lambda a: a.astype(F32)),
    "V_CVT_F32_F64": ("f32", ("f64",), lambda a: a.astype(F32)),
    "V_CVT_F64_F32": ("f64", ("f32",), lambda a: a.astype(F64)),
    "V_CVT_F64_I32": ("f64", ("i32",), lambda a: a.astype(F64)),
    "V_CVT_F64_U32": ("f64", ("u32",), lambda a: a.astype(F64)),
    "V_CVT_I32_F64": ("i32", ("f64",), lambda a: cvt_int(a, -(2**31), 2**31 - 1, np.int32)),
    "V_CVT_U32_F64": ("u32", ("f64",), lambda a: cvt_int(a, 0, 2**32 - 1, U32)),
    "V_CVT_F32_UBYTE0": ("f32", ("u32",), lambda a: (a & U32(0xFF)).astype(F32)),
    "V_CVT_F32_UBYTE1": ("f32", ("u32",), lambda a: ((a >> U32(8)) & U32(0xFF)).astype(F32)),
    "V_CVT_F32_UBYTE2": ("f32", ("u32",), lambda a: ((a >> U32(16)) & U32(0xFF)).astype(F32)),
    "V_CVT_F32_UBYTE3": ("f32", ("u32",), lambda a: (a >> U32(24)).astype(F32)),
    "V_CVT_F32_BF16": ("f32", ("b16",), lambda a: bf16_to_f32(a)),
    "V_TRUNC_F32": ("f32", ("f32",), np.trunc), "V_CEIL_F32": ("f32", ("f32",), np.ceil),
    "V_FLOOR_F32": ("f32", ("f32",), np.floor), "V_RNDNE_F32": ("f32", ("f32",), np.rint),
    "V_FRACT_F32": ("f32", ("f32",),
                    lambda a: np.minimum(a - np.floor(a), F32(np.nextafter(F32(1), F32(0))))),
    "V_SQRT_F32": ("f32", ("f32",), np.sqrt), "V_SQRT_F64": ("f64", ("f64",), np.sqrt),
    "V_RCP_F32": ("f32", ("f32",), lambda a: (1.0 / a.astype(F64)).astype(F32)),
    "V_RCP_F64": ("f64", ("f64",), lambda a: 1.0 / a),
    "V_RSQ_F32": ("f32", ("f32",), lambda a: (1.0 / np.sqrt(a.astype(F64))).astype(F32)),
    "V_EXP_F32": ("f32", ("f32",), lambda a: np.exp2(a.astype(F64)).astype(F32)),
    "V_LOG_F32": ("f32", ("f32",), lambda a: np.log2(a.astype(F64)).astype(F32)),
    "V_FFBH_U32": ("u32", ("u32",), lambda a: ffbh(a)),
    "V_FFBL_B32": ("u32", ("u32",), lambda a: np.where(a == 0, U32(0xFFFFFFFF),
                                                       np.log2((a & (~a + U32(1))).astype(F64)).astype(U32))),
    "V_FREXP_EXP_I32_F32": ("i32", ("f32",), lambda a: np.asarray(np.where(np.isfinite(a), np.frexp(a)[1], 0),
                                                                  dtype=np.int32)),
    "V_FREXP_MANT_F32": ("f32", ("f32",),
                         lambda a: np.asarray(np.where(np.isfinite(a), np.frexp(a)[0], a), dtype=F32)),
    "V_CVT_F32_FP8": ("f32", ("b32",), lambda a: CODES["fp8"][a & U32(0xFF)]),
    "V_CVT_F32_BF8": ("f32", ("b32",), lambda a: CODES["bf8"][a & U32(0xFF)]),
    # VOP2
    "V_ADD_F32": ("f32", ("f32", "f32"), np.add), "V_SUB_F32": ("f32", ("f32", "f32"), np.subtract),
    "V_SUBREV_F32": ("f32", ("f32", "f32"), lambda a, b: b - a),
    "V_MUL_F32": ("f32", ("f32", "f32"), np.multiply),
    "V_MUL_LEGACY_F32": ("f32", ("f32", "f32"), lambda a, b: np.where((a == 0) | (b == 0), F32(0), a * b)),
    "V_MIN_F32": ("f32", ("f32", "f32"), min_num), "V_MAX_F32": ("f32", ("f32", "f32"), max_num),
    "V_ADD_F64": ("f64", ("f64", "f64"), np.add), "V_MUL_F64": ("f64", ("f64", "f64"), np.multiply),
    "V_MIN_F64": ("f64", ("f64", "f64"), min_num), "V_MAX_F64": ("f64", ("f64", "f64"), max_num),
    "V_ADD_F16": ("f16", ("f16", "f16"), np.add), "V_SUB_F16": ("f16", ("f16", "f16"), np.subtract),
    "V_MUL_F16": ("f16", ("f16", "f16"), np.multiply), "V_MIN_F16": ("f16", ("f16", "f16"), min_num),
    "V_MAX_F16": ("f16", ("f16", "f16"), max_num), "V_MIN_I32": ("i32", ("i32", "i32"), np.minimum),
    "V_MAX_I32": ("i32", ("i32", "i32"), np.maximum), "V_MIN_U32": ("u32", ("u32", "u32"), np.minimum),
    "V_MAX_U32": ("u32", ("u32", "u32"), np.maximum),
    "V_LSHRREV_B32": ("b32", ("u32", "b32"), lambda a, b: b >> (a & U32(31))),
    "V_ASHRREV_I32": ("i32", ("u32", "i32"), lambda a, b: b >> (a & U32(31)).astype(np.int32)),
    "V_LSHLREV_B32": ("b32", ("u32", "b32"), lambda a, b: b << (a & U32(31))),
    "V_LSHRREV_B16": ("b16", ("u16", "u16"), lambda a, b: b >> (a & U16(15))),
    "V_ASHRREV_I16": ("i16", ("u16", "i16"), lambda a, b: b >> (a & U16(15)).astype(np.int16)),
    "V_LSHLREV_B16": ("b16", ("u16", "u16"), lambda a, b: b << (a & U16(15))),
    "V_LSHRREV_B64": ("b64", ("u32", "b64"), lambda a, b: b >> (a & U32(63)).astype(U64)),
    "V_LSHLREV_B64": ("b64", ("u32", "b64"), lambda a, b: b << (a & U32(63)).astype(U64)),
    "V_ASHRREV_I64": ("i64", ("u32", "i64"), lambda a, b: b >> (a & U32(63)).astype(np.int64)),
    "V_AND_B32": ("b32", ("b32", "b32"), np.bitwise_and), "V_OR_B32": ("b32", ("b32", "b32"), np.bitwise_or),
    "V_XOR_B32": ("b32", ("b32", "b32"), np.bitwise_xor),
    "V_XNOR_B32": ("b32", ("b32", "b32"), lambda a, b: ~(a ^ b)),
    "V_ADD_U32": ("u32", ("u32", "u32"), np.add), "V_SUB_U32": ("u32", ("u32", "u32"), np.subtract),
    "V_ADD_I32": ("i32", ("i32", "i32"), np.add), "V_SUB_I32": ("i32", ("i32", "i32"), np.subtract),
    "V_SUBREV_U32": ("u32", ("u32", "u32"), lambda a, b: b - a), "V_ADD_U16": ("u16", ("u16", "u16"), np.add),
    "V_SUB_U16": ("u16", ("u16", "u16"), np.subtract),
    "V_SUBREV_U16": ("u16", ("u16", "u16"), lambda a, b: b - a),
    "V_MUL_LO_U16": ("u16", ("u16", "u16"), np.multiply), "V_MAX_U16": ("u16", ("u16", "u16"), np.maximum),
    "V_MIN_U16": ("u16", ("u16", "u16"), np.minimum), "V_MAX_I16": ("i16", ("i16", "i16"), np.maximum),
    "V_MIN_I16": ("i16", ("i16", "i16"), np.minimum),
    "V_MUL_U32_U24": ("u32", ("u32", "u32"), lambda a, b: (a & U32(0xFFFFFF)) * (b & U32(0xFFFFFF))),
    "V_MUL_HI_U32_U24": ("u32", ("u32", "u32"),
                         lambda a, b: (((a & U32(0xFFFFFF)).astype(U64) * (b & U32(0xFFFFFF)))
                                       >> U64(32)).astype(U32)),
    "V_MUL_I32_I24": ("i32", ("i32", "i32"), lambda a, b: ((a << 8) >> 8).astype(np.int64) * ((b << 8) >> 8)),
    "V_MUL_HI_I32_I24": ("i32", ("i32", "i32"),
                         lambda a, b: ((((a << 8) >> 8).astype(np.int64) * ((b << 8) >> 8)) >> 32)),
    "V_LDEXP_F32": ("f32", ("f32", "i32"), lambda a, b: ldexp(a, b, F32)),
    "V_LDEXP_F64": ("f64", ("f64", "i32"), lambda a, b: ldexp(a, b, F64)),
    "V_LDEXP_F16": ("f16", ("f16", "i16"), lambda a, b: ldexp(a, b, F16)),
    "V_FMAC_F32": ("f32", ("f32", "f32", "f32"), fma32),
    "V_FMA_F32": ("f32", ("f32", "f32", "f32"), fma32),
    "V_FMA_F64": ("f64", ("f64", "f64", "f64"), fma64),
    "V_FMAC_F64": ("f64", ("f64", "f64", "f64"), fma64),
    "V_FMA_F16": ("f16", ("f16", "f16", "f16"), lambda a, b, c: fused(a, b, c, F16)),
    "V_FMAMK_F32": ("f32", ("f32", "f32", "f32"), fma32),  # operands reordered at compile time
    "V_FMAAK_F32": ("f32", ("f32", "f32", "f32"), fma32),
    # VOP3-only
    "V_MUL_LO_U32": ("u32", ("u32", "u32"), lambda a, b: (a.astype(U64) * b).astype(U32)),
    "V_MUL_HI_U32": ("u32", ("u32", "u32"), lambda a, b: ((a.astype(U64) * b) >> U64(32)).astype(U32)),
    "V_MUL_HI_I32": ("i32", ("i32", "i32"), lambda a, b: ((a.astype(np.int64) * b) >> 32).astype(np.int32)),
    "V_ADD3_U32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: a + b + c),
    "V_LSHL_ADD_U32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: (a << (b & U32(31))) + c),
    "V_ADD_LSHL_U32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: (a + b) << (c & U32(31))),
    "V_LSHL_OR_B32": ("b32", ("b32", "u32", "b32"), lambda a, b, c: (a << (b & U32(31))) | c),
    "V_AND_OR_B32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: (a & b) | c),
    "V_OR3_B32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: a | b | c),
    "V_XAD_U32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: (a ^ b) + c),
    "V_BFE_U32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: bfe(a, b, c, False)),
    "V_BFE_I32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: bfe(a, b, c, True)),
    "V_BFI_B32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: (a & b) | (~a & c)),
    "V_BFM_B32": ("b32", ("u32", "u32"), lambda a, b: (((U64(1) << (a & U32(31)).astype(U64)) - U64(1))
                                                       << (b & U32(31)).astype(U64)).astype(U32)),
    "V_ALIGNBIT_B32": ("b32", ("b32", "b32", "u32"),
                       lambda a, b, c: (((a.astype(U64) << U64(32)) | b)
                                        >> (c & U32(31)).astype(U64)).astype(U32)),
    "V_ALIGNBYTE_B32": ("b32", ("b32", "b32", "u32"),
                        lambda a, b, c: (((a.astype(U64) << U64(32)) | b)
                                         >> ((c & U32(3)) * U32(8)).astype(U64)).astype(U32)),
    "V_PERM_B32": ("b32", ("b32", "b32", "b32"), perm),
    "V_MIN3_I32": ("i32", ("i32",) * 3, lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "V_MAX3_I32": ("i32", ("i32",) * 3, lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "V_MIN3_U32": ("u32", ("u32",) * 3, lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "V_MAX3_U32": ("u32", ("u32",) * 3, lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "V_MIN3_F32": ("f32", ("f32",) * 3, lambda a, b, c: min_num(min_num(a, b), c)),
    "V_MAX3_F32": ("f32", ("f32",) * 3, lambda a, b, c: max_num(max_num(a, b), c)),
    "V_MED3_I32": ("i32", ("i32",) * 3,
                   lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))),
    "V_MED3_U32": ("u32", ("u32",) * 3,
                   lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))),
    # V_MAD_LEGACY_* is gfx9's encoding of the gfx8 opcode, without op_sel: V_MAD_U16/I16's arithmetic
    "V_MAD_LEGACY_U16": ("u16", ("u16",) * 3, lambda a, b, c: a * b + c),
    "V_MAD_LEGACY_I16": ("i16", ("i16",) * 3, lambda a, b, c: a * b + c),
    "V_MAD_U32_U24": ("u32", ("u32",) * 3, lambda a, b, c: (a & U32(0xFFFFFF)) * (b & U32(0xFFFFFF)) + c),
    "V_MAD_I32_I24": ("i32", ("i32",) * 3, lambda a, b, c: ((a << 8) >> 8) * ((b << 8) >> 8) + c),
    "V_LSHL_ADD_U64": ("u64", ("u64", "u32", "u64"), lambda a, b, c: (a << (b & U32(7)).astype(U64)) + c),
    "V_CVT_PK_U16_U32": ("b32", ("u32", "u32"), lambda a, b: (a & U32(0xFFFF)) | (b << U32(16))),
    "V_PACK_B32_F16": ("b32", ("b16", "b16"), lambda a, b: a.astype(U32) | (b.astype(U32) << U32(16))),
    "V_CVT_PKRTZ_F16_F32": ("b32", ("f32", "f32"), lambda a, b: f16_rtz(a) | (f16_rtz(b) << U32(16))),
    "V_CVT_PK_BF16_F32": ("b32", ("f32", "f32"),
                          lambda a, b: f32_to_bf16_rne(a) | (f32_to_bf16_rne(b) << U32(16))),
    "V_DIV_FIXUP_F32": ("f32", ("f32",) * 3, lambda a, b, c: div_fixup(a, b, c)),
    "V_DIV_FIXUP_F64": ("f64", ("f64",) * 3, lambda a, b, c: div_fixup(a, b, c)),
    "V_RCP_IFLAG_F32": ("f32", ("f32",), lambda a: (1.0 / a.astype(F64)).astype(F32)),
    "V_RSQ_F64": ("f64", ("f64",), lambda a: 1.0 / np.sqrt(a)),
    "V_TRUNC_F64": ("f64", ("f64",), np.trunc), "V_CEIL_F64": ("f64", ("f64",), np.ceil),
    "V_FLOOR_F64": ("f64", ("f64",), np.floor), "V_RNDNE_F64": ("f64", ("f64",), np.rint),
    "V_FRACT_F64": ("f64", ("f64",), lambda a: np.minimum(a - np.floor(a), np.nextafter(F64(1), F64(0)))),
    "V_FREXP_EXP_I32_F64": ("i32", ("f64",), lambda a: np.asarray(np.where(np.isfinite(a), np.frexp(a)[1], 0),
                                                                  dtype=np.int32)),
    "V_FREXP_MANT_F64": ("f64", ("f64",),
                         lambda a: np.asarray(np.where(np.isfinite(a), np.frexp(a)[0], a), dtype=F64)),
    "V_TRUNC_F16": ("f16", ("f16",), np.trunc), "V_CEIL_F16": ("f16", ("f16",), np.ceil),
    "V_FLOOR_F16": ("f16", ("f16",), np.floor), "V_RNDNE_F16": ("f16", ("f16",), np.rint),
    "V_FRACT_F16": ("f16", ("f16",), lambda a: np.minimum(a - np.floor(a), np.nextafter(F16(1), F16(0)))),
    "V_SQRT_F16": ("f16", ("f16",), lambda a: np.sqrt(a.astype(F64)).astype(F16)),
    "V_RCP_F16": ("f16", ("f16",), lambda a: (1.0 / a.astype(F64)).astype(F16)),
    "V_RSQ_F16": ("f16", ("f16",), lambda a: (1.0 / np.sqrt(a.astype(F64))).astype(F16)),
    "V_EXP_F16": ("f16", ("f16",), lambda a: np.exp2(a.astype(F64)).astype(F16)),
    "V_LOG_F16": ("f16", ("f16",), lambda a: np.log2(a.astype(F64)).astype(F16)),
    "V_FREXP_MANT_F16": ("f16", ("f16",),
                         lambda a: np.asarray(np.where(np.isfinite(a), np.frexp(a)[0], a), dtype=F16)),
    "V_FREXP_EXP_I16_F16": ("i16", ("f16",), lambda a: np.asarray(np.where(np.isfinite(a), np.frexp(a)[1], 0),
                                                                  dtype=np.int16)),
    "V_CVT_F16_U16": ("f16", ("u16",), lambda a: a.astype(F16)),
    "V_CVT_F16_I16": ("f16", ("i16",), lambda a: a.astype(F16)),
    "V_CVT_U16_F16": ("u16", ("f16",), lambda a: cvt_int(a, 0, 2**16 - 1, U16)),
    "V_CVT_I16_F16": ("i16", ("f16",), lambda a: cvt_int(a, -(2**15), 2**15 - 1, np.int16)),
    "V_CVT_FLR_I32_F32": ("i32", ("f32",), lambda a: cvt_int(np.floor(a), -(2**31), 2**31 - 1, np.int32)),
    "V_CVT_RPI_I32_F32": ("i32", ("f32",),
                          lambda a: cvt_int(np.floor(a + F32(0.5)), -(2**31), 2**31 - 1, np.int32)),
    "V_CVT_PK_F16_F32": ("b32", ("f32", "f32"),
                         lambda a, b: to_bits(a.astype(F16), "f16")
                         | (to_bits(b.astype(F16), "f16") << U32(16))),
    "V_CVT_PK_I16_I32": ("b32", ("i32", "i32"),
                         lambda a, b: (np.clip(a, -(2**15), 2**15 - 1).astype(U32) & U32(0xFFFF))
                         | (np.clip(b, -(2**15), 2**15 - 1).astype(U32) << U32(16))),
    "V_FFBH_I32": ("i32", ("i32",), lambda a: ffbh((a ^ (a >> 31)).view(U32))),
    "V_SUBREV_F16": ("f16", ("f16", "f16"), lambda a, b: b - a),
    "V_MIN3_F16": ("f16", ("f16",) * 3, lambda a, b, c: min_num(min_num(a, b), c)),
    "V_MAX3_F16": ("f16", ("f16",) * 3, lambda a, b, c: max_num(max_num(a, b), c)),
    "V_MED3_F32": ("f32", ("f32",) * 3, lambda a, b, c: med3f(a, b, c)),
    "V_MED3_F16": ("f16", ("f16",) * 3, lambda a, b, c: med3f(a, b, c)),
    "V_MINIMUM3_F32": ("f32", ("f32",) * 3, lambda a, b, c: minimum(minimum(a, b), c)),
    "V_MAXIMUM3_F32": ("f32", ("f32",) * 3, lambda a, b, c: maximum(maximum(a, b), c)),
    "V_MIN3_I16": ("i16", ("i16",) * 3, lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "V_MAX3_I16": ("i16", ("i16",) * 3, lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "V_MIN3_U16": ("u16", ("u16",) * 3, lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "V_MAX3_U16": ("u16", ("u16",) * 3, lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "V_MED3_I16": ("i16", ("i16",) * 3,
                   lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))),
    "V_MED3_U16": ("u16", ("u16",) * 3,
                   lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))),
    "V_MAD_U16": ("u16", ("u16",) * 3, lambda a, b, c: a * b + c),
    "V_MAD_I16": ("i16", ("i16",) * 3, lambda a, b, c: a * b + c),
    "V_MAD_U32_U16": ("u32", ("u16", "u16", "u32"), lambda a, b, c: a.astype(U32) * b.astype(U32) + c),
    "V_MAD_I32_I16": ("i32", ("i16", "i16", "i32"), lambda a, b, c: a.astype(np.int32) * b.astype(np.int32)
                      + c), "V_SAD_U8": ("u32", ("u32",) * 3, lambda a, b, c: sad(a, b, 8) + c),
    "V_SAD_HI_U8": ("u32", ("u32",) * 3, lambda a, b, c: (sad(a, b, 8) << U32(16)) + c),
    "V_SAD_U16": ("u32", ("u32",) * 3, lambda a, b, c: sad(a, b, 16) + c),
    "V_SAD_U32": ("u32", ("u32",) * 3, lambda a, b, c: sad(a, b, 32) + c),
    "V_MSAD_U8": ("u32", ("u32",) * 3, lambda a, b, c: sad(a, b, 8, masked=True) + c),
    "V_LERP_U8": ("u32", ("u32",) * 3,
                  lambda a, b, c: sum(((((a >> U32(s)) & U32(0xFF)) + ((b >> U32(s)) & U32(0xFF))
                                        + ((c >> U32(s)) & U32(1))) >> U32(1)) << U32(s)
                                      for s in (0, 8, 16, 24))),
    "V_BCNT_U32_B32": ("u32", ("b32", "u32"),
                       lambda a, b: np.unpackbits(
                           np.ascontiguousarray(np.broadcast_to(a, np.broadcast(a, b).shape),
                                                dtype="<u4")[..., None].view(np.uint8),
                           axis=-1).sum(axis=-1).astype(U32) + b),
}



# Integer add and subtract with VOP3 clamp saturate to the result type's range (CDNA4 ISA, VOP3
# "CLAMP": integer results are saturated); LLVM selects them for llvm.uadd.sat/usub.sat/sadd.sat.
SATURATING = {"V_ADD_U32", "V_SUB_U32", "V_SUBREV_U32", "V_ADD_U16", "V_SUB_U16", "V_SUBREV_U16", "V_ADD_I32",
              "V_SUB_I32"}


def _saturating(fn: Callable[..., Any], t: str) -> Callable[..., np.ndarray]:
    """`fn` computed exactly (in int64) and clipped to type t's range."""
    signed = t.startswith("i")
    low, high = (-(1 << (BITS[t] - 1)), (1 << (BITS[t] - 1)) - 1) if signed else (0, (1 << BITS[t]) - 1)

    def sat(*args: np.ndarray) -> np.ndarray:
        exact = fn(*(np.asarray(a).astype(np.int64) for a in args))
        return np.asarray(np.clip(exact, low, high)).astype(VIEW[t])
    return sat


def compile_valu(cls: str, inst: Any, pc: int, size: int) -> Op:
    name = base_name(inst.op)
    ctx = Ctx(inst, cls)
    lower = inst.op.name.lower()
    if ctx.dpp and not _dpp_capable(name):
        raise Unsupported(name)
    if name.startswith("V_CMP") and cls in ("VOPC", "VOP3", "VOP3_SDST", "VOPC_SDWA_SDST"):
        return Op(pc, size, lower, "valu", _compare(ctx, name))
    special_op = special(ctx, name)
    if special_op is not None:
        return Op(pc, size, lower, "valu", special_op)
    if name not in VOPS:
        raise Unsupported(name)
    dt, sts, fn = VOPS[name]
    if ctx.vop3 and ctx.field("clmp") and not dt.startswith("f"):
        if name not in SATURATING:
            # other integer ops with clamp are not modelled: such an op stays unsupported
            raise Unsupported(name)
        fn = _saturating(fn, dt)
    dst_reg = vdst(inst)
    if name == "V_FMAMK_F32":  # d = s0 * K + s1
        reads = [ctx.read(0, "f32"), lit_read(ctx), ctx.read(1, "f32")]
    elif name == "V_FMAAK_F32":  # d = s0 * s1 + K
        reads = [ctx.read(0, "f32"), ctx.read(1, "f32"), lit_read(ctx)]
    elif name == "V_FMAC_F32":  # d = s0 * s1 + d
        reads = [ctx.read(0, "f32"), ctx.read(1, "f32"), lambda b: b.v[dst_reg].view(F32)]
    elif name == "V_FMAC_F64":
        reads = [ctx.read(0, "f64"), ctx.read(1, "f64"),
                 lambda b: (b.v[dst_reg].astype(U64) | (b.v[dst_reg + 1].astype(U64) << U64(32))).view(F64)]
    else:
        reads = [ctx.read(k, t) for k, t in enumerate(sts)]

    def run(b: Batch) -> None:
        with np.errstate(all="ignore"):
            result = finish(ctx, dt, np.asarray(fn(*(r(b) for r in reads))))
        write_dest(b, ctx, dst_reg, dt, result)
    return Op(pc, size, lower, "valu", run)


def _dpp_capable(name: str) -> bool:
    """Ops whose DPP form runs here: those that write one VGPR only, through `Ctx.lanes`: 32- and
    16-bit table ops and cndmask. Not the carries (the ISA's masks apply to the VGPR write only, and
    what becomes of the carry-out of a lane not written is not said), not the literal forms (DPP
    has no literal) and not 64-bit operands (those take DPP only as row_newbcast, gfx90a on)."""
    if name in VOPS and name not in ("V_FMAMK_F32", "V_FMAAK_F32"):
        dt, sts, _ = VOPS[name]
        return all(BITS[t] < 64 for t in (dt, *sts))
    return name == "V_CNDMASK_B32"



def _compare(ctx: Ctx, name: str) -> Run:
    parts = name.split("_")  # V_CMP[X]_<REL>_<TYPE> or V_CMP[X]_CLASS_<TYPE>
    x = parts[1] == "CMPX"
    rel, t = parts[2], parts[3].lower()
    a = ctx.read(0, t)
    b_ = ctx.read(1, "u32" if rel == "CLASS" else t)
    if ctx.cls == "VOPC":
        dest = VCC
    elif ctx.cls == "VOPC_SDWA_SDST":
        dest = int(ctx.inst.sdst.offset) if ctx.field("sd") else VCC
    else:
        dest = int(ctx.inst.vdst.offset)
    fn = float_class if rel == "CLASS" else lookup(CMP_OPS, rel)

    def run(b: Batch) -> None:
        lanes = b.lanes()
        with np.errstate(all="ignore"):
            result = np.broadcast_to(fn(a(b), b_(b)), (b.W, 64)) & lanes
        if dest < 128:  # V_CMPX writes its mask too (VCC in the VOPC encoding), then EXEC: CDNA4 pseudo-code
            b.write_mask64(dest, result)
        if x:
            b.write_mask64(EXEC, result)
    return run

