/* Safety tests: one test per defect found by probing tmanorm as an attacker
   and a careless user would (issue 6). Each fails on the code before the fix:
   replayed plans that overflow, names pasted into source, fusions larger than
   the fixed arrays, N near 2^31 and M * N byte counts that overflow, a context
   destroyed before its plans, compiles that blocked every cache hit, an
   unbounded cache, unbounded work, and last-error messages shared by threads. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt/runtime.h"
#include "ir/ir.h"
#include "sched/analysis.h"
#include "sched/plan.h"
#include "test.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Item 3 and 12: every field of a replayed plan is range-checked before any
   arithmetic; the JSON reader takes integers exactly or not at all. */
static void test_replay_ranges(tn_context *ctx) {
    tn_fusion *f = test_builtin(ctx, TN_BUILTIN_RMSNORM, TN_DTYPE_BF16);
    tn_plan *plan = NULL;
    static const char *const bad[][2] = {
        /* threads_per_row * rows_per_cta wraps to 256 in 32 bits */
        {"{\"kind\": \"register\", \"rows\": 4096, \"cols\": 4096, \"vec\": 8, \"threads_per_row\": 32, "
         "\"rows_per_cta\": 134217736, \"batch\": 16, \"block_threads\": 256, \"grid\": 512, \"cc\": 90, "
         "\"align_bytes\": 16, \"stages\": 0, \"smem_bytes\": 0, \"pdl\": 0}", "rows_per_cta"},
        /* 4294967304 = 2^32 + 8 was read as 8 */
        {"{\"kind\": \"register\", \"rows\": 4096, \"cols\": 4096, \"vec\": 4294967304, \"threads_per_row\": 64, "
         "\"rows_per_cta\": 4, \"batch\": 8, \"block_threads\": 256, \"grid\": 1024, \"cc\": 90, \"align_bytes\": 16}",
         "32-bit"},
        {"{\"kind\": \"register\", \"rows\": 9223372036854775808, \"cols\": 4096}", "64 bits"},
        {"{\"kind\": \"register\", \"rows\": 4096, \"cols\": 4096, \"vec\": 8, \"threads_per_row\": 64, "
         "\"rows_per_cta\": 4, \"batch\": 8, \"block_threads\": 256, \"grid\": 1024.5, \"cc\": 90, \"align_bytes\": 16}",
         "integer"},
        {"{\"kind\": \"register\", \"rows\": 4096, \"cols\": 4096, \"vec\": 8, \"threads_per_row\": 64, "
         "\"rows_per_cta\": 4, \"batch\": 8, \"block_threads\": 256, \"grid\": 1024, \"cc\": 90, \"align_bytes\": 16} x",
         "after the object"},
        {"{\"kind\": \"register\", \"rows\": 4096, \"rows\": 4096}", "twice"},
        {"{\"kind\": \"register\", \"rows\": 4096, \"cols\": 4096, \"vec\": 8, \"threads_per_row\": 64, "
         "\"rows_per_cta\": 4, \"batch\": 8, \"block_threads\": 256, \"grid\": -5, \"cc\": 90, \"align_bytes\": 16, \"stages\": 0, \"smem_bytes\": 0, \"pdl\": 0}",
         "grid"},
        {"{\"kind\": \"register\", \"rows\": 4096, \"cols\": 4096, \"vec\": 8, \"threads_per_row\": 64, "
         "\"rows_per_cta\": 4, \"batch\": 8, \"block_threads\": 256, \"grid\": 1024, \"cc\": 90, \"align_bytes\": 3, \"stages\": 0, \"smem_bytes\": 0, \"pdl\": 0}",
         "align_bytes"},
        {"{\"kind\": \"register\", \"rows\": 4096, \"cols\": 4096, \"vec\": 8, \"threads_per_row\": -2147483648, "
         "\"rows_per_cta\": 4, \"batch\": 8, \"block_threads\": 256, \"grid\": 1024, \"cc\": 90, \"align_bytes\": 16, \"stages\": 0, \"smem_bytes\": 0, \"pdl\": 0}",
         "threads_per_row"},
        {"{\"kind\": \"register\", \"rows\": 4096, \"cols\": 4096, \"vec\": 8, \"threads_per_row\": 64, "
         "\"rows_per_cta\": 4, \"batch\": 8, \"block_threads\": 256, \"grid\": 1024, \"cc\": 90, \"align_bytes\": 16, "
         "\"why\": \"\\u0041\\q\"}", "why"},
        {"{\"kind\": \"register\", \"rows\": 04096}", "integer"},
        {"{\"kind\": \"register\", \"rows\": +4096}", "integer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tn_plan_options po = {0, bad[i][0], NULL};
        tn_status st = tn_plan_create(ctx, f, 4096, 4096, &po, &plan);
        CHECK(st == TN_STATUS_INVALID_ARGUMENT && strstr(tn_context_last_error(ctx), bad[i][1]),
              "bad plan %zu accepted or wrong message (%s): %s", i, tn_status_string(st), tn_context_last_error(ctx));
        if (st == TN_STATUS_OK) tn_plan_destroy(plan);
    }
    /* The same plan written by hand, in range, is taken; escapes in "why" are read. */
    tn_plan_options good = {0, "{\"kind\": \"register\", \"rows\": 4096, \"cols\": 4096, \"vec\": 8, \"threads_per_row\""
                               ": 64, \"rows_per_cta\": 4, \"batch\": 8, \"block_threads\": 256, \"grid\": 1024, \"cc\": "
                               "90, \"align_bytes\": 16, \"stages\": 0, \"smem_bytes\": 0, \"pdl\": 0, \"why\": "
                               "\"by hand\\n\\u0041\\\"\"}", NULL};
    CHECK(tn_plan_create(ctx, f, 4096, 4096, &good, &plan) == TN_STATUS_OK, "good plan: %s", tn_context_last_error(ctx));
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
}

/* Item 12: a plan made for tensors aligned to 1 or 2 bytes replays with that alignment. */
static void test_replay_low_alignment(tn_context *ctx) {
    tn_fusion *f = test_builtin(ctx, TN_BUILTIN_SOFTMAX, TN_DTYPE_BF16);
    for (int align = 1; align <= 16; align *= 2) {
        tn_plan_options po = {align, NULL, NULL};
        tn_plan *a = NULL, *b = NULL;
        CHECK(tn_plan_create(ctx, f, 64, 4096, &po, &a) == TN_STATUS_OK, "align %d: %s", align, tn_context_last_error(ctx));
        if (!a) continue;
        char *json = test_describe(a, TN_DESCRIBE_JSON);
        tn_plan_options re = {align, json, NULL};
        CHECK(tn_plan_create(ctx, f, 64, 4096, &re, &b) == TN_STATUS_OK, "replay at align %d: %s", align,
              tn_context_last_error(ctx));
        free(json);
        tn_plan_destroy(a);
        tn_plan_destroy(b);
    }
    tn_fusion_destroy(f);
}

/* Item 4: the fusion's name never changes the generated source's meaning. */
static void test_name_injection(tn_context *ctx) {
    tn_fusion *f = NULL;
    tn_value x, xf, s, r, y;
    tn_fusion_create(ctx, "evil\n#define rsqrtf(v) 1.0f\n// */ \"", &f);
    tn_fusion_input(f, "x\n#define expf(v) 0.0f\n", TN_DTYPE_F32, TN_SHAPE_ROW, &x);
    tn_fusion_cast(f, x, TN_DTYPE_F32, &xf);
    tn_fusion_reduce(f, TN_REDUCE_SUM, TN_AXIS_INNER, xf, &s);
    tn_fusion_unary(f, TN_UNARY_RSQRT, s, &r);
    tn_fusion_binary(f, TN_BINARY_MUL, xf, r, &y);
    tn_fusion_output(f, "y\n#define tn_kernel main\n", y, TN_DTYPE_F32);
    tn_plan *plan = NULL;
    CHECK(tn_plan_create(ctx, f, 16, 256, NULL, &plan) == TN_STATUS_OK, "plan: %s", tn_context_last_error(ctx));
    if (plan) {
        char *src = test_describe(plan, TN_DESCRIBE_SOURCE);
        CHECK(!strstr(src, "#define rsqrtf") && !strstr(src, "#define expf") && !strstr(src, "#define tn_kernel"),
              "a name reached the source as code");
        CHECK(strstr(src, "fusion evil__define_rsqrtf_v__1.0f__") != NULL, "the name is not shown sanitized");
        free(src);
    }
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
}

/* Item 5: more inputs, params or outputs than the fixed arrays hold are refused. */
static void test_io_limits(tn_context *ctx) {
    tn_fusion *f = NULL;
    tn_fusion_create(ctx, "wide", &f);
    tn_value v, acc;
    char name[16];
    tn_status st = TN_STATUS_OK;
    int made = 0;
    for (int i = 0; i < TN_MAX_INPUTS + 8 && st == TN_STATUS_OK; i++) {
        snprintf(name, sizeof name, "in%d", i);
        st = tn_fusion_input(f, name, TN_DTYPE_F32, TN_SHAPE_ROW, &v);
        if (st == TN_STATUS_OK) made++;
        if (st == TN_STATUS_OK && i == 0) acc = v;
        else if (st == TN_STATUS_OK) tn_fusion_binary(f, TN_BINARY_ADD, acc, v, &acc);
    }
    CHECK(made == TN_MAX_INPUTS && st == TN_STATUS_INVALID_ARGUMENT && strstr(tn_context_last_error(ctx), "inputs"),
          "%d inputs made: %s", made, tn_context_last_error(ctx));
    made = 0;
    st = TN_STATUS_OK;
    for (int i = 0; i < TN_MAX_PARAMS + 8 && st == TN_STATUS_OK; i++) {
        snprintf(name, sizeof name, "p%d", i);
        st = tn_fusion_param(f, name, &v);
        if (st == TN_STATUS_OK) made++, tn_fusion_binary(f, TN_BINARY_ADD, acc, v, &acc);
    }
    CHECK(made == TN_MAX_PARAMS && st == TN_STATUS_INVALID_ARGUMENT, "%d params made", made);
    made = 0;
    st = TN_STATUS_OK;
    for (int i = 0; i < TN_MAX_OUTPUTS + 8 && st == TN_STATUS_OK; i++) {
        snprintf(name, sizeof name, "out%d", i);
        st = tn_fusion_output(f, name, acc, TN_DTYPE_F32);
        if (st == TN_STATUS_OK) made++;
    }
    CHECK(made == TN_MAX_OUTPUTS && st == TN_STATUS_INVALID_ARGUMENT, "%d outputs made", made);
    /* At the limits the fusion plans (and its launch packs every argument). */
    tn_plan *plan = NULL;
    CHECK(tn_plan_create(ctx, f, 4, 64, NULL, &plan) == TN_STATUS_OK, "plan at the limits: %s", tn_context_last_error(ctx));
    tn_plan_destroy(plan);
    /* A fusion that got past the builder some other way is refused by the verifier. */
    f->num_inputs = TN_MAX_INPUTS + 1;
    CHECK(tn_fusion_verify(f) == TN_STATUS_INVALID_FUSION && strstr(tn_context_last_error(ctx), "too large"),
          "verifier: %s", tn_context_last_error(ctx));
    f->num_inputs = TN_MAX_INPUTS;
    tn_fusion_destroy(f);
}

/* Item 6: N up to 2^31 - 1 indexes in 64 bits where 32 could wrap, and compiles: the looped plan's loop over
   the row, and the scheduler's plan there (a cluster whose slices stay in L2, each CTA's loop over its slice of
   at most 2^31 / 16 vectors). */
static void test_huge_n(tn_context *ctx) {
    tn_fusion *f = test_builtin(ctx, TN_BUILTIN_RMSNORM, TN_DTYPE_BF16);
    static const int64_t cols[] = {2147483647LL, 2147483645LL, 1LL << 30};
    for (int i = 0; i < 3; i++)
        for (int looped = 0; looped < 2; looped++) {
            tn_plan *plan = NULL;
            tn_plan_options po = {0, NULL, looped ? "looped" : NULL};
            CHECK(tn_plan_create(ctx, f, 3, cols[i], &po, &plan) == TN_STATUS_OK, "N = %lld: %s", (long long)cols[i],
                  tn_context_last_error(ctx));
            if (!plan) continue;
            char *src = test_describe(plan, TN_DESCRIBE_SOURCE);
            if (looped) {
                int wide = strstr(src, "for (long long vi = tr; vi < NV; vi += T)") != NULL;
                CHECK(wide == (i < 2), "N = %lld: loop index is %s", (long long)cols[i], wide ? "64-bit" : "32-bit");
            } else {
                CHECK(strstr(src, "read again from L2 each phase") && strstr(src, "for (int vl = tr; vl < NVL; vl += T)"),
                      "N = %lld: not a cluster plan looping over its slice in L2", (long long)cols[i]);
            }
            CHECK(!strstr(src, "for (int vi = tr; vi < NV; vi += T)") || i == 2, "a 32-bit loop at N = %lld",
                  (long long)cols[i]);
            tn_resources r;
            tn_plan_resources(plan, &r);
            CHECK(r.spill_store_bytes == 0 && r.stack_bytes == 0, "N = %lld spills", (long long)cols[i]);
            free(src);
            tn_plan_destroy(plan);
        }
    tn_fusion_destroy(f);
}

/* Item 7: shapes whose byte counts do not fit are refused, at creation and launch. */
static void test_huge_shapes(tn_context *ctx) {
    tn_fusion *f = test_builtin(ctx, TN_BUILTIN_RMSNORM, TN_DTYPE_BF16);
    tn_plan *plan = NULL;
    CHECK(tn_plan_create(ctx, f, 9223372036854775807LL, 4096, NULL, &plan) == TN_STATUS_UNSUPPORTED &&
              strstr(tn_context_last_error(ctx), "2^48"), "M = 2^63 - 1: %s", tn_context_last_error(ctx));
    CHECK(tn_plan_create(ctx, f, TN_MAX_ROWS, TN_MAX_COLS, NULL, &plan) == TN_STATUS_UNSUPPORTED &&
              strstr(tn_context_last_error(ctx), "2^63 bytes"), "M * N overflow: %s", tn_context_last_error(ctx));
    CHECK(tn_plan_create(ctx, f, TN_MAX_ROWS, 1024, NULL, &plan) == TN_STATUS_OK, "M = 2^48: %s",
          tn_context_last_error(ctx));
    if (plan) {
        int64_t bytes = 0;
        tn_plan_bytes(plan, &bytes);
        CHECK(bytes > 0, "bytes at the floor %lld", (long long)bytes);
        char *text = test_describe(plan, TN_DESCRIBE_TEXT);
        CHECK(!strstr(text, "floor: -"), "negative bytes: %s", text);
        free(text);
        /* A row stride that takes the last row past the address space is refused before any GPU is needed. */
        static char buf[64] __attribute__((aligned(16)));
        tn_tensor in[2] = {{buf, TN_DTYPE_BF16, 1LL << 40}, {buf, TN_DTYPE_BF16, 0}}, out[1] = {{buf, TN_DTYPE_BF16, 0}};
        float eps = 1e-6f;
        tn_launch_args a = {in, 2, out, 1, &eps, 1, NULL};
        CHECK(tn_plan_launch(plan, &a) == TN_STATUS_INVALID_ARGUMENT && strstr(tn_context_last_error(ctx), "address space"),
              "huge stride: %s", tn_context_last_error(ctx));
    }
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
}

/* Item 8: a context destroyed before its fusions and plans lives until they go. */
static void test_destroy_order(void) {
    failing s = {-1, 0};
    tn_allocator al = failing_allocator(&s);
    tn_context_options o = {0, &al, "h200", 1};
    tn_context *ctx = NULL;
    CHECK(tn_context_create(&o, &ctx) == TN_STATUS_OK, "context");
    tn_fusion *f = test_builtin(ctx, TN_BUILTIN_LAYERNORM, TN_DTYPE_F16);
    tn_plan *plan = NULL;
    CHECK(tn_plan_create(ctx, f, 8, 512, NULL, &plan) == TN_STATUS_OK, "plan");
    tn_context_destroy(ctx);
    char *text = test_describe(plan, TN_DESCRIBE_RESOURCES);
    CHECK(strstr(text, "registers") != NULL, "describe after the context: %s", text);
    free(text);
    tn_fusion *g = NULL;
    tn_fusion_clone(f, &g); /* a fusion still builds on its (released) context */
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
    CHECK(s.live > 0, "the context went before its last fusion");
    tn_fusion_destroy(g);
    CHECK(s.live == 0, "%d blocks live after the last handle", s.live);
}

/* Item 9: a compile on one thread does not hold up cache hits on others, and
   threads asking for one new kernel at once compile it once. */
typedef struct compile_job {
    tn_context *ctx;
    tn_fusion *f;
    int64_t rows, cols;
    const char *kind;
    double start, end;
    tn_status st;
} compile_job;

static void *compile_thread(void *arg) {
    compile_job *j = arg;
    tn_plan_options po = {0, NULL, j->kind};
    tn_plan *plan = NULL;
    j->start = now_ms();
    j->st = tn_plan_create(j->ctx, j->f, j->rows, j->cols, &po, &plan);
    j->end = now_ms();
    tn_plan_destroy(plan);
    return NULL;
}

static void test_compile_outside_lock(void) {
    tn_context *ctx = test_context();
    tn_fusion *ln = test_builtin(ctx, TN_BUILTIN_LAYERNORM, TN_DTYPE_F32);
    tn_fusion *rms = test_builtin(ctx, TN_BUILTIN_RMSNORM, TN_DTYPE_BF16);
    compile_job warm = {ctx, rms, 64, 1024, NULL, 0, 0, 0};
    compile_thread(&warm); /* now cached */
    int misses0 = ctx->cache.misses;
    compile_job slow = {ctx, ln, 4096, 65540, NULL, 0, 0, 0}; /* one variant (65537 peels: two, one unpeeled) */
    pthread_t th;
    pthread_create(&th, NULL, compile_thread, &slow);
    struct timespec pause = {0, 30 * 1000 * 1000};
    nanosleep(&pause, NULL); /* the slow plan is inside NVRTC by now (codegen takes microseconds) */
    compile_job hit = {ctx, rms, 64, 1024, NULL, 0, 0, 0};
    compile_thread(&hit);
    pthread_join(th, NULL);
    CHECK(slow.st == TN_STATUS_OK && hit.st == TN_STATUS_OK, "plans");
    /* Only meaningful when the compile outlasted the hit's start by a margin. */
    if (slow.end - hit.start > 60)
        CHECK(hit.end < slow.end, "a cache hit waited %.0f ms for another thread's compile (%.0f ms)",
              hit.end - hit.start, slow.end - slow.start);
    else
        printf("compile outside the lock: inconclusive (compile took %.0f ms)\n", slow.end - slow.start);
    CHECK(ctx->cache.misses == misses0 + 1, "misses %d", ctx->cache.misses - misses0);

    /* Four threads want one new kernel: one compile, three hits. */
    compile_job same[4];
    pthread_t ths[4];
    for (int i = 0; i < 4; i++) {
        same[i] = (compile_job){ctx, ln, 100, 3001, "looped", 0, 0, 0};
        pthread_create(&ths[i], NULL, compile_thread, &same[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(ths[i], NULL);
    CHECK(same[0].st == TN_STATUS_OK && same[3].st == TN_STATUS_OK, "same-key plans");
    CHECK(ctx->cache.misses == misses0 + 2, "%d compiles of one key", ctx->cache.misses - misses0 - 1);
    tn_fusion_destroy(ln);
    tn_fusion_destroy(rms);
    tn_context_destroy(ctx);
}

/* Item 12: kernels no plan uses are evicted beyond a bound; used ones never. */
static void test_cache_eviction(void) {
    tn_context *ctx = test_context();
    tn_fusion *f = test_builtin(ctx, TN_BUILTIN_SOFTMAX, TN_DTYPE_F32);
    tn_plan *held = NULL;
    tn_plan_options looped = {0, NULL, "looped"};
    CHECK(tn_plan_create(ctx, f, 8, 100, &looped, &held) == TN_STATUS_OK, "held plan");
    const int extra = TN_CACHE_IDLE_MAX + 6;
    for (int n = 0; n < extra; n++) {
        tn_plan *plan = NULL;
        CHECK(tn_plan_create(ctx, f, 8, 101 + n, &looped, &plan) == TN_STATUS_OK, "plan %d", n);
        tn_plan_destroy(plan);
    }
    CHECK(ctx->cache.count == TN_CACHE_IDLE_MAX + 1 && ctx->cache.evictions == extra - TN_CACHE_IDLE_MAX,
          "cache holds %d kernels after %d evictions", ctx->cache.count, ctx->cache.evictions);
    char *src = test_describe(held, TN_DESCRIBE_RESOURCES);
    CHECK(strstr(src, "registers") != NULL, "the held plan's kernel was kept");
    free(src);
    tn_plan_destroy(held);
    tn_fusion_destroy(f);
    tn_context_destroy(ctx);
}

/* Item 9: the work one fusion can ask for is bounded, with a clear error. */
static void test_work_bounds(tn_context *ctx) {
    static const struct { int chain, parallel; const char *needle; } cases[] = {
        {TN_MAX_REDUCTION_LEVELS + 1, 1, "in a chain"},
        {1, TN_MAX_REDUCTIONS + 1, "inner reductions"},
        {TN_MAX_REDUCTION_LEVELS, 1, NULL},
    };
    for (int c = 0; c < 3; c++) {
        tn_fusion *f = NULL;
        tn_value x, v, s, total;
        tn_fusion_create(ctx, "deep", &f);
        tn_fusion_input(f, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &x);
        v = x;
        for (int l = 0; l < cases[c].chain; l++) {
            tn_fusion_reduce(f, TN_REDUCE_MAX, TN_AXIS_INNER, v, &s);
            tn_fusion_binary(f, TN_BINARY_SUB, x, s, &v);
        }
        for (int p = 1; p < cases[c].parallel; p++) {
            tn_value xs;
            tn_fusion_binary(f, TN_BINARY_MUL, x, x, &xs);
            tn_fusion_reduce(f, TN_REDUCE_SUM, TN_AXIS_INNER, xs, &s);
            tn_fusion_binary(f, TN_BINARY_ADD, v, s, &total);
            v = total;
        }
        tn_fusion_output(f, "y", v, TN_DTYPE_F32);
        tn_plan *plan = NULL;
        tn_status st = tn_plan_create(ctx, f, 8, 256, NULL, &plan);
        if (cases[c].needle)
            CHECK(st == TN_STATUS_UNSUPPORTED && strstr(tn_context_last_error(ctx), cases[c].needle), "case %d: %s", c,
                  tn_context_last_error(ctx));
        else
            CHECK(st == TN_STATUS_OK, "case %d at the limit: %s", c, tn_context_last_error(ctx));
        tn_plan_destroy(plan);
        tn_fusion_destroy(f);
    }
}

/* Item 11: each thread reads its own last error, whatever other threads fail with. */
typedef struct error_job {
    tn_context *ctx;
    pthread_barrier_t *bar;
    int64_t rows;
    int ok;
} error_job;

static void *error_thread(void *arg) {
    error_job *j = arg;
    tn_fusion *f = test_builtin(j->ctx, TN_BUILTIN_SOFTMAX, TN_DTYPE_BF16);
    tn_plan *plan = NULL;
    char want[64];
    snprintf(want, sizeof want, "M = %lld)", (long long)j->rows);
    j->ok = 1;
    for (int round = 0; round < 20; round++) {
        tn_plan_create(j->ctx, f, j->rows, 16, NULL, &plan);
        pthread_barrier_wait(j->bar); /* every thread has failed; now each reads */
        j->ok &= strstr(tn_context_last_error(j->ctx), want) != NULL;
        pthread_barrier_wait(j->bar);
    }
    tn_fusion_destroy(f);
    return NULL;
}

static void test_thread_errors(tn_context *ctx) {
    enum { THREADS = 4 };
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, THREADS);
    error_job jobs[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (error_job){ctx, &bar, -1 - i, 0};
        pthread_create(&th[i], NULL, error_thread, &jobs[i]);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < THREADS; i++) CHECK(jobs[i].ok, "thread %d read another thread's error", i);
    pthread_barrier_destroy(&bar);
    /* Another context's error is not this one's. */
    tn_context *other = test_context();
    tn_fusion *f = test_builtin(other, TN_BUILTIN_SOFTMAX, TN_DTYPE_BF16);
    tn_plan *plan = NULL;
    tn_plan_create(other, f, 0, 16, NULL, &plan);
    CHECK(strstr(tn_context_last_error(other), "M = 0") && !strstr(tn_context_last_error(ctx), "M = 0"),
          "errors filed under the wrong context");
    tn_fusion_destroy(f);
    tn_context_destroy(other);
}

void test_safety(void) {
    tn_context *ctx = test_context();
    test_replay_ranges(ctx);
    test_replay_low_alignment(ctx);
    test_name_injection(ctx);
    test_io_limits(ctx);
    test_huge_n(ctx);
    test_huge_shapes(ctx);
    test_work_bounds(ctx);
    test_thread_errors(ctx);
    tn_context_destroy(ctx);
    test_destroy_order();
    test_compile_outside_lock();
    test_cache_eviction();
}
