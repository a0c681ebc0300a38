"""Private (scratch) memory: SCRATCH loads and stores, and FLAT accesses into the private aperture
(and, as they share the aperture test, FLAT loads and stores into the shared one, which go to LDS).

gfx950 has architected flat scratch (LLVM's AMDGPUUsage, processor table and "Flat Scratch"): the
hardware points FLAT_SCRATCH at each wave's scratch, there is no private segment buffer V#, and a
scratch address is a per-lane byte offset that the hardware interleaves, so each lane sees its own
`private_segment_size` bytes. The emulator keeps those bytes per lane in the batch (machine.py)
and checks every access against them: one outside the lane's segment stops the run (the hardware
would read or write another lane's or wave's scratch).

Addresses (CDNA4 ISA, "Global, Scratch and Flat Address Space", CalcScratchAddr on .b32 values):
SCRATCH adds SGPR[saddr] (unless saddr is off), VGPR[vaddr] (when SVE is set) and a signed 13-bit
offset, in 32 bits. A FLAT address in the private aperture [src_private_base, + 2^32) (AMDGPUUsage,
"Address Space Mapping": 64-bit apertures are 2^32 bytes, 2^32-aligned) is a private offset in its
low dword; clang emits such accesses for private pointers made generic (-O0, or a private array
passed to a function). Buffer instructions never address scratch on gfx950 (no scratch V#).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from wgrad_cli.config.options import HIP_STACK_CAP
from wgrad_cli.emu.loader import Descriptor
from wgrad_cli.emu.machine import Batch, EmuFault, Op, Unsupported, lookup
from wgrad_cli.emu.ops import atomic as atomic_ops
from wgrad_cli.emu.ops.lanes import from_regs, to_regs, where, words
from wgrad_cli.emu.ops.lds import lds_load, lds_store
from wgrad_cli.emu.ops.lds_atomic import lds_rmw
from wgrad_cli.emu.ops.operands import APERTURES
from wgrad_cli.emu.ops.vmem import LOADS, OFF, STORES

PRIVATE_HI = APERTURES[237]  # src_private_base's high dword: the aperture is [PRIVATE_HI << 32, + 2^32)
SHARED_HI = APERTURES[235]  # src_shared_base's

Move = Callable[[Batch, np.ndarray, np.ndarray, np.ndarray], None]  # (batch, waves, lanes, private offsets)


def segment_bytes(k: Descriptor, stack_bytes: int) -> int:
    """Each lane's private bytes: the fixed size rounded up to a dword, as the CP does for the
    private segment size SGPR (AMDGPUUsage, "Initial Kernel Execution State"); for a kernel with a
    dynamic stack (alloca, recursion, calls LLVM cannot bound) the HIP runtime's size instead:
    `stack_bytes` or the fixed size if larger, at most HIP_STACK_CAP. None where the descriptor does
    not enable the private segment (the hardware then sets up no FLAT_SCRATCH, so every scratch
    access stops here)."""
    if not k.enable_private_segment:
        return 0
    size = min(max(stack_bytes, k.private_segment_size), HIP_STACK_CAP) if k.uses_dynamic_stack \
        else k.private_segment_size
    return -(-size // 4) * 4


def refusal(k: Descriptor) -> str | None:
    """Why the kernel's private memory cannot be set up as gfx950 does, or None."""
    if k.private_segment_buffer or k.flat_scratch_init:
        return ("its descriptor enables the private segment buffer or flat scratch init SGPRs, which gfx950 "
                "(architected flat scratch) does not support")
    return None


def _indices(b: Batch, waves: np.ndarray, lanes: np.ndarray, offsets: np.ndarray, nbytes: int,
             what: str) -> np.ndarray:
    """Indices into b.private of each lane's `nbytes` at its offset, (n, nbytes); EmuFault naming
    the first lane whose access leaves its private segment."""
    size = b.private_bytes
    bad = (offsets < 0) | (offsets + nbytes > size)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise EmuFault(f"{what} of {nbytes} bytes at private offset {int(offsets[i]):#x} outside the lane's "
                       f"{size}-byte {b.private_name} ({where(b, int(waves[i]), int(lanes[i]))})")
    start = (waves.astype(np.int64) * 64 + lanes) * size + offsets
    return np.asarray(start[:, None] + np.arange(nbytes))


def mover(inst: Any, what: str, lds: bool = False) -> Move:
    """The data movement of a scratch or flat load or store, given each lane's private offset (or,
    with `lds`, its LDS address); Unsupported for other ops (atomics, loads to LDS)."""
    name: str = inst.op.name
    _, kind, suffix = name.split("_", 2)
    acc = bool(getattr(inst, "acc", 0))
    if kind == "LOAD" and suffix in LOADS:
        nbytes, signed, d16 = LOADS[suffix]
        vdst = int(inst.vdst.offset) - 256

        def load(b: Batch, waves: np.ndarray, lanes: np.ndarray, offsets: np.ndarray) -> None:
            if lds:
                data = lds_load(b, offsets, nbytes, waves, lanes)
            else:
                data = b.private[_indices(b, waves, lanes, offsets, nbytes, what)]
            to_regs(b.a if acc else b.v, vdst, data, signed, d16, waves, lanes)
            b.stats.bytes_loaded += data.size
        return load
    if kind == "STORE" and suffix in STORES:
        nb, hi = STORES[suffix]
        vdata = int(inst.data.offset) - 256

        def store(b: Batch, waves: np.ndarray, lanes: np.ndarray, offsets: np.ndarray) -> None:
            data = from_regs(b.a if acc else b.v, vdata, nb, hi, waves, lanes)
            if lds:
                lds_store(b, offsets, data, waves, lanes)
            else:
                b.private[_indices(b, waves, lanes, offsets, nb, what)] = data
            b.stats.bytes_stored += data.size
        return store
    raise Unsupported(name)


def compile_scratch(inst: Any, pc: int, size: int) -> Op:
    what = inst.op.name.lower()
    move = mover(inst, what)
    saddr, vaddr, sve = int(inst.saddr.offset), int(inst.addr.offset) - 256, bool(inst.sve)
    raw = int(inst.offset)
    offset = raw - (1 << 13) if raw & (1 << 12) else raw

    def run(b: Batch) -> None:
        waves, lanes = np.nonzero(b.lanes())
        address = np.full(len(waves), offset, dtype=np.int64)
        if saddr != OFF:
            address += b.s[saddr][waves]
        if sve:
            address += b.v[vaddr][waves, lanes]
        move(b, waves, lanes, address & 0xFFFFFFFF)  # a 32-bit sum: a negative one is far out of range
    return Op(pc, size, what, "vmem", run)


def lds_atomic_mover(inst: Any) -> Move:
    """A FLAT atomic on LDS addresses (the DS atomic of the same kind); Unsupported for other ops."""
    name: str = inst.op.name
    _, kind, suffix = name.split("_", 2)
    if kind != "ATOMIC":
        raise Unsupported(name)
    atomic = lookup(atomic_ops.ATOMICS, suffix)
    acc, vdata, vdst, returns = bool(getattr(inst, "acc", 0)), int(inst.data.offset) - 256, \
        int(inst.vdst.offset) - 256, bool(inst.sc0)

    def rmw(b: Batch, waves: np.ndarray, lanes: np.ndarray, offsets: np.ndarray) -> None:
        regs = b.a if acc else b.v
        data = words(regs, vdata, atomic.width, 2 if atomic.pair else 1, waves, lanes)
        old = lds_rmw(b, offsets, waves, lanes, atomic, data[:, 0], data[:, 1] if atomic.pair else None)
        if returns:
            to_regs(regs, vdst, old.view(np.uint8).reshape(-1, atomic.width), False, None, waves, lanes)
    return rmw


def with_apertures(inst: Any, global_op: Op) -> Op:
    """A FLAT op that sends its lanes whose address lies in the private aperture to their private
    memory, those in the shared (LDS) aperture to the workgroup's LDS (the low dword is the LDS
    address: AMDGPUUsage, "Address Space Mapping"; clang emits such accesses for LDS pointers made
    generic, as at -O0), and the rest to `global_op`. A FLAT atomic goes to LDS as the DS atomic
    does; in the private aperture it is not implemented, and `global_op`'s sanitizer stops it."""
    try:
        to_private, to_lds = mover(inst, global_op.name), mover(inst, global_op.name, lds=True)
    except Unsupported:
        try:
            to_private, to_lds = None, lds_atomic_mover(inst)
        except Unsupported:
            return global_op
    vaddr, offset = int(inst.addr.offset) - 256, int(inst.offset)

    def run(b: Batch) -> None:
        executing = b.lanes()
        hi = b.v[vaddr + 1]
        # or a carry into one
        near = ((hi - np.uint32(PRIVATE_HI - 1)) <= 1) | ((hi - np.uint32(SHARED_HI - 1)) <= 1)
        if not (near & executing).any():  # the usual case: all global
            global_op.run(b)
            return
        lo = b.v[vaddr].astype(np.int64) + offset
        top = hi.astype(np.int64) + (lo >> 32)
        rest = executing
        for aperture, move in ((PRIVATE_HI, to_private), (SHARED_HI, to_lds)):
            inside = executing & (top == aperture)
            waves, lanes = np.nonzero(inside)
            if move is not None and len(waves):
                move(b, waves, lanes, lo[waves, lanes] & 0xFFFFFFFF)
                rest = rest & ~inside
        if rest.any():
            with b.only(rest):
                global_op.run(b)
    return Op(global_op.pc, global_op.size, global_op.name, global_op.klass, run, global_op.jumps)
