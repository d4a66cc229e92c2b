/* tma-ws: a producer warp keeps each consumer warp group's ring full. The tma-ws plan's schedule, check and
   tune candidates for the kind table in heuristics.c, its shared memory and register split (heuristics.h). */
#include "sched/sched_internal.h"

/* Rows of one consumer group's stage: its 128 threads, threads_per_row each. */
static int ws_rows_per_group(const tn_plan_desc *p) { return 128 / p->threads_per_row; }

int64_t tn_ws_stage_bytes(const tn_analysis *a, const tn_plan_desc *p) {
    return (int64_t)ws_rows_per_group(p) * (p->cols / p->chunks) * a->buffer_elem_bytes;
}

int64_t tn_ws_dynamic_smem(const tn_analysis *a, const tn_plan_desc *p) {
    /* Each group's slots, then a full and an empty mbarrier per slot. */
    return (int64_t)p->consumer_groups * p->stages * (tn_ws_stage_bytes(a, p) + 16);
}

int64_t tn_ws_static_smem(const tn_analysis *a, const tn_plan_desc *p) {
    /* The tma kinds' reduction scratch, two row groups deep so no barrier guards its reuse. */
    return 2 * tn_tma_static_smem(a, p);
}

int tn_ws_producer_regs(int stage_inputs) {
    return stage_inputs > 1 ? TN_WS_PRODUCER_REGS + 8 * (stage_inputs - 1) : TN_WS_PRODUCER_REGS;
}

int tn_ws_register_split(int regs_per_sm, int block_threads, int consumer_groups, int producer_need, int *producer,
                         int *consumer, char *err, size_t cap) {
    if (consumer_groups < 2 || consumer_groups > 7 || block_threads != 128 * (consumer_groups + 1))
        REJECT("register sharing needs 2 to 7 consumer warp groups and a producer warp group (%d groups, %d "
               "threads)", consumer_groups, block_threads);
    if (regs_per_sm < 128 * 8 * (consumer_groups + 1))
        REJECT("a register file of %d cannot give %d warp groups 8 registers a thread", regs_per_sm,
               consumer_groups + 1);
    /* What each thread has at launch (__launch_bounds__(block, 1)): the file over the block, 8-register granules.
       The CTA's pool is that times the block, not the whole file: setmaxnreg.inc
       waits for registers the pool does not have, forever. */
    int launch = (regs_per_sm / block_threads) & ~7;
    launch = launch > 255 ? 248 : launch;
    if (producer_need < 24 || producer_need > 256 || producer_need % 8)
        REJECT("the producer's registers must be a multiple of 8 in [24, 256], not %d", producer_need);
    const int pool_per_lane = launch * (consumer_groups + 1); /* one thread of every warp group together */
    *producer = producer_need;
    *consumer = ((pool_per_lane - *producer) / consumer_groups) & ~7;
    if (*consumer > 256) *consumer = 256;
    if (*producer > launch || *consumer < launch)
        REJECT("register sharing would not help: %d registers a thread at launch, producer %d, consumers %d",
               launch, *producer, *consumer);
    if (*producer + consumer_groups * *consumer > pool_per_lane)
        REJECT("internal: split %d + %d x %d exceeds the CTA's %d x %d registers", *producer, consumer_groups,
               *consumer, launch, block_threads);
    return 1;
}

/* 1 if the row splits into `chunks` slots of whole vectors, each a multiple of 16 bytes of every input. */
static int ws_chunks_fit(const tn_analysis *a, int64_t cols, int vec, int chunks) {
    if ((cols / vec) % chunks) return 0;
    const int64_t ce = cols / chunks;
    for (int k = 0; k < a->num_stage_inputs; k++) {
        const int next = k + 1 < a->num_stage_inputs ? a->stage_elem_offset[k + 1] : a->buffer_elem_bytes;
        if ((ce * (next - a->stage_elem_offset[k])) % 16) return 0;
    }
    return 1;
}

/* Fills the tma-ws fields; 0 if they do not fit the device. stages 0: as many as fit. */
static int ws_shape(const tn_schedule_request *r, tn_plan_desc *p, int t, int groups, int chunks, int stages) {
    const tn_device_props *d = r->props;
    if (t < 1 || t > 128 || 128 % t || groups < 1 || groups > TN_WS_MAX_GROUPS ||
        !ws_chunks_fit(r->analysis, p->cols, p->vec, chunks))
        return 0;
    p->kind = TN_PLAN_TMA_WS;
    p->threads_per_row = t;
    p->consumer_groups = groups;
    p->rows_per_cta = groups * ws_rows_per_group(p);
    p->block_threads = 128 * groups + tn_plan_producer_threads(p);
    p->chunks = chunks;
    if (p->block_threads > d->max_threads_per_block) return 0;
    p->producer_regs = p->consumer_regs = 0;
    if (groups > 1) {
        char err[160];
        if (!tn_ws_register_split(d->regs_per_sm, p->block_threads, groups,
                                  tn_ws_producer_regs(r->analysis->num_stage_inputs), &p->producer_regs,
                                  &p->consumer_regs, err, sizeof err))
            return 0;
    }
    const int64_t per_stage = groups * (tn_ws_stage_bytes(r->analysis, p) + 16);
    const int64_t room = d->smem_per_block_optin - tn_ws_static_smem(r->analysis, p);
    if (stages == 0) stages = (int)min_i64(room / per_stage, TN_MAX_STAGES);
    if (stages < chunks || stages > TN_MAX_STAGES) return 0; /* a whole row group stays while its phases read it */
    p->stages = stages;
    if (tn_ws_dynamic_smem(r->analysis, p) > room) return 0;
    p->smem_bytes = (int)tn_ws_dynamic_smem(r->analysis, p);
    p->batch = (int)min_i64(ceil_div(p->cols / p->vec / chunks, t), 4);
    /* Persistent: one CTA per SM (or more where shared memory allows). */
    int64_t per_sm = min_i64(d->smem_per_sm / (p->smem_bytes + tn_ws_static_smem(r->analysis, p) + 1024),
                             d->max_threads_per_sm / p->block_threads);
    per_sm = per_sm < 1 ? 1 : per_sm;
    const int64_t row_groups = ceil_div(r->rows, ws_rows_per_group(p));
    p->grid = min_i64(row_groups, per_sm * d->sm_count);
    return 1;
}

/* Threads per row: about 4 vectors each per slot, from 8 (16 rows a group) to the whole group. */
static int ws_threads_per_row(int64_t vectors) {
    int t = 8;
    while (t < 128 && ceil_div(vectors, t) > 4) t *= 2;
    return t;
}

/* A forced tma-ws plan at any shape it can take: two consumer groups (register
   sharing) where each can double-buffer whole row groups; else one group whose
   ring streams the row in chunks, with as many chunks ahead as fit. */
static int ws_any_shape(const tn_schedule_request *r, tn_plan_desc *p, int t, char *err, size_t cap) {
    for (int groups = 2; groups >= 1; groups--)
        for (int chunks = 1; chunks <= 32; chunks *= 2)
            if (ws_shape(r, p, t, groups, chunks, 0) && p->stages >= 2 * chunks) return 1;
    int best = 0;
    double best_ahead = 0;
    for (int chunks = 2; chunks <= 32; chunks *= 2)
        if (ws_shape(r, p, t, 1, chunks, 0) && p->stages > chunks &&
            (double)(p->stages - chunks) / chunks > best_ahead + 1e-9)
            best = chunks, best_ahead = (double)(p->stages - chunks) / chunks;
    if (best && ws_shape(r, p, t, 1, best, 0)) return 1;
    REJECT("a row group of %lld bytes leaves no room in %d bytes of shared memory to stream ahead",
           (long long)(128 / t * r->cols * r->analysis->buffer_elem_bytes), r->props->smem_per_block_optin);
}

/* The scheduler's own tma-ws shape, where tune on the H200 shows tma-ws ahead
   (bf16, exp on ex2.approx, 2026-12-03): rows of 64 KiB and more of fusions
   that evaluate special functions per element in two or more phases, too long
   for two to fit in shared memory at once -- one consumer group streams each
   row through its slots in chunks while the producer fetches the next (softmax
   4096 x 65536: 304-308 us, tma 313, cluster 343; 512 x 65536: 49.3 against
   tma 49.8). Where two rows fit, the tma plan double-buffers whole rows with
   every thread computing (softmax 4096 x 32768: tma 140.8, tma-ws 149.2).
   Elsewhere it lost: layernorm 4096 x 32768 (159 against tma 149), rmsnorm
   32768 x 4096 (138 against register 129). Where the fusion's special-function
   values can be carried, the cluster plan holding row and values in registers
   beats it (softmax 4096 x 65536: cluster 283 us, tma-ws 305; 512 x 65536:
   41.8 against 49.3): tma-ws keeps the heavy fusions that cannot carry. */
static int ws_chosen_shape(const tn_schedule_request *r, tn_plan_desc *p, int t, char *err, size_t cap) {
    const tn_analysis *a = r->analysis;
    const tn_device_props *d = r->props;
    const int64_t row_bytes = r->cols * a->buffer_elem_bytes;
    if (row_bytes < TN_WS_MIN_ROW_BYTES)
        REJECT("rows of %lld bytes are under %d: the register and tma plans keep memory busier", (long long)row_bytes,
               TN_WS_MIN_ROW_BYTES);
    if (a->special_evals < 2)
        REJECT("%d special-function evaluations per element: too little work per byte for the consumer groups to pay",
               a->special_evals);
    if (tn_two_rows_fit(d, row_bytes))
        REJECT("two rows of %lld bytes fit in shared memory at once: the tma plan double-buffers them with every "
               "thread computing", (long long)row_bytes);
    if (ceil_div(r->rows, 128 / t) < (int64_t)TN_WS_MIN_GROUPS_PER_SM * d->sm_count)
        REJECT("%lld rows are under %d per SM: too few to keep consumer groups busy", (long long)r->rows,
               TN_WS_MIN_GROUPS_PER_SM);
    tn_plan_desc split = *p;
    char split_err[320];
    if (!avoided(r, TN_PLAN_CLUSTER) && tn_schedule_cluster(r, &split, 0, split_err, sizeof split_err))
        REJECT("the cluster plan holds the row over %d CTAs%s", split.cluster,
               split.shared_slice ? ", each slice in shared memory, several CTAs an SM"
               : split.carry      ? " with its special-function values carried in registers"
                                  : ", streamed at one CTA an SM");
    return ws_any_shape(r, p, t, err, cap);
}

int tn_schedule_tma_ws(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap) {
    if (!tn_tma_possible(r->analysis, r->cols, r->align, r->props, err, cap)) return 0;
    p->align_bytes = 16;
    const int t = ws_threads_per_row(r->cols / p->vec);
    if (!(forced ? ws_any_shape : ws_chosen_shape)(r, p, t, err, cap)) return 0;
    tn_why(p, "tma-ws: a producer warp%s keeps %d slots of %lld bytes full with bulk copies for each of %d consumer "
           "warp group%s; a group takes %d row%s of %d threads each%s", p->consumer_groups > 1 ? " group" : "",
           p->stages, (long long)tn_ws_stage_bytes(r->analysis, p), p->consumer_groups,
           p->consumer_groups > 1 ? "s" : "", ws_rows_per_group(p), ws_rows_per_group(p) > 1 ? "s" : "",
           p->threads_per_row, p->chunks > 1 ? ", streamed through its slots in chunks" : "");
    if (p->consumer_groups > 1)
        tn_why(p, "setmaxnreg: producer %d, consumers %d registers a thread", p->producer_regs, p->consumer_regs);
    return 1;
}

int tn_check_tma_ws(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap) {
    if (!tn_tma_possible(a, p->cols, p->align_bytes, d, err, cap)) return 0;
    if (p->align_bytes != 16) REJECT("plan: a tma-ws plan needs align_bytes 16, not %d", p->align_bytes);
    if (p->cluster != 1) REJECT("plan: a tma-ws plan has no cluster (cluster 1)");
    if (p->threads_per_row > 128 || p->consumer_groups < 1 || p->consumer_groups > TN_WS_MAX_GROUPS)
        REJECT("plan: a tma-ws plan has 1 to %d consumer groups (one producer warp each) and at most 128 threads per "
               "row", TN_WS_MAX_GROUPS);
    if (p->rows_per_cta != p->consumer_groups * ws_rows_per_group(p))
        REJECT("plan: rows_per_cta %d must be consumer_groups %d x %d rows a group", p->rows_per_cta,
               p->consumer_groups, ws_rows_per_group(p));
    if (!ws_chunks_fit(a, p->cols, p->vec, p->chunks))
        REJECT("plan: %d chunks do not split a row into whole vectors of 16-byte multiples", p->chunks);
    if (p->stages < p->chunks)
        REJECT("plan: %d stages cannot hold a row group of %d chunks", p->stages, p->chunks);
    int pr = 0, cr = 0;
    if (p->consumer_groups > 1 &&
        !tn_ws_register_split(d->regs_per_sm, p->block_threads, p->consumer_groups,
                              tn_ws_producer_regs(a->num_stage_inputs), &pr, &cr, err, cap))
        return 0;
    if (p->producer_regs != pr || p->consumer_regs != cr)
        REJECT("plan: producer_regs %d and consumer_regs %d are not the split of the register file (%d and %d)",
               p->producer_regs, p->consumer_regs, pr, cr);
    if (p->smem_bytes != tn_ws_dynamic_smem(a, p))
        REJECT("plan: smem_bytes %d is not what %d groups x %d stages need (%lld)", p->smem_bytes, p->consumer_groups,
               p->stages, (long long)tn_ws_dynamic_smem(a, p));
    if (p->smem_bytes + tn_ws_static_smem(a, p) > d->smem_per_block_optin)
        REJECT("plan: %lld bytes of shared memory, above the device's %d per CTA",
               (long long)(p->smem_bytes + tn_ws_static_smem(a, p)), d->smem_per_block_optin);
    return 1;
}

int tn_candidates_tma_ws(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap) {
    char err[256];
    if (!tn_tma_possible(r->analysis, base->cols, r->align, r->props, err, sizeof err)) return 0;
    int n = 0;
    const int64_t nv = base->cols / base->vec;
    for (int t = 8; t <= 128; t *= 2) {
        if (ceil_div(nv, t) > 128 || (t > 8 && t / 2 >= nv)) continue;
        for (int groups = 1; groups <= TN_WS_MAX_GROUPS; groups++)
            /* Chunks only where whole row groups leave no second slot. */
            for (int chunks = 1, whole_fits = 0; chunks <= 16 && !whole_fits; chunks *= 2) {
                /* As many slots as fit, and just two row groups' worth. */
                const int stage_counts[2] = {0, 2 * chunks};
                int most = -1;
                for (int i = 0; i < 2 && n < cap; i++) {
                    tn_plan_desc p = *base;
                    p.align_bytes = 16;
                    if (!ws_shape(r, &p, t, groups, chunks, stage_counts[i]) || p.stages == most) continue;
                    if (i == 0) most = p.stages, whole_fits = p.stages >= 2 * chunks;
                    out[n++] = p;
                }
            }
    }
    return n;
}
