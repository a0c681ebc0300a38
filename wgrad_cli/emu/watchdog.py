"""Telling a stuck launch from a slow one, by the emulated state rather than by the clock.

The emulator is deterministic: a batch of waves whose whole state (program counters, registers,
LDS, private memory) is the same after a stretch of spinning as before it read the same values
from memory and will repeat that stretch for ever, unless some other wave changes memory. A launch
is stuck when that holds for every live batch of every worker at once, and no worker can start
more workgroups (none are left, or as many are live as the device holds resident): nothing is
left that could change what the waves read. That verdict does not depend on how fast the machine
is or what else runs on it.

Workers are processes, so they meet on a small board in shared memory: per worker, the
workgroups it has finished and the wave-instructions it has executed (the headway shown to the
user), whether it is quiet (every one of its
live batches repeated its state at its last stall) or done, and how often it has reported. A
quiet worker calls the launch stuck only after every other quiet worker has reported again, still
quiet, since it first saw them all quiet: a worker whose flag is stale (it has seen new memory but
not reported yet) then says so first.
"""

from __future__ import annotations

import hashlib
import mmap

import numpy as np

from wgrad_cli.device.runtime import Headway
from wgrad_cli.emu.machine import Batch

DONE_GROUPS, STATE, REPORTS, WORK = 0, 1, 2, 3  # the board's columns
BUSY, QUIET, FINISHED = 0, 1, 2  # a worker's states


def board(workers: int) -> np.ndarray:
    """A zeroed (workers, 4) int64 board in anonymous shared memory, which forked workers share."""
    cells = workers * 4
    return np.frombuffer(mmap.mmap(-1, 8 * cells), dtype=np.int64, count=cells).reshape(workers, 4)


def headway(shared: np.ndarray, workgroups: int) -> Headway:
    """The launch's headway, summed over the workers on its board."""
    return Headway(int(shared[:, DONE_GROUPS].sum()), workgroups, int(shared[:, WORK].sum()))


class Watch:
    """One worker's view of its batches' states, and its place on the launch's board."""

    def __init__(self, shared: np.ndarray, index: int) -> None:
        self.board = shared
        self.index = index
        self.cheap: dict[int, bytes] = {}  # per live batch: its scalar state at its last stall
        self.full: dict[int, bytes] = {}  # its vector state's digest, where the scalar state repeated
        self.same: dict[int, bool] = {}  # whether its last stall repeated the state of the one before
        self.seen: np.ndarray | None = None  # the others' report counts when this worker first saw all quiet

    def finished(self, batch: Batch) -> None:
        """`batch` ended: its workgroups count as done, and what it wrote may wake the others."""
        self.board[self.index, DONE_GROUPS] += batch.groups
        self.cheap.pop(id(batch), None)
        self.full.pop(id(batch), None)
        self.same.pop(id(batch), None)
        self.changed()

    def worked(self, instructions: int) -> None:
        """This worker has executed `instructions` wave-instructions of the launch so far."""
        self.board[self.index, WORK] = instructions

    def changed(self) -> None:
        """Something the waves can observe changed (a batch ended or began): no batch's repeat counts."""
        self.same = dict.fromkeys(self.same, False)
        self.seen = None
        self._report(BUSY)

    def retire(self) -> None:
        self._report(FINISHED)

    def stalled(self, batch: Batch, live: list[Batch], can_start: bool) -> bool:
        """`batch` returned with every wave spinning: whether the launch is now stuck."""
        self.same[id(batch)] = self._repeats(batch)
        quiet = not can_start and all(self.same.get(id(b), False) for b in live)
        self._report(QUIET if quiet else BUSY)
        if not quiet:
            self.seen = None
            return False
        # the counts first, then the states (written the other way round)
        reports = self.board[:, REPORTS].copy()
        states = self.board[:, STATE].copy()
        others = np.arange(len(states)) != self.index
        if (states[others] == BUSY).any():
            self.seen = None
            return False
        if self.seen is None:
            self.seen = reports
            return False
        return bool(((states == FINISHED) | (reports > self.seen))[others].all())

    def _repeats(self, batch: Batch) -> bool:
        """Whether the batch's state equals the one at its last stall; the vector state (large) is
        hashed only where the scalar state (small) repeated."""
        key = id(batch)
        cheap = b"".join(a.tobytes() for a in (batch.pc, batch.done, batch.at_barrier, batch.s, batch.scc))
        if self.cheap.get(key) != cheap:
            self.cheap[key] = cheap
            self.full.pop(key, None)
            return False
        digest = hashlib.blake2b(digest_size=16)
        for part in (batch.v, batch.a, batch.lds, batch.private):
            digest.update(part.data)
        full = digest.digest()
        repeated = self.full.get(key) == full
        self.full[key] = full
        return repeated

    def _report(self, state: int) -> None:
        self.board[self.index, STATE] = state
        self.board[self.index, REPORTS] += 1
