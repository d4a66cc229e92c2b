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

static char *generate(tn_context *ctx, const golden *g) {
    tn_builtin_options o = {g->in, g->w, g->out, g->stats};
    tn_fusion *f = NULL;
    tn_fusion_builtin(ctx, g->op, &o, &f);
    tn_analysis a;
    tn_analyze(f, &a);
    tn_device_props d;
    tn_device_props_for_target("h200", &d);
    tn_schedule_request req = {&a, g->rows, g->cols, 16, g->kind, &d, g->pdl != 0};
    tn_plan_desc p;
    char err[320];
    CHECK(tn_schedule(&req, &p, err, sizeof err), "%s: %s", g->file, err);
    if (g->pipeline) p.pipeline = 1, p.grid = 4LL * d.sm_count, p.ctas_per_sm = 4;
    if (g->shared) tn_cluster_share_slice(&a, &p);
    else if (g->stages) p.stages = g->stages, p.smem_bytes = (int)tn_cluster_dynamic_smem(&a, &p);
    if (g->online) p.online = 1;
    if (g->pdl >= 2) p.pdl = g->pdl;
    if (g->stages || g->pipeline || g->online || g->pdl >= 2) {
        CHECK(tn_plan_desc_check(&p, &a, &d, 16, err, sizeof err), "%s: %s", g->file, err);
    }
    if (g->online) CHECK(tn_analyze_online(f, &a) == 1, "%s: no online pair", g->file);
    tn_strbuf sb;
    tn_strbuf_init(&sb, NULL);
    tn_codegen(f, &a, &p, &sb);
    tn_fusion_destroy(f);
    return tn_strbuf_take(&sb);
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
