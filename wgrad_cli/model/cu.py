"""One compute unit's timeline: the waves of the workgroups resident on it, issuing their recorded
instruction streams in order, event by event (one step per wave-instruction).

Each wave issues in order. An instruction starts when its wave is ready and its pipe is free:
VALU and MFMA are per SIMD (a wave64 VALU op holds its SIMD's VALU for 4 clocks, an MFMA its
matrix pipe for passes x 4); the LDS and the vector memory path are per CU (LDS for the clocks its
banks need, from the lanes' addresses; vector memory for bytes / bytes-per-clock); after issuing,
a wave waits `issue_cycles` before its next instruction. A vector memory op's data arrives its
latency after it leaves the CU, an LDS op's after its bank clocks plus the LDS latency, a scalar
load's after its latency; each counter's operations complete in order, and s_waitcnt waits until
no more than its count are outstanding. s_barrier holds every wave of its workgroup until the
last arrives. Waves are taken in order of the time they are ready, so a wave waiting for memory
leaves the SIMD's pipes to the others.

Every clock of every SIMD is given one cause, in this order: its matrix pipe busy (mfma), a wave
of it issuing (issue), a wave waiting for LDS (lds), for memory (memory), at a barrier (barrier),
and otherwise idle (tail: its waves are done, or not there). The CU's breakdown is the mean over
its SIMDs, so it sums to the CU's time. For a profile, each of those clocks also goes to one
instruction: of the spans of its cause that cover it, the one that began first (the MFMA running
in the pipe before the one waiting for it; the wave that has waited longest).
"""

from __future__ import annotations

import heapq
from array import array
from dataclasses import dataclass, field

import numpy as np

from wgrad_cli.model.machine import Machine
from wgrad_cli.model.ops import Kind, Static
from wgrad_cli.model.timeline import LDS_UNIT, VMEM_UNIT, Timeline
from wgrad_cli.model.trace import Stream

CAUSES = ("mfma", "issue", "lds", "memory", "barrier", "tail")
MFMA, ISSUE, LDS, MEMORY, BARRIER = range(5)
CHUNK = 1 << 20  # clocks assigned at once
WAITED = {Kind.MFMA: MFMA, Kind.LDS: LDS, Kind.LOAD: MEMORY, Kind.STORE: MEMORY}  # what an issue waits for


@dataclass(frozen=True)
class CuTime:
    """A CU's run of its resident workgroups: clocks, their causes (summing to them), and what
    the vector memory path moved."""

    cycles: int
    causes: dict[str, float]  # CAUSES -> clocks, the mean over the CU's SIMDs
    mfma_cycles: int  # matrix pipe clocks summed over the SIMDs
    bytes_loaded: int
    bytes_stored: int
    # profile: (pc, cause index) -> clocks, mean over SIMDs
    clocks: dict[tuple[int, int], float] = field(default_factory=dict)
    executions: dict[int, int] = field(default_factory=dict)  # profile: pc -> wave-executions on the CU


def simulate(groups: list[list[Stream]], static: dict[int, Static], m: Machine, profile: bool = False,
             timeline: Timeline | None = None) -> CuTime:
    """The timeline of `groups` (each a workgroup's wave streams) resident together on one CU;
    `profile`: also each instruction's clocks by cause; `timeline`: filled with the run, step by step."""
    waves = [(g, s) for g, streams in enumerate(groups) for s in streams]
    n = len(waves)
    simd = [i % m.simds_per_cu for i in range(n)]
    kinds = {pc: s for pc, s in static.items()}
    lists = {id(s): (s.pcs.tolist(), s.costs.tolist()) for _, s in waves}  # copies of a class share theirs
    pcs = [lists[id(s)][0] for _, s in waves]
    costs = [lists[id(s)][1] for _, s in waves]
    group_of = [g for g, _ in waves]
    live = [sum(1 for g2 in group_of if g2 == g) for g in range(len(groups))]

    valu_free = [0] * m.simds_per_cu
    mfma_free = [0] * m.simds_per_cu
    lds_free = vmem_free = 0
    vm: list[list[int]] = [[] for _ in range(n)]
    lgkm: list[list[tuple[int, bool]]] = [[] for _ in range(n)]  # (completion, is LDS)
    pos = [0] * n
    spans = Spans(profile or timeline is not None)
    arrived: dict[int, list[tuple[int, int, int]]] = {}  # group -> (wave, arrival, pc) at the current barrier
    loaded = stored = mfma_total = 0
    end = 0
    issue = m.issue_cycles
    ready = [(0, i) for i in range(n)]
    heapq.heapify(ready)

    while ready:
        t, w = heapq.heappop(ready)
        s = simd[w]
        while True:
            if pos[w] >= len(pcs[w]):  # done; the CU is not, until its stores and loads have landed
                last = vm[w][-1] if vm[w] else 0
                spans.who = (pcs[w][-1] if pcs[w] else -1, w)
                if timeline is not None:
                    timeline.ends[w] = (t, max(t, last))
                if last > t:
                    spans.add((s, MEMORY, t, last))
                end = max(end, t, last)
                live[group_of[w]] -= 1
                _release(arrived, group_of[w], live, ready, spans, simd)
                break
            pc = pcs[w][pos[w]]
            info = kinds[pc]
            cost = costs[w][pos[w]]
            pos[w] += 1
            k = info.kind
            spans.who = (pc, w)
            arrival = t
            if k == Kind.WAITCNT:
                need, cause = t, MEMORY
                if len(vm[w]) > info.vmcnt:
                    need = max(need, vm[w][len(vm[w]) - info.vmcnt - 1])
                if len(lgkm[w]) > info.lgkmcnt:
                    done, from_lds = lgkm[w][len(lgkm[w]) - info.lgkmcnt - 1]
                    if done > need:
                        need, cause = done, LDS if from_lds else MEMORY
                if need > t:
                    spans.add((s, cause, t, need))
                    t = need
                if timeline is not None:
                    timeline.steps.append((w, pc, arrival, t, cause))
                continue  # waiting costs no issue slot: go on with the same wave
            if timeline is not None and k in (Kind.NOP, Kind.END, Kind.BARRIER):
                timeline.steps.append((w, pc, t, t, BARRIER if k == Kind.BARRIER else ISSUE))
            if k == Kind.NOP:
                spans.add((s, ISSUE, t, t + info.cycles))
                t += info.cycles
                continue
            if k == Kind.END:
                pos[w] = len(pcs[w])
                continue
            if k == Kind.BARRIER:
                spans.add((s, ISSUE, t, t + issue))
                arrived.setdefault(group_of[w], []).append((w, t + issue, pc))
                _release(arrived, group_of[w], live, ready, spans, simd)
                break
            start = t
            if k == Kind.MFMA:
                start = max(t, mfma_free[s])
                if start > t:
                    spans.add((s, MFMA, t, start))
                mfma_free[s] = start + info.cycles
                mfma_total += info.cycles
                spans.add((s, MFMA, start, start + info.cycles))
                if timeline is not None:
                    timeline.pipes.append((s, w, pc, start, start + info.cycles))
            elif k == Kind.VALU:
                start = max(t, valu_free[s])
                valu_free[s] = start + info.cycles
                spans.add((s, ISSUE, t, start + info.cycles))
            elif k == Kind.LDS:
                start = max(t, lds_free)
                busy = max(cost, 1)
                lds_free = start + busy
                if timeline is not None:
                    timeline.pipes.append((LDS_UNIT, w, pc, start, start + busy))
                lgkm[w].append((max(start + busy + m.lds_latency_cycles, lgkm[w][-1][0] if lgkm[w] else 0),
                                True))
                if start > t:
                    spans.add((s, LDS, t, start))
                spans.add((s, ISSUE, start, start + issue))
            elif k in (Kind.LOAD, Kind.STORE):
                start = max(t, vmem_free)
                busy = max(1, -(-cost // m.vmem_bytes_per_cycle_per_cu))
                vmem_free = start + busy
                if timeline is not None:
                    timeline.pipes.append((VMEM_UNIT, w, pc, start, start + busy))
                vm[w].append(max(start + busy + m.vmem_latency_cycles, vm[w][-1] if vm[w] else 0))
                if k == Kind.LOAD:
                    loaded += cost
                else:
                    stored += cost
                if start > t:
                    spans.add((s, MEMORY, t, start))
                spans.add((s, ISSUE, start, start + issue))
            elif k == Kind.SMEM:
                lgkm[w].append((max(t + m.smem_latency_cycles, lgkm[w][-1][0] if lgkm[w] else 0), False))
                spans.add((s, ISSUE, t, t + issue))
            else:
                spans.add((s, ISSUE, t, t + info.cycles))
            if timeline is not None:
                timeline.steps.append((w, pc, t, start, WAITED.get(k, ISSUE)))
            heapq.heappush(ready, (start + issue, w))
            break

    end = max([end, *mfma_free, *valu_free])
    causes, clocks, runs = _assign(spans.flat, end, m.simds_per_cu, spans.detail)
    if timeline is not None:
        timeline.waves, timeline.simds, timeline.cycles = [(group_of[w], simd[w]) for w in range(n)], runs, \
            end
    executions: dict[int, int] = {}
    if profile:
        every = np.concatenate([np.asarray(p, dtype=np.int64) for p in pcs]) if pcs else np.zeros(0, np.int64)
        found, counts = np.unique(every, return_counts=True)
        executions = dict(zip(found.tolist(), counts.tolist()))
    return CuTime(end, causes, mfma_total, loaded, stored, clocks if profile else {}, executions)


class Spans:
    """Clock spans (simd, cause, start, end), flat in an int64 array; where `detail`, each also with the
    instruction `who` names (pc, wave). A span that overlaps or touches the last one of its SIMD and
    cause (and, where `detail`, of its instruction and wave) extends that one, which keeps a long
    run's spans few."""

    def __init__(self, detail: bool) -> None:
        self.flat = array("q")
        self.detail = detail
        self.who = (-1, -1)
        self._last: dict[tuple[int, ...], int] = {}  # (simd, cause[, pc, wave]) -> index of its last span

    def add(self, span: tuple[int, int, int, int]) -> None:
        simd, cause, start, end = span
        key = (simd, cause, *self.who) if self.detail else (simd, cause)
        at = self._last.get(key)
        if at is not None and self.flat[at + 2] <= start <= self.flat[at + 3]:
            if end > self.flat[at + 3]:
                self.flat[at + 3] = end
            return
        self._last[key] = len(self.flat)
        self.flat.extend((*span, *self.who) if self.detail else span)


def _release(arrived: dict[int, list[tuple[int, int, int]]], group: int, live: list[int],
             ready: list[tuple[int, int]], spans: Spans, simd: list[int]) -> None:
    """Let a workgroup's waves past its barrier once every live wave of it has arrived."""
    at = arrived.get(group, [])
    if not at or len(at) < live[group]:
        return
    release = max(t for _, t, _ in at)
    for w, t, pc in at:
        if release > t:
            spans.who = (pc, w)
            spans.add((simd[w], BARRIER, t, release))
        heapq.heappush(ready, (release, w))
    arrived[group] = []


def _assign(spans: array[int], end: int, simds: int, detail: bool
            ) -> tuple[dict[str, float], dict[tuple[int, int], float], list[np.ndarray]]:
    """Each SIMD's clocks given to the first cause present (CAUSES order), averaged over SIMDs; where
    `detail`, also to one span of that cause: the one that began first of those covering the clock.
    Returns the causes, (pc, cause) -> clocks (averaged likewise) and each SIMD's runs of clocks
    (start, end, cause, pc, wave) in order, idle ones with pc and wave -1."""
    totals = np.zeros(len(CAUSES))
    clocks: dict[tuple[int, int], float] = {}
    runs: list[np.ndarray] = []
    if end <= 0:
        return dict.fromkeys(CAUSES, 0.0), clocks, runs
    arr = np.frombuffer(spans, dtype=np.int64).reshape(-1, 6 if detail else 4)
    for s in range(simds):
        mine = np.flatnonzero(arr[:, 0] == s)
        owner = np.full(end, -1, dtype=np.int64)  # the span each clock went to
        for cause in range(len(CAUSES) - 1):
            rows = mine[arr[mine, 1] == cause]
            if not len(rows):
                continue
            rows = rows[np.argsort(arr[rows, 2], kind="stable")]
            starts, reach = arr[rows, 2], np.maximum.accumulate(arr[rows, 3])
            for lo in range(0, end, CHUNK):  # in chunks of clocks, which bounds the memory a long run takes
                at = np.arange(lo, min(end, lo + CHUNK))
                # the first span (by start) still running past a clock covers it if it began by then
                first = np.searchsorted(reach, at, side="right")
                began = np.searchsorted(starts, at, side="right")
                here = (first < began) & (owner[lo: lo + CHUNK] < 0)
                totals[cause] += np.count_nonzero(here)
                owner[lo: lo + CHUNK][here] = rows[first[here]]
        totals[-1] += np.count_nonzero(owner < 0)
        if detail:
            _owned(arr, owner, clocks, runs)
    return ({c: float(v) / simds for c, v in zip(CAUSES, totals)},
            {k: v / simds for k, v in clocks.items()}, runs)


def _owned(arr: np.ndarray, owner: np.ndarray, clocks: dict[tuple[int, int], float],
           runs: list[np.ndarray]) -> None:
    """One SIMD's clocks by owning span: added to `clocks` by (pc, cause), and as runs to `runs`."""
    idle = owner < 0
    cause = np.where(idle, len(CAUSES) - 1, arr[owner, 1])
    pc = np.where(idle, -1, arr[owner, 4])
    wave = np.where(idle, -1, arr[owner, 5])
    if not idle.all():
        counts = np.bincount(pc[~idle] * len(CAUSES) + cause[~idle])  # one key per (pc, cause)
        for key in np.flatnonzero(counts).tolist():
            p, c = divmod(key, len(CAUSES))
            clocks[(p, c)] = clocks.get((p, c), 0) + int(counts[key])
    change = np.flatnonzero((np.diff(cause) != 0) | (np.diff(pc) != 0) | (np.diff(wave) != 0)) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [len(owner)]])
    runs.append(np.stack([starts, ends, cause[starts], pc[starts], wave[starts]], axis=1))
