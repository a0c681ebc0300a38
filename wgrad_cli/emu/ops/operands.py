"""Reading instruction operands: the 9-bit source space of the CDNA4 encodings.

0-101 SGPRs, 102-105 flat_scratch/xnack_mask, 106-107 VCC, 108-123 TTMPs, 124 M0, 126-127 EXEC,
128-192 the integers 0..64, 193-208 the integers -1..-16, 240-248 float constants, 251 VCCZ,
252 EXECZ, 253 SCC, 255 a 32-bit literal, 256-511 VGPRs (CDNA4 ISA, "Source operands"). A float
constant is encoded at the operand's own width (f16, f32 or f64); an integer constant is
sign-extended to it. A literal feeds the high half of an f64 operand and is zero-extended for
other 64-bit operands (LLVM's AMDGPU operand rules).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np

from wgrad_cli.emu.machine import EXEC, VCC, Batch, EmuFault

Read = Callable[[Batch], np.ndarray]

FLOATS = {240: 0.5, 241: -0.5, 242: 1.0, 243: -1.0, 244: 2.0, 245: -2.0, 246: 4.0, 247: -4.0}
INV_2PI = {16: 0x3118, 32: 0x3E22F983, 64: 0x3FC45F306DC9C882}
LITERAL = 255
# Flat-address apertures (gfx9's src_shared_base 235, src_shared_limit 236, src_private_base 237,
# src_private_limit 238), as the high dword of the 64-bit value: the ROCm values for gfx9. Kernels
# compare an LDS pointer made generic against them; the emulator's heap lies far from both.
APERTURES = {235: 0x10000, 236: 0x1FFFF, 237: 0x20000, 238: 0x2FFFF}


def constant(src: int, bits: int, literal: int | None, float_operand: bool) -> int | None:
    """The bit pattern of a constant operand at `bits` width, or None for a register operand."""
    mask = (1 << bits) - 1
    if 128 <= src <= 192:
        return src - 128
    if 193 <= src <= 208:
        return (-(src - 192)) & mask
    if src in FLOATS:
        value = FLOATS[src]
        if bits == 16:
            return int(np.float16(value).view(np.uint16))
        if bits == 64:
            return int(struct.unpack("<Q", struct.pack("<d", value))[0])
        return int(struct.unpack("<I", struct.pack("<f", value))[0])
    if src == 248:
        return INV_2PI[bits]
    if src == LITERAL:
        if literal is None:
            raise EmuFault("literal operand without a literal")
        return (literal << 32) if bits == 64 and float_operand else literal
    return None


def scalar(src: int, bits: int = 32, literal: int | None = None, float_operand: bool = False) -> Read:
    """A scalar operand as one value per wave, shape (W,): uint32, or uint64 when bits == 64."""
    if (c := constant(src, bits, literal, float_operand)) is not None:
        dtype = np.uint64 if bits == 64 else np.uint32
        return lambda b: np.full(b.W, c, dtype=dtype)
    if src == 251:
        return lambda b: np.asarray((b.s[VCC] | b.s[VCC + 1]) == 0, dtype=np.uint32)
    if src == 252:
        return lambda b: np.asarray((b.s[EXEC] | b.s[EXEC + 1]) == 0, dtype=np.uint32)
    if src == 253:
        return lambda b: np.asarray(b.scc, dtype=np.uint32)
    if src in APERTURES:  # src_shared_base/limit, src_private_base/limit: the high dword of a 64-bit aperture
        value = np.uint64(APERTURES[src] << 32) if bits == 64 else np.uint32(APERTURES[src])
        return lambda b: np.full(b.W, value)
    if src >= 256:
        raise EmuFault("a VGPR where the encoding takes a scalar")
    if src > 127:
        raise EmuFault(f"source operand {src} is reserved")
    if bits == 64:
        return lambda b: b.s[src].astype(np.uint64) | (b.s[src + 1].astype(np.uint64) << np.uint64(32))
    return lambda b: b.s[src]


def vector(src: int, bits: int = 32, literal: int | None = None, float_operand: bool = False,
           agpr: bool = False) -> Read:
    """A vector-instruction operand, broadcastable to (W, 64): uint32, or uint64 when bits == 64.
    `agpr` reads VGPR-space numbers from the AGPR file (MFMA and acc operands)."""
    if src >= 256:
        r = src - 256
        if bits == 64:
            return (lambda b: b.a[r].astype(np.uint64)
                    | (b.a[r + 1].astype(np.uint64) << np.uint64(32))) if agpr \
                else (lambda b: b.v[r].astype(np.uint64) | (b.v[r + 1].astype(np.uint64) << np.uint64(32)))
        return (lambda b: b.a[r]) if agpr else (lambda b: b.v[r])
    if (c := constant(src, bits, literal, float_operand)) is not None:
        const = np.asarray(c, dtype=np.uint64 if bits == 64 else np.uint32)  # 0-d: broadcasts over (W, 64)
        return lambda b: const
    read = scalar(src, bits, literal, float_operand)
    return lambda b: read(b)[:, None]
