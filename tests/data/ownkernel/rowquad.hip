// A user's own gfx950 kernel, as a kernel author brings one to wgrad: header-free HIP (clang's
// AMDGPU builtins, no HIP or wgrad headers), the ABI's six arguments (docs/kernel-contract.md) and
// the shape as the -DWGRAD_M/N/K/E defines every build gets. Its spec, rowquad.yaml, sits beside it.
//
// One workgroup of 256 threads per 32 x 32 tile of one expert's grad_w; each thread owns four
// consecutive k of one n, so it decodes A's byte and scale once per token for four products.
// fp32 sums in token order, round-to-nearest-even bf16 store: what the contract asks, slowly.

#if !defined(__HIP__)
#error "build as HIP for gfx950"
#endif

#define DEVICE __attribute__((device))

namespace {

constexpr long long M = WGRAD_M, N = WGRAD_N, K = WGRAD_K;
constexpr long long TILE = 32, PER_THREAD = 4;

// e4m3fn times 2^9: exact as an integer-valued float; 0x7F and 0xFF are NaN.
DEVICE float e4m3_x512(unsigned char v) {
    const int exponent = (v >> 3) & 0xF, mantissa = v & 0x7;
    if (exponent == 0xF && mantissa == 0x7) return __builtin_nanf("");
    const float magnitude = exponent == 0 ? float(mantissa) : float((8 + mantissa) << (exponent - 1));
    return (v & 0x80) ? -magnitude : magnitude;
}

// The e8m0 scale byte of (row, token m) in the (M/128, rows, 4) layout.
DEVICE unsigned char scale_of(const unsigned char *scale, long long rows, long long row, long long m) {
    return scale[((m / 128) * rows + row) * 4 + (m / 32) % 4];
}

DEVICE unsigned short to_bf16(float f) {
    const unsigned bits = __builtin_bit_cast(unsigned, f);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;
    return (unsigned short)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

}  // namespace

extern "C++" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(1, 256)))
void rowquad_wgrad(unsigned short *C, const unsigned char *A, const unsigned char *B,
                   const unsigned char *scale_A, const unsigned char *scale_B, const int *expert_off) {
    constexpr long long tiles_n = N / TILE, tiles_k = K / TILE;
    const long long block = __builtin_amdgcn_workgroup_id_x(), thread = __builtin_amdgcn_workitem_id_x();
    const long long e = block / (tiles_n * tiles_k), tile = block % (tiles_n * tiles_k);
    const long long n = (tile / tiles_k) * TILE + thread / (TILE / PER_THREAD);
    const long long k0 = (tile % tiles_k) * TILE + (thread % (TILE / PER_THREAD)) * PER_THREAD;

    float acc[PER_THREAD] = {};
    for (long long m = expert_off[e]; m < expert_off[e + 1]; ++m) {
        const unsigned char sa = scale_of(scale_A, N, n, m);
        const float a = e4m3_x512(A[n * M + m]);
        for (long long j = 0; j < PER_THREAD; ++j) {
            const unsigned char sb = scale_of(scale_B, K, k0 + j, m);
            acc[j] += (sa == 255 || sb == 255) ? __builtin_nanf("")
                      : __builtin_ldexpf(a * e4m3_x512(B[(k0 + j) * M + m]), int(sa) + int(sb) - 254 - 18);
        }
    }
    for (long long j = 0; j < PER_THREAD; ++j) C[(e * N + n) * K + k0 + j] = to_bf16(acc[j]);
}
