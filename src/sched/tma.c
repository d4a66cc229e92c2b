/* tma: rows in shared memory through a ring of bulk-copied stages. The tma plan's schedule, check and tune
   candidates for the kind table in heuristics.c, its shared memory (heuristics.h), and what the tma-ws and
   cluster kinds ask of it (sched_internal.h). */
#include "sched/sched_internal.h"

int64_t tn_tma_static_smem(const tn_analysis *a, const tn_plan_desc *p) {
    return p->threads_per_row > 32 ? (int64_t)a->num_reductions * p->rows_per_cta * (p->threads_per_row / 32) * 4 : 0;
}

int64_t tn_tma_dynamic_smem(const tn_analysis *a, const tn_plan_desc *p) {
    return (int64_t)p->stages * p->rows_per_cta * p->cols * a->buffer_elem_bytes + 8 * (int64_t)p->stages;
}

/* Whether a tma ring of two whole rows fits one CTA's shared memory (with the
   system's 1 KiB and the stages' barriers). */
int tn_two_rows_fit(const tn_device_props *d, int64_t row_bytes) {
    return 2 * (row_bytes + 16) + 1024 <= d->smem_per_block_optin;
}

/* What makes a tma plan impossible whatever its shape; 0 and the reason if so. */
int tn_tma_possible(const tn_analysis *a, int64_t cols, int align, const tn_device_props *d, char *err, size_t cap) {
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
    tn_why(p, "one stage a CTA, %lld CTAs in waves: the CTAs an SM's shared memory holds overlap one's copy with "
           "another's work", (long long)groups);
}

/* Whether rows the register plan `reg` holds are the tma plans' (tn_schedule_tma): `reg` holds them at one CTA
   an SM, the fusion evaluates special functions in two or more phases and two rows fit in shared memory. */
int tn_tma_takes_from_registers(const tn_schedule_request *r, const tn_plan_desc *reg) {
    return ctas_an_sm(r->props, row_regs(r, reg->vec, reg->batch), reg->block_threads) < 2 &&
           r->analysis->special_evals >= 2 && tn_two_rows_fit(r->props, r->cols * r->analysis->buffer_elem_bytes);
}

int tn_schedule_tma(const tn_schedule_request *r, tn_plan_desc *p, int forced, char *err, size_t cap) {
    const tn_analysis *a = r->analysis;
    const tn_device_props *d = r->props;
    if (!tn_tma_possible(a, r->cols, r->align, d, err, cap)) return 0;
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
        if (!avoided(r, TN_PLAN_REGISTER) && tn_schedule_register(r, &reg, 0, reg_err, sizeof reg_err)) {
            const int64_t reg_ctas = ctas_an_sm(d, row_regs(r, reg.vec, reg.batch), reg.block_threads);
            if (!tn_tma_takes_from_registers(r, &reg))
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
                tn_why(p, "tma: %d rows x %lld bytes per stage, %d stages in shared memory (%d bytes), filled by bulk "
                       "copies; %d threads per row read it back %d vectors at a time", rows, (long long)row_bytes,
                       stages, p->smem_bytes, t, (int)ceil_div(nv, t));
                tma_in_waves(r, p);
                return 1;
            }
    REJECT("a row of %lld bytes does not fit in %d bytes of shared memory", (long long)row_bytes,
           d->smem_per_block_optin);
}

int tn_check_tma(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap) {
    if (!tn_check_no_ws_fields(p, err, cap)) return 0;
    if (!tn_tma_possible(a, p->cols, p->align_bytes, d, err, cap)) return 0;
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

int tn_candidates_tma(const tn_schedule_request *r, const tn_plan_desc *base, tn_plan_desc *out, int cap) {
    char err[256];
    if (!tn_tma_possible(r->analysis, base->cols, r->align, r->props, err, sizeof err)) return 0;
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
