"""The timing model (wgrad_cli/model) on small kernels compiled here with clang-22, against what
the machine file's figures give when counted by hand: an MFMA-only loop, an LDS loop with and
without bank conflicts, a streaming copy, and one K-loop in two versions (waiting for each
step's loads, and double-buffered)."""

from __future__ import annotations

import numpy as np
import pytest

from emukernels import assert_uses, compile_hip, run
from wgrad_cli.errors import WgradError
from wgrad_cli.model.launch import Modelled
from wgrad_cli.model.machine import Machine, load
from wgrad_cli.model.runtime import ModelRuntime, Plan
from wgrad_cli.model.trace import bank_cycles

M = load("mi355x")

# SHAPE's scaled MFMA in chains of CHAIN a loop iteration, each accumulator LANES floats a lane
MFMA_LOOP = r'''
typedef int v8i __attribute__((ext_vector_type(8)));
typedef float acc_t __attribute__((ext_vector_type(LANES)));
KERNEL void mfma_loop(acc_t *out, const v8i *in, int n) {
  v8i a = in[tid() % 64];
  acc_t acc[CHAIN] = {};
  for (int i = 0; i < n; i++)
#pragma unroll
    for (int j = 0; j < CHAIN; j++) acc[j] = __builtin_amdgcn_mfma_scale_f32_SHAPE_f8f6f4(a, a, acc[j], FMT, FMT, 0, 127, 0, 127);
  acc_t sum = {};
  for (int j = 0; j < CHAIN; j++) sum += acc[j];
  out[gid() * 256 + tid()] = sum;
}
'''
MFMA_SHAPES = {"16x16x128": (4, 8), "32x32x64": (16, 4)}  # (LANES, CHAIN); 32x32x64 is cdna4's


def mfma_source(fmt: int, shape: str = "16x16x128") -> str:
    lanes, chain = MFMA_SHAPES[shape]
    return (MFMA_LOOP.replace("FMT", str(fmt)).replace("SHAPE", shape).replace("LANES", str(lanes))
            .replace("CHAIN", str(chain)))


# One ds_read_b32 per lane at lane * STRIDE dwords, waited for before the next: STRIDE 1 hits 64
# banks once each (1 clock), STRIDE 64 puts every lane in bank 0 (64 clocks).
LDS_LOOP = r'''
KERNEL void lds_loop(int *out, int n, int stride) {
  SHARED int lds[64 * 64];
  for (int i = tid(); i < 64 * 64; i += 64) lds[i] = i;
  __builtin_amdgcn_s_waitcnt(0);
  unsigned addr = tid() * stride * 4;
  int acc = 0, v;
  for (int i = 0; i < n; i++) {
    asm volatile("ds_read_b32 %0, %1\n s_waitcnt lgkmcnt(0)" : "=v"(v) : "v"(addr));
    acc += v;
  }
  out[tid()] = acc;
}
'''

COPY = r'''
typedef int v4i __attribute__((ext_vector_type(4)));
KERNEL void copy(v4i *out, const v4i *in) { unsigned i = gid() * 256 + tid(); out[i] = in[i]; }
'''

# One K-loop, two ways: STEPS steps of a 16-byte load per lane feeding 32 scaled MFMAs. SERIAL
# waits for each step's load before its MFMAs; otherwise the next step's load is in flight while
# this step's MFMAs run (double buffering: vmcnt(1) leaves the newest load outstanding). The
# loads take the accumulator as an (unused) operand and the waits pass the data through, so the
# compiler keeps the order written here.
K_LOOP = r'''
typedef int v8i __attribute__((ext_vector_type(8)));
typedef int v4i __attribute__((ext_vector_type(4)));
typedef float v4f __attribute__((ext_vector_type(4)));
DEVICE inline v4i load(const v4i *p, float after) {
  v4i x;
  asm volatile("global_load_dwordx4 %0, %1, off" : "=v"(x) : "v"(p), "v"(after) : "memory");
  return x;
}
DEVICE inline v4f mfmas(v4i x, v4f acc) {
  v8i a = {x.x, x.y, x.z, x.w, x.x, x.y, x.z, x.w};
#pragma unroll
  for (int j = 0; j < 32; j++) acc = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(a, a, acc, 0, 0, 0, 127, 0, 127);
  return acc;
}
KERNEL void k_loop(v4f *out, const v4i *in, int steps) {
  const v4i *p = in + tid();
  v4f acc = {0, 0, 0, 0};
#if SERIAL
  for (int s = 0; s < steps; s++) {
    v4i x = load(p + s * 64, acc.x);
    asm volatile("s_waitcnt vmcnt(0)" : "+v"(x) :: "memory");
    acc = mfmas(x, acc);
  }
#else
  v4i x = load(p, acc.x);
  for (int s = 0; s < steps; s++) {
    v4i next = load(p + (s + 1) * 64, acc.x);
    asm volatile("s_waitcnt vmcnt(1)" : "+v"(x) :: "memory");
    acc = mfmas(x, acc);
    x = next;
  }
  asm volatile("s_waitcnt vmcnt(0)" : "+v"(x) :: "memory");
#endif
  out[tid()] = acc;
}
'''


def model(image: bytes, args: list[np.ndarray | int], grid: int, block: int, machine: Machine = M,
          same: bool = True) -> Modelled:
    """The modelled launch; `same`: every workgroup is of one class (emulated once, checked once)."""
    rt = ModelRuntime(machine)
    rt.plan = Plan([0] * grid if same else None)
    run(image, args, grid, block, rt=rt)
    result = rt.modelled[-1]
    assert sum(result.causes.values()) == pytest.approx(result.seconds, rel=1e-9)  # the breakdown sums to the time
    assert result.seconds >= result.mfma_floor_seconds  # never faster than its MFMAs on every SIMD
    return result


def cycles(r: Modelled) -> float:
    return r.seconds * r.clock_ghz * 1e9


def mfma_loop(fmt: int, n: int, grid: int = 1, block: int = 64) -> Modelled:
    image = compile_hip(mfma_source(fmt))
    assert_uses(image, r"v_mfma_scale_f32_16x16x128_f8f6f4")
    return model(image, [np.zeros((grid * 256, 4), np.float32), np.zeros((64, 8), np.int32), n], grid, block)


@pytest.mark.parametrize("fmt, passes", [(0, 8), (4, 4)])  # fp8 operands: 8 passes; fp4: 4 (LLVM's gfx950 model)
def test_an_mfma_loop_costs_its_passes_per_iteration(fmt: int, passes: int) -> None:
    short, long = mfma_loop(fmt, 8), mfma_loop(fmt, 24)  # 8 MFMAs an iteration: 128 more
    assert cycles(long) - cycles(short) == pytest.approx(128 * passes * M.mfma_pass_cycles)


@pytest.mark.parametrize("fmt, passes", [(0, 16), (4, 8)])  # fp8: 16 passes; fp4: 8
def test_a_32x32x64_mfma_loop_costs_its_passes_per_iteration(fmt: int, passes: int) -> None:
    image = compile_hip(mfma_source(fmt, "32x32x64"))
    assert_uses(image, r"v_mfma_scale_f32_32x32x64_f8f6f4")
    short, long = (model(image, [np.zeros((256, 16), np.float32), np.zeros((64, 8), np.int32), n], 1, 64)
                   for n in (8, 24))
    assert cycles(long) - cycles(short) == pytest.approx(64 * passes * M.mfma_pass_cycles)  # 4 MFMAs an iteration


UNLIMITED = M.with_figures(("dense_clock_ratio=1", "dense_matrix_duty=1"))  # no power limit below full duty


def full_chip_of_mfma_loops(machine: Machine) -> tuple[Modelled, float]:
    """1,024 workgroups of 4 waves (4 waves on each SIMD of every CU, 512 fp8 MFMAs each), and their
    matrix clocks per SIMD."""
    n = 64
    image = compile_hip(mfma_source(0))
    r = model(image, [np.zeros((1024 * 256, 4), np.float32), np.zeros((64, 8), np.int32), n], 1024, 256, machine)
    return r, 1024 * 4 * 8 * n * 8 * M.mfma_pass_cycles / M.simds


def test_a_full_chip_of_mfma_loops_runs_at_the_matrix_roof_and_says_so() -> None:
    r, per_simd = full_chip_of_mfma_loops(UNLIMITED)
    floor = per_simd / (M.clock_ghz * 1e9)
    assert r.clock_ghz == M.clock_ghz and r.matrix_duty > 0.9
    assert r.mfma_floor_seconds == pytest.approx(floor)
    assert floor <= r.seconds < 1.1 * floor and r.limiter == "mfma"
    assert r.classes == 1 and len(r.emulated) == 2  # one workgroup emulated for the class, one to check it


def test_the_power_limit_slows_a_kernel_by_its_matrix_duty() -> None:
    busy, per_simd = full_chip_of_mfma_loops(M)
    expected = M.clock_ghz * M.dense_clock_ratio * (M.dense_matrix_duty / busy.matrix_duty) ** (1 / 3)
    assert busy.clock_ghz == pytest.approx(expected) and busy.clock_ghz < M.clock_ghz
    assert busy.mfma_floor_seconds == pytest.approx(per_simd / (busy.clock_ghz * 1e9))
    unlimited, _ = full_chip_of_mfma_loops(UNLIMITED)
    assert busy.seconds / unlimited.seconds == pytest.approx(M.clock_ghz / busy.clock_ghz, rel=1e-6)
    # a kernel without matrix work holds the clock given
    copy = model(compile_hip(COPY), [np.zeros((256, 4), np.int32)] * 2, 1, 256)
    assert copy.matrix_duty == 0 and copy.clock_ghz == M.clock_ghz


def test_the_clock_held_under_the_power_limit() -> None:
    dense = M.clock_ghz * M.dense_clock_ratio
    assert M.clock_under_load(M.dense_matrix_duty) == pytest.approx(dense)  # the measured GEMM's point
    assert M.clock_under_load(M.dense_matrix_duty / 8) == pytest.approx(min(M.clock_ghz, 2 * dense))  # power ~ duty f^3
    assert 1.1 * dense < M.clock_ghz  # below the clamp, so the cube law decides
    assert M.clock_under_load(M.dense_matrix_duty / 1.1**3) == pytest.approx(1.1 * dense)
    assert M.clock_under_load(0.0) == M.clock_ghz
    assert M.at_clock(2.0).clock_under_load(0.5) == pytest.approx(M.clock_under_load(0.5) * 2.0 / M.clock_ghz)


def test_an_lds_loop_pays_its_bank_conflicts() -> None:
    image = compile_hip(LDS_LOOP)
    assert_uses(image, r"ds_read_b32")
    n = 100

    def lds(stride: int) -> float:
        return cycles(model(image, [np.zeros(64, np.int32), n, stride], 1, 64))

    # one wave: each iteration is its bank clocks plus the LDS latency and issue, so 64-way
    # conflicts add 63 clocks an iteration over conflict-free reads, 2-way ones add 1
    assert lds(64) - lds(1) == pytest.approx(n * 63)
    assert lds(2) - lds(1) == pytest.approx(n * 1)


def test_bank_clocks_from_lane_addresses() -> None:
    lanes = np.arange(64)[None, :]
    every = np.ones((1, 64), dtype=bool)
    assert bank_cycles(lanes * 4, every, 4, 64, 256).tolist() == [1]  # 64 lanes, 64 banks
    assert bank_cycles(lanes * 0, every, 4, 64, 256).tolist() == [1]  # one dword: a broadcast
    assert bank_cycles(lanes * 256, every, 4, 64, 256).tolist() == [64]  # every lane in bank 0
    assert bank_cycles(lanes * 16, every, 16, 64, 256).tolist() == [4]  # b128: 4 groups of 16 lanes, 1 clock each
    assert bank_cycles(lanes * 32, every, 16, 64, 256).tolist() == [8]  # b128 at a 32-byte stride: 2-way
    assert bank_cycles(lanes * 256, every[:, :] & (lanes < 1), 4, 64, 256).tolist() == [1]  # only lane 0 active


def test_a_streaming_copy_runs_at_the_hbm_rate() -> None:
    image = compile_hip(COPY)
    groups = 8192  # 32 MiB read and 32 MiB written
    nbytes = groups * 256 * 16
    data = np.zeros((groups * 256, 4), np.int32)
    r = model(image, [data, data.copy()], groups, 256)
    floor = 2 * nbytes / M.hbm_bytes_per_second
    assert floor <= r.seconds < 1.25 * floor and r.limiter == "bandwidth"
    assert r.hbm_bytes == 2 * nbytes


def k_loop(serial: bool, steps: int) -> Modelled:
    image = compile_hip(K_LOOP.replace("SERIAL", "1" if serial else "0"))
    return model(image, [np.zeros((64, 4), np.float32), np.zeros((64 * (steps + 1), 4), np.int32), steps], 1, 64)


def test_double_buffering_hides_the_load_latency_behind_the_mfmas() -> None:
    steps = 16
    serial, double = cycles(k_loop(True, steps)), cycles(k_loop(False, steps))
    mfma = 32 * 8 * M.mfma_pass_cycles  # a step's MFMAs: 1,024 clocks, more than a load's latency
    # waiting for each step's load exposes its latency every step; double buffering hides it
    # behind the previous step's MFMAs, so the difference is about one latency per step
    assert double < serial
    assert (serial - double) / steps == pytest.approx(M.vmem_latency_cycles, rel=0.15)
    assert double / steps == pytest.approx(mfma, rel=0.15)


def test_the_clock_scales_the_time() -> None:
    at_2 = M.at_clock(2.0)
    image = compile_hip(mfma_source(0))
    args: list[np.ndarray | int] = [np.zeros((256, 4), np.float32), np.zeros((64, 8), np.int32), 64]
    fast, slow = model(image, args, 1, 64), model(image, args, 1, 64, at_2)
    assert slow.seconds / fast.seconds == pytest.approx(2.4 / 2.0)


def test_a_class_whose_workgroups_run_different_streams_is_refused() -> None:
    image = compile_hip("KERNEL void uneven(int *out) { int acc = 0; for (unsigned i = 0; i < gid(); i++) acc += i; "
                        "out[gid() * 64 + tid()] = acc; }")
    rt = ModelRuntime(M)
    rt.plan = Plan([0] * 4)  # told the 4 workgroups are one class, but each loops gid() times
    with pytest.raises(WgradError, match=r"workgroups 0 and 3 are of one class but ran [\d,]+ and [\d,]+ "
                                         r"wave-instructions; the model samples one workgroup per class"):
        run(image, [np.zeros(256, np.int32)], 4, 64, rt=rt)
