/* Compile tests: every plan of the standard sweep (and fp16/fp32 spot checks,
   the looped and tma kinds forced) compiled with NVRTC for sm_90a, with zero
   spills and no stack; the tma kind's PTX holds its bulk copies and mbarrier
   waits; a compile failure reports NVRTC's log. */
#include <nvrtc.h>
#include <stdlib.h>
#include <string.h>

#include "rt/runtime.h"
#include "rt/cache.h"
#include "sched/heuristics.h"
#include "test.h"
#include "util/alloc.h"

static void compile_one(tn_context *ctx, tn_builtin op, tn_dtype dt, int64_t m, int64_t n, const char *kind, int *count) {
    tn_builtin_options o = {dt, dt, dt, 0};
    tn_fusion *f = NULL;
    tn_plan *plan = NULL;
    tn_plan_options po = {0, NULL, kind};
    tn_status st = tn_fusion_builtin(ctx, op, &o, &f);
    if (st == TN_STATUS_OK) st = tn_plan_create(ctx, f, m, n, &po, &plan);
    /* A forced kind may refuse a shape (a tma row beyond shared memory), with the reason. */
    if (kind && st == TN_STATUS_UNSUPPORTED && strstr(tn_context_last_error(ctx), kind)) {
        tn_fusion_destroy(f);
        return;
    }
    CHECK(st == TN_STATUS_OK, "%s %s %lldx%lld: %s", tn_builtin_name(op), tn_dtype_name(dt), (long long)m, (long long)n,
          tn_context_last_error(ctx));
    if (st == TN_STATUS_OK) {
        tn_resources r;
        tn_plan_resources(plan, &r);
        CHECK(r.spill_store_bytes == 0 && r.spill_load_bytes == 0 && r.stack_bytes == 0,
              "%s %s %lldx%lld %s: %d/%d spill bytes, %d stack", tn_builtin_name(op), tn_dtype_name(dt), (long long)m,
              (long long)n, kind ? kind : "auto", r.spill_store_bytes, r.spill_load_bytes, r.stack_bytes);
        CHECK(r.registers > 0 && r.registers <= 255, "registers %d", r.registers);
        (*count)++;
    }
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
}

/* The JSON of the plan of kind `kind` (forced) for f at [m, n], with
   `"field": ` followed by 1 where it was 0 or 1; NULL (a failed check) if
   the plan or the field is not there. The caller frees it. */
static char *forced_json_with(tn_context *ctx, tn_fusion *f, int64_t m, int64_t n, const char *kind, const char *field) {
    tn_plan *plan = NULL;
    tn_plan_options forced = {0, NULL, kind};
    CHECK(tn_plan_create(ctx, f, m, n, &forced, &plan) == TN_STATUS_OK, "%s %lldx%lld: %s", kind, (long long)m,
          (long long)n, tn_context_last_error(ctx));
    char *json = plan ? test_describe(plan, TN_DESCRIBE_JSON) : NULL, key[64];
    tn_plan_destroy(plan);
    snprintf(key, sizeof key, "\"%s\": ", field);
    char *at = json ? strstr(json, key) : NULL;
    CHECK(at != NULL, "no %s field in %s", field, json ? json : "(none)");
    if (!at) {
        free(json);
        return NULL;
    }
    at[strlen(key)] = '1';
    return json;
}

/* The PTX of a generated kernel's source for sm_90a (a failed compile is a
   failed check); the caller frees it. */
static char *ptx_of(const char *src) {
    nvrtcProgram prog;
    const char *opts[] = {"--gpu-architecture=compute_90a", "--std=c++17"};
    nvrtcCreateProgram(&prog, src, "plan.cu", 0, NULL, NULL);
    CHECK(nvrtcCompileProgram(prog, 2, opts) == NVRTC_SUCCESS, "PTX compile");
    size_t size = 0;
    nvrtcGetPTXSize(prog, &size);
    char *ptx = malloc(size + 1);
    nvrtcGetPTX(prog, ptx);
    ptx[size] = '\0';
    nvrtcDestroyProgram(&prog);
    return ptx;
}

/* A cluster plan with the L2 prefetch of the next row (the scheduler's choice
   for special functions in two phases, tune's candidate beside every other
   cluster plan): replayed from its JSON, compiled without spills, the
   prefetch in its source; refused where rows are not 16-byte aligned. */
static void compile_prefetch(tn_context *ctx, tn_builtin op, int64_t m, int64_t n, int *count) {
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_fusion *f = NULL;
    tn_plan *plan = NULL;
    tn_fusion_builtin(ctx, op, &o, &f);
    char *json = forced_json_with(ctx, f, m, n, "cluster", "prefetch");
    if (json) {
        tn_plan_options po = {0, json, NULL};
        CHECK(tn_plan_create(ctx, f, m, n, &po, &plan) == TN_STATUS_OK, "prefetch %lldx%lld: %s", (long long)m,
              (long long)n, tn_context_last_error(ctx));
        if (plan) {
            tn_resources r;
            tn_plan_resources(plan, &r);
            char *src = test_describe(plan, TN_DESCRIBE_SOURCE);
            CHECK(r.spill_store_bytes == 0 && r.stack_bytes == 0 && strstr(src, "tn_prefetch_l2(in0 + next * in0_ld"),
                  "prefetch %lldx%lld: %d spill bytes, prefetch in the source: %d", (long long)m, (long long)n,
                  r.spill_store_bytes, strstr(src, "tn_prefetch_l2(in0") != NULL);
            free(src);
            tn_plan_destroy(plan);
            (*count)++;
        }
        tn_plan_options po8 = {8, json, NULL};
        CHECK(tn_plan_create(ctx, f, m, n, &po8, &plan) != TN_STATUS_OK, "prefetch on 8-byte aligned rows accepted");
    }
    free(json);
    tn_fusion_destroy(f);
}

/* The scheduler's plan with its first row group prefetched into L2 before the PDL wait (one wave, PDL on by
   default on sm_90): compiled without spills, every ROW and COL input's span named before the wait; rows at any
   element alignment (peeled register plans, uneven cluster slices of 1-element vectors). */
static void compile_early_l2(tn_context *ctx, tn_builtin op, tn_dtype dt, int64_t m, int64_t n, int align, int *count) {
    tn_builtin_options o = {dt, dt, dt, 0};
    tn_fusion *f = NULL;
    tn_plan *plan = NULL;
    tn_plan_options po = {align, NULL, NULL};
    tn_fusion_builtin(ctx, op, &o, &f);
    CHECK(tn_plan_create(ctx, f, m, n, &po, &plan) == TN_STATUS_OK, "early_l2 %s %lldx%lld: %s", tn_builtin_name(op),
          (long long)m, (long long)n, tn_context_last_error(ctx));
    if (plan) {
        tn_resources r;
        tn_plan_resources(plan, &r);
        char *json = test_describe(plan, TN_DESCRIBE_JSON), *src = test_describe(plan, TN_DESCRIBE_SOURCE);
        const char *pre = strstr(src, "ull>(in0 + tn_r0 * in0_ld"), *wait = strstr(src, "tn_pdl_wait();");
        char *ptx = ptx_of(src);
        CHECK(strstr(json, "\"early_l2\": 1") && pre && wait && pre < wait && r.spill_store_bytes == 0 &&
                  r.stack_bytes == 0 && strstr(ptx, "cp.async.bulk.prefetch.L2.global"),
              "early_l2 %s %s %lldx%lld (align %d): %s, prefetch before the wait %d, %d spill bytes, in the PTX %d",
              tn_builtin_name(op), tn_dtype_name(dt), (long long)m, (long long)n, align, json,
              pre && wait && pre < wait, r.spill_store_bytes, strstr(ptx, "cp.async.bulk.prefetch.L2.global") != NULL);
        free(ptx);
        free(json);
        free(src);
        tn_plan_destroy(plan);
        (*count)++;
    }
    tn_fusion_destroy(f);
}

/* A cluster plan whose slices stream through `stages` stages of shared memory
   (tune's candidate beside each cluster plan): the forced cluster plan's JSON
   with stages and smem_bytes set, replayed, compiled without spills, its PTX
   holding the slices' bulk copies beside the exchange's st.async; refused on
   8-byte aligned tensors (the common alignment check; test_sched checks the
   stages' own refusals) and with a wrong smem_bytes. */
static void compile_staged(tn_context *ctx, tn_builtin op, int64_t m, int64_t n, int stages, int *count) {
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_fusion *f = NULL;
    tn_plan *plan = NULL;
    tn_fusion_builtin(ctx, op, &o, &f);
    tn_analysis a;
    tn_analyze(f, &a);
    char *json = forced_json_with(ctx, f, m, n, "cluster", "stages"), *at = json ? strstr(json, "\"cluster\": ") : NULL;
    int cl = 0;
    if (at) sscanf(at, "\"cluster\": %d", &cl);
    char *smem = json ? strstr(json, "\"smem_bytes\": 0") : NULL;
    CHECK(cl >= 2 && smem, "staged %lldx%lld: no cluster or smem_bytes in %s", (long long)m, (long long)n,
          json ? json : "(none)");
    if (cl >= 2 && smem) {
        strstr(json, "\"stages\": 1")[strlen("\"stages\": ")] = (char)('0' + stages);
        tn_plan_desc d;
        char perr[256];
        CHECK(tn_plan_desc_parse(json, &d, perr, sizeof perr), "%s", perr);
        d.stages = stages;
        const long long bytes = tn_cluster_dynamic_smem(&a, &d);
        const size_t len = strlen(json) + 32;
        char *with = malloc(len);
        *smem = '\0';
        snprintf(with, len, "%s\"smem_bytes\": %lld%s", json, bytes, smem + strlen("\"smem_bytes\": 0"));
        tn_plan_options po = {0, with, NULL};
        CHECK(tn_plan_create(ctx, f, m, n, &po, &plan) == TN_STATUS_OK, "staged %lldx%lld: %s", (long long)m,
              (long long)n, tn_context_last_error(ctx));
        if (plan) {
            tn_resources r;
            tn_plan_resources(plan, &r);
            char *src = test_describe(plan, TN_DESCRIBE_SOURCE), *ptx = ptx_of(src);
            CHECK(r.spill_store_bytes == 0 && r.stack_bytes == 0 && strstr(src, "tn_ring_refill<1, S") &&
                      strstr(ptx, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes") &&
                      strstr(ptx, "st.async.shared::cluster"),
                  "staged %lldx%lld: %d spill bytes, ring in the source %d, bulk copy and st.async in the PTX %d %d",
                  (long long)m, (long long)n, r.spill_store_bytes, strstr(src, "tn_ring_refill<1, S") != NULL,
                  strstr(ptx, "cp.async.bulk.shared::cluster") != NULL, strstr(ptx, "st.async") != NULL);
            free(ptx);
            free(src);
            tn_plan_destroy(plan);
            (*count)++;
        }
        tn_plan_options po8 = {8, with, NULL};
        CHECK(tn_plan_create(ctx, f, m, n, &po8, &plan) != TN_STATUS_OK, "stages on 8-byte aligned rows accepted");
        snprintf(with, len, "%s\"smem_bytes\": %lld%s", json, bytes + 16, smem + strlen("\"smem_bytes\": 0"));
        tn_plan_options bad = {0, with, NULL};
        CHECK(tn_plan_create(ctx, f, m, n, &bad, &plan) != TN_STATUS_OK &&
                  strstr(tn_context_last_error(ctx), "smem_bytes"),
              "staged plan with a wrong smem_bytes: %s", tn_context_last_error(ctx));
        free(with);
    }
    free(json);
    tn_fusion_destroy(f);
}

/* tune's candidates for op at [m, n] (inputs of dtype dt, weights of w, outputs of out, statistics where
   `stats`) into c[1024]; *f gets the fusion (the caller destroys it). */
static int candidates_of(tn_context *ctx, tn_builtin op, tn_dtype dt, tn_dtype w, tn_dtype out, int stats, int64_t m,
                         int64_t n, tn_fusion **f, tn_plan_desc *c) {
    tn_builtin_options o = {dt, w, out, stats};
    *f = NULL;
    tn_fusion_builtin(ctx, op, &o, f);
    tn_analysis a;
    tn_analyze(*f, &a);
    tn_schedule_request req = {&a, m, n, 16, -1, &ctx->props};
    return tn_schedule_candidates(&req, c, 1024);
}

/* Candidate d of tune's replayed from its JSON as a plan (NULL, a failed check, if refused). */
static tn_plan *replay_candidate(tn_context *ctx, tn_fusion *f, int64_t m, int64_t n, const tn_plan_desc *d,
                                 const char *what) {
    tn_strbuf sb;
    tn_strbuf_init(&sb, NULL);
    tn_plan_desc_json(d, &sb);
    char *json = tn_strbuf_take(&sb);
    tn_plan_options po = {0, json, NULL};
    tn_plan *plan = NULL;
    CHECK(tn_plan_create(ctx, f, m, n, &po, &plan) == TN_STATUS_OK, "%s %s %lldx%lld: %s", what, f->name, (long long)m,
          (long long)n, tn_context_last_error(ctx));
    free(json);
    return plan;
}

/* Every cluster candidate of tune's whose slice stays in shared memory (one
   stage, read back in every phase, a cluster a row) for op at [m, n] in dtype
   dt: replayed from its JSON, compiled without spills, the PTX holding the
   slice's bulk copy and the exchange's st.async, the source reading the slice
   from its stage and never keeping it in registers. With `cols`, instead every
   candidate whose COL slices are cached in shared memory (col_cache): compiled
   without spills, each COL vector read from the cache. */
static void compile_shared_slices(tn_context *ctx, tn_builtin op, tn_dtype dt, int64_t m, int64_t n, int cols,
                                  int *count) {
    static tn_plan_desc c[1024];
    tn_fusion *f;
    const int nc = candidates_of(ctx, op, dt, dt, dt, 0, m, n, &f, c);
    int found = 0;
    for (int k = 0; k < nc; k++) {
        if (!(cols ? c[k].col_cache : c[k].shared_slice)) continue;
        found++;
        tn_plan *plan = replay_candidate(ctx, f, m, n, &c[k], cols ? "col cache" : "shared slice");
        if (plan) {
            tn_resources r;
            tn_plan_resources(plan, &r);
            char *src = test_describe(plan, TN_DESCRIBE_SOURCE), *ptx = ptx_of(src);
            if (cols)
                CHECK(r.spill_store_bytes == 0 && r.stack_bytes == 0 && strstr(src, " = tn_cc") &&
                          !strstr(src, "tn_vload(c"),
                      "col cache %s %s %lldx%lld (cluster %d x %d, %d stages): %d spill bytes, read from the cache %d",
                      tn_builtin_name(op), tn_dtype_name(dt), (long long)m, (long long)n, c[k].cluster,
                      c[k].threads_per_row, c[k].stages, r.spill_store_bytes, strstr(src, " = tn_cc") != NULL);
            else
                CHECK(r.spill_store_bytes == 0 && r.stack_bytes == 0 && strstr(src, "b0 = r0[vl]") && !strstr(src, "bb0[") &&
                          strstr(ptx, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes") &&
                          strstr(ptx, "st.async.shared::cluster"),
                      "shared slice %s %s %lldx%lld (cluster %d x %d): %d spill bytes, read from the stage %d, kept in "
                      "registers %d", tn_builtin_name(op), tn_dtype_name(dt), (long long)m, (long long)n, c[k].cluster,
                      c[k].threads_per_row, r.spill_store_bytes, strstr(src, "b0 = r0[vl]") != NULL,
                      strstr(src, "bb0[") != NULL);
            free(ptx);
            free(src);
            tn_plan_destroy(plan);
            (*count)++;
        }
    }
    CHECK(found > 0, "no %s candidates for %s %lldx%lld", cols ? "col-cache" : "shared-slice", tn_builtin_name(op),
          (long long)m, (long long)n);
    tn_fusion_destroy(f);
}

/* Every cluster candidate of tune's whose slices stay in global memory (l2_slice) for op at [m, n] (inputs dt,
   weights w, outputs out, statistics for layernorm): replayed from its JSON, compiled without spills, its grid
   holding no more rows than fit in 2/3 of the L2, the source streaming each phase's slice from global memory
   (never a register copy, a stage or a cached COL slice), the PTX holding the exchange's st.async. Returns the
   candidates found. */
static int compile_l2_slices(tn_context *ctx, tn_builtin op, tn_dtype dt, tn_dtype w, tn_dtype out, int64_t m,
                             int64_t n, int *count) {
    static tn_plan_desc c[1024];
    tn_fusion *f;
    const int nc = candidates_of(ctx, op, dt, w, out, op == TN_BUILTIN_LAYERNORM, m, n, &f, c);
    tn_analysis a;
    tn_analyze(f, &a);
    int found = 0;
    for (int k = 0; k < nc; k++) {
        if (!c[k].l2_slice) continue;
        found++;
        const int64_t resident = tn_plan_l2_resident_rows(&a, &ctx->props, n);
        CHECK(c[k].kind == TN_PLAN_CLUSTER && !c[k].stages && !c[k].carry && c[k].grid / c[k].cluster <= resident &&
                  c[k].grid / c[k].cluster <= m,
              "l2 slice %s %lldx%lld: %s, %d stages, carry %d, %lld clusters for %lld resident rows",
              tn_builtin_name(op), (long long)m, (long long)n, tn_plan_kind_name(c[k].kind), c[k].stages, c[k].carry,
              (long long)(c[k].grid / c[k].cluster), (long long)resident);
        tn_plan *plan = replay_candidate(ctx, f, m, n, &c[k], "l2 slice");
        if (!plan) continue;
        tn_resources r;
        tn_plan_resources(plan, &r);
        char *src = test_describe(plan, TN_DESCRIBE_SOURCE), *ptx = ptx_of(src);
        CHECK(r.spill_store_bytes == 0 && r.stack_bytes == 0 && strstr(src, "const int vi = VB + vl;") &&
                  strstr(src, "tn_vload(b0, in0 + row * in0_ld + vi * V)") && !strstr(src, "bb0[") &&
                  !strstr(src, "tn_ring_start<") && !strstr(src, "extern __shared__") &&
                  strstr(ptx, "st.async.shared::cluster"),
              "l2 slice %s %s %lldx%lld (cluster %d x %d): %d spill bytes, streamed %d, in registers %d",
              tn_builtin_name(op), tn_dtype_name(dt), (long long)m, (long long)n, c[k].cluster, c[k].threads_per_row,
              r.spill_store_bytes, strstr(src, "const int vi = VB + vl;") != NULL, strstr(src, "bb0[") != NULL);
        free(ptx);
        free(src);
        tn_plan_destroy(plan);
        (*count)++;
    }
    tn_fusion_destroy(f);
    return found;
}

/* Every pipelined register candidate of tune's for op at [m, n] in dtype dt (a persistent grid, the next row
   group's vectors loaded ahead): replayed, compiled without spills, the source loading the next row group into
   nb before this one's reductions and keeping the COL vectors from before the loop where they are in registers. */
static void compile_pipelined(tn_context *ctx, tn_builtin op, tn_dtype dt, tn_dtype w, tn_dtype out, int64_t m,
                              int64_t n, int *count) {
    static tn_plan_desc c[1024];
    tn_fusion *f;
    const int nc = candidates_of(ctx, op, dt, w, out, op == TN_BUILTIN_LAYERNORM, m, n, &f, c);
    int found = 0;
    for (int k = 0; k < nc; k++) {
        if (!c[k].pipeline) continue;
        found++;
        tn_plan *plan = replay_candidate(ctx, f, m, n, &c[k], "pipelined");
        if (plan) {
            tn_resources r;
            tn_plan_resources(plan, &r);
            char *src = test_describe(plan, TN_DESCRIBE_SOURCE);
            const char *kernel = strstr(src, "tn_kernel("), *next = strstr(src, "const long long row = (g + gridDim.x) * R + rr;"),
                       *red = kernel ? strstr(kernel, "tn_row_reduce<") : NULL;
            CHECK(r.spill_store_bytes == 0 && r.stack_bytes == 0 && next && red && next < red &&
                      strstr(src, "bb0[p] = nb0[p];") && (c[k].batch > 2 || strstr(src, "[P];  // for every row group") ||
                                                         op == TN_BUILTIN_SOFTMAX),
                  "pipelined %s %s %lldx%lld (%d x %d, %d rows a CTA, grid %lld): %d spill bytes, next loads before the "
                  "reductions %d", tn_builtin_name(op), tn_dtype_name(dt), (long long)m, (long long)n,
                  c[k].threads_per_row, c[k].batch, c[k].rows_per_cta, (long long)c[k].grid, r.spill_store_bytes,
                  next && red && next < red);
            free(src);
            tn_plan_destroy(plan);
            (*count)++;
        }
    }
    CHECK(found > 0, "no pipelined candidates for %s %lldx%lld", tn_builtin_name(op), (long long)m, (long long)n);
    tn_fusion_destroy(f);
}

/* The scheduler's pipelined plan for op at [m, n] in dt (tn_schedule), replayed: where ptxas spills in it, the
   plan tn_plan_create builds gives way to the one without (pipeline 0, saying why, no spills); else it is that
   plan. 1 if it gave way. */
static int pipeline_gives_way(tn_context *ctx, tn_builtin op, tn_dtype dt, int64_t m, int64_t n, int *count) {
    tn_builtin_options o = {dt, dt, dt, 0};
    tn_fusion *f = NULL;
    tn_fusion_builtin(ctx, op, &o, &f);
    tn_analysis a;
    tn_analyze(f, &a);
    tn_schedule_request req = {&a, m, n, 16, -1, &ctx->props, 1};
    tn_plan_desc d;
    char err[320];
    int gave_way = 0;
    CHECK(tn_schedule(&req, &d, err, sizeof err) && d.pipeline, "%s %s %lldx%lld: not pipelined", tn_builtin_name(op),
          tn_dtype_name(dt), (long long)m, (long long)n);
    tn_plan *piped = d.pipeline ? replay_candidate(ctx, f, m, n, &d, "pipelined") : NULL, *plan = NULL;
    tn_plan_options po = {0};
    if (piped && tn_plan_create(ctx, f, m, n, &po, &plan) == TN_STATUS_OK) {
        tn_resources rp, r;
        tn_plan_resources(piped, &rp);
        tn_plan_resources(plan, &r);
        char *json = test_describe(plan, TN_DESCRIBE_JSON);
        gave_way = rp.spill_store_bytes + rp.spill_load_bytes > 0;
        CHECK(r.spill_store_bytes == 0 && (gave_way ? strstr(json, "\"pipeline\": 0") && strstr(json, "pipeline passed over")
                                                    : strstr(json, "\"pipeline\": 1") != NULL),
              "%s %s %lldx%lld: the pipelined plan spills %d bytes; the plan built: %s", tn_builtin_name(op),
              tn_dtype_name(dt), (long long)m, (long long)n, rp.spill_store_bytes + rp.spill_load_bytes, json);
        free(json);
        (*count)++;
    }
    tn_plan_destroy(plan);
    tn_plan_destroy(piped);
    tn_fusion_destroy(f);
    return gave_way;
}

/* Every `every`-th online candidate of tune's for softmax at [m, n] in dtype dt (its max and sum of exp reduced
   as one pair): replayed, compiled without spills, one reduction call where the plain plan has two. */
static void compile_online(tn_context *ctx, tn_dtype dt, int64_t m, int64_t n, int every, int *count) {
    static tn_plan_desc c[1024];
    tn_fusion *f;
    const int nc = candidates_of(ctx, TN_BUILTIN_SOFTMAX, dt, dt, dt, 0, m, n, &f, c);
    int found = 0;
    for (int k = 0; k < nc; k++) {
        if (!c[k].online || found++ % every) continue;
        tn_plan *plan = replay_candidate(ctx, f, m, n, &c[k], "online");
        if (!plan) continue;
        tn_resources r;
        tn_plan_resources(plan, &r);
        char *src = test_describe(plan, TN_DESCRIBE_SOURCE);
        const char *kernel = strstr(src, "tn_kernel(");
        int calls = 0;
        for (const char *at = kernel; at && (at = strstr(at, "tn_row_reduce<")); at++) calls++;
        CHECK(r.spill_store_bytes == 0 && r.stack_bytes == 0 && calls == 1 && strstr(src, "tn_online{"),
              "online %s %s %lldx%lld (%s, cluster %d x %d x %d, carry %d): %d spill bytes, %d reduction calls",
              tn_dtype_name(dt), tn_plan_kind_name(c[k].kind), (long long)m, (long long)n,
              tn_plan_kind_name(c[k].kind), c[k].cluster, c[k].threads_per_row, c[k].batch, c[k].carry,
              r.spill_store_bytes, calls);
        free(src);
        tn_plan_destroy(plan);
        (*count)++;
    }
    CHECK(found > 0, "no online candidates for softmax %lldx%lld", (long long)m, (long long)n);
    tn_fusion_destroy(f);
}

/* tune's candidates in clusters of 16 CTAs (non-portable) for op at [m, n]: compiled without spills, the
   exchange's st.async in the PTX. */
static void compile_sixteen(tn_context *ctx, tn_builtin op, int64_t m, int64_t n, int *count) {
    static tn_plan_desc c[1024];
    tn_fusion *f;
    const int nc = candidates_of(ctx, op, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0, m, n, &f, c);
    int found = 0;
    for (int k = 0; k < nc; k++) {
        if (c[k].cluster != TN_MAX_CLUSTER_NONPORTABLE) continue;
        found++;
        tn_plan *plan = replay_candidate(ctx, f, m, n, &c[k], "cluster of 16");
        if (!plan) continue;
        tn_resources r;
        tn_plan_resources(plan, &r);
        char *src = test_describe(plan, TN_DESCRIBE_SOURCE), *ptx = ptx_of(src);
        CHECK(r.spill_store_bytes == 0 && r.stack_bytes == 0 && strstr(src, "constexpr int CL = 16") &&
                  strstr(ptx, "st.async.shared::cluster"),
              "cluster of 16 %s %lldx%lld (%d x %d): %d spill bytes", tn_builtin_name(op), (long long)m, (long long)n,
              c[k].threads_per_row, c[k].batch, r.spill_store_bytes);
        free(ptx);
        free(src);
        tn_plan_destroy(plan);
        (*count)++;
    }
    CHECK(found > 0, "no candidates in clusters of 16 for %s %lldx%lld", tn_builtin_name(op), (long long)m, (long long)n);
    tn_fusion_destroy(f);
}

/* The scheduler's plan for rows of in/w dtypes written as f8 (16-element vectors, 16 accumulator lanes a
   reduction), a cluster plan unless softmax's carried exps do not fit one (512 x 100000 f16: tma): compiled
   without spills or a stack (the lanes' fold once went to local memory in every such cluster plan). */
static void compile_f8_cluster(tn_context *ctx, tn_builtin op, tn_dtype in, int64_t m, int64_t n, int *count) {
    tn_builtin_options o = {in, in, TN_DTYPE_F8E4M3, 0};
    tn_fusion *f = NULL;
    tn_plan *plan = NULL;
    tn_plan_options po = {0, NULL, NULL};
    tn_status st = tn_fusion_builtin(ctx, op, &o, &f);
    if (st == TN_STATUS_OK) st = tn_plan_create(ctx, f, m, n, &po, &plan);
    CHECK(st == TN_STATUS_OK, "%s %s -> f8 %lldx%lld: %s", tn_builtin_name(op), tn_dtype_name(in), (long long)m,
          (long long)n, tn_context_last_error(ctx));
    if (st == TN_STATUS_OK) {
        char *json = test_describe(plan, TN_DESCRIBE_JSON);
        tn_resources r;
        tn_plan_resources(plan, &r);
        CHECK((strstr(json, "\"kind\": \"cluster\"") || (op == TN_BUILTIN_SOFTMAX && m == 512)) &&
                  strstr(json, "\"vec\": 16") && r.spill_store_bytes == 0 && r.stack_bytes == 0,
              "%s %s -> f8 %lldx%lld: a cluster plan of 16-element vectors without local memory: %d spill bytes, %d "
              "stack: %s", tn_builtin_name(op), tn_dtype_name(in), (long long)m, (long long)n, r.spill_store_bytes,
              r.stack_bytes, json);
        free(json);
        (*count)++;
    }
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
}

/* A softmax plan of `kind` with carry (tune's candidate beside every register,
   cluster and tma plan of a fusion that has carried values): replayed from its
   JSON, compiled without spills, exp computed once per element (in the phase
   that sums it, kept in kv for the output phase); refused for other kinds. */
static void compile_carry(tn_context *ctx, tn_dtype dt, int64_t m, int64_t n, const char *kind, int *count) {
    tn_builtin_options o = {dt, dt, dt, 0};
    tn_fusion *f = NULL;
    tn_plan *plan = NULL;
    tn_fusion_builtin(ctx, TN_BUILTIN_SOFTMAX, &o, &f);
    char *json = forced_json_with(ctx, f, m, n, kind, "carry");
    if (json) {
        tn_plan_options po = {0, json, NULL};
        const int may = !strcmp(kind, "register") || !strcmp(kind, "cluster") || !strcmp(kind, "tma");
        const tn_status st = tn_plan_create(ctx, f, m, n, &po, &plan);
        CHECK(may ? st == TN_STATUS_OK : st != TN_STATUS_OK && strstr(tn_context_last_error(ctx), "carry"),
              "carry in a %s plan %lldx%lld: %s", kind, (long long)m, (long long)n,
              st == TN_STATUS_OK ? "accepted" : tn_context_last_error(ctx));
        if (plan) {
            tn_resources r;
            tn_plan_resources(plan, &r);
            char *src = test_describe(plan, TN_DESCRIBE_SOURCE);
            int exps = 0;
            const char *body = strstr(src, "tn_kernel(");
            for (const char *p = body; p && (p = strstr(p, "tn_exp(")) != NULL; p++) exps++;
            CHECK(r.spill_store_bytes == 0 && r.stack_bytes == 0 && exps == 1 && strstr(src, "= kv"),
                  "carry %s %lldx%lld: %d spill bytes, %d exp calls", kind, (long long)m, (long long)n,
                  r.spill_store_bytes, exps);
            /* tma: the output phase reads no shared memory, so the stage is refilled before it. */
            const char *refill = strstr(src, "refill the stage now"), *store = strstr(src, "tn_vstore(out0");
            CHECK(strcmp(kind, "tma") || (refill && store && refill < store), "carry tma %lldx%lld: stage not handed "
                  "back before the output phase", (long long)m, (long long)n);
            free(src);
            tn_plan_destroy(plan);
            (*count)++;
        }
    }
    free(json);
    tn_fusion_destroy(f);
}

/* The PTX of a tma plan holds the bulk copy and the mbarrier wait (a cluster
   plan its remote stores and cluster barrier); a tma-ws
   plan with register sharing also its setmaxnreg pair (the values its plan
   says), and ptxas gives each thread no more at launch than the producer's
   share leaves. */
/* The scheduler's plan for rows whose length or alignment leave no 16-byte vector dividing them (odd N, a
   plan promised 2-byte alignment): peeled, compiled without spills, its PTX moving the row's body in 16-byte
   loads and stores of the narrowest tensor. in/w/out dtypes as given; align as tn_plan_options. */
static void compile_peeled(tn_context *ctx, tn_builtin op, tn_dtype in, tn_dtype w, tn_dtype out, int64_t m,
                           int64_t n, int align, int *count) {
    tn_builtin_options o = {in, w, out, 0};
    tn_fusion *f = NULL;
    tn_plan *plan = NULL;
    tn_plan_options po = {align, NULL, NULL};
    tn_status st = tn_fusion_builtin(ctx, op, &o, &f);
    if (st == TN_STATUS_OK) st = tn_plan_create(ctx, f, m, n, &po, &plan);
    CHECK(st == TN_STATUS_OK, "peeled %s %lldx%lld: %s", tn_builtin_name(op), (long long)m, (long long)n,
          tn_context_last_error(ctx));
    if (st == TN_STATUS_OK) {
        char *json = test_describe(plan, TN_DESCRIBE_JSON), *src = test_describe(plan, TN_DESCRIBE_SOURCE);
        tn_resources r;
        tn_plan_resources(plan, &r);
        CHECK(strstr(json, "\"peel\": 1") && strstr(json, "\"kind\": \"register\""), "%s %s %lldx%lld align %d: not peeled: %s",
              tn_builtin_name(op), tn_dtype_name(in), (long long)m, (long long)n, align, json);
        CHECK(r.spill_store_bytes == 0 && r.spill_load_bytes == 0 && r.stack_bytes == 0,
              "peeled %s %s %lldx%lld: %d/%d spill bytes, %d stack", tn_builtin_name(op), tn_dtype_name(in), (long long)m,
              (long long)n, r.spill_store_bytes, r.spill_load_bytes, r.stack_bytes);
        char *ptx = ptx_of(src);
        CHECK(strstr(ptx, "ld.global.v4") || strstr(ptx, "ld.global.nc.v4"), "peeled %s %lldx%lld: no 16-byte loads",
              tn_builtin_name(op), (long long)m, (long long)n);
        CHECK(strstr(ptx, "st.global.v4") || strstr(ptx, "st.global.v2") || strstr(ptx, "st.global.u32") ||
                  strstr(ptx, "st.global.b32"), "peeled %s %lldx%lld: no vector stores", tn_builtin_name(op),
              (long long)m, (long long)n);
        free(json), free(src), free(ptx);
        (*count)++;
    }
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
}

/* An uneven cluster plan's source: the slice length a run-time value, the
   first PF vectors of a thread unchecked, the copies from the CTA's own first
   vector sized by its slice (chunk 0), the capacity of a whole slice in the
   stage; an even one keeps its constant slice and copies by rank. */
static void check_uneven_source(tn_context *ctx) {
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_fusion *f = NULL;
    tn_fusion_builtin(ctx, TN_BUILTIN_RMSNORM, &o, &f);
    static const int64_t cols[] = {300000, 262144};
    for (int i = 0; i < 2; i++) {
        tn_plan *plan = NULL;
        CHECK(tn_plan_create(ctx, f, 4096, cols[i], NULL, &plan) == TN_STATUS_OK, "%s", tn_context_last_error(ctx));
        char *src = plan ? test_describe(plan, TN_DESCRIBE_SOURCE) : NULL;
        if (src && i == 0)
            CHECK(strstr(src, "NVC = 4688;") && strstr(src, "const int NVL = (int)rank + 1 < CL ? NVC : NV - (CL - 1) * NVC;") &&
                      strstr(src, "(p < PF || vl < NVL)") && strstr(src, "in0 + (long long)VB * V), in0_ld * 2, (unsigned)NVL * V * 2u") &&
                      strstr(src, "gridDim.x / CL, 0);") && strstr(src, "STAGE_BYTES = 75008u"),
                  "rmsnorm 4096x300000 (37500 vectors over 8 CTAs): the uneven slices in the source");
        if (src && i == 1)
            CHECK(strstr(src, "NVL = NV / CL;") && !strstr(src, "NVC") && !strstr(src, "PF"),
                  "rmsnorm 4096x262144: even slices as before");
        free(src);
        tn_plan_destroy(plan);
    }
    tn_fusion_destroy(f);
}

static void check_ptx(tn_context *ctx, const char *kind, int rows, int cols) {
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_fusion *f = NULL;
    tn_plan *plan = NULL;
    tn_plan_options po = {0, NULL, kind};
    tn_fusion_builtin(ctx, TN_BUILTIN_LAYERNORM, &o, &f);
    CHECK(tn_plan_create(ctx, f, rows, cols, &po, &plan) == TN_STATUS_OK, "%s plan: %s", kind, tn_context_last_error(ctx));
    char *json = test_describe(plan, TN_DESCRIBE_JSON);
    int producer = 0, consumer = 0, block = 0;
    const char *at = strstr(json, "\"producer_regs\": ");
    if (at) sscanf(at, "\"producer_regs\": %d, \"consumer_regs\": %d", &producer, &consumer);
    if ((at = strstr(json, "\"block_threads\": "))) sscanf(at, "\"block_threads\": %d", &block);
    free(json);
    char *src = test_describe(plan, TN_DESCRIBE_SOURCE), *ptx = ptx_of(src);
    if (strcmp(kind, "cluster")) {
        CHECK(strstr(ptx, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes") != NULL,
              "no bulk copy in the PTX");
        CHECK(strstr(ptx, "mbarrier.try_wait.parity") != NULL && strstr(ptx, "mbarrier.arrive.expect_tx") != NULL,
              "no mbarrier wait / expect_tx in the PTX");
    } else
        CHECK(strstr(ptx, "mapa.shared::cluster") &&
                  strstr(ptx, "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32") &&
                  strstr(ptx, "mbarrier.arrive.expect_tx") && strstr(ptx, "mbarrier.try_wait.parity") &&
                  strstr(ptx, "barrier.cluster.arrive.release") && strstr(ptx, "barrier.cluster.wait.acquire") &&
                  strstr(ptx, "%cluster_ctarank") && strstr(ptx, "bar.warp.sync"),
              "cluster %dx%d: no mapa / st.async onto an mbarrier / its wait / cluster barrier / rank / the lanes' "
              "meeting before a put (bar.warp.sync: a CTA of one warp orders its reads of the slots before the "
              "next put only so) in the PTX", rows, cols);
    if (!strcmp(kind, "tma-ws")) {
        char dec[64], inc[64];
        snprintf(dec, sizeof dec, "setmaxnreg.dec.sync.aligned.u32 %d;", producer);
        snprintf(inc, sizeof inc, "setmaxnreg.inc.sync.aligned.u32 %d;", consumer);
        CHECK(producer > 0 && strstr(ptx, dec) && strstr(ptx, inc), "%dx%d: no %s / %s in the PTX", rows, cols, dec, inc);
        CHECK(strstr(ptx, "bar.sync") && strstr(ptx, "mbarrier.arrive.shared"), "no named barrier / slot release");
        tn_resources r;
        tn_plan_resources(plan, &r);
        /* The CTA's pool is its launch registers times its threads; the split must fit in it. */
        CHECK(r.registers <= (65536 / block & ~7) && r.registers >= producer && r.registers <= consumer &&
                  (long long)r.registers * block >= 128LL * (producer + (block / 128 - 1) * consumer),
              "ptxas gave %d registers at launch; split %d/%d, block %d", r.registers, producer, consumer, block);
    }
    free(ptx);
    free(src);
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
}

/* tune's cluster candidate of one-warp CTAs (2 x 32 threads over rmsnorm 20000 x 1024, which run_late_trigger
   times on the GPU): replayed, its PTX meets the warp's lanes (bar.warp.sync) before the exchange's first put
   (st.async). Shuffles alone order no memory: without the meeting the put two row groups on raced the lanes'
   reads of the same slots (racecheck, H100, 2026-12-06). */
static void check_one_warp_cluster(tn_context *ctx) {
    static tn_plan_desc c[1024];
    tn_fusion *f = NULL;
    const int n = candidates_of(ctx, TN_BUILTIN_RMSNORM, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0, 20000, 1024,
                                &f, c);
    int k = 0;
    while (k < n && !(c[k].kind == TN_PLAN_CLUSTER && c[k].block_threads == 32)) k++;
    CHECK(k < n, "rmsnorm 20000x1024: no cluster candidate of one-warp CTAs among %d", n);
    tn_plan *plan = k < n ? replay_candidate(ctx, f, 20000, 1024, &c[k], "one-warp cluster") : NULL;
    if (plan) {
        char *src = test_describe(plan, TN_DESCRIBE_SOURCE), *ptx = ptx_of(src);
        const char *meet = strstr(ptx, "bar.warp.sync"), *put = strstr(ptx, "st.async");
        CHECK(meet && put && meet < put, "one-warp cluster: the PTX's first bar.warp.sync (%s) is not before its "
              "first st.async (%s)", meet ? "found" : "none", put ? "found" : "none");
        free(ptx);
        free(src);
        tn_plan_destroy(plan);
    }
    tn_fusion_destroy(f);
}

/* The scheduler's plan for odd rows too long for one CTA (peeled_cluster): a cluster plan peeled to one 16-byte
   access of the narrowest tensor, compiled without spills; its source finds each row's boundary, cuts the slices
   from it (the last CTA's length a run-time value) and lets the first CTA take the elements outside them. */
static void compile_peeled_cluster(tn_context *ctx, tn_builtin op, tn_dtype dt, tn_dtype w, int64_t m, int64_t n,
                                   int *count) {
    tn_builtin_options o = {dt, w, w, 0};
    tn_fusion *f = NULL;
    tn_plan *plan = NULL;
    tn_plan_options po = {0, NULL, NULL};
    tn_fusion_builtin(ctx, op, &o, &f);
    CHECK(tn_plan_create(ctx, f, m, n, &po, &plan) == TN_STATUS_OK, "peeled %s %lldx%lld: %s", tn_builtin_name(op),
          (long long)m, (long long)n, tn_context_last_error(ctx));
    char *json = plan ? test_describe(plan, TN_DESCRIBE_JSON) : NULL;
    char *src = plan ? test_describe(plan, TN_DESCRIBE_SOURCE) : NULL;
    tn_resources r = {0};
    if (plan) tn_plan_resources(plan, &r);
    CHECK(json && strstr(json, "\"kind\": \"cluster\"") && strstr(json, "\"peel\": 1") && src &&
              strstr(src, "NX = rank == 0 ? N - NVB * V : 0") && strstr(src, "NVC : NVB - (CL - 1) * NVC") &&
              strstr(src, "H + vi * V") && r.spill_store_bytes == 0 && r.spill_load_bytes == 0 && r.stack_bytes == 0,
          "peeled %s %s %lldx%lld: a peeled cluster plan without spills (%d bytes): %s", tn_builtin_name(op),
          tn_dtype_name(dt), (long long)m, (long long)n, r.spill_store_bytes, json ? json : "(none)");
    *count += plan != NULL;
    /* The same plan with the L2 prefetch of each CTA's slice of its next row (tune's candidate), replayed: whole
       16-byte units of the slice and a vector past it (tn_prefetch_l2_span), no spills. */
    char *at = json ? strstr(json, "\"prefetch\": 0") : NULL;
    if (at && m > 512) {
        at[strlen("\"prefetch\": ")] = '1';
        tn_plan *again = NULL;
        tn_plan_options replay = {0, json, NULL};
        CHECK(tn_plan_create(ctx, f, m, n, &replay, &again) == TN_STATUS_OK, "peeled prefetch %s %lldx%lld: %s",
              tn_builtin_name(op), (long long)m, (long long)n, tn_context_last_error(ctx));
        char *src2 = again ? test_describe(again, TN_DESCRIBE_SOURCE) : NULL;
        tn_resources r2 = {0};
        if (again) tn_plan_resources(again, &r2);
        CHECK(src2 && strstr(src2, "tn_prefetch_l2_span<") && strstr(src2, "(in0 + next * in0_ld + (long long)VB * V, (N - VB") &&
                  r2.spill_store_bytes == 0 && r2.stack_bytes == 0,
              "peeled prefetch %s %s %lldx%lld: the next row's slice prefetched by spans, %d spill bytes",
              tn_builtin_name(op), tn_dtype_name(dt), (long long)m, (long long)n, r2.spill_store_bytes);
        *count += again != NULL;
        free(src2);
        tn_plan_destroy(again);
    }
    free(json);
    free(src);
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
}

void test_compile(void) {
    tn_context *ctx = test_context();
    static const int64_t rows[] = {1, 8, 64, 512, 4096, 16384, 65536};
    static const int64_t cols[] = {512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072};
    int plans = 0;
    for (int op = 0; op < TN_BUILTIN_COUNT; op++)
        for (size_t ri = 0; ri < 7; ri++)
            for (size_t ci = 0; ci < 9; ci++) {
                if (rows[ri] * cols[ci] * 2 > (4LL << 30)) continue; /* the sweep skips tensors above 4 GiB */
                compile_one(ctx, (tn_builtin)op, TN_DTYPE_BF16, rows[ri], cols[ci], NULL, &plans);
            }
    for (int op = 0; op < TN_BUILTIN_COUNT; op++)
        for (size_t ci = 0; ci < 9; ci += 2) {
            compile_one(ctx, (tn_builtin)op, TN_DTYPE_F16, 4096, cols[ci], NULL, &plans);
            compile_one(ctx, (tn_builtin)op, TN_DTYPE_F32, 4096, cols[ci], NULL, &plans);
            compile_one(ctx, (tn_builtin)op, TN_DTYPE_BF16, 4096, cols[ci], "looped", &plans);
        }
    /* The scheduler's own choices at hidden sizes real models use, off the sweep. */
    static const int64_t model_cols[] = {1536, 2560, 3072, 6144, 9216, 12288, 20480, 24576, 40960, 81920};
    for (int op = 0; op < TN_BUILTIN_COUNT; op++)
        for (size_t ci = 0; ci < sizeof model_cols / sizeof model_cols[0]; ci++) {
            compile_one(ctx, (tn_builtin)op, TN_DTYPE_BF16, 2000, model_cols[ci], NULL, &plans);
            compile_one(ctx, (tn_builtin)op, TN_DTYPE_F32, 33, model_cols[ci], NULL, &plans);
        }
    /* 2-6 rows an SM of rows that leave 1-2 CTAs an SM, every dtype: the scheduler's pipelined register plans, or
       where ptxas spills in one, the plan without (none spills). */
    static const tn_dtype pipe_dts[] = {TN_DTYPE_BF16, TN_DTYPE_F16, TN_DTYPE_F32};
    for (int op = 0; op < TN_BUILTIN_COUNT; op++)
        for (int d = 0; d < 3; d++) {
            const int64_t shrink = pipe_dts[d] == TN_DTYPE_F32 ? 2 : 1;
            compile_one(ctx, (tn_builtin)op, pipe_dts[d], 400, 20480 / shrink, NULL, &plans);
            compile_one(ctx, (tn_builtin)op, pipe_dts[d], 700, 16384 / shrink, NULL, &plans);
        }
    /* ... and where ptxas spills in the pipelined plan, the plan without (NVRTC 13.0: layernorm f16 512 x 16384,
       88 bytes; add_rmsnorm bf16 300 x 12288): at least one of these gives way, each as its spills say. */
    const int gave_way = pipeline_gives_way(ctx, TN_BUILTIN_LAYERNORM, TN_DTYPE_F16, 512, 16384, &plans) +
                         pipeline_gives_way(ctx, TN_BUILTIN_ADD_RMSNORM, TN_DTYPE_BF16, 300, 12288, &plans) +
                         pipeline_gives_way(ctx, TN_BUILTIN_RMSNORM, TN_DTYPE_BF16, 300, 24576, &plans);
    CHECK(gave_way >= 1 && gave_way <= 2, "%d of 3 pipelined plans gave way (rmsnorm 300 x 24576 compiles without "
          "spills at 64 registers)", gave_way);
    /* Long rows off the powers of two, every dtype: no spills in the scheduler's plan (where its register estimate
       falls short, the plan of the next kind it would take). */
    static const int64_t long_rows[][2] = {{1000, 57344}, {4096, 49152}, {4096, 40000},
                                           {130, 163840}, {4096, 114688}, {3, 200000}};
    const tn_dtype dts[] = {TN_DTYPE_BF16, TN_DTYPE_F16, TN_DTYPE_F32};
    for (int op = 0; op < TN_BUILTIN_COUNT; op++)
        for (size_t i = 0; i < sizeof long_rows / sizeof long_rows[0]; i++)
            for (int d = 0; d < 3; d++)
                compile_one(ctx, (tn_builtin)op, dts[d], long_rows[i][0], long_rows[i][1], NULL, &plans);
    {
        tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
        tn_fusion *f = NULL;
        tn_plan *plan = NULL;
        tn_fusion_builtin(ctx, TN_BUILTIN_RMSNORM, &o, &f);
        CHECK(tn_plan_create(ctx, f, 1000, 57344, NULL, &plan) == TN_STATUS_OK, "%s", tn_context_last_error(ctx));
        char *text = plan ? test_describe(plan, TN_DESCRIBE_JSON) : NULL;
        CHECK(text && strstr(text, "\"kind\": \"cluster\"") && strstr(text, "the register plan passed over: ptxas"),
              "rmsnorm 1000x57344: the register plan spills, the cluster plan takes the row: %s", text ? text : "");
        free(text);
        tn_plan_destroy(plan);
        tn_fusion_destroy(f);
    }
    /* The tma kind over the sweep's row lengths, wherever a row fits in shared memory. */
    for (int op = 0; op < TN_BUILTIN_COUNT; op++)
        for (size_t ci = 0; ci < 9; ci++) {
            compile_one(ctx, (tn_builtin)op, TN_DTYPE_BF16, 16384, cols[ci], "tma", &plans);
            compile_one(ctx, (tn_builtin)op, TN_DTYPE_BF16, 3, cols[ci], "tma", &plans);
            compile_one(ctx, (tn_builtin)op, TN_DTYPE_BF16, 16384, cols[ci], "tma-ws", &plans);
            compile_one(ctx, (tn_builtin)op, TN_DTYPE_BF16, 5, cols[ci], "tma-ws", &plans);
            compile_one(ctx, (tn_builtin)op, TN_DTYPE_BF16, 4096, cols[ci], "cluster", &plans);
            compile_one(ctx, (tn_builtin)op, TN_DTYPE_BF16, 1, cols[ci], "cluster", &plans);
        }
    /* tma-ws at hidden sizes off the sweep and in the other dtypes. */
    static const int64_t odd_cols[] = {1000, 1536, 2880, 5120, 6144, 12288, 20480, 28672, 49152};
    for (int op = 0; op < TN_BUILTIN_COUNT; op++)
        for (size_t ci = 0; ci < sizeof odd_cols / sizeof odd_cols[0]; ci++) {
            compile_one(ctx, (tn_builtin)op, TN_DTYPE_BF16, 10000, odd_cols[ci], "tma-ws", &plans);
            compile_one(ctx, (tn_builtin)op, ci % 2 ? TN_DTYPE_F16 : TN_DTYPE_F32, 4096, odd_cols[ci], "tma-ws", &plans);
        }
    for (int op = 0; op < TN_BUILTIN_COUNT; op++) {
        compile_prefetch(ctx, (tn_builtin)op, 4096, 131072, &plans);
        compile_prefetch(ctx, (tn_builtin)op, 2000, 81920, &plans);
    }
    for (int op = 0; op < TN_BUILTIN_COUNT; op++) {
        compile_early_l2(ctx, (tn_builtin)op, TN_DTYPE_BF16, 1, 512, 16, &plans);
        compile_early_l2(ctx, (tn_builtin)op, TN_DTYPE_F32, 64, 6144, 16, &plans);
        compile_early_l2(ctx, (tn_builtin)op, TN_DTYPE_BF16, 3, 12289, 2, &plans);  /* peeled */
        compile_early_l2(ctx, (tn_builtin)op, TN_DTYPE_F16, 5, 40960, 16, &plans);  /* a cluster */
        compile_early_l2(ctx, (tn_builtin)op, TN_DTYPE_BF16, 1, 100001, 2, &plans); /* uneven slices */
    }
    static const int64_t carry_cols[] = {1024, 4000, 16384, 32768};
    for (size_t ci = 0; ci < sizeof carry_cols / sizeof carry_cols[0]; ci++) {
        compile_carry(ctx, TN_DTYPE_BF16, 4096, carry_cols[ci], "register", &plans);
        if (carry_cols[ci] <= 16384) compile_carry(ctx, TN_DTYPE_F32, 33, carry_cols[ci], "register", &plans);
    }
    compile_carry(ctx, TN_DTYPE_BF16, 4096, 131072, "cluster", &plans);
    compile_carry(ctx, TN_DTYPE_BF16, 512, 65536, "cluster", &plans);
    compile_carry(ctx, TN_DTYPE_BF16, 4096, 8192, "tma", &plans);
    compile_carry(ctx, TN_DTYPE_BF16, 4096, 32768, "tma", &plans);
    compile_carry(ctx, TN_DTYPE_F32, 1000, 4100, "tma", &plans);
    compile_carry(ctx, TN_DTYPE_BF16, 4096, 65536, "tma-ws", &plans);
    for (int op = 0; op < TN_BUILTIN_COUNT; op++) {
        compile_staged(ctx, (tn_builtin)op, 4096, 65536, 1, &plans);
        compile_staged(ctx, (tn_builtin)op, 512, 131072, 2, &plans);
        compile_shared_slices(ctx, (tn_builtin)op, TN_DTYPE_BF16, 4096, 65536, 0, &plans);
        if (op != TN_BUILTIN_SOFTMAX) compile_shared_slices(ctx, (tn_builtin)op, TN_DTYPE_BF16, 4096, 65536, 1, &plans);
    }
    compile_shared_slices(ctx, TN_BUILTIN_LAYERNORM, TN_DTYPE_F32, 1000, 32768, 0, &plans);
    compile_shared_slices(ctx, TN_BUILTIN_LAYERNORM, TN_DTYPE_F32, 1000, 32768, 1, &plans);
    compile_shared_slices(ctx, TN_BUILTIN_SOFTMAX, TN_DTYPE_F16, 3, 262144, 0, &plans);
    /* Peeled rows: odd N in every dtype, mixed dtypes (a wider and an f8 output), rows of 4100 promised 2-byte
       alignment (an element-shifted view). */
    static const int64_t peel_cols[] = {33, 1001, 4097, 12289, 24579};
    for (int op = 0; op < TN_BUILTIN_COUNT; op++)
        for (size_t ci = 0; ci < sizeof peel_cols / sizeof peel_cols[0]; ci++) {
            compile_peeled(ctx, (tn_builtin)op, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 100000, peel_cols[ci], 0, &plans);
            compile_peeled(ctx, (tn_builtin)op, TN_DTYPE_F32, TN_DTYPE_F32, TN_DTYPE_F32, peel_cols[ci] > 4096 ? 3 : 40000, peel_cols[ci], 0, &plans);
        }
    for (int op = 0; op < TN_BUILTIN_COUNT; op++) {
        compile_peeled(ctx, (tn_builtin)op, TN_DTYPE_F16, TN_DTYPE_F16, TN_DTYPE_F16, 1000, 4100, 2, &plans);
        compile_peeled(ctx, (tn_builtin)op, TN_DTYPE_BF16, TN_DTYPE_F32, TN_DTYPE_F32, 1000, 8191, 0, &plans);
        compile_peeled(ctx, (tn_builtin)op, TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_F8E4M3, 1000, 8191, 0, &plans);
    }
    for (int op = 0; op < TN_BUILTIN_COUNT; op++) {
        compile_f8_cluster(ctx, (tn_builtin)op, TN_DTYPE_F16, 512, 100000, &plans);
        compile_f8_cluster(ctx, (tn_builtin)op, TN_DTYPE_BF16, 64, 65536, &plans);
    }
    /* Rows whose vectors the cluster does not divide: the last CTA's slice shorter, in every cluster variant. */
    static const int64_t uneven[][2] = {{4096, 65544}, {512, 131080}, {1, 262136}, {4096, 300000}, {33, 100008}};
    for (int op = 0; op < TN_BUILTIN_COUNT; op++) {
        for (size_t i = 0; i < sizeof uneven / sizeof uneven[0]; i++)
            compile_one(ctx, (tn_builtin)op, TN_DTYPE_BF16, uneven[i][0], uneven[i][1], NULL, &plans);
        compile_one(ctx, (tn_builtin)op, TN_DTYPE_F16, 512, 100008, NULL, &plans);
        compile_one(ctx, (tn_builtin)op, TN_DTYPE_F32, 4096, 131080, NULL, &plans);
        compile_one(ctx, (tn_builtin)op, TN_DTYPE_BF16, 1000, 65537, "cluster", &plans);
        compile_one(ctx, (tn_builtin)op, TN_DTYPE_F32, 3, 100001, "cluster", &plans);
        compile_staged(ctx, (tn_builtin)op, 4096, 65544, 1, &plans);
        compile_staged(ctx, (tn_builtin)op, 512, 131080, 1, &plans);
        compile_staged(ctx, (tn_builtin)op, 2000, 65544, 2, &plans);
        compile_shared_slices(ctx, (tn_builtin)op, TN_DTYPE_BF16, 4096, 65544, 0, &plans);
        if (op != TN_BUILTIN_SOFTMAX) compile_shared_slices(ctx, (tn_builtin)op, TN_DTYPE_BF16, 4096, 100008, 1, &plans);
        compile_prefetch(ctx, (tn_builtin)op, 4096, 131080, &plans);
    }
    /* Odd rows too long for one CTA: peeled clusters, few rows and many, 16- and 32-bit. */
    static const struct { tn_dtype dt, w; int64_t m, n; } peeled[] = {
        {TN_DTYPE_BF16, TN_DTYPE_BF16, 2000, 65537}, {TN_DTYPE_BF16, TN_DTYPE_BF16, 1, 65537},
        {TN_DTYPE_BF16, TN_DTYPE_BF16, 64, 100001}, {TN_DTYPE_F16, TN_DTYPE_F16, 1000, 131073},
        {TN_DTYPE_F32, TN_DTYPE_F32, 512, 65537}, {TN_DTYPE_BF16, TN_DTYPE_BF16, 4096, 262145},
        {TN_DTYPE_BF16, TN_DTYPE_F32, 2000, 65537}, {TN_DTYPE_BF16, TN_DTYPE_F32, 64, 131073},
        {TN_DTYPE_BF16, TN_DTYPE_BF16, 2000, 99999}};
    for (int op = 0; op < TN_BUILTIN_COUNT; op++)
        for (size_t i = 0; i < sizeof peeled / sizeof peeled[0]; i++)
            compile_peeled_cluster(ctx, (tn_builtin)op, peeled[i].dt, peeled[i].w, peeled[i].m, peeled[i].n, &plans);
    compile_carry(ctx, TN_DTYPE_BF16, 4096, 131080, "cluster", &plans);
    check_uneven_source(ctx);
    for (int op = 0; op < TN_BUILTIN_COUNT; op++) {
        compile_sixteen(ctx, (tn_builtin)op, 1, 262144, &plans);
        compile_sixteen(ctx, (tn_builtin)op, 3, 65544, &plans);
        const tn_dtype b = TN_DTYPE_BF16, s = TN_DTYPE_F32;
        compile_pipelined(ctx, (tn_builtin)op, b, b, b, 65536, 512, &plans);
        compile_pipelined(ctx, (tn_builtin)op, b, b, b, 16384, 4096, &plans);
        compile_pipelined(ctx, (tn_builtin)op, s, s, s, 100000, 96, &plans);
        /* Mixed dtypes: f32 weights held across the loop and f32 outputs beside bf16 rows. */
        compile_pipelined(ctx, (tn_builtin)op, b, s, s, 65536, 512, &plans);
        compile_pipelined(ctx, (tn_builtin)op, b, s, b, 32768, 2048, &plans);
    }
    /* Slices left in L2: rows past what a cluster holds on chip (the looped plan's, bf16 524288, f32 262144),
       uneven and odd ones, mixed dtypes; 256 KiB rows have them too, rows of 64 KiB none. */
    for (int op = 0; op < TN_BUILTIN_COUNT; op++) {
        const tn_dtype b = TN_DTYPE_BF16, s = TN_DTYPE_F32;
        CHECK(compile_l2_slices(ctx, (tn_builtin)op, b, b, b, 64, 524288, &plans) > 0, "no l2 slices at 64 x 524288");
        CHECK(compile_l2_slices(ctx, (tn_builtin)op, s, s, s, 3, 262144, &plans) > 0, "no l2 slices at 3 x 262144");
        CHECK(compile_l2_slices(ctx, (tn_builtin)op, b, s, b, 1000, 600008, &plans) > 0, "no l2 slices at 600008");
        CHECK(compile_l2_slices(ctx, (tn_builtin)op, TN_DTYPE_F16, TN_DTYPE_F16, TN_DTYPE_F16, 5, 524289, &plans) > 0,
              "no l2 slices at 5 x 524289");
        CHECK(compile_l2_slices(ctx, (tn_builtin)op, b, b, b, 512, 131072, &plans) > 0, "no l2 slices at 512 x 131072");
        /* f8 outputs: vectors of 16 elements, several 16-byte accesses of the wider inputs */
        CHECK(compile_l2_slices(ctx, (tn_builtin)op, s, s, TN_DTYPE_F8E4M3, 64, 524288, &plans) > 0,
              "no l2 slices at 64 x 524288, f32 to f8");
        CHECK(compile_l2_slices(ctx, (tn_builtin)op, TN_DTYPE_F16, s, TN_DTYPE_F8E4M3, 9, 600016, &plans) > 0,
              "no l2 slices at 9 x 600016, f16 to f8");
        CHECK(compile_l2_slices(ctx, (tn_builtin)op, b, b, b, 4096, 16384, &plans) == 0, "l2 slices at 4096 x 16384");
    }
    /* Online pairs over every kind they take: cluster (few and many rows), tma, register (one warp a row too). */
    compile_online(ctx, TN_DTYPE_BF16, 64, 32768, 8, &plans);
    compile_online(ctx, TN_DTYPE_BF16, 512, 32768, 12, &plans);
    compile_online(ctx, TN_DTYPE_BF16, 1, 262144, 2, &plans);
    compile_online(ctx, TN_DTYPE_BF16, 4096, 65536, 10, &plans);
    compile_online(ctx, TN_DTYPE_F32, 8, 1000, 16, &plans);
    compile_online(ctx, TN_DTYPE_F16, 65536, 512, 24, &plans);
    check_ptx(ctx, "tma", 4096, 8192);
    check_ptx(ctx, "tma-ws", 16384, 4096);
    check_ptx(ctx, "cluster", 4096, 65536);
    check_one_warp_cluster(ctx);
    printf("compile: %d plans, %d distinct kernels compiled, %d cache hits\n", plans, ctx->cache.misses, ctx->cache.hits);
    CHECK(ctx->cache.hits > 0, "the cache never hit");

    /* A failed compile reports NVRTC's log. */
    char *image = NULL, *log = NULL;
    size_t size = 0;
    double ms = 0;
    tn_status st = tn_nvrtc_compile(ctx, "this is not CUDA", "sm_90a", &image, &size, &log, &ms);
    CHECK(st == TN_STATUS_COMPILE_ERROR, "bad source: %s", tn_status_string(st));
    CHECK(strstr(tn_context_last_error(ctx), "error") != NULL, "no NVRTC log in: %s", tn_context_last_error(ctx));
    tn_free(&ctx->base.alloc, image);
    tn_free(&ctx->base.alloc, log);

    tn_resources r = {0};
    tn_parse_ptxas_log("ptxas info    : Function properties for k\nptxas         .     8 bytes stack frame, 4 bytes "
                       "spill stores, 12 bytes spill loads\nptxas info    : Used 72 registers, used 1 barriers, 384 "
                       "bytes smem\n", &r);
    CHECK(r.registers == 72 && r.stack_bytes == 8 && r.spill_store_bytes == 4 && r.spill_load_bytes == 12 &&
              r.static_smem_bytes == 384, "ptxas log parse: %d %d %d %d %d", r.registers, r.stack_bytes,
          r.spill_store_bytes, r.spill_load_bytes, r.static_smem_bytes);
    tn_context_destroy(ctx);
}
