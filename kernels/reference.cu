// wgrad reference grouped MXFP8 weight-gradient kernel: the correctness oracle.
//
// One thread computes one output element grad_w[e][n][k] by walking expert e's tokens in order:
//     acc += deq(A[n, m]) * deq(B[k, m])      for m in [off[e], off[e+1])
// with fp32 accumulation and a round-to-nearest-even bf16 store. No matrix instructions, no
// shared memory, no tiling tricks: every line maps to a line of the contract (docs/kernel-contract.md).
//
// One source for both vendors: clang builds it as HIP for gfx950 without HIP headers
// (-nogpuinc), nvcc builds it as CUDA for sm_90a. Only the few lines under "vendor shim" differ.
//
// Arguments (the ABI, in order): C bf16 (E*N, K); A fp8 e4m3fn (N, M) = g^T; B fp8 e4m3fn (K, M)
// = x^T; scale_A e8m0 (M/128, N, 4); scale_B e8m0 (M/128, K, 4); expert_off int32 (E+1).
// Launch: grid = E * (N/16) * (K/16) one-dimensional workgroups of 256 threads (a 16x16 tile).

#include "wgrad_shape.h"  // M, N, K, E and the ABI's input rules

// ---- vendor shim ------------------------------------------------------------------------
#if defined(__HIP__)
#define WGRAD_GLOBAL __attribute__((global))
#define WGRAD_DEVICE __attribute__((device))
// Without HIP's headers, launch_bounds does not reach the code object (its metadata would say
// .max_flat_workgroup_size 1024); the attribute HIP's __launch_bounds__ expands to does.
#define WGRAD_LAUNCH_BOUNDS(threads) __attribute__((amdgpu_flat_work_group_size(1, threads)))
WGRAD_DEVICE static inline unsigned thread_index() { return __builtin_amdgcn_workitem_id_x(); }
WGRAD_DEVICE static inline unsigned block_index() { return __builtin_amdgcn_workgroup_id_x(); }
#elif defined(__CUDACC__)
#define WGRAD_GLOBAL __global__
#define WGRAD_DEVICE __device__
#define WGRAD_LAUNCH_BOUNDS(threads) __launch_bounds__(threads)
WGRAD_DEVICE static inline unsigned thread_index() { return threadIdx.x; }
WGRAD_DEVICE static inline unsigned block_index() { return blockIdx.x; }
#else
#error "build as HIP (clang -x hip / hipcc) or CUDA (nvcc)"
#endif
// ------------------------------------------------------------------------------------------

namespace {

constexpr int TILE = 16;  // each workgroup owns a TILE x TILE block of one expert's grad_w

// fp8 E4M3FN: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; 0x7F/0xFF are NaN.
// Returns the value times 2^9, an integer in [-448*512, 448*512], so that products stay exact.
WGRAD_DEVICE inline float e4m3_times_512(unsigned char v) {
    const int exponent = (v >> 3) & 0xF, mantissa = v & 0x7;
    if (exponent == 0xF && mantissa == 0x7) return __builtin_nanf("");
    const float magnitude = exponent == 0 ? float(mantissa)                         // subnormal: m * 2^-9
                                          : float((8 + mantissa) << (exponent - 1));  // (8+m) * 2^(e-10)
    return (v & 0x80) ? -magnitude : magnitude;
}

// deq(a) * deq(b) = (a*512) * (b*512) * 2^(sa - 127) * 2^(sb - 127) * 2^-18, rounded once.
// The integer product is exact in fp32 (< 2^36 needs no more than 8 significant bits), so the
// only rounding is fp32 range at extreme scales. e8m0 byte 255 is NaN.
WGRAD_DEVICE inline float scaled_product(unsigned char a, unsigned char b, unsigned char sa, unsigned char sb) {
    if (sa == 255 || sb == 255) return __builtin_nanf("");
    return __builtin_ldexpf(e4m3_times_512(a) * e4m3_times_512(b), int(sa) + int(sb) - 254 - 18);
}

// fp32 -> bf16 bits, round to nearest even; NaN stays a quiet NaN.
WGRAD_DEVICE inline unsigned short bf16_bits(float f) {
    const unsigned bits = __builtin_bit_cast(unsigned, f);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;
    return (unsigned short)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// Byte address of the e8m0 scale of element (row, m) in the (M/128, rows, 4) scale layout.
WGRAD_DEVICE inline long long scale_index(long long rows, long long row, long long m) {
    return ((m / 128) * rows + row) * 4 + (m / 32) % 4;
}

}  // namespace

extern "C++" WGRAD_GLOBAL WGRAD_LAUNCH_BOUNDS(TILE * TILE) void grouped_mxfp8_wgrad_kernel(
    unsigned short *C, const unsigned char *A, const unsigned char *B,
    const unsigned char *scale_A, const unsigned char *scale_B, const int *expert_off) {
    constexpr long long tiles_n = N / TILE, tiles_k = K / TILE;
    const long long block = block_index();
    const long long e = block / (tiles_n * tiles_k);
    const long long tile = block % (tiles_n * tiles_k);
    const long long n = (tile / tiles_k) * TILE + thread_index() / TILE;
    const long long k = (tile % tiles_k) * TILE + thread_index() % TILE;

    float acc = 0.0f;
    for (long long m = expert_off[e]; m < expert_off[e + 1]; ++m)
        acc += scaled_product(A[n * M + m], B[k * M + m], scale_A[scale_index(N, n, m)], scale_B[scale_index(K, k, m)]);
    C[(e * N + n) * K + k] = bf16_bits(acc);
}
