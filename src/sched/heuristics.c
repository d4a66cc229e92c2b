/* The scheduler (see heuristics.h): one table of plan kinds, each with its
   schedule, check and candidate functions. tn_schedule walks the table in
   preference order and keeps why each kind was passed over; `tmanorm tune`
   enumerates the same candidates. Every decision appends a clause to
   plan.why, so `tmanorm explain` can say it. */
#include "sched/heuristics.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void why(tn_plan_desc *p, const char *fmt, ...) {
    size_t len = strlen(p->why);
    if (len + 3 >= sizeof p->why) return;
    if (len) {
        memcpy(p->why + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why + len, sizeof p->why - len, fmt, ap);
    va_end(ap);
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int min_i(int a, int b) { return a < b ? a : b; }
static int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Widest vector (elements) that divides cols, fits one 16-byte access of the
   narrowest tensor and whose accesses the tensors' alignment allows. */
static int pick_vec(const tn_schedule_request *r, tn_plan_desc *p) {
    const tn_analysis *a = r->analysis;
    int vec = 16 / a->min_row_elem_size;
    while (vec > 1 && (r->cols % vec || min_i(16, vec * a->max_elem_size) > r->align)) vec /= 2;
    /* vec 1 needs only element alignment, which every launch checks. */
    if (vec < 16 / a->min_row_elem_size)
        why(p, "vec %d (not %d: %s)", vec, 16 / a->min_row_elem_size,
            r->cols % (2 * vec) ? "cols not divisible" : "tensors aligned to fewer bytes");
    else
        why(p, "vec %d = one 16-byte access of the narrowest tensor", vec);
    return vec;
}

#define REJECT(...) return snprintf(err, cap, __VA_ARGS__), 0

/* Whether the request passes over a kind (its plan spilled for this fusion). */
static int avoided(const tn_schedule_request *r, tn_plan_kind kind) { return (r->avoid >> kind) & 1u; }

/* ---- register: the row in registers ------------------------------------------------ */

static int regs_cap(const tn_device_props *d, int block) {
    int cap = (d->regs_per_sm / block) & ~7;
    return cap > 255 ? 255 : cap;
}

/* Words of row buffer per vector: the loaded inputs, scaled to the share that
   later phases still take (kept_values of num_stage_inputs). */
static int words_per_vector(const tn_analysis *a, int vec) {
    const int inputs = a->num_stage_inputs ? a->num_stage_inputs : 1;
    return (int)ceil_div((int64_t)vec * a->buffer_elem_bytes * (a->kept_values ? a->kept_values : 1), 4 * inputs);
}

/* CTAs of `block` threads needing `regs` registers a thread that one SM holds
   at once, by its register file and its threads. */
static int64_t ctas_an_sm(const tn_device_props *d, int64_t regs, int block) {
    return min_i64(d->regs_per_sm / (regs * block), d->max_threads_per_sm / block);
}

/* Registers a thread needs to keep `batch` vectors of its row (or slice). */
static int row_regs(const tn_schedule_request *r, int vec, int batch) {
    return TN_REG_NEED(batch * words_per_vector(r->analysis, vec));
}

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

/* Keeps the special-function values a later phase needs again in registers
   (plan field carry) where they fit: one evaluation an element instead of one
   a phase. tune on the H200, bf16 softmax, the same shapes with and without:
   register plans 3-5% faster (4096 x 32768 164.9 us against 171.3), cluster
   plans 4-6% (4096 x 131072 572.7 against 610.5; 4096 x 65536 283.0 against
   297.8). Not for tma plans, whose threads read their row back from shared
   memory at little cost: 2-5% slower at 4096 rows (141.0 against 147.6). */
static int carry_fits(const tn_schedule_request *r, const tn_plan_desc *p) {
    const int64_t floats = tn_plan_carry_floats(p, r->analysis->num_carried);
    /* A slice in shared memory is read again instead (and carry would cost it its few registers). */
    return r->analysis->num_carried && !p->shared_slice && !p->peel && floats > 0 &&
           floats <= tn_plan_carry_limit(p, r->props); /* a peeled row's outside elements have no carry slots */
}

static void choose_carry(const tn_schedule_request *r, tn_plan_desc *p) {
    if (!carry_fits(r, p)) return;
    const int64_t floats = tn_plan_carry_floats(p, r->analysis->num_carried);
    p->carry = 1;
    why(p, "carry: %d special-function value%s an element kept in registers for the phase that takes %s again "
        "(%lld a thread)", r->analysis->num_carried, r->analysis->num_carried > 1 ? "s" : "",
        r->analysis->num_carried > 1 ? "them" : "it", (long long)floats);
}

/* Whether `nv` vectors over `t` threads leave a thread's last vector to only some of them, where a thread
   keeps TN_RAGGED_MIN_VECTORS or more: ptxas issues that vector's loads after the first vectors' values are
   used, a second wait for memory a row (SASS: add_rmsnorm bf16 5 x 40960 over clusters of 256 x 3;
   softmax 1000 x 9216 at 256 x 5). Over the H200's tune tables, such a plan lost to the same plan at half
   the threads, whose vectors divide the row or slice, in 248 of 279 pairs (median 1.125; register plans 19
   of 19, median 1.13), where plans that divide theirs lose to their neighbours half the time (median 1.000). */
static int ragged(int64_t nv, int t) { return nv % t && ceil_div(nv, t) >= TN_RAGGED_MIN_VECTORS; }

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

static int schedule_register_vec(const tn_schedule_request *r, tn_plan_desc *p, int min_t, char *err, size_t cap);

/* p peeled at vec `full` (one 16-byte access of the narrowest tensor): element alignment is enough. */
static tn_plan_desc peeled(const tn_plan_desc *p, int full) {
    tn_plan_desc q = *p;
    q.vec = full;
    q.peel = 1;
    q.align_bytes = 1;
    return q;
}

static int schedule_register(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap) {
    (void)forced;
    const int full = peel_vec(r, p);
    if (full) {
        tn_plan_desc q = peeled(p, full);
        why(&q, "peel: vec %d from each row's first 16-byte boundary, the at most %d elements outside the vectors "
            "one a thread", full, 2 * full - 2);
        char peel_err[256];
        if (schedule_register_vec(r, &q, 2 * full - 2, peel_err, sizeof peel_err)) {
            *p = q;
            return 1;
        }
    }
    return schedule_register_vec(r, p, 1, err, cap);
}

/* Rows a CTA of t threads a row takes: TN_BLOCK_TARGET threads, fewer where that leaves under two CTAs an SM. */
static int register_rows_per_cta(const tn_schedule_request *r, int t) {
    const int rmin = t < 32 ? 32 / t : 1;
    int rows_per_cta = TN_BLOCK_TARGET / t > rmin ? TN_BLOCK_TARGET / t : rmin;
    while (rows_per_cta > rmin && ceil_div(r->rows, rows_per_cta) < 2 * r->props->sm_count) rows_per_cta /= 2;
    return rows_per_cta;
}

/* The register plan at p's vec, each row over at least min_t threads. */
static int schedule_register_vec(const tn_schedule_request *r, tn_plan_desc *p, int min_t, char *err, size_t cap) {
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
            if (!p->peel && ragged(nv, t) && t / 2 >= min_t && nv % (t / 2) == 0 &&
                register_shape(r, &half, t / 2, register_rows_per_cta(r, t / 2))) {
                *p = half;
                why(p, "%d threads would leave the row's last vector to some of them (ptxas loads it late)", t);
            }
            why(p, "%d threads per row x %d vectors each hold the row in registers (%d words/thread)%s",
                p->threads_per_row, p->batch, p->batch * words, widened ? ", widened for few rows" : "");
            why(p, "%d rows per CTA -> %d threads", p->rows_per_cta, p->block_threads);
            if (p->ctas_per_sm)
                why(p, "compiled for %d CTAs an SM, as the row's registers allow: %s", p->ctas_per_sm,
                    p->grid > (int64_t)p->ctas_per_sm * d->sm_count ? "several waves of few CTAs an SM each"
                                                                     : "the grid in one wave");
            choose_carry(r, p);
            return 1;
        }
    }
    REJECT("a row of %lld vectors needs %d registers per thread at %d threads, above the cap of %d", (long long)nv,
           TN_REG_NEED((int)ceil_div(nv, t) * words), t, regs_cap(d, t));
}

/* The kinds without a producer warp leave its fields at rest. */
static int check_no_ws_fields(const tn_plan_desc *p, char *err, size_t cap) {
    if (p->consumer_groups || p->chunks != 1 || p->producer_regs || p->consumer_regs || p->cluster != 1)
        REJECT("plan: a %s plan has no consumer groups, chunks, register sharing or cluster (consumer_groups 0, "
               "chunks 1, producer_regs and consumer_regs 0, cluster 1)", tn_plan_kind_name(p->kind));
    return 1;
}

/* Register and looped plans need exactly their vector accesses' alignment. */
static int check_access_align(const tn_plan_desc *p, const tn_analysis *a, char *err, size_t cap) {
    if (p->align_bytes != tn_plan_access_align(p, a->max_elem_size))
        REJECT("plan: align_bytes %d is not what vec %d needs (%d)", p->align_bytes, p->vec,
               tn_plan_access_align(p, a->max_elem_size));
    return 1;
}
static int check_vector_align(const tn_plan_desc *p, const tn_analysis *a, char *err, size_t cap) {
    return check_no_ws_fields(p, err, cap) && check_access_align(p, a, err, cap);
}

static int check_register(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap) {
    (void)d;
    if (!check_vector_align(p, a, err, cap)) return 0;
    if ((int64_t)p->threads_per_row * p->batch < p->cols / p->vec)
        REJECT("plan: threads_per_row %d x batch %d vectors do not cover a row of %lld vectors", p->threads_per_row,
               p->batch, (long long)(p->cols / p->vec));
    if (p->stages || p->smem_bytes) REJECT("plan: a register plan has no shared-memory ring (stages and smem_bytes 0)");
    return 1;
}

static int candidates_register_vec(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out,
                                   int cap);

/* At the plan's vec, and peeled where the scheduler would peel (peel_vec). */
static int candidates_register(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap) {
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
   candidate (not yet measured: the scheduler does not choose it). */
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

/* ---- looped: several passes over global memory ------------------------------------- */

static void looped_shape(const tn_schedule_request *r, tn_plan_desc *p, int block) {
    p->threads_per_row = p->block_threads = block;
    p->rows_per_cta = 1;
    p->batch = 4;
    /* A grid of about two waves keeps each CTA's row in L2 between passes. */
    int64_t ctas = (int64_t)r->props->sm_count * (r->props->max_threads_per_sm / block);
    p->grid = min_i64(r->rows, ctas);
}

static int schedule_looped(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap) {
    (void)forced, (void)err, (void)cap;
    const int64_t nv = r->cols / p->vec;
    int block = 32;
    while (block < 1024 && (int64_t)block * 4 < nv) block *= 2;
    looped_shape(r, p, block);
    why(p, "%d threads per row loop over it once per phase (%d phases), %d loads in flight", block,
        r->analysis->num_levels + 1, p->batch);
    return 1;
}

static int check_looped(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap) {
    (void)d;
    if (!check_vector_align(p, a, err, cap)) return 0;
    if (p->rows_per_cta != 1) REJECT("plan: a looped plan takes one row per CTA");
    if (p->stages || p->smem_bytes) REJECT("plan: a looped plan has no shared-memory ring (stages and smem_bytes 0)");
    return 1;
}

static int candidates_looped(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap) {
    int n = 0;
    for (int block = 128; block <= 1024 && n < cap; block *= 2) {
        out[n] = *base;
        out[n].kind = TN_PLAN_LOOPED;
        looped_shape(r, &out[n], block);
        /* ... and a row a CTA launched in waves: each CTA's second pass still finds its row in L2 (about as
           torch.compile's looped reductions run; untimed as a rule). */
        if (++n < cap && out[n - 1].grid < r->rows && r->rows <= 0x7fffffff) {
            out[n] = out[n - 1];
            out[n++].grid = r->rows;
        }
    }
    return n;
}

/* ---- tma: rows in shared memory through a ring of bulk-copied stages ----------------- */

int64_t tn_tma_static_smem(const tn_analysis *a, const tn_plan_desc *p) {
    return p->threads_per_row > 32 ? (int64_t)a->num_reductions * p->rows_per_cta * (p->threads_per_row / 32) * 4 : 0;
}

int64_t tn_tma_dynamic_smem(const tn_analysis *a, const tn_plan_desc *p) {
    return (int64_t)p->stages * p->rows_per_cta * p->cols * a->buffer_elem_bytes + 8 * (int64_t)p->stages;
}

/* Whether a tma ring of two whole rows fits one CTA's shared memory (with the
   system's 1 KiB and the stages' barriers). */
static int two_rows_fit(const tn_device_props *d, int64_t row_bytes) {
    return 2 * (row_bytes + 16) + 1024 <= d->smem_per_block_optin;
}

/* What makes a tma plan impossible whatever its shape; 0 and the reason if so. */
static int tma_possible(const tn_analysis *a, int64_t cols, int align, const tn_device_props *d, char *err, size_t cap) {
    if (d->cc_major < 9) REJECT("bulk copies need sm_90 (the target is sm_%d%d)", d->cc_major, d->cc_minor);
    if (a->num_stage_inputs == 0) REJECT("no ROW input to copy into shared memory");
    if (align < 16) REJECT("bulk copies need 16-byte aligned rows; the tensors are aligned to %d bytes", align);
    for (int k = 0; k < a->num_stage_inputs; k++) {
        const int next = k + 1 < a->num_stage_inputs ? a->stage_elem_offset[k + 1] : a->buffer_elem_bytes;
        if ((cols * (next - a->stage_elem_offset[k])) % 16)
            REJECT("bulk copies move multiples of 16 bytes; a row of %lld elements of %d bytes is not one",
                   (long long)cols, next - a->stage_elem_offset[k]);
    }
    return 1;
}

/* Fills the tma fields for (t, rows, stages); 0 if they do not fit the device. */
static int tma_shape(const tn_schedule_request *r, tn_plan_desc *p, int t, int rows, int stages) {
    const tn_device_props *d = r->props;
    const int block = t * rows;
    if (block % 32 || block > d->max_threads_per_block || stages < 1) return 0;
    p->threads_per_row = t;
    p->rows_per_cta = rows;
    p->block_threads = block;
    p->stages = stages;
    p->batch = (int)min_i64(ceil_div(p->cols / p->vec, t), 4); /* loop unroll: shared memory answers fast */
    const int64_t dyn = tn_tma_dynamic_smem(r->analysis, p), stat = tn_tma_static_smem(r->analysis, p);
    if (dyn + stat > d->smem_per_block_optin) return 0;
    p->smem_bytes = (int)dyn;
    /* Persistent: as many CTAs as fit on every SM (1 KiB of shared memory is the system's per CTA). */
    int64_t per_sm = min_i64(d->smem_per_sm / (dyn + stat + 1024), d->max_threads_per_sm / block);
    per_sm = per_sm < 1 ? 1 : per_sm > 32 ? 32 : per_sm;
    p->grid = min_i64(ceil_div(r->rows, rows), per_sm * d->sm_count);
    return 1;
}

/* Many row groups: one a CTA, with one stage, launched in waves rather than
   a persistent grid cycling a ring: the CTAs an SM's shared memory holds
   overlap one's copy with another's work as the ring would within one CTA,
   and the hardware starts each next CTA as one ends, without the persistent
   loop's 5-7% (bench/probes, rowcopy). tune on the H200 (bf16, 2026-12-04,
   rows of 64 KiB at 3 CTAs an SM): softmax 4096 x 32768 134.4 us at 512
   threads against 143.2 persistent at two stages (132.8 at 1024); rmsnorm
   136.3; layernorm 16384 x 32768 655.7 against 665.3 persistent at one
   stage. Where 2 or more CTAs an SM fit (one alone would wait for its own
   copy) and from TN_TMA_MIN_WAVES waves, so that the last, partial one costs
   little; p untouched otherwise. */
static void tma_in_waves(const tn_schedule_request *r, tn_plan_desc *p) {
    tn_plan_desc q = *p;
    const int64_t groups = ceil_div(r->rows, p->rows_per_cta);
    if (groups > 0x7fffffff || !tma_shape(r, &q, p->threads_per_row, p->rows_per_cta, 1) ||
        q.grid < 2LL * r->props->sm_count || groups < (int64_t)TN_TMA_MIN_WAVES * q.grid)
        return;
    q.grid = groups;
    *p = q;
    why(p, "one stage a CTA, %lld CTAs in waves: the CTAs an SM's shared memory holds overlap one's copy with "
        "another's work", (long long)groups);
}

/* Whether rows the register plan `reg` holds are the tma plans' (schedule_tma): `reg` holds them at one CTA
   an SM, the fusion evaluates special functions in two or more phases and two rows fit in shared memory. */
static int tma_takes_from_registers(const tn_schedule_request *r, const tn_plan_desc *reg) {
    return ctas_an_sm(r->props, row_regs(r, reg->vec, reg->batch), reg->block_threads) < 2 &&
           r->analysis->special_evals >= 2 && two_rows_fit(r->props, r->cols * r->analysis->buffer_elem_bytes);
}

static int schedule_tma(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap) {
    const tn_analysis *a = r->analysis;
    const tn_device_props *d = r->props;
    if (!tma_possible(a, r->cols, r->align, d, err, cap)) return 0;
    p->align_bytes = 16; /* bulk copies need it whatever the vector width */
    const int64_t nv = r->cols / p->vec;
    const int64_t row_bytes = r->cols * a->buffer_elem_bytes;
    /* Where the register plan cannot hold the row, or holds it in one CTA an
       SM for a fusion with special functions in two or more phases while two
       rows fit in shared memory: one CTA alone computes its row's exps with
       no loads in flight, where the ring copies the next row meanwhile (tune
       on the H200, bf16 4096 x 32768: softmax 140.8 us against 170.1 in
       registers). The light fusions stream well enough from one CTA (rmsnorm
       137.0 in registers, 146.0 tma at two stages; layernorm 153.6, 192.7). */
    if (!forced) {
        tn_plan_desc reg = *p;
        char reg_err[256];
        if (!avoided(r, TN_PLAN_REGISTER) && schedule_register(r, &reg, 0, reg_err, sizeof reg_err)) {
            const int64_t reg_ctas = ctas_an_sm(d, row_regs(r, reg.vec, reg.batch), reg.block_threads);
            if (!tma_takes_from_registers(r, &reg))
                REJECT("the register plan holds the row (%lld bytes) in registers, %lld CTA%s an SM%s",
                       (long long)row_bytes, (long long)reg_ctas, reg_ctas == 1 ? "" : "s",
                       reg_ctas >= 2 || a->special_evals < 2 ? "" : ", and two rows do not fit in shared memory");
        }
    }
    /* About 8 vectors per thread per phase: a row that fills shared memory
       leaves one CTA per SM, whose threads are all the SM has to keep bytes
       moving (tune on the H200: rmsnorm 512 x 65536 bf16 46.0 us at 1024
       threads against 53.9 at 512); stages of about 32 KiB, so a few CTAs per
       SM keep enough bytes in flight. */
    int t = 1;
    while (t < 1024 && ceil_div(nv, t) > 8) t *= 2;
    const int rmin = t < 32 ? 32 / t : 1;
    int rows = rmin;
    while (rows * 2 * t <= 1024 && rows * 2 * row_bytes <= 32768) rows *= 2;
    /* Few rows: smaller row groups so every SM gets one. */
    while (rows > rmin && ceil_div(r->rows, rows) < d->sm_count) rows /= 2;
    for (; rows >= rmin; rows /= 2)
        for (int stages = 2; stages >= 1; stages--)
            if (tma_shape(r, p, t, rows, stages)) {
                why(p, "tma: %d rows x %lld bytes per stage, %d stages in shared memory (%d bytes), filled by bulk "
                    "copies; %d threads per row read it back %d vectors at a time", rows, (long long)row_bytes,
                    stages, p->smem_bytes, t, (int)ceil_div(nv, t));
                tma_in_waves(r, p);
                return 1;
            }
    REJECT("a row of %lld bytes does not fit in %d bytes of shared memory", (long long)row_bytes,
           d->smem_per_block_optin);
}

static int check_tma(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap) {
    if (!check_no_ws_fields(p, err, cap)) return 0;
    if (!tma_possible(a, p->cols, p->align_bytes, d, err, cap)) return 0;
    if (p->align_bytes != 16) REJECT("plan: a tma plan needs align_bytes 16, not %d", p->align_bytes);
    if (p->stages < 1) REJECT("plan: a tma plan needs at least one stage");
    if (p->smem_bytes != tn_tma_dynamic_smem(a, p))
        REJECT("plan: smem_bytes %d is not what %d stages of %d rows need (%lld)", p->smem_bytes, p->stages,
               p->rows_per_cta, (long long)tn_tma_dynamic_smem(a, p));
    if (p->smem_bytes + tn_tma_static_smem(a, p) > d->smem_per_block_optin)
        REJECT("plan: %lld bytes of shared memory, above the device's %d per CTA",
               (long long)(p->smem_bytes + tn_tma_static_smem(a, p)), d->smem_per_block_optin);
    return 1;
}

static int candidates_tma(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap) {
    char err[256];
    if (!tma_possible(r->analysis, base->cols, r->align, r->props, err, sizeof err)) return 0;
    int n = 0;
    const int64_t nv = base->cols / base->vec;
    for (int t = 1; t <= 1024; t *= 2) {
        if (ceil_div(nv, t) > 32 || (t > 1 && t / 2 >= nv)) continue;
        for (int rows = t < 32 ? 32 / t : 1; rows * t <= 1024; rows *= 2)
            for (int stages = 1; stages <= 3 && n < cap; stages++) {
                tn_plan_desc p = *base;
                p.kind = TN_PLAN_TMA;
                p.align_bytes = 16;
                if (!(rows * t >= 64 && tma_shape(r, &p, t, rows, stages))) continue;
                out[n++] = p;
                /* ... and, with one stage, a row group a CTA launched in waves instead of a persistent grid
                   (bench/probes, rowcopy: a persistent grid cost 5-7% against one row a CTA; untimed as a
                   rule). */
                const int64_t groups = ceil_div(r->rows, rows);
                if (stages == 1 && n < cap && groups > p.grid && groups <= 0x7fffffff) {
                    p.grid = groups;
                    out[n++] = p;
                }
            }
    }
    return n;
}

/* ---- tma-ws: a producer warp keeps each consumer warp group's ring full -------------- */

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
        REJECT("internal: split %d + %d x %d exceeds the CTA's %d x %d registers", *producer, consumer_groups, *consumer,
               launch, block_threads);
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

static int schedule_cluster(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap);

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
    if (two_rows_fit(d, row_bytes))
        REJECT("two rows of %lld bytes fit in shared memory at once: the tma plan double-buffers them with every "
               "thread computing", (long long)row_bytes);
    if (ceil_div(r->rows, 128 / t) < (int64_t)TN_WS_MIN_GROUPS_PER_SM * d->sm_count)
        REJECT("%lld rows are under %d per SM: too few to keep consumer groups busy", (long long)r->rows,
               TN_WS_MIN_GROUPS_PER_SM);
    tn_plan_desc split = *p;
    char split_err[320];
    if (!avoided(r, TN_PLAN_CLUSTER) && schedule_cluster(r, &split, 0, split_err, sizeof split_err))
        REJECT("the cluster plan holds the row over %d CTAs%s", split.cluster,
               split.shared_slice ? ", each slice in shared memory, several CTAs an SM"
               : split.carry      ? " with its special-function values carried in registers"
                                  : ", streamed at one CTA an SM");
    return ws_any_shape(r, p, t, err, cap);
}

static int schedule_tma_ws(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap) {
    if (!tma_possible(r->analysis, r->cols, r->align, r->props, err, cap)) return 0;
    p->align_bytes = 16;
    const int t = ws_threads_per_row(r->cols / p->vec);
    if (!(forced ? ws_any_shape : ws_chosen_shape)(r, p, t, err, cap)) return 0;
    why(p, "tma-ws: a producer warp%s keeps %d slots of %lld bytes full with bulk copies for each of %d consumer warp "
        "group%s; a group takes %d row%s of %d threads each%s", p->consumer_groups > 1 ? " group" : "", p->stages,
        (long long)tn_ws_stage_bytes(r->analysis, p), p->consumer_groups, p->consumer_groups > 1 ? "s" : "",
        ws_rows_per_group(p), ws_rows_per_group(p) > 1 ? "s" : "", p->threads_per_row,
        p->chunks > 1 ? ", streamed through its slots in chunks" : "");
    if (p->consumer_groups > 1)
        why(p, "setmaxnreg: producer %d, consumers %d registers a thread", p->producer_regs, p->consumer_regs);
    return 1;
}

static int check_tma_ws(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap) {
    if (!tma_possible(a, p->cols, p->align_bytes, d, err, cap)) return 0;
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

static int candidates_tma_ws(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap) {
    char err[256];
    if (!tma_possible(r->analysis, base->cols, r->align, r->props, err, sizeof err)) return 0;
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

/* ---- cluster: each row split over a cluster of CTAs, each slice in registers ---------- */

/* Registers a cluster thread needs for `batch` vectors of its slice. */
static int slice_regs(const tn_schedule_request *r, int vec, int batch) {
    return row_regs(r, vec, batch) + TN_CLUSTER_EXCHANGE_REGS;
}

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
        !tn_cluster_slices_fit(nv, cl) || t < 32 ||
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
   again with smaller clusters then (api/plan.c, clusters_short). */
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
            if (t >= 256 && ragged(nvl, t) && nvl % (t / 2) == 0 && cluster_shape(r, &half, cl, t / 2) &&
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

/* Whether few rows go on to clusters of cl CTAs: slices of TN_CLUSTER_MIN_SLICE
   or more; past the portable 8 (sm_90's non-portable 16), slices of
   TN_CLUSTER_NONPORTABLE_MIN_SLICE and one CTA an SM for every row's cluster
   (a cluster of 16 needs 16 SMs of one GPC; the plan build takes clusters of 8
   where the driver places too few). */
static int few_rows_double(const tn_schedule_request *r, int cl, int64_t row_bytes) {
    if (cl <= TN_MAX_CLUSTER) return row_bytes / cl >= TN_CLUSTER_MIN_SLICE;
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
    while (few && 2 * cl <= tn_max_cluster(r->props->cc_major) && few_rows_double(r, 2 * cl, row_bytes)) {
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
    if (few && !p->ctas_per_sm && (p->ctas_per_sm = bound_ctas(r, p))) p->grid = cluster_grid(r, p);
    return cl;
}

/* Rows one CTA's registers hold, but fewer than a quarter of the SMs: spread
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
   us, 1.41 over 4 CTAs; 64 x 8192 2.27, 2.39), and so do 34 rows and more,
   which the register plan already spreads (rmsnorm 64 x 16384 3.42 us, 3.45
   over 8 CTAs; 132 x 20480 5.12, 5.77 over 2; layernorm 100 x 16384 over 4
   CTAs of 256 x 2: the driver ran 92 clusters, 5.89 us). 0 (p untouched)
   where no cluster splits the row's vectors under those limits. */
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
        why(p, "cluster: %lld rows of %lld bytes leave SMs idle in one CTA a row: each split over %d CTAs of %d "
            "threads, %d vectors each held in registers; reductions meet through distributed shared memory",
            (long long)r->rows, (long long)row_bytes, cl, p->threads_per_row, p->batch);
        if (p->ctas_per_sm)
            why(p, "compiled for %d CTAs an SM: special functions in %d phases keep each CTA computing long",
                p->ctas_per_sm, a->special_evals);
        choose_carry(r, p);
        return 1;
    }
    return 0;
}

static void why_persistent_clusters(tn_plan_desc *p) {
    why(p, "%lld clusters loop over the rows (on a GPU, as many as the driver says run at once)",
        (long long)(p->grid / p->cluster));
}

static void why_streamed(tn_plan_desc *p) {
    if (p->stages == 1)
        why(p, "each cluster's next row streamed into one stage of shared memory while it reduces this one");
    else if (p->stages > 1)
        why(p, "each cluster's next rows streamed into %d stages of shared memory while it reduces this one",
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
    why(p, "each CTA's slices of the COL inputs loaded once into shared memory, read there for every row");
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
    why(p, "cluster: %d reduction levels would each idle the register plan's one CTA an SM: each row split over 2 "
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
    why(p, "cluster: %d reduction levels would each idle the register plan's one CTA an SM: each row split over 2 "
        "CTAs of %d threads, %d vectors each held in registers, compiled for %d CTAs an SM so that one's loads "
        "overlap another's reductions", a->num_levels, p->threads_per_row, p->batch, p->ctas_per_sm);
    why_persistent_clusters(p);
    cache_cols(r, p);
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
    if (r->analysis->num_stage_inputs && !p->stages && !p->prefetch && !p->shared_slice && cluster_prefetch_ok(p, r->analysis) &&
        cluster_staged(r, p, 1, &q))
        *p = q;
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
    for (int c = 2; c <= TN_MAX_CLUSTER && two_stages && r->analysis->num_stage_inputs; c *= 2) {
        tn_plan_desc q = *p, s;
        if (!cluster_fit(r, &q, c, slice_batch(r->analysis, TN_REG_BATCH_LONG), 1) ||
            !cluster_prefetch_ok(&q, r->analysis) || !cluster_staged(r, &q, 2, &s))
            continue;
        tn_plan_desc cached = s;
        if (r->analysis->col_elem_bytes && !cluster_col_cached(r, &cached)) continue;
        *p = s;
        return c;
    }
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
   23.4). Fusions of two or more reduction levels without special functions in
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
        if (q.grid < (int64_t)TN_SHARED_SLICE_MIN_WAVES * q.ctas_per_sm * d->sm_count) return 0;
        *p = q;
        why(p, "cluster: each row split over %d CTAs of %d threads, its %lld-byte slice copied once into shared "
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
static int schedule_cluster(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap) {
    const tn_analysis *a = r->analysis;
    const tn_device_props *d = r->props;
    if (d->cc_major < 9) REJECT("thread-block clusters need sm_90 (the target is sm_%d%d)", d->cc_major, d->cc_minor);
    const int64_t row_bytes = r->cols * a->buffer_elem_bytes, nv = r->cols / p->vec;
    tn_plan_desc reg = *p;
    char reg_err[256];
    const int one_cta = !avoided(r, TN_PLAN_REGISTER) && schedule_register(r, &reg, 0, reg_err, sizeof reg_err);
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
    const int heavy_waves = must_carry && one_cta && a->num_carried && tma_takes_from_registers(r, &reg) &&
                            r->rows <= (int64_t)TN_HEAVY_CLUSTER_ROWS_AN_SM * d->sm_count;
    /* N not a multiple of a 16-byte vector (odd N): the register plan holds the row in 16-byte vectors
       (peeled), a cluster only in narrower accesses. Rows narrowed by their alignment alone keep the few-row
       clusters they took before uneven slices (their vectors split evenly). */
    if (!forced && one_cta && reg.peel && p->vec < reg.vec && r->cols % reg.vec)
        REJECT("the register plan holds the row in %d-byte vectors from each row's first 16-byte boundary (peel); a "
               "cluster would take it in %d-byte accesses", reg.vec * a->min_row_elem_size,
               p->vec * a->min_row_elem_size);
    if (!forced && one_cta && row_bytes > TN_CLUSTER_SHORT_ROW_BYTES &&
        (r->rows * 4 <= d->sm_count ? row_bytes < TN_CLUSTER_FEW_ROW_BYTES : r->rows * 2 <= d->sm_count) &&
        spread_short_rows(r, p))
        return 1;
    if (!forced && !few && one_cta && r->rows * 4 > d->sm_count && pair_for_levels(r, &reg, p)) return 1;
    if (!forced && !few && !heavy_waves) {
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
        if (must_carry && (two_rows_fit(d, row_bytes) || !a->num_carried))
            REJECT("a row fits one SM's shared memory and the fusion evaluates special functions in %d phases: the "
                   "tma plans stream it%s", a->special_evals,
                   a->num_carried ? ", two rows at once" : " (no value to carry in registers)");
    }
    if (!forced && !few && !heavy_waves && share_long_slices(r, p)) return 1;
    /* Few rows take more vectors a thread, unless that leaves no room to carry (softmax 33 x 98304 over 8 CTAs of
       128 x 12 carrying exp: 8.3-8.9 us without carry, against 9.3 over 4 of 128 x 24). */
    const int most = few && !(heavy && a->num_carried) ? TN_CLUSTER_FEW_BATCH
                     : heavy_waves                        ? TN_REG_BATCH_LONG
                                                          : TN_REG_BATCH_LONGER;
    const int batch = slice_batch(a, most);
    const tn_plan_desc base = *p;
    int cl = !forced && !few && !heavy ? cluster_pick_streamed(r, p, batch, 1) : 0;
    if (!cl) cl = cluster_pick(r, p, batch, heavy, few, must_carry);
    /* Heavy rows under 8 waves that no split leaves 2 CTAs an SM (65584 columns: only clusters of 2 split them):
       streamed at one CTA an SM, one stage, the exps recomputed (tune, H200, bf16 softmax, 2026-12-04: 1000 x
       65584 77.3 us over 2 CTAs of 512 x 9, 76.2 at 256 x 17, against 96.3 for the tma-ws ring; 600 x 65584
       49.7, 48.8, against 62.8; two stages 2-4% slower). */
    int streamed_heavy = 0;
    if (!cl && must_carry && (cl = cluster_pick_streamed(r, p, batch, 0))) streamed_heavy = 1;
    /* The few rows' 16 vectors a thread were for carrying: where the values do not fit even so (vectors narrowed
       by alignment), the 24. */
    if (cl && few && heavy && a->num_carried && most != TN_CLUSTER_FEW_BATCH && !carry_fits(r, p)) {
        tn_plan_desc wide = base;
        const int wide_cl = cluster_pick(r, &wide, slice_batch(a, TN_CLUSTER_FEW_BATCH), heavy, few, 0);
        if (wide_cl) *p = wide, cl = wide_cl;
    }
    if (!cl && must_carry)
        REJECT("no split of the row into slices of %d vectors a thread leaves 2 CTAs an SM: the tma plans stream it",
               batch);
    if (!cl)
        REJECT("a row of %lld vectors does not split into %d or fewer slices of whole vectors that fit in registers",
               (long long)nv, TN_MAX_CLUSTER);
    if (must_carry && !streamed_heavy && !carry_fits(r, p))
        REJECT("the special-function values of a slice of %d vectors a thread do not fit in registers beside it: "
               "the tma plans stream the row", p->batch);
    /* Not for few rows (a cluster a row, where the driver places them all), nor forced: a forced cluster plan is
       the base that tune's candidates and the tests vary. */
    if (!few && !forced) stream_next_rows(r, p);
    why(p, "cluster: each row split over %d CTAs of %d threads, %d vectors each held in registers (%lld bytes a CTA); "
        "reductions meet through distributed shared memory", cl, p->threads_per_row, p->batch,
        (long long)(tn_cluster_slice_vectors(nv, cl) * p->vec * a->buffer_elem_bytes));
    why_persistent_clusters(p);
    why_streamed(p);
    if (!few && !forced) cache_cols(r, p);
    if (p->ctas_per_sm && heavy)
        why(p, "compiled for %d CTAs an SM: special functions in %d phases keep each CTA computing long, more CTAs "
            "overlap one's loads with another's work", p->ctas_per_sm, a->special_evals);
    else if (p->ctas_per_sm)
        why(p, "compiled for %d CTAs an SM: few rows, so more clusters at once", p->ctas_per_sm);
    choose_carry(r, p);
    return 1;
}

static int check_cluster(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap) {
    if (d->cc_major < 9) REJECT("thread-block clusters need sm_90 (the target is sm_%d%d)", d->cc_major, d->cc_minor);
    if (p->consumer_groups || p->chunks != 1 || p->producer_regs || p->consumer_regs)
        REJECT("plan: a cluster plan has no consumer groups, chunks or register sharing");
    if (p->stages < 0 || p->stages > TN_CLUSTER_MAX_STAGES)
        REJECT("plan: a cluster plan streams its slices through 0 to %d stages, not %d", TN_CLUSTER_MAX_STAGES,
               p->stages);
    if (!check_access_align(p, a, err, cap)) return 0;
    const int64_t nv = p->cols / p->vec;
    if (!tn_cluster_slices_fit(nv, p->cluster))
        REJECT("plan: cluster %d must be 2 to %d CTAs, each a slice of at least one whole vector (%lld vectors a row)",
               p->cluster, tn_max_cluster(d->cc_major), (long long)nv);
    if (p->rows_per_cta != 1) REJECT("plan: a cluster plan takes one row per cluster");
    if (p->grid > p->rows * p->cluster)
        REJECT("plan: grid %lld is more than a cluster of %d for each of the %lld rows", (long long)p->grid, p->cluster,
               (long long)p->rows);
    if (p->prefetch && !cluster_prefetch_ok(p, a))
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
    if ((int64_t)p->threads_per_row * p->batch < tn_cluster_slice_vectors(nv, p->cluster))
        REJECT("plan: threads_per_row %d x batch %d vectors do not cover a slice of %lld vectors", p->threads_per_row,
               p->batch, (long long)tn_cluster_slice_vectors(nv, p->cluster));
    return 1;
}

static int candidates_cluster(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap) {
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

/* ---- the kind table -------------------------------------------------------------- */

typedef struct kind_row {
    tn_plan_kind kind;
    /* Fills p (vec and the common fields are set); 0 and why not in err. Not
       forced: a kind may also decline shapes where another kind is better. */
    int (*schedule)(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap);
    /* The kind's own rules for a plan (the common ones are in tn_plan_desc_check). */
    int (*check)(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap);
    /* The plans `tune` times for this kind. */
    int (*candidates)(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap);
} kind_row;

/* In preference order: the first kind that takes the shape is chosen. */
static const kind_row k_kinds[] = {
    {TN_PLAN_TMA_WS, schedule_tma_ws, check_tma_ws, candidates_tma_ws},
    {TN_PLAN_CLUSTER, schedule_cluster, check_cluster, candidates_cluster},
    {TN_PLAN_TMA, schedule_tma, check_tma, candidates_tma},
    {TN_PLAN_REGISTER, schedule_register, check_register, candidates_register},
    {TN_PLAN_LOOPED, schedule_looped, check_looped, candidates_looped},
};
#define NUM_KINDS (int)(sizeof k_kinds / sizeof k_kinds[0])

static const kind_row *kind_row_of(tn_plan_kind kind) {
    for (int i = 0; i < NUM_KINDS; i++)
        if (k_kinds[i].kind == kind) return &k_kinds[i];
    return NULL;
}

int tn_kind_check(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap) {
    const kind_row *k = kind_row_of(p->kind);
    if (!k) REJECT("plan: unknown kind %d", (int)p->kind);
    return k->check(p, a, d, err, cap);
}

/* The fields every kind shares: shape, target, vector width. */
static int common_fields(const tn_schedule_request *r, tn_plan_desc *p, char *err, size_t cap) {
    memset(p, 0, sizeof *p);
    p->chunks = 1;
    p->cluster = 1;
    p->rows = r->rows;
    p->cols = r->cols;
    p->cc = r->props->cc_major * 10 + r->props->cc_minor;
    if (!tn_analysis_plannable(r->analysis, r->props, err, cap)) return 0;
    if (r->pdl && p->cc < 90) REJECT("programmatic dependent launch needs sm_90 or newer; the target is sm_%d", p->cc);
    p->pdl = r->pdl;
    p->vec = pick_vec(r, p);
    p->align_bytes = tn_plan_access_align(p, r->analysis->max_elem_size);
    return 1;
}

/* ---- register and cluster: the COL vectors with the row's loads ------------------------------- */

/* The launch bound (ctas_per_sm) under which plan p takes its COL vectors (weight, bias) into registers with
   the row's own loads (plan field cols_early) rather than after the reductions; -1 where it does not. Where
   every CTA is resident at once and takes one row group, nothing hides that second wait for memory (tune,
   H100, add_rmsnorm bf16 5 x 40960: 3.60 us over 8 CTAs of 512 x 2, whose weight comes with the row, against
   3.98-4.61 for slices of 3-5 vectors a thread that load it after the cluster's exchange). The registers the
   plan already counts must leave room for them at the CTAs an SM that one wave needs (a cluster plan one more
   where it needs two or more, as clusters pack into GPCs: clusters_all_run); a few-row cluster plan's bound
   above that (bound_ctas, for more clusters at once) comes down to it. Rows of 2 vectors a thread or fewer
   take their COL vectors so anyway. */
static int cols_early_bound(const tn_schedule_request *r, const tn_plan_desc *p) {
    const tn_analysis *a = r->analysis;
    const tn_device_props *d = r->props;
    if (!a->col_elem_bytes || p->batch <= 2 || p->cols_early || p->pipeline || !tn_plan_cols_early_kind(p))
        return -1;
    const int cluster = p->kind == TN_PLAN_CLUSTER;
    const int64_t groups = cluster ? r->rows : ceil_div(r->rows, p->rows_per_cta);
    if ((cluster ? p->grid / p->cluster : p->grid) < groups) return -1; /* CTAs loop: the next group hides it */
    int64_t per_sm = ceil_div(p->grid, d->sm_count);
    if (cluster && per_sm >= 2) per_sm++;
    if (per_sm * p->block_threads > d->max_threads_per_sm) return -1;
    /* Their words counted as the row's are (TN_REG_NEED: twice, raw and converted; at once they spilled 4 bytes
       in add_rmsnorm 1 x 262144's 16 CTAs of 128 x 16). */
    const int64_t cols = 2 * p->batch * ceil_div((int64_t)p->vec * a->col_elem_bytes, 4);
    const int64_t carried = p->carry ? tn_plan_carry_floats(p, a->num_carried) : 0;
    const int64_t regs = (cluster ? slice_regs(r, p->vec, p->batch) : row_regs(r, p->vec, p->batch)) + carried;
    const int64_t bound = per_sm > p->ctas_per_sm ? per_sm : p->ctas_per_sm;
    if (regs + cols <= regs_cap(d, (int)(bound * p->block_threads))) return p->ctas_per_sm;
    if (p->ctas_per_sm > per_sm && regs + cols <= regs_cap(d, (int)(per_sm * p->block_threads)))
        return per_sm >= 2 ? (int)per_sm : 0;
    return -1;
}

static tn_plan_desc with_cols_early(const tn_plan_desc *p, int bound) {
    tn_plan_desc q = *p;
    q.cols_early = 1;
    q.ctas_per_sm = bound;
    return q;
}

static void choose_cols_early(const tn_schedule_request *r, tn_plan_desc *p) {
    const int bound = cols_early_bound(r, p), was = p->ctas_per_sm;
    if (bound < 0) return;
    *p = with_cols_early(p, bound);
    why(p, "cols_early: the COL vectors loaded with the row's, as every CTA runs at once and takes one row group");
    if (bound != was && bound) why(p, "compiled for %d CTAs an SM (%d before): the wave needs no more", bound, was);
    if (bound != was && !bound) why(p, "no launch bound (%d CTAs an SM before): the wave needs one an SM", was);
}

int tn_schedule(const tn_schedule_request *r, tn_plan_desc *p, char *err, size_t cap) {
    tn_plan_desc base;
    if (!common_fields(r, &base, err, cap)) return 0;
    char passed[640] = "";
    for (int i = 0; i < NUM_KINDS; i++) {
        const kind_row *k = &k_kinds[i];
        const int forced = r->kind == (int)k->kind;
        if (r->kind >= 0 && !forced) continue;
        char why_not[320] = "";
        *p = base;
        p->kind = k->kind;
        if (forced) why(p, "%s plan forced", tn_plan_kind_name(k->kind));
        else if (passed[0]) why(p, "%s", passed);
        if (!forced && avoided(r, k->kind)) snprintf(why_not, sizeof why_not, "ptxas spilled in its plan");
        else if (k->schedule(r, p, forced, why_not, sizeof why_not)) {
            choose_cols_early(r, p);
            return 1;
        }
        if (forced) {
            snprintf(err, cap, "%s plan: %s", tn_plan_kind_name(k->kind), why_not);
            return 0;
        }
        size_t len = strlen(passed);
        snprintf(passed + len, sizeof passed - len, "%snot %s: %s", len ? "; " : "", tn_plan_kind_name(k->kind),
                 why_not);
    }
    snprintf(err, cap, "no plan kind takes the shape: %s", passed);
    return 0;
}

/* The plans that take an online pair (tn_plan_online_kind), but shared slices, sized for the few registers of
   many CTAs an SM (the pair's second pass spilled 460 bytes in softmax 4096 x 65536's 8 x 64 at 7 an SM). */
static int online_fits(const tn_plan_desc *p) { return tn_plan_online_kind(p) && !p->shared_slice; }

int tn_schedule_candidates(const tn_schedule_request *r, tn_plan_desc *out, int cap) {
    tn_plan_desc base;
    char err[320];
    if (!common_fields(r, &base, err, sizeof err)) return 0;
    memset(base.why, 0, sizeof base.why); /* a candidate is plain data: nothing left behind the text */
    snprintf(base.why, sizeof base.why, "tune candidate");
    int n = 0;
    for (int i = 0; i < NUM_KINDS && n < cap; i++) n += k_kinds[i].candidates(r, &base, out + n, cap - n);
    /* Plans that keep the row on chip, again with the special-function values a later phase needs carried in
       registers where they fit (untimed until tune on the GPU says: softmax's register plan takes 87 registers
       with it, 128 without, at 4096 x 16384). */
    for (int i = 0, plain = n; i < plain && n < cap; i++)
        if (carry_fits(r, &out[i])) {
            out[n] = out[i];
            out[n++].carry = 1;
        }
    /* ... and each plan that would wait for its COL vectors after the reductions with nothing to hide it, again
       with them taken with the row's loads (cols_early_bound). */
    for (int i = 0, plain = n; i < plain && n < cap; i++) {
        const int bound = cols_early_bound(r, &out[i]);
        if (bound < 0) continue;
        out[n] = with_cols_early(&out[i], bound);
        int twice = 0; /* a plan and its other-bound twin may come down to the same bound */
        for (int k = plain; k < n && !twice; k++) twice = tn_plan_desc_same(&out[k], &out[n]);
        n += !twice;
    }
    /* ... and each plan of a fusion with online pairs (softmax's max and sum of exp) again with them reduced
       together (of a plan and its carrying twin, the twin): one reduction round and one cluster exchange a row
       instead of two (untimed: tune decides). */
    for (int i = 0, plain = n; i < plain && n < cap && r->analysis->online_pairs; i++)
        if (online_fits(&out[i]) && (out[i].carry || !carry_fits(r, &out[i]))) { /* the carrying twin, where any */
            out[n] = out[i];
            out[n++].online = 1;
        }
    return n;
}
