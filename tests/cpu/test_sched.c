/* Scheduler tests: invariants of every plan over a grid of (M, N, dtype,
   alignment, target), the JSON round trip, and the checker's rejections. */
#include <string.h>

#include "ir/ir.h"
#include "sched/heuristics.h"
#include "test.h"

static void check_invariants(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, int align,
                             const char *what) {
    char err[320];
    CHECK(tn_plan_desc_check(p, a, d, align, err, sizeof err), "%s: %s", what, err);
    CHECK(p->cols % p->vec == 0, "%s: vec %d does not divide N", what, p->vec);
    CHECK(p->vec * a->min_row_elem_size <= 16 || p->vec == 1, "%s: vec %d wider than 16 bytes", what, p->vec);
    CHECK(tn_plan_access_align(p, a->max_elem_size) <= align, "%s: accesses need more than %d-byte alignment", what,
          align);
    CHECK(p->block_threads % 32 == 0 && p->block_threads <= d->max_threads_per_block, "%s: block %d", what,
          p->block_threads);
    if (p->kind == TN_PLAN_REGISTER) {
        int64_t nv = p->cols / p->vec;
        CHECK((int64_t)p->threads_per_row * p->batch >= nv, "%s: row not covered", what);
        CHECK((int64_t)p->threads_per_row * (p->batch - 1) < nv, "%s: a whole batch slot is idle", what);
        CHECK(p->grid * p->rows_per_cta >= p->rows || p->grid == 0x7fffffff, "%s: rows not covered", what);
        int words = (int)((p->vec * a->buffer_elem_bytes + 3) / 4) * p->batch;
        int cap = d->regs_per_sm / p->block_threads;
        CHECK(TN_REG_NEED(words) <= cap, "%s: buffer of %d words over the %d-register cap", what, words, cap);
    } else {
        CHECK(p->rows_per_cta == 1 && p->grid <= p->rows, "%s: looped grid %lld", what, (long long)p->grid);
    }
    CHECK(strlen(p->why) > 0, "%s: no reason given", what);
    /* The JSON form reads back to the same plan. */
    tn_strbuf sb;
    tn_strbuf_init(&sb, NULL);
    tn_plan_desc_json(p, &sb);
    tn_plan_desc back;
    int ok = tn_plan_desc_parse(sb.data, &back, err, sizeof err);
    CHECK(ok && memcmp(&back, p, sizeof back) == 0, "%s: JSON round trip: %s", what, ok ? sb.data : err);
    tn_strbuf_free(&sb);
}

static void test_grid(tn_context *ctx) {
    static const int64_t rows[] = {1, 2, 3, 7, 8, 64, 100, 512, 1000, 4096, 16384, 65536, 1000000, 3000000000LL};
    static const int64_t cols[] = {1, 2, 3, 7, 8, 31, 64, 100, 512, 1000, 1024, 2048, 4096, 4097, 6144, 8192,
                                   16384, 32768, 65536, 65537, 131072, 262144, 1048576, 1048577};
    static const tn_dtype dts[] = {TN_DTYPE_BF16, TN_DTYPE_F16, TN_DTYPE_F32};
    static const int aligns[] = {16, 8, 4, 2};
    static const char *targets[] = {"h200", "a100"};
    int plans = 0, looped = 0;
    for (int t = 0; t < 2; t++) {
        tn_device_props d;
        tn_device_props_for_target(targets[t], &d);
        for (int op = 0; op < TN_BUILTIN_COUNT; op++)
            for (int di = 0; di < 3; di++) {
                tn_builtin_options o = {dts[di], dts[(di + t) % 3], dts[(di + op) % 3], op % 2};
                tn_fusion *f = NULL;
                tn_fusion_builtin(ctx, (tn_builtin)op, &o, &f);
                tn_analysis a;
                tn_analyze(f, &a);
                for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++)
                    for (size_t ci = 0; ci < sizeof cols / sizeof cols[0]; ci++)
                        for (int al = 0; al < 4; al++) {
                            if (aligns[al] < a.max_elem_size) continue;
                            tn_schedule_request req = {&a, rows[ri], cols[ci], aligns[al], -1, &d};
                            tn_plan_desc p;
                            char err[320], what[160];
                            snprintf(what, sizeof what, "%s %s/%s/%s M=%lld N=%lld align=%d %s", tn_builtin_name((tn_builtin)op),
                                     tn_dtype_name(o.input_dtype), tn_dtype_name(o.weight_dtype),
                                     tn_dtype_name(o.output_dtype), (long long)rows[ri], (long long)cols[ci],
                                     aligns[al], targets[t]);
                            int ok = tn_schedule(&req, &p, err, sizeof err);
                            CHECK(ok, "%s: %s", what, err);
                            if (!ok) continue;
                            check_invariants(&p, &a, &d, aligns[al], what);
                            plans++;
                            looped += p.kind == TN_PLAN_LOOPED;
                            /* Forcing the looped plan works at every shape too. */
                            req.kind = TN_PLAN_LOOPED;
                            ok = tn_schedule(&req, &p, err, sizeof err);
                            CHECK(ok && p.kind == TN_PLAN_LOOPED, "%s forced looped: %s", what, err);
                            if (ok) check_invariants(&p, &a, &d, aligns[al], what);
                        }
                tn_fusion_destroy(f);
            }
    }
    CHECK(plans > 10000 && looped > 0 && looped < plans, "grid: %d plans, %d looped", plans, looped);
    printf("sched grid: %d plans checked, %d looped\n", plans, looped);
}

/* Decisions the heuristics promise, at named shapes. */
static void test_decisions(tn_context *ctx) {
    tn_device_props d;
    tn_device_props_for_target("h200", &d);
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_fusion *f = NULL;
    tn_fusion_builtin(ctx, TN_BUILTIN_RMSNORM, &o, &f);
    tn_analysis a;
    tn_analyze(f, &a);
    tn_plan_desc p;
    char err[320];
    tn_schedule_request req = {&a, 32768, 4096, 16, -1, &d};
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER && p.vec == 8, "32768x4096: register, vec 8");
    req.cols = 4097;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.vec == 1, "odd N: vec 1");
    req.cols = 4096;
    req.align = 4;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.vec == 2 && p.align_bytes == 4, "4-byte aligned: vec 2");
    req.align = 16;
    req.cols = 1048576;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_LOOPED, "1M columns: looped");
    req.cols = 4096;
    req.kind = TN_PLAN_REGISTER;
    req.cols = 1048576;
    CHECK(!tn_schedule(&req, &p, err, sizeof err) && strstr(err, "registers"), "forced register at 1M: %s", err);
    req.kind = -1;
    req.rows = 1;
    req.cols = 8192;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.threads_per_row >= 512, "one row gets many threads: %d",
          p.threads_per_row);
    tn_fusion_destroy(f);
}

static void test_json_rejections(void) {
    tn_plan_desc p;
    char err[320];
    CHECK(!tn_plan_desc_parse("[]", &p, err, sizeof err), "not an object");
    CHECK(!tn_plan_desc_parse("{\"kind\": \"tma-ws\"}", &p, err, sizeof err) && strstr(err, "unknown kind"), "%s", err);
    CHECK(!tn_plan_desc_parse("{\"kind\": \"register\", \"rows\": 1}", &p, err, sizeof err) && strstr(err, "missing"),
          "%s", err);
    CHECK(!tn_plan_desc_parse("{\"kind\": \"register\", \"bogus\": 1}", &p, err, sizeof err) && strstr(err, "unknown member"),
          "%s", err);
    CHECK(!tn_plan_desc_parse("{\"kind\": \"register\", \"rows\": x}", &p, err, sizeof err) && strstr(err, "integer"),
          "%s", err);
}

void test_sched(void) {
    tn_context *ctx = test_context();
    test_grid(ctx);
    test_decisions(ctx);
    test_json_rejections();
    tn_context_destroy(ctx);
}
