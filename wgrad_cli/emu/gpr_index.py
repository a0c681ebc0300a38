"""VGPR indexing mode: s_set_gpr_idx_on / s_set_gpr_idx_off and the moves between them.

LLVM reads or writes an element of a register-resident array at a dynamic, wave-uniform index as
`s_set_gpr_idx_on sN, gpr_idx(SRC0|DST)`, one or more `v_mov_b32`, `s_set_gpr_idx_off`, always
straight-line. CDNA4 ISA (SOPC and "VGPR Indexing"): S_SET_GPR_IDX_ON sets M0[7:0] = S0[7:0],
M0[15:12] = the immediate's enables (1 SRC0, 2 SRC1, 4 SRC2, 8 DST) and turns the mode on; while
it is on, each enabled VGPR operand of a VALU instruction is offset by M0[7:0]; S_SET_GPR_IDX_OFF
turns it off. The emulator finds those regions in address order and runs their v_mov_b32 with the
offsets of each wave's M0; scalar instructions there run as usual, and any other vector
instruction inside a region stops the run if reached.

An index past the wave's VGPRs is defined (CDNA4 ISA 3.6.1, "Out-of-Range behavior"): a source
reads VGPR0, a destination makes the instruction a no-op. Compilers rely on it: LLVM may hoist an
array read whose index is out of range on a path that then discards the value (a poison
extractelement), so such a read is not a fault.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wgrad_cli.emu.machine import M0, Batch, EmuFault, Op, Run
from wgrad_cli.emu.ops import operands as opd

SRC0, DST = 1, 8
SCALAR = {"salu", "smem", "branch", "barrier", "other"}  # op classes the mode does not touch


def _set_on(inst: Any) -> Run:
    src = opd.scalar(inst.ssrc0.offset, 32, None)
    enables = int(inst.ssrc1.offset) & 0xF

    def run(b: Batch) -> None:
        m0 = b.s[M0] & np.uint32(~0xF0FF & 0xFFFFFFFF)
        b.write_s(M0, m0 | (src(b) & np.uint32(0xFF)) | np.uint32(enables << 12))
    return run


def _indexed_move(op: Op, vdst: int, src: int, enables: int) -> Op:
    """v_mov_b32 vdst, src with each wave's M0[7:0] added to the enabled VGPR operands."""
    vector_src = src >= 256
    scalar = None if vector_src else opd.scalar(src, 32, None)

    def run(b: Batch) -> None:
        lanes = b.lanes()
        index = (b.s[M0] & np.uint32(0xFF)).astype(np.int64)
        value = b.v[0] if scalar is None else np.broadcast_to(scalar(b)[:, None], (b.W, 64))
        for k in np.unique(index[lanes.any(axis=1)]):
            d = vdst + (int(k) if enables & DST else 0)
            if d >= b.v.shape[0]:
                continue  # an out-of-range destination: the move is a no-op
            s = src - 256 + (int(k) if enables & SRC0 else 0)
            source = (b.v[s] if s < b.v.shape[0] else b.v[0]) if vector_src else value
            b.write_v(b.v, d, source, lanes & (index == k)[:, None])
    return Op(op.pc, op.size, op.name, "valu", run)


def _stop(op: Op) -> Op:
    def run(_: Batch) -> None:
        raise EmuFault(f"{op.name} at offset {op.pc:#x}: only v_mov_b32 is implemented in VGPR indexing mode")
    return Op(op.pc, op.size, op.name, "unsupported", run, jumps=True)


def apply(decoded: list[tuple[int, str, Any]], ops: dict[int, Op]) -> dict[int, Op]:
    """`ops` with the indexing instructions and the ops of their regions replaced; `decoded` is
    each instruction's (pc, mnemonic, decoded instruction) in address order."""
    enables = None
    out = dict(ops)
    for pc, mnemonic, inst in decoded:
        op = ops[pc]
        if mnemonic == "s_set_gpr_idx_on":
            enables = int(inst.ssrc1.offset) & 0xF
            out[pc] = Op(pc, op.size, op.name, "salu", _set_on(inst))
        elif mnemonic == "s_set_gpr_idx_off":
            enables = None
            out[pc] = Op(pc, op.size, op.name, "salu", lambda b: None)
        elif enables is not None and op.klass not in SCALAR:
            if mnemonic == "v_mov_b32_e32":
                out[pc] = _indexed_move(op, int(inst.vdst.offset) - 256, int(inst.src0.offset), enables)
            else:
                out[pc] = _stop(op)
    return out
