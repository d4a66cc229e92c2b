// row storage: registers; skeleton: grid-stride
extern "C" __global__ void __launch_bounds__(128) tn_kernel(
    const tn_u16 *__restrict__ in0,
    const long long in0_ld,
    const tn_u16 *__restrict__ in1,
    const tn_u16 *__restrict__ in2,
    tn_u16 *__restrict__ out0,
    const long long out0_ld,
    const float prm0,
    const long long M) {
    constexpr int N = 4097, V = 8, NV = N / V, T = 128, R = 1;
    constexpr int P = 4;  // vectors each thread keeps per row
    constexpr int A = 8;  // accumulators per reduction and thread
    (void)R;
    __shared__ float tn_red[2][R][T / 32];
    const float s5 = 4097.0f;
    const float s11 = prm0;
    const int tr = threadIdx.x % T, rr = threadIdx.x / T;
    (void)rr;
    for (long long g = blockIdx.x; g * R < M; g += gridDim.x) {
        const long long row = g * R + rr;
        const bool live = row < M;
        (void)live;
        const int H = live ? tn_head(in0 + row * in0_ld) : 0;  // elements before the row's first 16-byte boundary
        const int NVB = (N - H) / V, NX = N - NVB * V;  // whole vectors from there; elements outside them
        const int xc = tr < H ? tr : NVB * V + tr;  // the column of the one thread tr < NX takes
        (void)xc;
        tn_vec<tn_u16, V> bb0[P];
#pragma unroll
        for (int p = 0; p < P; p++) {
            const int vi = p * T + tr;
            if (live && vi < NVB) tn_vload(bb0[p], in0 + row * in0_ld + H + vi * V);
            else tn_vzero(bb0[p]);
        }
        tn_vec<tn_u16, 1> xb0;
        if (live && tr < NX) xb0.e[0] = in0[row * in0_ld + xc];
        else tn_vzero(xb0);
        float acc4[A];
#pragma unroll
        for (int v = 0; v < A; v++) acc4[v] = 0.0f;
#pragma unroll
        for (int p = 0; p < P; p++) {
            const int vi = p * T + tr;
            if (vi < NVB) {
                const tn_vec<tn_u16, V> &b0 = bb0[p];
                #pragma unroll
                for (int v = 0; v < V; v++) {
                    const float e0 = tn_bf16_to_f32(b0.e[v]);
                    const float e3 = e0;
                    acc4[v % A] = tn_combine<0>(acc4[v % A], e3);
                }
            }
        }
        if (tr < NX) {  // the element outside the vectors this thread takes
            constexpr int V = 1;
            const int H = 0, vi = xc;
            (void)H, (void)vi;
            const tn_vec<tn_u16, V> &b0 = xb0;
            #pragma unroll
            for (int v = 0; v < V; v++) {
                const float e0 = tn_bf16_to_f32(b0.e[v]);
                const float e3 = e0;
                acc4[v % A] = tn_combine<0>(acc4[v % A], e3);
            }
        }
        const float s4 = tn_row_reduce<T, 0>(tn_fold<A, 0>(acc4), tn_red[0][rr]);
        const float s6 = (s4 / s5);
        float acc9[A];
#pragma unroll
        for (int v = 0; v < A; v++) acc9[v] = 0.0f;
#pragma unroll
        for (int p = 0; p < P; p++) {
            const int vi = p * T + tr;
            if (vi < NVB) {
                const tn_vec<tn_u16, V> &b0 = bb0[p];
                #pragma unroll
                for (int v = 0; v < V; v++) {
                    const float e0 = tn_bf16_to_f32(b0.e[v]);
                    const float e3 = e0;
                    const float e7 = (e3 - s6);
                    const float e8 = (e7 * e7);
                    acc9[v % A] = tn_combine<0>(acc9[v % A], e8);
                }
            }
        }
        if (tr < NX) {  // the element outside the vectors this thread takes
            constexpr int V = 1;
            const int H = 0, vi = xc;
            (void)H, (void)vi;
            const tn_vec<tn_u16, V> &b0 = xb0;
            #pragma unroll
            for (int v = 0; v < V; v++) {
                const float e0 = tn_bf16_to_f32(b0.e[v]);
                const float e3 = e0;
                const float e7 = (e3 - s6);
                const float e8 = (e7 * e7);
                acc9[v % A] = tn_combine<0>(acc9[v % A], e8);
            }
        }
        const float s9 = tn_row_reduce<T, 0>(tn_fold<A, 0>(acc9), tn_red[1][rr]);
        const float s10 = (s9 / s5);
        const float s12 = (s10 + s11);
        const float s13 = rsqrtf(s12);
#pragma unroll
        for (int p = 0; p < P; p++) {
            const int vi = p * T + tr;
            if (live && vi < NVB) {
                const tn_vec<tn_u16, V> &b0 = bb0[p];
                tn_vec<tn_u16, V> c1;
                tn_vload_any(c1, in1 + H + vi * V);
                tn_vec<tn_u16, V> c2;
                tn_vload_any(c2, in2 + H + vi * V);
                tn_vec<tn_u16, V> o0;
                #pragma unroll
                for (int v = 0; v < V; v++) {
                    const float e0 = tn_bf16_to_f32(b0.e[v]);
                    const float e1 = tn_bf16_to_f32(c1.e[v]);
                    const float e2 = tn_bf16_to_f32(c2.e[v]);
                    const float e3 = e0;
                    const float e7 = (e3 - s6);
                    const float e14 = (e7 * s13);
                    const float e15 = e1;
                    const float e16 = e2;
                    const float e17 = (e14 * e15);
                    const float e18 = (e17 + e16);
                    o0.e[v] = tn_f32_to_bf16(e18);
                }
                tn_vstore_peeled(out0 + row * out0_ld + H + vi * V, o0);
            }
        }
        if (live && tr < NX) {  // the element outside the vectors this thread takes
            constexpr int V = 1;
            const int H = 0, vi = xc;
            (void)H, (void)vi;
            const tn_vec<tn_u16, V> &b0 = xb0;
            tn_vec<tn_u16, V> c1;
            tn_vload_any(c1, in1 + H + vi * V);
            tn_vec<tn_u16, V> c2;
            tn_vload_any(c2, in2 + H + vi * V);
            tn_vec<tn_u16, V> o0;
            #pragma unroll
            for (int v = 0; v < V; v++) {
                const float e0 = tn_bf16_to_f32(b0.e[v]);
                const float e1 = tn_bf16_to_f32(c1.e[v]);
                const float e2 = tn_bf16_to_f32(c2.e[v]);
                const float e3 = e0;
                const float e7 = (e3 - s6);
                const float e14 = (e7 * s13);
                const float e15 = e1;
                const float e16 = e2;
                const float e17 = (e14 * e15);
                const float e18 = (e17 + e16);
                o0.e[v] = tn_f32_to_bf16(e18);
            }
            tn_vstore_peeled(out0 + row * out0_ld + H + vi * V, o0);
        }
        if ((g + gridDim.x) * R < M) __syncthreads();  // tn_red is reused by the next row group
    }
}
