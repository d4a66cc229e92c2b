/* Codegen tests: generated kernels compared with golden files (the kernel
   after the shared device helpers), and determinism. TN_UPDATE_GOLDEN=1
   rewrites the goldens after an intended change; review the diff. */
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "sched/heuristics.h"
#include "test.h"

typedef struct golden {
    const char *file;
    tn_builtin op;
    tn_dtype in, w, out;
    int stats;
    int64_t rows, cols;
    int kind;
    int stages; /* a cluster plan's slices through this many stages of shared memory */
    int shared; /* ... left in its one stage and read there, a cluster a row (shared_slice) */
    int pipeline; /* a register plan over a persistent grid of 4 CTAs an SM, the next row group loaded ahead */
    int online;   /* softmax's max and sum reduced as one online pair (tune's candidate) */
    int pdl;      /* PDL requested (1): the wait at the top, the trigger there or, in cluster plans, at each CTA's last
                     row group; 2: that late trigger set in a plan of another kind (tune's twin); 3: no trigger */
} golden;

static const golden k_goldens[] = {
    {"rmsnorm_bf16_4096x4096.cu", TN_BUILTIN_RMSNORM, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0, 4096, 4096,
     TN_PLAN_REGISTER},
    {"layernorm_f16_stats_3x4097_looped.cu", TN_BUILTIN_LAYERNORM, TN_DTYPE_F16, TN_DTYPE_F32, TN_DTYPE_F16, 1, 3, 4097,
     TN_PLAN_LOOPED},
    {"softmax_f32_8x1000.cu", TN_BUILTIN_SOFTMAX, TN_DTYPE_F32, TN_DTYPE_F32, TN_DTYPE_F32, 0, 8, 1000, -1},
    {"add_rmsnorm_bf16_64x512.cu", TN_BUILTIN_ADD_RMSNORM, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0, 64, 512, -1},
    /* one wave of 512 CTAs: compiled for 4 CTAs an SM; the weight loaded with the row. */
    {"rmsnorm_bf16_512x4096.cu", TN_BUILTIN_RMSNORM, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0, 512, 4096, -1},
    {"layernorm_bf16_4096x4096_tma.cu", TN_BUILTIN_LAYERNORM, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0, 4096, 4096,
     TN_PLAN_TMA},
    /* tma-ws: two consumer groups sharing the producer's registers; one group streaming long rows in chunks. */
    {"add_rmsnorm_bf16_16384x1024_tma_ws.cu", TN_BUILTIN_ADD_RMSNORM, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0,
     16384, 1024, TN_PLAN_TMA_WS},
    {"layernorm_bf16_stats_4096x65536_tma_ws.cu", TN_BUILTIN_LAYERNORM, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 1,
     4096, 65536, TN_PLAN_TMA_WS},
    /* cluster: two reductions, each over the CTA then the cluster; the statistics stored by rank 0 only. */
    {"layernorm_bf16_stats_4096x131072_cluster.cu", TN_BUILTIN_LAYERNORM, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 1,
     4096, 131072, TN_PLAN_CLUSTER},
    /* cluster with two stages: each CTA's slices of the rows ahead stream in by bulk copies (tune's candidate). */
    {"rmsnorm_bf16_4096x65536_cluster_staged.cu", TN_BUILTIN_RMSNORM, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0,
     4096, 65536, TN_PLAN_CLUSTER, 2},
    /* cluster whose slice stays in shared memory: every phase reads it from the stage (tune's candidate). */
    {"layernorm_bf16_4096x65536_cluster_shared.cu", TN_BUILTIN_LAYERNORM, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0,
     4096, 65536, TN_PLAN_CLUSTER, 1, 1},
    /* uneven slices, staged: 8199 vectors over 8 CTAs of 1025 (the last 1024), each copied from its own first
       vector and as long as it is; the unrolled loop checks only a thread's vectors past every slice's. */
    {"add_rmsnorm_bf16_4096x65592_cluster_staged.cu", TN_BUILTIN_ADD_RMSNORM, TN_DTYPE_BF16, TN_DTYPE_BF16,
     TN_DTYPE_BF16, 0, 4096, 65592, TN_PLAN_CLUSTER, 1},
    /* pipelined: the weight loaded once before the loop, the next row group's vectors before this one's
       reduction (tune's candidate). */
    {"add_rmsnorm_bf16_65536x512_pipeline.cu", TN_BUILTIN_ADD_RMSNORM, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0,
     65536, 512, TN_PLAN_REGISTER, 0, 0, 1},
    /* online pairs: each thread's max, a second pass summing exp(t - it), one reduction round (over the CTA,
       then the cluster) for the pair; the carried exps rescaled to the row's max in the output phase. */
    {"softmax_bf16_64x32768_cluster_online.cu", TN_BUILTIN_SOFTMAX, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0, 64,
     32768, -1, 0, 0, 0, 1},
    {"softmax_f32_8x1000_online.cu", TN_BUILTIN_SOFTMAX, TN_DTYPE_F32, TN_DTYPE_F32, TN_DTYPE_F32, 0, 8, 1000, -1, 0, 0,
     0, 1},
    /* odd N, peeled: 16-byte vectors from each row's first boundary, the elements outside them one a thread. */
    {"layernorm_bf16_4096x4097_peel.cu", TN_BUILTIN_LAYERNORM, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0, 4096, 4097,
     -1},
    /* PDL, a cluster grid that loops over its rows (pdl 2): the next kernel triggered at each CTA's last row group. */
    {"softmax_bf16_512x65536_cluster_pdl.cu", TN_BUILTIN_SOFTMAX, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0, 512,
     65536, -1, 0, 0, 0, 0, 1},
    /* PDL, one wave of a register plan (pdl 1): the first row group prefetched into L2 before the wait (early_l2),
       the trigger at the top. */
    {"rmsnorm_bf16_64x4096_pdl.cu", TN_BUILTIN_RMSNORM, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0, 64, 4096, -1, 0,
     0, 0, 0, 1},
    /* The late trigger in the grid-stride (register) and ring (tma) skeletons: tune's twins. */
    {"rmsnorm_bf16_4096x4096_pdl2.cu", TN_BUILTIN_RMSNORM, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0, 4096, 4096,
     TN_PLAN_REGISTER, 0, 0, 0, 0, 2},
    {"layernorm_bf16_4096x4096_tma_pdl2.cu", TN_BUILTIN_LAYERNORM, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0, 4096,
     4096, TN_PLAN_TMA, 0, 0, 0, 0, 2},
    /* PDL with no trigger (pdl 3, tune's twin of a grid that loops): the wait alone; each CTA triggers as it exits. */
    {"softmax_bf16_512x65536_cluster_pdl3.cu", TN_BUILTIN_SOFTMAX, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0, 512,
     65536, -1, 0, 0, 0, 0, 3},
};

/* A plan for fusion f over rows x cols of `kind` (-1: the scheduler's) and PDL as asked, then changed as a
   golden or a test asks: a tune candidate with the slices in L2 (l2_slice) put in its place; pipelined;
   its cluster slices left in shared memory (shared) or streamed through `stages`; max and sum as one online
   pair; pdl 2 or 3 set; the outputs that need no reduction stored early (early 1) or late (-1), not as the
   scheduler chose (0). */
typedef struct kernel_case {
    int64_t rows, cols;
    int kind, pdl, stages, shared, pipeline, online, l2_slice, early;
} kernel_case;

/* The kernel for k's plan of fusion f (the caller frees it); `what` names the case in failures. */
static char *kernel_of(const tn_fusion *f, kernel_case k, const char *what) {
    tn_analysis a;
    tn_analyze(f, &a);
    tn_device_props d;
    tn_device_props_for_target("h200", &d);
    tn_schedule_request req = {&a, k.rows, k.cols, 16, k.kind, &d, k.pdl != 0};
    tn_plan_desc p;
    char err[320];
    CHECK(tn_schedule(&req, &p, err, sizeof err), "%s: %s", what, err);
    if (k.l2_slice) {
        static tn_plan_desc cands[4096];
        const int n = tn_schedule_candidates(&req, cands, 4096);
        int found = 0;
        for (int i = 0; i < n && !found; i++)
            if (cands[i].l2_slice) p = cands[i], found = 1;
        CHECK(found, "%s: no l2_slice candidate", what);
    }
    if (k.pipeline) p.pipeline = 1, p.grid = 4LL * d.sm_count, p.ctas_per_sm = 4;
    if (k.shared) tn_cluster_share_slice(&a, &p);
    else if (k.stages) p.stages = k.stages, p.smem_bytes = (int)tn_cluster_dynamic_smem(&a, &p);
    if (k.online) p.online = 1;
    if (k.pdl >= 2) p.pdl = k.pdl;
    if (k.early) p.early_stores = k.early > 0;
    CHECK(tn_plan_desc_check(&p, &a, &d, 16, err, sizeof err), "%s: %s", what, err);
    if (k.online) CHECK(tn_analyze_online(f, &a) == 1, "%s: no online pair", what);
    tn_strbuf sb;
    tn_strbuf_init(&sb, NULL);
    tn_codegen(f, &a, &p, &sb);
    return tn_strbuf_take(&sb);
}

static char *generate(tn_context *ctx, const golden *g) {
    tn_builtin_options o = {g->in, g->w, g->out, g->stats};
    tn_fusion *f = NULL;
    tn_fusion_builtin(ctx, g->op, &o, &f);
    const kernel_case k = {.rows = g->rows, .cols = g->cols, .kind = g->kind, .pdl = g->pdl, .stages = g->stages,
                           .shared = g->shared, .pipeline = g->pipeline, .online = g->online};
    char *src = kernel_of(f, k, g->file);
    tn_fusion_destroy(f);
    return src;
}

static char *slurp(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, fp);
    s[got] = '\0';
    fclose(fp);
    return s;
}

void test_codegen(void) {
    tn_context *ctx = test_context();
    int update = getenv("TN_UPDATE_GOLDEN") != NULL;
    for (size_t i = 0; i < sizeof k_goldens / sizeof k_goldens[0]; i++) {
        const golden *g = &k_goldens[i];
        char *src = generate(ctx, g), *again = generate(ctx, g);
        CHECK(src && again && strcmp(src, again) == 0, "%s: generated source is not deterministic", g->file);
        const char *kernel = strstr(src, "\n// row storage:"); /* the kind's storage and skeleton, then the kernel */
        if (kernel) kernel++;
        CHECK(kernel != NULL, "%s: no kernel", g->file);
        char path[512];
        snprintf(path, sizeof path, "%s/tests/cpu/golden/%s", TN_SOURCE_DIR, g->file);
        if (update && kernel) {
            FILE *fp = fopen(path, "wb");
            if (fp) fputs(kernel, fp), fclose(fp);
            printf("updated %s\n", path);
        }
        char *want = slurp(path);
        CHECK(want != NULL, "missing golden %s (run with TN_UPDATE_GOLDEN=1)", path);
        if (want && kernel && strcmp(want, kernel) != 0) {
            size_t k = 0;
            while (want[k] && want[k] == kernel[k]) k++;
            CHECK(0, "%s differs from the golden at byte %zu: ...%.80s", g->file, k, kernel + k);
        }
        free(want);
        free(src);
        free(again);
    }
    tn_context_destroy(ctx);
}

static int count_of(const char *s, const char *needle) {
    int n = 0;
    for (const char *at = strstr(s, needle); at; at = strstr(at + 1, needle)) n++;
    return n;
}

static const char *const k_early_mark = "if (live) {  // stored before the reductions";

/* Outputs that need no reduction are stored in the first reduction phase where the plan says so (early_stores:
   the scheduler's where every CTA takes one row group) and the row stays on chip (before the first reduction's
   call), and in the output phase where the plan says not, where each phase reads the row from memory again (an
   in-place store there would change what the next phase reads), where tma-ws keeps them there, where the row
   kept in registers takes over half of a thread's, or where the first phase does not compute them. */
void test_early_stores(void) {
    tn_context *ctx = test_context();
    tn_fusion *add = test_builtin(ctx, TN_BUILTIN_ADD_RMSNORM, TN_DTYPE_BF16);
    const char *const sum = "out1 + row * out1_ld", *y = "out0 + row * out0_ld";
    const struct {
        kernel_case k;
        int early;
        const char *reduce; /* the first reduction's call */
    } cases[] = {
        {{.rows = 64, .cols = 4096, .kind = TN_PLAN_REGISTER, .pdl = 1}, 1, "tn_row_reduce"},
        {{.rows = 4097, .cols = 4097, .kind = TN_PLAN_REGISTER, .pdl = 1}, 1, "tn_row_reduce"}, /* peeled: the element outside the vectors too */
        {{.rows = 4096, .cols = 8192, .kind = TN_PLAN_TMA, .pdl = 1, .early = 1}, 1, "tn_row_reduce"},
        {{.rows = 4096, .cols = 65536, .kind = TN_PLAN_CLUSTER, .pdl = 1, .early = 1}, 1, "tn_cluster_reduce"},
        /* the scheduler's choice where the grid loops (early_stores 0), and a register plan's turned off */
        {{.rows = 4096, .cols = 65536, .kind = TN_PLAN_CLUSTER, .pdl = 1}, 0, "tn_cluster_reduce"},
        {{.rows = 64, .cols = 4096, .kind = TN_PLAN_REGISTER, .pdl = 1, .early = -1}, 0, "tn_row_reduce"},
        {{.rows = 3, .cols = 4097, .kind = TN_PLAN_LOOPED, .pdl = 1}, 0, "tn_row_reduce"},
        {{.rows = 16384, .cols = 1024, .kind = TN_PLAN_TMA_WS, .pdl = 1}, 0, "tn_group_reduce"},
        {{.rows = 512, .cols = 262144, .kind = TN_PLAN_CLUSTER, .pdl = 1, .l2_slice = 1}, 0, "tn_cluster_reduce"},
        /* 4 CTAs of 256 x 17 vectors, staged: 136 words of the row in a thread's 255 registers */
        {{.rows = 512, .cols = 131080, .kind = TN_PLAN_CLUSTER, .pdl = 1, .stages = 1, .early = 1}, 0,
         "tn_cluster_reduce"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *src = kernel_of(add, cases[i].k, "add_rmsnorm");
        const char *at = strstr(src, k_early_mark);
        /* The reduction helpers are defined in the device header: the first call is the first after the kernel's
           signature. */
        const char *body = strstr(src, "tn_kernel("), *red = body ? strstr(body, cases[i].reduce) : NULL;
        const char *first_y = body ? strstr(body, y) : NULL;
        CHECK(red && first_y && red < first_y, "case %zu: no %s before y's store", i, cases[i].reduce);
        if (cases[i].early) {
            /* Every store of the sum under the mark, before the first reduction (the peeled element's too). */
            CHECK(at && at < red && count_of(src, k_early_mark) == (cases[i].k.cols % 8 ? 2 : 1),
                  "case %zu (%lld x %lld): the early stores' guard", i, (long long)cases[i].k.rows,
                  (long long)cases[i].k.cols);
            for (const char *o = strstr(src, sum); o; o = strstr(o + 1, sum))
                CHECK(at && o > at && o < red, "case %zu: a store of the sum outside the first phase", i);
        } else {
            CHECK(!at, "case %zu (%lld x %lld): an early store", i, (long long)cases[i].k.rows,
                  (long long)cases[i].k.cols);
            /* ... so the sum is stored with y, after the reductions. */
            const char *o = strstr(src, sum);
            CHECK(o && o > red && count_of(src, sum) == count_of(src, y), "case %zu: the sum's store with y's", i);
        }
        free(src);
    }
    tn_fusion_destroy(add);
    /* A user fusion: y = exp(x - max(x)) / sum(exp(x - max(x))) beside the row itself as bf16 (z = x) and 2x
       (w): the first phase computes x, so z goes early, once even where max and sum are one online pair (the
       pair's second pass stores nothing); it does not compute 2x, so w waits for the output phase. */
    tn_fusion *f = NULL;
    tn_value x, xf, two, w, m, t, e, s, q;
    tn_fusion_create(ctx, "softmax_and_copies", &f);
    tn_fusion_input(f, "x", TN_DTYPE_BF16, TN_SHAPE_ROW, &x);
    tn_fusion_cast(f, x, TN_DTYPE_F32, &xf);
    tn_fusion_constant(f, 2.0, &two);
    tn_fusion_binary(f, TN_BINARY_MUL, xf, two, &w);
    tn_fusion_reduce(f, TN_REDUCE_MAX, TN_AXIS_INNER, xf, &m);
    tn_fusion_binary(f, TN_BINARY_SUB, xf, m, &t);
    tn_fusion_unary(f, TN_UNARY_EXP, t, &e);
    tn_fusion_reduce(f, TN_REDUCE_SUM, TN_AXIS_INNER, e, &s);
    tn_fusion_binary(f, TN_BINARY_DIV, e, s, &q);
    tn_fusion_output(f, "y", q, TN_DTYPE_BF16);
    tn_fusion_output(f, "z", xf, TN_DTYPE_BF16);
    tn_fusion_output(f, "w", w, TN_DTYPE_BF16);
    CHECK(tn_fusion_verify(f) == TN_STATUS_OK, "softmax_and_copies: %s", tn_context_last_error(ctx));
    for (int online = 0; online <= 1; online++) {
        char *src = kernel_of(
            f, (kernel_case){.rows = 64, .cols = 4096, .kind = TN_PLAN_REGISTER, .pdl = 1, .online = online},
            "softmax_and_copies");
        const char *at = strstr(src, k_early_mark), *body = strstr(src, "tn_kernel(");
        const char *red = body ? strstr(body, "tn_row_reduce") : NULL;
        CHECK(at && red && at < red && count_of(src, k_early_mark) == 1 && count_of(src, "out1 + row * out1_ld") == 1 &&
                  strstr(at, "out1 + row * out1_ld") < red,
              "online %d: z stored once, early", online);
        const char *wst = strstr(src, "out2 + row * out2_ld");
        CHECK(wst && wst > red && count_of(src, "out2 + row * out2_ld") == 1, "online %d: w stored with y", online);
        free(src);
    }
    tn_fusion_destroy(f);
    tn_context_destroy(ctx);
}
