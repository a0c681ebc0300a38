"""The grid over the chip: workgroups dealt to compute units in dispatch order, each CU taking
the next set of resident workgroups when its last set is done (rounds and tails), then the
memory system's floor on each round of sets running at once.

A set's time is its CU timeline (cu.py) for its workgroup class. The floor of a round is the
bytes it moves over the rate of the level that serves them: its distinct bytes from HBM (every
store, and the inputs of owners, e.g. experts, the grid has not read before, or again in each
round where they outgrow the last-level cache) and all of its loads
from the last-level cache; where the floor is longer than the round's slowest set, the difference
is added as bandwidth time."""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field

from wgrad_cli.model.cu import CAUSES, CuTime
from wgrad_cli.model.machine import Machine


@dataclass(frozen=True)
class Sharing:
    """Which workgroups read the same inputs: an owner per workgroup (e.g. its expert) and the
    distinct input bytes of each owner (read from HBM once, where they fit the last-level cache)."""

    owner: list[int]
    inputs: dict[int, int]


@dataclass(frozen=True)
class GridTime:
    cycles: float
    causes: dict[str, float]  # CAUSES + bandwidth -> clocks; sums to `cycles`
    mfma_cycles: int  # matrix pipe clocks over the whole grid
    hbm_bytes: int
    rounds: int
    # profile: (pc, cause index) -> clocks, as causes
    clocks: dict[tuple[int, int], float] = field(default_factory=dict)
    executions: dict[int, int] = field(default_factory=dict)  # profile: pc -> wave-executions over the grid
    critical: int = 0  # the class of the set that ends last: the grid's critical path runs through it


def schedule(classes: list[int], per_class: dict[int, CuTime], resident: int, sharing: Sharing | None,
             m: Machine) -> GridTime:
    """The grid's time: workgroups of `classes` (a class per workgroup, dispatch order) in sets of
    `resident` per CU."""
    units = m.compute_units
    sets = [classes[i: i + resident] for i in range(0, len(classes), resident)]
    free = [(0.0, u) for u in range(units)]
    heapq.heapify(free)
    busy = dict.fromkeys(CAUSES, 0.0)
    timed: Counter[int] = Counter()  # class -> sets it timed (a set's time is its slowest member's timeline)
    ran: Counter[int] = Counter()  # class -> workgroups of it
    mfma = 0
    rounds: list[list[float]] = []  # per round: slowest set (clocks), fresh input bytes, loads, stores
    seen: set[int] = set()
    this_round: set[int] = set()
    last = (-1.0, classes[0] if classes else 0)  # the latest end of a set, and its class
    for i, members in enumerate(sets):
        slowest = max(members, key=lambda c: per_class[c].cycles)
        t = per_class[slowest]
        start, unit = heapq.heappop(free)
        heapq.heappush(free, (start + t.cycles, unit))
        last = max(last, (start + t.cycles, slowest), key=lambda end: end[0])
        for cause, clocks in t.causes.items():
            busy[cause] += clocks
        timed[slowest] += 1
        ran.update(members)
        # a class's CU timeline holds `resident` of its workgroups: a member's share is 1 / resident
        mfma += sum(per_class[c].mfma_cycles for c in members) // resident
        loads = sum(per_class[c].bytes_loaded for c in members) // resident
        stores = sum(per_class[c].bytes_stored for c in members) // resident
        if i % units == 0:
            rounds.append([0.0, 0, 0, 0])
            this_round = set()
        first = range(i * resident, i * resident + len(members))
        fresh = loads if sharing is None else _fresh(sharing, first, seen, this_round, m.llc_bytes)
        r = rounds[-1]
        r[0], r[1], r[2], r[3] = max(r[0], t.cycles), r[1] + fresh, r[2] + loads, r[3] + stores
    # a round reads no more than it loads
    hbm = [int(min(fresh, loads) + stores) for _, fresh, loads, stores in rounds]
    compute = max(t for t, _ in free)
    cycles_per_s = m.clock_ghz * 1e9
    stretch = sum(max(0.0, max(h / m.hbm_bytes_per_second, r[2] / m.llc_bytes_per_second)
                      * cycles_per_s - r[0])
                  for h, r in zip(hbm, rounds))
    causes = {c: v / units for c, v in busy.items()}
    causes["tail"] += compute - sum(causes.values())
    causes["bandwidth"] = stretch
    by_pc: Counter[tuple[int, int]] = Counter()
    executions: Counter[int] = Counter()
    for c, n in timed.items():
        by_pc.update({k: v * n / units for k, v in per_class[c].clocks.items()})
    for c, n in ran.items():  # a class's CU timeline holds `resident` of its workgroups
        executions.update({pc: e * n // resident for pc, e in per_class[c].executions.items()})
    return GridTime(compute + stretch, causes, mfma, sum(hbm), len(rounds),
                    dict(by_pc), dict(executions), last[1])


def _fresh(sharing: Sharing, groups: range, seen: set[int], this_round: set[int], llc: int) -> int:
    """Input bytes of the owners of `groups` not read before (marked read now). An owner whose
    inputs outgrow the last-level cache is read again in every round it runs in: the workgroups of
    one round move through its tokens together and share them, later rounds find them evicted."""
    total = 0
    for g in groups:
        owner = sharing.owner[g]
        size = sharing.inputs.get(owner, 0)
        again = size > llc and owner not in this_round
        if owner not in seen or again:
            total += size
        seen.add(owner)
        this_round.add(owner)
    return total
