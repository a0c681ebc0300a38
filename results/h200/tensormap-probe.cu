// Probe for issue 4 (results/h200/tensormap_probe.py runs it): can a kernel build a TMA tensor map
// from zeros with tensormap.replace, and can cp.async.bulk.tensor use it? Ran as call W5 of
// results/h200/run-log-hopper-v20-2026-12-03.txt: yes, on the H200 (driver 580.159.04).
#include <cstdint>
extern "C" __global__ void build_map(unsigned char* out_map, const unsigned char* src, unsigned rows, unsigned cols) {
    __shared__ alignas(128) unsigned char m[128];
    if (threadIdx.x < 32) reinterpret_cast<unsigned*>(m)[threadIdx.x] = 0;
    __syncwarp();
    const unsigned a = (unsigned)__cvta_generic_to_shared(m);
    if (threadIdx.x == 0) {
        asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;" ::"r"(a), "l"(src) : "memory");
        asm volatile("tensormap.replace.tile.rank.shared::cta.b1024.b32 [%0], 1;" ::"r"(a) : "memory");
        asm volatile("tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], 0, 64;" ::"r"(a) : "memory");
        asm volatile("tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], 1, 128;" ::"r"(a) : "memory");
        asm volatile("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 0, %1;" ::"r"(a), "r"(cols) : "memory");
        asm volatile("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 1, %1;" ::"r"(a), "r"(rows) : "memory");
        asm volatile("tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%0], 0, %1;" ::"r"(a), "l"((unsigned long long)cols) : "memory");
        asm volatile("tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], 0, 1;" ::"r"(a) : "memory");
        asm volatile("tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], 1, 1;" ::"r"(a) : "memory");
        asm volatile("tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%0], 0;" ::"r"(a) : "memory");
        asm volatile("tensormap.replace.tile.interleave_layout.shared::cta.b1024.b32 [%0], 0;" ::"r"(a) : "memory");
        asm volatile("tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [%0], 0;" ::"r"(a) : "memory");
        asm volatile("tensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [%0], 0;" ::"r"(a) : "memory");
    }
    __syncwarp();
    if (threadIdx.x < 32)
        asm volatile("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;" ::"l"(out_map), "r"(a) : "memory");
}

// One 2D box (64 columns x 128 rows) at (x, y) through the map at `map` (global), written to dst.
extern "C" __global__ void use_map(const unsigned char* map, unsigned char* dst, int x, int y) {
    __shared__ alignas(1024) unsigned char tile[128 * 64];
    __shared__ alignas(8) unsigned long long bar;
    const unsigned t = (unsigned)__cvta_generic_to_shared(tile), b = (unsigned)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0) {
        asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(map) : "memory");
        asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(b), "r"(128 * 64) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                     ::"r"(t), "l"(map), "r"(x), "r"(y), "r"(b) : "memory");
        asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared.b64 p, [%0], 0;\n@!p bra W;\n}" ::"r"(b) : "memory");
    }
    __syncthreads();
    for (int i = threadIdx.x; i < 128 * 64; i += blockDim.x) dst[i] = tile[i];
}
