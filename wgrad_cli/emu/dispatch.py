"""One kernel launch on the emulator: the initial wave state the descriptor asks for, the grid
cut into batches of whole workgroups, and the batches spread over worker processes.

Initial state per LLVM's AMDGPUUsage, "Initial Kernel Execution State": user SGPRs in the fixed
order (dispatch ptr, queue ptr, kernarg segment ptr, dispatch id, private segment size, preloaded
kernargs; gfx950 has no private segment buffer or flat scratch init SGPRs: scratch_ops.refusal),
then the enabled system SGPRs (workgroup id x, y, z, workgroup info; with architected flat scratch
no private segment wave offset); work-item ids packed in v0 (x bits 9:0, y 19:10, z 29:20); EXEC
set to the wave's existing lanes. Each batch holds its waves' private memory.

Workgroups that wait for one another make progress up to the number the device holds resident
(`Launch.resident`): worker w of n takes workgroups w, w + n, w + 2n, ..., so the first ones of
every worker are the grid's first; the workers run at once, and within one a stalled batch (its
waves all spin, machine.execute) lets the next start while fewer than its share are live.

Workers are forked, so they share the heap (anonymous shared memory) and the compiled program,
which is made of closures that no other start method could send. A fork copies only the thread
that calls it, and a lock another thread holds then stays held in the child forever, so a launch
forks only while this process runs no other Python thread, and runs in-process otherwise. Each
worker asks Linux to kill it when its parent ends (PR_SET_PDEATHSIG), however the parent ends.
"""

from __future__ import annotations

import ctypes
import math
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from wgrad_cli.config.options import HIP_STACK_BYTES
from wgrad_cli.device.runtime import Watcher
from wgrad_cli.emu.loader import Descriptor
from wgrad_cli.emu.machine import EXEC, Batch, EmuFault, Op, Stats, Stuck, TimedOut, execute
from wgrad_cli.emu.memory import Heap
from wgrad_cli.emu.ops import atomic as atomic_ops
from wgrad_cli.emu.ops.scratch import segment_bytes
from wgrad_cli.emu.program import Program
from wgrad_cli.emu.sanitize import SHADOW_BYTES_PER_LDS_BYTE, Sanitizer, plans
from wgrad_cli.emu.watchdog import Watch, board, headway
from wgrad_cli.errors import EmulatorBug

MAX_BATCH_WAVES = 2048  # waves run in lock-step at once: bounds the register arrays (~64 KiB per VGPR)
MAX_BATCH_PRIVATE = 1 << 27  # bytes of private memory a batch holds at once (one batch per worker process)
MAX_SANITIZED_LDS = 1 << 28  # bytes of the sanitizer's LDS state a batch holds at once
PR_SET_PDEATHSIG = 1  # linux/prctl.h
REPORT_SECONDS = 1.0  # how often a launch run by workers reports its headway


@dataclass(frozen=True)
class Launch:
    kernel: Descriptor
    grid: tuple[int, int, int]  # workgroups
    block: tuple[int, int, int]  # work-items per workgroup
    dynamic_lds: int
    kernarg: int  # device address of the kernarg segment
    dispatch_packet: int  # device address of an AQL dispatch packet describing this launch
    cpu_seconds: float  # CPU time each process running the launch may spend on it before it stops as hung
    resident: int  # workgroups the device would hold at once: so many at least run concurrently
    strict_lds: bool = False  # an LDS access beyond the workgroup's allocation stops the run
    code_base: int = 0  # device address of the code object's image (PCs are offsets into it)
    stack_bytes: int = HIP_STACK_BYTES  # per work-item, for a kernel with a dynamic stack
    register_fill: int = 0  # the value of every VGPR and AGPR the launch leaves undefined
    # watch the waves for missing waits, LDS races, wait states, reads of the unwritten
    sanitize: bool = False

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


def init_batch(launch: Launch, heap: Heap, ids: np.ndarray, kernarg_words: np.ndarray) -> Batch:
    """A batch of workgroups `ids` (flat indices into the grid), at the kernel's entry."""
    k = launch.kernel
    wpg = launch.waves_per_group
    lds = k.group_segment_size + launch.dynamic_lds
    b = Batch(len(ids) * wpg, wpg, k.vgprs, k.agprs, lds, heap, launch.private_bytes, launch.strict_lds,
              launch.register_fill)
    b.code_base = launch.code_base
    if k.uses_dynamic_stack:
        b.private_name = ("stack (the HIP runtime's size for a kernel with a dynamic stack; "
                          "--emu-stack-bytes sets it)")
    gx, gy, _ = launch.grid
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


def run_groups(launch: Launch, program: Program, heap: Heap, ids: np.ndarray, name: str, resident: int,
               watch: Watch, report: Watcher | None = None) -> Stats:
    """Run workgroups `ids` in batches, more batches at once (up to `resident` workgroups) while the
    live ones are stalled; their statistics. TimedOut once this process has spent the launch's CPU
    time, Stuck once the watchdog finds that no wave can ever change what it reads."""
    stats = Stats()
    kernarg = heap.span(launch.kernarg, -(-max(launch.kernel.kernarg_size, 4) // 4) * 4).view(np.uint32)
    waves = min(MAX_BATCH_WAVES, MAX_BATCH_PRIVATE // max(1, 64 * launch.private_bytes))
    per_batch = max(1, waves // launch.waves_per_group)
    ops = program.ops_for(launch.kernel)
    sanitizer = None
    if launch.sanitize:  # its state per LDS byte bounds the workgroups a batch holds
        k = launch.kernel
        sanitizer = Sanitizer(program, ops, k.vgprs, k.agprs)
        ops = sanitizer.ops
        lds = max(1, k.group_segment_size + launch.dynamic_lds)
        per_batch = max(1, min(per_batch, MAX_SANITIZED_LDS // (lds * SHADOW_BYTES_PER_LDS_BYTE)))
    deadline = time.thread_time() + launch.cpu_seconds
    live: deque[Batch] = deque()
    start = 0

    def describe(op: Op, why: str) -> str:
        return f"{name}: {op.name} at offset {op.pc:#x}: {why}"

    def begin(count: int) -> None:
        nonlocal start
        live.append(init_batch(launch, heap, ids[start: start + count], kernarg))
        start += count
        watch.changed()

    while start < len(ids) or live:
        if not live:
            begin(min(per_batch, len(ids) - start))
        room = min(per_batch, resident - sum(b.groups for b in live), len(ids) - start)
        finished = execute(live[0], ops, describe, deadline, may_yield=True)
        if finished:
            done = live.popleft()
            stats.add(done.stats)
            watch.finished(done)
        watch.worked(stats.instructions + sum(b.stats.instructions for b in live))
        if report is not None:
            report(headway(watch.board, launch.groups))
        if finished:
            continue
        if room > 0:  # every live wave spins: bring in the next workgroups, as the hardware would
            begin(room)
        elif watch.stalled(live[0], list(live), can_start=False):
            try:  # run on a little to name the loop the waves are in
                execute(live[0], ops, describe, -math.inf, may_yield=True)
            except TimedOut as exc:
                raise Stuck(str(exc)) from None
            raise Stuck("its waves stopped changing")
        live.rotate(-1)
    watch.retire()
    if sanitizer is not None:
        stats.findings = sanitizer.findings()
    return stats


def _die_with_parent(parent: int) -> None:
    """Have Linux kill this worker when the process that forked it ends, by any means (SIGKILL
    included), and leave Ctrl-C to that process, which ends the workers itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it ended before the request
        os._exit(1)


def _worker(conn: multiprocessing.connection.Connection, launch: Launch, program: Program, heap: Heap,
            ids: np.ndarray, name: str, resident: int, watch: Watch, parent: int) -> None:
    _die_with_parent(parent)
    try:
        conn.send(("ok", run_groups(launch, program, heap, ids, name, resident, watch)))
    except EmuFault as exc:
        conn.send(("fault", str(exc)))
    except Stuck as exc:
        conn.send(("stuck", str(exc)))
    except TimedOut as exc:
        conn.send(("timeout", str(exc)))
    except BaseException:  # noqa: BLE001 - anything else is a bug in the emulator: report it whole
        conn.send(("crash", traceback.format_exc()))
    finally:
        conn.close()


def run(launch: Launch, program: Program, heap: Heap, name: str, workers: int,
        report: Watcher | None = None) -> Stats:
    """Run a whole launch, over up to `workers` processes; EmuFault on the first fault, TimedOut past
    its CPU time, Stuck where no wave can make progress, EmulatorBug on anything else. `report`
    hears the launch's headway as it goes on."""
    groups = launch.groups
    workers = max(1, min(workers, groups, os.cpu_count() or 1))
    if workers == 1 or groups * launch.waves_per_group < 2 * 64 or threading.active_count() > 1:
        return run_groups(launch, program, heap, np.arange(groups), name, launch.resident,
                          Watch(board(1), 0), report)
    shared = board(workers)
    if launch.sanitize:  # once, for every worker
        plans(program, program.ops_for(launch.kernel), max(launch.kernel.vgprs, 1))
    ctx = multiprocessing.get_context("fork")
    procs: dict[multiprocessing.connection.Connection, multiprocessing.process.BaseProcess] = {}
    try:
        # Ctrl-C while a worker forks would raise in the fork's hooks, where it is lost ("Exception ignored"),
        # and leave the run waiting on workers that spin for ever: it is held until the workers run
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            with atomic_ops.workers_lock(ctx, program.ops.values()):  # the workers inherit it as they fork
                for w in range(workers):
                    recv, send = ctx.Pipe(duplex=False)
                    share = np.arange(w, groups, workers)
                    proc = ctx.Process(target=_worker, daemon=True,
                                       args=(send, launch, program, heap, share, name,
                                             -(-launch.resident // workers), Watch(shared, w), os.getpid()))
                    proc.start()
                    send.close()
                    procs[recv] = proc
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        stats = Stats()
        waiting = dict(procs)
        while waiting:
            ready_now = multiprocessing.connection.wait(list(waiting), timeout=REPORT_SECONDS)
            if report is not None:
                report(headway(shared, groups))
            for ready in ready_now:
                pipe = cast(multiprocessing.connection.Connection, ready)
                worker = waiting.pop(pipe)
                try:
                    answer: tuple[str, Any] = pipe.recv()
                except EOFError:
                    worker.join()
                    answer = ("crash", f"emulator worker exited with status {worker.exitcode}")
                kind, payload = answer
                if kind == "ok":
                    stats.add(payload)
                elif kind == "fault":
                    raise EmuFault(payload)
                elif kind == "stuck":
                    raise Stuck(payload)
                elif kind == "timeout":
                    raise TimedOut(payload)
                else:
                    raise EmulatorBug.of(f"launch of {name}, in a worker process", payload)
        return stats
    finally:  # the others may spin forever waiting on the one that failed
        for worker in procs.values():
            if worker.is_alive():
                worker.kill()
            worker.join()
