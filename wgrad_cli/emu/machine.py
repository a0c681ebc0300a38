"""Waves in lock-step: the register state of many waves and the loop that runs them.

Every wave of a batch (whole workgroups, possibly many) lives in the same numpy arrays: VGPRs as
(register, wave, lane), SGPRs as (register, wave). Each step runs the instruction at the lowest
program counter among the waves that can run, for every wave at that counter at once, so waves
that follow the same path (the usual case) cost one numpy operation per instruction for all of
them. Waves that diverge wait at higher counters until the others catch up (min-PC scheduling,
which also reconverges loops). A wave at `s_barrier` waits until every live wave of its workgroup
has reached one. Memory is synchronous, so `s_waitcnt` has nothing to wait for. Private (scratch)
memory is the batch's too: `private_bytes` per lane, allocated with the batch and gone with it.

Min-PC alone would starve: waves spinning at a low counter on a flag that waves at a higher one
set would run forever. So waves that take SPIN_BRANCHES backward branches while other live waves
wait are parked and the others run; once none of those can run, the parked waves run again. A
batch whose every runnable wave was parked, with no wave ended and no barrier released since they
last ran, is stalled (it waits on another batch): `execute` returns, and the caller runs another.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from wgrad_cli.emu.findings import Finding, merged
from wgrad_cli.emu.memory import Heap
from wgrad_cli.results.records import Counters

EXEC, VCC, M0 = 126, 106, 124
SGPR_FILE = 128  # s0..s105, flat_scratch, xnack_mask, vcc, ttmp0..15, m0, null, exec: the 7-bit SGPR space
# Fresh private memory, per dword: the hardware leaves it undefined; this reads as a NaN in f32 and
# as ...BADBAD in hex, so a kernel that reads scratch before writing it shows wrong results.
POISON = 0x7FBADBAD
V = TypeVar("V")


class EmuFault(Exception):
    """The program did something the emulator will not do or the hardware would fault on; the
    message names the instruction and, for memory, the workgroup, lane and address."""


class TimedOut(Exception):
    """The launch ran past its CPU time; the message names the workgroups looping and their branch."""


class Stuck(Exception):
    """No wave of the launch can ever change what it reads (watchdog.py); the message names the
    workgroups looping and their branch."""


class Unsupported(Exception):
    """An instruction, or a form of one, that the emulator has no semantics for: raised only while
    compiling it (program.py makes it an op that stops the run if a wave reaches it). Any other
    exception while compiling or running is a bug in the emulator."""


def lookup(table: Mapping[str, V], name: str) -> V:
    """table[name]: the semantics of opcode `name`; Unsupported where the table has none."""
    if name not in table:
        raise Unsupported(name)
    return table[name]


@dataclass
class Stats:
    """What one launch executed: wave-instructions by class and bytes moved. A lane-instruction is
    one wave-instruction times the wave's 64 lanes, active or not (the unit emulators are rated in)."""

    waves: int = 0
    by_class: dict[str, int] = field(default_factory=dict)
    bytes_loaded: int = 0
    bytes_stored: int = 0
    lds_out_of_range: int = 0  # LDS bytes read as 0 or dropped beyond the workgroup's allocation
    findings: list[Finding] = field(default_factory=list)  # the sanitizer's, where it watched the launch

    def add(self, other: Stats) -> None:
        self.waves += other.waves
        for k, n in other.by_class.items():
            self.by_class[k] = self.by_class.get(k, 0) + n
        self.bytes_loaded += other.bytes_loaded
        self.bytes_stored += other.bytes_stored
        self.lds_out_of_range += other.lds_out_of_range
        self.findings = merged(self.findings, other.findings)

    @property
    def instructions(self) -> int:
        return sum(self.by_class.values())

    @property
    def lane_instructions(self) -> int:
        return 64 * self.instructions

    def counters(self) -> Counters:
        return Counters(self.waves, dict(sorted(self.by_class.items())), self.lane_instructions,
                        self.bytes_loaded, self.bytes_stored, self.lds_out_of_range)


class Batch:
    """The state of `waves` wave64s: whole workgroups of `waves_per_group` waves each."""

    def __init__(self, waves: int, waves_per_group: int, vgprs: int, agprs: int, lds_bytes: int,
                 heap: Heap, private_bytes: int = 0, strict_lds: bool = False,
                 register_fill: int = 0) -> None:
        self.W = waves
        # VGPRs and AGPRs the launch does not initialise are undefined on the hardware: `register_fill`
        self.v = np.full((max(vgprs, 1), waves, 64), register_fill, dtype=np.uint32)
        self.a = np.full((max(agprs, 1), waves, 64), register_fill, dtype=np.uint32)
        self.s = np.zeros((SGPR_FILE, waves), dtype=np.uint32)
        self.scc = np.zeros(waves, dtype=bool)
        self.pc = np.zeros(waves, dtype=np.int64)
        self.done = np.zeros(waves, dtype=bool)
        self.at_barrier = np.zeros(waves, dtype=bool)
        # spinning while others wait: skipped until those cannot run
        self.parked = np.zeros(waves, dtype=bool)
        self.waves_per_group = waves_per_group
        self.group = np.arange(waves) // waves_per_group  # workgroup of each wave, within the batch
        self.groups = -(-waves // waves_per_group)
        self.group_ids = np.zeros((self.groups, 3), dtype=np.int64)  # each workgroup's id in the grid
        self.lds_bytes = lds_bytes
        self.lds = np.zeros(self.groups * max(lds_bytes, 1), dtype=np.uint8)
        self.heap = heap
        # LDS beyond the allocation stops the run instead of reading 0 / dropping writes
        self.strict_lds = strict_lds
        # lane (wave * 64 + lane)'s private segment: bytes [row * private_bytes, (row + 1) * private_bytes)
        self.private_bytes = private_bytes  # a multiple of 4
        self.private = np.full(waves * 64 * private_bytes // 4, POISON, dtype="<u4").view(np.uint8)
        self.private_name = "private segment"  # "stack" where the size is the runtime's, for fault lines
        self.code_base = 0  # device address of the code object's image: PCs are offsets into it
        # VSKIP (s_setvskip): waves that pass over their vector instructions without running them
        self.vskip = np.zeros(waves, dtype=bool)
        self.skipping = False  # any wave has VSKIP set
        self.wm = np.ones(waves, dtype=bool)  # waves that run the current instruction
        self.all = True  # wm is every wave
        self._exec: np.ndarray | None = None
        self.stats = Stats(waves=waves)
        # hears every LDS access (flat indices (n, bytes), which lie inside or None, waves, write): the
        # sanitizer's hook (sanitize.py); None unless it watches
        self.lds_watch: LdsWatch | None = None

    # --- masks -----------------------------------------------------------------------------
    def mask64(self, reg: int) -> np.ndarray:
        """A 64-bit lane mask held in SGPRs reg, reg+1, as (wave, lane) booleans."""
        words = np.ascontiguousarray(self.s[reg: reg + 2].T)
        return np.unpackbits(words.view(np.uint8), axis=1, bitorder="little").astype(bool)

    @property
    def exec(self) -> np.ndarray:
        if self._exec is None:
            self._exec = self.mask64(EXEC)
        return self._exec

    def whole_waves(self) -> bool:
        """Whether every wave at this PC has all 64 lanes on in EXEC (lanes past a short last wave
        count as off): what the instructions that act on whole waves need."""
        return bool(self.exec.all() if self.all else self.exec[self.wm].all())

    def lanes(self) -> np.ndarray:
        """The lanes that execute a vector instruction now: EXEC, in the waves at this PC."""
        return self.exec if self.all else self.exec & self.wm[:, None]

    @contextmanager
    def only(self, lanes: np.ndarray) -> Iterator[None]:
        """Within the block, `lanes()` is `lanes` (a subset of it): one instruction's lanes split
        between two implementations (flat accesses by aperture). The EXEC SGPRs are not touched."""
        saved = self._exec
        self._exec = lanes  # the EXEC cache; lanes() ands it with wm, which `lanes` lies within
        try:
            yield
        finally:
            self._exec = saved

    def set_vskip(self, value: np.ndarray) -> None:
        np.copyto(self.vskip, value, where=self.wm)
        self.skipping = bool(self.vskip.any())

    # --- writes ------------------------------------------------------------------------------
    def write_s(self, reg: int, value: np.ndarray | np.integer | int) -> None:
        if self.all:
            self.s[reg] = value
        else:
            np.copyto(self.s[reg], np.broadcast_to(np.asarray(value, dtype=np.uint32), (self.W,)),
                      where=self.wm)
        if reg in (EXEC, EXEC + 1):
            self._exec = None

    def write_s64(self, reg: int, value: np.ndarray) -> None:
        value = np.asarray(value, dtype=np.uint64)
        self.write_s(reg, (value & 0xFFFFFFFF).astype(np.uint32))
        self.write_s(reg + 1, (value >> np.uint64(32)).astype(np.uint32))

    def write_scc(self, value: np.ndarray | bool) -> None:
        if self.all:
            self.scc[:] = value
        else:
            np.copyto(self.scc, np.broadcast_to(value, (self.W,)), where=self.wm)

    def write_mask64(self, reg: int, lanes: np.ndarray) -> None:
        """A (wave, lane) boolean mask into SGPRs reg, reg+1 of the waves at this PC."""
        words = np.packbits(lanes, axis=1, bitorder="little").view(np.uint32)
        self.write_s(reg, words[:, 0])
        self.write_s(reg + 1, words[:, 1])

    def write_v(self, regs: np.ndarray, reg: int, value: np.ndarray, lanes: np.ndarray | None = None) -> None:
        """`value` into vector register `reg` of file `regs` (VGPRs or AGPRs) where `lanes` (default:
        the executing lanes) are set."""
        mask = self.lanes() if lanes is None else lanes
        np.copyto(regs[reg], np.broadcast_to(value, (self.W, 64)), where=mask, casting="unsafe")


Run = Callable[[Batch], None]
LdsWatch = Callable[[np.ndarray, "np.ndarray | None", np.ndarray, bool], None]


@dataclass(frozen=True)
class Op:
    """One decoded instruction, ready to run on a batch."""

    pc: int
    size: int
    name: str  # LLVM-style mnemonic, lower case
    klass: str  # salu, valu, mfma, lds, vmem, smem, branch, barrier, other
    run: Run
    jumps: bool = False  # sets the PC of the waves it runs itself


VECTOR_CLASSES = frozenset({"valu", "mfma", "lds", "vmem"})  # the op classes VSKIP passes over
SPIN_BRANCHES = 64  # backward branches taken while other live waves wait, before those others run
LOOP_SEARCH_STEPS = 100_000  # past the deadline: steps to look for the backward branch to name


def release_barriers(batch: Batch) -> bool:
    """Let go the workgroups whose every live wave waits at `s_barrier`; whether there was one."""
    shape = (batch.groups, batch.waves_per_group)
    ready = (batch.at_barrier
             | batch.done).reshape(shape).all(axis=1) & batch.at_barrier.reshape(shape).any(axis=1)
    if not ready.any():
        return False
    batch.at_barrier &= ~np.repeat(ready, batch.waves_per_group)
    return True


def _looping(batch: Batch, op: Op, wm: np.ndarray) -> str:
    groups = sorted({int(g) for g in batch.group_ids[batch.group[wm], 0]})
    more = f" and {len(groups) - 3} more" if len(groups) > 3 else ""
    names = ", ".join(str(g) for g in groups[:3])
    return (f"workgroup{'s' if len(groups) > 1 else ''} {names}{more} in the loop of {op.name} at offset "
            f"{op.pc:#x} back to {int(batch.pc[wm].min()):#x}")


def execute(batch: Batch, ops: dict[int, Op], describe: Callable[[Op, str], str], deadline: float = math.inf,
            may_yield: bool = False) -> bool:
    """Run the batch's waves until every one reaches `s_endpgm` (True) or, when `may_yield`, until the
    batch is stalled (False; call again to go on). TimedOut once this thread's CPU time
    (time.thread_time(): what other processes on the machine take does not count) passes `deadline`."""
    big = np.iinfo(np.int64).max
    counts = batch.stats.by_class
    spins = 0
    ended, released = int(np.count_nonzero(batch.done)), False  # since the parked waves last ran
    overdue = -1  # steps left, past the deadline, to find a backward branch to name
    steady = -1  # after a step that ran every wave and did not jump: the next PC, every wave there
    while True:
        if steady >= 0:
            pc, wm = steady, batch.wm
        else:
            runnable = ~(batch.done | batch.at_barrier | batch.parked)
            if not runnable.any():
                if release_barriers(batch):
                    released = True
                    continue
                if not batch.parked.any():
                    return True
                batch.parked[:] = False
                spins = 0
                progressed = released or int(np.count_nonzero(batch.done)) != ended
                ended, released = int(np.count_nonzero(batch.done)), False
                if may_yield and not progressed:
                    return False
                continue
            pcs = np.where(runnable, batch.pc, big)
            pc = int(pcs.min())
            wm = pcs == pc
            batch.wm = wm
            batch.all = bool(wm.all())
        op = ops.get(pc)
        if op is None:
            raise EmuFault(describe(Op(pc, 4, "?", "other", lambda b: None),
                                    "jumped to an address that is not an "
                                    "instruction of the kernel's code"))
        runs = wm
        if batch.skipping and op.klass in VECTOR_CLASSES:
            runs = wm & ~batch.vskip  # the skipped waves only move past it
            batch.wm, batch.all = runs, False
        n = batch.W if batch.all else int(np.count_nonzero(runs))
        counts[op.klass] = counts.get(op.klass, 0) + n
        try:
            if n:
                op.run(batch)
        except EmuFault as exc:
            raise EmuFault(describe(op, str(exc))) from None
        if runs is not wm:
            batch.wm, batch.all = wm, bool(wm.all())
        steady = -1
        if not op.jumps:
            if batch.all:
                batch.pc += op.size
                steady = pc + op.size
            else:
                batch.pc[wm] += op.size
            continue
        # a branch, barrier or end: where every loop passes, so the only place to look at the clock
        if overdue < 0 and time.thread_time() <= deadline and batch.all and not may_yield:
            continue  # lock-step, and no other wave or batch to run instead
        back = bool(((batch.pc[wm] <= pc) & ~batch.done[wm]).any())
        if overdue < 0 and time.thread_time() > deadline:
            overdue = LOOP_SEARCH_STEPS
        if overdue >= 0:
            overdue -= 1
            if back or overdue == 0:
                raise TimedOut(_looping(batch, op, wm) if back else f"at offset {op.pc:#x} ({op.name})")
        if back and (may_yield or np.count_nonzero(~(batch.done | batch.at_barrier)) > n):  # others could run
            spins += 1
            if spins >= SPIN_BRANCHES:
                batch.parked |= wm
                spins = 0
