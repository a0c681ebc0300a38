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
  v8i a = in[tid() % 64], b = in[64 + tid() % 64];
  acc_t acc[CHAIN] = {};
  for (int i = 0; i < n; i++)
#pragma unroll
    for (int j = 0; j < CHAIN; j++)  // a, then b: their bits differ as much as the data given
      acc[j] = __builtin_amdgcn_mfma_scale_f32_SHAPE_f8f6f4(j & 1 ? b : a, j & 1 ? b : a, acc[j], FMT, FMT,
                                                            0, 127, 0, 127);
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
  for (int j = 0; j < 32; j++)
    acc = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(a, a, acc, 0, 0, 0, 127, 0, 127);
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
    # the breakdown sums to the time
    assert sum(result.causes.values()) == pytest.approx(result.seconds, rel=1e-9)
    assert result.seconds >= result.mfma_floor_seconds  # never faster than its MFMAs on every SIMD
    return result


def grid(r: Modelled) -> float:
    """The grid's time: the launch's fixed time (cause launch, the machine file's launch_us) left out."""
    assert r.causes["launch"] == pytest.approx(M.launch_us * 1e-6)
    return r.seconds - r.causes["launch"]


def cycles(r: Modelled) -> float:
    return grid(r) * r.clock_ghz * 1e9


def mfma_loop(fmt: int, n: int, grid: int = 1, block: int = 64) -> Modelled:
    image = compile_hip(mfma_source(fmt))
    assert_uses(image, r"v_mfma_scale_f32_16x16x128_f8f6f4")
    return model(image, [np.zeros((grid * 256, 4), np.float32), np.zeros((128, 8), np.int32), n], grid, block)


# fp8 operands: 8 passes; fp4: 4 (LLVM's gfx950 model)
@pytest.mark.parametrize("fmt, passes", [(0, 8), (4, 4)])
def test_an_mfma_loop_costs_its_passes_per_iteration(fmt: int, passes: int) -> None:
    short, long = mfma_loop(fmt, 8), mfma_loop(fmt, 24)  # 8 MFMAs an iteration: 128 more
    assert cycles(long) - cycles(short) == pytest.approx(128 * passes * M.mfma_pass_cycles)


@pytest.mark.parametrize("fmt, passes", [(0, 16), (4, 8)])  # fp8: 16 passes; fp4: 8
def test_a_32x32x64_mfma_loop_costs_its_passes_per_iteration(fmt: int, passes: int) -> None:
    image = compile_hip(mfma_source(fmt, "32x32x64"))
    assert_uses(image, r"v_mfma_scale_f32_32x32x64_f8f6f4")
    short, long = (model(image, [np.zeros((256, 16), np.float32), np.zeros((128, 8), np.int32), n], 1, 64)
                   for n in (8, 24))
    # 4 MFMAs an iteration
    assert cycles(long) - cycles(short) == pytest.approx(64 * passes * M.mfma_pass_cycles)


# the scaled-MFMA roof measured on an MI355X (pytorch/pytorch PR 193527): a loop on constant registers
ROOF_TFLOPS = 4970


def full_chip_of_mfma_loops(machine: Machine, data: np.ndarray) -> tuple[Modelled, float]:
    """1,024 workgroups of 4 waves (4 waves on each SIMD of every CU, 512 fp8 MFMAs each) on the
    operands `data` (128 rows of 32 bytes: a lane's A and B), and their matrix clocks per SIMD."""
    n = 64
    image = compile_hip(mfma_source(0))
    r = model(image, [np.zeros((1024 * 256, 4), np.float32), data, n], 1024, 256, machine)
    return r, 1024 * 4 * 8 * n * 8 * M.mfma_pass_cycles / M.simds


def test_the_mfma_roof_loop_on_constant_registers_holds_the_peak_and_runs_at_the_measured_roof() -> None:
    same = np.tile(np.random.default_rng(0).integers(0, 2**31, (1, 8), dtype=np.int32), (128, 1))  # a == b
    r, per_simd = full_chip_of_mfma_loops(M, same)
    floor = per_simd / (M.clock_ghz * 1e9)
    # no operand bit changes: the matrix pipes draw no data power
    assert r.toggle == 0 and r.matrix_duty > 0.9
    assert r.clock_ghz == M.clock_ghz
    assert r.mfma_floor_seconds == pytest.approx(floor)
    assert r.limiter == "mfma" and floor <= grid(r) < 1.1 * floor
    # the measured roof is a loop long enough that its launch vanishes: the rate of the grid's time
    flops = 1024 * 4 * 8 * 64 * 2 * 16 * 16 * 128
    assert flops / grid(r) / 1e12 == pytest.approx(ROOF_TFLOPS, rel=0.10)
    assert r.classes == 1 and len(r.emulated) == 2  # one workgroup emulated for the class, one to check it


def test_operands_that_toggle_slow_the_clock_by_the_power_budget() -> None:
    rng = np.random.default_rng(1)
    busy, per_simd = full_chip_of_mfma_loops(M, rng.integers(-2**31, 2**31, (128, 8), dtype=np.int32))
    assert busy.toggle == pytest.approx(0.5, abs=0.02)  # random a against random b: half their bits
    power = M.rest_power_w + M.matrix_power_w * busy.matrix_duty * busy.toggle / 0.5
    expected = min(M.clock_ghz, M.peak_ghz * (M.power_budget_w / power) ** (1 / 3))
    assert busy.clock_ghz == pytest.approx(expected) and busy.clock_ghz < M.clock_ghz
    assert busy.mfma_floor_seconds == pytest.approx(per_simd / (busy.clock_ghz * 1e9))
    still, _ = full_chip_of_mfma_loops(M, np.zeros((128, 8), np.int32))
    assert still.toggle == 0 and still.clock_ghz == M.clock_ghz
    assert grid(busy) / grid(still) == pytest.approx(M.clock_ghz / busy.clock_ghz, rel=1e-6)
    # a kernel without matrix work holds the clock given
    copy = model(compile_hip(COPY), [np.zeros((256, 4), np.int32)] * 2, 1, 256)
    assert copy.matrix_duty == 0 and copy.clock_ghz == M.clock_ghz


def test_the_clock_held_is_a_budget_of_the_part_not_a_share_of_the_clock_given() -> None:
    at_peak = M.clock_under_load(0.9, 0.5)
    power = M.rest_power_w + M.matrix_power_w * 0.9
    assert at_peak == pytest.approx(min(M.clock_ghz, M.clock_ghz * (M.power_budget_w / power) ** (1 / 3)))
    assert M.clock_under_load(0.45, 1.0) == pytest.approx(at_peak)  # power goes as duty x toggle
    assert M.clock_under_load(0.9, 0.0) == min(M.clock_ghz,
                                               M.clock_ghz * (M.power_budget_w / M.rest_power_w) ** (1 / 3))
    assert M.clock_under_load(0.0, 0.5) == M.clock_under_load(0.9, 0.0)
    # a part that peaks lower is held where the budget says, and at its own peak below
    # that: never reduced twice
    assert M.at_clock(1.0).clock_under_load(0.9, 0.5) == min(1.0, at_peak)
    assert M.at_clock(at_peak + 0.1).clock_under_load(0.9, 0.5) == pytest.approx(at_peak)
    launch = M.with_figures(("launch_us=10",))
    assert launch.launch_us == 10 and M.with_figures(("launch_us=0",)).launch_us == 0


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
    # b128: 4 groups of 16 lanes, 1 clock each
    assert bank_cycles(lanes * 16, every, 16, 64, 256).tolist() == [4]
    assert bank_cycles(lanes * 32, every, 16, 64, 256).tolist() == [8]  # b128 at a 32-byte stride: 2-way
    # only lane 0 active
    assert bank_cycles(lanes * 256, every[:, :] & (lanes < 1), 4, 64, 256).tolist() == [1]


def test_a_streaming_copy_runs_at_the_hbm_rate() -> None:
    image = compile_hip(COPY)
    groups = 8192  # 32 MiB read and 32 MiB written
    nbytes = groups * 256 * 16
    data = np.zeros((groups * 256, 4), np.int32)
    r = model(image, [data, data.copy()], groups, 256)
    floor = 2 * nbytes / M.hbm_bytes_per_second
    assert floor <= grid(r) < 1.25 * floor and r.causes["bandwidth"] > 0
    assert r.hbm_bytes == 2 * nbytes


def k_loop(serial: bool, steps: int) -> Modelled:
    image = compile_hip(K_LOOP.replace("SERIAL", "1" if serial else "0"))
    return model(image, [np.zeros((64, 4), np.float32), np.zeros((64 * (steps + 1), 4), np.int32), steps],
                 1, 64)


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
    args: list[np.ndarray | int] = [np.zeros((256, 4), np.float32), np.zeros((128, 8), np.int32), 64]
    fast, slow = model(image, args, 1, 64), model(image, args, 1, 64, at_2)
    assert grid(slow) / grid(fast) == pytest.approx(2.4 / 2.0)


def test_a_class_whose_workgroups_run_different_streams_is_refused() -> None:
    image = compile_hip("KERNEL void uneven(int *out) { int acc = 0; for (unsigned i = 0; i < gid(); i++) "
                        "acc += i; out[gid() * 64 + tid()] = acc; }")
    rt = ModelRuntime(M)
    rt.plan = Plan([0] * 4)  # told the 4 workgroups are one class, but each loops gid() times
    with pytest.raises(WgradError, match=r"workgroups 0 and 3 are of one class but ran [\d,]+ and [\d,]+ "
                                         r"wave-instructions; the model samples one workgroup per class"):
        run(image, [np.zeros(256, np.int32)], 4, 64, rt=rt)
