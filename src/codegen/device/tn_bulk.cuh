// ---- bulk copies into shared memory (sm_90): the row storage of the tma kinds.
// One elected thread copies whole rows with cp.async.bulk; each copy completes
// transaction bytes on an mbarrier that every reader of the slot waits on.
// Rows are 16-byte aligned and a multiple of 16 bytes long (the scheduler
// picks another kind otherwise).
#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned tn_smem_addr(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void tn_mbar_init(unsigned long long *bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(tn_smem_addr(bar)), "r"(count) : "memory");
}
// Makes initialized barriers visible to the copy engine (the async proxy).
__device__ __forceinline__ void tn_mbar_fence_init() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// One arrival that also announces `bytes` of copies landing on this phase.
__device__ __forceinline__ void tn_mbar_arrive_expect_tx(unsigned long long *bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(tn_smem_addr(bar)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void tn_mbar_arrive(unsigned long long *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(tn_smem_addr(bar)) : "memory");
}
// Waits until the phase with this parity has completed (the loop in C++, not
// in the asm, so ptxas sees structured control flow).
__device__ __forceinline__ bool tn_mbar_try_wait(unsigned long long *bar, unsigned parity) {
    unsigned done;
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(tn_smem_addr(bar)), "r"(parity)
        : "memory");
    return done != 0;
}
__device__ __forceinline__ void tn_mbar_wait(unsigned long long *bar, unsigned parity) {
    while (!tn_mbar_try_wait(bar, parity)) {
    }
}
// Global -> shared, `bytes` (a multiple of 16) completing on bar.
__device__ __forceinline__ void tn_bulk_load(void *dst, const void *src, unsigned bytes, unsigned long long *bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     tn_smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(tn_smem_addr(bar))
                 : "memory");
}
#endif

// ---- named barriers: a group of warps meets without the rest of the CTA
__device__ __forceinline__ void tn_bar_sync(unsigned id, unsigned threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// ---- register sharing between warp groups (sm_90a)
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
template <int REGS> __device__ __forceinline__ void tn_regs_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(REGS));
}
template <int REGS> __device__ __forceinline__ void tn_regs_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(REGS));
}
#else
template <int REGS> __device__ __forceinline__ void tn_regs_dec() {}
template <int REGS> __device__ __forceinline__ void tn_regs_inc() {}
#endif

// ---- the ring of stages (the tma kinds' skeletons). A stage holds one row
// group, or one chunk of it: for each ROW input k, R rows of row_bytes each
// (a row's whole N elements, one chunk of them, or a cluster CTA's slice), from smem_offset on.
struct tn_row_src {
    const unsigned char *base; // the input's first row (an uneven cluster CTA's: its slice's first element)
    long long ld_bytes;        // its row stride in bytes
    unsigned row_bytes;        // bytes of one row in a stage: N (or N / chunks, or the CTA's slice) x element
                               // size, a multiple of 16
    unsigned smem_offset;      // where its R rows start in a stage
};

#if __CUDA_ARCH__ >= 900
// One thread: bulk-copies chunk `chunk` of the live rows of row group g into
// stage, completing on full.
template <int R, int NIN>
__device__ __forceinline__ void tn_stage_issue(const tn_row_src (&src)[NIN], unsigned char *stage, long long g,
                                               long long M, unsigned long long *full, int chunk = 0) {
    const long long row0 = g * R;
    const int rows = M - row0 < R ? (int)(M - row0) : R;
    unsigned bytes = 0;
#pragma unroll
    for (int k = 0; k < NIN; k++) bytes += (unsigned)rows * src[k].row_bytes;
    tn_mbar_arrive_expect_tx(full, bytes);
    for (int r = 0; r < rows; r++)
#pragma unroll
        for (int k = 0; k < NIN; k++)
            tn_bulk_load(stage + src[k].smem_offset + r * src[k].row_bytes,
                         src[k].base + (row0 + r) * src[k].ld_bytes + (long long)chunk * src[k].row_bytes,
                         src[k].row_bytes, full);
}

// Every thread: sets up the stages' barriers and (thread 0) fills each stage
// with this CTA's first S row groups: g0, g0 + step, ... (chunk `chunk` of
// each: a cluster CTA's slice). The copies start before the barrier that lets
// the other threads wait on them: a CTA of one row group waits for memory
// once, not after a CTA-wide barrier too.
template <int R, int S, int NIN>
__device__ __forceinline__ void tn_ring_start(const tn_row_src (&src)[NIN], unsigned char *smem, unsigned stage_bytes,
                                              unsigned long long *full, long long G, long long M, long long g0,
                                              long long step, int chunk) {
    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < S; s++) tn_mbar_init(&full[s], 1);
        tn_mbar_fence_init();
        for (int s = 0; s < S; s++) {
            const long long g = g0 + (long long)s * step;
            if (g < G) tn_stage_issue<R, NIN>(src, smem + s * stage_bytes, g, M, &full[s], chunk);
        }
    }
    __syncthreads();
}

// Every thread, after the row group g in this stage is done: once all have
// read the stage, thread 0 refills it with the group S turns ahead. A cluster
// plan's CTAs that take the slice into registers hand the stage back as soon as
// they hold it, so the next slices stream in while this one reduces, meets the
// cluster and stores; those that read it in every phase, after the row group.
template <int R, int S, int NIN>
__device__ __forceinline__ void tn_ring_refill(const tn_row_src (&src)[NIN], unsigned char *stage,
                                               unsigned long long *full, long long g, long long M, long long step,
                                               int chunk) {
    __syncthreads();
    const long long next = g + (long long)S * step;
    if (threadIdx.x == 0 && next * R < M) tn_stage_issue<R, NIN>(src, stage, next, M, full, chunk);
}

// ---- thread-block clusters (the cluster kind): each CTA of a cluster holds
// one slice of the same rows (in registers); a reduction's per-CTA parts meet in
// every CTA's shared memory (distributed shared memory). Each part travels with
// st.async, which completes its bytes on the receiver's mbarrier: a CTA waits
// only for the parts it needs, never for the whole cluster.
__device__ __forceinline__ unsigned tn_cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// A hint: `bytes` (a multiple of 16) from p (16-byte aligned) into L2, so the
// loads that follow later find them there instead of waiting on DRAM.
__device__ __forceinline__ void tn_prefetch_l2(const void *p, unsigned bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}
// The cluster barrier in two halves: arrive once this CTA's barriers are set
// up (before the PDL wait), wait before the first write to another CTA (the
// row's loads in between). Not the .aligned forms on purpose: both follow
// divergent code (thread 0's setup, early_l2's prefetch).
__device__ __forceinline__ void tn_cluster_arrive() { asm volatile("barrier.cluster.arrive.release;" ::: "memory"); }
__device__ __forceinline__ void tn_cluster_wait() { asm volatile("barrier.cluster.wait.acquire;" ::: "memory"); }
// p (an address in this CTA's shared memory) in the cluster's CTA `rank`.
__device__ __forceinline__ unsigned tn_cluster_map(const void *p, unsigned rank) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(tn_smem_addr(p)), "r"(rank));
    return remote;
}
// v into `slot` of CTA `rank`, its 4 bytes completing on that CTA's `bar`.
__device__ __forceinline__ void tn_cluster_send(float *slot, unsigned rank, float v, unsigned long long *bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(
                     tn_cluster_map(slot, rank)),
                 "r"(__float_as_uint(v)), "r"(tn_cluster_map(bar, rank))
                 : "memory");
}
// Part i of the exchange (this CTA's, i = its rank) into the slots of CTA
// `rank`: one float, or an online pair's two.
__device__ __forceinline__ void tn_cluster_put(float *slots, int i, unsigned rank, float v, unsigned long long *bar) {
    tn_cluster_send(&slots[i], rank, v, bar);
}
__device__ __forceinline__ void tn_cluster_put(tn_oslot s, int i, unsigned rank, tn_online v, unsigned long long *bar) {
    tn_cluster_send(&s.p[i], rank, v.m, bar);
    tn_cluster_send(&s.p[s.stride + i], rank, v.s, bar);
}
// Every thread, once: thread 0 sets up the reductions' barriers (one arrival
// per row of the row group: its first thread's), then the CTA arrives at the
// cluster barrier that tn_cluster_reduce's first call waits on.
__device__ __forceinline__ void tn_cluster_start(unsigned long long *bars, int count, unsigned rows) {
    if (threadIdx.x == 0) {
        for (int i = 0; i < count; i++) tn_mbar_init(&bars[i], rows);
        tn_mbar_fence_init();
    }
    tn_cluster_arrive();
}
// A row's reduction over the cluster: v is this CTA's part (already over its
// threads). The row's first thread keeps it in slots[rank] and sends it to
// slots[rank] of every other CTA, then arrives on this CTA's bar expecting the
// other CTAs' bytes; every thread waits for the phase and combines the CL parts
// in rank order -- the same order in every CTA, so all get the same value.
// The caller alternates two sets of slots and barriers between row groups: a
// CTA can be at most one row group ahead of another (it needs the other's parts
// of the group before), so a slot is never written while it is still read:
// between this CTA's reads of a group's slots and its next put, its warps meet
// in tn_row_reduce's __syncthreads, and the lanes of a warp here (a row of 32
// threads or fewer reduces by shuffles alone, which order no memory: racecheck
// saw the put two groups on race the reads, 2026-12-06). No cluster barrier at
// the end: a CTA's last wait is for every byte sent to it.
template <int CL, int OP, typename X, typename SLOT>
__device__ __forceinline__ X tn_cluster_reduce(X v, SLOT slots, unsigned long long *bar, unsigned parity, int tr,
                                               unsigned rank, bool &joined) {
    __syncwarp();
    if (!joined) {
        tn_cluster_wait();  // every CTA's barriers are set up
        joined = true;
    }
    if (tr == 0) {
        tn_slot_put(slots, (int)rank, v);
#pragma unroll
        for (unsigned c = 0; c < CL; c++)
            if (c != rank) tn_cluster_put(slots, (int)rank, c, v, bar);
        tn_mbar_arrive_expect_tx(bar, (CL - 1) * (unsigned)sizeof(X));
    }
    tn_mbar_wait(bar, parity);
    v = tn_slot_get(slots, 0, v);
#pragma unroll
    for (int c = 1; c < CL; c++) v = tn_combine<OP>(v, tn_slot_get(slots, c, v));
    return v;
}
#endif

// ---- the warp-specialized ring (the tma-ws kind's skeleton). Each consumer
// warp group c has S slots with a "full" mbarrier (one arrival + the copies'
// bytes) and an "empty" one (one arrival per consumer thread). Producer warp c
// fills group c's slots with the chunks of its row groups in order (the whole
// warp waits, so control flow stays uniform; lane 0 issues); the group waits
// on full before its first read of a slot and releases it after its last.
#if __CUDA_ARCH__ >= 900
template <int SLOTS> __device__ __forceinline__ void tn_ws_start(unsigned long long *full, unsigned long long *empty) {
    if (threadIdx.x == 0) {
        for (int s = 0; s < SLOTS; s++) {
            tn_mbar_init(&full[s], 1);
            tn_mbar_init(&empty[s], 128);
        }
        tn_mbar_fence_init();
    }
    __syncthreads();
}

// One producer warp: row groups g, g + step, ... of one consumer group, K
// chunks each, through its S slots; waits for a slot's release before reuse.
template <int G, int S, int K, int NIN>
__device__ __forceinline__ void tn_ws_produce(const tn_row_src (&src)[NIN], unsigned char *ring, unsigned stage_bytes,
                                              unsigned long long *full, unsigned long long *empty, long long g,
                                              long long step, long long NG, long long M) {
    unsigned item = 0; // slots filled, mod 2S: the slot and its phase bit
    bool reuse = false;
    for (; g < NG; g += step)
        for (int ch = 0; ch < K; ch++) {
            const int slot = (int)(item % S);
            if (reuse) tn_mbar_wait(&empty[slot], (item / S) ^ 1);
            if (threadIdx.x % 32 == 0) tn_stage_issue<G, NIN>(src, ring + slot * stage_bytes, g, M, &full[slot], ch);
            __syncwarp();
            item = (item + 1) % (2 * S);
            reuse |= item == S;
        }
}

// A consumer thread is done reading a slot. Every thread arrives: a warp-level
// election would need a __syncwarp, which in these loops makes ptxas spill.
__device__ __forceinline__ void tn_ws_release(unsigned long long *empty) { tn_mbar_arrive(empty); }
#endif

// Reduction over the T threads of a row inside one consumer warp group: warp
// shuffles, then (T > 32) one named barrier of the group's 128 threads, never
// the producer's. Every row of the group meets at the same barrier.
template <int T, int OP> __device__ __forceinline__ float tn_group_reduce(float v, float *slot, int tr, unsigned bar) {
    v = tn_warp_reduce<(T < 32 ? T : 32), OP>(v);
    if (T > 32) {
        if (tr % 32 == 0) slot[tr / 32] = v;
        tn_bar_sync(bar, 128);
        v = slot[0];
#pragma unroll
        for (int w = 1; w < T / 32; w++) v = tn_combine<OP>(v, slot[w]);
    }
    return v;
}
