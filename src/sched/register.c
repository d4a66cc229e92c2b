/* register: the row in registers. The register plan's schedule (peeled rows included), check and tune
   candidates (pipelined ones included) for the kind table in heuristics.c; the register counts every kind
   uses are in sched_internal.h. */
#include "sched/sched_internal.h"

/* CTAs an SM must hold for the grid to run in one wave, where it can and the
   row's registers allow it; 0 otherwise (ptxas chooses). ptxas otherwise
   trades occupancy for a few registers: rmsnorm 512 x 4096 at 512 threads
   took 38 registers, 3 CTAs an SM, two waves of 512 CTAs (4.71 us against
   3.90 at 31 registers). */
static int one_wave_ctas(const tn_schedule_request *r, const tn_plan_desc *p, int regs) {
    const tn_device_props *d = r->props;
    const int64_t ctas = ceil_div(p->grid, d->sm_count);
    if (ctas < 2 || ctas > ctas_an_sm(d, regs, p->block_threads)) return 0;
    return (int)ctas;
}

/* CTAs an SM for a grid of several waves whose rows leave room for only a few
   CTAs an SM (2 to TN_REG_BOUND_MAX_CTAS by the register estimate): the
   compiler is held to that many, as each lost CTA takes a large share of the
   bytes in flight. tune on the H200 (bf16): layernorm 2000 x 20480 at 256
   threads x 10 vectors 46.4 us bound to 2 CTAs an SM (128 registers), 59.3
   unbound (ptxas took 141, one CTA an SM); 4096 x 20480 85.7, the best
   candidate. 0 (ptxas chooses) elsewhere; a bound that spills is lowered when
   the plan is built. */
static int many_wave_ctas(const tn_schedule_request *r, const tn_plan_desc *p, int regs) {
    const int64_t per_sm = ctas_an_sm(r->props, regs, p->block_threads);
    if (per_sm < 2 || per_sm > TN_REG_BOUND_MAX_CTAS || p->grid <= per_sm * r->props->sm_count) return 0;
    return (int)per_sm;
}

/* Fills the register-plan fields for t threads per row; 0 if the row's
   registers do not fit under the cap of the resulting block. */
static int register_shape(const tn_schedule_request *r, tn_plan_desc *p, int t, int rows_per_cta) {
    const int64_t nv = r->cols / p->vec;
    const int batch = (int)ceil_div(nv, t);
    const int block = t * rows_per_cta;
    if (batch > 64 || block > r->props->max_threads_per_block || block % 32 ||
        row_regs(r, p->vec, batch) > regs_cap(r->props, block))
        return 0;
    p->threads_per_row = t;
    p->batch = batch;
    p->rows_per_cta = rows_per_cta;
    p->block_threads = block;
    p->grid = min_i64(ceil_div(r->rows, rows_per_cta), 0x7fffffff);
    const int regs = row_regs(r, p->vec, batch);
    p->ctas_per_sm = one_wave_ctas(r, p, regs);
    if (!p->ctas_per_sm) p->ctas_per_sm = many_wave_ctas(r, p, regs);
    return 1;
}

/* Whether rows of t threads, each keeping its share of the row, all fit on
   the SMs at once (by threads and by the registers the row needs). */
static int one_wave(const tn_schedule_request *r, int vec, int t) {
    const tn_device_props *d = r->props;
    const int64_t regs = row_regs(r, vec, (int)ceil_div(r->cols / vec, t));
    const int64_t per_sm = min_i64(d->max_threads_per_sm, d->regs_per_sm / regs);
    return r->rows * t <= per_sm * d->sm_count;
}

/* Threads a row for rows of up to TN_REG_SHORT_ROW_VECTORS: two vectors a
   thread up to TN_REG_SHORT_ROW_THREADS (so rows of 257-512 vectors take 3-4
   at 128), or fewer threads with more vectors each (at most
   TN_REG_BATCH_LONG) where that leaves more than an eighth of the lanes idle
   (192 vectors: 64 x 3, not 128 x 2); 0 for longer rows. */
static int short_row_threads(int64_t nv) {
    if (nv > TN_REG_SHORT_ROW_VECTORS) return 0;
    int t = 1;
    while (ceil_div(nv, t) > 2 && t < TN_REG_SHORT_ROW_THREADS) t *= 2;
    while (t > 1 && 8 * nv < 7 * t * ceil_div(nv, t) && ceil_div(nv, t / 2) <= TN_REG_BATCH_LONG) t /= 2;
    return t;
}

/* Rows whose length or alignment leave vec below one 16-byte access of the narrowest tensor (odd N, views
   that start mid-row) may still move whole 16-byte vectors from each row's first 16-byte boundary (peel):
   every ROW tensor is then at one offset from a boundary (the launch checks it, else runs the plan made
   without), and the row's first threads take the at most 2 vec - 2 elements outside the vectors. Only where
   the access width matters: rows over TN_CLUSTER_SHORT_ROW_BYTES (fewer instructions on a long row's critical
   path), or more bytes than the SMs keep in flight (TN_PEEL_BYTES_AN_SM each: bandwidth-bound). bench/ab.sh on
   the H200 (session 6): 3 x 12289 and 3 x 24579 0.70-0.90 of the unpeeled time, 1000 x 4097 0.76-0.90; but
   3 x 1001 1.05-1.17, 3 x 4097 1.03-1.12 (layernorm), 1000 x 1001 layernorm 1.18: short rows and few bytes
   are latency-bound, and the peel's extra elements lengthen the path. */
static int peel_vec(const tn_schedule_request *r, const tn_plan_desc *p) {
    const int full = 16 / r->analysis->min_row_elem_size;
    const int64_t row_bytes = r->cols * r->analysis->buffer_elem_bytes;
    const int matters = row_bytes > TN_CLUSTER_SHORT_ROW_BYTES ||
                        r->rows * row_bytes >= (int64_t)TN_PEEL_BYTES_AN_SM * r->props->sm_count;
    return !r->no_peel && p->vec < full && r->cols >= 4 * full && matters ? full : 0;
}

static int schedule_register_vec(const tn_schedule_request *r, tn_plan_desc *p, int min_t, int pipelines, char *err,
                                 size_t cap);

/* The register plan, as other kinds weigh it (pipelines 0: one row group a CTA) or as the kind table takes it. */
static int schedule_register(const tn_schedule_request *r, tn_plan_desc *p, int pipelines, char *err, size_t cap) {
    const int full = peel_vec(r, p);
    if (full) {
        tn_plan_desc q = peeled(p, full);
        tn_why(&q, "peel: vec %d from each row's first 16-byte boundary, the at most %d elements outside the vectors "
               "one a thread", full, 2 * full - 2);
        char peel_err[256];
        if (schedule_register_vec(r, &q, 2 * full - 2, pipelines, peel_err, sizeof peel_err)) {
            *p = q;
            return 1;
        }
    }
    return schedule_register_vec(r, p, 1, pipelines, err, cap);
}

int tn_schedule_register(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap) {
    (void)forced;
    return schedule_register(r, p, 0, err, cap);
}

/* A forced register plan stays one row group a CTA: the base that tune's candidates and the tests vary. */
int tn_schedule_register_kind(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap) {
    return schedule_register(r, p, !forced, err, cap);
}

/* Rows a CTA of t threads a row takes: TN_BLOCK_TARGET threads, fewer where that leaves under two CTAs an SM. */
static int register_rows_per_cta(const tn_schedule_request *r, int t) {
    const int rmin = t < 32 ? 32 / t : 1;
    int rows_per_cta = TN_BLOCK_TARGET / t > rmin ? TN_BLOCK_TARGET / t : rmin;
    while (rows_per_cta > rmin && ceil_div(r->rows, rows_per_cta) < 2 * r->props->sm_count) rows_per_cta /= 2;
    return rows_per_cta;
}

static int register_pipelined(const tn_schedule_request *r, const tn_plan_desc *p, tn_plan_desc *q);

/* Rows of one row group a CTA whose registers leave at most TN_PIPELINE_MAX_CTAS CTAs an SM (per_sm), at most
   TN_PIPELINE_MAX_GROUPS_AN_SM row groups an SM: p pipelined over a persistent grid (register_pipelined), at
   the most threads a row that take it (the fewest vectors a thread, so the next row's fit beside them). Such
   a CTA loads its row, waits, reduces and stores with nothing else of its SM's loads in flight meanwhile (one
   an SM), or beside one more that started with it and waits with it; over a few waves their phases do not
   drift apart. The pipelined CTA's next row is in flight while it reduces and stores this one. tune on the
   H100 (bf16, 2026-12-06, bench/results/2026-12-06-h100-s19-tune*.log), pipelined over 132 CTAs of 1024
   threads against the one-CTA-a-row plan: rmsnorm 300 x 24576 10.48 us against 13.43 (1 CTA an SM, 2.3
   rows an SM), 512 x 24576 17.48 against 20.61 (1, 3.9), layernorm 512 x 24576 18.71 against 22.47 (1, 3.9),
   rmsnorm 512 x 12288 9.32 against 9.81 (2, 3.9), 512 x 16384 11.88 against 12.96, 700 x 16384 16.38
   against 17.19 (2, 5.3), add_rmsnorm 512 x 16384 24.58 against 24.89; but rmsnorm 1000 x 24576 36.84
   against 35.50 (2, 7.6) and 2000 x 16384 47.63 against 45.96 (2, 15): more waves drift apart. Not for
   fusions with special functions an element: one CTA an SM computes them with nothing beside it (softmax 512 x
   16384 15.14-15.44 us pipelined, 13.76 in one row a CTA at 2 an SM, H100, 2026-12-06-h100-s17-tune.log). Nor
   at a width that leaves the row's last vector to some threads (halve_ragged: 20480 columns over 1024 threads
   x 3, untimed; the one-row-a-CTA plan halves such widths). Nor where one row a CTA runs every row at once (one
   wave: each row's loads already in flight together; A/B of the scheduler's plans, H100,
   2026-12-07-h100-s22-ab-pipeline-c446241.log: layernorm 264 x 9216 at 2 an SM 6.08 us pipelined against 5.05,
   rmsnorm 264 x 12288 5.47 against 5.37; 300 x 9216, just past the wave, 5.14 against 5.93). */
static int pipeline_few_groups(const tn_schedule_request *r, tn_plan_desc *p, int64_t per_sm) {
    const tn_device_props *d = r->props;
    if (r->analysis->special_evals || p->rows_per_cta != 1 || per_sm > TN_PIPELINE_MAX_CTAS ||
        r->rows <= per_sm * d->sm_count || r->rows > (int64_t)TN_PIPELINE_MAX_GROUPS_AN_SM * d->sm_count)
        return 0;
    for (int t = d->max_threads_per_block < 1024 ? d->max_threads_per_block : 1024; t >= p->threads_per_row;
         t /= 2) {
        tn_plan_desc s = *p, q; /* nothing to carry: no special functions */
        if (!register_shape(r, &s, t, 1) || halve_ragged(r->cols / s.vec, t) || !register_pipelined(r, &s, &q))
            continue;
        *p = q;
        return 1;
    }
    return 0;
}

/* Whether the kind table's register plan would be reg (tn_schedule_register's, unpeeled) pipelined, by the
   estimate: pipeline_few_groups, whatever r->no_pipeline (ptxas's spill fallback) says. */
int tn_register_pipelines(const tn_schedule_request *r, const tn_plan_desc *reg) {
    tn_plan_desc q = *reg;
    return pipeline_few_groups(r, &q, ctas_an_sm(r->props, row_regs(r, reg->vec, reg->batch), reg->block_threads));
}

/* The register plan at p's vec, each row over at least min_t threads; pipelined where pipeline_few_groups says
   (pipelines 1). */
static int schedule_register_vec(const tn_schedule_request *r, tn_plan_desc *p, int min_t, int pipelines, char *err,
                                 size_t cap) {
    const tn_device_props *d = r->props;
    const int64_t nv = r->cols / p->vec;
    const int words = words_per_vector(r->analysis, p->vec);
    /* From 256 threads, the 16 vectors count every ROW input's loads (add_rmsnorm 4096 x 32768: 261.5 us at 512
       threads x 8, 279.5 at 256 x 16). */
    const int inputs = r->analysis->num_stage_inputs > 1 ? r->analysis->num_stage_inputs : 1;
    int t = short_row_threads(nv);
    if (!t) { /* over 512 vectors: from 128 threads, up to 8 vectors each, 16 from 256 */
        t = TN_REG_LONG_ROW_THREADS;
        while (t < 1024 && ceil_div(nv, t) > (t < TN_REG_LONGER_ROW_THREADS ? TN_REG_BATCH_LONG
                                                                           : TN_REG_BATCH_LONGER / inputs))
            t *= 2;
    }
    while (t < min_t) t *= 2;
    /* Few rows: give each row more threads so the SMs have work -- but not
       past the point where every row runs at once: a second wave costs more
       than the wider rows save (rmsnorm 512 x 8192 at 512 threads x 2
       vectors: 3 CTAs an SM by registers, two waves of 512 CTAs). */
    const int64_t wanted = (int64_t)d->sm_count * 1024;
    int widened = 0;
    while (t < TN_REG_WIDEN_MAX && t < nv && r->rows < wanted / t &&
           !(one_wave(r, p->vec, t) && !one_wave(r, p->vec, 2 * t)))
        t *= 2, widened = 1;
    /* From the widest useful t up; then, for rows too long for 1024 threads'
       registers, narrower CTAs whose threads may hold more (the cap per thread
       rises as the block shrinks). */
    int tried[16], ntried = 0;
    for (int up = t; up <= 1024 && up <= d->max_threads_per_block; up *= 2) tried[ntried++] = up;
    for (int down = t / 2; down >= 128; down /= 2) tried[ntried++] = down;
    for (int k = 0; k < ntried; k++) {
        t = tried[k];
        if (register_shape(r, p, t, register_rows_per_cta(r, t))) {
            /* Half the threads where they divide the row and these leave its last vector to some (ragged). */
            tn_plan_desc half = *p;
            const int halved = !p->peel && halve_ragged(nv, t) && t / 2 >= min_t &&
                               register_shape(r, &half, t / 2, register_rows_per_cta(r, t / 2));
            if (halved) *p = half;
            const int per_sm = (int)ctas_an_sm(d, row_regs(r, p->vec, p->batch), p->block_threads);
            const int piped = pipelines && !r->no_pipeline && pipeline_few_groups(r, p, per_sm);
            if (halved && !piped)
                tn_why(p, "%d threads would leave the row's last vector to some of them (ptxas loads it late)", t);
            tn_why(p, "%d threads per row x %d vectors each hold the row in registers (%d words/thread)%s",
                   p->threads_per_row, p->batch, p->batch * words, widened && !piped ? ", widened for few rows" : "");
            tn_why(p, "%d rows per CTA -> %d threads", p->rows_per_cta, p->block_threads);
            if (piped)
                tn_why(p, "pipeline: the next row's vectors loaded before this one reduces, over a persistent grid of "
                       "%lld CTAs, as one row a CTA would leave %d CTA%s an SM over %.1f rows an SM", (long long)p->grid,
                       per_sm, per_sm > 1 ? "s" : "", (double)r->rows / d->sm_count);
            else if (p->ctas_per_sm)
                tn_why(p, "compiled for %d CTAs an SM, as the row's registers allow: %s", p->ctas_per_sm,
                       p->grid > (int64_t)p->ctas_per_sm * d->sm_count ? "several waves of few CTAs an SM each"
                                                                     : "the grid in one wave");
            tn_choose_carry(r, p);
            return 1;
        }
    }
    REJECT("a row of %lld vectors needs %d registers per thread at %d threads, above the cap of %d", (long long)nv,
           TN_REG_NEED((int)ceil_div(nv, t) * words), t, regs_cap(d, t));
}

int tn_check_register(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap) {
    (void)d;
    if (!tn_check_vector_align(p, a, err, cap)) return 0;
    if ((int64_t)p->threads_per_row * p->batch < p->cols / p->vec)
        REJECT("plan: threads_per_row %d x batch %d vectors do not cover a row of %lld vectors", p->threads_per_row,
               p->batch, (long long)(p->cols / p->vec));
    if (p->stages || p->smem_bytes) REJECT("plan: a register plan has no shared-memory ring (stages and smem_bytes 0)");
    return 1;
}

static int candidates_register_vec(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out,
                                   int cap);

/* At the plan's vec, and peeled where the scheduler would peel (peel_vec). */
int tn_candidates_register(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap) {
    int n = candidates_register_vec(r, base, out, cap);
    const int full = peel_vec(r, base);
    if (full) {
        const tn_plan_desc q = peeled(base, full);
        n += candidates_register_vec(r, &q, out + n, cap - n);
    }
    return n;
}

/* q: register plan p pipelined (plan field pipeline): a persistent grid of as many CTAs as the SMs hold
   with two row groups' vectors a thread (this one's and the next one's), at most 4 vectors each (a thread of
   more already has enough bytes in flight; layernorm at 8 spilled under the estimate), every CTA
   taking at least two row groups; compiled for that many CTAs an SM. 0 where that does not hold. A tune
   candidate, and the scheduler's where pipeline_few_groups says. */
static int register_pipelined(const tn_schedule_request *r, const tn_plan_desc *p, tn_plan_desc *q) {
    /* ... and of 16-byte vectors (rows of 32-byte ones, beside f8 outputs, already took stack and spilled
       pipelined). */
    const tn_analysis *a = r->analysis;
    const int inputs = a->num_stage_inputs ? a->num_stage_inputs : 1;
    if (p->peel || p->batch > 4 || p->vec * a->buffer_elem_bytes > 16 * inputs) return 0;
    /* Beside the row's registers: the next row group's raw vectors of every ROW input, the COL vectors held across
       the loop (where a thread has two vectors or fewer) in their own dtypes, and carried values (a review
       found 34 mixed-dtype candidates spilling when only twice the row's share was counted). */
    const int64_t next = p->batch * ceil_div((int64_t)p->vec * a->buffer_elem_bytes, 4);
    const int64_t cols = p->batch <= 2 ? p->batch * ceil_div((int64_t)p->vec * a->col_elem_bytes, 4) : 0;
    const int64_t carried = p->carry ? tn_plan_carry_floats(p, a->num_carried) : 0;
    const int64_t regs = row_regs(r, p->vec, p->batch) + next + cols + carried;
    if (regs > regs_cap(r->props, p->block_threads)) return 0;
    const int64_t per_sm = ctas_an_sm(r->props, regs, p->block_threads);
    const int64_t groups = ceil_div(r->rows, p->rows_per_cta), grid = per_sm * r->props->sm_count;
    if (per_sm < 1 || per_sm > 32 || groups < 2 * grid) return 0;
    *q = *p;
    q->pipeline = 1;
    q->grid = grid;
    q->ctas_per_sm = per_sm >= 2 ? (int)per_sm : 0;
    return 1;
}

static int candidates_register_vec(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out,
                                   int cap) {
    int n = 0;
    const int64_t nv = base->cols / base->vec;
    for (int t = 1; t <= 1024; t *= 2) {
        if (ceil_div(nv, t) > 16 || (t > 1 && t / 2 >= nv) || (base->peel && t < 2 * base->vec - 2)) continue;
        for (int rows = 1; rows <= 64 && n < cap; rows *= 2) {
            tn_plan_desc p = *base;
            p.kind = TN_PLAN_REGISTER;
            if (!(t * rows >= 64 && register_shape(r, &p, t, rows))) continue;
            out[n++] = p;
            /* Beside each, the other launch bound: the registers' CTAs an SM where the scheduler leaves it to
               ptxas, or ptxas's choice where the scheduler sets it. */
            tn_plan_desc q = p;
            const int64_t per_sm = ctas_an_sm(r->props, row_regs(r, p.vec, p.batch), p.block_threads);
            q.ctas_per_sm = p.ctas_per_sm ? 0 : (per_sm >= 2 && per_sm <= 32 ? (int)per_sm : 0);
            if (n < cap && q.ctas_per_sm != p.ctas_per_sm) out[n++] = q;
            /* Beside each, pipelined over a persistent grid where it loops over two or more row groups a CTA. */
            if (n < cap && register_pipelined(r, &p, &q)) out[n++] = q;
        }
    }
    return n;
}
