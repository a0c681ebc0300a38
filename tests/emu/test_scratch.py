"""Scratch (private) memory as gfx950 has it (architected flat scratch): every lane its own
private segment, reached by SCRATCH instructions in all four address forms (vaddr, saddr, both,
neither: clang emits each for local arrays, call frames and spills) and by FLAT instructions whose
address lies in the private aperture (a private pointer made generic). Expected values: numpy
models of the kernels' C, with per-lane arrays; a lane or wave that saw another's private memory,
or an EXEC-masked lane that stored, would change them."""

from __future__ import annotations

import re

import numpy as np
import pytest

from emukernels import assert_uses, compile_hip, run
from wgrad_cli.emu import dispatch
from wgrad_cli.emu.device import EmuRuntime
from wgrad_cli.emu.loader import load_image
from wgrad_cli.emu.program import Program
from wgrad_cli.errors import DriverError

U32 = np.uint32

# A dynamically indexed local array (too big to live in registers), per-lane data, a lane-dependent
# store, and a store only some lanes make: the others hold an index far outside the array.
LANES = """
KERNEL void lanes(const unsigned *idx, unsigned *out) {
  unsigned g = tid() + 256 * gid();
  unsigned arr[64];
  for (int i = 0; i < 64; ++i) arr[i] = g * 131u + i * idx[0];
  unsigned w = idx[g + 1], v = w >> 6;
  arr[w & 63] += g;
  if (v < 64) arr[v] ^= 0x5a5au;
  out[2 * g] = arr[idx[g + 2] & 63];
  out[2 * g + 1] = arr[(idx[g + 2] >> 6) & 63];
}
"""
# Too many live values for the VGPR budget: the register allocator spills to scratch.
SPILL = """
extern "C" __attribute__((global)) __attribute__((launch_bounds(256))) __attribute__((amdgpu_num_vgpr(32)))
void spill(const unsigned *a, unsigned *out, int rounds) {
  unsigned g = tid() + 256 * gid();
  unsigned v[48];
#pragma unroll
  for (int i = 0; i < 48; ++i) v[i] = a[g * 48 + i];
  if (g % 3 != 0)
    for (int k = 0; k < rounds; ++k)
#pragma unroll
      for (int i = 0; i < 48; ++i) v[i] = v[i] * v[(i + 1) % 48] + (unsigned)k;
#pragma unroll
  for (int i = 0; i < 48; ++i) out[g * 48 + i] = v[i];
}
"""
# A called function's frame lives at the stack pointer s32: saddr and saddr + vaddr forms.
FRAME = """
__attribute__((noinline)) DEVICE unsigned inner(unsigned g, unsigned i, unsigned j) {
  unsigned arr[64];
  for (int k = 0; k < 64; ++k) arr[k] = g * 7u + k;
  arr[i & 63] += 5u;
  return arr[j & 63];
}
KERNEL void frame(const unsigned *idx, unsigned *out) {
  unsigned g = tid() + 64 * gid();
  out[g] = inner(g, idx[g], idx[g + 128]) + inner(g + 1, idx[g + 128], idx[g]);
}
"""
# One generic pointer, private in odd lanes and global in even ones: FLAT accesses of both apertures.
MIXED = """
__attribute__((noinline)) DEVICE unsigned walk(unsigned *p, unsigned i, unsigned n) {
  for (unsigned k = 0; k < n; ++k) p[k] = p[k] * 3u + i;
  return p[i % n];
}
KERNEL void mixed(const unsigned *idx, unsigned *glob, unsigned *out) {
  unsigned g = tid() + 64 * gid();
  unsigned arr[40];
  for (int i = 0; i < 40; ++i) arr[i] = g + i;
  unsigned *p = (g & 1) ? arr : glob + 40 * g;
  out[g] = walk(p, idx[g], idx[g + 128] % 40 + 1);
}
"""
# Reads of private memory no lane wrote (volatile: the compiler must load them).
UNSET = """
KERNEL void unset(const unsigned *idx, unsigned *out) {
  volatile unsigned arr[16];
  unsigned g = tid() + 64 * gid();
  arr[idx[g] & 7] = g;
  out[g] = arr[idx[g] >> 3];
}
"""
POISON = 0x7FBADBAD  # what the emulator's fresh private memory holds, per dword


def scratch_forms(image: bytes) -> set[tuple[bool, bool]]:
    """(SGPR offset used, VGPR offset used) of the image's SCRATCH instructions (decoded as the
    emulator does; test_emu_decoder checks the decoder against LLVM's)."""
    return {(int(d.inst.saddr.offset) != 127, bool(d.inst.sve))
            for d in Program(load_image(image)).decoded if d.cls == "SCRATCH"}


def lanes_model(idx: np.ndarray, threads: int) -> np.ndarray:
    g = np.arange(threads, dtype=U32)
    arr = g[:, None] * U32(131) + np.arange(64, dtype=U32)[None, :] * idx[0]
    w = idx[g + 1]
    rows = np.arange(threads)
    arr[rows, w & 63] += g
    v = w >> 6
    hit = v < 64
    arr[rows[hit], v[hit]] ^= U32(0x5A5A)
    r = idx[g + 2]
    return np.stack([arr[rows, r & 63], arr[rows, (r >> 6) & 63]], axis=1).reshape(-1)


def lanes_case(groups: int) -> tuple[np.ndarray, np.ndarray]:
    threads = 256 * groups
    idx = np.random.default_rng(5).integers(0, 1 << 13, threads + 2, dtype=U32)  # v = w >> 6: half of it < 64
    return idx, lanes_model(idx, threads)


@pytest.mark.parametrize("flags", [("-O3",), ("-O0",)])
def test_a_dynamically_indexed_local_array_is_private_to_each_lane(flags: tuple[str, ...]) -> None:
    image = compile_hip(LANES, flags)
    if flags == ("-O3",):  # scratch with a VGPR offset, and with none
        assert {(False, True), (False, False)} <= scratch_forms(image)
    else:  # flat accesses through src_private_base
        assert_uses(image, "flat_load_dword", "flat_store_dword")
    idx, want = lanes_case(2)
    _, out = run(image, [idx, np.zeros(2 * 512, U32)], grid=2, block=256)
    bad = np.flatnonzero(out != want)
    assert not len(bad), f"out[{bad[0]}] = {out[bad[0]]:#x}, want {want[bad[0]]:#x}"


def test_private_memory_over_worker_processes_and_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """32 workgroups of 4 waves over 2 worker processes, each running batches of 2 workgroups, so
    each batch allocates its own private memory."""
    image = compile_hip(LANES)
    monkeypatch.setattr(dispatch, "MAX_BATCH_PRIVATE", 8 * 64 * 272)  # 8 waves of 272 bytes per lane
    idx, want = lanes_case(32)
    _, out = run(image, [idx, np.zeros(2 * 256 * 32, U32)], grid=32, block=256, rt=EmuRuntime(workers=2))
    assert (out == want).all()


def test_a_spilling_kernel_computes_the_right_answer_with_exec_masked_lanes() -> None:
    image = compile_hip(SPILL)
    assert_uses(image, "scratch_store_dwordx2", "scratch_load_dwordx2")
    assert (False, False) in scratch_forms(image)  # the spill slots: the instruction offset only
    threads, rounds = 100, 3  # the second wave has 36 live lanes; lanes g % 3 == 0 skip the loop
    a = np.random.default_rng(6).integers(0, 1 << 32, (threads, 48), dtype=U32)
    _, out = run(image, [a, np.zeros_like(a), rounds], block=threads)
    v = a.copy()
    active = np.arange(threads) % 3 != 0
    for k in range(rounds):
        for i in range(48):
            v[active, i] = v[active, i] * v[active, (i + 1) % 48] + U32(k)
    assert (out == v).all()


def test_a_call_frame_addressed_from_the_stack_pointer() -> None:
    image = compile_hip(FRAME)
    assert {(True, True), (True, False)} <= scratch_forms(image)
    idx = np.random.default_rng(7).integers(0, 1 << 16, 256, dtype=U32)
    _, out = run(image, [idx, np.zeros(128, U32)], grid=2)
    g = np.arange(128, dtype=U32)

    def inner(base: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        arr = base[:, None] * U32(7) + np.arange(64, dtype=U32)[None, :]
        arr[np.arange(len(base)), i & 63] += U32(5)
        return np.asarray(arr[np.arange(len(base)), j & 63])

    assert (out == inner(g, idx[g], idx[g + 128]) + inner(g + 1, idx[g + 128], idx[g])).all()


def test_flat_accesses_split_between_the_private_and_global_apertures() -> None:
    image = compile_hip(MIXED)
    assert_uses(image, "flat_load_dword", "flat_store_dword", "scratch_store_dwordx4")
    rng = np.random.default_rng(9)
    idx = rng.integers(0, 1 << 16, 256, dtype=U32)
    glob = rng.integers(0, 1 << 32, 128 * 40, dtype=U32)
    _, glob_out, out = run(image, [idx, glob, np.zeros(128, U32)], grid=2)
    g = np.arange(128)
    p = np.where((g % 2 == 1)[:, None], (g[:, None] + np.arange(40)).astype(U32), glob.reshape(128, 40))
    n = idx[g + 128] % 40 + 1
    for k in range(40):
        live = k < n
        p[live, k] = p[live, k] * U32(3) + idx[g][live]
    assert (out == p[g, idx[g] % n]).all()
    want_glob = glob.reshape(128, 40).copy()
    want_glob[g % 2 == 0] = p[g % 2 == 0]  # odd lanes wrote only their private arrays
    assert (glob_out.reshape(128, 40) == want_glob).all()


def test_private_memory_never_written_reads_as_poison() -> None:
    image = compile_hip(UNSET)
    lane = np.arange(64, dtype=U32)
    reads = (lane * 5) % 16
    idx = (lane % 8) | (reads << 3)
    _, out = run(image, [idx, np.zeros(64, U32)])
    assert (out == np.where(reads == lane % 8, lane, POISON)).all()


def test_an_access_outside_the_lanes_private_segment_stops_the_run() -> None:
    image = compile_hip(UNSET)
    idx = np.zeros(128, U32)
    idx[64 + 37] = 1000 << 3  # workgroup 1, lane 37 reads arr[1000]
    with pytest.raises(DriverError) as info:
        run(image, [idx, np.zeros(128, U32)], grid=2)
    line = str(info.value)
    size = load_image(image).kernels["unset"].private_segment_size
    # clang: flat
    assert "\n" not in line and re.match(r"unset: (flat|scratch)_load_dword at offset 0x", line)
    assert "workgroup (1, 0, 0)" in line and "lane 37" in line and "private offset 0xfa0" in line
    assert f"the lane's {size}-byte private segment" in line


ALLOCA = """
KERNEL void dynstack(unsigned *out, unsigned n) {
  unsigned *arr = (unsigned *)__builtin_alloca(n * 4);
  for (unsigned i = 0; i < n; ++i) arr[i] = tid() * 3u + i;
  out[tid()] = arr[(tid() * 7u) % n] + arr[n - 1];
}
"""


def _alloca_model(n: int) -> np.ndarray:
    lane = np.arange(64, dtype=np.uint32)
    return lane * 3 + (lane * 7) % n + lane * 3 + (n - 1)


def test_a_dynamic_stack_gets_the_hip_runtimes_default_size() -> None:
    """alloca: the kernel's stack size is unknown to the code object; it runs with HIP's 1024 bytes
    per work-item, and the first access past them stops the run naming the stack."""
    image = compile_hip(ALLOCA)
    assert load_image(image).kernels["dynstack"].uses_dynamic_stack
    n = 200  # 800 bytes: fits in 1024 with the kernel's own frame
    assert (run(image, [np.zeros(64, U32), n])[0] == _alloca_model(n)).all()
    with pytest.raises(DriverError) as info:
        run(image, [np.zeros(64, U32), 300])  # 1200 bytes
    line = str(info.value)
    assert "\n" not in line and re.match(r"dynstack: (flat|scratch)_store_dword\w* at offset 0x", line)
    assert "outside the lane's 1024-byte stack" in line and "workgroup (0, 0, 0)" in line and "lane 0" in line


def test_the_stack_size_is_the_users_setting() -> None:
    image = compile_hip(ALLOCA)
    n = 1000
    assert (run(image, [np.zeros(64, U32), n], rt=EmuRuntime(workers=1, stack_bytes=4096))[0]
            == _alloca_model(n)).all()
    with pytest.raises(DriverError, match="outside the lane's 512-byte stack"):
        run(image, [np.zeros(64, U32), 200], rt=EmuRuntime(workers=1, stack_bytes=512))
