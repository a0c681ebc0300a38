"""The timing model's views of one launch (wgrad model --profile and --trace) on small kernels
compiled here with clang-22: every SIMD clock goes to one instruction and cause, so the
instructions' times with the idle and bandwidth time sum to the launch's; the waits that take the
time are the instructions that carry it; one CU's trace validates against the JSON trace-event
format and each SIMD's events add up to the CU's time."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from emukernels import assert_uses, compile_hip, run
from traceformat import simd_clocks, validated
from wgrad_cli.model.cu import CAUSES
from wgrad_cli.model.launch import Modelled
from wgrad_cli.model.machine import load
from wgrad_cli.config.shipped import KERNELS_DIR
from wgrad_cli.emu.loader import load_image
from wgrad_cli.emu.program import Program
from wgrad_cli.model.profile import Loop, disassembly, instruction_profile, natural_loops, regions
from wgrad_cli.model.runtime import ModelRuntime, Plan
from wgrad_cli.model.timeline import Timeline
from wgrad_cli.model.tracefile import WAVE_TID, write_trace
from wgrad_cli.results.records import Profile

M = load("mi355x")

# STEPS steps of: a 16-byte load per lane, waited for (vmcnt(0)), staged through the LDS between
# two barriers, then 8 scaled MFMAs on it. 4 waves, one per SIMD: the waits and barriers are exposed.
STAGED = r'''
typedef int v8i __attribute__((ext_vector_type(8)));
typedef int v4i __attribute__((ext_vector_type(4)));
typedef float v4f __attribute__((ext_vector_type(4)));
KERNEL void staged(v4f *out, const v4i *in, int steps) {
  SHARED v4i stage[256];
  v4f acc = {0, 0, 0, 0};
  for (int s = 0; s < steps; s++) {
    v4i x;
    asm volatile("global_load_dwordx4 %0, %1, off\n s_waitcnt vmcnt(0)" : "=v"(x)
                 : "v"(in + s * 256 + tid()), "v"(acc.x) : "memory");
    stage[tid()] = x;
    __builtin_amdgcn_s_waitcnt(0);
    __builtin_amdgcn_s_barrier();
    asm volatile("" ::: "memory");
    v4i y = stage[(tid() + 64) % 256];
    v8i a = {y.x, y.y, y.z, y.w, y.x, y.y, y.z, y.w};
#pragma unroll
    for (int j = 0; j < 8; j++)
      acc = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(a, a, acc, 0, 0, 0, 127, 0, 127);
    __builtin_amdgcn_s_barrier();
  }
  out[gid() * 256 + tid()] = acc;
}
'''
STEPS = 6


def staged(tmp: Path, trace: bool) -> tuple[Modelled, Profile, Timeline | None, dict[int, str]]:
    image = compile_hip(STAGED)
    assert_uses(image, r"s_barrier", r"v_mfma_scale.*", r"ds_read.*", r"global_load_dwordx4")
    rt = ModelRuntime(M, profile=True)
    rt.plan = Plan([0] * 2)
    rt.timeline = Timeline() if trace else None
    run(image, [np.zeros((2 * 256, 4), np.float32), np.zeros((256 * STEPS, 4), np.int32), STEPS],
        2, 256, rt=rt)
    path = tmp / "staged.hsaco"
    path.write_bytes(image)
    text = disassembly(path, M.arch)
    assert text, "llvm-objdump gave no listing"
    return rt.modelled[-1], instruction_profile(rt.modelled[-1], rt.programs[-1], text), rt.timeline, text


def test_the_instructions_times_sum_to_the_launch_and_to_each_cause(tmp_path: Path) -> None:
    m, p, _, _ = staged(tmp_path, trace=False)
    total_us = m.seconds * 1e6
    spent = sum(sum(i.causes_us.values()) for i in p.instructions)
    assert spent + p.idle_us + p.bandwidth_us + p.launch_us == pytest.approx(total_us, rel=1e-9)
    for cause in CAUSES[:-1]:  # each cause's time is exactly its instructions' share of it
        assert (sum(i.causes_us.get(cause, 0.0) for i in p.instructions)
                == pytest.approx(m.causes[cause] * 1e6, rel=1e-9, abs=1e-9))
    waves = 2 * 4  # two workgroups of 4 waves; every instruction of the loop runs STEPS times a wave
    mfmas = [i for i in p.instructions if i.text.startswith("v_mfma_scale")]
    assert len(mfmas) == 8 and all(i.executions == waves * STEPS for i in mfmas)
    assert {c for i in mfmas for c in i.causes_us} == {"mfma"}  # an MFMA's clocks are its matrix pipe's


def test_the_exposed_load_wait_and_barriers_carry_their_time(tmp_path: Path) -> None:
    m, p, _, _ = staged(tmp_path, trace=False)
    by = {i.pc: i for i in p.instructions}
    top = max(p.instructions, key=lambda i: sum(i.causes_us.values()))
    assert top.text == "s_waitcnt vmcnt(0)" and set(top.causes_us) == {"memory"}
    # one wave per SIMD waits a load's round trip each step: the latency, per step, on every SIMD
    # (a grid's time by cause is its CUs' clocks over the chip's CUs; here a workgroup per CU)
    per_step = top.causes_us["memory"] * 1e-6 * M.clock_ghz * 1e9 * M.compute_units / m.workgroups / STEPS
    assert per_step == pytest.approx(M.vmem_latency_cycles, rel=0.05)
    barriers = [i for i in p.instructions if i.text == "s_barrier"]
    assert len(barriers) == 2 and all(set(i.causes_us) <= {"barrier", "issue"} for i in barriers)
    loop = next(r for r in p.regions if r.name == "loop 1")
    inside = sum(sum(i.causes_us.values()) for pc, i in by.items() if loop.first_pc <= pc <= loop.last_pc)
    spent = sum(sum(i.causes_us.values()) for i in p.instructions)  # two workgroups leave most CUs idle
    # the K loop takes most of the instructions' time (the rest: set-up, the store)
    assert inside > 0.8 * spent
    assert [r.name for r in p.regions if r.depth == 0] == ["before loop 1", "loop 1", "after loop 1"]


def test_the_trace_is_the_trace_event_format_and_each_simd_adds_up_to_the_cu(tmp_path: Path) -> None:
    m, _, timeline, text = staged(tmp_path, trace=True)
    assert timeline is not None
    path = tmp_path / "staged.json"
    write_trace(path, timeline, text, M.issue_cycles, M.clock_ghz, "staged")
    doc = validated(path)
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert doc["otherData"]["cycles"] == timeline.cycles
    assert simd_clocks(doc) == dict.fromkeys(range(M.simds_per_cu), timeline.cycles)
    waves = [e for e in spans if e["tid"] >= WAVE_TID]
    # one per CU
    assert {names[e["tid"]] for e in waves} == {f"wave {w} (workgroup 0, SIMD {w})" for w in range(4)}
    assert (any(e["name"] == "wait: barrier" for e in waves)
            and any(e["name"] == "wait: memory" for e in waves))
    pipes = [e for e in spans if names[e["tid"]].endswith("matrix pipe")]
    assert sum(e["args"]["clocks"] for e in pipes) == 4 * STEPS * 8 * 8 * M.mfma_pass_cycles  # 8 passes each


# Loops nested three deep, with trip counts read from memory: LLVM rotates each (the test at the
# bottom) and lays some blocks of a loop before its header.
NESTED = r'''
KERNEL void nested(float *out, const int *n) {
  float acc = 0;
  for (int i = 0; i < n[0]; i++) {
    for (int j = 0; j < n[1 + i % 4]; j++) {
      acc += out[j] * i;
      for (int k = j; k < n[5]; k++) acc -= out[k + j] * 0.5f;
    }
    if (acc > 100) for (int k = 0; k < n[6]; k++) acc -= out[k];
  }
  out[tid()] = acc;
}
'''
OWN = Path(__file__).resolve().parents[1] / "data" / "ownkernel" / "rowquad.hip"
SHAPE = ("-DWGRAD_M=512", "-DWGRAD_N=256", "-DWGRAD_K=256", "-DWGRAD_E=3")


def llvm_loop_depths(source: str, flags: tuple[str, ...]) -> list[int]:
    """The depth (1: outermost) of every loop LLVM's own loop analysis finds, from the comments it
    writes at each loop header in its assembly output."""
    assembly = compile_hip(source, (*flags, "-S")).decode()
    return sorted(int(d) for d in re.findall(r"Loop Header: Depth=(\d+)", assembly))


def nesting(loops: list[Loop], depth: int = 1) -> list[int]:
    return sorted(d for loop in loops for d in [depth, *nesting(loop.inner, depth + 1)])


@pytest.mark.parametrize("name, source, flags", [
    ("nested", NESTED, ("-O3",)),
    ("rowquad", OWN.read_text(), ("-O3", "-std=c++20", *SHAPE)),
    ("cdna4", (KERNELS_DIR / "cdna4.hip").read_text(), ("-O3", "-std=c++20", f"-I{KERNELS_DIR}", *SHAPE)),
    ("reference", (KERNELS_DIR / "reference.cu").read_text(),
     ("-O3", "-std=c++20", f"-I{KERNELS_DIR}", *SHAPE)),
])
def test_the_loops_are_llvms_natural_loops_properly_nested(name: str, source: str,
                                                           flags: tuple[str, ...]) -> None:
    """The loop table's loops are the ones LLVM's loop analysis finds, at the same depths, whatever
    the layout (rotated loops, blocks before the header); each lies inside its parent, the outermost
    loops and the straight code share no instruction and cover the code, so their shares add up."""
    decoded = Program(load_image(compile_hip(source, flags))).decoded
    assert nesting(natural_loops(decoded)) == llvm_loop_depths(source, flags), name
    found = regions(decoded)
    top = [r for r in found if r.depth == 0]
    pcs = [d.pc for d in decoded]
    assert top[0].first_pc == pcs[0] and top[-1].last_pc == pcs[-1]
    assert all(a.last_pc < b.first_pc and pcs[pcs.index(a.last_pc) + 1] == b.first_pc
               for a, b in zip(top, top[1:]))
    for r in found:
        if r.depth:
            parent = next(p for p in reversed(found[:found.index(r)]) if p.depth == r.depth - 1)
            assert (parent.first_pc <= r.first_pc <= r.last_pc <= parent.last_pc
                    and r.name.startswith(parent.name + "."))
    if name == "nested":
        assert [r.depth for r in found if r.name.startswith("loop")] == [0, 1, 2, 1]
