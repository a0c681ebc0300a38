"""One CU's modelled run, instruction by instruction, as cu.simulate records it when asked (for a
trace file): each wave's instructions with the clock each arrived at and the clock it issued, the
spans the matrix pipes, the LDS and the vector memory path were busy, and each SIMD's clocks as
cu.py assigned them (every clock to one cause and, but for idle ones, one instruction)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

LDS_UNIT, VMEM_UNIT = -1, -2  # pipes of the whole CU; a SIMD's matrix pipe is its index


@dataclass
class Timeline:
    # wave, pc, arrived, issued, cause waited for
    steps: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    pipes: list[tuple[int, int, int, int, int]] = field(default_factory=list)  # unit, wave, pc, start, end
    # wave -> (issued its last, its memory landed)
    ends: dict[int, tuple[int, int]] = field(default_factory=dict)
    waves: list[tuple[int, int]] = field(default_factory=list)  # wave -> (workgroup, SIMD)
    # per SIMD: runs (start, end, cause, pc, wave); pc -1: idle
    simds: list[np.ndarray] = field(default_factory=list)
    cycles: int = 0
