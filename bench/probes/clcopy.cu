// Probe: what a thread-block cluster costs a row kernel of one row per
// cluster (each CTA a slice), against one row slice per plain CTA.
#include <cuda_bf16.h>
#include "probe.h"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ __forceinline__ unsigned smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
// v into CTA c's copy of *slot, completing on c's copy of *bar.
__device__ __forceinline__ void st_async_to(unsigned c, float *slot, unsigned long long *bar, float v) {
    unsigned ra, rb;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(smem_addr(slot)), "r"(c));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rb) : "r"(smem_addr(bar)), "r"(c));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(ra),
                 "r"(__float_as_uint(v)), "r"(rb) : "memory");
}
// One thread: this CTA's part s to every other CTA's part[rank], and its own barrier told to expect theirs.
template <int CL>
__device__ __forceinline__ void send_to_peers(float *part, unsigned long long *bar, unsigned rank, float s) {
    part[rank] = s;
    for (unsigned c = 0; c < CL; c++)
        if (c != rank) st_async_to(c, &part[rank], bar, s);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"((CL - 1) * 4) : "memory");
}
// Waits for phase 0 of *bar to complete.
__device__ __forceinline__ void wait_phase0(unsigned long long *bar) {
    unsigned done = 0;
    while (!done)
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(smem_addr(bar)), "r"(0) : "memory");
}

// MODE 0: cluster launch, no cluster ops (each CTA normalizes its slice alone).
// MODE 1: cluster.sync at start, partials read over DSMEM after a cluster.sync, cluster.sync at end.
// MODE 2: mbarrier + st.async partials (tmanorm's exchange), arrive at start, no end barrier.
// MODE 3: like 2 but with a cluster barrier (arrive+wait) at the end.
template <int T, int P, int CL, int MODE>
__global__ void __launch_bounds__(T, 1) clk(const uint4 *__restrict__ in, uint4 *__restrict__ out, long long rows) {
    __shared__ float red[T / 32];
    __shared__ float part[CL];
    __shared__ __align__(8) unsigned long long bar;
    unsigned rank = 0;
    if (CL > 1) asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const long long row = blockIdx.x / CL;
    if (MODE >= 2) {
        if (threadIdx.x == 0) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(&bar)), "r"(1));
            asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        }
        asm volatile("barrier.cluster.arrive.release;" ::: "memory");
    }
    if (MODE == 1) cg::this_cluster().sync();
    const uint4 *src = in + row * (T * P * CL) + rank * (T * P);
    uint4 b[P];
#pragma unroll
    for (int p = 0; p < P; p++) b[p] = __ldg(src + p * T + threadIdx.x);
    float acc = 0;
#pragma unroll
    for (int p = 0; p < P; p++) {
        const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&b[p]);
#pragma unroll
        for (int k = 0; k < 4; k++) { float2 f = __bfloat1622float2(h[k]); acc += f.x * f.x + f.y * f.y; }
    }
    float s = block_sum<T>(acc, red);
    if (MODE == 1) {
        if (threadIdx.x == 0) part[rank] = s;
        cg::this_cluster().sync();
        s = 0;
        for (int c = 0; c < CL; c++) s += *cg::this_cluster().map_shared_rank(&part[rank], c) * 0 + *cg::this_cluster().map_shared_rank(&part[c], c);
    } else if (MODE >= 2) {
        asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
        if (threadIdx.x == 0) send_to_peers<CL>(part, &bar, rank, s);
        wait_phase0(&bar);
        s = 0;
        for (int c = 0; c < CL; c++) s += part[c];
    }
    s = rsqrtf(s / (T * P * CL * 8) + 1e-6f);
    uint4 *dst = out + row * (T * P * CL) + rank * (T * P);
#pragma unroll
    for (int p = 0; p < P; p++) {
        __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&b[p]);
#pragma unroll
        for (int k = 0; k < 4; k++) { float2 f = __bfloat1622float2(h[k]); h[k] = __floats2bfloat162_rn(f.x * s, f.y * s); }
        dst[p * T + threadIdx.x] = b[p];
    }
    if (MODE == 1) cg::this_cluster().sync();
    if (MODE == 3) {
        asm volatile("barrier.cluster.arrive.release;" ::: "memory");
        asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
    }
}


// MODE 4: the slice lands in shared memory by one bulk copy and is read back in
// each phase (few registers, many CTAs an SM); exchange as in mode 2.
// MODE 5: slice in registers; each warp sends its own partial to every CTA
// (no CTA barrier before the exchange); mbarrier expects warps x CL partials.
template <int T, int P, int CL, int MODE>
__global__ void __launch_bounds__(T, 1) clk2(const uint4 *__restrict__ in, uint4 *__restrict__ out, long long rows) {
    extern __shared__ __align__(128) uint4 sl[];
    __shared__ float part[CL * (T / 32)];
    __shared__ float red[T / 32];
    __shared__ __align__(8) unsigned long long bar, lbar;
    unsigned rank = 0;
    if (CL > 1) asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const long long row = blockIdx.x / CL;
    const uint4 *src = in + row * (T * P * CL) + rank * (T * P);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(&bar)), "r"(MODE == 5 ? T / 32 : 1));
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(&lbar)), "r"(1));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        if (MODE == 4) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(&lbar)), "r"(T * P * 16) : "memory");
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         ::"r"(smem_addr(sl)), "l"(src), "r"(T * P * 16), "r"(smem_addr(&lbar)) : "memory");
        }
    }
    if (CL > 1) asm volatile("barrier.cluster.arrive.release;" ::: "memory");
    uint4 b[MODE == 5 ? P : 1];
    float acc = 0;
    if (MODE == 4) {
        __syncthreads();
        unsigned done = 0;
        while (!done)
            asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                         : "=r"(done) : "r"(smem_addr(&lbar)), "r"(0) : "memory");
#pragma unroll
        for (int p = 0; p < P; p++) {
            uint4 v = sl[p * T + threadIdx.x];
            const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&v);
#pragma unroll
            for (int k = 0; k < 4; k++) { float2 f = __bfloat1622float2(h[k]); acc += f.x * f.x + f.y * f.y; }
        }
    } else {
#pragma unroll
        for (int p = 0; p < P; p++) b[p % (MODE == 5 ? P : 1)] = __ldg(src + p * T + threadIdx.x);
#pragma unroll
        for (int p = 0; p < P; p++) {
            const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&b[p % (MODE == 5 ? P : 1)]);
#pragma unroll
            for (int k = 0; k < 4; k++) { float2 f = __bfloat1622float2(h[k]); acc += f.x * f.x + f.y * f.y; }
        }
    }
    for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(~0u, acc, o);
    float s = 0;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (MODE == 4) {
        if (lane == 0) red[warp] = acc;
        __syncthreads();
        for (int w = 0; w < T / 32; w++) s += red[w];
        if (CL > 1) asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
        if (threadIdx.x == 0) send_to_peers<CL>(part, &bar, rank, s);
    } else {
        if (CL > 1) asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
        // lane c sends this warp's partial to CTA c (itself included: the local slot too)
        if (lane < CL) {
            st_async_to(lane, &part[rank * (T / 32) + warp], &bar, acc);
        }
        if (lane == 0)
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(&bar)), "r"(CL * 4) : "memory");
    }
    wait_phase0(&bar);
    s = 0;
    if (MODE == 4) for (int c = 0; c < CL; c++) s += part[c];
    else for (int c = 0; c < CL * (T / 32); c++) s += part[c];
    s = rsqrtf(s / (T * P * CL * 8) + 1e-6f);
    uint4 *dst = out + row * (T * P * CL) + rank * (T * P);
#pragma unroll
    for (int p = 0; p < P; p++) {
        uint4 v = MODE == 4 ? sl[p * T + threadIdx.x] : b[p % (MODE == 5 ? P : 1)];
        __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&v);
#pragma unroll
        for (int k = 0; k < 4; k++) { float2 f = __bfloat1622float2(h[k]); h[k] = __floats2bfloat162_rn(f.x * s, f.y * s); }
        dst[p * T + threadIdx.x] = v;
    }
}

static double ceiling_gbs;
template <int T, int P, int CL, int MODE> int run(void *in, void *out, size_t bytes) {
    const long long rowv = (long long)T * P * CL, rows = bytes / 16 / rowv;
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, clk<T, P, CL, MODE>));
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = CL; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3((unsigned)(rows * CL)); cfg.blockDim = dim3(T); cfg.attrs = at; cfg.numAttrs = 1;
    int active = 0;
    CK(cudaOccupancyMaxActiveClusters(&active, clk<T, P, CL, MODE>, &cfg));
    const float best = best_ms([&] { cudaLaunchKernelEx(&cfg, clk<T, P, CL, MODE>, (const uint4 *)in, (uint4 *)out, rows); });
    CK(cudaGetLastError());
    const double gbs = 2.0 * rows * rowv * 16 / (best * 1e-3) / 1e9;
    printf("mode %d cluster %d  row %6lld B  slice %6d B  T %4d P %2d  regs %3d  %3d clusters at once  %8.2f us  %6.0f GB/s  %5.1f%%\n",
           MODE, CL, rowv * 16, T * P * 16, T, P, fa.numRegs, active, best * 1e3, gbs, 100 * gbs / ceiling_gbs);
    return 0;
}


template <int T, int P, int CL, int MODE> int run2(void *in, void *out, size_t bytes) {
    const long long rowv = (long long)T * P * CL, rows = bytes / 16 / rowv;
    const int dyn = MODE == 4 ? T * P * 16 : 0;
    auto k = clk2<T, P, CL, MODE>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, k));
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = CL; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3((unsigned)(rows * CL)); cfg.blockDim = dim3(T); cfg.attrs = at; cfg.numAttrs = 1;
    cfg.dynamicSmemBytes = dyn;
    int active = 0;
    CK(cudaOccupancyMaxActiveClusters(&active, k, &cfg));
    const float best = best_ms([&] { cudaLaunchKernelEx(&cfg, k, (const uint4 *)in, (uint4 *)out, rows); });
    CK(cudaGetLastError());
    const double gbs = 2.0 * rows * rowv * 16 / (best * 1e-3) / 1e9;
    printf("mode %d cluster %d  row %6lld B  slice %6d B  T %4d P %2d  regs %3d  %3d clusters at once  %8.2f us  %6.0f GB/s  %5.1f%%\n",
           MODE, CL, rowv * 16, T * P * 16, T, P, fa.numRegs, active, best * 1e3, gbs, 100 * gbs / ceiling_gbs);
    return 0;
}

int main() {
    const size_t bytes = 512ull << 20;
    void *in, *out;
    if (probe_setup(&in, &out, bytes, &ceiling_gbs)) return 1;
    // 32 KiB slices of 256 x 8: a plain CTA a row, then clusters of 2 and 4 in each exchange.
    run<256, 8, 1, 0>(in, out, bytes);
    run<256, 8, 2, 0>(in, out, bytes); run<256, 8, 2, 1>(in, out, bytes); run<256, 8, 2, 2>(in, out, bytes); run<256, 8, 2, 3>(in, out, bytes);
    run<256, 8, 4, 0>(in, out, bytes); run<256, 8, 4, 1>(in, out, bytes); run<256, 8, 4, 2>(in, out, bytes); run<256, 8, 4, 3>(in, out, bytes);
    run2<256, 8, 2, 5>(in, out, bytes); run2<256, 8, 4, 5>(in, out, bytes);
    run2<256, 8, 2, 4>(in, out, bytes); run2<256, 8, 4, 4>(in, out, bytes); run2<256, 8, 8, 4>(in, out, bytes);
    // 16 KiB slices (more CTAs an SM), then 64 KiB ones.
    run<128, 8, 1, 0>(in, out, bytes);
    run<128, 8, 4, 0>(in, out, bytes); run<128, 8, 4, 2>(in, out, bytes); run<128, 8, 8, 2>(in, out, bytes);
    run2<128, 8, 4, 5>(in, out, bytes); run2<128, 8, 4, 4>(in, out, bytes); run2<128, 8, 8, 4>(in, out, bytes);
    run2<128, 16, 4, 4>(in, out, bytes);
    run<512, 8, 2, 0>(in, out, bytes); run<512, 8, 2, 2>(in, out, bytes);
    run2<256, 16, 2, 4>(in, out, bytes); run2<256, 16, 4, 4>(in, out, bytes); run2<512, 8, 2, 4>(in, out, bytes);
    return 0;
}
