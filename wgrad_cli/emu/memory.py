"""The emulated device's global memory: one flat byte heap that every allocation lives in.

Device addresses are `BASE + offset into the heap`. Allocations are 256-byte aligned and separated
by a guard gap, so an access that runs off one allocation never lands in its neighbour: every
access is checked against the allocation table, and one outside every live allocation is a fault
(the emulator's sanitizer), not silent corruption. The heap is anonymous shared memory, so worker
processes forked for a launch write results the parent sees.

Loaded code objects live here too: each image's segments are allocations at one base (the image's
address 0), read-only where the segment is, and a fault inside an image names its segment.
"""

from __future__ import annotations

import bisect
import mmap
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BASE = 0x7F00_0000_0000  # far from 0, so a null or small pointer is never a valid address
ALIGN = 256
GUARD = 4096  # unmapped bytes between allocations


@dataclass(frozen=True)
class Fault:
    """An access outside every allocation (or a store into a read-only one): the lane's address and
    how many bytes it wanted."""

    address: int
    nbytes: int
    lane: int  # flat index of the offending lane among the accessed lanes


@dataclass(frozen=True)
class Name:
    """A named range of an image (a section or a symbol), by offset from the image's base."""

    offset: int
    size: int
    name: str


@dataclass(frozen=True)
class Region:
    """One segment of an image to map: where it lies from the image's base, and what it is."""

    offset: int
    size: int
    writable: bool
    label: str  # "segment 2 (R-X)"
    names: tuple[Name, ...]  # sections and symbols within it


@dataclass(frozen=True)
class Mapped:
    """An image in the heap: its base, its extent and its regions (as mapped), for fault lines."""

    base: int
    span: int
    name: str
    regions: tuple[Region, ...]


class Heap:
    def __init__(self, capacity: int = 1 << 26) -> None:
        self._map = mmap.mmap(-1, capacity)
        self.bytes = np.frombuffer(self._map, dtype=np.uint8)
        self.starts: list[int] = []  # heap offsets of live allocations, sorted
        self.ends: list[int] = []
        self.writable: list[bool] = []  # False for an image's read-only segments
        self.images: list[Mapped] = []
        self._starts_np = np.zeros(0, dtype=np.int64)
        self._ends_np = np.zeros(0, dtype=np.int64)
        self._writable_np = np.zeros(0, dtype=bool)

    @property
    def capacity(self) -> int:
        return len(self.bytes)

    def _reindex(self) -> None:
        self._starts_np = np.array(self.starts, dtype=np.int64)
        self._ends_np = np.array(self.ends, dtype=np.int64)
        self._writable_np = np.array(self.writable, dtype=bool)

    def _free_offset(self, size: int, align: int) -> int:
        """The first heap offset, a multiple of `align`, where `size` bytes fit between guard gaps."""
        offset = -(-GUARD // align) * align
        for start, end in zip(self.starts, self.ends):
            if offset + size + GUARD <= start:
                break
            offset = -(-(end + GUARD) // align) * align
        if offset + size + GUARD > self.capacity:
            self._grow(offset + size + GUARD)
        return offset

    def _insert(self, offset: int, size: int, writable: bool) -> None:
        i = bisect.bisect(self.starts, offset)
        self.starts.insert(i, offset)
        self.ends.insert(i, offset + size)
        self.writable.insert(i, writable)

    def alloc(self, nbytes: int) -> int:
        """A fresh allocation's device address (first fit between live ones, guard gaps kept)."""
        size = max(nbytes, 1)
        offset = self._free_offset(size, ALIGN)
        self._insert(offset, size, True)
        self._reindex()
        return BASE + offset

    def map_image(self, span: int, align: int, regions: Sequence[Region], name: str) -> int:
        """Place an image of `span` bytes at a fresh base aligned to `align` (its segments' alignment)
        and make each region an allocation there; the base's device address. The bytes are zero."""
        offset = self._free_offset(max(span, 1), max(align, ALIGN))
        for r in regions:
            if r.size:
                self._insert(offset + r.offset, r.size, r.writable)
                self.bytes[offset + r.offset: offset + r.offset + r.size] = 0
        self._reindex()
        self.images.append(Mapped(BASE + offset, span, name, tuple(regions)))
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
        if i == len(self.starts) or self.starts[i] != address - BASE or self._image_of(address) is not None:
            raise KeyError(f"{address:#x} is not an allocation")
        del self.starts[i], self.ends[i], self.writable[i]
        self._reindex()

    def span(self, address: int, nbytes: int) -> np.ndarray:
        """The heap bytes of [address, address + nbytes), which must lie in one allocation."""
        fault = self.check(np.array([address], dtype=np.uint64), nbytes)
        if fault is not None:
            raise IndexError(f"[{address:#x}, +{nbytes}) is outside every allocation")
        offset = address - BASE
        return self.bytes[offset: offset + nbytes]

    def check(self, addresses: np.ndarray, nbytes: int, store: bool = False) -> Fault | None:
        """The first access of `nbytes` at each address that leaves every live allocation, or for a
        store that lands in a read-only one, if any."""
        offsets = addresses.astype(np.int64) - BASE
        if offsets.size == 0:
            return None
        lo, hi = int(offsets.min()), int(offsets.max())
        first = bisect.bisect_right(self.starts, lo) - 1
        if first >= 0 and hi + nbytes <= self.ends[first] and (self.writable[first] or not store):
            return None  # the usual case: one instruction, one buffer
        i = np.searchsorted(self._starts_np, offsets, side="right") - 1
        ok = (i >= 0) & (offsets + nbytes <= self._ends_np[np.maximum(i, 0)] if len(self._ends_np) else False)
        if store and len(self._ends_np):
            ok &= self._writable_np[np.maximum(i, 0)]
        if np.all(ok):
            return None
        bad = int(np.flatnonzero(~np.asarray(ok))[0])
        return Fault(int(addresses.reshape(-1)[bad]), nbytes, bad)

    def _image_of(self, address: int) -> Mapped | None:
        return next((m for m in self.images if m.base <= address < m.base + max(m.span, 1)), None)

    def describe(self, fault: Fault, store: bool) -> str:
        """Where a faulting access went, for its line: "outside every allocation", or the loaded
        image's segment (and section and symbol) it hit."""
        image = self._image_of(fault.address)
        if image is None:
            return "outside every allocation"
        at = fault.address - image.base
        region = next((r for r in image.regions if r.offset <= at < r.offset + r.size), None)
        if region is None:
            return f"inside {image.name} at offset {at:#x}, between its segments"
        names = [n for n in region.names if n.offset <= at < n.offset + max(n.size, 1)]
        inside = "".join(f", {n.name}+{at - n.offset:#x}" for n in names)
        if store and not region.writable:
            return f"in read-only {region.label} of {image.name}{inside}"
        return f"past the end of {region.label} of {image.name}{inside}"

    def offsets(self, addresses: np.ndarray) -> np.ndarray:
        """Heap offsets of device addresses already checked."""
        return addresses.astype(np.int64) - BASE
