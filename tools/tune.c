/* `tmanorm tune`: every plan the scheduler could have made for one fusion and
   shape, each checked against the reference and timed on the GPU, fastest
   first, with the scheduler's own choice marked. What the heuristics are
   measured against. */
#include "tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/context.h"
#include "gpu_check.h"
#include "sched/heuristics.h"

#define MAX_CANDIDATES 96

typedef struct candidate {
    tn_plan_desc desc;
    double us;
    int passed;
} candidate;

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Register plans around the scheduler's vector width, and three looped plans. */
static int enumerate(const tn_analysis *a, const tn_plan_desc *base, const tn_device_props *d, candidate *out) {
    int n = 0;
    const int64_t nv = base->cols / base->vec;
    const int words = (int)ceil_div((int64_t)base->vec * a->buffer_elem_bytes, 4);
    for (int t = 1; t <= 1024; t *= 2) {
        int64_t batch = ceil_div(nv, t);
        if (batch > 16 || (t > 1 && (t / 2) >= nv)) continue;
        for (int r = 1; r <= 64 && n < MAX_CANDIDATES; r *= 2) {
            int block = t * r;
            if (block % 32 || block > 1024 || block < 64) continue;
            int cap = (d->regs_per_sm / block) & ~7;
            if (TN_REG_NEED((int)batch * words) > (cap > 255 ? 255 : cap)) continue;
            tn_plan_desc p = *base;
            p.kind = TN_PLAN_REGISTER;
            p.threads_per_row = t;
            p.rows_per_cta = r;
            p.batch = (int)batch;
            p.block_threads = block;
            p.grid = ceil_div(base->rows, r);
            if (p.grid > 0x7fffffff) continue;
            snprintf(p.why, sizeof p.why, "tune candidate");
            out[n++].desc = p;
        }
    }
    for (int block = 256; block <= 1024 && n < MAX_CANDIDATES; block *= 2) {
        tn_plan_desc p = *base;
        p.kind = TN_PLAN_LOOPED;
        p.threads_per_row = p.block_threads = block;
        p.rows_per_cta = 1;
        p.batch = 4;
        int64_t ctas = (int64_t)d->sm_count * (d->max_threads_per_sm / block);
        p.grid = base->rows < ctas ? base->rows : ctas;
        snprintf(p.why, sizeof p.why, "tune candidate");
        out[n++].desc = p;
    }
    return n;
}

static int by_time(const void *x, const void *y) {
    const candidate *a = x, *b = y;
    if (a->passed != b->passed) return b->passed - a->passed;
    return a->us < b->us ? -1 : a->us > b->us;
}

static int same_plan(const tn_plan_desc *a, const tn_plan_desc *b) {
    return a->kind == b->kind && a->vec == b->vec && a->threads_per_row == b->threads_per_row &&
           a->rows_per_cta == b->rows_per_cta && a->batch == b->batch && a->grid == b->grid;
}

int tn_tune(tn_context *ctx, const tn_fusion *f, int64_t rows, int64_t cols, const float *params) {
    static candidate cands[MAX_CANDIDATES];
    tn_analysis a;
    tn_analyze(f, &a);
    tn_plan_desc chosen;
    char err[320];
    tn_schedule_request req = {&a, rows, cols, 16, -1, &ctx->props};
    if (!tn_schedule(&req, &chosen, err, sizeof err)) {
        fprintf(stderr, "tmanorm tune: %s\n", err);
        return 2;
    }
    int n = enumerate(&a, &chosen, &ctx->props, cands);
    printf("tune %s [%lld x %lld]: %d candidates (vec %d)\n", f->name, (long long)rows, (long long)cols, n, chosen.vec);
    for (int i = 0; i < n; i++) {
        tn_strbuf sb;
        tn_strbuf_init(&sb, NULL);
        tn_plan_desc_json(&cands[i].desc, &sb);
        tn_plan_options po = {0, sb.data, NULL};
        tn_plan *plan = NULL;
        tn_check_result cr;
        tn_timing t;
        cands[i].us = 1e30;
        cands[i].passed = 0;
        tn_check_options co = {7, 8, 0, 0};
        if (tn_plan_create(ctx, f, rows, cols, &po, &plan) == TN_STATUS_OK &&
            tn_gpu_check(plan, params, &co, &cr) == TN_STATUS_OK && cr.passed &&
            tn_gpu_time(plan, params, &t) == TN_STATUS_OK) {
            cands[i].us = t.us;
            cands[i].passed = 1;
        }
        tn_plan_destroy(plan);
        tn_strbuf_free(&sb);
    }
    qsort(cands, (size_t)n, sizeof cands[0], by_time);
    printf("%-9s %5s %7s %5s %6s %7s %10s\n", "kind", "vec", "t/row", "rows", "batch", "block", "us");
    for (int i = 0; i < n; i++) {
        const tn_plan_desc *p = &cands[i].desc;
        printf("%-9s %5d %7d %5d %6d %7d %10.2f%s%s\n", tn_plan_kind_name(p->kind), p->vec, p->threads_per_row,
               p->rows_per_cta, p->batch, p->block_threads, cands[i].us, cands[i].passed ? "" : " (failed)",
               same_plan(p, &chosen) ? "  <- scheduler" : "");
    }
    if (n && cands[0].passed) {
        tn_strbuf sb;
        tn_strbuf_init(&sb, NULL);
        tn_plan_desc_json(&cands[0].desc, &sb);
        printf("best: %s\n", sb.data);
        tn_strbuf_free(&sb);
    }
    return 0;
}
