// Probe: how fast can "load a row slice into registers, reduce over the CTA,
// store it" go on this GPU, by row bytes per CTA, threads and CTAs per SM.
#include <cuda_bf16.h>
#include "probe.h"

// One row of T*P vectors a CTA (grid-stride when gridDim < rows).
template <int T, int P, int MINB>
__global__ void __launch_bounds__(T, MINB) rowk(const uint4 *__restrict__ in, uint4 *__restrict__ out, long long rows) {
    __shared__ float red[T / 32];
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const uint4 *src = in + row * (T * P);
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
        const float s = rsqrtf(block_sum<T>(acc, red) / (T * P * 8) + 1e-6f);
#pragma unroll
        for (int p = 0; p < P; p++) {
            __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&b[p]);
#pragma unroll
            for (int k = 0; k < 4; k++) { float2 f = __bfloat1622float2(h[k]); h[k] = __floats2bfloat162_rn(f.x * s, f.y * s); }
            out[row * (T * P) + p * T + threadIdx.x] = b[p];
        }
        __syncthreads();
    }
}

static double ceiling_gbs;
template <int T, int P, int MINB> int run(const char *name, void *in, void *out, size_t bytes, int persist) {
    const long long rowv = (long long)T * P, rows = bytes / 16 / rowv;
    int occ = 0, nsm = 0, regs = 0;
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, rowk<T, P, MINB>));
    regs = fa.numRegs;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, rowk<T, P, MINB>, T, 0));
    CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
    const long long grid = persist ? (long long)occ * nsm : rows;
    const float best = best_ms([&] { rowk<T, P, MINB><<<grid, T>>>((uint4 *)in, (uint4 *)out, rows); });
    CK(cudaGetLastError());
    const double gbs = 2.0 * rows * rowv * 16 / (best * 1e-3) / 1e9;
    printf("%-28s row %6lld B  T %4d P %2d  regs %3d  %d CTAs/SM  grid %7lld  %8.2f us  %6.0f GB/s  %5.1f%%\n", name,
           rowv * 16, T, P, regs, occ, grid, best * 1e3, gbs, 100 * gbs / ceiling_gbs);
    return 0;
}

int main() {
    const size_t bytes = 512ull << 20;
    void *in, *out;
    if (probe_setup(&in, &out, bytes, &ceiling_gbs)) return 1;
    for (int persist = 0; persist < 2; persist++) {
        const char *tag = persist ? "persistent" : "row a CTA";
        run<128, 8, 1>(tag, in, out, bytes, persist);    // 16 KiB
        run<256, 8, 1>(tag, in, out, bytes, persist);    // 32 KiB
        run<256, 8, 2>(tag, in, out, bytes, persist);
        run<256, 8, 4>(tag, in, out, bytes, persist);
        run<512, 8, 1>(tag, in, out, bytes, persist);    // 64 KiB
        run<512, 8, 2>(tag, in, out, bytes, persist);
        run<256, 16, 1>(tag, in, out, bytes, persist);   // 64 KiB
        run<256, 16, 2>(tag, in, out, bytes, persist);
        run<1024, 4, 1>(tag, in, out, bytes, persist);   // 64 KiB
        run<1024, 4, 2>(tag, in, out, bytes, persist);
        run<1024, 8, 1>(tag, in, out, bytes, persist);   // 128 KiB
        run<512, 16, 1>(tag, in, out, bytes, persist);   // 128 KiB
        run<128, 16, 1>(tag, in, out, bytes, persist);   // 32 KiB
        run<128, 16, 4>(tag, in, out, bytes, persist);
        run<128, 4, 1>(tag, in, out, bytes, persist);    // 8 KiB
    }
    return 0;
}
