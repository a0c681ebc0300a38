"""The waves' instruction streams as the emulator executes them, recorded for the timing model.

The recorder wraps each op of a program: before the op runs, it notes the op, the waves at its
program counter and, for the instructions whose cost depends on their lanes, that cost per wave
(LDS: clocks on the banks from the lanes' addresses; vector memory: bytes the active lanes move).
Everything is numpy over the waves at once: one entry per executed instruction, not per lane.
MFMAs do not compute (their results feed no address or branch in the kernels modelled; the model
says so), which keeps a modelled workgroup about as cheap as its non-matrix instructions; what an
MFMA records is the share of its A and B operand bits that changed since the wave's previous MFMA
(the toggle rate that moves the matrix pipes' power), in parts per million, as its cost.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from wgrad_cli.emu.machine import Batch, Op
from wgrad_cli.emu.ops.lds import ds_fields
from wgrad_cli.emu.ops.matrix import DENSE, DENSE_TYPES, F8F6F4
from wgrad_cli.emu.program import Decoded, Program
from wgrad_cli.model.machine import Machine
from wgrad_cli.model.ops import Kind, Static, statics

LDS_WORD = 4  # bytes per bank
PPM = 1_000_000
NO_TOGGLE = -1  # an MFMA's cost where the wave ran no MFMA before it (nothing to compare)
OPERAND_WORDS = 16 * 64  # A and B of any MFMA the emulator runs: at most 8 registers each, 64 lanes


def operand_registers(decoded: Decoded) -> list[tuple[bool, int, int]]:
    """An MFMA's A and B operands as (AGPR, first register, registers); none for the forms the
    emulator does not run."""
    inst = decoded.inst
    match = DENSE.match(inst.op.name)
    src0, src1 = int(inst.src0.offset) - 256, int(inst.src1.offset) - 256
    if match is None or src0 < 0 or src1 < 0:
        return []
    m, n, k = int(match[2]), int(match[3]), int(match[4])
    kinds = match[5].split("_")
    a, b = (F8F6F4.get(int(inst.cbsz)), F8F6F4.get(int(inst.blgp))) if match[5] == "F8F6F4" else \
        (DENSE_TYPES.get(kinds[0]), DENSE_TYPES.get(kinds[-1]))
    if a is None or b is None:
        return []
    bits_a, bits_b = a[0], b[0]
    acc = int(inst.acc)
    return [(bool(acc & 1), src0, -(-(k * m // 64) * bits_a // 32)),
            (bool(acc & 2), src1, -(-(k * n // 64) * bits_b // 32))]


def bank_cycles(addr: np.ndarray, active: np.ndarray, nbytes: int, banks: int, per_clock: int) -> np.ndarray:
    """Clocks the LDS takes for one access per lane, per wave: (waves, 64) byte addresses.

    Lanes go in groups that move at most `per_clock` bytes (64 lanes for 4-byte accesses at 256 bytes
    a clock, 32 for 8, 16 for 16); a group takes as many clocks as the most distinct dwords any of the
    `banks` banks holds among its active lanes (lanes reading one dword share it)."""
    dwords = max(1, -(-nbytes // LDS_WORD))
    per_group = max(1, per_clock // (LDS_WORD * dwords))
    waves = addr.shape[0]
    groups = -(-64 // per_group)
    w, lane = np.nonzero(active)
    if not len(w):
        return np.zeros(waves, dtype=np.int64)
    first = (addr[w, lane].astype(np.int64) & 0xFFFFFFFF) // LDS_WORD
    word = (first[:, None] + np.arange(dwords)).ravel()
    slot = np.repeat(w * groups + lane // per_group, dwords)
    key = np.unique((slot << 32) | word)
    slot, word = key >> 32, key & 0xFFFFFFFF
    load = np.bincount(slot * banks + word % banks,
                       minlength=waves * groups * banks).reshape(waves, groups, banks)
    cycles: np.ndarray = load.max(axis=2).sum(axis=1)
    return cycles


@dataclass
class Stream:
    """One wave's executed instructions, in order: program counters and each one's lane cost
    (LDS clocks, or vector memory bytes; 0 elsewhere)."""

    pcs: np.ndarray
    costs: np.ndarray


class Recorder:
    """Records what a batch of waves executes; `ops` are the kernel's ops (Program.ops_for) with the
    recording in."""

    def __init__(self, program: Program, ops: dict[int, Op], machine: Machine) -> None:
        self.machine = machine
        self.static = statics(program, machine)
        self.pcs: list[int] = []
        self.masks: list[np.ndarray | None] = []  # None: every wave of the batch
        self.costs: list[np.ndarray | None] = []
        self.operands: np.ndarray | None = None  # each wave's last MFMA's A and B registers (toggle rate)
        self.had_mfma = np.zeros(0, dtype=bool)
        decoded = {d.pc: d for d in program.decoded}
        self.ops = {pc: self._wrap(op, decoded[pc]) for pc, op in ops.items()}

    def _note(self, b: Batch, pc: int, cost: np.ndarray | None) -> None:
        self.pcs.append(pc)
        self.masks.append(None if b.all else b.wm.copy())
        self.costs.append(cost)

    def _wrap(self, op: Op, decoded: Decoded) -> Op:
        info = self.static.get(op.pc)
        if info is None:
            return op
        inner, note, pc = op.run, self._note, op.pc
        banks, per_clock = self.machine.lds_banks, self.machine.lds_bytes_per_cycle

        if info.kind == Kind.MFMA:
            spans = operand_registers(decoded)
            bits = sum(n for _, _, n in spans) * 32 * 64

            def mfma(b: Batch) -> None:
                words = np.zeros((b.W, OPERAND_WORDS), dtype=np.uint32)
                at = 0
                for agpr, reg, n in spans:
                    words[:, at: at + n * 64] = (np.moveaxis((b.a if agpr else b.v)[reg: reg + n], 0, 1)
                                                 .reshape(b.W, -1))
                    at += n * 64
                toggle = np.full(b.W, NO_TOGGLE, dtype=np.int64)
                ran = np.ones(b.W, dtype=bool) if b.all else b.wm
                if self.operands is not None:
                    flips = np.bitwise_count(self.operands ^ words).sum(axis=1)
                    toggle = np.where(self.had_mfma, flips * PPM // bits, NO_TOGGLE)
                    self.operands[ran] = words[ran]
                else:
                    self.operands = words
                    self.had_mfma = np.zeros(b.W, dtype=bool)
                self.had_mfma |= ran
                note(b, pc, toggle)
            return replace(op, run=mfma)
        if info.kind == Kind.LDS and info.lane_bytes:
            f = ds_fields(decoded.inst)
            offsets = _lds_offsets(decoded.inst.op.name, f.off0, f.off1, info)

            def lds(b: Batch) -> None:
                active, base = b.lanes(), b.v[f.vaddr].astype(np.int64)
                note(b, pc, np.sum([bank_cycles(base + off, active, info.lane_bytes, banks, per_clock)
                                    for off in offsets], axis=0))
                inner(b)
            return replace(op, run=lds)
        if info.kind in (Kind.LOAD, Kind.STORE):
            def vmem(b: Batch) -> None:
                note(b, pc, np.count_nonzero(b.lanes(), axis=1) * info.lane_bytes)
                inner(b)
            return replace(op, run=vmem)

        def plain(b: Batch) -> None:
            note(b, pc, None)
            inner(b)
        return replace(op, run=plain)

    def streams(self, waves: int) -> list[Stream]:
        """Each wave's stream, for the batch of `waves` waves just run."""
        steps = len(self.pcs)
        if not steps:
            return [Stream(np.zeros(0, np.int64), np.zeros(0, np.int64)) for _ in range(waves)]
        ran = np.ones((steps, waves), dtype=bool)
        cost = np.zeros((steps, waves), dtype=np.int64)
        for i, (m, c) in enumerate(zip(self.masks, self.costs)):
            if m is not None:
                ran[i] = m
            if c is not None:
                cost[i] = c
        pcs = np.asarray(self.pcs, dtype=np.int64)
        out = []
        for w in range(waves):
            at = np.flatnonzero(ran[:, w])
            out.append(Stream(pcs[at], cost[at, w]))
        return out

    def clear(self) -> None:
        self.operands = None
        self.pcs.clear()
        self.masks.clear()
        self.costs.clear()


def _lds_offsets(name: str, off0: int, off1: int, info: Static) -> list[int]:
    """The byte offsets a DS instruction adds to its address VGPR: one, or two for read2/write2."""
    if info.accesses == 2:
        scale = 64 if "ST64" in name else 1
        return [off0 * info.lane_bytes * scale, off1 * info.lane_bytes * scale]
    return [off0 | (off1 << 8)]
