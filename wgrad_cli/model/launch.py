"""One launch through the timing model: emulate one workgroup of each class (the workgroups that
run the same instruction stream, e.g. the tiles of experts with one token count), time each
class on a CU (cu.py), then the grid over the chip (schedule.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from wgrad_cli.compile.occupancy import gfx950
from wgrad_cli.emu.dispatch import Launch, init_batch
from wgrad_cli.emu.machine import Op, execute
from wgrad_cli.emu.memory import Heap
from wgrad_cli.emu.program import Program
from wgrad_cli.errors import WgradError
from wgrad_cli.model.cu import CuTime, simulate
from wgrad_cli.model.machine import Machine
from wgrad_cli.model.schedule import Sharing, schedule
from wgrad_cli.model.timeline import Timeline
from wgrad_cli.model.ops import Kind
from wgrad_cli.model.trace import PPM, Recorder, Stream
from wgrad_cli.results.records import ModelFigures, Profile


@dataclass(frozen=True)
class Modelled:
    """A launch's modelled time, its causes (seconds, summing to it) and what was emulated."""

    seconds: float
    causes: dict[str, float]
    limiter: str
    mfma_floor_seconds: float  # the grid's matrix clocks spread over every SIMD: no time may be below it
    clock_ghz: float  # the clock held (the machine's, or less where the power budget binds)
    # the share of the CUs' clocks the matrix pipes are busy, which with the toggle sets that clock
    matrix_duty: float
    toggle: float  # the share of MFMA operand bits that changed between a wave's MFMAs
    workgroups: int
    classes: int
    emulated: list[int]  # the workgroups run on the emulator (one per class, and one to check a class)
    resident: int  # workgroups per CU at once
    hbm_bytes: int
    rounds: int
    # how far the checking workgroup's wave-instructions were from its class's, as a share
    spread: float = 0.0
    # profile: (pc, cause index) -> seconds
    clocks: dict[tuple[int, int], float] = field(default_factory=dict)
    executions: dict[int, int] = field(default_factory=dict)  # profile: pc -> wave-executions over the grid
    critical: int = 0  # the emulated workgroup whose class is on the critical path (the set that ends last)

    def figures(self, machine: Machine, profile: Profile | None = None, published_us: float | None = None,
                published_source: str | None = None) -> ModelFigures:
        """How the time came about, as a results record stores it (microseconds)."""
        return ModelFigures(machine.name, machine.clock_ghz, self.limiter,
                            {c: v * 1e6 for c, v in self.causes.items()}, self.mfma_floor_seconds * 1e6,
                            self.workgroups, self.classes, self.emulated, self.resident,
                            self.hbm_bytes, published_us, published_source, profile, round(self.clock_ghz, 4),
                            round(self.matrix_duty, 4), round(self.toggle, 4), machine.band)


def _record(recorder: Recorder, launch: Launch, heap: Heap, group: int, name: str,
            timeout: float) -> list[Stream]:
    kernarg = heap.span(launch.kernarg, -(-max(launch.kernel.kernarg_size, 4) // 4) * 4).view(np.uint32)
    batch = init_batch(launch, heap, np.array([group]), kernarg)
    recorder.clear()

    def describe(op: Op, why: str) -> str:
        return f"{name}: {op.name} at offset {op.pc:#x}: {why}"

    # an EmuFault is the device's one-line DriverError, a hang its LaunchStopped (emu/device.py); the
    # time limit is per emulated workgroup, since a modelled launch runs several of them one by one
    execute(batch, recorder.ops, describe, time.thread_time() + timeout)
    return recorder.streams(batch.W)


def _toggle(streams: dict[int, list[Stream]], recorder: Recorder, keys: list[int]) -> float:
    """The grid's MFMA operand toggle rate: each class's MFMAs' (their recorded costs, where a wave
    had an MFMA before), weighted by the workgroups of the class."""
    flips = count = 0.0
    mfma = np.array(sorted(pc for pc, s in recorder.static.items() if s.kind == Kind.MFMA), dtype=np.int64)
    for key, waves in streams.items():
        weight = keys.count(key)
        for s in waves:
            costs = s.costs[np.isin(s.pcs, mfma) & (s.costs >= 0)]
            flips += weight * float(costs.sum()) / PPM
            count += weight * len(costs)
    return flips / count if count else 0.0


def model_launch(launch: Launch, program: Program, heap: Heap, m: Machine, classes: list[int] | None,
                 sharing: Sharing | None, name: str, timeout: float, tolerance: float = 0.0,
                 profile: bool = False, timeline: Timeline | None = None) -> Modelled:
    """The launch's modelled time. `classes` gives each workgroup's class (None: each its own);
    `timeout`: seconds each emulated workgroup may run before the launch stops as hung; `tolerance`:
    the share of wave-instructions by which the workgroup that checks the first class may differ from
    it (0: none; a launch file's class_tolerance); `profile`: with each instruction's time by cause;
    `timeline`: filled with the CU timeline of the class on the critical path (the set that ends last)."""
    groups = launch.groups
    keys = classes if classes is not None else list(range(groups))
    recorder = Recorder(program, program.ops_for(launch.kernel), m)
    first: dict[int, int] = {}
    for g, key in enumerate(keys):
        first.setdefault(key, g)
    streams = {key: _record(recorder, launch, heap, g, name, timeout) for key, g in first.items()}
    emulated = list(first.values())
    check = next((g for g in range(groups - 1, -1, -1) if keys[g] == keys[0] and g != first[keys[0]]), None)
    spread = 0.0
    if check is not None:  # the sampling rests on one stream per class: test it on one more workgroup
        other = _record(recorder, launch, heap, check, name, timeout)
        mine = streams[keys[0]]
        ran, ran_too = sum(len(s.pcs) for s in mine), sum(len(s.pcs) for s in other)
        spread = sum(abs(len(a.pcs) - len(b.pcs)) for a, b in zip(mine, other)) / max(ran, 1)
        if spread > tolerance:
            raise WgradError(f"{name}: workgroups {first[keys[0]]} and {check} are of one class but "
                             f"ran {ran:,} and {ran_too:,} wave-instructions; the model samples one "
                             "workgroup per class and cannot time this kernel")
        emulated.append(check)
    k = launch.kernel
    lds = k.group_segment_size + launch.dynamic_lds
    occupancy = gfx950(k.vgprs, k.agprs, lds, launch.threads)
    # the machine file's LDS, if set lower
    by_lds = m.lds_bytes_per_cu // lds if lds else occupancy.groups_per_unit
    resident = max(1, min(occupancy.groups_per_unit, by_lds, -(-groups // m.compute_units)))
    per_class: dict[int, CuTime] = {key: simulate([s] * resident, recorder.static, m, profile, None)
                                    for key, s in streams.items()}
    grid = schedule(keys, per_class, resident, sharing, m)
    if timeline is not None:  # the CU the grid waits for at the end
        simulate([streams[grid.critical]] * resident, recorder.static, m, profile, timeline)
    # the power budget sets the clock from the matrix pipes' share of the CUs' time (bandwidth waits,
    # in seconds, left out) and their operands' toggle rate; the floors are in seconds, so the grid is
    # scheduled again at that clock
    duty = grid.mfma_cycles / m.simds / max(grid.cycles - grid.causes["bandwidth"], 1.0)
    toggle = _toggle(streams, recorder, keys)
    ghz = m.clock_under_load(duty, toggle)
    if ghz != m.clock_ghz:
        grid = schedule(keys, per_class, resident, sharing, m.at_clock(ghz))
    hz = ghz * 1e9
    causes = {c: v / hz for c, v in grid.causes.items()} | {"launch": m.launch_us * 1e-6}
    floor = grid.mfma_cycles / m.simds / hz
    return Modelled(sum(causes.values()), causes, max(causes, key=lambda c: causes[c]), floor, ghz, duty,
                    toggle, groups, len(first), sorted(emulated), resident, grid.hbm_bytes, grid.rounds,
                    spread, {k: v / hz for k, v in grid.clocks.items()}, grid.executions,
                    first[grid.critical])
