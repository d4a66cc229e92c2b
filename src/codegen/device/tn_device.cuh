// tmanorm device helpers: prepended to every generated kernel. Self-contained
// (no CUDA headers) so NVRTC compiles fast and the text is deterministic.
typedef unsigned char tn_u8;
typedef unsigned short tn_u16;

// ---- dtype conversions: storage <-> f32, and rounding an f32 to a narrower dtype
__device__ __forceinline__ float tn_bf16_to_f32(tn_u16 h) { return __uint_as_float(((unsigned)h) << 16); }
__device__ __forceinline__ tn_u16 tn_f32_to_bf16(float f) {
    tn_u16 r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
}
__device__ __forceinline__ float tn_f16_to_f32(tn_u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ tn_u16 tn_f32_to_f16(float f) {
    tn_u16 r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
}
#if __CUDA_ARCH__ >= 890
__device__ __forceinline__ tn_u8 tn_f32_to_f8(float f) {
    tn_u16 r;  // the second operand lands in the low byte
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(f));
    return (tn_u8)(r & 0xff);
}
__device__ __forceinline__ float tn_f8_to_f32(tn_u8 b) {
    unsigned h2;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"((tn_u16)b));
    return tn_f16_to_f32((tn_u16)(h2 & 0xffff));
}
#endif
__device__ __forceinline__ float tn_round_bf16(float f) { return tn_bf16_to_f32(tn_f32_to_bf16(f)); }
__device__ __forceinline__ float tn_round_f16(float f) { return tn_f16_to_f32(tn_f32_to_f16(f)); }

// ---- elementwise functions that are more than one expression
// e^x as 2^(x log2 e) on the special-function unit: one multiply and one ex2
// (2 ulp) against expf's ~10 instructions, which made softmax issue-bound.
// The product's rounding adds |x| 2^-24 relative: under 1e-6 wherever
// softmax's terms matter (x - max > -16); results below 2^-126 flush to 0.
__device__ __forceinline__ float tn_exp(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * 1.4426950408889634f));
    return y;
}
__device__ __forceinline__ float tn_sigmoid(float x) { return 1.0f / (1.0f + tn_exp(-x)); }
__device__ __forceinline__ float tn_silu(float x) { return x / (1.0f + tn_exp(-x)); }
__device__ __forceinline__ float tn_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
#define TN_NEG_INF __int_as_float(0xff800000u)

// ---- programmatic dependent launch (sm_90): wait for the previous kernel's
// writes before the first read; let the next kernel be scheduled (it waits for our end).
__device__ __forceinline__ void tn_pdl_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void tn_pdl_launch_dependents() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// A hint: the 16-byte units inside [p, p + bytes) into L2 (cp.async.bulk.prefetch.L2 needs both ends 16-byte
// aligned; none outside the span is named). Issued before tn_pdl_wait it may run ahead of the previous kernel's
// last writes: those land in L2, where the loads after the wait find them. MAX_BYTES bounds `bytes` (the
// generated code knows it): at most 512 KiB, one copy and no loop, so the prologue before the wait stays short
// (the loop, unrolled around each copy's uniform-register waterfall, took 580 instructions before the wait in
// add_rmsnorm 1 x 1024's kernel); longer spans go in 512 KiB pieces, as ptxas keeps the size in 16 bits of
// 16-byte units.
template <unsigned long long MAX_BYTES>
__device__ __forceinline__ void tn_prefetch_l2_span(const void *p, unsigned long long bytes) {
#if __CUDA_ARCH__ >= 900
    constexpr unsigned long long PIECE = 1ull << 19;
    const unsigned long long a = reinterpret_cast<unsigned long long>(p), hi = (a + bytes) & ~15ull;
    unsigned long long lo = (a + 15) & ~15ull;
    // A hint: nothing the program reads changes, so no "memory" clobber.
    if constexpr (MAX_BYTES <= PIECE) {
        if (lo < hi) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(lo), "r"((unsigned)(hi - lo)));
    } else {
        for (; lo < hi; lo += PIECE)
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(lo),
                         "r"((unsigned)(hi - lo < PIECE ? hi - lo : PIECE)));
    }
#else
    (void)p, (void)bytes;
#endif
}

// ---- vectors: V elements of storage type S, moved with accesses of up to 16 bytes
template <int B> struct tn_word;
template <> struct tn_word<1> { typedef unsigned char t; };
template <> struct tn_word<2> { typedef unsigned short t; };
template <> struct tn_word<4> { typedef unsigned int t; };
template <> struct tn_word<8> { typedef uint2 t; };
template <> struct tn_word<16> { typedef uint4 t; };

template <typename S, int V> struct alignas(sizeof(S) * V > 16 ? 16 : sizeof(S) * V) tn_vec { S e[V]; };

template <typename S, int V> __device__ __forceinline__ void tn_vload(tn_vec<S, V> &d, const S *__restrict__ p) {
    constexpr int B = (int)sizeof(S) * V, C = B > 16 ? 16 : B;
    typedef typename tn_word<C>::t W;
#pragma unroll
    for (int i = 0; i < B / C; i++) reinterpret_cast<W *>(d.e)[i] = reinterpret_cast<const W *>(p)[i];
}
template <typename S, int V> __device__ __forceinline__ void tn_vstore(S *__restrict__ p, const tn_vec<S, V> &d) {
    constexpr int B = (int)sizeof(S) * V, C = B > 16 ? 16 : B;
    typedef typename tn_word<C>::t W;
#pragma unroll
    for (int i = 0; i < B / C; i++) reinterpret_cast<W *>(p)[i] = reinterpret_cast<const W *>(d.e)[i];
}
// A peeled row's vector store (its 16-byte offset found at run time): whole 16-byte words as explicit
// st.global.v4, which the compiler would otherwise split into 4-byte stores; a vector of fewer bytes (the
// element outside the vectors) as tn_vstore.
template <typename S, int V> __device__ __forceinline__ void tn_vstore_peeled(S *__restrict__ p, const tn_vec<S, V> &d) {
    if constexpr (sizeof(S) * V % 16 == 0) {
#pragma unroll
        for (int i = 0; i < (int)(sizeof(S) * V / 16); i++) {
            const uint4 w = reinterpret_cast<const uint4 *>(d.e)[i];
            asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(reinterpret_cast<uint4 *>(p) + i), "r"(w.x),
                         "r"(w.y), "r"(w.z), "r"(w.w));
        }
    } else {
        tn_vstore(p, d);
    }
}
// V elements one access each: a vector at no multiple of its size (a peeled row's COL inputs).
template <typename S, int V> __device__ __forceinline__ void tn_vload_any(tn_vec<S, V> &d, const S *__restrict__ p) {
#pragma unroll
    for (int i = 0; i < V; i++) d.e[i] = p[i];
}
// A COL input's (weight's, bias's) vector through the read-only path (ld.global.nc), said outright: the kernel
// never writes them, but nvcc stops inferring it once their pointer reaches inline asm (early_l2's prefetch:
// every weight load of rmsnorm 1 x 12289 lost it).
template <typename S, int V> __device__ __forceinline__ void tn_vload_ro(tn_vec<S, V> &d, const S *__restrict__ p) {
    constexpr int B = (int)sizeof(S) * V, C = B > 16 ? 16 : B;
    typedef typename tn_word<C>::t W;
#pragma unroll
    for (int i = 0; i < B / C; i++) reinterpret_cast<W *>(d.e)[i] = __ldg(reinterpret_cast<const W *>(p) + i);
}
template <typename S, int V> __device__ __forceinline__ void tn_vload_any_ro(tn_vec<S, V> &d, const S *__restrict__ p) {
#pragma unroll
    for (int i = 0; i < V; i++) d.e[i] = __ldg(p + i);
}
// Elements of S from p to the next 16-byte boundary (0 at one).
template <typename S> __device__ __forceinline__ int tn_head(const S *p) {
    return (int)((16u - ((unsigned)(unsigned long long)p & 15u)) & 15u) / (int)sizeof(S);
}
template <typename S, int V> __device__ __forceinline__ void tn_vzero(tn_vec<S, V> &d) {
#pragma unroll
    for (int i = 0; i < V; i++) d.e[i] = S(0);
}

// ---- reductions across the T threads of one row (OP 0: sum, 1: max, 2: online pair)
template <int OP> __device__ __forceinline__ float tn_combine(float a, float b) { return OP == 0 ? a + b : fmaxf(a, b); }

// Online pair (plan field `online`): a row's max m and its sum of exp(x - m) as
// one reduction, one barrier round and one cluster exchange where the max and
// the sum took two. Each part's sum is over exp(x - its own max); parts merge
// by rescaling to the larger max. A part of no finite max (no values, or all
// -inf) sums 0 and is taken as it is.
struct tn_online {
    float m, s;
};
__device__ __forceinline__ float tn_online_scale(float s, float m, float to) {
    return m == -__int_as_float(0x7f800000) ? s : s * tn_exp(m - to);
}
template <int OP> __device__ __forceinline__ tn_online tn_combine(tn_online a, tn_online b) {
    const float m = fmaxf(a.m, b.m);
    return {m, tn_online_scale(a.s, a.m, m) + tn_online_scale(b.s, b.m, m)};
}
__device__ __forceinline__ float tn_shfl_xor(float v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ tn_online tn_shfl_xor(tn_online v, int o) { return {tn_shfl_xor(v.m, o), tn_shfl_xor(v.s, o)}; }
// Where each warp (or cluster CTA) leaves its part in shared memory: a float,
// or for an online pair two, `stride` floats apart (two reduction slots).
struct tn_oslot {
    float *p;
    int stride;
};
__device__ __forceinline__ void tn_slot_put(float *s, int i, float v) { s[i] = v; }
__device__ __forceinline__ float tn_slot_get(const float *s, int i, float) { return s[i]; }
__device__ __forceinline__ void tn_slot_put(tn_oslot s, int i, tn_online v) {
    s.p[i] = v.m;
    s.p[s.stride + i] = v.s;
}
__device__ __forceinline__ tn_online tn_slot_get(tn_oslot s, int i, tn_online) { return {s.p[i], s.p[s.stride + i]}; }

// A thread's V per-lane accumulators into one, pairwise.
// Each halving step its own instantiation, so every index is a constant: a loop over the halvings (w /= 2)
// was left rolled in 16-lane folds (f8 outputs' vectors) and put the lanes in local memory.
template <int W, int V, int OP> __device__ __forceinline__ void tn_fold_halves(float (&a)[V]) {
    if constexpr (W > 0) {
#pragma unroll
        for (int i = 0; i < W; i++) a[i] = tn_combine<OP>(a[i], a[i + W]);
        tn_fold_halves<W / 2, V, OP>(a);
    }
}
template <int V, int OP> __device__ __forceinline__ float tn_fold(const float (&acc)[V]) {
    float a[V];
#pragma unroll
    for (int i = 0; i < V; i++) a[i] = acc[i];
    tn_fold_halves<V / 2, V, OP>(a);
    return a[0];
}

template <int LANES, int OP, typename X> __device__ __forceinline__ X tn_warp_reduce(X v) {
#pragma unroll
    for (int o = LANES / 2; o > 0; o >>= 1) v = tn_combine<OP>(v, tn_shfl_xor(v, o));
    return v;
}

// T > 32: each warp's lane 0 leaves its partial in slot[warp]; every thread then
// combines all T/32 of them in the same order, so every thread gets the same value.
template <int T, int OP, typename X, typename SLOT> __device__ __forceinline__ X tn_row_reduce(X v, SLOT slot) {
    v = tn_warp_reduce<(T < 32 ? T : 32), OP>(v);
    if (T > 32) {
        const int tr = threadIdx.x % T;
        if (tr % 32 == 0) tn_slot_put(slot, tr / 32, v);
        __syncthreads();
        v = tn_slot_get(slot, 0, v);
#pragma unroll
        for (int w = 1; w < T / 32; w++) v = tn_combine<OP>(v, tn_slot_get(slot, w, v));
    }
    return v;
}
