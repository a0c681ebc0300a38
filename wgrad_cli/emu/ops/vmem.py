"""Vector memory instructions: global, flat (to global memory) and buffer (MUBUF) loads, stores and
atomics (their read-modify-writes are atomic_ops').

Addresses follow the CDNA4 ISA reference ("Global, Scratch and Flat Address Space", "Buffer
Instructions"): global is a 64-bit VGPR pair plus a signed 13-bit offset, or an SGPR pair base
plus a 32-bit VGPR offset; buffer is the V# base plus SGPR, instruction and VGPR offsets, and a
dword whose offset runs past the V#'s num_records reads 0 and writes nothing. Every access of an
executing lane is checked against the heap's allocations; one outside all of them stops the run
(a real GPU would fault or, worse, read another buffer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from wgrad_cli.emu.machine import M0, Batch, EmuFault, Op, Unsupported, lookup
from wgrad_cli.emu.ops import atomic as atomic_ops
from wgrad_cli.emu.ops.lanes import from_regs, to_regs, where, words
from wgrad_cli.emu.ops.lds import lds_store

U32, U64 = np.uint32, np.uint64
OFF = 127  # saddr "off"

# load name suffix -> (bytes, signed, d16 half: None, "lo" or "hi")
LOADS: dict[str, tuple[int, bool, str | None]] = {
    "UBYTE": (1, False, None), "SBYTE": (1, True, None), "USHORT": (2, False, None),
    "SSHORT": (2, True, None), "DWORD": (4, False, None), "DWORDX2": (8, False, None),
    "DWORDX3": (12, False, None), "DWORDX4": (16, False, None), "UBYTE_D16": (1, False, "lo"),
    "UBYTE_D16_HI": (1, False, "hi"), "SBYTE_D16": (1, True, "lo"), "SBYTE_D16_HI": (1, True, "hi"),
    "SHORT_D16": (2, False, "lo"), "SHORT_D16_HI": (2, False, "hi"),
}
STORES: dict[str, tuple[int, bool]] = {  # bytes, from the high half
    "BYTE": (1, False), "BYTE_D16_HI": (1, True), "SHORT": (2, False), "SHORT_D16_HI": (2, True),
    "DWORD": (4, False), "DWORDX2": (8, False), "DWORDX3": (12, False), "DWORDX4": (16, False),
}


def checked(b: Batch, addr: np.ndarray, nbytes: int, waves: np.ndarray, lanes: np.ndarray, what: str,
            store: bool) -> np.ndarray:
    """Heap offsets of the accesses; EmuFault naming the first lane outside every allocation (or, for
    a store, in a loaded image's read-only segment)."""
    fault = b.heap.check(addr, nbytes, store)
    if fault is not None:
        raise EmuFault(f"{what} of {nbytes} bytes at {fault.address:#x} {b.heap.describe(fault, store)} "
                       f"({where(b, int(waves[fault.lane]), int(lanes[fault.lane]))})")
    return b.heap.offsets(addr)


def gather(b: Batch, addr: np.ndarray, nbytes: int, waves: np.ndarray, lanes: np.ndarray,
           what: str) -> np.ndarray:
    """The bytes at each address, (n, nbytes)."""
    return b.heap.bytes[checked(b, addr, nbytes, waves, lanes, what, False)[:, None] + np.arange(nbytes)]


def scatter(b: Batch, addr: np.ndarray, data: np.ndarray, waves: np.ndarray, lanes: np.ndarray,
            what: str) -> None:
    nbytes = data.shape[1]
    b.heap.bytes[checked(b, addr, nbytes, waves, lanes, what, True)[:, None] + np.arange(nbytes)] = data


Place = Callable[[Batch, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def compile_atomic(suffix: str, pc: int, size: int, what: str, acc: bool, vdata: int, vdst: int,
                   returns: bool, place: Place) -> Op:
    """A global, flat or buffer atomic (CDNA4 ISA, `*_ATOMIC_*`): `place` gives each lane's address
    and whether the atomic is done there (buffer range checking: one outside num_records is not
    done and returns 0). The data registers hold the operand, then cmpswap's compare value; with
    SC0 (GLC) the pre-op word goes to `vdst`. An address outside every allocation stops the run, as
    for loads; so does one not aligned to the word, whose effect the ISA leaves undefined."""
    atomic = lookup(atomic_ops.ATOMICS, suffix)
    width = atomic.width

    def run(b: Batch) -> None:
        waves, lanes = np.nonzero(b.lanes())
        addr, done = place(b, waves, lanes)
        regs = b.a if acc else b.v
        data = words(regs, vdata, width, 2 if atomic.pair else 1, waves, lanes)[done]
        at = checked(b, addr[done], width, waves[done], lanes[done], what, True)
        if np.any(at % width):
            lane = int(np.flatnonzero(at % width)[0])
            raise EmuFault(f"{what} at {int(addr[done][lane]):#x}, not aligned to {width} bytes "
                           f"({where(b, int(waves[done][lane]), int(lanes[done][lane]))})")
        old = np.zeros(len(waves), dtype=U32 if width == 4 else U64)
        with atomic_ops.serialised():
            old[done] = atomic_ops.rmw(b.heap.bytes, at, atomic, data[:, 0],
                                       data[:, 1] if atomic.pair else None)
        if returns:
            to_regs(regs, vdst, old.view(np.uint8).reshape(-1, width), False, None, waves, lanes)
            b.stats.bytes_loaded += len(at) * width
        b.stats.bytes_stored += len(at) * width
    return Op(pc, size, what, "vmem", run)


# Loads that can write LDS directly (CDNA4 ISA, "Memory Buffer Load to LDS"; gfx950 adds x3 and x4).
LDS_DMA = {"UBYTE", "SBYTE", "USHORT", "SSHORT", "DWORD", "DWORDX3", "DWORDX4"}


def into_lds(b: Batch, data: np.ndarray, waves: np.ndarray, lanes: np.ndarray, offset: int, signed: bool,
             m0_mask: int) -> None:
    """LDS DMA: each lane's loaded data goes to LDS, not to VGPRs, at M0 + instruction offset +
    lane * 4, or lane * 16 for 3- and 4-dword loads, a 3-dword load leaving the 4th dword alone
    (CDNA4 ISA, "Memory Buffer Load to LDS" and the FLAT chapter's LDS_ADDR equations; the buffer
    form takes M0[17:0], global M0[17:2] * 4: `m0_mask`). LLVM's global.load.lds and
    buffer.load.lds intrinsics apply the immediate offset to both addresses. A byte or short load
    writes its value extended to a dword, as it would arrive in a VGPR: the text gives the lane
    stride of 4 for every form under 3 dwords but not the width written; the data path returns
    dwords. Lanes outside EXEC leave their slot untouched."""
    nbytes = data.shape[1]
    if nbytes < 4:
        raw = (data[:, 0].astype(U32) if nbytes == 1
               else np.ascontiguousarray(data).view("<u2")[:, 0].astype(U32))
        if signed:
            raw = np.where(raw >> U32(8 * nbytes - 1), raw | U32((0xFFFFFFFF << (8 * nbytes)) & 0xFFFFFFFF),
                           raw)
        data = np.ascontiguousarray(raw.astype("<u4")).view(np.uint8).reshape(-1, 4)
    stride = 16 if data.shape[1] > 4 else 4
    addr = (b.s[M0][waves].astype(np.int64) & m0_mask) + offset + lanes.astype(np.int64) * stride
    lds_store(b, addr, data, waves, lanes)


CACHE_OPS = {"BUFFER_WBL2", "BUFFER_INV"}  # what clang-22 emits around agent- and system-scope atomics


def _kind(name: str) -> tuple[str, str]:
    """('LOAD' | 'STORE', type suffix) of e.g. GLOBAL_LOAD_DWORDX4."""
    parts = name.split("_", 2)
    return parts[1], parts[2] if len(parts) > 2 else ""  # cache ops (BUFFER_WBL2) have no type


def compile_global(cls: str, inst: Any, pc: int, size: int) -> Op:
    name = inst.op.name
    kind, suffix = _kind(name)
    lds_dma = suffix.startswith("LDS_")
    suffix = suffix.removeprefix("LDS_")
    if kind not in ("LOAD", "STORE", "ATOMIC") or (kind == "LOAD" and suffix not in LOADS) or \
            (kind == "STORE" and suffix not in STORES) or (lds_dma and suffix not in LDS_DMA):
        raise Unsupported(name)
    vaddr = int(inst.addr.offset) - 256
    saddr = int(inst.saddr.offset) if cls == "GLOBAL" else OFF
    raw_offset = int(inst.offset)
    offset = raw_offset - (1 << 13) if cls == "GLOBAL" and raw_offset & (1 << 12) else raw_offset
    acc = bool(getattr(inst, "acc", 0))
    what = name.lower()

    def addresses(b: Batch, waves: np.ndarray, lanes: np.ndarray) -> np.ndarray:
        if saddr == OFF:
            lo, hi = b.v[vaddr][waves, lanes], b.v[vaddr + 1][waves, lanes]
            base = lo.astype(U64) | (hi.astype(U64) << U64(32))
        else:
            sbase = b.s[saddr][waves].astype(U64) | (b.s[saddr + 1][waves].astype(U64) << U64(32))
            base = sbase + b.v[vaddr][waves, lanes].astype(U64)
        return np.asarray((base.astype(np.int64) + offset).astype(U64))

    if kind == "ATOMIC":
        return compile_atomic(suffix, pc, size, what, acc, int(inst.data.offset) - 256,
                              int(inst.vdst.offset) - 256, bool(inst.sc0),
                              lambda b, ws, ls: (addresses(b, ws, ls), np.ones(len(ws), dtype=bool)))
    if lds_dma:
        nbytes = LOADS[suffix][0]

        def dma(b: Batch) -> None:
            waves, lanes = np.nonzero(b.lanes())
            data = gather(b, addresses(b, waves, lanes), nbytes, waves, lanes, what)
            into_lds(b, data, waves, lanes, offset, LOADS[suffix][1], 0x3FFFC)
            b.stats.bytes_loaded += data.size
        return Op(pc, size, what, "vmem", dma)
    if kind == "LOAD":
        nbytes, signed, d16 = LOADS[suffix]
        vdst = int(inst.vdst.offset) - 256

        def load(b: Batch) -> None:
            waves, lanes = np.nonzero(b.lanes())
            data = gather(b, addresses(b, waves, lanes), nbytes, waves, lanes, what)
            to_regs(b.a if acc else b.v, vdst, data, signed, d16, waves, lanes)
            b.stats.bytes_loaded += data.size
        return Op(pc, size, what, "vmem", load)
    nb, hi = STORES[suffix]
    vdata = int(inst.data.offset) - 256

    def store(b: Batch) -> None:
        waves, lanes = np.nonzero(b.lanes())
        data = from_regs(b.a if acc else b.v, vdata, nb, hi, waves, lanes)
        scatter(b, addresses(b, waves, lanes), data, waves, lanes, what)
        b.stats.bytes_stored += data.size
    return Op(pc, size, what, "vmem", store)


def resource(b: Batch, srsrc: int, waves: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(base address, stride, num_records) of each wave's buffer resource (V#) in SGPRs srsrc..+3."""
    w0, w1, w2 = b.s[srsrc][waves], b.s[srsrc + 1][waves], b.s[srsrc + 2][waves]
    base = w0.astype(U64) | ((w1 & U32(0xFFFF)).astype(U64) << U64(32))
    stride = ((w1 >> U32(16)) & U32(0x3FFF)).astype(U64)
    return base, stride, w2.astype(U64)


def compile_buffer(inst: Any, pc: int, size: int) -> Op:
    name = inst.op.name
    if name in CACHE_OPS:  # memory here is one coherent store with no caches: nothing to write back or drop
        return Op(pc, size, name.lower(), "vmem", lambda b: None)
    kind, suffix = _kind(name)
    lds_dma = bool(getattr(inst, "lds", 0))
    if kind not in ("LOAD", "STORE", "ATOMIC") or (kind == "LOAD" and suffix not in LOADS) or \
            (kind == "STORE" and suffix not in STORES) or (lds_dma and suffix not in LDS_DMA):
        raise Unsupported(name + ("_LDS" if lds_dma else ""))
    srsrc = int(inst.srsrc.offset)
    soffset_src = int(inst.soffset.offset)
    from wgrad_cli.emu.ops import operands as opd

    soffset = opd.scalar(soffset_src, 32)
    vaddr = int(inst.vaddr.offset) - 256
    offen, idxen = bool(inst.offen), bool(inst.idxen)
    imm = int(inst.offset)
    acc = bool(getattr(inst, "acc", 0))
    what = name.lower() + (" lds" if lds_dma else "")

    def place(b: Batch, waves: np.ndarray, lanes: np.ndarray, nbytes: int) -> tuple[np.ndarray, np.ndarray]:
        """Each lane's address and, per dword of the access (one entry for a sub-dword access),
        whether it lies inside num_records. The VGPRs hold the index, then the offset, as idxen and
        offen ask; the address is base + soffset + index * stride + offset. num_records counts bytes
        of offset in a raw buffer (stride 0) and records of index in a structured one; DWORDx2/x3/x4
        accesses are range-checked per dword, so one that straddles num_records keeps its in-range
        dwords (CDNA3/CDNA4 ISA, "Range Checking"; LLVM's AMDGPUUsage: each 32-bit word's offset is
        checked independently)."""
        base, stride, records = resource(b, srsrc, waves)
        zero = np.zeros(len(waves), dtype=U64)
        index = b.v[vaddr][waves, lanes].astype(U64) if idxen else zero
        voff = b.v[vaddr + int(idxen)][waves, lanes].astype(U64) if offen else zero
        offset = voff + U64(imm)
        width = min(nbytes, 4)
        ends = offset[:, None] + U64(width) + U64(4) * np.arange(max(nbytes // 4, 1), dtype=U64)
        inside = np.asarray(np.where((stride == 0)[:, None], ends <= records[:, None],
                                     (index < records)[:, None]),
                            dtype=bool)
        return base + soffset(b)[waves].astype(U64) + index * stride + offset, inside

    if kind == "ATOMIC":
        width = lookup(atomic_ops.ATOMICS, suffix).width
        vdata = int(inst.vdata.offset) - 256

        def in_range(b: Batch, waves: np.ndarray, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            addr, inside = place(b, waves, lanes, width)
            return addr, np.asarray(inside.all(axis=1))
        # the pre-op word returns to the data registers (CDNA4 ISA, MUBUF atomics: "returned to VDATA")
        return compile_atomic(suffix, pc, size, what, acc, vdata, vdata, bool(inst.sc0), in_range)
    if kind == "LOAD":
        nbytes, signed, d16 = LOADS[suffix]
        vdst = int(inst.vdata.offset) - 256

        def load(b: Batch) -> None:
            waves, lanes = np.nonzero(b.lanes())
            addr, inside = place(b, waves, lanes, nbytes)
            data = np.zeros((len(waves), nbytes), dtype=np.uint8)  # out-of-range dwords read 0
            whole = np.asarray(inside.all(axis=1))
            if whole.any():
                data[whole] = gather(b, addr[whole], nbytes, waves[whole], lanes[whole], what)
            part = inside & ~whole[:, None]
            for k in np.flatnonzero(part.any(axis=0)):
                m = part[:, k]
                data[m, 4 * k: 4 * k + 4] = gather(b, addr[m] + U64(4 * k), 4, waves[m], lanes[m], what)
            if lds_dma:
                into_lds(b, data, waves, lanes, imm, signed, 0x3FFFF)
            else:
                to_regs(b.a if acc else b.v, vdst, data, signed, d16, waves, lanes)
            b.stats.bytes_loaded += int(inside.sum()) * min(nbytes, 4)
        return Op(pc, size, what, "vmem", load)
    nb, hi = STORES[suffix]
    vdata = int(inst.vdata.offset) - 256

    def store(b: Batch) -> None:
        waves, lanes = np.nonzero(b.lanes())
        addr, inside = place(b, waves, lanes, nb)
        data = from_regs(b.a if acc else b.v, vdata, nb, hi, waves, lanes)
        whole = np.asarray(inside.all(axis=1))
        scatter(b, addr[whole], data[whole], waves[whole], lanes[whole], what)
        part = inside & ~whole[:, None]
        for k in np.flatnonzero(part.any(axis=0)):
            m = part[:, k]
            scatter(b, addr[m] + U64(4 * k), data[m, 4 * k: 4 * k + 4], waves[m], lanes[m], what)
        b.stats.bytes_stored += int(inside.sum()) * min(nb, 4)
    return Op(pc, size, what, "vmem", store)
