"""One kernel launch on the emulator: the initial wave state the descriptor asks for, the grid
cut into batches of whole workgroups, and the batches spread over worker processes.

Initial state per LLVM's AMDGPUUsage, "Initial Kernel Execution State": user SGPRs in the fixed
order (dispatch ptr, queue ptr, kernarg segment ptr, dispatch id, private segment size, preloaded
kernargs; gfx950 has no private segment buffer or flat scratch init SGPRs: scratch_ops.refusal),
then the enabled system SGPRs (workgroup id x, y, z, workgroup info; with architected flat scratch
no private segment wave offset); work-item ids packed in v0 (x bits 9:0, y 19:10, z 29:20); EXEC
set to the wave's existing lanes. Each batch holds its waves' private memory.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import traceback
from dataclasses import dataclass

import numpy as np

from wgrad_cli.emu import atomic_ops
from wgrad_cli.emu.loader import Descriptor
from wgrad_cli.emu.machine import EXEC, Batch, EmuFault, Op, Stats, execute
from wgrad_cli.emu.memory import Heap
from wgrad_cli.emu.program import Program
from wgrad_cli.emu.scratch_ops import segment_bytes
from wgrad_cli.options import HIP_STACK_BYTES

MAX_BATCH_WAVES = 2048  # waves run in lock-step at once: bounds the register arrays (~64 KiB per VGPR)
MAX_BATCH_PRIVATE = 1 << 27  # bytes of private memory a batch holds at once (one batch per worker process)


@dataclass(frozen=True)
class Launch:
    kernel: Descriptor
    grid: tuple[int, int, int]  # workgroups
    block: tuple[int, int, int]  # work-items per workgroup
    dynamic_lds: int
    kernarg: int  # device address of the kernarg segment
    dispatch_packet: int  # device address of an AQL dispatch packet describing this launch
    strict_lds: bool = False  # an LDS access beyond the workgroup's allocation stops the run
    code_base: int = 0  # device address of the code object's image (PCs are offsets into it)
    stack_bytes: int = HIP_STACK_BYTES  # per work-item, for a kernel with a dynamic stack

    @property
    def private_bytes(self) -> int:
        return segment_bytes(self.kernel, self.stack_bytes)

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def waves_per_group(self) -> int:
        return -(-self.threads // 64)

    @property
    def groups(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


def user_sgprs(k: Descriptor, launch: Launch, kernarg_words: np.ndarray) -> list[int]:
    values: list[int] = []
    if k.dispatch_ptr:
        values += [launch.dispatch_packet & 0xFFFFFFFF, launch.dispatch_packet >> 32]
    if k.queue_ptr:
        values += [0, 0]
    if k.kernarg_segment_ptr:
        values += [launch.kernarg & 0xFFFFFFFF, launch.kernarg >> 32]
    if k.dispatch_id:
        values += [0, 0]
    if k.private_segment_size_sgpr:
        values += [launch.private_bytes]
    start = k.kernarg_preload_offset
    values += [int(w) for w in kernarg_words[start: start + k.kernarg_preload_dwords]]
    return values


def init_batch(launch: Launch, heap: Heap, first_group: int, groups: int,
               kernarg_words: np.ndarray) -> Batch:
    k = launch.kernel
    wpg = launch.waves_per_group
    lds = k.group_segment_size + launch.dynamic_lds
    b = Batch(groups * wpg, wpg, k.vgprs, k.agprs, lds, heap, launch.private_bytes, launch.strict_lds)
    b.code_base = launch.code_base
    if k.uses_dynamic_stack:
        b.private_name = "stack (the HIP runtime's size for a kernel with a dynamic stack; --emu-stack-bytes sets it)"
    gx, gy, _ = launch.grid
    ids = np.arange(first_group, first_group + groups)
    b.group_ids[:, 0], b.group_ids[:, 1], b.group_ids[:, 2] = ids % gx, (ids // gx) % gy, ids // (gx * gy)
    user = user_sgprs(k, launch, kernarg_words)
    for i, value in enumerate(user):
        b.s[i] = value
    reg = len(user)
    wave_group = b.group_ids[b.group]
    for dim in range(3):
        if k.workgroup_id[dim]:
            b.s[reg] = wave_group[:, dim]
            reg += 1
    if k.workgroup_info:
        b.s[reg] = 0
    bx, by, _ = launch.block
    tid = (np.arange(b.W) % wpg)[:, None] * 64 + np.arange(64)[None, :]
    x, y, z = tid % bx, (tid // bx) % by, tid // (bx * by)
    b.v[0] = (x | (y << 10) | (z << 20)).astype(np.uint32)
    live = tid < launch.threads
    b.write_mask64(EXEC, live)
    b.pc[:] = k.entry
    return b


def run_groups(launch: Launch, program: Program, heap: Heap, first: int, count: int, name: str) -> Stats:
    """Run workgroups [first, first + count) in batches; their statistics."""
    stats = Stats()
    kernarg = heap.span(launch.kernarg, -(-max(launch.kernel.kernarg_size, 4) // 4) * 4).view(np.uint32)
    waves = min(MAX_BATCH_WAVES, MAX_BATCH_PRIVATE // max(1, 64 * launch.private_bytes))
    per_batch = max(1, waves // launch.waves_per_group)

    def describe(op: Op, why: str) -> str:
        return f"{name}: {op.name} at offset {op.pc:#x}: {why}"

    for start in range(first, first + count, per_batch):
        n = min(per_batch, first + count - start)
        batch = init_batch(launch, heap, start, n, kernarg)
        execute(batch, program.ops_for(launch.kernel), describe)
        stats.add(batch.stats)
    return stats


def _worker(conn: multiprocessing.connection.Connection, launch: Launch, program: Program, heap: Heap, first: int,
            count: int, name: str) -> None:
    try:
        conn.send(("ok", run_groups(launch, program, heap, first, count, name)))
    except EmuFault as exc:
        conn.send(("fault", str(exc)))
    except BaseException:  # noqa: BLE001 - anything else is a bug in the emulator: report it whole
        conn.send(("crash", traceback.format_exc()))
    finally:
        conn.close()


def run(launch: Launch, program: Program, heap: Heap, name: str, workers: int) -> Stats:
    """Run a whole launch, over up to `workers` processes; EmuFault on the first fault."""
    groups = launch.groups
    workers = max(1, min(workers, groups, os.cpu_count() or 1))
    if workers == 1 or groups * launch.waves_per_group < 2 * 64:
        return run_groups(launch, program, heap, 0, groups, name)
    ctx = multiprocessing.get_context("fork")
    share = -(-groups // workers)
    procs, pipes = [], []
    with atomic_ops.workers_lock(ctx, program.ops.values()):  # the workers inherit it as they fork
        for w in range(workers):
            first, count = w * share, min(share, groups - w * share)
            if count <= 0:
                break
            recv, send = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_worker, args=(send, launch, program, heap, first, count, name), daemon=True)
            p.start()
            send.close()
            procs.append(p)
            pipes.append(recv)
    stats = Stats()
    problems = []
    for p, pipe in zip(procs, pipes):
        try:
            kind, payload = pipe.recv()
        except EOFError:
            kind, payload = "crash", f"emulator worker exited with status {p.exitcode}"
        p.join()
        if kind == "ok":
            stats.add(payload)
        else:
            problems.append((kind, payload))
    if problems:
        kind, payload = problems[0]
        raise EmuFault(payload if kind == "fault" else f"{name}: the emulator failed: {payload.strip().splitlines()[-1]}")
    return stats
