// wgrad's gfx950 (MI350X/MI355X) grouped MXFP8 weight-gradient kernel, written with clang's AMDGPU
// builtins and no headers: scaled MFMAs straight on the fp8 data, a four-stage LDS ring filled by
// global-to-LDS (buffer ... lds) loads three stages ahead, round-to-nearest-even bf16 output.
// Design and modelled timing: docs/cdna4-design.md.
//
// One workgroup of 8 waves per 256 x 256 tile of one expert's grad_w (the ABI's grid, expert-major).
// A stage is 64 tokens: 256 rows of A and 256 rows of B, 64 bytes each, plus the scale word of each
// row for the 128-token step holding the stage. Wave w owns 128 k x 64 n outputs (k rows
// 128 * (w % 2), n columns 64 * (w / 2)) as 4 x 2 v_mfma_scale_f32_32x32x64_f8f6f4 blocks, B's rows
// as the MFMA's first operand so that each lane's accumulators are 4 consecutive k of one n: one
// 8-byte store per 4 outputs.
//
// Arguments (docs/kernel-contract.md): C bf16 (E*N, K); A fp8 e4m3fn (N, M); B fp8 e4m3fn (K, M);
// scale_A, scale_B e8m0 (M/128, rows, 4); expert_off int32 (E+1).

#include "wgrad_shape.h"  // M, N, K, E and the ABI's input rules

#if !defined(__HIP__)
#error "build as HIP for gfx950 (clang -x hip --offload-arch=gfx950 -nogpuinc)"
#endif

#define WGRAD_GLOBAL __attribute__((global))
#define WGRAD_DEVICE __attribute__((device))
#define WGRAD_LDS __attribute__((shared))
// HIP's __launch_bounds__ expands to this; without HIP's headers it is spelt out.
#define WGRAD_LAUNCH_BOUNDS(threads) __attribute__((amdgpu_flat_work_group_size(1, threads)))

namespace {

typedef int v4i __attribute__((ext_vector_type(4)));
typedef int v8i __attribute__((ext_vector_type(8)));
typedef unsigned v2u __attribute__((ext_vector_type(2)));
typedef float v2f __attribute__((ext_vector_type(2)));
typedef float v16f __attribute__((ext_vector_type(16)));
typedef __bf16 v2bf __attribute__((ext_vector_type(2)));
typedef __attribute__((address_space(3))) void lds_void;

constexpr int TILE = 256;             // grad_w rows (n) and columns (k) per workgroup
constexpr int STEP = 64;              // tokens per stage: one 32x32x64 MFMA deep
constexpr int STAGES = 4;             // LDS ring slots
constexpr int AHEAD = 3;              // stage s issues the loads of stage s + AHEAD
constexpr int THREADS = 512;          // 8 waves of 64
constexpr int ROW_CHUNKS = STEP / 16; // 16-byte chunks per staged row
constexpr int LOADS = 5;              // buffer loads a wave issues per stage: 2 of A, 2 of B, 1 of scales
// A stage's schedule, chosen on the model's profile (docs/cdna4-design.md): the loads a wave issues
// after each of its 8 MFMAs, and the 32-row block of B after whose MFMAs A's rows are read.
constexpr int LOAD_SLOTS[8] = {0, 1, 1, 1, 1, 1, 0, 0};
constexpr int READ_N = 3;

// Buffer offsets are 32-bit: a tile's rows of A or B, and a whole scale array, must fit.
static_assert(TILE * M < (1LL << 31) && 4 * (N > K ? N : K) * (M / 128) < (1LL << 31), "shape too large for 32-bit buffer offsets");

struct Operands {  // one stage's MFMA operands of a wave, with the lanes' scale bytes
    v8i n[2], k[4];
    int sn[2], sk[4];
};

struct Stage {
    unsigned char a[TILE * STEP];  // A's tile rows (n), chunks swizzled (see chunk_at)
    unsigned char b[TILE * STEP];  // B's tile rows (k)
    unsigned sa[TILE];             // scale word of each A row for the 128-token step
    unsigned sb[TILE];
};

// Staged row r keeps its 16-byte chunk c at position c ^ ((r / 4) % 4): the 16 lanes of an MFMA
// operand read (rows r..r+15, one chunk each) then hit 16 distinct 4-bank groups, no conflicts.
WGRAD_DEVICE inline int chunk_at(int row, int chunk) { return chunk ^ ((row >> 2) & 3); }

// s_waitcnt vmcnt(LOADS * stages) with expcnt and lgkmcnt left free (gfx9 encoding): all but the
// wave's last `stages` stages of loads have landed. A constant, so that no branch splits the code
// around it (the MFMAs would move across the split).
template <int stages> WGRAD_DEVICE inline void wait_loads() { __builtin_amdgcn_s_waitcnt(0xF70 | (stages * LOADS)); }

// After wait_loads: every wave's loads of a stage have landed and its reads of the stage before
// are done. A workgroup fence would do it too, but clang then waits for every load in flight
// (vmcnt(0)), the whole ring; the scheduling barriers keep the LDS reads after the s_barrier.
WGRAD_DEVICE inline void workgroup_sync() {
    __builtin_amdgcn_sched_barrier(0);
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_sched_barrier(0);
}

WGRAD_DEVICE inline unsigned to_bf16x2(float lo, float hi) {
    return __builtin_bit_cast(unsigned, __builtin_convertvector((v2f){lo, hi}, v2bf));  // v_cvt_pk_bf16_f32: RNE
}

}  // namespace

WGRAD_LDS Stage ring[STAGES];

extern "C++" WGRAD_GLOBAL WGRAD_LAUNCH_BOUNDS(THREADS) void grouped_mxfp8_wgrad_kernel(
    unsigned short *C, const unsigned char *A, const unsigned char *B,
    const unsigned char *scale_A, const unsigned char *scale_B, const int *expert_off) {
    constexpr int tiles_n = N / TILE, tiles_k = K / TILE;
    const int block = __builtin_amdgcn_workgroup_id_x();
    const int e = block / (tiles_n * tiles_k);
    const int tile = block % (tiles_n * tiles_k);
    const int n0 = (tile / tiles_k) * TILE, k0 = (tile % tiles_k) * TILE;
    const int lane = __builtin_amdgcn_workitem_id_x() % 64;
    const int wave = __builtin_amdgcn_readfirstlane(__builtin_amdgcn_workitem_id_x() / 64);
    const int begin = expert_off[e];
    const int steps = (expert_off[e + 1] - begin) / STEP;

    // Buffer resources over this tile's rows of A and B, and over the scale arrays from its first row.
    constexpr int raw = 0x00020000;  // gfx950 buffer word 3: 32-bit format, no swizzle
    const __amdgpu_buffer_rsrc_t rsrc_a = __builtin_amdgcn_make_buffer_rsrc((void *)(A + (long long)n0 * M), 0, TILE * M, raw);
    const __amdgpu_buffer_rsrc_t rsrc_b = __builtin_amdgcn_make_buffer_rsrc((void *)(B + (long long)k0 * M), 0, TILE * M, raw);
    const bool scales_of_a = wave < 4;  // waves 0-3 load A's scale words, 4-7 B's, 64 rows each
    const __amdgpu_buffer_rsrc_t rsrc_s = scales_of_a
        ? __builtin_amdgcn_make_buffer_rsrc((void *)(scale_A + 4LL * n0), 0, (int)(4 * N * (M / 128)), raw)
        : __builtin_amdgcn_make_buffer_rsrc((void *)(scale_B + 4LL * k0), 0, (int)(4 * K * (M / 128)), raw);
    const int scale_rows = scales_of_a ? N : K;
    const int scale_part = (wave % 4) * 64;

    // A wave's share of a stage's loads: 1 KiB (16 rows) of A and of B per instruction, rows
    // 32 * wave + 16 * j; lane i writes LDS bytes 16 i .. 16 i + 15 of that KiB.
    const int load_row = lane / ROW_CHUNKS;
    const int load_off = load_row * M + 16 * chunk_at(load_row, lane % ROW_CHUNKS);

    // A resource of no bytes: every load through it reads zeros.
    const __amdgpu_buffer_rsrc_t rsrc_none = __builtin_amdgcn_make_buffer_rsrc((void *)A, 0, 0, raw);

    // Load `which` (0-4) of stage `stage` (tokens begin + 64 * stage), or zeros into its slot.
    auto issue = [&](int stage, int which, bool zeros = false) {
        Stage &s = ring[stage % STAGES];
        const int m = begin + stage * STEP;
        const int row = 32 * wave + 16 * (which / 2);
        if (which < 4) {
            const __amdgpu_buffer_rsrc_t rsrc = zeros ? rsrc_none : which % 2 ? rsrc_b : rsrc_a;
            __builtin_amdgcn_raw_ptr_buffer_load_lds(rsrc, (lds_void *)((which % 2 ? s.b : s.a) + row * STEP), 16,
                                                     load_off + row * M, m, 0, 0);
        } else {
            unsigned *words = scales_of_a ? s.sa : s.sb;
            __builtin_amdgcn_raw_ptr_buffer_load_lds(zeros ? rsrc_none : rsrc_s, (lds_void *)(words + scale_part), 4,
                                                     4 * (scale_part + lane), 4 * (m / 128) * scale_rows, 0, 0);
        }
    };

    // Operand reads: an MFMA's 32 rows R..R+31, lane l holds row R + l % 32 and, of its 64 tokens,
    // 16 * g .. 16 * g + 15 and 32 + 16 * g .. (g = l / 32), each a swizzled 16-byte chunk. The
    // lane's offsets in a stage, with its wave's rows folded in, leave the ring slot's address the
    // only thing that changes from stage to stage.
    const int op_row = lane % 32, op_half = lane / 32;
    const int op_lo = op_row * STEP + 16 * chunk_at(op_row, op_half);
    const int op_hi = op_row * STEP + 16 * chunk_at(op_row, 2 + op_half);
    const int wk = (wave % 2) * 128, wn = (wave / 2) * 64;
    const int n_lo = wn * STEP + op_lo, n_hi = wn * STEP + op_hi;
    const int k_lo = TILE * STEP + wk * STEP + op_lo, k_hi = TILE * STEP + wk * STEP + op_hi;
    // The scale of row R + l % 32 for the lane's 32-token block: byte 2 * (stage % 2) + l / 32 of its word.
    const int sn_at = 2 * TILE * STEP + 4 * (wn + op_row) + op_half;
    const int sk_at = 2 * TILE * STEP + 4 * TILE + 4 * (wk + op_row) + op_half;

    // A stage's operands into registers, A's rows (n) and one 32-row block of B's (k) at a time:
    // LDS reads while the MFMAs of the stage before run.
    auto rows = [](const unsigned char *lo, const unsigned char *hi) {
        const v4i l = *(const v4i *)lo, h = *(const v4i *)hi;
        return (v8i){l[0], l[1], l[2], l[3], h[0], h[1], h[2], h[3]};
    };
    auto slot = [](int stage) { return (const unsigned char *)&ring[stage % STAGES]; };
    auto read_n = [&](int stage, Operands &o) {
        const unsigned char *s = slot(stage), *scales = s + 2 * (stage % 2);
        for (int j = 0; j < 2; ++j) {
            o.n[j] = rows(s + n_lo + 32 * j * STEP, s + n_hi + 32 * j * STEP);
            o.sn[j] = scales[sn_at + 4 * 32 * j];
        }
    };
    auto read_k = [&](int stage, Operands &o, int i) {
        const unsigned char *s = slot(stage), *scales = s + 2 * (stage % 2);
        o.k[i] = rows(s + k_lo + 32 * i * STEP, s + k_hi + 32 * i * STEP);
        o.sk[i] = scales[sk_at + 4 * 32 * i];
    };

    v16f acc[4][2];
    // Lane l's accumulator r of block (i, j) is grad_w[n][k] for n = wn + 32 j + l % 32 and
    // k = wk + 32 i + 8 (r / 4) + 4 (l / 32) + r % 4: four consecutive k per 8-byte store.
    unsigned short *out = C + ((long long)e * N + n0 + wn + op_row) * K + k0 + wk + 4 * op_half;
    auto store = [&](int i) {  // the outputs of B's 32-row block i
        for (int j = 0; j < 2; ++j)
            for (int q = 0; q < 4; ++q) {
                const v16f &c = acc[i][j];
                const v2u pair = {to_bf16x2(c[4 * q], c[4 * q + 1]), to_bf16x2(c[4 * q + 2], c[4 * q + 3])};
                *(v2u *)(out + 32LL * j * K + 32 * i + 8 * q) = pair;
            }
    };
    // Stage `stage` from `cur`, its operands read during the stage before: the barrier that makes
    // stage + 1 readable, then the 8 MFMAs with the reads of stage + 1 into `nxt` and the loads of
    // stage + AHEAD between them, into the slot whose reads were done before the barrier of the
    // stage before. `ahead`: stages whose loads may stay in flight when stage + 1 has landed (-1:
    // no next stage). The first stage starts the sums from zero, so no accumulator is cleared.
    auto run_stage = [&]<bool first, bool loads, int ahead>(int stage, const Operands &cur, Operands &nxt) {
        constexpr bool next = ahead >= 0;
        auto mfma = [&](int i, int j) {
            acc[i][j] = __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(cur.k[i], cur.n[j], first ? v16f{} : acc[i][j], 0, 0,
                                                                        0, cur.sk[i], 0, cur.sn[j]);
        };
        if constexpr (next) {
            wait_loads<ahead>();
            workgroup_sync();
        }
        // Each block of B's rows is read for the next stage once this stage's MFMAs are done with
        // it: the two stages' operands never need more registers than the budget of two waves.
        int which = 0;
        for (int i = 0; i < 4; ++i) {
            __builtin_amdgcn_sched_barrier(0);
            for (int j = 0; j < 2; ++j) {
                mfma(i, j);
                for (int l = 0; l < LOAD_SLOTS[2 * i + j]; ++l, ++which)
                    if (loads) issue(stage + AHEAD, which, first && stage + AHEAD >= steps);
            }
            if (next && i == READ_N) read_n(stage + 1, nxt);
            if (next) read_k(stage + 1, nxt, i);
            if (!next && i > 0) store(i - 1);  // the last stage: stores under the MFMAs still to come
        }
        if (!next) store(3);
        __builtin_amdgcn_sched_barrier(0);
    };

    if (steps == 0) {
        for (int i = 0; i < 4; ++i) {
            for (int j = 0; j < 2; ++j) acc[i][j] = v16f{};
            store(i);
        }
    } else {
        // Stages 0 to AHEAD - 1 now, then one stage AHEAD at each stage. steps is even (experts
        // are whole 128-token steps); an expert of 2 runs 4, the last two loaded as zeros (one code
        // path: the compiler merges the first MFMAs of two paths and spills).
        const int stages = steps > 4 ? steps : 4;
        Operands a, b;
        for (int stage = 0; stage < AHEAD; ++stage)
            for (int which = 0; which < LOADS; ++which) issue(stage, which, stage >= steps);
        wait_loads<AHEAD - 1>();
        workgroup_sync();
        read_n(0, a);
        for (int i = 0; i < 4; ++i) read_k(0, a, i);
        run_stage.template operator()<true, true, AHEAD - 2>(0, a, b);
        int stage = 1;
        for (; stage + AHEAD + 1 < stages; stage += 2) {
            run_stage.template operator()<false, true, 1>(stage, b, a);
            run_stage.template operator()<false, true, 1>(stage + 1, a, b);
        }
        run_stage.template operator()<false, false, 1>(stage, b, a);
        run_stage.template operator()<false, false, 0>(stage + 1, a, b);
        run_stage.template operator()<false, false, -1>(stage + 2, b, a);
    }
}
