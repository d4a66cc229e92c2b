/* Public API tests without a GPU: context, plan creation errors, replay of a
   plan from JSON, describe, launch without a device, allocation failures in
   plan creation, and plans made from several threads at once. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/plan_internal.h"
#include "random_fusion.h"
#include "test.h"

static tn_fusion *rmsnorm(tn_context *ctx, tn_dtype dt) { return test_builtin(ctx, TN_BUILTIN_RMSNORM, dt); }

static void test_errors(tn_context *ctx) {
    tn_fusion *f = rmsnorm(ctx, TN_DTYPE_BF16);
    tn_plan *plan = NULL;
    CHECK(tn_plan_create(ctx, f, 0, 4096, NULL, &plan) == TN_STATUS_INVALID_ARGUMENT, "M = 0");
    CHECK(strstr(tn_context_last_error(ctx), "M = 0"), "message: %s", tn_context_last_error(ctx));
    CHECK(tn_plan_create(ctx, f, 4, -1, NULL, &plan) == TN_STATUS_INVALID_ARGUMENT, "N < 1");
    CHECK(tn_plan_create(ctx, NULL, 4, 4, NULL, &plan) == TN_STATUS_INVALID_ARGUMENT, "null fusion");
    CHECK(tn_plan_create(ctx, f, 4, 4, NULL, NULL) == TN_STATUS_INVALID_ARGUMENT, "null out");
    CHECK(tn_plan_create(ctx, f, 4, 1LL << 32, NULL, &plan) == TN_STATUS_UNSUPPORTED, "N above 2^31");
    tn_plan_options bad_align = {3, NULL, NULL};
    CHECK(tn_plan_create(ctx, f, 4, 4, &bad_align, &plan) == TN_STATUS_INVALID_ARGUMENT, "align 3");
    tn_plan_options bad_kind = {0, NULL, "tma-xx"};
    CHECK(tn_plan_create(ctx, f, 4, 4, &bad_kind, &plan) == TN_STATUS_INVALID_ARGUMENT, "unknown kind");
    CHECK(strstr(tn_context_last_error(ctx), "tma-xx"), "message: %s", tn_context_last_error(ctx));
    tn_plan_options forced = {0, NULL, "register"};
    CHECK(tn_plan_create(ctx, f, 4, 1 << 22, &forced, &plan) == TN_STATUS_UNSUPPORTED, "register at 4M columns");

    tn_fusion *bad;
    tn_value x;
    tn_fusion_create(ctx, "no_outputs", &bad);
    tn_fusion_input(bad, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &x);
    CHECK(tn_plan_create(ctx, bad, 4, 4, NULL, &plan) == TN_STATUS_INVALID_FUSION, "invalid fusion");
    tn_fusion_destroy(bad);

    tn_fusion *outer;
    tn_value s;
    tn_fusion_create(ctx, "outer", &outer);
    tn_fusion_input(outer, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &x);
    tn_fusion_reduce(outer, TN_REDUCE_SUM, TN_AXIS_OUTER, x, &s);
    tn_fusion_output(outer, "dw", s, TN_DTYPE_F32);
    CHECK(tn_plan_create(ctx, outer, 4, 4, NULL, &plan) == TN_STATUS_UNSUPPORTED, "outer reductions not planned yet");
    tn_fusion_destroy(outer);

    CHECK(tn_plan_create(ctx, f, 8, 4096, NULL, &plan) == TN_STATUS_OK, "good plan: %s", tn_context_last_error(ctx));
    tn_tensor t[2] = {{(void *)16, TN_DTYPE_BF16, 0}, {(void *)16, TN_DTYPE_BF16, 0}};
    float eps = 1e-6f;
    tn_launch_args a = {t, 2, t, 1, &eps, 1, NULL};
    CHECK(tn_plan_launch(plan, &a) == TN_STATUS_NO_DEVICE, "launch without a GPU");
    CHECK(strstr(tn_context_last_error(ctx), "no GPU"), "message: %s", tn_context_last_error(ctx));
    CHECK(tn_plan_launch(plan, NULL) == TN_STATUS_INVALID_ARGUMENT, "null launch args");
    a.rows = 3; /* fewer rows than the plan's: a valid launch (then no GPU) */
    CHECK(tn_plan_launch(plan, &a) == TN_STATUS_NO_DEVICE, "3 of 8 rows: %s", tn_context_last_error(ctx));
    a.rows = 0;
    /* Every argument error is found before the missing GPU is. */
    static char buf[4096] __attribute__((aligned(16)));
    struct { const char *what, *needle; } launch_errors[7] = {{"wrong dtype", "is f16, the fusion's is bf16"},
        {"row stride < N", "row stride 4095"}, {"null pointer", "null data pointer"},
        {"wrong input count", "takes 2 inputs"}, {"element misaligned", "not aligned to its 2-byte"},
        {"more rows than the plan's", "rows 9: the plan serves 1 to 8 rows"}, {"negative rows", "rows -1"}};
    for (int i = 0; i < 7; i++) {
        tn_tensor in[2] = {{buf, TN_DTYPE_BF16, 0}, {buf, TN_DTYPE_BF16, 0}}, out1[1] = {{buf, TN_DTYPE_BF16, 0}};
        tn_launch_args b = {in, 2, out1, 1, &eps, 1, NULL};
        if (i == 0) in[0].dtype = TN_DTYPE_F16;
        if (i == 1) in[0].row_stride = 4095;
        if (i == 2) in[1].data = NULL;
        if (i == 3) b.num_inputs = 1;
        if (i == 4) in[0].data = buf + 1;
        if (i == 5) b.rows = 9;
        if (i == 6) b.rows = -1;
        CHECK(tn_plan_launch(plan, &b) == TN_STATUS_INVALID_ARGUMENT && strstr(tn_context_last_error(ctx), launch_errors[i].needle),
              "%s: %s", launch_errors[i].what, tn_context_last_error(ctx));
    }
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
    for (int s2 = 0; s2 <= TN_STATUS_INTERNAL; s2++) CHECK(strlen(tn_status_string((tn_status)s2)) > 0, "status %d", s2);
}

static void test_replay(tn_context *ctx) {
    tn_fusion *f = rmsnorm(ctx, TN_DTYPE_F16);
    tn_plan *a = NULL, *b = NULL, *c = NULL;
    CHECK(tn_plan_create(ctx, f, 1000, 3000, NULL, &a) == TN_STATUS_OK, "plan");
    char *json = test_describe(a, TN_DESCRIBE_JSON);
    tn_plan_options replay = {0, json, NULL};
    CHECK(tn_plan_create(ctx, f, 1000, 3000, &replay, &b) == TN_STATUS_OK, "replay: %s", tn_context_last_error(ctx));
    char *src_a = test_describe(a, TN_DESCRIBE_SOURCE), *src_b = test_describe(b, TN_DESCRIBE_SOURCE);
    CHECK(strcmp(src_a, src_b) == 0, "a replayed plan generates the same source");
    CHECK(tn_plan_create(ctx, f, 1001, 3000, &replay, &c) == TN_STATUS_INVALID_ARGUMENT, "replay at another shape");
    /* A hand-edited plan that cannot run is rejected with the reason. */
    char *edited = strdup(json);
    char *v = strstr(edited, "\"vec\": ");
    if (v) v[7] = '3';
    tn_plan_options bad = {0, edited, NULL};
    CHECK(tn_plan_create(ctx, f, 1000, 3000, &bad, &c) == TN_STATUS_INVALID_ARGUMENT && strstr(tn_context_last_error(ctx), "vec"),
          "bad vec: %s", tn_context_last_error(ctx));
    tn_plan_options misaligned = {4, json, NULL};
    CHECK(tn_plan_create(ctx, f, 1000, 3000, &misaligned, &c) == TN_STATUS_INVALID_ARGUMENT, "replay needs 16-byte alignment");
    char *text = test_describe(a, TN_DESCRIBE_TEXT), *res = test_describe(a, TN_DESCRIBE_RESOURCES);
    CHECK(strstr(text, "why:") && strstr(text, "plan "), "text: %s", text);
    CHECK(strstr(res, "registers") && strstr(res, "spill"), "resources: %s", res);
    int64_t bytes = 0;
    tn_plan_bytes(a, &bytes);
    CHECK(bytes == 1000LL * 3000 * 4 + 3000 * 2, "bytes %lld", (long long)bytes);
    free(json), free(edited), free(src_a), free(src_b), free(text), free(res);
    tn_plan_destroy(a);
    tn_plan_destroy(b);
    tn_fusion_destroy(f);
}


static void test_plan_alloc_failures(void) {
    int reached = 0;
    for (int k = 0; k < 300 && !reached; k++) {
        failing s = {k, 0};
        tn_allocator al = failing_allocator(&s);
        tn_context_options o = {0, &al, "h200", 1};
        tn_context *ctx = NULL;
        if (tn_context_create(&o, &ctx) == TN_STATUS_OK) {
            tn_builtin_options bo = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
            tn_fusion *f = NULL;
            tn_plan *plan = NULL;
            tn_status st = tn_fusion_builtin(ctx, TN_BUILTIN_SOFTMAX, &bo, &f);
            if (st == TN_STATUS_OK) st = tn_plan_create(ctx, f, 64, 100, NULL, &plan);
            CHECK(st == TN_STATUS_OK || st == TN_STATUS_OUT_OF_MEMORY, "allocation %d failing gave %s: %s", k,
                  tn_status_string(st), tn_context_last_error(ctx));
            reached = st == TN_STATUS_OK;
            tn_plan_destroy(plan);
            tn_fusion_destroy(f);
            tn_context_destroy(ctx);
        }
        CHECK(s.live == 0, "allocation %d failing leaked %d blocks", k, s.live);
    }
    CHECK(reached, "plan creation never succeeded");
}

typedef struct job {
    tn_context *ctx;
    int ok;
} job;

static void *make_plans(void *arg) {
    job *j = arg;
    j->ok = 1;
    for (int n = 1000; n < 1006; n++) {
        tn_fusion *f = rmsnorm(j->ctx, TN_DTYPE_BF16);
        tn_plan *plan = NULL;
        j->ok &= tn_plan_create(j->ctx, f, 16, n, NULL, &plan) == TN_STATUS_OK;
        tn_plan_destroy(plan);
        tn_fusion_destroy(f);
    }
    return NULL;
}

static void test_threads(tn_context *ctx) {
    pthread_t th[3];
    job jobs[3] = {{ctx, 0}, {ctx, 0}, {ctx, 0}};
    for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, make_plans, &jobs[i]);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    CHECK(jobs[0].ok && jobs[1].ok && jobs[2].ok, "plans from three threads on one context");
}

/* The kernel hash and the plan ("kind, T threads, R rows a CTA, cluster C") on the tiers line serving `rows`
   ("rows A-B: PLAN, G CTAs; kernel H"); "" if none does. */
static void tier_line(const char *tiers, int64_t rows, char *kernel, size_t kcap, char *plan, size_t pcap) {
    kernel[0] = plan[0] = '\0';
    for (const char *line = strstr(tiers, "  rows "); line; line = strstr(line + 1, "  rows ")) {
        long long lo, hi;
        int at = 0;
        const char *k = strstr(line, "kernel ");
        if (sscanf(line, "  rows %lld-%lld: %n", &lo, &hi, &at) == 2 && lo <= rows && rows <= hi && k) {
            snprintf(kernel, kcap, "%.16s", k + 7);
            const char *end = strstr(line + at, ", cluster ");
            if (end) snprintf(plan, pcap, "%.*s", (int)(end - line - at) + 11, line + at);
            return;
        }
    }
}

/* The same summary of a plan made for exactly `rows` rows (its only tier). */
static void plan_alone(tn_context *ctx, tn_fusion *f, int64_t rows, int64_t cols, char *kernel, size_t kcap,
                       char *plan, size_t pcap) {
    tn_plan *alone = NULL;
    kernel[0] = plan[0] = '\0';
    CHECK(tn_plan_create(ctx, f, rows, cols, NULL, &alone) == TN_STATUS_OK, "plan alone: %s", tn_context_last_error(ctx));
    if (!alone) return;
    char *one = test_describe(alone, TN_DESCRIBE_TIERS);
    CHECK(strncmp(one, "1 row tier, 1 kernel", 20) == 0, "a plan without tiers: %s", one);
    tier_line(one, rows, kernel, kcap, plan, pcap);
    free(one);
    tn_plan_destroy(alone);
}

/* Row tiers: a plan for any row count up to M, its tiers ending where the scheduler's choice changes; a launch
   runs the kernel of the first tier at or above its rows. Each tier's kernel is the one a plan made for the
   tier's last row count alone has, and every row count runs the choice (kind, threads, rows a CTA, cluster)
   the scheduler makes for exactly it; a handful of kernels in all (at most 12 tiers to 1000 rows: rows of 48 KiB
   under two waves take clusters all at once, looping clusters of 8 and streamed clusters of 2 in turn, as the
   smaller clusters come to loop), up to 2^40 rows. */
static void test_row_tiers(tn_context *ctx) {
    static const int64_t cols[] = {4096, 12288, 65536};
    tn_plan_options tiered = {0, NULL, NULL, 0, 1};
    /* The built-ins, then fusions of the public API's own (random, valid), at each N. */
    for (int op = 0; op < TN_BUILTIN_COUNT + 12; op++)
        for (int ci = 0; ci < 3; ci++) {
            tn_fusion *f = NULL;
            if (op < TN_BUILTIN_COUNT) f = test_builtin(ctx, (tn_builtin)op, TN_DTYPE_BF16);
            else tn_random_fusion(ctx, 7000 + (uint64_t)op, 1, &f);
            tn_plan *plan = NULL;
            const tn_status made = tn_plan_create(ctx, f, 1000, cols[ci], &tiered, &plan);
            if (op >= TN_BUILTIN_COUNT && made == TN_STATUS_UNSUPPORTED) { /* beyond a limit: said so, no plan */
                tn_fusion_destroy(f);
                continue;
            }
            CHECK(made == TN_STATUS_OK, "tiers: %s", tn_context_last_error(ctx));
            char *tiers = plan ? test_describe(plan, TN_DESCRIBE_TIERS) : strdup("");
            int n = 0, kernels = 0;
            const char *name = op < TN_BUILTIN_COUNT ? tn_builtin_name((tn_builtin)op) : "random fusion";
            CHECK(sscanf(tiers, "%d row tier%*[s], %d kernel", &n, &kernels) == 2 && n >= 1 && n <= 12 &&
                      kernels <= n && strstr(tiers, "-1000: "), "%s %d %lld: %s", name, op, (long long)cols[ci], tiers);
            for (int64_t m = 1; m <= 1000; m += m < 140 ? 1 : 37) {
                char kt[20], pt[96], ka[20], pa[96];
                tier_line(tiers, m, kt, sizeof kt, pt, sizeof pt);
                plan_alone(ctx, f, m, cols[ci], ka, sizeof ka, pa, sizeof pa);
                CHECK(pt[0] && !strcmp(pt, pa), "%s %d %lld at %lld rows: the tier runs %s, the scheduler chooses %s",
                      name, op, (long long)cols[ci], (long long)m, pt, pa);
            }
            for (const char *line = strstr(tiers, "  rows "); line; line = strstr(line + 1, "  rows ")) {
                long long lo, hi;
                char kt[20], pt[96], ka[20], pa[96];
                if (sscanf(line, "  rows %lld-%lld", &lo, &hi) != 2) continue;
                tier_line(tiers, hi, kt, sizeof kt, pt, sizeof pt);
                plan_alone(ctx, f, hi, cols[ci], ka, sizeof ka, pa, sizeof pa);
                CHECK(ka[0] && !strcmp(kt, ka), "tier ending at %lld rows: kernel %s, alone %s", hi, kt, ka);
            }
            free(tiers);
            tn_plan_destroy(plan);
            tn_fusion_destroy(f);
        }
    tn_fusion *f = rmsnorm(ctx, TN_DTYPE_BF16);
    tn_plan *plan = NULL;
    CHECK(tn_plan_create(ctx, f, 1000, 4096, &tiered, &plan) == TN_STATUS_OK, "tiers: %s", tn_context_last_error(ctx));
    /* The top tier is the plan for M: what describe and resources report. */
    char *text = test_describe(plan, TN_DESCRIBE_TEXT);
    CHECK(strstr(text, "rows             1000"), "text: %s", text);
    tn_resources r;
    CHECK(tn_plan_resources(plan, &r) == TN_STATUS_OK && r.grid_blocks > 0, "resources");
    static char buf[4096] __attribute__((aligned(16)));
    tn_tensor in[2] = {{buf, TN_DTYPE_BF16, 0}, {buf, TN_DTYPE_BF16, 0}}, out1[1] = {{buf, TN_DTYPE_BF16, 0}};
    float eps = 1e-6f;
    tn_launch_args a = {in, 2, out1, 1, &eps, 1, NULL, 600};
    CHECK(tn_plan_launch(plan, &a) == TN_STATUS_NO_DEVICE, "600 of 1000 rows: %s", tn_context_last_error(ctx));
    a.rows = 1001;
    CHECK(tn_plan_launch(plan, &a) == TN_STATUS_INVALID_ARGUMENT && strstr(tn_context_last_error(ctx), "1 to 1000"),
          "1001 rows: %s", tn_context_last_error(ctx));
    free(text);
    tn_plan_destroy(plan);
    /* One row: one tier. Any row count (2^40): still a handful. */
    CHECK(tn_plan_create(ctx, f, 1, 4096, &tiered, &plan) == TN_STATUS_OK, "one row");
    char *tiers = test_describe(plan, TN_DESCRIBE_TIERS);
    CHECK(strncmp(tiers, "1 row tier, 1 kernel, for 1 to 1 rows", 37) == 0, "one row: %s", tiers);
    free(tiers);
    tn_plan_destroy(plan);
    CHECK(tn_plan_create(ctx, f, 1LL << 40, 4096, &tiered, &plan) == TN_STATUS_OK, "2^40 rows: %s",
          tn_context_last_error(ctx));
    tiers = test_describe(plan, TN_DESCRIBE_TIERS);
    int n = 0, kernels = 0;
    CHECK(sscanf(tiers, "%d row tier%*[s], %d kernel", &n, &kernels) == 2 && n <= 8 && kernels <= 8, "2^40 rows: %s",
          tiers);
    free(tiers);
    tn_plan_destroy(plan);
    /* A replayed plan is for its own row count. */
    tn_plan *alone = NULL;
    CHECK(tn_plan_create(ctx, f, 64, 4096, NULL, &alone) == TN_STATUS_OK, "plan");
    char *json = test_describe(alone, TN_DESCRIBE_JSON);
    tn_plan_options replay = {0, json, NULL, 0, 1};
    CHECK(tn_plan_create(ctx, f, 64, 4096, &replay, &plan) == TN_STATUS_INVALID_ARGUMENT &&
          strstr(tn_context_last_error(ctx), "row tiers"), "row tiers with JSON: %s", tn_context_last_error(ctx));
    free(json);
    tn_plan_destroy(alone);
    tn_fusion_destroy(f);
}

/* The tier ends TN_DESCRIBE_TIERS lists ("  rows A-B: ..."), ascending, each tier starting past the one below;
   returns how many (0 if the lines do not chain from 1). */
static int tier_ends(const tn_plan *plan, int64_t *ends, int cap) {
    char *tiers = test_describe(plan, TN_DESCRIBE_TIERS);
    int n = 0;
    for (const char *line = strstr(tiers, "  rows "); line && n < cap; line = strstr(line + 1, "  rows ")) {
        long long lo, hi;
        if (sscanf(line, "  rows %lld-%lld", &lo, &hi) != 2 || lo != (n ? ends[n - 1] + 1 : 1) || hi < lo) {
            n = 0;
            break;
        }
        ends[n++] = hi;
    }
    free(tiers);
    return n;
}

/* What a launch of m rows runs (tn_plan_tier_launch: the tier tn_plan_prepare picks and the grid it launches):
   the first tier of at least m rows, and a grid of whole clusters, none without a row group, covering the m
   rows unless the tier's own grid is smaller (a persistent grid that loops over them); the tier's own rows
   its whole grid. Every m in 1..M, over plans of several tiers, clusters and several rows a CTA. */
static void check_tier_launch(tn_plan *plan, int64_t m, const int64_t *ends, int n, const char *what, int *cut,
                              int *cut_cluster, int *cut_rows) {
    int want = 0;
    while (want < n - 1 && ends[want] < m) want++;
    int64_t tier_rows = 0;
    const tn_plan_desc *d = NULL;
    const int64_t grid = tn_plan_tier_launch(plan, m, &tier_rows, &d);
    CHECK(tier_rows == ends[want], "%s: %lld rows ran the tier of %lld rows, not %lld's", what, (long long)m,
          (long long)tier_rows, (long long)ends[want]);
    const int64_t cl = d->cluster > 1 ? d->cluster : 1, per = d->rows_per_cta > 0 ? d->rows_per_cta : 1;
    const int64_t groups = grid / cl;
    CHECK(grid >= cl && grid % cl == 0 && grid <= d->grid, "%s: %lld rows: grid %lld of the tier's %lld (cluster %lld)",
          what, (long long)m, (long long)grid, (long long)d->grid, (long long)cl);
    if (m == tier_rows) CHECK(grid == d->grid, "%s: the tier's own %lld rows on a grid of %lld, not its %lld", what,
                              (long long)m, (long long)grid, (long long)d->grid);
    else {
        CHECK((groups - 1) * per < m && (groups * per >= m || grid == d->grid),
              "%s: %lld rows on %lld CTAs (%lld rows a CTA, cluster %lld, the tier's grid %lld)", what, (long long)m,
              (long long)grid, (long long)per, (long long)cl, (long long)d->grid);
        *cut += grid < d->grid;
        *cut_cluster += grid < d->grid && cl > 1;
        *cut_rows += grid < d->grid && per > 1;
    }
}

static void test_tier_launches(tn_context *ctx) {
    static const struct {
        tn_builtin op;
        int64_t cols;
        const char *kind;
    } cases[] = {{TN_BUILTIN_RMSNORM, 4096, NULL},      {TN_BUILTIN_RMSNORM, 12288, NULL},
                 {TN_BUILTIN_SOFTMAX, 100, NULL},       {TN_BUILTIN_LAYERNORM, 64, NULL},
                 {TN_BUILTIN_LAYERNORM, 65536, NULL},   {TN_BUILTIN_RMSNORM, 65536, "cluster"},
                 {TN_BUILTIN_ADD_RMSNORM, 4096, "tma-ws"}, {TN_BUILTIN_SOFTMAX, 4096, "tma"},
                 {TN_BUILTIN_RMSNORM, 12288, "looped"}};
    int multi = 0, cut = 0, cut_cluster = 0, cut_rows = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tn_fusion *f = test_builtin(ctx, cases[c].op, TN_DTYPE_BF16);
        tn_plan_options o = {0, NULL, cases[c].kind, 0, 1};
        tn_plan *plan = NULL;
        char what[96];
        snprintf(what, sizeof what, "%s N = %lld %s", tn_builtin_name(cases[c].op), (long long)cases[c].cols,
                 cases[c].kind ? cases[c].kind : "");
        CHECK(tn_plan_create(ctx, f, 1000, cases[c].cols, &o, &plan) == TN_STATUS_OK, "%s: %s", what,
              tn_context_last_error(ctx));
        int64_t ends[64];
        const int n = plan ? tier_ends(plan, ends, 64) : 0;
        CHECK(n >= 1 && ends[n - 1] == 1000, "%s: %d tiers", what, n);
        multi += n > 1;
        for (int64_t m = 1; m <= 1000 && n >= 1; m++)
            check_tier_launch(plan, m, ends, n, what, &cut, &cut_cluster, &cut_rows);
        tn_plan_destroy(plan);
        tn_fusion_destroy(f);
    }
    CHECK(multi >= 4 && cut > 1000 && cut_cluster > 100 && cut_rows > 100,
          "the cases have several tiers (%d), grids cut (%d), of clusters (%d) and of several rows a CTA (%d)", multi,
          cut, cut_cluster, cut_rows);
    /* Up to 2^40 rows: each tier's last row count and the one past it, and the ends of the range. */
    tn_fusion *f = rmsnorm(ctx, TN_DTYPE_BF16);
    tn_plan_options o = {0, NULL, NULL, 0, 1};
    tn_plan *plan = NULL;
    const int64_t big = 1LL << 40;
    CHECK(tn_plan_create(ctx, f, big, 4096, &o, &plan) == TN_STATUS_OK, "2^40: %s", tn_context_last_error(ctx));
    int64_t ends[64];
    const int n = plan ? tier_ends(plan, ends, 64) : 0;
    CHECK(n >= 2 && ends[n - 1] == big, "2^40: %d tiers", n);
    for (int t = 0; t < n; t++) {
        const int64_t ms[] = {1, ends[t] - 1, ends[t], ends[t] + 1, big - 1, big};
        for (int i = 0; i < 6; i++)
            if (ms[i] >= 1 && ms[i] <= big)
                check_tier_launch(plan, ms[i], ends, n, "rmsnorm 2^40", &cut, &cut_cluster, &cut_rows);
    }
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
}

/* A plan with row tiers made while allocation k fails, for every k: out of memory or made, nothing leaked
   (the tier array, a tier built before the failure, a tier half built). Softmax at N = 256: two tiers, small
   kernels; the disk cache in a folder of its own, so only the first attempts compile. */
static void test_row_tier_alloc_failures(void) {
    char dir[] = "/tmp/tn_tier_alloc_XXXXXX";
    const char *saved_dir = getenv("TMANORM_CACHE_DIR"), *saved_off = getenv("TMANORM_DISK_CACHE");
    char *old_dir = saved_dir ? strdup(saved_dir) : NULL, *old_off = saved_off ? strdup(saved_off) : NULL;
    const int have_dir = mkdtemp(dir) != NULL;
    if (have_dir) {
        setenv("TMANORM_CACHE_DIR", dir, 1);
        unsetenv("TMANORM_DISK_CACHE");
    }
    int reached = 0, tiers = 0;
    for (int k = 0; k < 5000 && !reached; k++) {
        failing s = {k, 0};
        tn_allocator al = failing_allocator(&s);
        tn_context_options o = {0, &al, "h200", 1};
        tn_context *ctx = NULL;
        if (tn_context_create(&o, &ctx) == TN_STATUS_OK) {
            tn_builtin_options bo = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
            tn_plan_options po = {0, NULL, NULL, 0, 1};
            tn_fusion *f = NULL;
            tn_plan *plan = NULL;
            tn_status st = tn_fusion_builtin(ctx, TN_BUILTIN_SOFTMAX, &bo, &f);
            if (st == TN_STATUS_OK) st = tn_plan_create(ctx, f, 1000, 256, &po, &plan);
            CHECK(st == TN_STATUS_OK || st == TN_STATUS_OUT_OF_MEMORY, "allocation %d failing gave %s: %s", k,
                  tn_status_string(st), tn_context_last_error(ctx));
            reached = st == TN_STATUS_OK;
            if (plan) {
                int64_t ends[64];
                s.countdown = -1; /* describing allocates too */
                tiers = tier_ends(plan, ends, 64);
            }
            tn_plan_destroy(plan);
            tn_fusion_destroy(f);
            tn_context_destroy(ctx);
        }
        CHECK(s.live == 0, "row tiers: allocation %d failing leaked %d blocks", k, s.live);
    }
    CHECK(reached && tiers >= 2, "a plan of row tiers never made (%d tiers, reached %d)", tiers, reached);
    if (have_dir) {
        char cmd[64];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0, "removing %s", dir);
    }
    if (old_dir) setenv("TMANORM_CACHE_DIR", old_dir, 1);
    else unsetenv("TMANORM_CACHE_DIR");
    if (old_off) setenv("TMANORM_DISK_CACHE", old_off, 1);
    else unsetenv("TMANORM_DISK_CACHE");
    free(old_dir);
    free(old_off);
}

/* Peeled plans (odd N): run only where every ROW tensor is at one offset from a 16-byte boundary, in its own
   elements, on every row; the launch checks it (tn_plan_rows_agree) before picking the variant. */
static void test_peel_agreement(tn_context *ctx) {
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_F32, 0}; /* y wider than x */
    tn_fusion *f = NULL;
    tn_plan *plan = NULL;
    CHECK(tn_fusion_builtin(ctx, TN_BUILTIN_RMSNORM, &o, &f) == TN_STATUS_OK &&
              tn_plan_create(ctx, f, 1000, 4097, NULL, &plan) == TN_STATUS_OK, "plan: %s", tn_context_last_error(ctx));
    char *json = test_describe(plan, TN_DESCRIBE_JSON), *tiers = test_describe(plan, TN_DESCRIBE_TIERS);
    CHECK(strstr(json, "\"peel\": 1"), "odd N peeled: %s", json);
    /* The plan for tensors that disagree is built at creation: no launch compiles (graph capture). */
    CHECK(strstr(tiers, "tensors at different offsets: register, vec 1; kernel "), "the unpeeled plan: %s", tiers);
    free(json), free(tiers);
    const struct { uintptr_t x, y; int64_t xs, ys; int agree; const char *what; } cases[] = {
        {0x10000, 0x20000, 0, 0, 1, "both at a boundary, stride N"},
        {0x10002, 0x20004, 0, 0, 1, "both one element past one"},
        {0x10002, 0x20000, 0, 0, 0, "x one element past, y at one"},
        {0x10000, 0x20000, 4097, 4098, 0, "strides one element apart"},
        {0x10000, 0x20000, 4101, 4101, 1, "strides 4 elements over N (y's 16 bytes)"},
        {0x1000e, 0x2001c, 4104, 4100, 1, "x 7 elements past, y 7; strides agree modulo 4"},
        {0x1000e, 0x2001c, 4104, 4102, 0, "strides 2 apart: y's rows drift"},
        {0x1000e, 0x2001c, 4104, 4102, 1, "strides 2 apart, one row launched"},
    };
    float eps = 1e-6f;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tn_tensor in[2] = {{(void *)cases[i].x, TN_DTYPE_BF16, cases[i].xs}, {(void *)0x30000, TN_DTYPE_BF16, 0}};
        tn_tensor out[1] = {{(void *)cases[i].y, TN_DTYPE_F32, cases[i].ys}};
        tn_launch_args a = {in, 2, out, 1, &eps, 1, NULL, strstr(cases[i].what, "one row") ? 1 : 0};
        CHECK(tn_plan_rows_agree(plan, &a) == cases[i].agree, "%s: agree %d", cases[i].what, !cases[i].agree);
    }
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
}

void test_api(void) {
    tn_context *ctx = test_context();
    CHECK(!tn_context_has_gpu(ctx), "a forced target has no GPU");
    tn_device_props p;
    CHECK(tn_context_device_props(ctx, &p) == TN_STATUS_OK && p.sm_count == 132 && p.cc_major == 9, "h200 props");
    tn_context_options bad = {0, NULL, "tpu", 1};
    tn_context *c2 = NULL;
    CHECK(tn_context_create(&bad, &c2) == TN_STATUS_INVALID_ARGUMENT && !c2, "unknown target");
    test_errors(ctx);
    test_replay(ctx);
    test_row_tiers(ctx);
    test_tier_launches(ctx);
    test_peel_agreement(ctx);
    test_plan_alloc_failures();
    test_row_tier_alloc_failures();
    test_threads(ctx);
    tn_context_destroy(ctx);
    /* Without a forced target the context still works on a machine with no GPU. */
    tn_context *plain = NULL;
    CHECK(tn_context_create(NULL, &plain) == TN_STATUS_OK, "plain context");
    tn_context_destroy(plain);
}
