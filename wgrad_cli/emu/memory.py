"""The emulated device's global memory: one flat byte heap that every allocation lives in.

Device addresses are `BASE + offset into the heap`. Allocations are 256-byte aligned and separated
by a guard gap, so an access that runs off one allocation never lands in its neighbour: every
access is checked against the allocation table, and one outside every live allocation is a fault
(the emulator's sanitizer), not silent corruption. The heap is anonymous shared memory, so worker
processes forked for a launch write results the parent sees.
"""

from __future__ import annotations

import bisect
import mmap
from dataclasses import dataclass

import numpy as np

BASE = 0x7F00_0000_0000  # far from 0, so a null or small pointer is never a valid address
ALIGN = 256
GUARD = 4096  # unmapped bytes between allocations


@dataclass(frozen=True)
class Fault:
    """An access outside every allocation: the lane's address and how many bytes it wanted."""

    address: int
    nbytes: int
    lane: int  # flat index of the offending lane among the accessed lanes


class Heap:
    def __init__(self, capacity: int = 1 << 26) -> None:
        self._map = mmap.mmap(-1, capacity)
        self.bytes = np.frombuffer(self._map, dtype=np.uint8)
        self.starts: list[int] = []  # heap offsets of live allocations, sorted
        self.ends: list[int] = []
        self._starts_np = np.zeros(0, dtype=np.int64)
        self._ends_np = np.zeros(0, dtype=np.int64)

    @property
    def capacity(self) -> int:
        return len(self.bytes)

    def _reindex(self) -> None:
        self._starts_np = np.array(self.starts, dtype=np.int64)
        self._ends_np = np.array(self.ends, dtype=np.int64)

    def alloc(self, nbytes: int) -> int:
        """A fresh allocation's device address (first fit between live ones, guard gaps kept)."""
        size = max(nbytes, 1)
        offset = GUARD
        for start, end in zip(self.starts, self.ends):
            if offset + size + GUARD <= start:
                break
            offset = -(-(end + GUARD) // ALIGN) * ALIGN
        if offset + size + GUARD > self.capacity:
            self._grow(offset + size + GUARD)
        i = bisect.bisect(self.starts, offset)
        self.starts.insert(i, offset)
        self.ends.insert(i, offset + size)
        self._reindex()
        return BASE + offset

    def _grow(self, needed: int) -> None:
        capacity = self.capacity
        while capacity < needed:
            capacity *= 2
        grown = mmap.mmap(-1, capacity)
        view = np.frombuffer(grown, dtype=np.uint8)
        view[: self.capacity] = self.bytes
        self._map, self.bytes = grown, view

    def free(self, address: int) -> None:
        i = bisect.bisect_left(self.starts, address - BASE)
        if i == len(self.starts) or self.starts[i] != address - BASE:
            raise KeyError(f"{address:#x} is not an allocation")
        del self.starts[i], self.ends[i]
        self._reindex()

    def span(self, address: int, nbytes: int) -> np.ndarray:
        """The heap bytes of [address, address + nbytes), which must lie in one allocation."""
        fault = self.check(np.array([address], dtype=np.uint64), nbytes)
        if fault is not None:
            raise IndexError(f"[{address:#x}, +{nbytes}) is outside every allocation")
        offset = address - BASE
        return self.bytes[offset: offset + nbytes]

    def check(self, addresses: np.ndarray, nbytes: int) -> Fault | None:
        """The first access of `nbytes` at each address that leaves every live allocation, if any."""
        offsets = addresses.astype(np.int64) - BASE
        if offsets.size == 0:
            return None
        lo, hi = int(offsets.min()), int(offsets.max())
        first = bisect.bisect_right(self.starts, lo) - 1
        if first >= 0 and hi + nbytes <= self.ends[first]:  # the usual case: one instruction, one buffer
            return None
        i = np.searchsorted(self._starts_np, offsets, side="right") - 1
        ok = (i >= 0) & (offsets + nbytes <= self._ends_np[np.maximum(i, 0)] if len(self._ends_np) else False)
        if np.all(ok):
            return None
        bad = int(np.flatnonzero(~np.asarray(ok))[0])
        return Fault(int(addresses.reshape(-1)[bad]), nbytes, bad)

    def offsets(self, addresses: np.ndarray) -> np.ndarray:
        """Heap offsets of device addresses already checked."""
        return addresses.astype(np.int64) - BASE
