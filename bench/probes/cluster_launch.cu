// Probe: what a thread-block cluster adds to a small problem's launch (issue 9, parts 1 and 3). The few-row
// sweep shapes that tmanorm splits over clusters of 8 took 0.4-0.6 us more on the H100s (2026-12-05 on) than
// on the H200 (2026-12-04), while its one-CTA plans and the other systems took the same on both: this
// separates the launch of a cluster grid from the kernel's cluster barriers and its exchange. rows x C CTAs
// of 128 threads, launched back to back in a CUDA graph with programmatic dependent launch (as tmanorm
// launches), the cluster size set by the launch attribute (as tmanorm's runtime sets it); stages:
//   0 empty      griddepcontrol.wait and launch_dependents only
//   1 barrier    + one cluster barrier (arrive.release / wait.acquire) after the wait
//   2 exchange   + each CTA's partial sum stored into every peer's shared memory (mapa + st.shared::cluster),
//                  a second barrier, the sum read back, and a last barrier before exit (tmanorm's pattern)
//   3 row        stage 2 with the CTA's slice of an N-element bf16 row loaded before it and stored after it
//   4 early      stage 1 with the barrier arrived at before the PDL wait and waited on after it (tmanorm's
//                kernels from session 23: the peers' arrivals land while the previous kernel ends)
// C = 1 runs the same kernels with the attribute at 1 and the barriers compiled out, and without the
// attribute at all ("plain"): the difference is what asking for a cluster costs.
#include <cuda_bf16.h>
#include "probe.h"

template <int STAGE, int C, int P>
__global__ void __launch_bounds__(128) cl_kernel(const uint4 *__restrict__ in, uint4 *__restrict__ out) {
    __shared__ float slot[16];
    if (STAGE == 4 && C > 1) asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (STAGE == 0) return;
    if (STAGE == 4) {
        if (C > 1) asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
        return;
    }
    const long long base = (long long)blockIdx.x * 128 * P + threadIdx.x;
    uint4 v[P];
    float s = 1.0f;
    if (STAGE >= 3) {
#pragma unroll
        for (int p = 0; p < P; p++) v[p] = __ldg(in + base + p * 128);
        s = __uint_as_float(v[0].x) * 1e-30f;
    }
    if (C > 1) asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (STAGE >= 2) {
        unsigned rank = 0;
        if (C > 1) asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
        if (threadIdx.x < C) {  // thread k stores this CTA's value into peer k's slot[rank]
            const unsigned local = (unsigned)__cvta_generic_to_shared(&slot[rank]);
            unsigned remote = local;
            if (C > 1) asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(threadIdx.x));
            asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(remote), "f"(s) : "memory");
        }
        if (C > 1)
            asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
        else
            __syncthreads();
        float t = 0;
#pragma unroll
        for (int k = 0; k < C; k++) t += slot[k];
        s = rsqrtf(t + 1.0f);
        if (C > 1) asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    }
    if (STAGE >= 3) {
#pragma unroll
        for (int p = 0; p < P; p++) {
            v[p].x = __float_as_uint(__uint_as_float(v[p].x) * s);
            out[base + p * 128] = v[p];
        }
    }
}

static const char *k_names[] = {"empty", "barrier", "exchange", "row", "early"};

// 200 launches captured in a graph (graph_us_a_launch). attr_c: the cluster attribute's value
// (0: no attribute).
template <int STAGE, int C, int P> int run(uint4 *in, uint4 *out, int rows, int attr_c, bool pdl) {
    constexpr int LAUNCHES = 200;
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaLaunchAttribute attr[2];
    int n = 0;
    if (pdl) {
        attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[n++].val.programmaticStreamSerializationAllowed = 1;
    }
    if (attr_c) {
        attr[n].id = cudaLaunchAttributeClusterDimension;
        attr[n].val.clusterDim.x = attr_c, attr[n].val.clusterDim.y = 1, attr[n++].val.clusterDim.z = 1;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)(rows * C));
    cfg.blockDim = dim3(128);
    cfg.stream = st;
    cfg.attrs = attr;
    cfg.numAttrs = n;
    float us;
    auto capture = [&]() {
        for (int i = 0; i < LAUNCHES; i++) {
            cudaError_t e = cudaLaunchKernelEx(&cfg, cl_kernel<STAGE, C, P>, (const uint4 *)in, out);
            if (e) return e;
        }
        return cudaSuccess;
    };
    if (graph_us_a_launch(st, LAUNCHES, capture, &us)) return 1;
    printf("rows %2d  cluster %d%-6s  N %6d  %-9s %s  %7.3f us a launch\n", rows, C, attr_c ? "" : " plain",
           128 * P * 8 * C, k_names[STAGE], pdl ? "pdl" : "   ", us);
    CK(cudaStreamDestroy(st));
    return 0;
}

// Every stage of clusters of C with P vectors a thread: rows of 128 x P x 8 x C bf16.
template <int C, int P> int stages(uint4 *in, uint4 *out, int rows, int attr_c, bool pdl) {
    return run<0, C, P>(in, out, rows, attr_c, pdl) || run<1, C, P>(in, out, rows, attr_c, pdl) ||
           run<2, C, P>(in, out, rows, attr_c, pdl) || run<3, C, P>(in, out, rows, attr_c, pdl) ||
           run<4, C, P>(in, out, rows, attr_c, pdl);
}

int main() {
    void *in, *out;
    double ceiling;
    if (probe_setup(&in, &out, 64 << 20, &ceiling)) return 1;
    uint4 *i4 = (uint4 *)in, *o4 = (uint4 *)out;
    for (int rows : {1, 8})
        for (bool pdl : {true, false}) {
            // N 8192 (add_rmsnorm 1 x 8192's plan: clusters of 8 x 128 x 1) against one CTA of 128 x 8.
            if (stages<1, 8>(i4, o4, rows, 0, pdl) || stages<1, 8>(i4, o4, rows, 1, pdl) ||
                stages<2, 4>(i4, o4, rows, 2, pdl) || stages<4, 2>(i4, o4, rows, 4, pdl) ||
                stages<8, 1>(i4, o4, rows, 8, pdl))
                return 1;
        }
    return 0;
}
