"""The emulated device with the timing model behind its launches: memory, modules and argument
packing are the emulator's (so verify's set-up code drives it unchanged); a launch emulates one
workgroup per class and keeps the modelled time instead of running the whole grid."""

from __future__ import annotations

from dataclasses import dataclass

from wgrad_cli.device.runtime import DeviceInfo
from wgrad_cli.emu.device import EmuRuntime
from wgrad_cli.emu.dispatch import Launch
from wgrad_cli.emu.memory import Heap
from wgrad_cli.emu.program import Program
from wgrad_cli.model.launch import Modelled, model_launch
from wgrad_cli.model.machine import Machine
from wgrad_cli.model.schedule import Sharing
from wgrad_cli.model.timeline import Timeline


@dataclass(frozen=True)
class Plan:
    """What the next launch's workgroups share: a class per workgroup (same instruction stream)
    and which inputs they read (None: each workgroup its own class, no inputs shared)."""

    classes: list[int] | None = None
    sharing: Sharing | None = None
    tolerance: float = 0.0  # how far a class's checking workgroup may run from it (model_launch)


class ModelRuntime(EmuRuntime):
    def __init__(self, machine: Machine, profile: bool = False, heap: Heap | None = None) -> None:
        """`heap`: an emulated device's memory to run on (verify --model models the
        buffers verify uploaded)."""
        super().__init__(workers=1)
        if heap is not None:
            self.heap = heap
        self.machine = machine
        self.profile = profile  # each launch's time per instruction, by cause
        self.timeline: Timeline | None = None  # filled by the next launch with one CU's run (a trace)
        d = self.device
        self.device = DeviceInfo(d.vendor, d.index,
                                 f"modelled {machine.name} at {machine.clock_ghz:g} GHz (wgrad model)",
                                 machine.arch, machine.compute_units, round(machine.clock_ghz * 1000),
                                 d.memory_bytes, machine.l2_bytes_per_xcd * machine.xcds,
                                 "wgrad timing model", d.runtime, emulated=True)
        self.plan = Plan()
        self.modelled: list[Modelled] = []  # one per launch, in order
        self.programs: list[Program] = []  # each launch's program, in order

    def _run(self, launch: Launch, program: Program) -> None:
        self.programs.append(program)
        self.modelled.append(model_launch(launch, program, self.heap, self.machine, self.plan.classes,
                                          self.plan.sharing, launch.kernel.name, self.timeout,
                                          self.plan.tolerance, self.profile, self.timeline))
