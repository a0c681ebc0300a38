// wgrad grouped MXFP8 weight-gradient kernel for Hopper (sm_90a): dequantize to bf16 (B into shared
// memory, A into registers), multiply with wgmma on the bf16 tensor cores, accumulate in fp32.
//
// Why bf16 and not fp8 wgmma: Hopper has no block-scaled (MX) instructions. An e4m3 value times
// its e8m0 scale is exactly a bf16 value (3 mantissa bits, fp32's exponent range), and a bf16 x
// bf16 product is exact in fp32, so dequantizing on the way to the tensor cores keeps the ABI's
// arithmetic (exact products, fp32 sums, one rounding to bf16). The alternative, fp8 wgmma per
// 32-token block with the scales applied to each partial sum, costs two fp32 operations per
// accumulator per 32 tokens (the per-row times per-column scale, then the add): 128 of each per
// thread per m64n256k32, twice the tensor cores' 128 cycles for it on the fp32 pipes, so it is
// bound by promotion at half the fp8 rate, no faster than the bf16 rate. Measured: without loads
// or stores, a skeleton of it ran at 384 TFLOP/s at 8k and this kernel's at 788; and the fp8
// tensor cores' sum over a block drops products 2^-14 or more below its largest, which fp32 sums
// keep. Dequantizing costs 2.5 instructions per fp8 element (5 a pair: e4m3 -> f16 -> two f32 ->
// bf16, exact, then one bf16x2 multiply by the scale; two fp32 multiplies before the bf16
// conversion took 1.4 to 2.1% more time at 8k), which a cluster's 256 x 256 outputs amortize over
// 128 multiply-adds each. The design and the alternatives measured: docs/hopper-design.md.
//
// Structure: persistent clusters of two CTAs, one CTA per SM. A tile is 128 rows of N x 256 columns
// of K of one expert; a cluster's two CTAs take N tiles 2j and 2j + 1 of the same expert and k0, so
// they need the same 256 B rows. Cluster c takes pairs c, c + clusters, ... counted first over the
// experts with tokens, then over the empty ones (Schedule). Each CTA dequantizes half of those B
// rows and sends its bf16 half to the peer with the bulk-copy engine (smem to DSMEM). 384 threads,
// 3 warpgroups, stages of 64 tokens in a 5-stage ring of bf16 B tiles (128-byte-swizzled, K-major,
// as wgmma reads them). The ring runs on across tiles: while the consumers finish a tile and store
// it, the producer already fills the next tile's stages. Warpgroup 0 (88 registers, setmaxnreg)
// dequantizes the CTA's 128 B rows, 32 consecutive rows per warp: each warp loads its rows with
// 16-byte loads one stage ahead, converts and stores them, arrives on the stage's full barrier, and
// its lane 0 copies the warp's 4 KiB to the peer, so the four warps never wait for each other (one
// thread copying the whole slice after a barrier of all four took 4.0 to 5.4% more time on
// Qwen3-30B's shapes). Warpgroups 1 and 2 (208 registers) each own 64 rows x 256
// columns of fp32 accumulators and keep their A operand in registers (wgmma's A from registers).
// Per stage they issue four wgmma m64n256k16, wait for the previous stage's (one stage stays in
// flight, so the tensor cores do not drain at every stage), release that stage's slot, and, while
// the new ones run, dequantize the next stage's A rows (which may be the next tile's first) into
// the fragments the finished stage read; they also write the zeros of the empty experts' tiles they
// pass. A never touches shared memory: storing it for wgmma to re-read would be 32 of the 128
// KiB of shared-memory traffic per stage. The price is the token order
// inside a stage (fragment()): a thread's 16-byte load holds 16 consecutive tokens, and the
// fragment takes them as they come, so B's rows are stored in the same order, in 4-byte words
// instead of 16-byte chunks. mbarriers hand stages over: full[s] (the producer's warps arrive, the
// peer's copies count their bytes), empty[s] (both CTAs' consumers arrive). No barrier operation
// has cluster-scope release or acquire: those compile to a GPU-wide MEMBAR and an L1 invalidation
// per use, which made a first cluster version 1.8x slower. Epilogue: round to nearest even bf16,
// stage in shared memory, store whole rows with 16-byte stores. It costs 8.7% of the time at 8k, as
// the energy of writing 1 GiB under the board's power cap: spreading the stores over the next
// tile took 1.1% more time, storing from the accumulators without staging 15% more.
//
// Launch (kernels/hopper.yaml, grid: units): one CTA of 384 threads per SM, at most one per tile,
// an even number (cluster dims (2, 1, 1) are compiled in); 198,736 bytes of dynamic shared memory
// (the ring, the epilogue's staging, the mbarriers). Any such grid is correct: clusters do not
// wait for each other. Arguments are the contract's six pointers (docs/kernel-contract.md).

#include "wgrad_shape.h"  // M, N, K, E and the ABI's input rules

#if !defined(__CUDACC__)
#error "build with nvcc for sm_90a"
#endif
#define WGRAD_DEVICE __device__ __forceinline__

namespace {

constexpr int TILE_N = 128, TILE_K = 256;  // outputs per CTA
constexpr int STEP = 64;                    // tokens per stage
constexpr int STAGES = 5;
constexpr int ROW_BYTES = STEP * 2;         // one bf16 row of a stage: 128 bytes, one swizzle row
constexpr int STAGE_BYTES = TILE_K * ROW_BYTES;  // B only: the consumers' A rows stay in registers
constexpr int THREADS = 384;
constexpr int CLUSTER = 2;                  // CTAs with the same expert and k0 (N tiles 2j, 2j + 1)
constexpr int CONSUMER_ROWS = TILE_N / 2;  // A rows (and accumulator rows) of each consumer warpgroup
constexpr int PRODUCER_B_ROWS = TILE_K / CLUSTER;  // B rows each CTA's producer dequantizes for both
constexpr unsigned PEER_BYTES = PRODUCER_B_ROWS * ROW_BYTES;  // what each producer sends the peer per stage
constexpr unsigned WARP_PEER_BYTES = PEER_BYTES / 4;  // one producer warp's 32 rows, copied by the warp
// A stage is full once this CTA's four producer warps have arrived (each arrival also expects a
// quarter of the peer's PEER_BYTES) and the peer's bytes have landed; free again once both CTAs'
// 8 consumer warps have arrived.
constexpr unsigned FULL_ARRIVALS = 4, EMPTY_ARRIVALS = CLUSTER * 8;
// The epilogue stages half a consumer's outputs at a time (64 rows x 128 columns of bf16). Rows are
// 256 bytes plus 16 of padding, so that a warp's fragment writes (8 rows x 4 words) fall in 32
// different banks, and its 16-byte reads of whole rows do too.
constexpr int STAGED_COLUMNS = 128, STAGED_PITCH = STAGED_COLUMNS * 2 + 16;
constexpr int STAGED_BYTES = CONSUMER_ROWS * STAGED_PITCH;  // per consumer warpgroup
// Shared memory: the ring (1024-byte aligned, for the 128-byte swizzle), both staging buffers, the
// full and empty mbarriers. No static shared memory, so the dynamic base is the window's start.
constexpr int RING_BYTES = STAGES * STAGE_BYTES, BARRIERS = RING_BYTES + 2 * STAGED_BYTES;
constexpr int SHARED_BYTES = BARRIERS + 2 * STAGES * 8;
// Registers per thread: the producer gives some to the consumers, which hold 128 accumulators.
// 88 / 208 took 2 to 4% less time at 8k than 72 / 216, in three runs on the H200;
// 104 / 200 makes the consumers spill at K = 768.
constexpr int LAUNCH_REGISTERS = 65536 / THREADS / 8 * 8;  // what ptxas gives each thread for __launch_bounds__(THREADS, 1)
constexpr int PRODUCER_REGISTERS = 88, CONSUMER_REGISTERS = 208;
static_assert(128 * PRODUCER_REGISTERS + 256 * CONSUMER_REGISTERS <= THREADS * LAUNCH_REGISTERS, "no more than the launch gave the CTA: a setmaxnreg.inc beyond what the others gave back waits forever");
constexpr int CONSUMER_BAR = 2;  // named barriers: consumer h uses 2 + h
// Tile pairs (one per cluster at a time): expert-major, then K tiles, then pairs of N tiles.
constexpr int PAIRS_N = int(N / (CLUSTER * TILE_N)), PAIRS_PER_EXPERT = PAIRS_N * int(K / TILE_K);
constexpr long long PAIRS = E * PAIRS_PER_EXPERT;

static_assert(SHARED_BYTES == 198736, "kernels/hopper.yaml's dynamic shared memory");
static_assert(PAIRS < (1ll << 31), "pair indices are 32-bit");

// mbarriers: `bar` is a shared::cta address (this CTA) or, from mapa, a shared::cluster one.
WGRAD_DEVICE void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// Arrives on this CTA's barrier. Cluster-scope release is avoided on purpose: it compiles to a
// GPU-wide MEMBAR that waits for the thread's prefetching global loads.
WGRAD_DEVICE void mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Arrives on this CTA's barrier and makes its phase wait for `bytes` more (the peer's copy).
WGRAD_DEVICE void mbar_arrive_expect(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// Arrives on the peer's barrier (a shared::cluster address), as CUTLASS's ClusterBarrier does.
WGRAD_DEVICE void mbar_arrive_peer(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(bar) : "memory");
}
// After the whole warp's writes: __syncwarp orders them before lane 0's release.
WGRAD_DEVICE void warp_arrive(unsigned bar) {
    __syncwarp();
    if (threadIdx.x % 32 == 0) mbar_arrive(bar);
}
// Waits until the phase with parity `parity` of this CTA's barrier `bar` has completed.
WGRAD_DEVICE void mbar_wait(unsigned bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
// The bulk-copy engine copies `bytes` of this CTA's shared memory at `src` to the peer's `dst` and
// counts them on the peer's barrier `bar` (both shared::cluster addresses).
WGRAD_DEVICE void copy_to_peer(unsigned dst, unsigned src, unsigned bytes, unsigned bar) {
    asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "r"(src), "r"(bytes), "r"(bar) : "memory");
}
// The peer CTA's shared::cluster address of this CTA's shared address `addr`.
WGRAD_DEVICE unsigned peer_address(unsigned addr, unsigned peer) {
    unsigned out;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(addr), "r"(peer));
    return out;
}
WGRAD_DEVICE void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
WGRAD_DEVICE void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }

// 2^(s - 127) as a pair of bf16 (e8m0 0 is the bf16 subnormal 2^-127; 255 is NaN).
WGRAD_DEVICE unsigned e8m0(unsigned s) {
    const unsigned b = s == 255 ? 0x7FC0u : s == 0 ? 0x0040u : s << 7;
    return b | b << 16;
}

// Two e4m3 bytes (low half of `pair`) times `scale` (a bf16 pair) -> two bf16 (low = first byte),
// exactly: e4m3 -> f16 -> f32 -> bf16 are exact (4 significant bits), and the bf16 product rounds
// once, as the fp32 product's conversion did.
WGRAD_DEVICE unsigned dequant2(unsigned short pair, unsigned scale) {
    unsigned h2;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(pair));
    float lo, hi;
    asm("{.reg .f16 l, h;\n mov.b32 {l, h}, %2;\n cvt.f32.f16 %0, l;\n cvt.f32.f16 %1, h;\n}" : "=f"(lo), "=f"(hi) : "r"(h2));
    unsigned v, out;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(v) : "f"(hi), "f"(lo));
    asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(out) : "r"(v), "r"(scale));
    return out;
}

WGRAD_DEVICE void st_shared(unsigned addr, unsigned v) { asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory"); }
WGRAD_DEVICE uint4 ld_shared(unsigned addr) {
    uint4 v;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
    return v;
}
// One 16-byte store (nvcc splits a plain uint4 store into four when it cannot prove the alignment).
WGRAD_DEVICE void st_global(void* p, uint4 v) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// 16 fp8 (one 16-byte load: tokens 16 part .. +15) -> 16 bf16 of a 128-byte swizzled row at shared
// address `row`, in the stage's token order (fragment()): word i's two token pairs go to word
// `part` of 16-byte chunks 2i and 2i + 1. A warp's 8 rows x 4 parts hit 32 banks per store.
WGRAD_DEVICE void store_row_part(unsigned row, int row_index, int part, uint4 q, unsigned scale) {
    const unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int chunk = (2 * i + h) ^ (row_index & 7);  // 128-byte swizzle: 16-byte chunk ^ row % 8
            st_shared(row + chunk * 16 + 4 * part, dequant2((unsigned short)(h ? w[i] >> 16 : w[i] & 0xFFFF), scale));
        }
}

// The A operand of wgmma_m64n256k16 for k-step i of a stage, from one thread's two rows (r and r + 8
// of its warp's 16) of 16 tokens each (tokens 16 part .. +15): slots 16 i + 2 part + {0, 1} hold
// tokens 16 part + 4 i + {0, 1}, slots + 8 tokens + {2, 3}. The producer stores B in the same order.
WGRAD_DEVICE void fragment(unsigned (&f)[4], uint4 lo_row, uint4 hi_row, int i, unsigned lo_scale, unsigned hi_scale) {
    const unsigned lo[4] = {lo_row.x, lo_row.y, lo_row.z, lo_row.w}, hi[4] = {hi_row.x, hi_row.y, hi_row.z, hi_row.w};
    const unsigned a = lo[i], b = hi[i];
    f[0] = dequant2((unsigned short)(a & 0xFFFF), lo_scale);
    f[1] = dequant2((unsigned short)(b & 0xFFFF), hi_scale);
    f[2] = dequant2((unsigned short)(a >> 16), lo_scale);
    f[3] = dequant2((unsigned short)(b >> 16), hi_scale);
}

// wgmma shared-memory descriptor: K-major, 128-byte swizzle, 8-row groups 1024 bytes apart. The
// low word holds the address / 16 (14 bits; shared memory is below 256 KiB, so an offset adds to it
// without carries), the high word the constant layout fields.
WGRAD_DEVICE unsigned descriptor_lo(unsigned addr) { return ((addr & 0x3FFFF) >> 4) | (1u << 16); }

WGRAD_DEVICE unsigned long long descriptor(unsigned lo) {
    return (unsigned long long)lo | ((1024ull >> 4) << 32) | (1ull << 62);
}

// d (+)= A B for 64 rows x 256 columns x 16 tokens; `accumulate` 0 overwrites d. Zeroing the
// accumulators with ordinary instructions instead makes ptxas serialize the wgmmas (C7515).
WGRAD_DEVICE void wgmma_m64n256k16(float (&d)[128], const unsigned (&a)[4], unsigned long long desc_b, int accumulate) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %133, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19,"
        "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37,"
        "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55,"
        "%56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73,"
        "%74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91,"
        "%92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107,"
        "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122,"
        "%123, %124, %125, %126, %127}, "
        "{%128, %129, %130, %131}, %132, p, 1, 1, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
          "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
          "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),
          "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
          "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
          "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
          "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
          "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]),
          "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]),
          "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]),
          "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]),
          "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]),
          "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]),
          "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]),
          "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]),
          "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]),
          "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}

// fp32 -> bf16 pair, round to nearest even (NaN stays NaN: cvt gives the canonical 0x7FFF).
WGRAD_DEVICE unsigned bf16x2(float lo, float hi) {
    unsigned out;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(out) : "f"(hi), "f"(lo));
    return out;
}

// Where one thread's rows of one operand start: its first row `row`, tokens 16 part .. +15 of each
// stage (inside one 32-token block, so one scale in the (M/128, rows, 4) layout). A row is M bytes
// further in the operand and 4 bytes further in the scales; stage `it` is 64 it bytes further in the
// operand and in scale word it / 2. ROWS: the operand's rows (N or K). Stages are loaded in order,
// and the pointers move with them.
template <long long ROWS>
struct Stream {
    const unsigned char *x = nullptr, *scale = nullptr;

    Stream() = default;
    WGRAD_DEVICE Stream(const unsigned char* op, const unsigned char* op_scale, long long row, long long m_begin, int part)
        : x(op + row * M + m_begin + 16 * part), scale(op_scale + ((m_begin / 128) * ROWS + row) * 4 + part / 2) {}
};

// Makes this thread's shared-memory stores visible to wgmma and the bulk copy (the async proxy).
WGRAD_DEVICE void fence_stores() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// One thread's CHUNKS 16-byte pieces of one stage, from rows STRIDE apart, in registers until they
// are dequantized.
template <int CHUNKS, int STRIDE>
struct Rows {
    uint4 q[CHUNKS];
    unsigned char s[CHUNKS];  // e8m0 bytes

    // Loads stage `it`, the next stage of `from`, and moves `from` on by one stage.
    template <long long ROWS>
    WGRAD_DEVICE void load(Stream<ROWS>& from, int it) {
        const unsigned char* ss = from.scale + 2 * (it % 2);
#pragma unroll
        for (int i = 0; i < CHUNKS; ++i) {
            q[i] = __ldg(reinterpret_cast<const uint4*>(from.x + STRIDE * M * i));
            s[i] = __ldg(ss + 4 * STRIDE * i);
        }
        from.x += STEP;
        if (it % 2) from.scale += ROWS * 4;
    }

    // The producer's rows 32 (t / 32) + (t % 32) / 4 + STRIDE i (a warp's 32 rows are consecutive):
    // dequantize into the stage's rows that start at shared address `base` (1024-byte aligned).
    // wgmma reads them only after fence_stores(), __syncwarp() and the stage's full barrier.
    WGRAD_DEVICE void store(unsigned base, int t) const {
#pragma unroll
        for (int i = 0; i < CHUNKS; ++i) {
            const int row = 32 * (t / 32) + t % 32 / 4 + STRIDE * i;
            store_row_part(base + row * ROW_BYTES, row, t % 4, q[i], e8m0(s[i]));
        }
    }

    // A consumer's rows r and r + 8: the A operands of the stage's four k-steps.
    WGRAD_DEVICE void fragments(unsigned (&f)[STEP / 16][4]) const {
        static_assert(CHUNKS == 2 && STRIDE == 8, "a warp's 16 rows of wgmma's A fragment");
        const unsigned lo = e8m0(s[0]), hi = e8m0(s[1]);
#pragma unroll
        for (int i = 0; i < STEP / 16; ++i) fragment(f[i], q[0], q[1], i, lo, hi);
    }
};

// This CTA's rank in its cluster, 0 or 1 (a special register: cheaper to read again than to hold).
WGRAD_DEVICE unsigned cluster_rank() {
    unsigned rank;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}

// A consumer warpgroup's 64 rows x 256 columns of a tile of an expert without tokens, from `out`:
// zeros, in 16-byte stores of whole rows (the tile has no stages, so no epilogue writes it). Not
// unrolled: it runs inside the walk, with the accumulators and both sets of fragments live (ptxas spilled).
WGRAD_DEVICE void store_zeros(unsigned short* out) {
    constexpr int ROW_CHUNKS = TILE_K * 2 / 16;
#pragma unroll 1
    for (int i = 0; i < CONSUMER_ROWS * ROW_CHUNKS / 128; ++i) {
        const int chunk = 128 * i + threadIdx.x % 128;
        st_global(out + (chunk / ROW_CHUNKS) * K + 8 * (chunk % ROW_CHUNKS), make_uint4(0, 0, 0, 0));
    }
}

// One CTA's tile of tile pair `pair`: expert e, rows n0 .. +127 of N (the cluster's CTA `rank`
// takes N tile 2j + rank), columns k0 .. +255 of K, tokens m_begin .. + 64 steps.
struct Tile {
    unsigned e, n0, k0;
    long long m_begin;
    int steps;

    WGRAD_DEVICE Tile(int pair, unsigned rank, const int* expert_off) {
        e = unsigned(pair / PAIRS_PER_EXPERT);
        const unsigned q = unsigned(pair % PAIRS_PER_EXPERT);
        n0 = (CLUSTER * (q % PAIRS_N) + rank) * TILE_N;
        k0 = (q / PAIRS_N) * TILE_K;
        m_begin = expert_off[e];
        steps = int((expert_off[e + 1] - m_begin) / STEP);  // the same in both CTAs of a cluster
    }
};

// Which tile pairs a cluster takes: c, c + clusters, ... (round-robin, so that at any moment the
// clusters work on neighbouring pairs, with the same A and B rows in L2), counted first over the
// pairs of the experts with tokens, then over those of the empty experts. Counting them all in one
// order gave an empty expert's pair (zeros: a few percent of a pair's work) as much weight as a
// full one, and left some clusters with a pair more: 29% more time than the hardware's scheduling
// of one CTA per tile on qwen3-30b-down-empty. In this order, a model of the schedule puts the
// slowest cluster within 1% of a greedy scheduler's on that shape.
struct Schedule {
    int position = int(blockIdx.x / CLUSTER) - int(gridDim.x / CLUSTER);  // this cluster's place in the order
    int e = 0, start = 0;  // the expert of the current pair, and the place of its first pair
    bool empties = false;  // the second pass: the experts without tokens

    // Moves on to this cluster's next pair; false once there is none.
    WGRAD_DEVICE bool next(const int* off) {
        position += int(gridDim.x / CLUSTER);
        for (;; ++e) {
            if (e == E) {
                if (empties) return false;
                empties = true;
                e = 0;
            }
            if ((off[e + 1] == off[e]) != empties) continue;
            if (position < start + PAIRS_PER_EXPERT) return true;
            start += PAIRS_PER_EXPERT;
        }
    }
    WGRAD_DEVICE int pair() const { return e * PAIRS_PER_EXPERT + position - start; }
};

// One loader's walk over the stages of its cluster's tiles, in the order the consumers use them
// (tiles of empty experts have no stages). It loads operand A's rows row0 + 16 (t / 32) + (t % 32) / 4
// + 8 i (consumer h: row0 = n0 + 64 h; wgmma's fragment rows) or B's rows row0 + 32 (t / 32)
// + (t % 32) / 4 + 8 i (the producer: row0 = k0 + 128 rank). The operand's pointers are passed to
// next() rather than kept: kernel parameters cost no registers.
template <bool IS_A>
struct Walk {
    static constexpr long long ROWS = IS_A ? N : K;
    Schedule tiles;
    int it = 0, steps = 0;
    Stream<ROWS> from;

    // Loads the next stage into `rows`; false once the walk is over. The consumers' walks (IS_A)
    // also write their rows' zeros of the tiles they pass that have no stages.
    template <int CHUNKS, int STRIDE>
    WGRAD_DEVICE bool next(Rows<CHUNKS, STRIDE>& rows, const unsigned char* op, const unsigned char* op_scale, const int* expert_off, unsigned short* C) {
        while (it == steps) {
            if (!tiles.next(expert_off)) return false;
            const Tile tile(tiles.pair(), cluster_rank(), expert_off);
            const unsigned row0 = IS_A ? tile.n0 + CONSUMER_ROWS * (threadIdx.x / 128 - 1) : tile.k0 + PRODUCER_B_ROWS * cluster_rank();
            if (IS_A && tile.steps == 0) store_zeros(C + ((long long)tile.e * N + row0) * K + tile.k0);
            const int t = threadIdx.x % 128, first = IS_A ? 16 * (t / 32) + t % 32 / 4 : 32 * (t / 32) + t % 32 / 4;
            from = Stream<ROWS>(op, op_scale, row0 + first, tile.m_begin, t % 4);
            it = 0;
            steps = tile.steps;
        }
        rows.load(from, it++);
        return true;
    }
};

}  // namespace

extern "C++" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1) grouped_mxfp8_wgrad_kernel(
    unsigned short* C, const unsigned char* A, const unsigned char* B,
    const unsigned char* scale_A, const unsigned char* scale_B, const int* expert_off) {
    extern __shared__ __align__(1024) unsigned char smem[];
    const unsigned ring = (unsigned)__cvta_generic_to_shared(smem);
    if (ring % 1024) __trap();  // the swizzled tiles need it; never seen (the window starts aligned)
    const unsigned full = ring + BARRIERS, empty = full + 8 * STAGES;

    // Both CTAs of a cluster take the same tile pairs (Schedule), so the same stages and barrier phases.
    const unsigned rank = cluster_rank();
    const int warpgroup = threadIdx.x / 128, t = threadIdx.x % 128;

    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + 8 * s, FULL_ARRIVALS);
            mbar_init(empty + 8 * s, EMPTY_ARRIVALS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_arrive();  // the peer's barriers exist before anyone arrives on them
    cluster_wait();

    if (warpgroup == 0) {  // producer: B rows 128 rank .. +127 of every tile for both CTAs, a stage ahead in registers
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGISTERS));
        const unsigned peer_full = peer_address(full, rank ^ 1), peer_ring = peer_address(ring, rank ^ 1);
        Walk<false> walk;
        Rows<PRODUCER_B_ROWS / 32, 8> cur, next;
        const unsigned slice = PRODUCER_B_ROWS * rank * ROW_BYTES;  // this CTA's B rows in a stage
        auto put = [&](const Rows<PRODUCER_B_ROWS / 32, 8>& rows, int g) {
            const int s = g % STAGES;
            if (g >= STAGES) mbar_wait(empty + 8 * s, (g / STAGES - 1) & 1);  // both CTAs' consumers are done with it
            rows.store(ring + s * STAGE_BYTES + slice, t);
            fence_stores();
            __syncwarp();  // the warp's 32 rows are written (and fenced) before its lane 0 arrives and copies
            if (t % 32 == 0) {
                const unsigned rows_at = s * STAGE_BYTES + slice + (t / 32) * WARP_PEER_BYTES;
                mbar_arrive_expect(full + 8 * s, WARP_PEER_BYTES);  // ours are in; a quarter of the peer's slice is on its way
                copy_to_peer(peer_ring + rows_at, ring + rows_at, WARP_PEER_BYTES, peer_full + 8 * s);
            }
        };
        for (int g = 0; walk.next(cur, B, scale_B, expert_off, C); g += 2) {  // g: the stage's index in this CTA's whole walk
            const bool more = walk.next(next, B, scale_B, expert_off, C);
            put(cur, g);
            if (!more) break;
            put(next, g + 1);
        }
        cluster_arrive();  // no more copies or arrivals to the peer
        cluster_wait();
        return;
    }

    // Consumer h owns rows n0 + 64 h .. +63 of each tile, and keeps its A operand in registers: while
    // its wgmmas on one stage run, it dequantizes the next stage's A rows (which may be the next
    // tile's first) into the other set of fragments, and loads the stage after that.
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGISTERS));
    const int half = warpgroup - 1, warp = t / 32, lane = t % 32;
    const unsigned peer_empty = peer_address(empty, rank ^ 1);
    const unsigned desc_ring = descriptor_lo(ring);
    const unsigned staged = ring + RING_BYTES + half * STAGED_BYTES;
    Walk<true> walk;
    Rows<CONSUMER_ROWS / 32, 8> a;
    unsigned f0[STEP / 16][4], f1[STEP / 16][4];  // stages 2j and 2j + 1 (every tile has an even number)
    bool more = walk.next(a, A, scale_A, expert_off, C);
    if (more) {
        a.fragments(f0);
        more = walk.next(a, A, scale_A, expert_off, C);
    }
    float d[128];
    int g = 0;  // the stage's index in this CTA's whole walk
    // This warp is done with stage `done`, in both CTAs' eyes.
    const auto release = [&](int done) {
        warp_arrive(empty + 8 * (done % STAGES));
        if (lane == 0) mbar_arrive_peer(peer_empty + 8 * (done % STAGES));
    };
    // One stage: wgmmas on `cur`, the next stage's fragments into `next`, while they run. `first`:
    // the tile's first (nothing in flight before it).
    const auto stage = [&](const unsigned (&cur)[STEP / 16][4], unsigned (&next)[STEP / 16][4], bool first) {
        const int s = g % STAGES;
        mbar_wait(full + 8 * s, (g / STAGES) & 1);
        const unsigned b = desc_ring + s * (STAGE_BYTES >> 4);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < STEP / 16; ++kk)  // 16 tokens = 32 bytes further along each B row
            wgmma_m64n256k16(d, cur[kk], descriptor(b + ((32 * kk) >> 4)), !first || kk > 0);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        if (!first) {  // stage g - 1's wgmmas, the last to read `next`, are done: release its slot
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
            release(g - 1);
        }
        if (more) {
            a.fragments(next);
            more = walk.next(a, A, scale_A, expert_off, C);
        }
        ++g;
    };
    // The walk loads two stages ahead of the wgmmas, and every tile it loads has at least two
    // (experts have multiples of 128 tokens), so when a tile begins, the walk is inside it, and when
    // one ends, the walk has more stages only if another tile follows.
    for (bool tiles_left = more; tiles_left; tiles_left = more) {
        const Tile tile(walk.tiles.pair(), rank, expert_off);
        for (int it = 0; it < tile.steps; it += 2) {
            stage(f0, f1, it == 0);
            stage(f1, f0, false);
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        release(g - 1);

        // Epilogue, in two rounds of 128 columns: round to nearest even bf16, stage in shared memory,
        // then store whole rows with 16-byte stores (a warp instruction: 2 rows of 256 bytes), which
        // do not hold the warpgroup up while they drain. d[4j + {0,1,2,3}] = rows r, r, r+8, r+8 and
        // columns c, c+1, c, c+1 of the 8-column block j.
        const int r = 16 * warp + lane / 4;
        unsigned short* out = C + ((long long)tile.e * N + tile.n0 + CONSUMER_ROWS * half) * K + tile.k0;
#pragma unroll
        for (int round = 0; round < TILE_K / STAGED_COLUMNS; ++round) {
            asm volatile("bar.sync %0, 128;" ::"r"(CONSUMER_BAR + half) : "memory");  // the buffer is read
#pragma unroll
            for (int j = 0; j < STAGED_COLUMNS / 8; ++j) {
                const float* v = d + 4 * (STAGED_COLUMNS / 8 * round + j);
                const unsigned at = staged + r * STAGED_PITCH + 16 * j + 4 * (lane % 4);
                st_shared(at, bf16x2(v[0], v[1]));
                st_shared(at + 8 * STAGED_PITCH, bf16x2(v[2], v[3]));
            }
            asm volatile("bar.sync %0, 128;" ::"r"(CONSUMER_BAR + half) : "memory");  // the buffer is written
#pragma unroll 1  // unrolled, its addresses and the next tile's fragments made ptxas spill
            for (int i = 0; i < CONSUMER_ROWS / 8; ++i) {
                const int row = 8 * i + 2 * warp + lane / 16, chunk = lane % 16;
                st_global(out + row * K + STAGED_COLUMNS * round + 8 * chunk, ld_shared(staged + row * STAGED_PITCH + 16 * chunk));
            }
        }
    }
    cluster_arrive();  // no more arrivals to the peer; its copies to this CTA all landed before the last full wait
    cluster_wait();
}
