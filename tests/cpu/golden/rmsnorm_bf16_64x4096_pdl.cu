// row storage: registers; skeleton: grid-stride
extern "C" __global__ void __launch_bounds__(512) tn_kernel(
    const tn_u16 *__restrict__ in0,
    const long long in0_ld,
    const tn_u16 *__restrict__ in1,
    tn_u16 *__restrict__ out0,
    const long long out0_ld,
    const float prm0,
    const long long M) {
    constexpr int N = 4096, V = 8, NV = N / V, T = 512, R = 1;
    constexpr int P = 1;  // vectors each thread keeps per row
    constexpr int A = 8;  // accumulators per reduction and thread
    (void)R;
    __shared__ float tn_red[1][R][T / 32];
    const float s5 = 4096.0f;
    const float s7 = prm0;
    {  // early_l2: the DRAM latency of the first row group overlaps the previous kernel's end
        const long long tn_g0 = blockIdx.x, tn_e0 = 0, tn_ne = N;
        const long long tn_r0 = tn_g0 * R + threadIdx.x;
        if (threadIdx.x < R && tn_r0 < M) {
            tn_prefetch_l2_span<8192ull>(in0 + tn_r0 * in0_ld + tn_e0, tn_ne * 2u);
        }
        const long long tn_groups = gridDim.x / 1, tn_bytes = tn_ne * 2,
                        tn_pieces = tn_groups < (tn_bytes + 4095) / 4096 ? tn_groups : (tn_bytes + 4095) / 4096,
                        tn_per = ((tn_ne + tn_pieces - 1) / tn_pieces + 15) / 16 * 16, tn_c0 = tn_g0 * tn_per;
        if (threadIdx.x == 0 && tn_c0 < tn_ne) {
            tn_prefetch_l2_span<8192ull>(in1 + tn_e0 + tn_c0, (tn_ne - tn_c0 < tn_per ? tn_ne - tn_c0 : tn_per) * 2u);
        }
    }
    tn_pdl_wait();  // the previous kernel's writes are visible from here on
    tn_pdl_launch_dependents();  // the next kernel may be scheduled; it still waits for our end
    const int tr = threadIdx.x % T, rr = threadIdx.x / T;
    (void)rr;
    for (long long g = blockIdx.x; g * R < M; g += gridDim.x) {
        const long long row = g * R + rr;
        const bool live = row < M;
        (void)live;
        tn_vec<tn_u16, V> bb0[P];
#pragma unroll
        for (int p = 0; p < P; p++) {
            const int vi = p * T + tr;
            if (live && vi < NV) tn_vload(bb0[p], in0 + row * in0_ld + vi * V);
            else tn_vzero(bb0[p]);
        }
        tn_vec<tn_u16, V> cc1[P];  // issued with the row's loads
#pragma unroll
        for (int p = 0; p < P; p++) {
            const int vi = p * T + tr;
            if (live && vi < NV) tn_vload_ro(cc1[p], in1 + vi * V);
            else tn_vzero(cc1[p]);
        }
        float acc4[A];
#pragma unroll
        for (int v = 0; v < A; v++) acc4[v] = 0.0f;
#pragma unroll
        for (int p = 0; p < P; p++) {
            const int vi = p * T + tr;
            if (vi < NV) {
                const tn_vec<tn_u16, V> &b0 = bb0[p];
                #pragma unroll
                for (int v = 0; v < V; v++) {
                    const float e0 = tn_bf16_to_f32(b0.e[v]);
                    const float e2 = e0;
                    const float e3 = (e2 * e2);
                    acc4[v % A] = tn_combine<0>(acc4[v % A], e3);
                }
            }
        }
        const float s4 = tn_row_reduce<T, 0>(tn_fold<A, 0>(acc4), tn_red[0][rr]);
        const float s6 = (s4 / s5);
        const float s8 = (s6 + s7);
        const float s9 = rsqrtf(s8);
#pragma unroll
        for (int p = 0; p < P; p++) {
            const int vi = p * T + tr;
            if (live && vi < NV) {
                const tn_vec<tn_u16, V> &b0 = bb0[p];
                const tn_vec<tn_u16, V> &c1 = cc1[p];
                tn_vec<tn_u16, V> o0;
                #pragma unroll
                for (int v = 0; v < V; v++) {
                    const float e0 = tn_bf16_to_f32(b0.e[v]);
                    const float e1 = tn_bf16_to_f32(c1.e[v]);
                    const float e2 = e0;
                    const float e10 = (e2 * s9);
                    const float e11 = e1;
                    const float e12 = (e10 * e11);
                    o0.e[v] = tn_f32_to_bf16(e12);
                }
                tn_vstore(out0 + row * out0_ld + vi * V, o0);
            }
        }
        if ((g + gridDim.x) * R < M) __syncthreads();  // tn_red is reused by the next row group
    }
}
