// Shared by the probes: error check, CTA sum, and the copy ceiling measured in-process.
#pragma once
#include <cstdio>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

template <int T> __device__ float block_sum(float v, float *red) {
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(~0u, v, o);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    float s = 0;
#pragma unroll
    for (int w = 0; w < T / 32; w++) s += red[w];
    return s;
}

// Best of 10 event-timed runs of launch(), in ms.
template <class F> float best_ms(F launch) {
    cudaEvent_t a, b;
    cudaEventCreate(&a); cudaEventCreate(&b);
    for (int i = 0; i < 3; i++) launch();
    float best = 1e30f;
    for (int r = 0; r < 10; r++) {
        cudaEventRecord(a); launch(); cudaEventRecord(b); cudaEventSynchronize(b);
        float ms; cudaEventElapsedTime(&ms, a, b);
        if (ms < best) best = ms;
    }
    cudaEventDestroy(a); cudaEventDestroy(b);
    return best;
}

// us a launch: what capture() launches on st (`launches` kernels) captured in one CUDA graph, best of 10
// replays after 2 that warm up. Returns nonzero on a CUDA error.
template <class F> int graph_us_a_launch(cudaStream_t st, int launches, F capture, float *us) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    CK(capture());
    CK(cudaStreamEndCapture(st, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    cudaEvent_t a, b;
    cudaEventCreate(&a), cudaEventCreate(&b);
    float best = 1e30f;
    for (int r = 0; r < 12; r++) {
        CK(cudaEventRecord(a, st));
        CK(cudaGraphLaunch(exec, st));
        CK(cudaEventRecord(b, st));
        CK(cudaEventSynchronize(b));
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        if (r >= 2 && ms < best) best = ms;
    }
    *us = best * 1e3f / launches;
    cudaEventDestroy(a), cudaEventDestroy(b);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    return 0;
}

// GB/s (read + write) of a device-to-device copy of `bytes`.
inline double copy_ceiling(void *out, const void *in, size_t bytes) {
    const float ms = best_ms([&] { cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice); });
    return 2.0 * bytes / (ms * 1e-3) / 1e9;
}

// The probes' buffers (in filled with 0x3c bytes: finite bf16 values) and the copy ceiling between them, printed.
inline int probe_setup(void **in, void **out, size_t bytes, double *ceiling) {
    CK(cudaMalloc(in, bytes)); CK(cudaMalloc(out, bytes));
    CK(cudaMemset(*in, 0x3c, bytes));
    *ceiling = copy_ceiling(*out, *in, bytes);
    printf("copy ceiling %.0f GB/s (%zu MiB)\n", *ceiling, bytes >> 20);
    return 0;
}
