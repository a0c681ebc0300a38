"""Writes the timing skeletons of the fp8-wgmma design with per-32-token promotion (issue 4's
alternative to dequantizing) as kernel specs: hopper_fp8skel{,_noepi} (two warpgroups of 64 x 128
outputs) and hopper_fp8skel4{,_noepi} (four of 64 x 64), with and without the epilogue. They are
NOT correct kernels (no operand loads: shared memory holds 4 stages of real fp8 data, cycled) and
must not stay in kernels/, where host tests expect only the project's specs. Reproduce calls A2 to
A4 of run-log-hopper-v24-2026-12-03.txt from the repository root, on an H200:
    python3 results/h200/fp8skel_gen.py kernels
    wgrad bench --config configs/large.yaml --kernel hopper_fp8skel_noepi ...
    rm kernels/hopper_fp8skel*
"""

import sys


def src(epi: bool, cols: int) -> str:
    """cols: columns per warpgroup (128: two warpgroups of 64 rows x 128; 64: four of 64 x 64)."""
    regs = cols // 2  # fp32 partials per thread for m64n{cols}
    wgs = 2 * 128 // cols
    lst = ", ".join(f"%{i}" for i in range(regs))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    promote = f"""
        const float* sa = scales + (i / 4 % STAGES * 4 + i % 4) * (TN + TK);
        const float* sb = sa + TN + col0;
        const float sa0 = sa[row0 + row], sa1 = sa[row0 + row + 8];
#pragma unroll
        for (int j = 0; j < {cols // 8}; ++j) {{
            const float2 sb2 = *reinterpret_cast<const float2*>(sb + 8 * j + 2 * q);
            acc[4 * j + 0] = fmaf(p[4 * j + 0], sa0 * sb2.x, acc[4 * j + 0]);
            acc[4 * j + 1] = fmaf(p[4 * j + 1], sa0 * sb2.y, acc[4 * j + 1]);
            acc[4 * j + 2] = fmaf(p[4 * j + 2], sa1 * sb2.x, acc[4 * j + 2]);
            acc[4 * j + 3] = fmaf(p[4 * j + 3], sa1 * sb2.y, acc[4 * j + 3]);
        }}"""
    if epi:
        store = f"""
        unsigned* out = reinterpret_cast<unsigned*>(C + (e * N + n0 + row0 + row) * K + k0 + col0 + 2 * q);
#pragma unroll
        for (int j = 0; j < {cols // 8}; ++j) {{
            out[4 * j] = bf16x2(acc[4 * j], acc[4 * j + 1]);
            out[4 * j + 4 * K] = bf16x2(acc[4 * j + 2], acc[4 * j + 3]);
        }}"""
    else:
        store = f"""
        float x = 0.f;
#pragma unroll
        for (int j = 0; j < {regs}; ++j) x += acc[j];
        if (x == 1.2345e-30f) C[threadIdx.x] = 1;  // keeps every accumulator live; never true on these data"""
    return f"""// TIMING SKELETON, NOT A CORRECT KERNEL (issue 4, the fp8 alternative; results/h200/fp8skel_gen.py).
// The fp8-wgmma design with per-32-token promotion: per block, wgmma m64n{cols}k32 e4m3 into fresh
// partials, wait, then acc += partial * (sa[row] * sb[col]) with the real scales as floats (two fp32
// operations per accumulator per block, as in CUTLASS's and DeepGEMM's promotion, but with a scale
// per column). {wgs} warpgroups of 64 rows x {cols} columns share a 128 x 128 output tile, so one
// promotes while another's wgmma runs. Shared memory holds real fp8 data (4 stages of 128 tokens
// x 128 rows of A and B, 128-byte swizzle, loaded once per CTA and cycled): no operand loads.
// Persistent over E * N/128 * K/128 tiles, each over its expert's tokens. {'Epilogue: direct bf16x2 stores.' if epi else 'No epilogue.'}
#include "wgrad_shape.h"
#define D __device__ __forceinline__
namespace {{
constexpr int TN = 128, TK = 128, THREADS = {wgs * 128}, STAGES = 4;
constexpr int A_BYTES = TN * 128, B_BYTES = TK * 128, STAGE = A_BYTES + B_BYTES;
constexpr int SCALE_FLOATS = STAGES * 4 * (TN + TK);
constexpr long long TILES = E * (N / TN) * (K / TK);
static_assert(STAGES * STAGE + SCALE_FLOATS * 4 == 147456, "the spec's dynamic shared memory");
D unsigned long long desc(unsigned addr) {{
    return (unsigned long long)(((addr & 0x3FFFF) >> 4) | (1u << 16)) | ((1024ull >> 4) << 32) | (1ull << 62);
}}
D void wgmma(float (&d)[{regs}], unsigned long long a, unsigned long long b) {{
    asm volatile("wgmma.mma_async.sync.aligned.m64n{cols}k32.f32.e4m3.e4m3 {{{lst}}}, %{regs}, %{regs + 1}, 0, 1, 1;\\n"
                 : {outs} : "l"(a), "l"(b));
}}
D unsigned bf16x2(float lo, float hi) {{
    unsigned out;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(out) : "f"(hi), "f"(lo));
    return out;
}}
D float e8m0(unsigned char s) {{ return __uint_as_float(s == 0 ? 0x00400000u : unsigned(s) << 23); }}
}}  // namespace

extern "C++" __global__ void __launch_bounds__(THREADS, 1) grouped_mxfp8_wgrad_kernel(
    unsigned short* C, const unsigned char* A, const unsigned char* B,
    const unsigned char* scale_A, const unsigned char* scale_B, const int* expert_off) {{
    extern __shared__ __align__(1024) unsigned char smem[];
    const unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    float* scales = reinterpret_cast<float*>(smem + STAGES * STAGE);
    // Real data, once: stage s holds tokens 128 s .. 128 s + 127 of rows 0..127 of A and B.
    for (int i = threadIdx.x; i < STAGES * (TN + TK) * 8; i += THREADS) {{
        const int s = i / ((TN + TK) * 8), r = i / 8 % (TN + TK), c = i % 8;
        const unsigned char* src = r < TN ? A + (long long)r * M : B + (long long)(r - TN) * M;
        reinterpret_cast<uint4*>(smem + s * STAGE + r * 128)[c ^ (r % 8)] =
            reinterpret_cast<const uint4*>(src + 128 * (s % int(M / 128)))[c];
    }}
    for (int i = threadIdx.x; i < SCALE_FLOATS; i += THREADS) {{
        const int s = i / (4 * (TN + TK)), kb = i / (TN + TK) % 4, r = i % (TN + TK);
        const long long step = s % int(M / 128);
        scales[i] = e8m0(r < TN ? scale_A[(step * N + r) * 4 + kb] : scale_B[(step * K + r - TN) * 4 + kb]);
    }}
    __syncthreads();
    const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
    const int row0 = wg % 2 * 64, col0 = wg / 2 * {cols}, row = 16 * warp + lane / 4, q = lane % 4;
    for (long long t = blockIdx.x; t < TILES; t += gridDim.x) {{
        const long long e = t / ((N / TN) * (K / TK)), n0 = t / (K / TK) % (N / TN) * TN, k0 = t % (K / TK) * TK;
        const int blocks = (expert_off[e + 1] - expert_off[e]) / 32;
        float acc[{regs}], p[{regs}];
#pragma unroll
        for (int j = 0; j < {regs}; ++j) acc[j] = 0.f;
        for (int i = 0; i < blocks; ++i) {{
            const unsigned st = base + (i / 4 % STAGES) * STAGE + 32 * (i % 4);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            wgmma(p, desc(st + row0 * 128), desc(st + A_BYTES + col0 * 128));
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");{promote}
        }}{store}
    }}
}}
"""


YAML = """# TIMING SKELETON of the fp8-wgmma-with-promotion design (not correct; results/h200/fp8skel_gen.py)
name: {name}
description: sm_90a timing skeleton, fp8 wgmma per 32-token block with promotion, {what}, 128x128 tiles, data in shared memory
source: {name}.cu
symbol: grouped_mxfp8_wgrad_kernel
launch:
  tile: [128, 128]
  grid: units
  block: {block}
  dynamic_shared: 147456
targets:
  sm_90a:
    flags: [-O3, -std=c++17]
"""


def main(out: str) -> None:
    """Writes the four specs into `out`."""
    for name, epi, cols in (("hopper_fp8skel", True, 128), ("hopper_fp8skel_noepi", False, 128),
                            ("hopper_fp8skel4", True, 64), ("hopper_fp8skel4_noepi", False, 64)):
        what = f"{256 // cols} warpgroups of 64 x {cols}, " + ("with epilogue" if epi else "no epilogue")
        open(f"{out}/{name}.cu", "w").write(src(epi, cols))
        open(f"{out}/{name}.yaml", "w").write(YAML.format(name=name, what=what, block=256 * 128 // cols))


if __name__ == "__main__":
    main(sys.argv[1])
