"""A lane's registers as bytes and back (the loads and stores of every memory family share them),
and a lane's name in fault messages."""

from __future__ import annotations

import numpy as np

from wgrad_cli.emu.machine import Batch

U32, U64 = np.uint32, np.uint64


def where(b: Batch, wave: int, lane: int) -> str:
    g = b.group_ids[b.group[wave]]
    return (f"workgroup ({g[0]}, {g[1]}, {g[2]}), wave "
            f"{wave % max(1, int((b.group == b.group[wave]).sum()))}, lane {lane}")


def to_regs(regs: np.ndarray, vdst: int, data: np.ndarray, signed: bool, d16: str | None, waves: np.ndarray,
            lanes: np.ndarray) -> None:
    """Loaded bytes (n, size) into registers from vdst (VGPRs or AGPRs; global, buffer and LDS loads
    alike), as the load's type extends or places them."""
    size = data.shape[1]
    if size >= 4:
        words = np.ascontiguousarray(data).view("<u4")
        for k in range(size // 4):
            regs[vdst + k][waves, lanes] = words[:, k]
        return
    raw = data[:, 0].astype(U32) if size == 1 else np.ascontiguousarray(data).view("<u2")[:, 0].astype(U32)
    if signed:
        bits = 8 * size
        raw = np.where(raw >> U32(bits - 1), raw | U32((0xFFFFFFFF << bits) & 0xFFFFFFFF), raw).astype(U32)
    if d16 is None:
        regs[vdst][waves, lanes] = raw
        return
    old = regs[vdst][waves, lanes]
    half = raw & U32(0xFFFF)
    regs[vdst][waves, lanes] = ((old & U32(0xFFFF0000)) | half if d16 == "lo"
                                else (old & U32(0xFFFF)) | (half << U32(16)))


def from_regs(regs: np.ndarray, vdata: int, size: int, hi: bool, waves: np.ndarray,
              lanes: np.ndarray) -> np.ndarray:
    if size >= 4:
        return np.stack([regs[vdata + k][waves, lanes] for k in range(size // 4)],
                        axis=1).astype("<u4").view(np.uint8)
    word = regs[vdata][waves, lanes]
    if hi:
        word = word >> U32(16)
    return np.ascontiguousarray(word.astype("<u4")).view(np.uint8).reshape(-1, 4)[:, :size]


def words(regs: np.ndarray, reg: int, width: int, count: int, waves: np.ndarray,
          lanes: np.ndarray) -> np.ndarray:
    """`count` consecutive words of `width` bytes from registers reg.., as (lanes, count) unsigned."""
    return from_regs(regs, reg, width * count, False, waves, lanes).view(U32 if width == 4 else U64)
