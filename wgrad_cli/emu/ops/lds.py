"""LDS instructions (DS): reads and writes of the workgroup's local data share.

Addressing per the CDNA4 ISA reference ("Local Data Share Operations"): a 32-bit VGPR address
plus a 16-bit instruction offset (offset1:offset0), or two 8-bit offsets scaled by the element
size (by 64 elements for the ST64 forms) for the READ2/WRITE2 forms. Bytes beyond the
workgroup's LDS allocation read as 0 and are not written (CDNA4 ISA, "Out-of-Range behavior":
reads return zero, writes are discarded; AMD's gem5 GPU model does the same. HipKittens'
pack_scales reads past the end of its last scale tile and relies on it), or stop the run where
the launch is strict about LDS (verify --strict-lds).

The cross-lane forms (ds_swizzle_b32, ds_permute_b32, ds_bpermute_b32) use the LDS pipe to move
registers between the lanes of a wave and touch no LDS memory.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from wgrad_cli.emu.machine import Batch, EmuFault, Op, Run, Unsupported
from wgrad_cli.emu.ops.lanes import from_regs, to_regs, where

READS = {"DS_READ_B32": (4, False), "DS_READ_B64": (8, False), "DS_READ_B96": (12, False),
         "DS_READ_B128": (16, False), "DS_READ_U8": (1, False), "DS_READ_I8": (1, True),
         "DS_READ_U16": (2, False), "DS_READ_I16": (2, True)}
WRITES = {"DS_WRITE_B32": 4, "DS_WRITE_B64": 8, "DS_WRITE_B96": 12, "DS_WRITE_B128": 16, "DS_WRITE_B8": 1,
          "DS_WRITE_B16": 2}
READ2 = {"DS_READ2_B32": (4, 1), "DS_READ2_B64": (8, 1), "DS_READ2ST64_B32": (4, 64),
         "DS_READ2ST64_B64": (8, 64)}
WRITE2 = {"DS_WRITE2_B32": (4, 1), "DS_WRITE2_B64": (8, 1), "DS_WRITE2ST64_B32": (4, 64),
          "DS_WRITE2ST64_B64": (8, 64)}


def _transpose_source(bits: int) -> np.ndarray:
    """For DS_READ_B64_TR_B<bits>: the (source lane * 8 + source byte) of each (lane, result byte).
    Each lane addresses 8 bytes; within every 16 lanes the elements are transposed: for 8 bits,
    lane l's element n is byte l & 7 of the block lane (l & ~15) + ((l >> 3) & 1) + 2n addressed
    (the mapping docs/emulator.md records); 16 bits is the same rule at its width, by
    analogy: element n of lane l is element l & 3 of lane (l & ~15) + ((l >> 2) & 3) + 4n."""
    per = 64 // bits  # elements per lane: 8 or 4
    lane = np.arange(64)[:, None]
    byte = np.arange(8)[None, :]
    n, within = byte // (bits // 8), byte % (bits // 8)
    src_lane = (lane & ~15) + ((lane >> int(np.log2(per))) & (16 // per - 1)) + (16 // per) * n
    src_byte = (lane % per) * (bits // 8) + within
    return np.asarray(src_lane * 8 + src_byte, dtype=np.int64)


TRANSPOSE = {"DS_READ_B64_TR_B8": _transpose_source(8), "DS_READ_B64_TR_B16": _transpose_source(16)}
CROSS_LANE = ("DS_SWIZZLE_B32", "DS_PERMUTE_B32", "DS_BPERMUTE_B32")


def _swizzle_source(offset: int) -> np.ndarray:
    """DS_SWIZZLE_B32: the lane each lane reads, by the 16-bit offset. The CDNA4 text carries only
    its FFT table; the modes are those of AMD's RDNA3 ISA pseudo-code (LLVM's swizzle() spellings
    encode the same bits for gfx9): below 0xC000, offset[15] set selects a quad permute, lane 4q+k
    reading lane 4q + offset[2k+1:2k]; offset[15] clear the bit masks of 32-lane halves, lane
    reading ((lane & and_mask) | or_mask) ^ xor_mask with the masks at offset[4:0], [9:5], [14:10].
    The rotate (from 0xC000) and FFT (from 0xE000) modes are not implemented."""
    lane = np.arange(64)
    if offset >= 0xC000:
        raise Unsupported(f"DS_SWIZZLE_B32 offset {offset:#x}")
    if offset & 0x8000:
        return np.asarray((lane & ~3) + ((offset >> 2 * (lane & 3)) & 3))
    and_mask, or_mask, xor_mask = offset & 0x1F, (offset >> 5) & 0x1F, (offset >> 10) & 0x1F
    return np.asarray((lane & 0x20) | ((((lane & 0x1F) & and_mask) | or_mask) ^ xor_mask))


def _pull(b: Batch, data: np.ndarray, source: np.ndarray) -> np.ndarray:
    """Each lane's value of `data` (wave, lane) from lane `source` (wave, lane) of its wave, 0 where
    that lane is outside EXEC (the source thread is invalid: swizzle and bpermute pseudo-code)."""
    waves = np.arange(b.W)[:, None]
    return np.where(b.exec[waves, source], data[waves, source], np.uint32(0))


def _push(b: Batch, data: np.ndarray, target: np.ndarray) -> np.ndarray:
    """DS_PERMUTE_B32: each lane in EXEC sends its value to lane `target`; a lane no one sends to gets
    0, and of several senders the highest-numbered lane wins (CDNA4 pseudo-code)."""
    sender = np.full((b.W, 64), -1)
    waves, lanes = np.nonzero(b.exec)
    np.maximum.at(sender, (waves, target[waves, lanes]), lanes)
    return np.where(sender >= 0, data[np.arange(b.W)[:, None], np.maximum(sender, 0)], np.uint32(0))


def _compile_cross_lane(name: str, vaddr: int, data0: int, vdst: int, offset: int) -> Run:
    """ds_swizzle_b32 (its data in the ADDR field), ds_permute_b32 and ds_bpermute_b32 (lane =
    (ADDR + offset) / 4 mod 64): the lanes in EXEC write the result."""
    if name == "DS_SWIZZLE_B32":
        source = _swizzle_source(offset)
        return lambda b: b.write_v(b.v, vdst, _pull(b, b.v[vaddr], np.broadcast_to(source, (b.W, 64))))
    move = _pull if name == "DS_BPERMUTE_B32" else _push

    def run(b: Batch) -> None:
        lane = ((b.v[vaddr].astype(np.int64) + offset) >> 2) & 63
        b.write_v(b.v, vdst, move(b, b.v[data0], lane))
    return run


def lds_index(b: Batch, addr: np.ndarray, nbytes: int, waves: np.ndarray,
              lanes: np.ndarray, write: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """Flat indices into the batch's LDS of nbytes at each (wave, lane)'s address, and which of
    those bytes lie inside the group's allocation (None: all of them). Bytes outside it index byte 0
    of the group, or stop the run where the batch is strict about LDS (verify --strict-lds). The
    batch's LDS watcher, if any, hears of the access (`write`: it writes them)."""
    idx, inside = _lds_index(b, addr, nbytes, waves, lanes)
    if b.lds_watch is not None:
        b.lds_watch(idx, inside, waves, write)
    return idx, inside


def _lds_index(b: Batch, addr: np.ndarray, nbytes: int, waves: np.ndarray,
               lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    addr = addr.astype(np.int64) & 0xFFFFFFFF  # VGPR + offset is a 32-bit sum: compilers rely on it wrapping
    start = b.group[waves].astype(np.int64) * b.lds_bytes
    if not len(addr) or int(addr.max()) + nbytes <= b.lds_bytes:
        return np.asarray((start + addr)[:, None] + np.arange(nbytes)), None
    at = addr[:, None] + np.arange(nbytes)
    inside = at < b.lds_bytes
    if b.strict_lds:
        i = int(np.argmin(inside.all(axis=1)))
        raise EmuFault(f"LDS access of {nbytes} bytes at {int(addr[i]):#x}, beyond the workgroup's "
                       f"{b.lds_bytes} bytes of LDS ({where(b, int(waves[i]), int(lanes[i]))})")
    return np.asarray(start[:, None] + np.where(inside, at, 0)), inside


def lds_load(b: Batch, addr: np.ndarray, nbytes: int, waves: np.ndarray, lanes: np.ndarray) -> np.ndarray:
    """(lanes, nbytes) bytes at each lane's LDS address; 0 outside the allocation."""
    idx, inside = lds_index(b, addr, nbytes, waves, lanes)
    data: np.ndarray = b.lds[idx]
    if inside is None:
        return data
    b.stats.lds_out_of_range += int(inside.size - np.count_nonzero(inside))
    return np.where(inside, data, np.uint8(0))


def lds_store(b: Batch, addr: np.ndarray, data: np.ndarray, waves: np.ndarray, lanes: np.ndarray) -> None:
    """Each lane's bytes to its LDS address; bytes outside the allocation are dropped."""
    idx, inside = lds_index(b, addr, data.shape[1], waves, lanes, write=True)
    if inside is None:
        b.lds[idx] = data
    else:
        b.stats.lds_out_of_range += int(inside.size - np.count_nonzero(inside))
        b.lds[idx[inside]] = np.broadcast_to(data, idx.shape)[inside]


class DsFields(NamedTuple):
    """A DS instruction's operands: VGPR numbers, its two 8-bit offsets (one 16-bit offset,
    offset1:offset0, for the single-address forms) and whether the data registers are AGPRs."""

    vaddr: int
    vdst: int
    data0: int
    data1: int
    off0: int
    off1: int
    acc: bool


def ds_fields(inst: Any) -> DsFields:
    """The operands of a DS instruction; Unsupported for the GDS forms, which the emulator lacks."""
    if bool(getattr(inst, "gds", 0)):
        raise Unsupported(inst.op.name + "_GDS")
    return DsFields(int(inst.addr.offset) - 256, int(inst.vdst.offset) - 256, int(inst.data0.offset) - 256,
                    int(inst.data1.offset) - 256, int(inst.offset0), int(inst.offset1),
                    bool(getattr(inst, "acc", 0)))


def compile_ds(inst: Any, pc: int, size: int) -> Op:
    name = inst.op.name
    what = name.lower()
    vaddr, vdst, data0, data1, off0, off1, acc = ds_fields(inst)
    offset = off0 | (off1 << 8)

    def address(b: Batch, waves: np.ndarray, lanes: np.ndarray) -> np.ndarray:
        return np.asarray(b.v[vaddr][waves, lanes], dtype=np.int64)

    if name in READS:
        n, signed = READS[name]

        def read(b: Batch) -> None:
            waves, lanes = np.nonzero(b.lanes())
            data = lds_load(b, address(b, waves, lanes) + offset, n, waves, lanes)
            to_regs(b.a if acc else b.v, vdst, data, signed, None, waves, lanes)
        return Op(pc, size, what, "lds", read)
    if name in WRITES:
        n = WRITES[name]

        def write(b: Batch) -> None:
            waves, lanes = np.nonzero(b.lanes())
            lds_store(b, address(b, waves, lanes) + offset,
                      from_regs(b.a if acc else b.v, data0, n, False, waves, lanes), waves, lanes)
        return Op(pc, size, what, "lds", write)
    if name in READ2:
        n, scale = READ2[name]

        def read2(b: Batch) -> None:
            waves, lanes = np.nonzero(b.lanes())
            base = address(b, waves, lanes)
            regs = b.a if acc else b.v
            first = [lds_load(b, base + off0 * n * scale, n, waves, lanes),
                     lds_load(b, base + off1 * n * scale, n, waves, lanes)]
            to_regs(regs, vdst, first[0], False, None, waves, lanes)
            to_regs(regs, vdst + n // 4, first[1], False, None, waves, lanes)
        return Op(pc, size, what, "lds", read2)
    if name in WRITE2:
        n, scale = WRITE2[name]

        def write2(b: Batch) -> None:
            waves, lanes = np.nonzero(b.lanes())
            base = address(b, waves, lanes)
            regs = b.a if acc else b.v
            lds_store(b, base + off0 * n * scale, from_regs(regs, data0, n, False, waves, lanes), waves,
                      lanes)
            lds_store(b, base + off1 * n * scale, from_regs(regs, data1, n, False, waves, lanes), waves,
                      lanes)
        return Op(pc, size, what, "lds", write2)
    if name in CROSS_LANE and not acc:  # AGPR operands (acc) of these are not modelled
        return Op(pc, size, what, "lds", _compile_cross_lane(name, vaddr, data0, vdst, offset))
    if name in TRANSPOSE:
        source = TRANSPOSE[name].ravel()

        def transpose(b: Batch) -> None:
            waves, lanes = np.nonzero(b.lanes())
            blocks = np.zeros((b.W, 64, 8), dtype=np.uint8)
            blocks[waves, lanes] = lds_load(b, address(b, waves, lanes) + offset, 8, waves, lanes)
            result = blocks.reshape(b.W, 512)[:, source].reshape(b.W, 64, 8)
            to_regs(b.a if acc else b.v, vdst, result[waves, lanes], False, None, waves, lanes)
        return Op(pc, size, what, "lds", transpose)
    raise Unsupported(name)
