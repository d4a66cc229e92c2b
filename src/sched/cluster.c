/* cluster: each row split over a cluster of CTAs, each slice in registers (or in shared memory). The cluster
   plan's schedule, check and tune candidates for the kind table in heuristics.c, and its shared memory
   (heuristics.h). */
#include "sched/sched_internal.h"

/* Static shared memory of a cluster CTA: the CTA's reduction scratch, the
   exchange's slots (2 sets of NRED x R x CL floats) and barriers (2 x NRED),
   rounded up as ptxas does beside an aligned dynamic array. */
static int64_t cluster_static_smem(const tn_analysis *a, const tn_plan_desc *p) {
    const int64_t bytes = tn_tma_static_smem(a, p) + 8LL * a->num_reductions * p->rows_per_cta * p->cluster +
                          16LL * a->num_reductions;
    return (bytes + 127) / 128 * 128;
}

/* Elements of a cluster CTA's slice (the last CTA's may be fewer; every
   CTA's stages and COL caches are sized for a whole slice). */
static int64_t slice_elems(const tn_plan_desc *p) {
    return tn_cluster_slice_vectors(p->cols / p->vec, p->cluster) * p->vec;
}

int64_t tn_cluster_col_offset(const tn_analysis *a, const tn_plan_desc *p) {
    if (!p->stages || p->cluster < 1) return 0;
    return ((int64_t)p->stages * (slice_elems(p) * a->buffer_elem_bytes + 8) + 15) / 16 * 16;
}

int64_t tn_cluster_dynamic_smem(const tn_analysis *a, const tn_plan_desc *p) {
    if (p->cluster < 1) return 0;
    if (p->col_cache) return tn_cluster_col_offset(a, p) + slice_elems(p) * a->col_elem_bytes;
    return p->stages ? (int64_t)p->stages * (slice_elems(p) * a->buffer_elem_bytes + 8) : 0;
}

void tn_cluster_share_slice(const tn_analysis *a, tn_plan_desc *p) {
    p->stages = 1;
    p->shared_slice = 1;
    p->carry = 0; /* values recomputed from the slice, as the tma plans do: registers stay few */
    p->prefetch = 0;
    p->ctas_per_sm = 0;
    p->smem_bytes = (int)min_i64(tn_cluster_dynamic_smem(a, p), 0x7fffffff);
    p->grid = p->rows * p->cluster;
}

/* CTAs of a cluster plan with stages an SM's shared memory holds (1 KiB of it
   the system's per CTA). */
static int64_t stage_ctas_an_sm(const tn_schedule_request *r, const tn_plan_desc *p) {
    return r->props->smem_per_sm / (p->smem_bytes + 1024 + cluster_static_smem(r->analysis, p));
}

/* CTAs of the plan's shape an SM holds by the slice's registers, its threads
   and (with stages) its shared memory. */
static int64_t slice_ctas_an_sm(const tn_schedule_request *r, const tn_plan_desc *p) {
    const int64_t by_regs = ctas_an_sm(r->props, slice_regs(r, p->vec, p->batch), p->block_threads);
    return p->smem_bytes ? min_i64(by_regs, stage_ctas_an_sm(r, p)) : by_regs;
}

/* A persistent grid for a cluster plan: as many clusters as the SMs hold at
   once by registers and threads (on a GPU, the plan takes the driver's count
   instead, which knows how clusters pack into GPCs), at most one a row; each
   loops over rows, so the cluster barrier at a CTA's start comes once per CTA,
   not once per row (tune, bf16: rmsnorm 4096 x 65536 281 us against 374 at a
   cluster a row; 4096 x 131072 624 against 752). */
static int64_t cluster_grid(const tn_schedule_request *r, const tn_plan_desc *p) {
    const tn_device_props *d = r->props;
    int64_t per_sm = p->ctas_per_sm ? p->ctas_per_sm : slice_ctas_an_sm(r, p);
    per_sm = per_sm < 1 ? 1 : per_sm;
    int64_t clusters = per_sm * d->sm_count / p->cluster;
    clusters = clusters < 1 ? 1 : clusters;
    return min_i64(min_i64(r->rows, clusters), 0x7fffffff / p->cluster) * p->cluster;
}

/* CTAs of a cluster plan an SM holds by the slice's registers, for the
   compiler's launch bounds, where the fusion evaluates special functions in
   two or more phases: tune, bf16, softmax 4096 x 131072 over 8 CTAs of
   128 x 16: 604 us at 3 CTAs an SM against 742 at 2 (512 x 131072: 82
   against 100); rmsnorm, whose phases are short, lost (592 against 559).
   Few rows take the bound whatever the fusion: more clusters at once
   (rmsnorm 64 x 131072 over 8 CTAs of 128 x 16: 13.6 us at 3 CTAs an SM,
   15.2 where ptxas took 247 registers). 0 (one, ptxas chooses) otherwise and
   where that leaves under TN_CLUSTER_MIN_REGS a thread (ptxas spilled around
   the exchange's wait at 40, aiming at three 512-thread CTAs). Told one CTA
   an SM, ptxas spent 255 registers on softmax 4096 x 131072 (8 CTAs of
   128 x 16) and the driver ran 30 clusters, not 49; bounded to three it took
   168 and no spills. The
   bound also leaves room for one vector of each COL input, live in the
   output phase (layernorm's weight and bias: 8 bytes spilled at 168). */
static int bound_ctas(const tn_schedule_request *r, const tn_plan_desc *p) {
    const int64_t per_sm = slice_ctas_an_sm(r, p);
    if (per_sm < 2) return 0;
    const int cap = regs_cap(r->props, (int)per_sm * p->block_threads);
    const int col_words = (int)ceil_div((int64_t)p->vec * r->analysis->col_elem_bytes, 4);
    if (cap < TN_CLUSTER_MIN_REGS || cap < slice_regs(r, p->vec, p->batch) + col_words) return 0;
    return (int)per_sm;
}

static int cluster_ctas_per_sm(const tn_schedule_request *r, const tn_plan_desc *p) {
    return r->analysis->special_evals >= 2 ? bound_ctas(r, p) : 0;
}

/* Fills the cluster fields for cl CTAs a row, t threads a CTA, one row each; 0
   if some CTA would get no vector or, held in registers, the slice does not
   fit. A row whose vectors cl does not divide leaves the last CTA a shorter
   slice (bf16 rows of 8 x an odd number of elements, 65544 or 262136, stay on
   chip like their powers of two). */
static int cluster_layout(const tn_schedule_request *r, tn_plan_desc *p, int cl, int t, int slice_in_regs) {
    const int64_t nv = p->cols / p->vec, nvl = tn_cluster_slice_vectors(nv, cl);
    if (cl > tn_max_cluster(r->props->cc_major) || (r->max_cluster && cl > r->max_cluster) ||
        !(p->peel ? tn_cluster_peeled_slices_fit(p->cols, p->vec, cl) : tn_cluster_slices_fit(nv, cl)) || t < 32 ||
        t > r->props->max_threads_per_block)
        return 0;
    const int batch = (int)ceil_div(nvl, t);
    if (batch > 64 || (t > 32 && t / 2 >= nvl) ||
        (slice_in_regs && slice_regs(r, p->vec, batch) > regs_cap(r->props, t)))
        return 0;
    p->kind = TN_PLAN_CLUSTER;
    p->cluster = cl;
    p->threads_per_row = p->block_threads = t;
    p->rows_per_cta = 1;
    p->batch = batch;
    p->ctas_per_sm = cluster_ctas_per_sm(r, p);
    p->grid = cluster_grid(r, p);
    return 1;
}

static int cluster_shape(const tn_schedule_request *r, tn_plan_desc *p, int cl, int t) {
    return cluster_layout(r, p, cl, t, 1);
}

/* CTAs an SM that rows over clusters of q's shape need to all run at once. */
static int64_t cluster_need(const tn_schedule_request *r, const tn_plan_desc *q) {
    return ceil_div(r->rows * q->cluster, r->props->sm_count);
}

/* Whether rows over clusters of q's shape all run at once: at most `most` CTAs
   an SM, and, where they need two or more, one CTA an SM to spare under what
   the registers (in whole 8-register steps, as allocated) and shared memory
   allow, as clusters pack into GPCs. The
   driver may still place fewer (tune, bf16: rmsnorm 64 x 65536 over 4 CTAs of
   128 x 16 at 3 an SM: 62 clusters, 8.6 us; 7.35 over 2): the plan is built
   again then (tn_schedule_short_clusters, from api/plan.c's clusters_short). */
static int clusters_all_run(const tn_schedule_request *r, const tn_plan_desc *q, int64_t most) {
    const int64_t need = cluster_need(r, q);
    return need <= most && (need < 2 || (need + 1 <= slice_ctas_an_sm(r, q) &&
                                         regs_cap(r->props, (int)(need + 1) * q->block_threads) >=
                                             slice_regs(r, q->vec, q->batch)));
}

/* Threads for a slice at most `batch` vectors a thread with `per_sm` CTAs'
   registers on an SM: the fewest from 128 up (more vectors a thread in
   flight); 0 (p untouched) if none fits. */
static int cluster_fit(const tn_schedule_request *r, tn_plan_desc *p, int cl, int batch, int per_sm) {
    const int64_t nvl = tn_cluster_slice_vectors(p->cols / p->vec, cl);
    for (int t = 128; t <= 1024; t *= 2) {
        tn_plan_desc q = *p;
        if (ceil_div(nvl, t) <= batch && cluster_shape(r, &q, cl, t) &&
            slice_ctas_an_sm(r, &q) >= per_sm) {
            /* Half the threads, past `batch`, where they divide the slice and these leave its last vector to
               some (ragged). */
            tn_plan_desc half = *p;
            if (t >= 256 && halve_ragged(nvl, t) && cluster_shape(r, &half, cl, t / 2) &&
                slice_ctas_an_sm(r, &half) >= per_sm)
                q = half;
            *p = q;
            return 1;
        }
    }
    return 0;
}

/* The L2 prefetch copies whole 16-byte units: every ROW input's slice starts
   16-byte aligned and is a multiple of 16 bytes long. */
static int cluster_prefetch_ok(const tn_plan_desc *p, const tn_analysis *a) {
    return p->align_bytes >= 16 && p->vec * a->min_row_elem_size >= 16;
}

/* Vectors a cluster thread may keep: `most`, shared among the ROW inputs a
   thread loads, at least TN_REG_BATCH_TARGET. */
static int slice_batch(const tn_analysis *a, int most) {
    const int inputs = a->num_stage_inputs > 1 ? a->num_stage_inputs : 1;
    return most / inputs > TN_REG_BATCH_TARGET ? most / inputs : TN_REG_BATCH_TARGET;
}

/* The bytes of a row that the SMs `ctas` CTAs a row leave idle would take over: the row's bytes moved (its ROW
   inputs read and outputs written) times the idle share of the SMs (many_rows_spread, balance_many_rows). */
static int64_t idle_bytes_a_row(const tn_schedule_request *r, int64_t ctas) {
    const int64_t sms = r->props->sm_count, idle = sms - r->rows * ctas;
    return idle > 0 ? r->cols * r->analysis->row_elem_bytes * idle / sms : 0;
}

/* Why a cluster plan is compiled for its CTAs an SM (p->ctas_per_sm, if set). */
static void why_ctas_per_sm(tn_plan_desc *p, const tn_analysis *a) {
    if (p->ctas_per_sm && a->special_evals >= 2)
        tn_why(p, "compiled for %d CTAs an SM: special functions in %d phases keep each CTA computing long, more CTAs "
               "overlap one's loads with another's work", p->ctas_per_sm, a->special_evals);
    else if (p->ctas_per_sm)
        tn_why(p, "compiled for %d CTAs an SM: few rows, so more clusters at once", p->ctas_per_sm);
}

/* Clusters of c CTAs the driver places at per_sm CTAs an SM: clusters pack into GPCs, and those of 4 or more
   leave SMs idle where a GPC's do not divide by them (H100, bench/probes/gpc.cu, 2026-12-06: clusters of 4
   and 8 at 1-3 CTAs an SM on 120 of the 132 SMs, 45 clusters of 8 at 3; 4 an SM 62 of 8; clusters of 2 on
   every SM). An estimate, on the safe side, for a rule that needs every cluster at once; on a GPU the plan
   build takes the driver's count and plans again where it is short. */
static int64_t gpc_placed_clusters(const tn_schedule_request *r, int c, int64_t per_sm) {
    const int64_t sms = r->props->sm_count;
    return per_sm * (c > 2 ? sms * TN_CLUSTER_GPC_SM_SHARE_NUM / TN_CLUSTER_GPC_SM_SHARE_DEN : sms) / c;
}

/* Compiles q for the fewest CTAs an SM at which the driver places every row's cluster at once
   (gpc_placed_clusters), at most `most`, within `regs` registers a thread; 0 (q's CTAs an SM untouched) where
   none does. */
static int place_every_cluster(const tn_schedule_request *r, tn_plan_desc *q, int64_t most, int regs) {
    int64_t k = cluster_need(r, q);
    while (k <= most && gpc_placed_clusters(r, q->cluster, k) < r->rows) k++;
    if (k > most || regs_cap(r->props, (int)k * q->block_threads) < regs) return 0;
    q->ctas_per_sm = k >= 2 ? (int)k : 0;
    q->grid = cluster_grid(r, q);
    return 1;
}

/* Rows over a quarter of the SMs (up to half) of a fusion of one reduction level without special functions in
   two phases, in 16-byte vectors: the cluster that leaves the busiest SM the least of the rows, ceil(rows x c /
   SMs) CTAs of 1/c row each, at TN_REG_BATCH_TARGET vectors a thread, where every cluster runs at once (by
   gpc_placed_clusters, compiled for the CTAs an SM that needs); at least p's cl, which a larger cluster
   replaces only where it lowers that share (34-49 rows over 8: 3/8 of a row on the busiest SM against 1/2
   over 2; from 50 rows 4/8 again), and only where the bytes the SMs p leaves idle would take over (the row's
   bytes moved times their share) pass TN_CLUSTER_SPREAD_IDLE_BYTES, as in many_rows_spread. A/B on the H100,
   bf16 unless said, clusters of 8 at 4 vectors a thread against the clusters of 2 the scheduler took
   (bench/ab/few-c8, 2026-12-06), KiB taken over in brackets: add_rmsnorm 34 x 32768 (124) 6.22 us against
   6.81, 40 x 32768 (101) 7.09 against 7.30, 40 x 65536 (202) 10.48 against 12.85, 48 x 49152 (105) 9.92
   against 10.12, f32 40 x 32768 (202) 11.10 against 12.36; rmsnorm 40 x 65536 (101) 6.72 against 7.31;
   lost at rmsnorm 48 x 49152 (52) 6.39 against 6.00, where the share does not fall (64 rows: rmsnorm 64 x
   65536 9.45 against 7.92, add_rmsnorm 64 x 81920 22.43 against 17.85; 50 x 81920 17.10 against 16.10), and
   for fusions of two reduction levels or two special-function phases, whose every exchange over 8 CTAs costs
   more (layernorm 40 x 65536 9.25 against 8.16, softmax 40 x 65536 7.39 against 6.79). Returns the cluster
   size, cl if unchanged. */
static int balance_many_rows(const tn_schedule_request *r, tn_plan_desc *p, int cl) {
    const tn_analysis *a = r->analysis;
    const int64_t sms = r->props->sm_count, row_bytes = r->cols * a->buffer_elem_bytes;
    if (r->rows * 4 <= sms || a->num_levels != 1 || a->special_evals >= 2 || p->vec * a->min_row_elem_size < 16 ||
        idle_bytes_a_row(r, cl) <= TN_CLUSTER_SPREAD_IDLE_BYTES)
        return cl;
    int best = cl;
    for (int c = 2 * cl; c <= TN_MAX_CLUSTER; c *= 2) {
        tn_plan_desc q = *p;
        /* The busiest SM's share of a row: ceil(rows c / SMs) / c, compared across c without division. */
        if (row_bytes / c < TN_CLUSTER_MIN_SLICE ||
            ceil_div(r->rows * c, sms) * best >= ceil_div(r->rows * best, sms) * c ||
            !cluster_fit(r, &q, c, TN_REG_BATCH_TARGET, 1))
            continue;
        /* Within the slice's registers and a COL vector's, live in the output phase, as bound_ctas counts. */
        const int col_words = (int)ceil_div((int64_t)q.vec * a->col_elem_bytes, 4);
        if (!place_every_cluster(r, &q, slice_ctas_an_sm(r, &q), slice_regs(r, q.vec, q.batch) + col_words))
            continue;
        *p = q;
        best = c;
    }
    if (best != cl)
        tn_why(p, "clusters of %d, not %d: the busiest SM takes %lld/%d of a row, not %lld/%d", best, cl,
               (long long)ceil_div(r->rows * best, sms), best, (long long)ceil_div(r->rows * cl, sms), cl);
    return best;
}

/* Few rows over a quarter of the SMs (up to half) of a fusion that carries its special-function values: over
   clusters of TN_MAX_CLUSTER CTAs of TN_CLUSTER_HEAVY_FEW_THREADS threads, every row's cluster at once (at the fewest
   CTAs an SM that places them: 4-5 on an H100). Each exp phase and each of the two reductions then runs in 4 warps
   a CTA, and an SM's 3-5 CTAs overlap one's loads with another's exps. Only slices that the CTAs' threads divide
   (a ragged ninth vector at 65544 columns spilled at 5 CTAs an SM), and not when the plan build asks for wider
   slices (wide_slices: the driver placed too few clusters). Bounded within the slice's registers
   without the exchange's (ptxas fit 8 carried vectors at 5 CTAs an SM in 95 registers, no spills). Saved plans against the clusters of 2-4
   that cluster_pick took (H100, bf16 softmax, bench/ab/few-c8-heavy-s25, 2026-12-07-h100-s25-ab-few-c8-heavy.log):
   64 x 65536 7.57 us against 8.41; 64 x 49152 5.95 against 6.76; 40 x 65536 5.70 against 6.09; 50 x 81920 7.58
   against 8.02; 56 x 65536 1.03 times as fast; 48 x 65536 6.42 against 6.36 (60 x 98304 and 64 x 81920, 1.03
   there, stay with cluster_pick's: 12 and 10 vectors a thread do not fit 5 CTAs an SM).
   (Clusters of 8 at 4 vectors a thread, 256 threads, lost at 40 x 65536: 7.39 against 6.79, see
   balance_many_rows; 16 CTAs of 128 at 64 x 131072 too: 15.10 against 13.59.) Returns the cluster size, cl
   where p is unchanged. */
static int heavy_few_rows_over_eight(const tn_schedule_request *r, tn_plan_desc *p, int cl) {
    const tn_analysis *a = r->analysis;
    tn_plan_desc q = *p;
    const int64_t nv = p->cols / p->vec;
    if (cl >= TN_MAX_CLUSTER || !a->num_carried || r->rows * 4 <= r->props->sm_count || r->wide_slices ||
        p->vec * a->min_row_elem_size < 16 || nv % ((int64_t)TN_MAX_CLUSTER * TN_CLUSTER_HEAVY_FEW_THREADS) ||
        !cluster_shape(r, &q, TN_MAX_CLUSTER, TN_CLUSTER_HEAVY_FEW_THREADS) ||
        !place_every_cluster(r, &q, TN_CLUSTER_MAX_CTAS_AN_SM + 1, row_regs(r, q.vec, q.batch)) ||
        !tn_carry_fits(r, &q))
        return cl;
    *p = q;
    tn_why(p, "heavy few rows: clusters of %d, every cluster at once at %d CTAs an SM", TN_MAX_CLUSTER, q.ctas_per_sm);
    return TN_MAX_CLUSTER;
}

/* Whether few rows go on to clusters of cl CTAs: slices of TN_CLUSTER_MIN_SLICE
   or more; past the portable 8 (sm_90's non-portable 16), slices of
   TN_CLUSTER_NONPORTABLE_MIN_SLICE and one CTA an SM for every row's cluster
   (a cluster of 16 needs 16 SMs of one GPC; the plan build takes clusters of 8
   where the driver places too few). Heavy fusions (special functions in two
   or more phases) double on to 16 at slices of
   TN_CLUSTER_NONPORTABLE_HEAVY_MIN_SLICE and several CTAs an SM, as to 8:
   the same warps in CTAs of half the threads (tune, H100,
   bf16 softmax: 16 x 131072 5.58 us over 16 CTAs of 256 x 4 against 6.24
   over 8 of 256 x 8; 33 x 98304 6.51 over 16 of 128 x 6 against 7.10 over 8
   of 256 x 6; 33 x 131072 8.55-8.63 over 16, 9.1 over 8, the driver placing
   every row's cluster). */
static int few_rows_double(const tn_schedule_request *r, int cl, int64_t row_bytes, int heavy) {
    if (cl <= TN_MAX_CLUSTER) return row_bytes / cl >= TN_CLUSTER_MIN_SLICE;
    if (heavy) return row_bytes / cl >= TN_CLUSTER_NONPORTABLE_HEAVY_MIN_SLICE;
    return row_bytes / cl >= TN_CLUSTER_NONPORTABLE_MIN_SLICE && r->rows * cl <= r->props->sm_count;
}

/* The cluster for slices of at most `batch` vectors a thread: the smallest
   cluster, at the fewest threads from 128, that leaves 2 CTAs an SM where it
   has more than 2 CTAs or the fusion is heavy (softmax 64 x 131072: 20.5 us
   over 4 CTAs of 256 x 16 at one an SM, the driver ran 30 clusters; 14.8 over
   8 of 128 x 16 at three; 512 x 65536: 51.2 over 2 of 256 x 16 at one an SM,
   41.8 over 4 of 128 x 16 at three: one CTA's loads overlap another's exps);
   unless `strict`, then at one CTA an SM for heavy fusions and few rows, then
   any slice that fits at all; doubled for few rows while every cluster runs
   at once (clusters_all_run, at most TN_CLUSTER_MAX_CTAS_AN_SM CTAs an SM) and
   slices stay TN_CLUSTER_MIN_SLICE (tune, bf16: rmsnorm 33 x 81920 6.48 us
   over 8 CTAs of 128 x 10, 6.65 over 4 of 128 x 20; 33 x 49152 4.40 over 8,
   the best), one CTA an SM where rows are over a quarter of the SMs (rmsnorm
   64 x 65536 and layernorm 64 x 81920 stay at 2, 7.35 and 9.85 us, the
   best). Returns the cluster size, 0 if
   none (p untouched). */
static int cluster_pick(const tn_schedule_request *r, tn_plan_desc *p, int batch, int heavy, int few, int strict) {
    const int64_t row_bytes = r->cols * r->analysis->buffer_elem_bytes;
    int cl = 0;
    for (int c = 2; c <= TN_MAX_CLUSTER && !cl; c *= 2)
        if (cluster_fit(r, p, c, batch, c == 2 && !heavy ? 1 : 2)) cl = c;
    for (int c = 2; c <= TN_MAX_CLUSTER && !cl && !strict && (heavy || few); c *= 2)
        if (cluster_fit(r, p, c, batch, 1)) cl = c;
    for (int c = 2; c <= TN_MAX_CLUSTER && !cl && !strict; c *= 2)
        if (cluster_fit(r, p, c, 64, 1)) cl = c, batch = 64;
    if (!cl) return 0;
    while (few && 2 * cl <= tn_max_cluster(r->props->cc_major) && few_rows_double(r, 2 * cl, row_bytes, heavy)) {
        tn_plan_desc q = *p;
        /* Over a quarter of the SMs in rows, one CTA an SM at most (the driver placed 62 of 64 rows' clusters of
           4 or 8 at 2-5 an SM in rmsnorm's and layernorm's 64-row shapes: rmsnorm 64 x 65536 8.1-8.6 us, 7.35
           over 2; softmax 64 x 65536's 8 x 128 x 8 got all 64). */
        const int64_t most = r->rows * 4 <= r->props->sm_count ? TN_CLUSTER_MAX_CTAS_AN_SM : 1;
        if (!cluster_fit(r, &q, 2 * cl, batch, 1) || !clusters_all_run(r, &q, most)) break;
        *p = q;
        cl *= 2;
    }
    /* Every row's cluster on SMs of its own: more warps of fewer 16-byte vectors each (TN_CLUSTER_ONE_WAVE_BATCH,
       shared among the ROW inputs a thread loads; narrower accesses, as measured, keep theirs). */
    const int one_wave_batch = slice_batch(r->analysis, TN_CLUSTER_ONE_WAVE_BATCH);
    if (few && r->rows * cl <= r->props->sm_count && p->batch > one_wave_batch &&
        p->vec * r->analysis->min_row_elem_size >= 16) {
        tn_plan_desc q = *p;
        if (cluster_fit(r, &q, cl, one_wave_batch, 1)) *p = q;
    }
    if (few && heavy) cl = heavy_few_rows_over_eight(r, p, cl);
    if (few && !p->ctas_per_sm && (p->ctas_per_sm = bound_ctas(r, p))) p->grid = cluster_grid(r, p);
    return few ? balance_many_rows(r, p, cl) : cl;
}

/* Whether rows over a quarter of the SMs that one CTA holds spread over clusters: where the bytes that the
   SMs one CTA a row leaves idle would take over (the row's bytes moved, times the idle share of the SMs)
   exceed TN_CLUSTER_SPREAD_IDLE_BYTES, or the fusion's heavy rows would otherwise take clusters at 2 CTAs an
   SM (heavy_waves: softmax 57 x 24576 3.90 us over 4 CTAs of 128, 4.19 over 2 of 256; f32 40 x 12288 3.24,
   3.45). A/B on the H100, one CTA of 512 a row (or 256 where 512 leave a ragged slice) against the clusters,
   bf16 (bench/ab/few-register and spread-many-94cc14d, 2026-12-06), in KiB taken over: rmsnorm 34 x 10240
   (30) 2.02 us against 2.43, 50 x 12288 (30) 2.22 against 2.72, 57 x 24576 (54) 3.45 against 4.04, 64 x 20480
   (41) 3.28 against 3.65; softmax 50 x 12288 2.56 against 3.07, 64 x 16384 3.16 against 3.54, 40 x 16384 (45)
   2.91 against 3.09; add_rmsnorm 64 x 12288 (49) 3.71 against 4.70, 64 x 16384 (66) 4.41 against 4.90;
   spread: add_rmsnorm 48 x 14336 (71) 3.62 against 3.94, 40 x 16384 (89) 3.54 against 3.82, 64 x 20480 (82)
   even; against the rule, softmax 40 x 20480 (56) 3.35 over clusters, 3.44 in one CTA. Fusions of two or more
   levels without special functions in two phases (layernorm) from TN_CLUSTER_SPREAD_IDLE_BYTES_LEVELS: in one
   CTA at 34 x 10240 (30) 2.18 against 2.72, 48 x 14336 (36) 2.71 against 3.17, 64 x 20480 (41) 4.22 against
   4.45; over clusters at 40 x 16384 (45) 3.09 against 3.23, 57 x 24576 (54) 4.18 against 4.25-4.35, 40 x
   20480 (56) 3.41 against 3.89. On the H200 (tune, 2026-12-04): rmsnorm 64 x 16384 3.13 in one CTA, 3.39;
   softmax 64 x 16384 3.68, 3.64; add_rmsnorm 64 x 32768 (132) 7.33 over clusters, 8.38. */
static int many_rows_spread(const tn_schedule_request *r, int heavy_waves) {
    const tn_analysis *a = r->analysis;
    const int64_t least = a->num_levels >= 2 && a->special_evals < 2 ? TN_CLUSTER_SPREAD_IDLE_BYTES_LEVELS
                                                                       : TN_CLUSTER_SPREAD_IDLE_BYTES;
    return heavy_waves || idle_bytes_a_row(r, 1) > least;
}

/* Rows one CTA's registers hold, but fewer than half the SMs: spread
   over up to 8 CTAs each (slices of over 2 KiB: rows over
   TN_CLUSTER_SHORT_ROW_BYTES), every CTA at once, at most 4 an SM, and, for
   heavy fusions, 2 or more an SM where the cluster has more than 2 CTAs (as
   cluster_pick asks); at the fewest threads from 128 that keep at most two
   vectors each for fusions of one reduction, at most TN_REG_BATCH_LONG for
   those of more, whose every reduction waits on every warp. tune on the H200
   (bf16, 2026-12-04), against the register plan's one CTA a row: rmsnorm 1 x
   16384 1.49 us over 8 CTAs of 128 x 2 against 2.21; 8 x 16384 1.75 against
   2.47; 33 x 24576 3.04 over 8 of 256 x 2 against 3.87 (3.25 at 128 x 3);
   layernorm 8 x 16384 2.29 against 3.07; 33 x 24576 3.73 over 8 of 128 x 3
   (4.23 at 256 x 2); softmax 1 x 16384 1.91 and 33 x 24576 3.43 (best
   candidates 1.91, 3.36); rmsnorm 1 x 12288 1.57 over 8 slices of 3 KiB,
   1.61 over 4. Rows of 16 KiB or less stay in one CTA (rmsnorm 1 x 8192 1.46
   us, 1.41 over 4 CTAs; 64 x 8192 2.27, 2.39). Rows over a quarter of the
   SMs (up to half: more, and the register plan has most SMs busy already) take
   slices of TN_CLUSTER_MIN_SLICE or more at most 2 CTAs an SM (the caller asks
   many_rows_spread first). 0 (p untouched) where no cluster splits the row's
   vectors under those limits. */
static int spread_short_rows(const tn_schedule_request *r, tn_plan_desc *p) {
    const tn_device_props *d = r->props;
    const tn_analysis *a = r->analysis;
    const int64_t nv = r->cols / p->vec, row_bytes = r->cols * a->buffer_elem_bytes;
    const int most = a->num_levels > 1 ? TN_REG_BATCH_LONG : 2;
    /* Over a quarter of the SMs in rows: every SM already has most of a row, so
       slices of at least TN_CLUSTER_MIN_SLICE, at most 2 CTAs an SM. */
    const int many = r->rows * 4 > d->sm_count;
    for (int cl = TN_MAX_CLUSTER; cl >= 2; cl /= 2) {
        if (many && row_bytes / cl < TN_CLUSTER_MIN_SLICE) continue;
        int t = 128;
        while (t < TN_REG_WIDEN_MAX && ceil_div(tn_cluster_slice_vectors(nv, cl), t) > most) t *= 2;
        tn_plan_desc q = *p;
        if (!cluster_shape(r, &q, cl, t)) continue;
        if (!clusters_all_run(r, &q, many ? 2 : TN_CLUSTER_MAX_CTAS_AN_SM) ||
            (a->special_evals >= 2 && cl > 2 && slice_ctas_an_sm(r, &q) < 2))
            continue;
        *p = q;
        cl = balance_many_rows(r, p, cl);
        tn_why(p, "cluster: %lld rows of %lld bytes leave SMs idle in one CTA a row: each split over %d CTAs of %d "
               "threads, %d vectors each held in registers; reductions meet through distributed shared memory",
               (long long)r->rows, (long long)row_bytes, cl, p->threads_per_row, p->batch);
        why_ctas_per_sm(p, a);
        tn_choose_carry(r, p);
        return 1;
    }
    return 0;
}

static void why_persistent_clusters(tn_plan_desc *p) {
    if (tn_plan_grid_loops(p))
        tn_why(p, "%lld clusters loop over the rows (on a GPU, as many as the driver says run at once)",
               (long long)(p->grid / p->cluster));
    else
        tn_why(p, "a cluster a row, %lld clusters at once", (long long)(p->grid / p->cluster));
}

static void why_streamed(tn_plan_desc *p) {
    if (p->stages == 1)
        tn_why(p, "each cluster's next row streamed into one stage of shared memory while it reduces this one");
    else if (p->stages > 1)
        tn_why(p, "each cluster's next rows streamed into %d stages of shared memory while it reduces this one",
               p->stages);
}

/* Cluster plan q after its shared memory changed (stages, col_cache): its
   smem_bytes, its CTAs an SM capped by what shared memory holds (one: left to
   ptxas), its grid made again; 0 where it does not fit or a cluster would take
   one row (nothing to stream, nothing to keep across rows). */
static int cluster_refit(const tn_schedule_request *r, tn_plan_desc *q) {
    q->smem_bytes = (int)min_i64(tn_cluster_dynamic_smem(r->analysis, q), 0x7fffffff);
    if (q->smem_bytes + cluster_static_smem(r->analysis, q) > r->props->smem_per_block_optin) return 0;
    if (q->ctas_per_sm > slice_ctas_an_sm(r, q)) q->ctas_per_sm = (int)slice_ctas_an_sm(r, q);
    if (q->ctas_per_sm == 1) q->ctas_per_sm = 0;
    q->grid = cluster_grid(r, q);
    return r->rows > q->grid / q->cluster;
}

/* q: cluster plan p with its slices streamed through `stages` stages of
   shared memory (cluster_refit); 0 where that does not fit or loop. */
static int cluster_staged(const tn_schedule_request *r, const tn_plan_desc *p, int stages, tn_plan_desc *q) {
    *q = *p;
    q->stages = stages;
    return cluster_refit(r, q);
}

/* q with its COL slices cached in shared memory (col_cache, cluster_refit);
   0 (q untouched) where the fusion has no COL input, q's slices stay in shared
   memory, or the cache does not fit or q would not loop over rows. */
static int cluster_col_cached(const tn_schedule_request *r, tn_plan_desc *q) {
    tn_plan_desc c = *q;
    c.col_cache = 1;
    if (!r->analysis->col_elem_bytes || q->shared_slice || !cluster_refit(r, &c)) return 0;
    *q = c;
    return 1;
}

/* Clusters that loop over rows keep each CTA's slices of the COL inputs
   (weight, bias) in shared memory, loaded once (col_cache), instead of reading
   them again from L2 for every row: layernorm's weight and bias are as many
   bytes again as a bf16 row. tune on the H200 (bf16, 2026-12-04), the same
   plan with and without: layernorm 4096 x 65536 over 2 CTAs of 256 x 16, one
   stage, 281.9 us against 309.0; 16384 x 65536 1098.8 against 1230.7 (every
   candidate faster than the scheduler's then cached its COL slices); over 2
   CTAs of 256 x 8 at 2 an SM (pair_for_levels), 4096 x 32768 142.0 against
   145.4, 16384 x 32768 551.8 against 562.0. p untouched where the fusion has
   no COL input, the cache does not fit or a cluster takes one row
   (cluster_col_cached). */
static void why_col_cached(tn_plan_desc *p) {
    tn_why(p, "each CTA's slices of the COL inputs loaded once into shared memory, read there for every row");
}

static void cache_cols(const tn_schedule_request *r, tn_plan_desc *p) {
    if (cluster_col_cached(r, p)) why_col_cached(p);
}

/* Rows of a fusion of two or more reduction levels without special functions
   in two phases, whose registers leave the register plan one CTA an SM: each
   level's reduction idles the SM's only CTA. Split over a cluster of 2 whose
   clusters loop over the rows, streamed: the next two rows' slices in flight
   in two stages of shared memory while this one reduces, the COL slices
   cached (cache_cols), one CTA an SM of the fewest threads from 128 that keep
   at most TN_REG_BATCH_TARGET vectors each (every level's reduction waits on
   every warp: more warps of fewer vectors each shorten that wait). tune on
   the H200 (bf16 layernorm, 2026-12-04, the COL slices cached in all):
   4096 x 32768 135.6 us over 2 CTAs of 512 x 4 against 142.0 for the pair
   below, 148.5 (screened) with one stage, 149.6 (screened) at 256 x 8 with
   two; 16384 x 32768 531.7 against 551.8. Where the stages do not fit, the
   pair: at most TN_REG_BATCH_LONG vectors a thread, compiled for 2 CTAs an SM,
   one CTA's loads overlapping the other's reductions (against the register
   plan's 256 x 16 at one: 4096 x 32768 145.4 us against 152.6, 16384 x 32768
   562.2 against 591.3, twice measured; rmsnorm, one level, stays: 545.5
   against 531.7). Rows of 16-bit elements only: ptxas keeps them packed and
   widened (254 registers for layernorm's 256 x 16), f32 ones once (102: two
   CTAs an SM already; f32 4096 x 16384 139.2 us over the cluster, 134.1 in
   the register plan). 0 (p untouched) where neither fits. */
static int stream_for_levels(const tn_schedule_request *r, tn_plan_desc *p) {
    tn_plan_desc q = *p, s;
    if (!cluster_fit(r, &q, 2, TN_REG_BATCH_TARGET, 1) || !cluster_prefetch_ok(&q, r->analysis) ||
        !cluster_staged(r, &q, 2, &s) || !cluster_col_cached(r, &s) || s.ctas_per_sm > 1 ||
        slice_ctas_an_sm(r, &s) != 1)
        return 0;
    *p = s;
    tn_why(p, "cluster: %d reduction levels would each idle the register plan's one CTA an SM: each row split over 2 "
           "CTAs of %d threads, %d vectors each, one CTA an SM", r->analysis->num_levels, p->threads_per_row, p->batch);
    why_persistent_clusters(p);
    why_streamed(p);
    why_col_cached(p);
    return 1;
}

static int pair_for_levels(const tn_schedule_request *r, const tn_plan_desc *reg, tn_plan_desc *p) {
    const tn_analysis *a = r->analysis;
    if (a->num_levels < 2 || a->special_evals >= 2 || a->buffer_elem_bytes >= 4 ||
        ctas_an_sm(r->props, row_regs(r, reg->vec, reg->batch), reg->block_threads) >= 2)
        return 0;
    if (stream_for_levels(r, p)) return 1;
    tn_plan_desc q = *p;
    if (!cluster_fit(r, &q, 2, slice_batch(a, TN_REG_BATCH_LONG), 2) || !(q.ctas_per_sm = bound_ctas(r, &q)))
        return 0;
    q.grid = cluster_grid(r, &q);
    *p = q;
    tn_why(p, "cluster: %d reduction levels would each idle the register plan's one CTA an SM: each row split over 2 "
           "CTAs of %d threads, %d vectors each held in registers, compiled for %d CTAs an SM so that one's loads "
           "overlap another's reductions", a->num_levels, p->threads_per_row, p->batch, p->ctas_per_sm);
    cache_cols(r, p); /* first: it may make the grid again (cluster_refit) */
    why_persistent_clusters(p);
    return 1;
}

/* A persistent cluster plan whose clusters loop over rows streams them
   through one stage of shared memory: the next row's slice is copied while
   this one reduces and stores, as the tma ring does. tune on the H200 (bf16,
   2026-12-03/04), 287 cluster plans measured with and without the stage over
   rmsnorm, layernorm, softmax and add_rmsnorm rows of 32768 to 131072: median
   0.84 of the time without, worst 1.03 (rmsnorm 300 x 65536 over 2 CTAs of
   256 x 16: 24.19 us against 27.09; 1000 x 65536 73.65 against 74.87;
   layernorm 4096 x 65536 308.7 against 312.0; softmax 600 x 98304 carrying
   exp 65.6 against 67.9), all of 300 rows or more. The CTAs an SM it was
   compiled for are capped by what shared memory holds with the stage; p
   untouched where the stage does not fit or a cluster takes one row. */
static void stream_next_rows(const tn_schedule_request *r, tn_plan_desc *p) {
    tn_plan_desc q;
    if (r->analysis->num_stage_inputs && !p->stages && !p->prefetch && !p->shared_slice &&
        cluster_prefetch_ok(p, r->analysis) && cluster_staged(r, p, 1, &q))
        *p = q;
}

/* cluster_pick_streamed's first choice: the smallest cluster whose CTA holds two stages of its slice and its COL
   slices in shared memory, at most TN_REG_BATCH_LONG vectors a thread; 0 (p untouched) where none does. */
static int cluster_pick_two_stages(const tn_schedule_request *r, tn_plan_desc *p) {
    for (int c = 2; c <= TN_MAX_CLUSTER && r->analysis->num_stage_inputs; c *= 2) {
        tn_plan_desc q = *p, s;
        if (!cluster_fit(r, &q, c, slice_batch(r->analysis, TN_REG_BATCH_LONG), 1) ||
            !cluster_prefetch_ok(&q, r->analysis) || !cluster_staged(r, &q, 2, &s))
            continue;
        tn_plan_desc cached = s;
        if (r->analysis->col_elem_bytes && !cluster_col_cached(r, &cached)) continue;
        *p = s;
        return c;
    }
    return 0;
}

/* Where the clusters will loop over rows, streaming each next row into a
   stage (stream_next_rows), the smallest cluster that holds the row at one
   CTA an SM, for fusions without special functions in two phases: the stage
   keeps memory busy while the CTA reduces, which the second CTA an SM that
   cluster_pick asks for of larger clusters was for. tune on the H200 (bf16,
   2026-12-04, both streamed): rmsnorm 512 x 131072 71.5 us over 4 CTAs of
   256 x 16 against 77.1 over 8 of 128 x 16; 4096 x 131072 543.4 against
   562.7. Heavy fusions keep cluster_pick's 2 CTAs an SM: streamed, the
   smaller cluster won there too (softmax 4096 x 131072 carrying exp 535.2
   against 565.4 at 3 an SM; 600 x 98304 65.6 against 66.9), but at 512 x
   65536 unstreamed it lost by a fifth (51.2 us against 41.8) and the
   streamed pair is unmeasured. Returns the cluster size with p streamed, 0
   (p untouched) where no such cluster streams. */
static int cluster_pick_streamed(const tn_schedule_request *r, tn_plan_desc *p, int batch, int two_stages) {
    /* First the smallest cluster whose CTA holds two stages of its slice and its COL slices in shared memory, at
       the fewest threads from 128 that keep at most TN_REG_BATCH_LONG vectors each: two rows' copies in flight
       while one reduces (tune on the H200, bf16, 2026-12-04, the COL slices cached in all: layernorm 4096 x 65536
       272.1 us over 4 CTAs of 256 x 8 against 281.9 over 2 of 256 x 16 with one stage; 16384 x 65536 1103.7
       against 1098.8; rmsnorm 512 x 65536 37.5 over 2 of 512 x 8 against 39.0; layernorm 3000 x 98304 300.9
       over 4 of 512 x 6 against 299.9). */
    const int two = two_stages ? cluster_pick_two_stages(r, p) : 0;
    if (two) return two;
    for (int c = 2; c <= TN_MAX_CLUSTER; c *= 2) {
        tn_plan_desc q = *p;
        if (!cluster_fit(r, &q, c, batch, 1)) continue;
        stream_next_rows(r, &q);
        if (!q.stages) return 0;
        *p = q;
        return c;
    }
    return 0;
}

/* CTAs an SM to compile shared-slice plan q for: as many as shared memory and
   threads allow, fewer where that would leave ptxas under TN_CLUSTER_MIN_REGS
   a thread; 0 (ptxas chooses) where that is under 2. */
static int shared_slice_bound(const tn_schedule_request *r, const tn_plan_desc *q) {
    int k = (int)min_i64(stage_ctas_an_sm(r, q), r->props->max_threads_per_sm / q->block_threads);
    while (k >= 2 && regs_cap(r->props, k * q->block_threads) < TN_CLUSTER_MIN_REGS) k--;
    return k >= 2 ? k : 0;
}

/* Many rows too long for one CTA's registers: each split over the smallest
   cluster whose CTA's slice of every ROW input leaves TN_SHARED_SLICE_CTAS
   CTAs an SM, the slice copied once into shared memory and read there by
   every phase, a cluster a row in waves (shared_slice), compiled for as many
   CTAs an SM as fit. With the row off the registers, two or more CTAs an SM
   overlap one's copy with the other's reductions and exchange waits, which one
   persistent CTA an SM cannot (bench/probes, mode 4). Threads: the fewest from
   128 that keep at most 16 vectors a thread (8 with two inputs), at most those
   that leave TN_CLUSTER_MIN_REGS a thread at one CTA an SM more, more vectors
   a thread there (softmax 4096 x 65584 over 2 CTAs of 256 x 17 at 3 an SM
   276.3 us, of 512 x 9 at 2 288.3, left to ptxas 469.4; rmsnorm 3000 x 98304
   256 x 24 at 2 297.9, softmax 2500 x 81920 210.5, 512 x 10 209.6). tune on the H200
   (bf16, 2026-12-04), against the persistent cluster plan in registers:
   rmsnorm 4096 x 65536 268.9 us over 2 CTAs of 256 x 16 at 3 an SM against
   280.9; 16384 x 65536 1040 against 1103; 4096 x 131072 534.7 over 4 (620
   over 8 in registers); softmax 4096 x 65536 271.2, exp recomputed from the
   slice, against 280.8 carrying it; add_rmsnorm 4096 x 65536 535.1 over 4 of
   256 x 8 against 547.2; f32 rmsnorm 4096 x 65536 530.7 over 4, the best. The
   smallest cluster, as the slices an SM holds fewer of won wherever two fit:
   softmax 2500 x 81920 209.6 us over 2 CTAs of 80 KiB at 2 an SM, 230.7 over
   4 of 40 KiB at 4; rmsnorm 3000 x 98304 297.9 against 302.5; add_rmsnorm
   2000 x 81920 336.1 against 348.0; rmsnorm 4096 x 65536 270.9 over 4 at 6 an
   SM, 282.8 over 8 at 13. At least TN_SHARED_SLICE_MIN_WAVES waves of CTAs,
   so that the last, partial wave costs little (rmsnorm 1000 x 65536, 5 waves:
   73.5 us against 69.4 persistent; 300 x 65536, 1.5 waves: 26.4 against
   23.4). Clusters of 4 from TN_SHARED_SLICE_MIN_WAVES_4 waves: the persistent plan they replace runs clusters
   of 4 at one CTA an SM, which the driver places on 120 of the H100's 132 SMs (bench/probes/gpc.cu), and the
   last wave costs less from 5 waves (bench/ab/waves-c4-h100, 2026-12-06, H100, persistent over waves: rmsnorm
   512 x 131072 1.043, 700 x 131072 1.056, f32 512 x 65536 1.047; add_rmsnorm 512 x 65536 1.042, 700 x 65536
   1.051; softmax 512 x 131072 1.060, 700 x 131072 1.071, at 5.2-10.6 waves; at 3.9-4.5 waves even, rmsnorm
   300 x 131072 1.009, f32 256 x 98304 1.011, add_rmsnorm 300 x 81920 0.984; at 2-3 persistent faster, softmax
   200 x 131072 0.917, rmsnorm 200 x 131072 0.942). Clusters of 8 in waves, each needing 8 free CTA slots of one
   GPC at once, lost at 3.9 and even at 7.8 (rmsnorm 128 x 262144 0.921, 256 x 262144 0.980), so they keep 8
   (the persistent clusters of 8 they would replace sit on the same 10/11 of the SMs). Fusions of two or more
   reduction levels without special functions in
   two phases keep the register plans: each level waits on the exchange with
   nothing else to do (layernorm 16384 x 65536 1271 over 2 CTAs at 3 an SM
   against 1209). 0 (p untouched) where no cluster of up to TN_MAX_CLUSTER
   CTAs fits. */
static int share_long_slices(const tn_schedule_request *r, tn_plan_desc *p) {
    const tn_analysis *a = r->analysis;
    const tn_device_props *d = r->props;
    if (r->no_shared_slice || !a->num_stage_inputs || (a->num_levels >= 2 && a->special_evals < 2)) return 0;
    const int batch = slice_batch(a, TN_REG_BATCH_LONGER);
    /* Threads that would leave a third CTA an SM its registers: a slice just over a power of two of vectors
       keeps 3 an SM where shared memory allows. */
    int most_threads = 128;
    while (most_threads * 2 <= d->max_threads_per_block &&
           regs_cap(d, (TN_SHARED_SLICE_CTAS + 1) * most_threads * 2) >= TN_CLUSTER_MIN_REGS)
        most_threads *= 2;
    for (int cl = 2; cl <= TN_MAX_CLUSTER; cl *= 2) {
        const int64_t nvl = tn_cluster_slice_vectors(p->cols / p->vec, cl);
        int t = 128;
        while (t < most_threads && ceil_div(nvl, t) > batch) t *= 2;
        tn_plan_desc q = *p;
        if (!cluster_layout(r, &q, cl, t, 0)) continue;
        tn_cluster_share_slice(a, &q);
        if (!cluster_prefetch_ok(&q, a) || q.grid > 0x7fffffff) return 0;
        q.ctas_per_sm = shared_slice_bound(r, &q);
        if (q.ctas_per_sm < TN_SHARED_SLICE_CTAS) continue;
        const int min_waves = cl == 4 ? TN_SHARED_SLICE_MIN_WAVES_4 : TN_SHARED_SLICE_MIN_WAVES;
        if (q.grid < (int64_t)min_waves * q.ctas_per_sm * d->sm_count) return 0;
        *p = q;
        tn_why(p, "cluster: each row split over %d CTAs of %d threads, its %lld-byte slice copied once into shared "
               "memory and read there by every phase, a cluster a row (%lld CTAs in waves, compiled for %d an SM: "
               "one's copy lands while another reduces); reductions meet through distributed shared memory", cl,
               p->threads_per_row, (long long)(p->smem_bytes - 8), (long long)p->grid, p->ctas_per_sm);
        return 1;
    }
    return 0;
}

/* The cluster plan's region, from tune on the H200 (bf16, 2026-12-03, the
   exchange through st.async onto mbarriers):
   - rows one CTA's registers cannot hold, of fusions without special functions
     in two or more phases: rmsnorm 4096 x 65536 280 us over 2 CTAs of 256
     threads x 16 vectors (tma 301), layernorm 310 (tma 352), add_rmsnorm 546
     over 2 of 512 x 8;
   - the same rows of fusions with them where the values a later phase needs
     again are carried in registers and two rows do not fit in shared memory
     (softmax 4096 x 65536: 283 us over 4 CTAs of 128 x 16 carrying exp,
     tma-ws 305; without carry the cluster took 343 and the tma plans keep
     such rows, as they keep rows two of which fit: 4096 x 32768 tma 141.0,
     cluster 139.4, within noise);
   - few rows (under half the SMs; a quarter where one CTA's registers hold the
     row) of 64 KiB or more, widened while the clusters fit one wave and slices
     stay 8 KiB (softmax 1 x 65536 3.64 us against 11.3 for one tma CTA);
   - fewer rows than a quarter of the SMs, of over 16 KiB and under 64 KiB,
     that one CTA would hold (spread_short_rows);
   - many rows, 8 or more waves of CTAs, with slices kept in shared memory
     and a cluster a row (share_long_slices), and, where clusters loop over
     rows, the next row streamed into a stage (stream_next_rows).
   Each CTA keeps up to 16 vectors a thread (8 where two inputs are loaded), at
   the fewest threads from 128, in the smallest cluster that holds the row; a
   cluster of more than 2 CTAs must leave 2 CTAs an SM, so that a cluster need
   not wait for whole SMs of one GPC to drain (rmsnorm 4096 x 131072: 620 us
   over 8 CTAs of 128 x 16, 728 over 4 of 256 x 16 at one CTA an SM). Tried
   and dropped (tune, 2026-12-04): 8 vectors a thread at 2 CTAs an SM for
   light fusions (rmsnorm even, add_rmsnorm 4096 x 65536 573 us against 550,
   layernorm 490 against 313: ptxas took more registers than estimated and the
   driver ran one CTA an SM). */
static int schedule_l2_slices(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *p);

/* Rows under two waves of one row a CTA an SM: lone_ctas_few_waves's window where one row a CTA has no next row to
   pipeline or only part of a second wave. */
static int under_two_waves(const tn_schedule_request *r) { return r->rows < 2 * (int64_t)r->props->sm_count; }

/* Rows whose register plan (reg: one row a CTA) is a lone CTA an SM, from half the SMs to TN_LONE_MAX_ROWS_AN_SM
   rows an SM, that it does not pipeline: under one wave there is no next row; above it, pipeline_few_groups's
   window (to TN_PIPELINE_MAX_GROUPS_AN_SM rows an SM) where by the estimate it cannot (no room in registers for the
   next row's: add_rmsnorm's two inputs; rows of more than 4 vectors a thread at 1024 threads; widths it would leave
   ragged); rows over TN_CLUSTER_SHORT_ROW_BYTES in 16-byte vectors from 16-byte boundaries (the streamed stages'
   copies; under two waves over TN_LONE_WAVE_MIN_ROW_BYTES), no special functions. Such a CTA loads its row, waits,
   reduces and stores with nothing else of its SM's in flight, and under a wave or between waves (M not a multiple
   of the SMs) whole SMs idle; split over clusters that loop over the rows, one CTA's next rows stream in while
   another reduces, and every SM takes a share of the bytes. From two waves up cluster_pick_lone's clusters (2 CTAs
   an SM; its comment has the times); under two, by the fusion's ROW inputs (tn_schedule_cluster; H100 A/B against
   one row a CTA, 2026-12-07-h100-s24-ab-lone-final.log: 0.72-1.00 of the time at 23 of 24 shapes of 70-250 rows,
   add_rmsnorm 111 x 30000 1.04). Not where one row a CTA is 2 CTAs an SM (tune, H100: rmsnorm 256 x 24576, one
   wave, clusters of 2 at 11.27 us against 10.23). Under half the SMs the spread rules decide (spread_short_rows,
   many_rows_spread); pair_for_levels takes fusions of two reduction levels (layernorm) first from a quarter of the
   SMs, in this window too. Session 23's early cluster barrier (arrived at before the PDL wait) made this pay: the
   barrier that cost 0.6-0.75 us a launch costs 0.36 (probe cluster_launch, stage 4). */
static int lone_ctas_few_waves(const tn_schedule_request *r, const tn_plan_desc *reg, int64_t row_bytes) {
    const tn_device_props *d = r->props;
    if (r->analysis->special_evals || reg->peel || !cluster_prefetch_ok(reg, r->analysis) || reg->rows_per_cta != 1 ||
        row_bytes <= TN_CLUSTER_SHORT_ROW_BYTES ||
        r->rows * 2 <= (int64_t)d->sm_count || r->rows > (int64_t)TN_LONE_MAX_ROWS_AN_SM * d->sm_count ||
        ctas_an_sm(d, row_regs(r, reg->vec, reg->batch), reg->block_threads) > 1 ||
        (under_two_waves(r) && row_bytes <= TN_LONE_WAVE_MIN_ROW_BYTES))
        return 0;
    return !tn_register_pipelines(r, reg);
}

/* The clusters for lone_ctas_few_waves's rows: the smallest cluster whose CTAs, at most TN_REG_BATCH_LONG
   vectors a thread (the fewest threads from 128), fit 2 an SM with their next rows streamed into as many
   stages as leave 2 an SM (2, else 1), the COL slices read from L2: one CTA's loads in flight while the other
   reduces. tune on the H100 (bf16), against the register plan's one row a CTA: add_rmsnorm 512 x 24576 35.44
   us over 2 CTAs of 256 x 6, 2 stages, 2 an SM, against 39.77 (37.13 over 2 of 512 x 3 at one an SM,
   cluster_pick_streamed's; 2026-12-06-h100-s19-tune2.log); 512 x 32768 48.76 over 2 of 256 x 8, one stage, 2
   an SM (the best of 170 candidates), against 50.18 (51.32 over 2 of 512 x 4 with 2 stages at one;
   2026-12-05-h100-tune-s10.log); rmsnorm 512 x 32768 24.42 over 2 of 256 x 8, 2 stages, 2 an SM, against
   26.04 (24.34 with the COL slices cached; s19-tune2). Returns the cluster size, 0 (p untouched) where none
   fits. */
static int cluster_pick_lone(const tn_schedule_request *r, tn_plan_desc *p) {
    for (int c = 2; c <= TN_MAX_CLUSTER; c *= 2)
        for (int stages = 2; stages >= 1; stages--) {
            tn_plan_desc q = *p, s;
            if (cluster_fit(r, &q, c, TN_REG_BATCH_LONG, 2) && cluster_prefetch_ok(&q, r->analysis) &&
                cluster_staged(r, &q, stages, &s) && slice_ctas_an_sm(r, &s) >= 2) {
                *p = s;
                return c;
            }
        }
    return 0;
}

/* Whether few rows (a cluster each) are streamed: over 3/8 of the SMs (few rows are under half), where clusters of
   8 would leave the busiest SM half a row as clusters of 2 do (balance_many_rows spreads fewer):
   cluster_pick_streamed's clusters at one CTA an SM, the next rows' slices streamed into two stages and the COL
   slices cached, rather than every row's cluster at once. tune,
   H100, bf16 (2026-12-07-h100-s25-tune.log): add_rmsnorm 64 x 65536 12.77 us over 4 x 512 x 4 streamed against
   14.01 at once over 2 x 512 x 8; rmsnorm 64 x 131072 13.10 against 15.09 over 8 x 128 x 16. A/B of the rule
   (-ab-trialC.log): 64 x 65536 13.05 against 13.98, rmsnorm 64 x 131072 13.84 against 15.41, layernorm 64 x
   131072 14.57 against 18.18, add_rmsnorm 64 x 131072 even (26.20 against 25.95); at 40 rows, where balance_many_rows
   takes clusters of 8, it lost (add_rmsnorm 40 x 65536 9.65 against 8.70). */
static int few_rows_stream(const tn_schedule_request *r) {
    const int64_t sms = r->props->sm_count;
    return ceil_div(r->rows * TN_MAX_CLUSTER, sms) * 2 >= ceil_div(r->rows * 2, sms) * TN_MAX_CLUSTER;
}

/* few_rows_stream's clusters: cluster_pick_two_stages's (two stages, the COL slices cached), at most
   TN_REG_WIDEN_MAX threads (as measured); 0 (p untouched) otherwise (its one-stage fallback spilled at
   add_rmsnorm 50 x 163840 with an f32 weight, where the clusters at once did not). */
static int cluster_pick_streamed_few(const tn_schedule_request *r, tn_plan_desc *p) {
    tn_plan_desc q = *p;
    const int cl = cluster_pick_two_stages(r, &q);
    if (!cl || q.threads_per_row > TN_REG_WIDEN_MAX) return 0;
    *p = q;
    tn_why(p, "few rows streamed: %lld rows over 3/8 of the SMs, clusters of %d looping, two stages", (long long)r->rows,
           cl);
    return cl;
}

/* The clusters for lone_ctas_few_waves's rows of two or more ROW inputs under one wave, where one row a CTA
   leaves 1 SM in TN_LONE_MIN_IDLE_SHARE or more idle: clusters of 4 (a quarter row a CTA), 2 vectors of each
   input a thread at the fewest threads from 128 up to 512, two stages of the next rows (else one), the COL
   slices cached: 2 CTAs an SM, each streaming while the other exchanges. H100, bf16 add_rmsnorm unless said,
   against the streamed clusters of 2 that cluster_pick_streamed takes (2026-12-07-h100-s25-ab-lone-c4.log,
   -ab-trialA.log): 111 x 30000 10.61 us against 11.90; 75 x 28672 8.26 against 9.63; 80 x 24576 7.56 against
   8.09; 70 x 40000 10.86 against 12.33; f16 85 x 30720 9.16 against 9.61; f32 100 x 16000 9.63 against 10.12;
   70 x 32768, 96 x 32768, 67 x 32768 and f32 96 x 16384 0.98-1.03 times as fast; lost at f32 72 x 12288, 6.73
   against 5.92 (72 clusters of 2 all at once, against 66 of 4 that loop). From 120 rows even or lost (250 x
   24576 18.05 against 17.48). As the scheduler's (-ab-rules.log): bf16/f16 100 x 28672 9.37 against 11.40, f16
   78 x 24576 7.25 against 8.81, 75 x 28672 8.25 against 9.70, 111 x 30000 10.62 against 11.89, 88 x 32768
   9.83 against 9.98; f32 lost at 90 x 12288 (7.50 against 7.11) and 72 x 12288 (6.75 against 5.94): the caller
   takes it for 16-bit ROW inputs (2 vectors a thread are 16 elements; f32's 8 are too few between a CTA's
   exchanges). Returns the cluster size, 0 (p untouched) where none fits. */
static int cluster_pick_quarters(const tn_schedule_request *r, tn_plan_desc *p) {
    for (int stages = 2; stages >= 1; stages--) {
        tn_plan_desc q = *p, s;
        if (cluster_fit(r, &q, 4, 2, 1) && q.threads_per_row <= TN_REG_WIDEN_MAX &&
            cluster_prefetch_ok(&q, r->analysis) && cluster_staged(r, &q, stages, &s) && slice_ctas_an_sm(r, &s) >= 2) {
            tn_plan_desc cached = s;
            *p = r->analysis->col_elem_bytes && cluster_col_cached(r, &cached) ? cached : s;
            tn_why(p, "quarter rows: %d ROW inputs under one wave, a quarter of a row a CTA, %lld CTAs an SM",
                   r->analysis->num_stage_inputs, (long long)(p->grid / r->props->sm_count));
            return 4;
        }
    }
    return 0;
}

/* Bytes of the narrowest ROW input's element (the steps of stage_elem_offset); 16 where there is none. */
static int narrowest_row_input(const tn_analysis *a) {
    int least = 16;
    for (int k = 0; k < a->num_stage_inputs; k++) {
        const int end = k + 1 < a->num_stage_inputs ? a->stage_elem_offset[k + 1] : a->buffer_elem_bytes;
        if (end - a->stage_elem_offset[k] < least) least = end - a->stage_elem_offset[k];
    }
    return least;
}

/* The vector of one 16-byte access of the narrowest tensor where the row's length alone leaves vec below it (odd
   N) and a peeled row would hold 4 or more of them; 0 where the request may not peel or the length divides. */
static int odd_row_width(const tn_schedule_request *r) {
    const int full = 16 / r->analysis->min_row_elem_size;
    return !r->no_peel && r->cols % full && r->cols >= 4 * full ? full : 0;
}

/* Rows too long for one CTA's registers whose length leaves vec below one 16-byte access of the narrowest
   tensor (odd N): split over a cluster as cluster_pick splits an aligned row, peeled (plan field peel, as the
   register plan does for shorter rows): each row's vectors from its first 16-byte boundary, cut into the same
   slices, the last CTA's the rest, and the at most 2 vec - 2 elements outside them taken one a thread by the
   first CTA. In registers only, as the stages' bulk copies and the COL cache are sized by a slice's place in an
   aligned row; without carry (the outside elements have no slots): heavy fusions evaluate their special
   functions again in the later phase; without the L2 prefetch of the next row (tune's candidates have it,
   untimed). The alternative is every access one element wide for the whole row (session 26's audit: rmsnorm
   2000 x 65537 over clusters of 4 x 512 x 33 at vec 1, softmax 2000 x 65537 looped at vec 1), which issue 9
   rules out. Returns the cluster size, 0 (p untouched) where none fits. */
static int peeled_cluster(const tn_schedule_request *r, tn_plan_desc *p, int heavy, int few) {
    const tn_analysis *a = r->analysis;
    const int full = odd_row_width(r);
    /* Only where the row's loads are narrower than 16 bytes: a narrower COL input or f8 output alone narrows vec
       too (f32 rows beside a bf16 weight, 65540 columns), where the aligned plan's loads are whole already and keep
       its stages, COL cache and carry. Rows narrowed by their alignment alone (views that start mid-row) keep their
       narrower vectors, as measured (uneven slices, few-row clusters). */
    if (!full || p->vec >= full || p->vec * narrowest_row_input(a) >= 16) return 0;
    tn_plan_desc q = peeled(p, full);
    /* At most TN_REG_BATCH_LONG vectors a thread (shared among the ROW inputs): at the CTAs an SM cluster_pick asks
       for first (strict), else at one CTA an SM, the smallest cluster; only where none fits, cluster_pick's wider
       slices. A peeled slice's COL vectors load element by element (NVRTC, rmsnorm bf16 2000 x 65537 over 2 CTAs
       of 256 x 16: 255 registers, one CTA an SM; 512 x 8: 126, 16 warps an SM; add_rmsnorm 2000 x 99999 took 2 x
       256 x 25 at 253 registers from the wider slices, 8 x 512 x 4 now). COL inputs of over 4 bytes a column
       (layernorm's f32 weight and bias) take TN_REG_BATCH_TARGET: 2000 x 65537 with f32 outputs spilled 8 bytes
       over 2 x 512 x 8. */
    const int batch = slice_batch(a, a->col_elem_bytes > 4 ? TN_REG_BATCH_TARGET : TN_REG_BATCH_LONG);
    int cl = cluster_pick(r, &q, batch, heavy, few, 1);
    for (int c = 2; c <= TN_MAX_CLUSTER && !cl; c *= 2)
        if (cluster_fit(r, &q, c, batch, 1)) cl = c;
    if (!cl) cl = cluster_pick(r, &q, batch, heavy, few, 0);
    if (!cl) return 0;
    *p = q;
    tn_why(p, "cluster, peeled: each row split over %d CTAs of %d threads, %d vectors of %d elements each from the "
           "row's first 16-byte boundary held in registers, the at most %d elements outside them one a thread in "
           "the first CTA; reductions meet through distributed shared memory", cl, p->threads_per_row, p->batch,
           full, 2 * full - 2);
    why_persistent_clusters(p);
    why_ctas_per_sm(p, a);
    return cl;
}

int tn_schedule_cluster(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap) {
    const tn_analysis *a = r->analysis;
    const tn_device_props *d = r->props;
    if (d->cc_major < 9) REJECT("thread-block clusters need sm_90 (the target is sm_%d%d)", d->cc_major, d->cc_minor);
    const int64_t row_bytes = r->cols * a->buffer_elem_bytes, nv = r->cols / p->vec;
    tn_plan_desc reg = *p;
    char reg_err[256];
    const int one_cta = !avoided(r, TN_PLAN_REGISTER) && tn_schedule_register(r, &reg, 0, reg_err, sizeof reg_err);
    /* Few rows: a cluster at least doubles the SMs in use (quadruples, where one CTA's registers hold the row:
       rmsnorm 64 x 32768 took 4.45 us in the register plan, 5.95 over clusters of 8). */
    const int few = r->rows * (one_cta ? 4 : 2) <= d->sm_count && row_bytes >= TN_CLUSTER_FEW_ROW_BYTES;
    const int fits_sm = row_bytes + 1024 <= d->smem_per_block_optin;
    const int heavy = a->special_evals >= 2; /* special functions in two or more phases */
    const int must_carry = !forced && !few && fits_sm && heavy;
    /* Heavy rows the tma plans would stream (the register plan's one CTA an SM, two rows in shared memory), but
       at most TN_HEAVY_CLUSTER_ROWS_AN_SM rows an SM: split over a cluster at 2 CTAs an SM, carrying, each
       thread at most TN_REG_BATCH_LONG vectors. The tma ring fills with a whole row before its first exp and
       its one CTA an SM computes alone; over a few rows an SM that start is a large share of the time, where
       the cluster's slice lands sooner and one CTA's loads overlap another's exps (tune on the H200, bf16
       softmax: 512 x 32768 19.72 us over 2 CTAs of 256 x 8, 22.48 tma; 128 x 24576 6.43, 7.12; 2000 x 49152
       102.61 over 4 of 256 x 6, 109.83; at 31 rows an SM even, 4096 x 32768 139.4 against tma's 141.0). */
    const int heavy_waves = must_carry && one_cta && a->num_carried && tn_tma_takes_from_registers(r, &reg) &&
                            r->rows <= (int64_t)TN_HEAVY_CLUSTER_ROWS_AN_SM * d->sm_count;
    /* N not a multiple of a 16-byte vector (odd N): the register plan holds the row in 16-byte vectors
       (peeled), a cluster only in narrower accesses. Rows narrowed by their alignment alone keep the few-row
       clusters they took before uneven slices (their vectors split evenly). */
    if (!forced && one_cta && reg.peel && p->vec < reg.vec && r->cols % reg.vec)
        REJECT("the register plan holds the row in %d-byte vectors from each row's first 16-byte boundary (peel); a "
               "cluster would take it in %d-byte accesses", reg.vec * a->min_row_elem_size,
               p->vec * a->min_row_elem_size);
    if (!forced && !one_cta && peeled_cluster(r, p, heavy, few)) return 1;
    /* Over a quarter of the SMs in rows, two levels' pair plan before the spread (H100, layernorm 66 x 28672:
       5.04 us over the pair's clusters of 2 x 256, 5.59-5.63 spread over 4 x 128). */
    if (!forced && !few && one_cta && r->rows * 4 > d->sm_count && pair_for_levels(r, &reg, p)) return 1;
    /* Rows one CTA holds that spread_short_rows may spread: under a quarter of the SMs, under
       TN_CLUSTER_FEW_ROW_BYTES; up to half, where many_rows_spread says. */
    const int spread_window = one_cta && row_bytes > TN_CLUSTER_SHORT_ROW_BYTES &&
                              (r->rows * 4 <= d->sm_count ? row_bytes < TN_CLUSTER_FEW_ROW_BYTES
                                                          : r->rows * 2 <= d->sm_count);
    const int too_few_bytes = spread_window && r->rows * 4 > d->sm_count && !many_rows_spread(r, heavy_waves);
    if (!forced && spread_window && !too_few_bytes && spread_short_rows(r, p)) return 1;
    const int lone = !forced && !few && one_cta && lone_ctas_few_waves(r, &reg, row_bytes);
    if (lone)
        tn_why(p, "lone CTAs: one row a CTA leaves one an SM over %.1f rows an SM, unpipelined",
               (double)r->rows / d->sm_count);
    if (!forced && !few && !heavy_waves && !lone) {
        if (too_few_bytes)
            REJECT("the register plan holds the row (%lld bytes) in one CTA, and %lld rows leave too few bytes a row "
                   "to the idle SMs to pay for a cluster's exchange", (long long)row_bytes, (long long)r->rows);
        if (one_cta && r->rows * 4 > d->sm_count)
            REJECT("the register plan holds the row (%lld bytes) in one CTA and %lld rows keep the SMs busy",
                   (long long)row_bytes, (long long)r->rows);
        if (one_cta && row_bytes <= TN_CLUSTER_SHORT_ROW_BYTES)
            REJECT("the register plan holds the row in one CTA, and rows of %lld bytes (at most %d) gain less from "
                   "more SMs than a cluster costs", (long long)row_bytes, TN_CLUSTER_SHORT_ROW_BYTES);
        if (one_cta)
            REJECT("the register plan holds the row (%lld bytes) in one CTA, and no cluster of 2 to %d CTAs splits "
                   "its %lld vectors into slices that all run at once", (long long)row_bytes, TN_MAX_CLUSTER,
                   (long long)nv);
        if (must_carry && (tn_two_rows_fit(d, row_bytes) || !a->num_carried))
            REJECT("a row fits one SM's shared memory and the fusion evaluates special functions in %d phases: the "
                   "tma plans stream it%s", a->special_evals,
                   a->num_carried ? ", two rows at once" : " (no value to carry in registers)");
    }
    if (!forced && !few && !heavy_waves && share_long_slices(r, p)) return 1;
    /* Few rows take more vectors a thread; heavy fusions that carry their values, in 16-bit rows, at most
       TN_REG_BATCH_LONG (64 elements a thread, as f32's 16 vectors are): more threads of fewer vectors, the
       carried values and the row's in 2 CTAs an SM, every exp phase shorter. tune, bf16 softmax, clusters of
       256 x 6-8 against the 128 x 12-16 that 16 vectors gave: 64 x 131072 13.23 us against 14.78 (H200), 15.92
       against 17.51 (H100); 33 x 98304 7.16 against 7.81; 600 x 98304 63.5 against 70.0; 512 x 65536 38.4
       against 39.8 (H200). Uneven slices keep the old cap (8 would leave softmax 1000 x 65584's 2050-vector
       slices 4 and a fraction a thread over 8 CTAs of 256, where 256 x 9 over 4 ran), and so do few rows whose
       clusters would then loop where the old cap's all ran at once (softmax 64 x 81920: 64 clusters of 4 x 256
       x 10, 10.35 us on the H100, against 49 of 8 x 256 x 5, 9.90 in tune: within the two harnesses' spread).
       Where the driver places fewer of the narrower slices' clusters than the rows, tn_schedule_short_clusters
       asks for the wider (wide_slices: softmax 33 x 131072, 33 clusters of 8 x 256 x 8 not all placed, 9.47 us over 8 x 128
       x 16 on the H100, 14.44 over the clusters of 2 that halving them gave). */
    const int even = p->vec * a->min_row_elem_size >= 16 && p->vec >= 8 && nv % TN_MAX_CLUSTER == 0;
    const int old_most = few && !(heavy && a->num_carried) ? TN_CLUSTER_FEW_BATCH
                         : heavy_waves                        ? TN_REG_BATCH_LONG
                                                              : TN_REG_BATCH_LONGER;
    const int most = heavy && a->num_carried && even && !r->wide_slices ? TN_REG_BATCH_LONG : old_most;
    const tn_plan_desc base = *p;
    const int batch = slice_batch(a, most);
    /* Under two waves, fusions of two or more ROW inputs take the streamed pick (one CTA an SM, two stages, the
       COL slices cached): cluster_pick_lone's 2-3 CTAs an SM hold 8 vectors of each input a thread (H100 A/B,
       2026-12-07-h100-s24-ab-lone-half-*.log: add_rmsnorm 120-200 x 32768 11.57-19.71 us streamed, 13.95-20.77
       over cluster_pick_lone's, 13.16-21.49 in one row a CTA); one-input fusions cluster_pick_lone's, without
       the COL cache (rmsnorm 150-230 x 24576 6.84-8.55 us against 7.37-10.15 streamed and cached, 8.47-10.45
       one row a CTA; layernorm 150-200 x 24576 7.31-8.49 against 8.59-9.73 and 10.02-11.02). */
    const int lone_short = lone && under_two_waves(r); /* lone rows under two waves */
    const int lone_cl = lone && (!lone_short || a->num_stage_inputs <= 1) ? cluster_pick_lone(r, p) : 0;
    int cl = lone_cl;
    const int64_t idle_sms = d->sm_count > r->rows ? d->sm_count - r->rows : 0;
    const int enough_idle = idle_sms * TN_LONE_MIN_IDLE_SHARE >= (int64_t)d->sm_count;
    if (!cl && lone_short && enough_idle && a->num_stage_inputs > 1 && a->buffer_elem_bytes <= 2 * a->num_stage_inputs)
        cl = cluster_pick_quarters(r, p); /* ROW inputs of 2 bytes an element or fewer */
    if (!cl) cl = !forced && !few && !heavy ? cluster_pick_streamed(r, p, batch, 1) : 0;
    if (!cl && !forced && few && !heavy && few_rows_stream(r)) cl = cluster_pick_streamed_few(r, p);
    if (!cl) cl = cluster_pick(r, p, batch, heavy, few, must_carry);
    if (cl && few && most != old_most && tn_plan_grid_loops(p)) {
        tn_plan_desc q = base;
        const int old_cl = cluster_pick(r, &q, slice_batch(a, old_most), heavy, few, must_carry);
        if (old_cl && !tn_plan_grid_loops(&q)) *p = q, cl = old_cl;
    }
    /* Heavy rows under 8 waves that no split leaves 2 CTAs an SM (65584 columns: only clusters of 2 split them):
       streamed at one CTA an SM, one stage, the exps recomputed (tune, H200, bf16 softmax, 2026-12-04: 1000 x
       65584 77.3 us over 2 CTAs of 512 x 9, 76.2 at 256 x 17, against 96.3 for the tma-ws ring; 600 x 65584
       49.7, 48.8, against 62.8; two stages 2-4% slower). */
    int streamed_heavy = 0;
    if (!cl && must_carry && (cl = cluster_pick_streamed(r, p, batch, 0))) streamed_heavy = 1;
    /* The few rows' 16 vectors a thread were for carrying: where the values do not fit even so (vectors narrowed
       by alignment), the 24. */
    if (cl && few && heavy && a->num_carried && most != TN_CLUSTER_FEW_BATCH && !tn_carry_fits(r, p)) {
        tn_plan_desc wide = base;
        const int wide_cl = cluster_pick(r, &wide, slice_batch(a, TN_CLUSTER_FEW_BATCH), heavy, few, 0);
        if (wide_cl) *p = wide, cl = wide_cl;
    }
    if (!cl && must_carry)
        REJECT("no split of the row into slices of %d vectors a thread leaves 2 CTAs an SM: the tma plans stream it",
               batch);
    if (!cl && schedule_l2_slices(r, &base, p)) return 1;
    if (!cl)
        REJECT("a row of %lld vectors does not split into %d or fewer slices of whole vectors that fit in registers",
               (long long)nv, TN_MAX_CLUSTER);
    if (must_carry && !streamed_heavy && !tn_carry_fits(r, p))
        REJECT("the special-function values of a slice of %d vectors a thread do not fit in registers beside it: "
               "the tma plans stream the row", p->batch);
    /* Lone rows under two waves whose clusters all run at once (no next row to stream) gain only the SMs one row a
       CTA leaves idle: taken under one wave where those are at least 1 in TN_LONE_MIN_IDLE_SHARE, as the cluster's
       exchange costs more than fewer bring (H100: rmsnorm 120 x 24576, 9% idle, 6.95 us over 240 CTAs of 2 x 128
       x 12 against 5.57 one row a CTA; 80 x 24576, 39% idle, 4.10 against 5.42; 99 x 24584 4.82 against 5.68);
       past one wave not measured, one row a CTA kept. */
    if (lone_short && !tn_plan_grid_loops(p) && !enough_idle)
        REJECT("the register plan holds the row (%lld bytes) in one CTA and leaves %lld of the %d SMs idle (under 1 "
               "in %d), too few for clusters that all run at once to pay for their exchange", (long long)row_bytes,
               (long long)idle_sms, d->sm_count, TN_LONE_MIN_IDLE_SHARE);
    /* Few rows only where their clusters loop (more rows than the clusters that fit at once): the next row's
       slice streams in while this one reduces, the COL slices cached below (tune, H100, bf16 64 x 131072 over 8
       CTAs of 256 x 8 at 2 an SM, 30 clusters: softmax 15.92 us streamed against 17.3-18.0 (screened);
       add_rmsnorm 27.08 streamed and cached, 28.71 (screened) streamed alone, 28.84 neither). Not forced: a
       forced cluster plan is the base that tune's candidates and the tests vary. */
    const int rows_loop = !forced && (!few || tn_plan_grid_loops(p));
    if (rows_loop) stream_next_rows(r, p);
    tn_why(p, "cluster: each row split over %d CTAs of %d threads, %d vectors each held in registers (%lld bytes a "
           "CTA); reductions meet through distributed shared memory", cl, p->threads_per_row, p->batch,
           (long long)(tn_cluster_slice_vectors(nv, cl) * p->vec * a->buffer_elem_bytes));
    /* The COL cache (not for lone clusters: 2 an SM) before the grid's why: it may make the grid again. */
    if (rows_loop && !lone_cl) cache_cols(r, p);
    why_persistent_clusters(p);
    why_streamed(p);
    why_ctas_per_sm(p, a);
    tn_choose_carry(r, p);
    return 1;
}

/* Fusions of special functions in two or more phases take the plan of wider slices (more vectors a thread in
   smaller CTAs, more clusters an SM), or keep p, since halving the cluster doubles each CTA's special-function
   work, which costs more than the last rows' second round (H100, bf16 softmax: 64 x 81920 10.35 us over
   clusters of 4 in two rounds, 12.13 over 2; 33 x 131072 9.47 over 8 CTAs of 128 x 16, 14.44 over the 2 that
   halving twice gave); their non-portable clusters of 16 halve to 8 first. Other fusions take the plan under a
   cap of half p's cluster (tune, H200, bf16: rmsnorm 64 x 65536 over 4 CTAs a row, 62 clusters placed, 8.1 us;
   7.35 over 2). Either only as a cluster plan whose slices stay on chip (not l2_slice: every row read again
   from L2). */
int tn_schedule_short_clusters(tn_schedule_request *req, const tn_plan_desc *p, tn_plan_desc *next) {
    char err[320];
    if (req->wide_slices) return 0;
    const int widen = req->analysis->special_evals >= 2 && p->cluster <= TN_MAX_CLUSTER;
    if (widen)
        req->wide_slices = 1;
    else
        req->max_cluster = p->cluster / 2;
    return tn_schedule(req, next, err, sizeof err) && next->kind == TN_PLAN_CLUSTER && !next->l2_slice &&
           (!widen || next->batch > p->batch);
}

int tn_check_cluster(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap) {
    if (d->cc_major < 9) REJECT("thread-block clusters need sm_90 (the target is sm_%d%d)", d->cc_major, d->cc_minor);
    if (p->consumer_groups || p->chunks != 1 || p->producer_regs || p->consumer_regs)
        REJECT("plan: a cluster plan has no consumer groups, chunks or register sharing");
    if (p->stages < 0 || p->stages > TN_CLUSTER_MAX_STAGES)
        REJECT("plan: a cluster plan streams its slices through 0 to %d stages, not %d", TN_CLUSTER_MAX_STAGES,
               p->stages);
    if (!tn_check_access_align(p, a, err, cap)) return 0;
    const int64_t nv = p->cols / p->vec;
    if (!tn_cluster_slices_fit(nv, p->cluster))
        REJECT("plan: cluster %d must be 2 to %d CTAs, each a slice of at least one whole vector (%lld vectors a row)",
               p->cluster, tn_max_cluster(d->cc_major), (long long)nv);
    if (p->peel && !tn_cluster_peeled_slices_fit(p->cols, p->vec, p->cluster))
        REJECT("plan: peeled, a row has %lld vectors from its first 16-byte boundary at the latest boundary, too few "
               "for the last of %d CTAs to take one", (long long)((p->cols - p->vec + 1) / p->vec), p->cluster);
    if (p->rows_per_cta != 1) REJECT("plan: a cluster plan takes one row per cluster");
    if (p->grid > p->rows * p->cluster)
        REJECT("plan: grid %lld is more than a cluster of %d for each of the %lld rows", (long long)p->grid, p->cluster,
               (long long)p->rows);
    if (p->prefetch && !p->peel && !cluster_prefetch_ok(p, a))
        REJECT("plan: prefetch needs 16-byte aligned rows and 16-byte vectors of every row input (align_bytes %d, "
               "vec %d)", p->align_bytes, p->vec);
    if (p->shared_slice && p->stages != 1)
        REJECT("plan: a cluster plan's slice stays in shared memory in one stage (stages 1), not %d", p->stages);
    if (p->stages && (p->prefetch || !cluster_prefetch_ok(p, a) || !a->num_stage_inputs))
        REJECT("plan: stages need a ROW input, 16-byte aligned rows and 16-byte vectors of every row input, and no "
               "L2 prefetch (align_bytes %d, vec %d, prefetch %d)", p->align_bytes, p->vec, p->prefetch);
    if (p->smem_bytes != tn_cluster_dynamic_smem(a, p))
        REJECT("plan: smem_bytes %d is not what %d stages of a slice (and the COL slices, col_cache %d) need (%lld)",
               p->smem_bytes, p->stages, p->col_cache, (long long)tn_cluster_dynamic_smem(a, p));
    if (p->smem_bytes && p->smem_bytes + cluster_static_smem(a, p) > d->smem_per_block_optin)
        REJECT("plan: %d stages of a slice (and the COL slices, col_cache %d) and the exchange's %lld bytes of "
               "shared memory are above the device's %d per CTA", p->stages, p->col_cache,
               (long long)cluster_static_smem(a, p), d->smem_per_block_optin);
    if (!p->l2_slice && (int64_t)p->threads_per_row * p->batch < tn_cluster_slice_vectors(nv, p->cluster))
        REJECT("plan: threads_per_row %d x batch %d vectors do not cover a slice of %lld vectors", p->threads_per_row,
               p->batch, (long long)tn_cluster_slice_vectors(nv, p->cluster));
    return 1;
}

/* A cluster plan of cl CTAs of t threads whose slices stay in global memory (l2_slice): 4 vectors a thread in
   flight, 2 at 1024 threads (at 4, layernorm's and add_rmsnorm's spilled 8-26 bytes under the 64 registers a
   thread), fewer where a vector takes several 16-byte accesses of the widest tensor (an f8 output's vectors of
   16: 4-8 bytes spilled); a persistent grid of at most as many clusters as the SMs hold by threads (on a GPU,
   the driver's count where less), as rows fit in L2 (every later phase reads its slice again) and as there
   are rows. 0 where the row has too few vectors for cl slices, or too few for t threads a slice, or where its
   re-read inputs take under 128 KiB (rows a cluster holds on chip many times over). */
static int l2_slice_shape(const tn_schedule_request *r, const tn_plan_desc *base, int cl, int t, tn_plan_desc *p) {
    const int64_t nv = base->cols / base->vec;
    if (base->cols * r->analysis->buffer_elem_bytes < 128 * 1024 || (r->max_cluster && cl > r->max_cluster) || !tn_cluster_slices_fit(nv, cl) ||
        tn_cluster_slice_vectors(nv, cl) < 2LL * t || t > r->props->max_threads_per_block)
        return 0;
    *p = *base;
    p->kind = TN_PLAN_CLUSTER;
    p->cluster = cl;
    p->threads_per_row = p->block_threads = t;
    p->rows_per_cta = 1;
    const int accesses = (int)ceil_div((int64_t)base->vec * r->analysis->max_elem_size, 16);
    p->batch = (t >= 1024 ? 2 : 4) / accesses;
    p->batch = p->batch < 1 ? 1 : p->batch;
    p->l2_slice = 1;
    p->stages = p->smem_bytes = p->ctas_per_sm = p->carry = p->peel = p->pipeline = p->online = 0;
    int64_t clusters = (int64_t)(r->props->max_threads_per_sm / t) * r->props->sm_count / cl;
    clusters = min_i64(min_i64(clusters, tn_plan_l2_resident_rows(r->analysis, r->props, base->cols)), r->rows);
    p->grid = min_i64(clusters < 1 ? 1 : clusters, 0x7fffffff / cl) * cl;
    return 1;
}

/* Rows no cluster holds on chip (bf16 from 524288, f32 from 262144, where the looped plan would read every row
   twice from one CTA): split over a cluster anyway, the slices left in global memory, each phase reading its
   slice again from L2 (l2_slice). 512 threads a CTA and the largest cluster the row splits into: for the CTAs
   the driver places at once, the fewest rows in flight, so the re-reads find them in L2 (H100, bf16 softmax
   64 x 524288: 68.4 us over 14 clusters of 16, 82.4 over 30 of 8, the looped plan 101.9). Not where the L2
   holds so few rows that the clusters take fewer SMs than the looped plan's CTAs a row (rows of 32 MiB and
   more: one cluster at a time). */
static int schedule_l2_slices(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *p) {
    const tn_device_props *d = r->props;
    const int t = 512;
    const int64_t rows = min_i64(r->rows, tn_plan_l2_resident_rows(r->analysis, d, base->cols));
    int chosen = 0;
    for (int cl = tn_max_cluster(d->cc_major); cl >= 2 && !chosen; cl /= 2) {
        tn_plan_desc q;
        if (l2_slice_shape(r, base, cl, t, &q)) *p = q, chosen = cl;
    }
    if (!chosen || rows * chosen < min_i64(r->rows, d->sm_count)) return 0;
    tn_why(p, "cluster, slices in L2: each row split over %d CTAs of %d threads, too long for them to hold on chip; "
              "each CTA's slice stays in global memory and every phase reads it again from L2 (%lld clusters at "
              "once: the rows whose re-read bytes fit in two thirds of the L2, the SMs' threads)", chosen, t,
           (long long)(p->grid / chosen));
    return 1;
}

int tn_candidates_cluster(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap) {
    if (r->props->cc_major < 9) return 0;
    int n = 0;
    for (int cl = 2; cl <= TN_MAX_CLUSTER; cl *= 2)
        for (int t = 32; t <= 1024 && n < cap; t *= 2) {
            tn_plan_desc p = *base;
            if (ceil_div(tn_cluster_slice_vectors(base->cols / base->vec, cl), t) > 32 || !cluster_shape(r, &p, cl, t))
                continue;
            out[n++] = p;
            /* Beside each, its COL slices cached in shared memory (below, also beside the staged ones). */
            tn_plan_desc c = p;
            if (n < cap && cluster_col_cached(r, &c)) out[n++] = c;
            /* Beside each: the L2 prefetch of the next row (tune: softmax 4096 x 131072 694 us against 749 at
               one CTA an SM, 656 against 604 at three), and the launch bound for the CTAs an SM the registers
               allow where the scheduler leaves it to ptxas, or without it where the scheduler sets it. */
            tn_plan_desc q = p;
            q.prefetch = 1;
            if (n < cap && cluster_prefetch_ok(&q, r->analysis)) out[n++] = q;
            q = p;
            const int64_t per_sm = slice_ctas_an_sm(r, &p);
            q.ctas_per_sm = p.ctas_per_sm ? 0 : (per_sm >= 2 ? (int)per_sm : 0);
            if (n < cap && q.ctas_per_sm != p.ctas_per_sm) out[n++] = q;
            /* And a cluster a row in waves, the slices in registers, compiled for the CTAs an SM they allow
               (bench/probes, mode 2: 96% of the copy over 2 CTAs of 32 KiB, where a persistent grid costs 5-7%;
               untimed as a rule). */
            q = p;
            q.grid = base->rows * cl;
            q.ctas_per_sm = per_sm >= 2 ? (int)per_sm : 0;
            if (n < cap && q.grid != p.grid && q.grid <= 0x7fffffff) out[n++] = q;
            /* And the slices streamed through 1 or 2 stages of shared memory (the next rows' copies in flight
               while this one reduces and stores; untimed as a rule), each also with the CTA's slices of the
               COL inputs kept in shared memory across the rows it loops over (col_cache: layernorm's weight and
               bias are twice the row's bytes read from L2 every row; untimed as a rule). */
            for (int s = 1; s <= TN_CLUSTER_MAX_STAGES && n < cap && cluster_prefetch_ok(&p, r->analysis); s++)
                if (cluster_staged(r, &p, s, &q)) {
                    out[n++] = q;
                    if (n < cap && cluster_col_cached(r, &q)) out[n++] = q;
                }
            /* And the slice left in one stage of shared memory, each phase reading it there, a cluster a row
               (bench/probes, mode 4: few registers, so more CTAs an SM hide the exchange's wait; untimed as a
               rule). */
            q = p;
            tn_cluster_share_slice(r->analysis, &q);
            if (n < cap && cluster_prefetch_ok(&q, r->analysis) && r->analysis->num_stage_inputs &&
                q.smem_bytes + cluster_static_smem(r->analysis, &q) <= r->props->smem_per_block_optin &&
                q.grid <= 0x7fffffff) {
                out[n++] = q;
                /* ... also compiled for as many CTAs an SM as shared memory and threads allow (the scheduler's). */
                if (n < cap && (q.ctas_per_sm = shared_slice_bound(r, &q))) out[n++] = q;
            }
        }
    /* Rows whose vec the length narrowed (odd N): every cluster size again peeled (peeled_cluster's
       vectors from each row's first 16-byte boundary), the slices in registers, as persistent clusters (also
       prefetching the next row's slices into L2, untimed) and as a cluster a row in waves. */
    const int full = odd_row_width(r);
    for (int cl = 2; cl <= TN_MAX_CLUSTER && full; cl *= 2)
        for (int t = 32; t <= 1024 && n < cap; t *= 2) {
            tn_plan_desc p = peeled(base, full);
            if (ceil_div(tn_cluster_slice_vectors(p.cols / p.vec, cl), t) > 32 || !cluster_shape(r, &p, cl, t)) continue;
            out[n++] = p;
            tn_plan_desc q = p;
            const int64_t per_sm = slice_ctas_an_sm(r, &p);
            q.grid = base->rows * cl;
            q.ctas_per_sm = per_sm >= 2 ? (int)per_sm : 0;
            if (n < cap && q.grid != p.grid && q.grid <= 0x7fffffff) out[n++] = q;
            /* ... and the persistent clusters with the L2 prefetch of each CTA's slice of its next row (the
               slice and a vector past it: the row's head is not known before it is loaded). */
            q = p;
            q.prefetch = 1;
            if (n < cap && tn_plan_grid_loops(&q)) out[n++] = q;
        }
    /* Rows whose re-read inputs take 128 KiB or more (l2_slice_shape): every cluster size again with the slices
       left in global memory, each phase streaming its slice from L2 (l2_slice; the scheduler's only past what a
       cluster holds on chip, schedule_l2_slices). */
    for (int cl = 2; cl <= tn_max_cluster(r->props->cc_major) && n < cap; cl *= 2)
        for (int t = 512; t <= 1024 && n < cap; t *= 2)
            if (l2_slice_shape(r, base, cl, t, &out[n])) n++;
    /* Few rows (a cluster of 16 each on at most 4 CTAs an SM): clusters of 16 CTAs, the non-portable size, slices
       in registers, with and without the launch bound (the scheduler keeps to 8 until they are measured; the plan
       build refuses them where the driver places none); up to 512 threads (the exchange with 15 others spilled
       8 bytes under 1024 threads' 64 registers: layernorm 1 x 262144). */
    for (int t = 32; t <= 512 && n < cap && r->rows * TN_MAX_CLUSTER_NONPORTABLE <= 4LL * r->props->sm_count; t *= 2) {
        tn_plan_desc p = *base;
        if (ceil_div(tn_cluster_slice_vectors(base->cols / base->vec, TN_MAX_CLUSTER_NONPORTABLE), t) > 32 ||
            !cluster_shape(r, &p, TN_MAX_CLUSTER_NONPORTABLE, t))
            continue;
        out[n++] = p;
        tn_plan_desc q = p;
        q.ctas_per_sm = p.ctas_per_sm ? 0 : (int)min_i64(slice_ctas_an_sm(r, &p), 4);
        if (n < cap && q.ctas_per_sm >= 2 && q.ctas_per_sm != p.ctas_per_sm) out[n++] = q;
    }
    return n;
}
