/* `tmanorm tune`: every plan the scheduler could have made for one fusion and
   shape (tn_schedule_candidates: every kind's candidates from the scheduler's
   own table), each checked against the reference and timed on the GPU,
   fastest first, with the scheduler's own choice marked and its regret (its
   time over the best). What the heuristics are measured against.
   Timing in two passes: every candidate with a short screen (3 replays), then
   the fastest few and the scheduler's own again with the full method, twice
   (forward, then in reverse order; the faster kept); the regret compares full
   timings only. */
#include "tune.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/plan_internal.h"
#include "rt/runtime.h"
#include "gpu_check.h"
#include "sched/heuristics.h"

#define MAX_CANDIDATES 2048
#define COMPILE_THREADS 16
#define SCREEN_REPLAYS 3
#define CONFIRM_TOP 6 /* candidates timed again in full after the screen */

typedef struct candidate {
    tn_plan_desc desc;
    tn_plan *plan;
    double us;
    int passed;
    int chosen;    /* the scheduler's own plan */
    int confirmed; /* timed in full, not only screened */
    char error[352];
} candidate;

/* Passed before failed, fully timed before screened, then by time. */
static int by_time(const void *x, const void *y) {
    const candidate *a = x, *b = y;
    if (a->passed != b->passed) return b->passed - a->passed;
    if (a->confirmed != b->confirmed) return b->confirmed - a->confirmed;
    return a->us < b->us ? -1 : a->us > b->us;
}

typedef struct compile_pool {
    tn_context *ctx;
    const tn_fusion *f;
    int64_t rows, cols;
    candidate *cands;
    int n;
    atomic_int next;
} compile_pool;

/* Workers create the candidates' plans: NVRTC runs outside the context's
   locks, so the compiles proceed side by side. */
static void *compile_worker(void *arg) {
    compile_pool *pool = arg;
    for (int i; (i = atomic_fetch_add(&pool->next, 1)) < pool->n;) {
        candidate *c = &pool->cands[i];
        tn_strbuf sb;
        tn_strbuf_init(&sb, NULL);
        tn_plan_desc_json(&c->desc, &sb);
        tn_plan_options po = {0, sb.data, NULL};
        tn_resources res;
        if (tn_plan_create(pool->ctx, pool->f, pool->rows, pool->cols, &po, &c->plan) != TN_STATUS_OK)
            snprintf(c->error, sizeof c->error, "%s", tn_context_last_error(pool->ctx));
        else if (tn_plan_resources(c->plan, &res) == TN_STATUS_OK)
            c->desc.grid = res.grid_blocks; /* as launched: a cluster plan takes the driver's count */
        tn_strbuf_free(&sb);
    }
    return NULL;
}

int tn_tune(tn_context *ctx, const tn_fusion *f, int64_t rows, int64_t cols, const float *params) {
    static candidate cands[MAX_CANDIDATES + 1];
    static tn_plan_desc plans[MAX_CANDIDATES];
    tn_analysis a;
    tn_analyze(f, &a);
    /* The scheduler's plan as the library builds it (after any recompile or fallback where ptxas spilled). */
    tn_plan *built = NULL;
    if (tn_plan_create(ctx, f, rows, cols, NULL, &built) != TN_STATUS_OK) {
        fprintf(stderr, "tmanorm tune: %s\n", tn_context_last_error(ctx));
        return 2;
    }
    const tn_plan_desc chosen = *tn_plan_primary_desc(built);
    tn_plan_destroy(built);
    tn_schedule_request req = {&a, rows, cols, 16, -1, &ctx->props, ctx->props.cc_major >= 9}; /* PDL as plans default */
    int n = tn_schedule_candidates(&req, plans, MAX_CANDIDATES);
    int have_chosen = 0;
    for (int i = 0; i < n; i++) {
        memset(&cands[i], 0, sizeof cands[i]);
        cands[i].desc = plans[i];
        cands[i].chosen = tn_plan_desc_same(&plans[i], &chosen);
        have_chosen |= cands[i].chosen;
    }
    if (!have_chosen) { /* the scheduler's plan is timed too, candidate or not */
        memset(&cands[n], 0, sizeof cands[n]);
        cands[n].desc = chosen;
        cands[n++].chosen = 1;
    }
    printf("tune %s [%lld x %lld]: %d candidates (vec %d), the scheduler's: %s\n", f->name, (long long)rows,
           (long long)cols, n, chosen.vec, tn_plan_kind_name(chosen.kind));
    fflush(stdout);
    compile_pool pool = {ctx, f, rows, cols, cands, n, 0};
    pthread_t th[COMPILE_THREADS];
    for (int t = 0; t < COMPILE_THREADS; t++) pthread_create(&th[t], NULL, compile_worker, &pool);
    for (int t = 0; t < COMPILE_THREADS; t++) pthread_join(th[t], NULL);
    for (int i = 0; i < n; i++) {
        candidate *c = &cands[i];
        tn_check_result cr;
        tn_timing t;
        tn_check_options co = {7, 8, 0, 0};
        c->us = 1e30;
        if (!c->plan) continue;
        if (tn_gpu_check(c->plan, params, &co, &cr) != TN_STATUS_OK)
            snprintf(c->error, sizeof c->error, "check: %s", tn_context_last_error(ctx));
        else if (!cr.passed)
            snprintf(c->error, sizeof c->error, "wrong: %s", cr.detail);
        else if (tn_gpu_time_replays(c->plan, params, SCREEN_REPLAYS, &t) != TN_STATUS_OK)
            snprintf(c->error, sizeof c->error, "time: %s", tn_context_last_error(ctx));
        else
            c->us = t.us, c->passed = 1;
    }
    qsort(cands, (size_t)n, sizeof cands[0], by_time);
    /* The confirm pass in two rounds, the second in reverse order, each candidate's faster time kept: a timing
       right after another plan's can run slow (bench/'s two passes showed it), and one round would favour
       whichever plans come late in it. */
    int confirm[CONFIRM_TOP + 1], nc = 0;
    for (int i = 0; i < n; i++)
        if (cands[i].passed && (i < CONFIRM_TOP || cands[i].chosen)) confirm[nc++] = i;
    for (int round = 0; round < 2; round++)
        for (int k = 0; k < nc; k++) {
            candidate *c = &cands[confirm[round ? nc - 1 - k : k]];
            tn_timing t;
            if (!c->passed) continue;
            if (tn_gpu_time(c->plan, params, &t) != TN_STATUS_OK)
                snprintf(c->error, sizeof c->error, "time: %s", tn_context_last_error(ctx)), c->passed = 0;
            else if (!c->confirmed || t.us < c->us)
                c->us = t.us, c->confirmed = 1;
        }
    for (int i = 0; i < n; i++) {
        tn_plan_destroy(cands[i].plan);
        cands[i].plan = NULL;
    }
    qsort(cands, (size_t)n, sizeof cands[0], by_time);
    printf("%-9s %5s %7s %5s %6s %7s %6s %6s %6s %7s %3s %3s %3s %3s %3s %3s %3s %3s %3s %3s %3s %3s %3s %8s %10s %10s\n", "kind",
           "vec", "t/row", "rows", "batch", "block", "stages", "groups", "chunks", "cluster", "pf", "cta", "cy",
           "ss", "col", "ce", "pe", "pl", "on", "el", "l2", "es", "pdl", "smem", "grid", "us");
    double chosen_us = 0;
    for (int i = 0; i < n; i++) {
        const tn_plan_desc *p = &cands[i].desc;
        if (cands[i].chosen) chosen_us = cands[i].us;
        printf("%-9s %5d %7d %5d %6d %7d %6d %6d %6d %7d %3d %3d %3d %3d %3d %3d %3d %3d %3d %3d %3d %3d %3d %8d %10lld %10.2f%s%s%s%s\n",
               tn_plan_kind_name(p->kind), p->vec, p->threads_per_row, p->rows_per_cta, p->batch, p->block_threads,
               p->stages, p->consumer_groups, p->chunks, p->cluster, p->prefetch, p->ctas_per_sm, p->carry,
               p->shared_slice, p->col_cache, p->cols_early, p->peel, p->pipeline, p->online, p->early_l2, p->l2_slice,
               p->early_stores, p->pdl, p->smem_bytes,
               (long long)p->grid, cands[i].us, cands[i].passed && !cands[i].confirmed ? "  (screen)" : "",
               cands[i].chosen ? "  <- scheduler" : "", cands[i].passed ? "" : "  FAILED: ", cands[i].error);
    }
    int failed = 0;
    for (int i = 0; i < n; i++) failed += !cands[i].passed;
    if (n && cands[0].passed) {
        tn_strbuf sb;
        tn_strbuf_init(&sb, NULL);
        tn_plan_desc_json(&cands[0].desc, &sb);
        printf("best: %s\n", sb.data);
        tn_strbuf_free(&sb);
        /* One line per shape for bench/: the heuristic's regret. */
        printf("regret %s %lldx%lld: scheduler %s %.2f us, best %s %.2f us, regret %.3f\n", f->name, (long long)rows,
               (long long)cols, tn_plan_kind_name(chosen.kind), chosen_us, tn_plan_kind_name(cands[0].desc.kind),
               cands[0].us, chosen_us / cands[0].us);
    }
    if (failed) printf("%d candidates failed\n", failed);
    return failed ? 1 : 0;
}
