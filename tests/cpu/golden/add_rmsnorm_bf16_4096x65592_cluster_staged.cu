// row storage: registers, a slice of each row per CTA, staged in shared memory by bulk copies; skeleton: grid-stride over clusters (a row group split over the cluster's CTAs)
extern "C" __global__ void __launch_bounds__(256, 1) tn_kernel(
    const tn_u16 *__restrict__ in0,
    const long long in0_ld,
    const tn_u16 *__restrict__ in1,
    const long long in1_ld,
    const tn_u16 *__restrict__ in2,
    tn_u16 *__restrict__ out0,
    const long long out0_ld,
    tn_u16 *__restrict__ out1,
    const long long out1_ld,
    const float prm0,
    const long long M) {
    constexpr int N = 65592, V = 8, NV = N / V, T = 256, R = 1;
    constexpr int P = 5;  // vectors each thread keeps per row
    constexpr int A = 8;  // accumulators per reduction and thread
    (void)R;
    __shared__ float tn_red[1][R][T / 32];
    constexpr int NRED = 1;
    __shared__ float tn_cred[2][NRED][R][8];
    __shared__ unsigned long long tn_cbar[2][NRED];
    const float s10 = 65592.0f;
    const float s12 = prm0;
    tn_cluster_start(&tn_cbar[0][0], 2 * NRED, R);  // before the PDL wait
    const int tr = threadIdx.x % T, rr = threadIdx.x / T;
    (void)rr;
    constexpr int CL = 8, NVC = 1025;  // a slice's vectors (the last CTA's fewer)
    const unsigned rank = tn_cluster_rank();
    const int NVL = (int)rank + 1 < CL ? NVC : NV - (CL - 1) * NVC;  // this CTA's
    const int VB = (int)rank * NVC;  // this CTA's slice of every row
    constexpr int PF = (NV - (CL - 1) * NVC) / T;  // vectors a thread takes in every slice
    constexpr int S = 1;
    constexpr int NIN = 2;
    const tn_row_src tn_src[NIN] = {
        {reinterpret_cast<const unsigned char *>(in0 + (long long)VB * V), in0_ld * 2, (unsigned)NVL * V * 2u, 0u},
        {reinterpret_cast<const unsigned char *>(in1 + (long long)VB * V), in1_ld * 2, (unsigned)NVL * V * 2u, 16400u},
    };
    constexpr unsigned STAGE_BYTES = 32800u;
    extern __shared__ __align__(128) unsigned char tn_smem[];
    unsigned long long *tn_full = reinterpret_cast<unsigned long long *>(tn_smem + S * STAGE_BYTES);
    tn_ring_start<1, S, NIN>(tn_src, tn_smem, STAGE_BYTES, tn_full, M, M, blockIdx.x / CL, gridDim.x / CL, 0);
    bool tn_joined = false;  // waited for the cluster's barriers to be set up
    long long turn = 0;  // row groups taken: which tn_cred and tn_cbar, and the phase
    for (long long g = blockIdx.x / CL; g * R < M; g += gridDim.x / CL, turn++) {
        const long long row = g * R + rr;
        const bool live = row < M;
        (void)live;
        const int slot = (int)(turn % S);
        tn_mbar_wait(&tn_full[slot], (unsigned)((turn / S) & 1));
        const unsigned char *tn_stage = tn_smem + slot * STAGE_BYTES;
        const tn_vec<tn_u16, V> *__restrict__ r0 = reinterpret_cast<const tn_vec<tn_u16, V> *>(
            tn_stage + tn_src[0].smem_offset + rr * tn_src[0].row_bytes);
        const tn_vec<tn_u16, V> *__restrict__ r1 = reinterpret_cast<const tn_vec<tn_u16, V> *>(
            tn_stage + tn_src[1].smem_offset + rr * tn_src[1].row_bytes);
        tn_vec<tn_u16, V> bb0[P];
#pragma unroll
        for (int p = 0; p < P; p++) {
            const int vl = p * T + tr, vi = VB + vl;
            (void)vi;
            if ((p < PF || vl < NVL)) bb0[p] = r0[vl];
            else tn_vzero(bb0[p]);
        }
        tn_vec<tn_u16, V> bb1[P];
#pragma unroll
        for (int p = 0; p < P; p++) {
            const int vl = p * T + tr, vi = VB + vl;
            (void)vi;
            if ((p < PF || vl < NVL)) bb1[p] = r1[vl];
            else tn_vzero(bb1[p]);
        }
        tn_ring_refill<1, S, NIN>(tn_src, tn_smem + slot * STAGE_BYTES, &tn_full[slot], g, M, gridDim.x / CL, 0);
        float acc9[A];
#pragma unroll
        for (int v = 0; v < A; v++) acc9[v] = 0.0f;
#pragma unroll
        for (int p = 0; p < P; p++) {
            const int vl = p * T + tr, vi = VB + vl;
            (void)vi;
            if ((p < PF || vl < NVL)) {
                const tn_vec<tn_u16, V> &b0 = bb0[p];
                const tn_vec<tn_u16, V> &b1 = bb1[p];
                #pragma unroll
                for (int v = 0; v < V; v++) {
                    const float e0 = tn_bf16_to_f32(b0.e[v]);
                    const float e1 = tn_bf16_to_f32(b1.e[v]);
                    const float e3 = e0;
                    const float e4 = e1;
                    const float e5 = (e3 + e4);
                    const float e6 = tn_round_bf16(e5);
                    const float e7 = e6;
                    const float e8 = (e7 * e7);
                    acc9[v % A] = tn_combine<0>(acc9[v % A], e8);
                }
            }
        }
        const float s9 = tn_cluster_reduce<CL, 0>(tn_row_reduce<T, 0>(tn_fold<A, 0>(acc9), tn_red[0][rr]), tn_cred[turn & 1][0][rr], &tn_cbar[turn & 1][0], (unsigned)(turn >> 1) & 1u, tr, rank, tn_joined);
        const float s11 = (s9 / s10);
        const float s13 = (s11 + s12);
        const float s14 = rsqrtf(s13);
#pragma unroll
        for (int p = 0; p < P; p++) {
            const int vl = p * T + tr, vi = VB + vl;
            (void)vi;
            if (live && (p < PF || vl < NVL)) {
                const tn_vec<tn_u16, V> &b0 = bb0[p];
                const tn_vec<tn_u16, V> &b1 = bb1[p];
                tn_vec<tn_u16, V> c2;
                tn_vload(c2, in2 + vi * V);
                tn_vec<tn_u16, V> o0;
                tn_vec<tn_u16, V> o1;
                #pragma unroll
                for (int v = 0; v < V; v++) {
                    const float e0 = tn_bf16_to_f32(b0.e[v]);
                    const float e1 = tn_bf16_to_f32(b1.e[v]);
                    const float e2 = tn_bf16_to_f32(c2.e[v]);
                    const float e3 = e0;
                    const float e4 = e1;
                    const float e5 = (e3 + e4);
                    const float e6 = tn_round_bf16(e5);
                    const float e7 = e6;
                    const float e15 = (e7 * s14);
                    const float e16 = e2;
                    const float e17 = (e15 * e16);
                    o0.e[v] = tn_f32_to_bf16(e17);
                    o1.e[v] = tn_f32_to_bf16(e6);
                }
                tn_vstore(out0 + row * out0_ld + vi * V, o0);
                tn_vstore(out1 + row * out1_ld + vi * V, o1);
            }
        }
        if ((g + gridDim.x / CL) * R < M) __syncthreads();  // tn_red is reused by the next row group
    }
}
