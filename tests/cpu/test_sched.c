/* Scheduler tests: invariants of every plan over a grid of (M, N, dtype,
   alignment, target), the JSON round trip, and the checker's rejections. */
#include <string.h>

#include "codegen/codegen.h"
#include "ir/ir.h"
#include "sched/heuristics.h"
#include "sched/sched_internal.h"
#include "test.h"

static void check_invariants(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, int align,
                             const char *what) {
    char err[320];
    CHECK(tn_plan_desc_check(p, a, d, align, err, sizeof err), "%s: %s", what, err);
    CHECK(p->cols % p->vec == 0 || p->peel, "%s: vec %d does not divide N", what, p->vec);
    /* Peeled: a register plan, or a cluster plan whose slices are loaded into registers (no stages, COL cache or
       L2 slices; the L2 prefetch only in tune's candidates), of one 16-byte access of the narrowest tensor, enough
       threads for the elements outside the vectors, no carry; only where the plain vector would be narrower. */
    CHECK(!p->peel || (tn_plan_peel_kind(p) && (p->kind == TN_PLAN_REGISTER || p->kind == TN_PLAN_CLUSTER) &&
                       !p->stages && !p->col_cache && (!p->prefetch || strstr(what, "candidate")) && !p->l2_slice &&
                       !p->shared_slice &&
                       p->vec * a->min_row_elem_size == 16 && !p->carry &&
                       p->threads_per_row >= 2 * p->vec - 2 && p->align_bytes == 1 &&
                       (p->cols % p->vec || align < 16 || strstr(what, "candidate"))),
          "%s: peel with vec %d, %d threads, carry %d, align %d", what, p->vec, p->threads_per_row, p->carry,
          p->align_bytes);
    CHECK(p->vec * a->min_row_elem_size <= 16 || p->vec == 1, "%s: vec %d wider than 16 bytes", what, p->vec);
    CHECK(tn_plan_access_align(p, a->max_elem_size) <= align, "%s: accesses need more than %d-byte alignment", what,
          align);
    CHECK(p->block_threads % 32 == 0 && p->block_threads <= d->max_threads_per_block, "%s: block %d", what,
          p->block_threads);
    if (p->kind == TN_PLAN_REGISTER) {
        int64_t nv = p->cols / p->vec;
        CHECK((int64_t)p->threads_per_row * p->batch >= nv, "%s: row not covered", what);
        CHECK((int64_t)p->threads_per_row * (p->batch - 1) < nv, "%s: a whole batch slot is idle", what);
        /* A CTA a row group, or (pipeline) a persistent grid whose every CTA takes two row groups or more. */
        CHECK(p->pipeline ? !p->peel && (p->rows + p->rows_per_cta - 1) / p->rows_per_cta >= 2 * p->grid
                          : p->grid * p->rows_per_cta >= p->rows || p->grid == 0x7fffffff,
              "%s: rows not covered, or a pipelined CTA with one row group (grid %lld)", what, (long long)p->grid);
        /* The share of the loaded inputs that later phases take (add_rmsnorm: its sum, 1 of 2). */
        CHECK(a->kept_values >= 1 && a->kept_values <= a->num_stage_inputs, "%s: kept %d of %d inputs", what,
              a->kept_values, a->num_stage_inputs);
        int words = (int)((p->vec * a->buffer_elem_bytes * a->kept_values / a->num_stage_inputs + 3) / 4) * p->batch;
        int cap = d->regs_per_sm / p->block_threads;
        CHECK(TN_REG_NEED(words) <= cap, "%s: buffer of %d words over the %d-register cap", what, words, cap);
    } else if (p->kind == TN_PLAN_LOOPED) {
        CHECK(p->rows_per_cta == 1 && p->grid <= p->rows, "%s: looped grid %lld", what, (long long)p->grid);
    } else if (p->kind == TN_PLAN_CLUSTER) {
        /* A row's slices in the registers of a cluster's CTAs: whole vectors, within the register cap. */
        const int64_t nv = p->cols / p->vec;
        /* The scheduler keeps to the portable 8 but for few rows whose clusters of 16 (sm_90, non-portable,
           checked at build) each take SMs of their own, and slices in L2; tune's candidates go to 16. */
        const int most = strstr(what, "candidate") || p->rows * TN_MAX_CLUSTER_NONPORTABLE <= d->sm_count || p->l2_slice
                             ? tn_max_cluster(d->cc_major)
                             : TN_MAX_CLUSTER;
        CHECK(p->cluster >= 2 && p->cluster <= most && tn_cluster_slices_fit(nv, p->cluster) &&
                  p->grid % p->cluster == 0 &&
                  p->grid <= p->rows * p->cluster && p->stages >= 0 && p->stages <= TN_CLUSTER_MAX_STAGES &&
                  p->smem_bytes == tn_cluster_dynamic_smem(a, p),
              "%s: cluster %d, grid %lld, stages %d, smem %d", what, p->cluster, (long long)p->grid, p->stages,
              p->smem_bytes);
        if (p->l2_slice) {
            /* ... or left in global memory: a few vectors a thread in flight, at most the rows the L2 holds. */
            CHECK(p->batch <= 16 && !p->stages && !p->carry && !p->smem_bytes &&
                      p->grid / p->cluster <= tn_plan_l2_resident_rows(a, d, p->cols),
                  "%s: l2 slice of batch %d, %d stages, carry %d, %lld clusters", what, p->batch, p->stages, p->carry,
                  (long long)(p->grid / p->cluster));
        } else {
            CHECK((int64_t)p->threads_per_row * p->batch >= tn_cluster_slice_vectors(nv, p->cluster),
                  "%s: slice not covered", what);
            int words = (int)((p->vec * a->buffer_elem_bytes * a->kept_values / a->num_stage_inputs + 3) / 4) * p->batch;
            int cap = d->regs_per_sm / p->block_threads;
            CHECK(TN_REG_NEED(words) <= cap, "%s: slice of %d words over the %d-register cap", what, words, cap);
        }
    } else {
        /* The tma kinds: a persistent grid over row groups (or, tma with one stage, a row group a CTA in waves:
           a tune candidate, or the scheduler's for many row groups), everything in shared memory. */
        const int group = p->kind == TN_PLAN_TMA_WS ? 128 / p->threads_per_row : p->rows_per_cta;
        const int waves = p->kind == TN_PLAN_TMA && p->stages == 1 &&
                          (strstr(what, "candidate") || (strstr(p->why, "in waves") &&
                                                         p->grid == (p->rows + group - 1) / group));
        CHECK(p->grid <= (p->rows + group - 1) / group && (p->grid <= 32LL * d->sm_count || waves),
              "%s: tma grid %lld", what, (long long)p->grid);
        CHECK(p->cluster == 1, "%s: cluster %d for a %s plan", what, p->cluster, tn_plan_kind_name(p->kind));
        CHECK(p->stages >= p->chunks && p->smem_bytes > 0 && p->smem_bytes <= d->smem_per_block_optin && p->align_bytes == 16,
              "%s: tma ring: %d stages, %d chunks, %d bytes", what, p->stages, p->chunks, p->smem_bytes);
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
                                   16384, 32768, 65536, 65537, 65544, 100008, 131072, 262136, 262144, 300000,
                                   1048576, 1048577};
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
                            /* Forcing the cluster plan: a plan that passes every check, or a reason. */
                            req.kind = TN_PLAN_CLUSTER;
                            ok = tn_schedule(&req, &p, err, sizeof err);
                            if (ok) check_invariants(&p, &a, &d, aligns[al], what);
                            else CHECK(strlen(err) > 20, "%s forced cluster: no reason", what);
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
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.vec == 8 && p.peel && p.align_bytes == 1 &&
              strstr(p.why, "peel"), "odd N: 16-byte vectors from each row's boundary: %s", p.why);
    req.no_peel = 1; /* the launch's tensors at different offsets from a boundary */
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.vec == 1 && !p.peel, "odd N, no peel: vec 1");
    req.no_peel = 0;
    req.cols = 4096;
    req.align = 4;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.vec == 8 && p.peel, "4-byte aligned: peeled vec 8");
    req.no_peel = 1;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.vec == 2 && p.align_bytes == 4 && !p.peel,
          "4-byte aligned, no peel: vec 2");
    req.no_peel = 0;
    req.cols = 31; /* under 4 vectors: not peeled */
    CHECK(tn_schedule(&req, &p, err, sizeof err) && !p.peel && p.vec == 1, "31 columns: vec 1, not peeled");
    req.cols = 4096;
    req.align = 16;
    req.cols = 1048576;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.l2_slice,
          "1M columns: a cluster plan with slices in L2");
    req.max_cluster = 1; /* no cluster placed (as the driver may say): the looped plan */
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_LOOPED, "1M columns, no cluster: looped");
    req.max_cluster = 0;
    req.cols = 4096;
    req.kind = TN_PLAN_REGISTER;
    req.cols = 1048576;
    CHECK(!tn_schedule(&req, &p, err, sizeof err) && strstr(err, "registers"), "forced register at 1M: %s", err);
    req.kind = -1;
    req.rows = 1;
    req.cols = 8192;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.threads_per_row >= 512, "one row gets many threads: %d",
          p.threads_per_row);
    /* A grid that fits one wave at full occupancy is compiled for it (ptxas would take 38 registers and leave 3 of
       the 4 CTAs an SM that 512 CTAs need); a plan that asks for more CTAs than an SM's threads is refused. */
    req.rows = 512;
    req.cols = 4096;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER && p.block_threads == 512 &&
              p.ctas_per_sm == 4,
          "512x4096: 4 CTAs of 512 an SM: %d x %d", p.ctas_per_sm, p.block_threads);
    p.ctas_per_sm = 5;
    CHECK(!tn_plan_desc_check(&p, &a, &d, 16, err, sizeof err) && strstr(err, "ctas_per_sm"), "ctas_per_sm 5: %s",
          err);
    /* Widened for few rows only while every row still runs at once: 512 x 8192 stops at 256 threads x 4 vectors (one
       wave of 4 CTAs an SM), not 512 x 2 (two waves at 3 CTAs an SM by registers). */
    req.cols = 8192;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.threads_per_row == 256 && p.ctas_per_sm == 4,
          "512x8192: 256 threads, 4 CTAs an SM: %d, %d", p.threads_per_row, p.ctas_per_sm);
    req.cols = 4096;
    req.rows = 100000; /* many waves: ptxas chooses */
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.ctas_per_sm == 0, "100000x4096: ctas_per_sm %d", p.ctas_per_sm);
    /* Rows of up to 512 vectors: two a thread (tune: 16384 x 1024 17.4 us at 64 x 2, 19.0 at 32 x 4), or more
       where two leave lanes idle: 1536 columns (192 vectors) 64 x 3, 2560 (320) 64 x 5, not 128 x 2 or 128 x 3. */
    const struct { int64_t rows, cols; int t, batch; } short_rows[] = {
        {16384, 1024, 64, 2}, {65536, 512, 32, 2}, {32768, 4096, 128, 4}, {65536, 1536, 64, 3}, {2000, 2560, 64, 5},
        {10000, 3072, 128, 3}, {4096, 8192, 128, 8}};
    for (size_t i = 0; i < sizeof short_rows / sizeof short_rows[0]; i++) {
        req.rows = short_rows[i].rows;
        req.cols = short_rows[i].cols;
        CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER &&
                  p.threads_per_row == short_rows[i].t && p.batch == short_rows[i].batch,
              "rmsnorm %lldx%lld: %d x %d, want %d x %d", (long long)req.rows, (long long)req.cols, p.threads_per_row,
              p.batch, short_rows[i].t, short_rows[i].batch);
    }
    /* Under a quarter of the SMs of rows over 16 KiB that one CTA would hold: spread over a cluster at two vectors
       a thread (1 x 16384: 8 CTAs of 128 x 2; 33 x 24576: 384 vectors a CTA, 256 x 2 with a quarter of the lanes
       idle, as rmsnorm has one reduction; layernorm's two take 128 x 3, below); up to half the SMs in rows whose
       bytes the idle SMs would take over exceed TN_CLUSTER_SPREAD_IDLE_BYTES, slices of 8 KiB or more at up to
       two CTAs an SM (64 x 36864, 74 KiB: 2 CTAs of 512 x 5; 34 x 24576, 71 KiB: 2 of 512 x 3, as 4 would need
       2 CTAs an SM and leave none to spare; 40 x 40960, 111 KiB, alike: over 8 the busiest SM would take 3/8 of a
       row, not 1/2, but the SMs clusters of 2 leave idle would take over only 63 KiB, so balance_many_rows keeps
       them), and the rest stay in one CTA (64 x
       16384 at 33 KiB, 64 x 12288, 64 x 32768 at 66); rows of 16 KiB, and 67 rows, stay in the register plan. */
    const struct { int64_t rows, cols; int cluster, t, batch; } spread[] = {
        {1, 16384, 8, 128, 2}, {8, 16384, 8, 128, 2},  {33, 24576, 8, 256, 2}, {1, 12288, 8, 128, 2},
        {1, 8192, 1, 0, 0},    {64, 16384, 1, 0, 0},   {34, 24576, 2, 512, 3},   {64, 12288, 1, 0, 0},
        {64, 32768, 1, 0, 0},  {64, 36864, 2, 512, 5}, {40, 40960, 2, 512, 5}, {64, 8192, 1, 0, 0},
        {67, 16384, 1, 0, 0}};
    for (size_t i = 0; i < sizeof spread / sizeof spread[0]; i++) {
        req.rows = spread[i].rows;
        req.cols = spread[i].cols;
        const int ok = tn_schedule(&req, &p, err, sizeof err);
        if (spread[i].cluster == 1)
            CHECK(ok && p.kind == TN_PLAN_REGISTER, "rmsnorm %lldx%lld in one CTA a row: %s", (long long)req.rows,
                  (long long)req.cols, p.why);
        else
            CHECK(ok && p.kind == TN_PLAN_CLUSTER && p.cluster == spread[i].cluster &&
                      p.threads_per_row == spread[i].t && p.batch == spread[i].batch,
                  "rmsnorm %lldx%lld spread over %d CTAs of %d x %d: %s", (long long)req.rows, (long long)req.cols,
                  spread[i].cluster, spread[i].t, spread[i].batch, p.why);
    }
    /* A cluster plan's stages: accepted with the matching smem_bytes, refused with the L2 prefetch, with vectors
       under 16 bytes, with more than TN_CLUSTER_MAX_STAGES or with another smem_bytes. */
    req.rows = 4096;
    req.cols = 65536;
    req.kind = TN_PLAN_CLUSTER;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER, "forced cluster: %s", err);
    req.kind = -1;
    tn_plan_desc st = p;
    st.stages = 1;
    st.smem_bytes = (int)tn_cluster_dynamic_smem(&a, &st);
    CHECK(st.smem_bytes == 65536 * 2 / st.cluster + 8 && tn_plan_desc_check(&st, &a, &d, 16, err, sizeof err),
          "1 stage of a slice: %s", err);
    st.prefetch = 1;
    CHECK(!tn_plan_desc_check(&st, &a, &d, 16, err, sizeof err) && strstr(err, "stages"), "stages and prefetch: %s",
          err);
    st.prefetch = 0;
    st.vec = 4;
    st.align_bytes = 8;
    st.batch *= 2;
    CHECK(!tn_plan_desc_check(&st, &a, &d, 8, err, sizeof err) && strstr(err, "stages"), "8-byte vectors: %s", err);
    /* A slice left in its one stage: a cluster a row at most, no carry, one stage. */
    st = p;
    st.stages = 1;
    st.shared_slice = 1;
    st.prefetch = st.carry = 0;
    st.smem_bytes = (int)tn_cluster_dynamic_smem(&a, &st);
    st.grid = req.rows * st.cluster;
    CHECK(tn_plan_desc_check(&st, &a, &d, 16, err, sizeof err), "shared slice: %s", err);
    st.grid += st.cluster;
    CHECK(!tn_plan_desc_check(&st, &a, &d, 16, err, sizeof err) && strstr(err, "grid"), "a cluster more than rows: %s",
          err);
    st.grid -= st.cluster;
    st.carry = 1;
    CHECK(!tn_plan_desc_check(&st, &a, &d, 16, err, sizeof err) && strstr(err, "shared_slice"),
          "shared slice with carry: %s", err);
    st.carry = 0;
    st.stages = 2;
    st.smem_bytes = (int)tn_cluster_dynamic_smem(&a, &st);
    CHECK(!tn_plan_desc_check(&st, &a, &d, 16, err, sizeof err) && strstr(err, "stages 1"), "shared slice in 2 stages: %s",
          err);
    st = p;
    st.stages = TN_CLUSTER_MAX_STAGES + 1;
    st.smem_bytes = (int)tn_cluster_dynamic_smem(&a, &st);
    CHECK(!tn_plan_desc_check(&st, &a, &d, 16, err, sizeof err) && strstr(err, "stages"), "3 stages: %s", err);
    st = p;
    st.stages = 2;
    st.smem_bytes = (int)tn_cluster_dynamic_smem(&a, &st) + 16;
    CHECK(!tn_plan_desc_check(&st, &a, &d, 16, err, sizeof err) && strstr(err, "smem_bytes"), "wrong smem_bytes: %s",
          err);
    /* Few long rows: clusters doubled while every CTA runs at once with one an SM to spare, up to 4 an SM for
       under a quarter of the SMs in rows (33 x 81920: 8 CTAs), 1 above (64 x 65536: 2); where the driver places
       fewer clusters than the rows need, the plan is made again under a cluster cap. */
    req.rows = 64;
    req.cols = 65536;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 2,
          "rmsnorm 64x65536: 2 CTAs a row: %s (%d)", p.why, p.cluster);
    req.rows = 33;
    req.cols = 81920;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 8,
          "rmsnorm 33x81920: 8 CTAs a row: %s (%d)", p.why, p.cluster);
    req.max_cluster = 4;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 4,
          "rmsnorm 33x81920 under a cap of 4: %d", p.cluster);
    req.max_cluster = 2;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 2,
          "rmsnorm 33x81920 under a cap of 2: %d", p.cluster);
    req.max_cluster = 0;
    {   /* The replan when the driver places too few (no special functions): half the cluster. */
        tn_schedule_request shortr = req;
        tn_plan_desc eight, next;
        CHECK(tn_schedule(&shortr, &eight, err, sizeof err) && tn_schedule_short_clusters(&shortr, &eight, &next) &&
                  shortr.max_cluster == 4 && !shortr.wide_slices && next.cluster == 4,
              "rmsnorm 33x81920 driver-short: clusters of 4: %d", next.cluster);
    }
    /* 34-49 rows of a one-level fusion: clusters of 8 at 4 vectors a thread put 3/8 of a row on the busiest SM,
       against 1/2 over 2 (balance_many_rows; H100 A/B, rmsnorm 40 x 65536 6.72 us against 7.31), compiled for
       the CTAs an SM at which the driver places every cluster (3: 45 clusters of 8 on the H100); from 50 rows
       4/8 again, so 2 stay; and 2 stay where the SMs they leave idle would take over too few bytes (34 x 32768:
       62 KiB; 49 x 49152: 49) or the driver would place too few clusters of 8 at the CTAs an SM the registers
       allow (46-48 x 65536: 3 an SM, 45 placed). Over 3/8 of the SMs, where clusters of 2 do not all run at
       once, few_rows_stream's streamed clusters (60 x 81920: 4 x 512 x 5, two stages, looping). */
    const struct { int64_t rows, cols; int cluster, t, batch, per_sm; } balanced[] = {
        {34, 65536, 8, 256, 4, 3}, {40, 65536, 8, 256, 4, 3}, {45, 65536, 8, 256, 4, 3}, {36, 81920, 8, 256, 5, 3},
        {34, 32768, 2, 512, 4, 0}, {49, 49152, 2, 512, 6, 0}, {46, 65536, 2, 512, 8, 0}, {48, 65536, 2, 512, 8, 0},
        {50, 65536, 2, 512, 8, 0}, {60, 81920, 4, 512, 5, 0}};
    for (size_t i = 0; i < sizeof balanced / sizeof balanced[0]; i++) {
        req.rows = balanced[i].rows;
        req.cols = balanced[i].cols;
        CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == balanced[i].cluster &&
                  p.threads_per_row == balanced[i].t && p.batch == balanced[i].batch &&
                  (p.cluster != 8 || (p.grid == req.rows * 8 && p.ctas_per_sm == balanced[i].per_sm &&
                                      strstr(p.why, "the busiest SM takes 3/8 of a row, not 1/2"))),
              "rmsnorm %lldx%lld: clusters of %d x %d x %d, got %d x %d x %d at %d an SM: %s", (long long)req.rows,
              (long long)req.cols, balanced[i].cluster, balanced[i].t, balanced[i].batch, p.cluster,
              p.threads_per_row, p.batch, p.ctas_per_sm, p.why);
    }
    /* Narrower vectors (8-byte alignment) keep the clusters of 2: the rule was measured in 16-byte ones. */
    req.rows = 40;
    req.cols = 65536;
    req.align = 8;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 2,
          "rmsnorm 40x65536 at 8-byte alignment: clusters of %d", p.cluster);
    req.align = 16;
    {   /* Where the driver still places fewer (another GPC layout), the re-plan under a cap of 4 finds no smaller
           share and takes 2. */
        tn_schedule_request shortr = req;
        tn_plan_desc eight, next;
        shortr.rows = 45;
        CHECK(tn_schedule(&shortr, &eight, err, sizeof err) && eight.cluster == 8 &&
                  tn_schedule_short_clusters(&shortr, &eight, &next) && next.cluster == 2,
              "rmsnorm 45x65536 driver-short: from 8 to clusters of 2: %d, %d", eight.cluster, next.cluster);
    }
    tn_fusion_destroy(f);
    tn_fusion_builtin(ctx, TN_BUILTIN_LAYERNORM, &o, &f);
    tn_analyze(f, &a);
    req.rows = 33;
    req.cols = 24576;
    CHECK(a.num_levels == 2 && tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER &&
              p.cluster == 8 && p.threads_per_row == 128 && p.batch == 3,
          "layernorm 33x24576: 8 CTAs of 128 x 3: %s", p.why);
    /* Its two levels spread over clusters from TN_CLUSTER_SPREAD_IDLE_BYTES_LEVELS taken over by the idle SMs,
       where rmsnorm's one level needs TN_CLUSTER_SPREAD_IDLE_BYTES: 40 x 20480 (56 KiB) over clusters, 64 x
       20480 (41) and 48 x 14336 (36) in one CTA a row; rows whose register plan runs one CTA an SM (28672
       columns) take the two-level pair plan before the spread (clusters of 2 x 256: 66 x 28672 5.04 us, 5.59
       spread over 4 x 128). */
    const struct { int64_t rows, cols; int cluster, t; } levels[] = {
        {40, 20480, 4, 128}, {40, 16384, 4, 128}, {57, 24576, 4, 128}, {64, 20480, 1, 512},
        {48, 14336, 1, 256}, {40, 12288, 1, 512}, {66, 28672, 2, 256}};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        req.rows = levels[i].rows;
        req.cols = levels[i].cols;
        CHECK(tn_schedule(&req, &p, err, sizeof err) && p.cluster == levels[i].cluster &&
                  p.threads_per_row == levels[i].t &&
                  p.kind == (levels[i].cluster > 1 ? TN_PLAN_CLUSTER : TN_PLAN_REGISTER) &&
                  (levels[i].cluster != 2 || strstr(p.why, "reduction levels")),
              "layernorm %lldx%lld: clusters of %d x %d, got %d x %d: %s", (long long)req.rows, (long long)req.cols,
              levels[i].cluster, levels[i].t, p.cluster, p.threads_per_row, p.why);
    }
    /* Several waves of rows that leave room for 2 CTAs an SM are compiled for 2 (ptxas took 141 registers for
       256 x 10 unbound: one CTA an SM); rows of 4096 (9 CTAs an SM by registers) are left to ptxas. */
    req.rows = 2000;
    req.cols = 20480;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER && p.ctas_per_sm == 2,
          "layernorm 2000x20480: register, 2 CTAs an SM: %s (%d)", p.why, p.ctas_per_sm);
    req.rows = 100000;
    req.cols = 4096;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.ctas_per_sm == 0, "layernorm 100000x4096: ctas_per_sm %d",
          p.ctas_per_sm);
    /* Two reduction levels over 16-bit rows that leave the register plan one CTA an SM (64 KiB): a cluster of 2
       looping over the rows, from a quarter of the SMs in rows up, at one CTA an SM of 512 x 4, two stages, the
       COL slices cached (stream_for_levels); f32 rows of the same bytes and rmsnorm's one level stay in the
       register plan. */
    const int64_t paired[] = {4096, 16384, 200};
    for (int i = 0; i < 3; i++) {
        req.rows = paired[i];
        req.cols = 32768;
        CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 2 &&
                  p.threads_per_row == 512 && p.batch == 4 && p.stages == 2 && p.col_cache && p.ctas_per_sm == 0 &&
                  p.grid == 132 && strstr(p.why, "reduction levels"),
              "layernorm %lldx32768: 2 CTAs of 512 x 4, two stages: %s", (long long)req.rows, p.why);
    }
    /* Rows one CTA's registers cannot hold: clusters loop over them, two stages streamed, each CTA's slices of
       weight and bias loaded once into shared memory: the smallest cluster where both fit (tune: 4096 x 65536
       272.1 us over 4 CTAs of 256 x 8; 281.9 over 2 with one stage, 309.0 reading them from L2). */
    const int64_t streamed[] = {4096, 16384, 1000};
    for (int i = 0; i < 3; i++) {
        req.rows = streamed[i];
        req.cols = 65536;
        CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.stages == 2 && p.col_cache &&
                  p.cluster == 4 && p.threads_per_row == 256 && p.batch == 8 &&
                  p.smem_bytes == tn_cluster_dynamic_smem(&a, &p) && p.grid / p.cluster < req.rows &&
                  strstr(p.why, "COL inputs loaded once"),
              "layernorm %lldx65536: streamed, COL slices cached: %s", (long long)req.rows, p.why);
    }
    req.rows = 4096;
    req.cols = 16384;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER, "layernorm bf16 4096x16384: %s",
          p.why);
    tn_fusion_destroy(f);
    const tn_builtin_options of32 = {TN_DTYPE_F32, TN_DTYPE_F32, TN_DTYPE_F32, 0};
    tn_fusion_builtin(ctx, TN_BUILTIN_LAYERNORM, &of32, &f);
    tn_analyze(f, &a);
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER, "layernorm f32 4096x16384: %s",
          p.why);
    tn_fusion_destroy(f);
    tn_fusion_builtin(ctx, TN_BUILTIN_RMSNORM, &o, &f);
    tn_analyze(f, &a);
    req.cols = 32768;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER, "rmsnorm 4096x32768: %s", p.why);
    tn_fusion_destroy(f);
    /* Softmax rows too long for two to fit in shared memory: over 8 waves of CTAs, a cluster a row, each slice in
       shared memory, 3 CTAs an SM (share_long_slices; tune 271 us at 4096 x 65536, 276 at 65584, where 256 x 17
       keeps the third CTA); fewer rows, a persistent cluster holding row and exps in registers at 2 or more CTAs
       an SM (tune: 283 us against tma-ws 305 at 4096 x 65536); where no split leaves 2 CTAs an SM (65584 = 8 x
       8198 elements: only clusters of 2), a persistent cluster streamed at one CTA an SM, exps recomputed (tune:
       1000 x 65584 77.3 us against tma-ws 96.3), tma-ws only where the cluster kind is avoided; tma
       where two fit and the register plan would hold one row an SM; not for rmsnorm rows of the same length, nor
       for few rows. */
    tn_fusion_builtin(ctx, TN_BUILTIN_SOFTMAX, &o, &f);
    tn_analyze(f, &a);
    tn_schedule_request sm = {&a, 4096, 65536, 16, -1, &d};
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.shared_slice && p.cluster == 2 &&
              p.ctas_per_sm == 3 && p.grid == 8192 && !p.carry &&
              strstr(p.why, "not tma-ws: the cluster plan holds the row over 2 CTAs, each slice in shared memory"),
          "softmax 4096x65536: shared slices, a cluster a row: %s", p.why);
    sm.cols = 65584;
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.shared_slice &&
              p.threads_per_row == 256 && p.batch == 17 && p.ctas_per_sm == 3,
          "softmax 4096x65584: shared slices of 256 x 17 at 3 an SM: %s", p.why);
    /* 34-66 rows one CTA holds that the idle SMs would take too few bytes of to spread: heavy rows the tma plans
       would stream (heavy_waves) spread over clusters of 4 x 128 still (57 x 24576: 3.90 us, 4.19 over the
       2 x 256 that heavy_waves's own clusters take), lighter ones stay in one CTA (softmax 50 x 12288). */
    sm.rows = 57;
    sm.cols = 24576;
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 4 &&
              p.threads_per_row == 128 && strstr(p.why, "leave SMs idle"),
          "softmax 57x24576: spread over 4 CTAs of 128: %d x %d: %s", p.cluster, p.threads_per_row, p.why);
    sm.rows = 50;
    sm.cols = 12288;
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER, "softmax 50x12288: register: %s",
          p.why);
    sm.rows = 1000; /* 2000 CTAs: under 8 waves */
    sm.cols = 65536;
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && !p.shared_slice && p.carry &&
              p.ctas_per_sm >= 2 && strstr(p.why, "not tma-ws: the cluster plan"),
          "softmax 1000x65536: cluster carrying exp: %s", p.why);
    /* 8198 vectors a row: over 4 CTAs, slices of 2050 and (the last) 2048, as 65536's. */
    sm.cols = 65584;
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 4 && !p.shared_slice &&
              p.carry && p.ctas_per_sm >= 2 && strstr(p.why, "not tma-ws: the cluster plan"),
          "softmax 1000x65584: cluster of 4 carrying exp, as 65536: %s", p.why);
    /* Where no split leaves 2 CTAs an SM (here: clusters capped at 2), heavy rows stream at one CTA an SM. */
    sm.max_cluster = 2;
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 2 && p.stages == 1 &&
              !p.carry && !p.shared_slice && p.grid == 132 && strstr(p.why, "streamed at one CTA an SM"),
          "softmax 1000x65584 in clusters of 2 at most: streamed: %s", p.why);
    sm.max_cluster = 0;
    sm.avoid = 1u << TN_PLAN_CLUSTER;
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_TMA_WS && p.consumer_groups == 1 &&
              p.chunks > 1 && p.stages > p.chunks,
          "softmax 1000x65584 avoiding cluster: tma-ws streaming chunks: %s", p.why);
    sm.avoid = 0;
    sm.rows = 4096;
    /* A kind the request avoids (its plan spilled) is passed over, also where another kind asks whether it would
       take the shape: without the cluster, 4096 x 65536 goes back to tma-ws. */
    sm.cols = 65536;
    sm.avoid = 1u << TN_PLAN_CLUSTER;
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_TMA_WS, "softmax 4096x65536 avoiding cluster: %s",
          p.why);
    sm.kind = TN_PLAN_CLUSTER; /* but a forced kind is not avoided */
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER, "forced cluster: %s", err);
    sm.kind = -1;
    sm.avoid = 0;
    sm.cols = 57344; /* 114688-byte rows: two fit by the same rule the tma ring is sized with, so tma, not tma-ws */
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_TMA &&
              strstr(p.why, "not tma-ws: two rows of 114688 bytes fit"),
          "softmax 4096x57344: tma: %s", p.why);
    /* Many row groups: one stage a CTA, in waves (over 8 of what the SMs' shared memory holds); few (512 rows
       of 64 KiB: 396 CTAs at once), the persistent ring of two stages. */
    sm.cols = 32768;
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_TMA && p.stages == 1 && p.grid == 4096 &&
              strstr(p.why, "two rows of 65536 bytes fit") && strstr(p.why, "in waves"),
          "softmax 4096x32768: tma, one stage in waves: %s", p.why);
    /* At most 16 rows an SM: a cluster of 2 CTAs an SM carrying exp (512 rows: 4 an SM); more, the tma ring. */
    sm.rows = 512;
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 2 &&
              p.threads_per_row == 256 && p.batch == 8 && p.carry && p.ctas_per_sm == 2,
          "softmax 512x32768: a cluster of 2 at 2 CTAs an SM, carrying: %s", p.why);
    sm.rows = 16 * 132 + 1;
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_TMA && p.stages == 2 && p.grid == 132,
          "softmax 2113x32768: tma, two stages, persistent: %s", p.why);
    sm.rows = 64;
    sm.cols = 65536;
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind != TN_PLAN_TMA_WS && strstr(p.why, "not tma-ws"),
          "softmax 64x65536: not tma-ws: %s", p.why);
    sm.rows = 4096;
    sm.cols = 16384;
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER, "softmax 4096x16384: register");
    sm.cols = 24576; /* 12 vectors a thread: two CTAs an SM */
    CHECK(tn_schedule(&sm, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER, "softmax 4096x24576: register");
    tn_fusion_destroy(f);
    /* softmax rows beyond an SM's shared memory, and few long rows, split over a cluster; above 8 CTAs only for
       rows each of whose 16 slices takes an SM of its own (1 x 262144: 32 KiB a CTA); only
       at two CTAs an SM (softmax evaluates exp in two phases: its CTAs overlap one's loads with another's exps);
       600 x 131072 over 4 CTAs a row in 6 waves, its slices in shared memory (share_long_slices: from 5 waves for
       clusters of 4); 64 x 65536 over 8 CTAs of 128, every cluster at once (heavy_few_rows_over_eight). */
    tn_fusion_builtin(ctx, TN_BUILTIN_SOFTMAX, &o, &f);
    tn_analyze(f, &a);
    const int64_t cl_shapes[][3] = {{1, 65536, 8}, {1, 262144, 16}, {600, 131072, 4}, {64, 65536, 8}, {4096, 131072, 4}};
    for (int i = 0; i < 5; i++) {
        tn_schedule_request cr = {&a, cl_shapes[i][0], cl_shapes[i][1], 16, -1, &d};
        CHECK(tn_schedule(&cr, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == cl_shapes[i][2],
              "softmax %lldx%lld: cluster of %lld: %s", (long long)cl_shapes[i][0], (long long)cl_shapes[i][1],
              (long long)cl_shapes[i][2], p.why);
    }
    /* heavy_few_rows_over_eight: 33-66 rows on 132 SMs over clusters of 8 x 128, compiled for the CTAs an SM that
       place every cluster (clusters pack into 10/11 of the SMs); not at a quarter of the SMs or fewer, nor where
       the slice's registers do not fit that many CTAs (64 x 81920: 10 vectors at 5 an SM), nor slices the
       threads do not divide. */
    const int64_t eights[][4] = {{64, 65536, 8, 5}, {40, 65536, 8, 3}, {50, 81920, 8, 4}};
    for (int i = 0; i < 3; i++) {
        tn_schedule_request cr = {&a, eights[i][0], eights[i][1], 16, -1, &d};
        CHECK(tn_schedule(&cr, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == eights[i][2] &&
                  p.threads_per_row == 128 && p.ctas_per_sm == eights[i][3] && p.grid == eights[i][0] * 8 &&
                  strstr(p.why, "heavy few rows"),
              "softmax %lldx%lld: clusters of 8 x 128 at %lld an SM: %d x %d at %d: %s", (long long)eights[i][0],
              (long long)eights[i][1], (long long)eights[i][3], p.cluster, p.threads_per_row, p.ctas_per_sm, p.why);
    }
    const int64_t not_eights[][2] = {{32, 65536}, {64, 81920}, {64, 65544}}; /* 65544: a ragged ninth vector */
    for (int i = 0; i < 3; i++) {
        tn_schedule_request cr = {&a, not_eights[i][0], not_eights[i][1], 16, -1, &d};
        CHECK(tn_schedule(&cr, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && !strstr(p.why, "heavy few rows"),
              "softmax %lldx%lld: not heavy_few_rows_over_eight: %s", (long long)not_eights[i][0],
              (long long)not_eights[i][1], p.why);
    }
    /* Few rows keep up to 24 vectors a thread, but softmax's even slices 8 at most, so its exps fit in registers
       beside them and every exp phase is short (tune: 8 CTAs of 256 x 6 7.16 us, 128 x 12 7.81, 4 of 128 x 24
       9.3), and its slices of 12 KiB or more go on to non-portable clusters of 16 (H100: 6.51 over 16 of 128 x
       6); more than 2 CTAs a cluster only at 2 CTAs an SM, few rows too (64 x 131072: 14.8 us over 8 CTAs at 3
       an SM, 20.5 over 4 at one); where the clusters loop over the rows, the next row streamed. */
    tn_schedule_request few = {&a, 33, 98304, 16, -1, &d};
    CHECK(tn_schedule(&few, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 16 &&
              p.threads_per_row == 128 && p.batch == 6 && p.carry && !p.stages,
          "softmax 33x98304: 16 CTAs of 128 x 6 carrying exp (12 KiB slices): %s", p.why);
    few.rows = 16;
    few.cols = 131072;
    CHECK(tn_schedule(&few, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 16 &&
              p.threads_per_row == 128 && p.batch == 8 && p.carry && !p.stages,
          "softmax 16x131072: 16 CTAs of 128 x 8: %s", p.why);
    few.rows = 33;
    few.cols = 65536; /* 8 KiB slices: clusters of 8 */
    CHECK(tn_schedule(&few, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 8,
          "softmax 33x65536: 8 CTAs: %s", p.why);
    few.rows = 64;
    few.cols = 131072;
    CHECK(tn_schedule(&few, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 8 &&
              p.threads_per_row == 256 && p.batch == 8 && p.carry && p.stages == 1 && p.ctas_per_sm == 2 &&
              tn_plan_grid_loops(&p),
          "softmax 64x131072: 8 CTAs of 256 x 8 at 2 an SM, clusters looping, streamed: %s", p.why);
    few.cols = 81920; /* 8 vectors a thread would leave 49 clusters of 8 for 64 rows: 64 of 4 x 256 x 10 at once */
    CHECK(tn_schedule(&few, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 4 &&
              p.threads_per_row == 256 && p.batch == 10 && !tn_plan_grid_loops(&p),
          "softmax 64x81920: 4 CTAs of 256 x 10, every row at once: %s", p.why);
    /* Where the driver places fewer clusters than the rows (tn_schedule_short_clusters): softmax 33 x 131072
       over 8 CTAs of 128 x 16 rather than 256 x 8 (H100: 9.47 us; 14.44 after halving the clusters twice). */
    few.rows = 33;
    few.cols = 131072;
    CHECK(tn_schedule(&few, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 8 &&
              p.threads_per_row == 256 && p.batch == 8,
          "softmax 33x131072: 8 CTAs of 256 x 8: %s", p.why);
    few.wide_slices = 1;
    CHECK(tn_schedule(&few, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 8 &&
              p.threads_per_row == 128 && p.batch == 16 && p.carry && !p.l2_slice,
          "softmax 33x131072, wide slices: 8 CTAs of 128 x 16 carrying: %s", p.why);
    {   /* The replan api/plan.c asks for when the driver places too few: the wider slices, then none. */
        tn_schedule_request shortr = few;
        tn_plan_desc narrow, next;
        shortr.wide_slices = 0;
        CHECK(tn_schedule(&shortr, &narrow, err, sizeof err) && tn_schedule_short_clusters(&shortr, &narrow, &next) &&
                  shortr.wide_slices && next.cluster == 8 && next.batch == 16 && !next.l2_slice,
              "softmax 33x131072 driver-short: 8 CTAs of 128 x 16: %s", next.why);
        CHECK(!tn_schedule_short_clusters(&shortr, &next, &narrow), "softmax 33x131072: no replan after the wide one");
    }
    few.cols = 81920; /* already the wider slices: the same plan */
    few.rows = 64;
    CHECK(tn_schedule(&few, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 4 &&
              p.threads_per_row == 256 && p.batch == 10,
          "softmax 64x81920, wide slices: 4 CTAs of 256 x 10: %s", p.why);
    few.wide_slices = 0;
    /* 4-byte aligned rows of 32772 2-element vectors: 8 CTAs (the last slice shorter) of at most 16, carrying. */
    few.rows = 1;
    few.cols = 65544;
    few.align = 4;
    CHECK(tn_schedule(&few, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 8 && p.batch <= 16 &&
              p.carry,
          "softmax 1x65544 aligned to 4: 8 CTAs of at most 16 vectors a thread, carrying: %s", p.why);
    few.align = 16;
    few.rows = 64;
    few.cols = 131072;
    CHECK(tn_schedule(&few, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 8 &&
              p.ctas_per_sm >= 2 && p.carry,
          "softmax 64x131072: 8 CTAs at 2 or more an SM: %s", p.why);
    tn_fusion_destroy(f);
    /* f32 rows keep 16 vectors a thread (64 elements, as bf16's 8): 8 CTAs of 128 x 16, streamed as they loop. */
    tn_fusion_builtin(ctx, TN_BUILTIN_SOFTMAX, &of32, &f);
    tn_analyze(f, &a);
    few.cols = 65536;
    CHECK(tn_schedule(&few, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 8 &&
              p.threads_per_row == 128 && p.batch == 16 && p.carry && (p.stages == 1) == tn_plan_grid_loops(&p),
          "softmax f32 64x65536: 8 CTAs of 128 x 16: %s", p.why);
    tn_fusion_destroy(f);
    /* rmsnorm rows one CTA's registers cannot hold: a cluster of 2 at 256 threads x 16 vectors (ahead of tma in
       tune); rows of 32768, which one CTA holds at one CTA an SM, stay in registers (no special functions). */
    tn_fusion_builtin(ctx, TN_BUILTIN_RMSNORM, &o, &f);
    tn_analyze(f, &a);
    tn_schedule_request rl = {&a, 4096, 65536, 16, -1, &d};
    CHECK(tn_schedule(&rl, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 2 &&
              p.threads_per_row == 256 && p.batch == 16 && p.shared_slice && p.ctas_per_sm == 3,
          "rmsnorm 4096x65536: cluster of 2, shared slices: %s", p.why);
    rl.cols = 131072;
    CHECK(tn_schedule(&rl, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 4 &&
              p.threads_per_row == 256 && p.shared_slice && p.ctas_per_sm == 3,
          "rmsnorm 4096x131072: shared slices over 4 CTAs of 256: %s", p.why);
    rl.rows = 512; /* 2048 CTAs of 4 a row at 2-3 an SM, 5 or more waves: shared slices (the persistent clusters of
                      4 they replace would run on 10/11 of the SMs) */
    CHECK(tn_schedule(&rl, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 4 && p.shared_slice &&
              p.grid == 2048 && p.ctas_per_sm >= 2,
          "rmsnorm 512x131072: shared slices over 4 CTAs a row in waves: %s", p.why);
    rl.rows = 300; /* under 5 waves: a persistent cluster in registers, the smallest whose CTA holds two stages
                      and the weight's slice at one an SM, 8 vectors a thread */
    CHECK(tn_schedule(&rl, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 4 &&
              p.threads_per_row == 512 && p.batch == 8 && !p.shared_slice && p.stages == 2 && p.col_cache &&
              p.smem_bytes == (2 * (131072 / 4 * 2 + 8) + 15) / 16 * 16 + 131072 / 4 * 2 &&
              p.grid / p.cluster < 300 && strstr(p.why, "next rows streamed") && strstr(p.why, "COL inputs loaded once"),
          "rmsnorm 300x131072: cluster of 4 x 512, two stages, the weight's slices cached: %s", p.why);
    rl.rows = 33; /* few rows: a cluster a row, nothing to stream, nothing to keep across rows */
    CHECK(tn_schedule(&rl, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.stages == 0 && !p.col_cache &&
              !tn_plan_grid_loops(&p),
          "rmsnorm 33x131072: no stage: %s", p.why);
    rl.rows = 64; /* few rows over 3/8 of the SMs: few_rows_stream, two stages, the weight's slices cached */
    CHECK(tn_schedule(&rl, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.stages == 2 && p.col_cache &&
              p.cluster == 4 && tn_plan_grid_loops(&p),
          "rmsnorm 64x131072: streamed, COL slices cached: %s", p.why);
    rl.rows = 512;
    tn_schedule_request forced = rl; /* a forced cluster plan is the base tune and the tests vary: no stage */
    forced.kind = TN_PLAN_CLUSTER;
    CHECK(tn_schedule(&forced, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.stages == 0,
          "rmsnorm 512x131072 forced cluster: no stage: %s", p.why);
    /* Clusters of 8 in waves keep 8 waves: 256 x 262144 (2048 CTAs at 2 an SM, 7.8) stays persistent. */
    rl.rows = 256;
    rl.cols = 262144;
    CHECK(tn_schedule(&rl, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 8 && !p.shared_slice,
          "rmsnorm 256x262144: persistent clusters of 8: %s", p.why);
    rl.cols = 131072;
    {   /* The 5 waves of clusters of 4, to the row: f32 x 65536 at 3 CTAs an SM, 4 a row: 495 rows make 1980 CTAs */
        tn_fusion *f32 = NULL;
        tn_fusion_builtin(ctx, TN_BUILTIN_RMSNORM, &of32, &f32);
        tn_analysis a32;
        tn_analyze(f32, &a32);
        for (int64_t m = 494; m <= 495; m++) {
            tn_schedule_request r32 = {&a32, m, 65536, 16, -1, &d};
            CHECK(tn_schedule(&r32, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 4 &&
                      p.shared_slice == (m == 495) && (!p.shared_slice || p.grid == 1980),
                  "rmsnorm f32 %lldx65536: shared slices from 5 waves: %s", (long long)m, p.why);
        }
        tn_fusion_destroy(f32);
    }
    rl.rows = 4096;
    /* Two inputs: the smallest cluster whose slices leave 2 CTAs an SM (81920: 4 of 80 KiB, not 2 of 160 or 8 of
       40); 98304, one input: 2 of 96 KiB at 24 vectors a thread. */
    tn_fusion *fa = NULL;
    tn_fusion_builtin(ctx, TN_BUILTIN_ADD_RMSNORM, &o, &fa);
    tn_analysis aa;
    tn_analyze(fa, &aa);
    tn_schedule_request al = {&aa, 2000, 81920, 16, -1, &d};
    CHECK(tn_schedule(&al, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.shared_slice && p.cluster == 4 &&
              p.ctas_per_sm == 2,
          "add_rmsnorm 2000x81920: shared slices over 4 CTAs at 2 an SM: %s", p.why);
    tn_fusion_destroy(fa);
    rl.rows = 3000;
    rl.cols = 98304;
    CHECK(tn_schedule(&rl, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.shared_slice && p.cluster == 2 &&
              p.threads_per_row == 256 && p.batch == 24 && p.ctas_per_sm == 2,
          "rmsnorm 3000x98304: shared slices over 2 CTAs of 256 x 24: %s", p.why);
    rl.rows = 4096;
    rl.cols = 32768;
    CHECK(tn_schedule(&rl, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER, "rmsnorm 4096x32768: %s", p.why);
    rl.avoid = 1u << TN_PLAN_REGISTER; /* its plan spilled: the cluster takes the row, saying why not register */
    CHECK(tn_schedule(&rl, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER, "rmsnorm 4096x32768 avoiding register: %s",
          p.why);
    rl.avoid = 1u << TN_PLAN_REGISTER | 1u << TN_PLAN_CLUSTER | 1u << TN_PLAN_TMA;
    CHECK(tn_schedule(&rl, &p, err, sizeof err) && p.kind == TN_PLAN_LOOPED && strstr(p.why, "not register: ptxas spilled"),
          "rmsnorm 4096x32768 avoiding three kinds: %s", p.why);
    rl.avoid = 0;
    rl.cols = 65536;
    rl.rows = 1;
    CHECK(tn_schedule(&rl, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 8, "rmsnorm 1x65536: %s",
          p.why);
    tn_schedule_request no_sm90 = {&a, 4096, 65536, 16, TN_PLAN_CLUSTER, &d};
    tn_device_props a100;
    tn_device_props_for_target("a100", &a100);
    no_sm90.props = &a100;
    CHECK(!tn_schedule(&no_sm90, &p, err, sizeof err) && strstr(err, "sm_90"), "cluster on an A100: %s", err);
    tn_fusion_destroy(f);
    /* add_rmsnorm's later phase takes only the rounded sum: half its loaded inputs stay live, so rows of
       32768 fit in registers (ptxas: 175 registers at 256 threads, no spills). */
    tn_fusion_builtin(ctx, TN_BUILTIN_ADD_RMSNORM, &o, &f);
    tn_analyze(f, &a);
    CHECK(a.num_stage_inputs == 2 && a.kept_values == 1, "add_rmsnorm keeps %d of %d inputs", a.kept_values,
          a.num_stage_inputs);
    tn_schedule_request ar = {&a, 4096, 32768, 16, -1, &d};
    CHECK(tn_schedule(&ar, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER, "add_rmsnorm 4096x32768: %s", p.why);
    /* One level, as rmsnorm: 40 rows over clusters of 8 (H100 A/B: 40 x 65536 10.48 us against 12.85 over 2). */
    ar.rows = 40;
    ar.cols = 65536;
    CHECK(tn_schedule(&ar, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 8 &&
              p.threads_per_row == 256 && p.batch == 4,
          "add_rmsnorm 40x65536: clusters of 8 x 256 x 4: %d x %d x %d", p.cluster, p.threads_per_row, p.batch);
    tn_fusion_destroy(f);
    /* Two levels or two special-function phases: every exchange over 8 CTAs at 4 vectors a thread costs more
       than the busiest SM's share saves (H100 A/B: layernorm 40 x 65536 9.25 us over 8, 8.16 over 2; softmax
       7.39, 6.79; softmax's 8 CTAs of 128 x 8 are heavy_few_rows_over_eight's, tested above). */
    const tn_builtin two[] = {TN_BUILTIN_LAYERNORM, TN_BUILTIN_SOFTMAX};
    for (int i = 0; i < 2; i++) {
        tn_fusion_builtin(ctx, two[i], &o, &f);
        tn_analyze(f, &a);
        CHECK(tn_schedule(&ar, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER &&
                  (p.cluster < 8 || (two[i] == TN_BUILTIN_SOFTMAX && p.threads_per_row == 128)) &&
                  !strstr(p.why, "busiest SM"),
              "builtin %d 40x65536: clusters of %d: %s", (int)two[i], p.cluster, p.why);
        tn_fusion_destroy(f);
    }
    /* One level, but exp in two phases (a softmax without the max: summed, then divided): kept, as softmax. */
    tn_value x, e, sum, y;
    tn_fusion_create(ctx, "exp_share", &f);
    tn_fusion_input(f, "x", TN_DTYPE_BF16, TN_SHAPE_ROW, &x);
    tn_fusion_unary(f, TN_UNARY_EXP, x, &e);
    tn_fusion_reduce(f, TN_REDUCE_SUM, TN_AXIS_INNER, e, &sum);
    tn_fusion_binary(f, TN_BINARY_DIV, e, sum, &y);
    tn_fusion_output(f, "y", y, TN_DTYPE_BF16);
    tn_analyze(f, &a);
    CHECK(a.num_levels == 1 && a.special_evals >= 2, "exp_share: %d levels, %d special evaluations", a.num_levels,
          a.special_evals);
    static const int64_t exp_cols[] = {16384, 20480, 24576, 32768, 49152, 65536, 81920, 131072};
    for (int64_t rows = 34; rows <= 66; rows++)
        for (int i = 0; i < 8; i++) {
            ar.rows = rows;
            ar.cols = exp_cols[i];
            CHECK(tn_schedule(&ar, &p, err, sizeof err) && !strstr(p.why, "busiest SM"), "exp_share %lldx%lld: %s",
                  (long long)rows, (long long)exp_cols[i], p.why);
        }
    tn_fusion_destroy(f);
}

static void test_json_rejections(void) {
    tn_plan_desc p;
    char err[320];
    CHECK(!tn_plan_desc_parse("[]", &p, err, sizeof err), "not an object");
    CHECK(!tn_plan_desc_parse("{\"kind\": \"tma-xx\"}", &p, err, sizeof err) && strstr(err, "unknown kind"), "%s", err);
    CHECK(!tn_plan_desc_parse("{\"kind\": \"register\", \"rows\": 1}", &p, err, sizeof err) && strstr(err, "missing"),
          "%s", err);
    CHECK(!tn_plan_desc_parse("{\"kind\": \"register\", \"bogus\": 1}", &p, err, sizeof err) && strstr(err, "unknown member"),
          "%s", err);
    CHECK(!tn_plan_desc_parse("{\"kind\": \"register\", \"rows\": x}", &p, err, sizeof err) && strstr(err, "integer"),
          "%s", err);
}

/* JSON numbers whose value is an integer are integers; fields a kind does not use may be left out. */
static void test_json_forms(void) {
    tn_plan_desc p;
    char err[320];
    const char *plain = "{\"kind\": \"register\", \"rows\": 4096, \"cols\": 4096, \"vec\": 8, \"threads_per_row\": 64, "
                        "\"rows_per_cta\": 4, \"batch\": 8, \"block_threads\": 256, \"grid\": 1024, \"cc\": 90, "
                        "\"align_bytes\": 16}";
    CHECK(tn_plan_desc_parse(plain, &p, err, sizeof err) && p.stages == 0 && p.chunks == 1 && p.consumer_groups == 0 &&
              p.pdl == 0, "optional fields: %s", err);
    const char *floats = "{\"kind\": \"register\", \"rows\": 4096.0, \"cols\": 4.096e3, \"vec\": 80e-1, "
                         "\"threads_per_row\": 0.64E2, \"rows_per_cta\": 4, \"batch\": 8, \"block_threads\": 256, "
                         "\"grid\": 1024, \"cc\": 90, \"align_bytes\": 16, \"stages\": -0.0}";
    CHECK(tn_plan_desc_parse(floats, &p, err, sizeof err) && p.rows == 4096 && p.cols == 4096 && p.vec == 8 &&
              p.threads_per_row == 64 && p.stages == 0, "numbers as 4096.0: %s", err);
    static const char *const bad_numbers[] = {"4096.5", "1e-1", "4096.", ".5", "1e", "1e+", "1e30", "-",
                                              "99999999999999999999.0"};
    for (size_t i = 0; i < sizeof bad_numbers / sizeof bad_numbers[0]; i++) {
        char json[128];
        snprintf(json, sizeof json, "{\"kind\": \"register\", \"rows\": %s}", bad_numbers[i]);
        CHECK(!tn_plan_desc_parse(json, &p, err, sizeof err) && strstr(err, "integer"), "%s: %s", bad_numbers[i], err);
    }
}

/* The register split of tma-ws: every block size it can have, against the register file. */
static void test_register_split(void) {
    tn_device_props d;
    tn_device_props_for_target("h200", &d);
    char err[256];
    for (int c = 2; c <= 7; c++) {
        int pr = -1, cr = -1, block = 128 * (c + 1);
        int ok = tn_ws_register_split(d.regs_per_sm, block, c, tn_ws_producer_regs(c % 3 + 1), &pr, &cr, err, sizeof err);
        int launch = (d.regs_per_sm / block) & ~7;
        launch = launch > 255 ? 255 : launch;
        CHECK(ok, "%d groups: %s", c, err);
        CHECK(pr % 8 == 0 && cr % 8 == 0 && pr >= 24 && cr <= 256 && pr <= launch && cr >= launch,
              "%d groups: producer %d, consumers %d, launch %d", c, pr, cr, launch);
        /* The pool is what the CTA got at launch: setmaxnreg.inc beyond it waits forever. */
        CHECK(128 * (pr + c * cr) <= launch * block, "%d groups: %d + %d x %d over the CTA's %d x %d", c, pr, c, cr,
              launch, block);
    }
    int pr = 0, cr = 0;
    CHECK(tn_ws_register_split(65536, 384, 2, 40, &pr, &cr, err, sizeof err) && pr == 40 && cr == 232, "384 threads: %d/%d",
          pr, cr);
    CHECK(tn_ws_register_split(65536, 384, 2, tn_ws_producer_regs(2), &pr, &cr, err, sizeof err) && pr == 48 && cr == 224,
          "384 threads, two ROW inputs: %d/%d", pr, cr);
    /* Impossible inputs: refused with a reason, no division by zero. */
    static const int bad[][4] = {{65536, 128, 0, 40}, {65536, 256, 1, 40}, {65536, 384, 3, 40}, {65536, 1152, 8, 40},
                                 {0, 384, 2, 40},     {1000, 384, 2, 40},  {65536, 0, 2, 40},   {65536, -384, -1, 40},
                                 {65536, 384, 2, 0},  {65536, 384, 2, 44}, {65536, 384, 2, 512}, {65536, 1024, 7, 200}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK(!tn_ws_register_split(bad[i][0], bad[i][1], bad[i][2], bad[i][3], &pr, &cr, err, sizeof err) &&
                  strlen(err) > 10,
              "split %d regs, %d threads, %d groups, producer %d accepted", bad[i][0], bad[i][1], bad[i][2], bad[i][3]);
    }
}

/* Special-function values a later phase needs again are carried; the phases
   after theirs take them as computed and no longer need what made them. */
static void test_carries(tn_context *ctx) {
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_analysis a;
    for (int op = 0; op < TN_BUILTIN_COUNT; op++) {
        tn_fusion *f = NULL;
        tn_fusion_builtin(ctx, (tn_builtin)op, &o, &f);
        tn_analyze(f, &a);
        if (op != TN_BUILTIN_SOFTMAX) {
            CHECK(a.num_carried == 0, "%s carries %d values", tn_builtin_name((tn_builtin)op), a.num_carried);
        } else {
            int exp_node = -1;
            for (int i = 0; i < f->num_nodes; i++)
                if (f->nodes[i].kind == TN_OP_UNARY && f->nodes[i].op == TN_UNARY_EXP) exp_node = i;
            CHECK(a.num_carried == 1 && exp_node >= 0 && a.carried[exp_node] == 2,
                  "softmax: %d carried, exp's first phase %d", a.num_carried, exp_node >= 0 ? a.carried[exp_node] : -1);
            /* The output phase takes exp as computed: neither the input nor the subtraction is recomputed. */
            int out_values = 0;
            for (int i = 0; i < f->num_nodes; i++) out_values += a.phase_need_carry[a.num_levels][i];
            CHECK(exp_node >= 0 && a.phase_need_carry[a.num_levels][exp_node] && out_values == 2 &&
                      a.phase_need_carry[1][exp_node],
                  "softmax output phase computes %d values with carry", out_values);
        }
        tn_fusion_destroy(f);
    }
    /* z = sigmoid(x), y = z / sum(z): z is computed before any reduction and carried from phase 0;
       l = x - log(sum(exp(x))): exp is needed in one phase only, nothing is carried. */
    for (int which = 0; which < 2; which++) {
        tn_fusion *f = NULL;
        tn_value x, z, s, y, l;
        tn_fusion_create(ctx, which ? "logsoftmax" : "sigmoid_share", &f);
        tn_fusion_input(f, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &x);
        tn_fusion_unary(f, which ? TN_UNARY_EXP : TN_UNARY_SIGMOID, x, &z);
        tn_fusion_reduce(f, TN_REDUCE_SUM, TN_AXIS_INNER, z, &s);
        if (which) {
            tn_fusion_unary(f, TN_UNARY_LOG, s, &l);
            tn_fusion_binary(f, TN_BINARY_SUB, x, l, &y);
        } else {
            tn_fusion_binary(f, TN_BINARY_DIV, z, s, &y);
        }
        tn_fusion_output(f, "y", y, TN_DTYPE_F32);
        CHECK(tn_fusion_verify(f) == TN_STATUS_OK, "fusion %d: %s", which, tn_context_last_error(ctx));
        tn_analyze(f, &a);
        if (which)
            CHECK(a.num_carried == 0, "logsoftmax carries %d values", a.num_carried);
        else
            CHECK(a.num_carried == 1 && a.carried[z.index] == 1 && !a.phase_need_carry[1][x.index],
                  "sigmoid share: %d carried, first phase %d", a.num_carried, a.carried[z.index]);
        tn_fusion_destroy(f);
    }
}

/* Every candidate `tune` times passes the plan checks and the invariants, for every kind. */
static void test_candidates(tn_context *ctx) {
    tn_device_props d;
    tn_device_props_for_target("h200", &d);
    static const int64_t shapes[][2] = {{1, 65536}, {4096, 65536}, {4096, 4096}, {64, 131072}, {1000, 4097},
                                        {16384, 1024}, {7, 262144}, {4096, 100008}, {3, 65544}};
    int total = 0, kinds[TN_PLAN_KIND_COUNT] = {0};
    static tn_plan_desc c[1024];
    for (int op = 0; op < TN_BUILTIN_COUNT; op++) {
        tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, op % 2};
        tn_fusion *f = NULL;
        tn_fusion_builtin(ctx, (tn_builtin)op, &o, &f);
        tn_analysis a;
        tn_analyze(f, &a);
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            tn_schedule_request req = {&a, shapes[i][0], shapes[i][1], 16, -1, &d};
            const int n = tn_schedule_candidates(&req, c, 1024);
            CHECK(n > 0 && n < 1024, "%s %lldx%lld: %d candidates", tn_builtin_name((tn_builtin)op),
                  (long long)shapes[i][0], (long long)shapes[i][1], n);
            int carries = 0, staged = 0, bounded = 0, shared = 0, pipelined = 0, sixteen = 0, looped = 0, resident = 0,
                l2 = 0;
            const int64_t row_reread = shapes[i][1] * a.buffer_elem_bytes;
            for (int k = 0; k < n; k++) {
                carries += c[k].carry;
                /* Looped grids of every block size, one of them with its rows' re-read inputs in 2/3 of the L2. */
                looped += c[k].kind == TN_PLAN_LOOPED;
                resident += c[k].kind == TN_PLAN_LOOPED && c[k].grid * row_reread <= 2LL * d.l2_bytes / 3;
                staged += c[k].kind == TN_PLAN_CLUSTER && c[k].stages > 0;
                /* A slice left in shared memory: one stage, a cluster a row. */
                if (c[k].shared_slice)
                    CHECK(c[k].stages == 1 && c[k].grid == shapes[i][0] * c[k].cluster, "shared slice: %d stages, "
                          "grid %lld", c[k].stages, (long long)c[k].grid);
                shared += c[k].shared_slice;
                bounded += c[k].kind == TN_PLAN_REGISTER && c[k].ctas_per_sm > 0;
                pipelined += c[k].pipeline;
                l2 += c[k].l2_slice;
                /* (slices left in L2 come in every cluster size, whatever the rows) */
                sixteen += c[k].cluster == TN_MAX_CLUSTER_NONPORTABLE && !c[k].l2_slice;
            }
            /* Rows a cluster loops over come with staged slices; register plans with and without a bound. */
            CHECK(shapes[i][0] < 1000 || shapes[i][1] < 32768 || staged > 0, "%s %lldx%lld: no staged cluster "
                  "candidates", tn_builtin_name((tn_builtin)op), (long long)shapes[i][0], (long long)shapes[i][1]);
            CHECK(shapes[i][1] < 65536 || shared > 0, "%s %lldx%lld: no shared-slice cluster candidates",
                  tn_builtin_name((tn_builtin)op), (long long)shapes[i][0], (long long)shapes[i][1]);
            CHECK(shapes[i][1] > 32768 || bounded > 0, "%s %lldx%lld: no bound register candidates",
                  tn_builtin_name((tn_builtin)op), (long long)shapes[i][0], (long long)shapes[i][1]);
            /* Few long rows come in clusters of 16 too (non-portable), many rows never. */
            CHECK(shapes[i][0] * 16 <= 4 * d.sm_count && shapes[i][1] >= 65536 ? sixteen > 0 : sixteen == 0,
                  "%s %lldx%lld: %d candidates in clusters of 16", tn_builtin_name((tn_builtin)op),
                  (long long)shapes[i][0], (long long)shapes[i][1], sixteen);
            /* Register plans of many row groups come pipelined too (16384 x 1024: 4096 groups of 4 rows). */
            CHECK(shapes[i][0] < 16384 || shapes[i][1] > 4096 || pipelined > 0, "%s %lldx%lld: no pipelined "
                  "candidates", tn_builtin_name((tn_builtin)op), (long long)shapes[i][0], (long long)shapes[i][1]);
            /* Slices left in L2 for rows whose re-read inputs take 128 KiB or more, in clusters of 2 to 16. */
            CHECK(row_reread >= 128 * 1024 ? l2 >= 4 : l2 == 0, "%s %lldx%lld: %d l2-slice candidates",
                  tn_builtin_name((tn_builtin)op), (long long)shapes[i][0], (long long)shapes[i][1], l2);
            CHECK(looped >= 4 && (row_reread > 2LL * d.l2_bytes / 3 || resident >= 4), "%s %lldx%lld: %d looped "
                  "candidates, %d of them with their rows in L2", tn_builtin_name((tn_builtin)op),
                  (long long)shapes[i][0], (long long)shapes[i][1], looped, resident);
            CHECK(op == TN_BUILTIN_SOFTMAX ? carries > 0 : carries == 0, "%s %lldx%lld: %d carry candidates",
                  tn_builtin_name((tn_builtin)op), (long long)shapes[i][0], (long long)shapes[i][1], carries);
            for (int k = 0; k < n; k++) {
                char what[160];
                snprintf(what, sizeof what, "candidate %d (%s) of %s %lldx%lld", k, tn_plan_kind_name(c[k].kind),
                         tn_builtin_name((tn_builtin)op), (long long)shapes[i][0], (long long)shapes[i][1]);
                check_invariants(&c[k], &a, &d, 16, what);
                kinds[c[k].kind]++;
            }
            total += n;
        }
        tn_fusion_destroy(f);
    }
    for (int k = 0; k < TN_PLAN_KIND_COUNT; k++)
        CHECK(kinds[k] > 0, "no %s candidates", tn_plan_kind_name((tn_plan_kind)k));
    printf("sched candidates: %d checked\n", total);
}

/* Rows whose vectors the cluster does not divide (bf16 rows of 8 x an odd
   number of elements) stay on chip like their powers of two: each CTA a slice
   of ceil(nv / cluster) vectors, the last the rest, never none. */
static void test_uneven_slices(tn_context *ctx) {
    CHECK(tn_cluster_slice_vectors(8193, 8) == 1025 && tn_cluster_slices_fit(8193, 8), "8193 over 8");
    CHECK(!tn_cluster_slices_fit(9, 8) && !tn_cluster_slices_fit(17, 8) && tn_cluster_slices_fit(57, 8) &&
              !tn_cluster_slices_fit(1, 2) && tn_cluster_slices_fit(3, 2) && !tn_cluster_slices_fit(100, 1),
          "slices that leave a CTA none are refused");
    for (int64_t nv = 2; nv < 400; nv++) /* fit: every CTA at least one vector, all of them covered once */
        for (int cl = 2; cl <= TN_MAX_CLUSTER; cl *= 2) {
            const int64_t s = tn_cluster_slice_vectors(nv, cl), last = nv - (cl - 1) * s;
            CHECK(tn_cluster_slices_fit(nv, cl) == (last >= 1 && last <= s), "nv %lld over %d", (long long)nv, cl);
        }
    /* The kernel's index map, brute-forced: CTA `rank` takes vectors VB + vl, vl = p T + tr, where p < PF or
       vl < NVL (its slice's length); every vector of the row exactly once, none past a CTA's NVC (its stage). */
    static unsigned char seen[3000];
    long long maps = 0;
    for (int nv = 2; nv < 3000; nv += 1 + nv / 64)
        for (int cl = 2; cl <= TN_MAX_CLUSTER; cl *= 2)
            for (int t = 32; t <= 1024; t *= 2) {
                if (!tn_cluster_slices_fit(nv, cl)) continue;
                const int nvc = (int)tn_cluster_slice_vectors(nv, cl), pp = (nvc + t - 1) / t;
                const int pf = (nv - (cl - 1) * nvc) / t;
                memset(seen, 0, sizeof seen);
                int bad = pf < 0 || pf > pp;
                for (int rank = 0; rank < cl; rank++) {
                    const int nvl = rank + 1 < cl ? nvc : nv - (cl - 1) * nvc;
                    for (int p = 0; p < pp; p++)
                        for (int tr = 0; tr < t; tr++) {
                            const int vl = p * t + tr;
                            if (!(p < pf || vl < nvl)) continue;
                            if (vl >= nvl || vl >= nvc) bad = 1;
                            else seen[rank * nvc + vl]++;
                        }
                }
                for (int v = 0; v < nv; v++) bad |= seen[v] != 1;
                CHECK(!bad, "index map: %d vectors over %d CTAs of %d threads", nv, cl, t);
                maps++;
            }
    CHECK(maps > 1000, "%lld index maps", maps);
    tn_device_props d;
    tn_device_props_for_target("h200", &d);
    static const int64_t cols[] = {65544, 100008, 131080, 150000, 262136, 300000};
    static const int64_t rows[] = {1, 33, 512, 4096};
    int uneven = 0;
    for (int op = 0; op < TN_BUILTIN_COUNT; op++) {
        tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
        tn_fusion *f = NULL;
        tn_fusion_builtin(ctx, (tn_builtin)op, &o, &f);
        tn_analysis a;
        tn_analyze(f, &a);
        for (size_t ci = 0; ci < sizeof cols / sizeof cols[0]; ci++)
            for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
                tn_schedule_request req = {&a, rows[ri], cols[ci], 16, -1, &d};
                tn_plan_desc p;
                char err[320];
                const int ok = tn_schedule(&req, &p, err, sizeof err);
                CHECK(ok && p.kind == TN_PLAN_CLUSTER, "%s bf16 %lldx%lld: %s plan, not on chip: %s",
                      tn_builtin_name((tn_builtin)op), (long long)rows[ri], (long long)cols[ci],
                      ok ? tn_plan_kind_name(p.kind) : "no", ok ? p.why : err);
                if (ok && p.kind == TN_PLAN_CLUSTER) uneven += (cols[ci] / p.vec) % p.cluster != 0;
            }
        tn_fusion_destroy(f);
    }
    CHECK(uneven > 40, "%d of the plans split unevenly", uneven);
    /* Rows one CTA holds: odd N keeps the peeled register plan's 16-byte vectors; rows narrowed by their
       alignment alone keep the few-row clusters (their vectors split evenly, as before uneven slices). */
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_fusion *f = NULL;
    tn_fusion_builtin(ctx, TN_BUILTIN_RMSNORM, &o, &f);
    tn_analysis a;
    tn_analyze(f, &a);
    tn_plan_desc p;
    char err[320];
    tn_schedule_request odd = {&a, 3, 24579, 16, -1, &d}, narrow = {&a, 8, 32768, 4, -1, &d};
    CHECK(tn_schedule(&odd, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER && p.peel, "rmsnorm 3x24579: %s", p.why);
    CHECK(tn_schedule(&narrow, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.cluster == 8 && p.vec == 2,
          "rmsnorm 8x32768 aligned to 4: %s", p.why);
    tn_fusion_destroy(f);
    printf("sched uneven slices: %d plans with a shorter last slice\n", uneven);
}

/* Lone CTAs over few waves (lone_ctas_few_waves): where one row a CTA leaves one CTA an SM from half the SMs to
   4 rows an SM and the register plan cannot pipeline (add_rmsnorm's two inputs, rows of more than 4 vectors a
   thread at 1024 threads, under one wave), the rows split over clusters; not at 2 CTAs an SM, outside those
   rows, nor for fusions with special functions; under two waves only rows over 32 KiB, and clusters that all run
   at once only where one row a CTA leaves 1/8 of the SMs idle or more. */
static void test_lone_ctas_few_waves(tn_context *ctx, const tn_device_props *d) {
    const int64_t sms = d->sm_count;
    const struct {
        tn_builtin op;
        int64_t rows, cols;
        int lone;
    } v[] = {
        {TN_BUILTIN_ADD_RMSNORM, 512, 24576, 1}, {TN_BUILTIN_ADD_RMSNORM, 300, 32768, 1},
        {TN_BUILTIN_RMSNORM, 512, 32768, 1},     {TN_BUILTIN_ADD_RMSNORM, 4 * sms, 24576, 1},
        {TN_BUILTIN_ADD_RMSNORM, 2 * sms, 24576, 1},
        {TN_BUILTIN_ADD_RMSNORM, 4 * sms + 1, 24576, 0}, /* past 4 rows an SM */
        {TN_BUILTIN_ADD_RMSNORM, 792, 24576, 0},
        {TN_BUILTIN_ADD_RMSNORM, 2 * sms - 1, 24576, 1}, /* under two waves */
        {TN_BUILTIN_ADD_RMSNORM, 96, 32768, 1},
        {TN_BUILTIN_ADD_RMSNORM, sms / 2 + 1, 32768, 1},
        {TN_BUILTIN_ADD_RMSNORM, sms / 2, 32768, 0},     /* half the SMs: the spread rules' */
        {TN_BUILTIN_RMSNORM, 96, 16384, 0},              /* under two waves, rows of 32 KiB */
        {TN_BUILTIN_RMSNORM, sms * 5 / 8, 24576, 1},     /* clusters all at once, 3/8 of the SMs idle */
        {TN_BUILTIN_RMSNORM, sms - sms / 16, 24576, 0},  /* the same, 1/16 idle */
        {TN_BUILTIN_ADD_RMSNORM, 512, 8192, 0},          /* 4 CTAs an SM */
        {TN_BUILTIN_RMSNORM, 512, 24576, 0},             /* pipelined */
        {TN_BUILTIN_SOFTMAX, 512, 32768, 0},             /* exp an element */
        {TN_BUILTIN_ADD_RMSNORM, 512, 4096, 0},          /* short rows, several CTAs an SM */
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        tn_fusion *f = test_builtin(ctx, v[i].op, TN_DTYPE_BF16);
        tn_analysis a;
        tn_analyze(f, &a);
        tn_schedule_request req = {&a, v[i].rows, v[i].cols, 16, -1, d};
        tn_plan_desc p;
        char err[320];
        const int ok = tn_schedule(&req, &p, err, sizeof err);
        const int lone = ok && p.kind == TN_PLAN_CLUSTER && strstr(p.why, "lone CTAs:") != NULL;
        CHECK(ok && lone == v[i].lone && (!lone || tn_plan_desc_check(&p, &a, d, 16, err, sizeof err)),
              "%s %s %lldx%lld: %s plan, lone %d, expected %d: %s", d->name, tn_builtin_name(v[i].op),
              (long long)v[i].rows, (long long)v[i].cols, ok ? tn_plan_kind_name(p.kind) : "no", lone, v[i].lone,
              ok ? p.why : err);
        /* A forced register plan is still one row a CTA; a forced cluster plan is tune's base, not this rule's. */
        req.kind = TN_PLAN_REGISTER;
        CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER && !p.pipeline, "%s forced: %s",
              tn_builtin_name(v[i].op), err);
        req.kind = TN_PLAN_CLUSTER;
        CHECK(!tn_schedule(&req, &p, err, sizeof err) || !strstr(p.why, "lone CTAs:"), "%s forced cluster: %s",
              tn_builtin_name(v[i].op), p.why);
        tn_fusion_destroy(f);
    }
    /* cluster_pick_quarters: two or more ROW inputs under one wave with 1/8 of the SMs idle or more: clusters
       of 4, 2 vectors of each input a thread at up to 512 threads; not past that idle share, nor one input. */
    const struct {
        tn_builtin op;
        int64_t rows, cols;
        int quarters;
    } q[] = {{TN_BUILTIN_ADD_RMSNORM, 75, 28672, 1},        {TN_BUILTIN_ADD_RMSNORM, sms * 7 / 8 - 1, 24576, 1},
             {TN_BUILTIN_ADD_RMSNORM, 111, 30000, 1},       {TN_BUILTIN_ADD_RMSNORM, sms - sms / 16, 24576, 0},
             {TN_BUILTIN_ADD_RMSNORM, sms + 10, 32768, 0}, {TN_BUILTIN_RMSNORM, sms * 5 / 8, 24576, 0}};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        tn_fusion *f = test_builtin(ctx, q[i].op, TN_DTYPE_BF16);
        tn_analysis a;
        tn_analyze(f, &a);
        tn_schedule_request req = {&a, q[i].rows, q[i].cols, 16, -1, d};
        tn_plan_desc p;
        char err[320];
        const int ok = tn_schedule(&req, &p, err, sizeof err);
        const int quarters = ok && p.kind == TN_PLAN_CLUSTER && strstr(p.why, "quarter rows:") != NULL;
        CHECK(ok && quarters == q[i].quarters &&
                  (!quarters || (p.cluster == 4 && p.threads_per_row <= 512 && p.batch <= 2 &&
                                 tn_plan_desc_check(&p, &a, d, 16, err, sizeof err))),
              "%s %s %lldx%lld: quarters %d, expected %d: %s", d->name, tn_builtin_name(q[i].op),
              (long long)q[i].rows, (long long)q[i].cols, quarters, q[i].quarters, ok ? p.why : err);
        tn_fusion_destroy(f);
    }
    {   /* Not f32 rows (4 elements a 16-byte vector: H100, add_rmsnorm f32 72 x 12288 6.75 us over quarters, 5.94
           over 72 clusters of 2). */
        tn_fusion *f = test_builtin(ctx, TN_BUILTIN_ADD_RMSNORM, TN_DTYPE_F32);
        tn_analysis a;
        tn_analyze(f, &a);
        tn_schedule_request req = {&a, 72, 12288, 16, -1, d};
        tn_plan_desc p;
        char err[320];
        CHECK(tn_schedule(&req, &p, err, sizeof err) && !strstr(p.why, "quarter rows:"), "%s f32 add_rmsnorm 72x12288: %s",
              d->name, p.why);
        tn_fusion_destroy(f);
    }
    /* Only rows of 16-byte vectors from 16-byte boundaries (the stages' bulk copies): not rows narrowed by their
       alignment, odd widths, nor the unpeeled plan beside a peeled one (no_peel); and on the estimate, so that
       where ptxas spilled in the pipelined plan (no_pipeline) the register plan without it stays. */
    tn_fusion *f = test_builtin(ctx, TN_BUILTIN_ADD_RMSNORM, TN_DTYPE_BF16);
    tn_analysis a;
    tn_analyze(f, &a);
    const struct { int64_t cols; int align, no_peel, no_pipeline, lone; } w[] = {
        {24576, 16, 0, 0, 1}, {24576, 8, 0, 0, 0}, {24576, 2, 0, 0, 0}, {24577, 16, 0, 0, 0}, {24577, 16, 1, 0, 0},
        {24576, 16, 0, 1, 1}};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        tn_schedule_request req = {&a, 512, w[i].cols, w[i].align, -1, d};
        req.no_peel = w[i].no_peel, req.no_pipeline = w[i].no_pipeline;
        tn_plan_desc p;
        char err[320];
        const int ok = tn_schedule(&req, &p, err, sizeof err);
        CHECK(ok && (p.kind == TN_PLAN_CLUSTER && strstr(p.why, "lone CTAs:")) == w[i].lone,
              "%s add_rmsnorm 512x%lld align %d no_peel %d no_pipeline %d: lone expected %d: %s", d->name,
              (long long)w[i].cols, w[i].align, w[i].no_peel, w[i].no_pipeline, w[i].lone, ok ? p.why : err);
    }
    tn_fusion_destroy(f);
    /* The spill fallback: a layernorm the scheduler pipelines keeps the register plan without (not clusters). */
    f = test_builtin(ctx, TN_BUILTIN_LAYERNORM, TN_DTYPE_BF16);
    tn_analyze(f, &a);
    tn_schedule_request req = {&a, 512, 24576, 16, -1, d};
    req.no_pipeline = 1;
    tn_plan_desc p;
    char err[320];
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER && !p.pipeline,
          "%s layernorm 512x24576 no_pipeline: %s plan: %s", d->name, tn_plan_kind_name(p.kind), p.why);
    tn_fusion_destroy(f);
}

/* The scheduler pipelines the register plan's rows over a persistent grid (pipeline_few_groups) where one row a
   CTA leaves at most 2 CTAs an SM and the rows come to 2-6 an SM (from twice the persistent grid: 264 rows on
   132 SMs, to 6 an SM: 792), more than one row a CTA runs in one wave (rmsnorm x 16384 at 2 CTAs an SM: from
   265 rows), and not for fusions with special functions an element, nor a forced register plan. */
static void test_pipeline_few_groups(tn_context *ctx, const tn_device_props *d) {
    const struct {
        tn_builtin op;
        int64_t rows, cols;
        int piped;
    } v[] = {
        {TN_BUILTIN_RMSNORM, 300, 24576, 1},    /* 1 CTA an SM, 2.3 rows an SM */
        {TN_BUILTIN_RMSNORM, 512, 16384, 1},    /* 2 an SM */
        {TN_BUILTIN_LAYERNORM, 512, 24576, 1},
        {TN_BUILTIN_RMSNORM, 1000, 24576, 0},   /* 7.6 rows an SM */
        {TN_BUILTIN_RMSNORM, 2000, 16384, 0},
        {TN_BUILTIN_RMSNORM, 512, 8192, 0},     /* 4 CTAs an SM */
        {TN_BUILTIN_SOFTMAX, 512, 16384, 0},    /* exp an element */
        {TN_BUILTIN_RMSNORM, 64, 16384, 0},     /* few rows: not even one a CTA of the persistent grid */
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        tn_fusion *f = test_builtin(ctx, v[i].op, TN_DTYPE_BF16);
        tn_analysis a;
        tn_analyze(f, &a);
        tn_schedule_request req = {&a, v[i].rows, v[i].cols, 16, -1, d};
        tn_plan_desc p;
        char err[320];
        const int ok = tn_schedule(&req, &p, err, sizeof err);
        CHECK(ok && (p.kind == TN_PLAN_REGISTER && p.pipeline) == v[i].piped &&
                  (!p.pipeline || (p.grid % d->sm_count == 0 && p.grid * 2 <= v[i].rows &&
                                   strstr(p.why, "pipeline:") && tn_plan_desc_check(&p, &a, d, 16, err, sizeof err))),
              "%s %s %lldx%lld: %s pipeline %d, expected %d: %s", d->name, tn_builtin_name(v[i].op),
              (long long)v[i].rows, (long long)v[i].cols, tn_plan_kind_name(p.kind), p.pipeline, v[i].piped,
              ok ? p.why : err);
        tn_fusion_destroy(f);
    }
    /* The edges: past one wave of 2 CTAs an SM (twice the persistent grid), up to 6 rows an SM; a forced register
       plan stays one row a CTA. */
    tn_fusion *f = test_builtin(ctx, TN_BUILTIN_RMSNORM, TN_DTYPE_BF16);
    tn_analysis a;
    tn_analyze(f, &a);
    const int64_t sms = d->sm_count;
    const int64_t edge[][2] = {{2 * sms - 1, 0}, {2 * sms, 0}, {2 * sms + 1, 1}, {6 * sms, 1}, {6 * sms + 1, 0}};
    for (int i = 0; i < 5; i++) {
        tn_schedule_request req = {&a, edge[i][0], 16384, 16, -1, d};
        tn_plan_desc p;
        char err[320];
        CHECK(tn_schedule(&req, &p, err, sizeof err) && p.pipeline == edge[i][1], "%s rmsnorm %lldx16384: pipeline %d",
              d->name, (long long)edge[i][0], p.pipeline);
        req.kind = TN_PLAN_REGISTER;
        CHECK(tn_schedule(&req, &p, err, sizeof err) && !p.pipeline, "%s forced register %lldx16384 pipelined",
              d->name, (long long)edge[i][0]);
        /* ... and the register plan other kinds weigh (tn_schedule_register) stays one row a CTA */
        req.kind = -1;
        tn_plan_desc reg = p; /* the forced plan's common fields; the register ones made again */
        CHECK(tn_schedule_register(&req, &reg, 0, err, sizeof err) && !reg.pipeline && reg.grid == edge[i][0],
              "%s rmsnorm %lldx16384: the register plan other kinds weigh is pipelined (grid %lld)", d->name,
              (long long)edge[i][0], (long long)reg.grid);
    }
    /* Not at a width that leaves the row's last vector to some threads (20480 over 1024 threads x 3). */
    tn_schedule_request ragged = {&a, 400, 20480, 16, -1, d};
    tn_plan_desc p;
    char err[320];
    CHECK(tn_schedule(&ragged, &p, err, sizeof err) && !p.pipeline, "%s rmsnorm 400x20480 pipelined at %d x %d",
          d->name, p.threads_per_row, p.batch);
    tn_fusion_destroy(f);
}

/* pipeline: tune's register candidates over a persistent grid, loading the next row group ahead (the scheduler's
   where test_pipeline_few_groups says); refused outside register plans and with peel. */
static void test_pipeline(tn_context *ctx) {
    tn_device_props d;
    tn_device_props_for_target("h200", &d);
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_fusion *f = NULL;
    tn_fusion_builtin(ctx, TN_BUILTIN_ADD_RMSNORM, &o, &f);
    tn_analysis a;
    tn_analyze(f, &a);
    tn_schedule_request req = {&a, 65536, 512, 16, -1, &d};
    tn_plan_desc p;
    static tn_plan_desc c[1024];
    char err[320];
    CHECK(tn_schedule(&req, &p, err, sizeof err) && !p.pipeline, "the scheduler pipelines: %s", p.why);
    const int n = tn_schedule_candidates(&req, c, 1024);
    int found = 0;
    for (int k = 0; k < n; k++) {
        if (!c[k].pipeline) continue;
        found++;
        CHECK(c[k].kind == TN_PLAN_REGISTER && c[k].grid % d.sm_count == 0 &&
                  c[k].grid * c[k].rows_per_cta * 2 <= 65536 && tn_plan_desc_check(&c[k], &a, &d, 16, err, sizeof err),
              "pipelined candidate: grid %lld, %s", (long long)c[k].grid, err);
        tn_plan_desc q = c[k];
        q.peel = 1;
        CHECK(!tn_plan_desc_check(&q, &a, &d, 16, err, sizeof err) && strstr(err, "pipeline"), "peel and pipeline: %s",
              err);
    }
    CHECK(found >= 2, "add_rmsnorm 65536x512: %d pipelined candidates", found);
    /* Not over 32-byte vectors (bf16 rows beside an f8 output: their conversions took stack and spilled). */
    tn_fusion *f8 = NULL;
    tn_builtin_options o8 = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_F8E4M3, 0};
    tn_fusion_builtin(ctx, TN_BUILTIN_ADD_RMSNORM, &o8, &f8);
    tn_analysis a8;
    tn_analyze(f8, &a8);
    tn_schedule_request r8 = {&a8, 65536, 512, 16, -1, &d};
    for (int k = 0, n8 = tn_schedule_candidates(&r8, c, 1024); k < n8; k++)
        CHECK(!c[k].pipeline, "a pipelined candidate of 32-byte vectors (vec %d)", c[k].vec);
    tn_fusion_destroy(f8);
    /* Clusters: 16 CTAs only on sm_90 (non-portable), never more; none on the A100. */
    tn_fusion_destroy(f);
    tn_fusion_builtin(ctx, TN_BUILTIN_RMSNORM, &o, &f);
    tn_analyze(f, &a);
    tn_schedule_request few = {&a, 1, 262144, 16, TN_PLAN_CLUSTER, &d};
    CHECK(tn_schedule(&few, &p, err, sizeof err) && p.cluster == 16 && p.threads_per_row == 256 && p.batch == 8,
          "rmsnorm 1x262144: 16 CTAs of 256 x 8: %s", p.why);
    /* ... but 8 where the slices of 16 would be under 32 KiB (8 x 131072), or the rows' clusters of 16 would
       share SMs (9 x 262144); 8 vectors a thread where every row's cluster has SMs of its own. */
    few.rows = 8, few.cols = 131072;
    CHECK(tn_schedule(&few, &p, err, sizeof err) && p.cluster == 8 && p.threads_per_row == 256 && p.batch == 8,
          "rmsnorm 8x131072: 8 CTAs of 256 x 8: %s", p.why);
    few.rows = 9, few.cols = 262144;
    CHECK(tn_schedule(&few, &p, err, sizeof err) && p.cluster == 8, "rmsnorm 9x262144: 8 CTAs: %s", p.why);
    few.rows = 1;
    p.cluster = 16, p.grid = 16, p.threads_per_row = p.block_threads = 256, p.batch = 8, p.ctas_per_sm = 0;
    CHECK(tn_plan_desc_check(&p, &a, &d, 16, err, sizeof err), "16 CTAs on the H200: %s", err);
    p.cluster = 32, p.grid = 32, p.batch = 4;
    CHECK(!tn_plan_desc_check(&p, &a, &d, 16, err, sizeof err) && strstr(err, "cluster 32"), "32 CTAs: %s", err);
    tn_device_props a100;
    tn_device_props_for_target("a100", &a100);
    p.cluster = 16, p.grid = 16, p.batch = 8, p.cc = 80;
    CHECK(!tn_plan_desc_check(&p, &a, &a100, 16, err, sizeof err), "16 CTAs on the A100 accepted");
    few.props = &a100;
    CHECK(tn_schedule_candidates(&few, c, 1024) > 0, "A100 candidates");
    for (int k = 0, n100 = tn_schedule_candidates(&few, c, 1024); k < n100; k++)
        CHECK(c[k].cluster == 1, "an A100 candidate in clusters of %d", c[k].cluster);
    tn_fusion_destroy(f);
    tn_fusion_builtin(ctx, TN_BUILTIN_ADD_RMSNORM, &o, &f);
    tn_analyze(f, &a);
    req.rows = 1000;
    req.cols = 131072;
    req.kind = TN_PLAN_CLUSTER;
    CHECK(tn_schedule(&req, &p, err, sizeof err), "%s", err);
    p.pipeline = 1;
    CHECK(!tn_plan_desc_check(&p, &a, &d, 16, err, sizeof err) && strstr(err, "pipeline"), "a pipelined cluster: %s",
          err);
    tn_fusion_destroy(f);
    test_pipeline_few_groups(ctx, &d);
    test_lone_ctas_few_waves(ctx, &d);
    tn_device_props_for_target("h100", &d);
    test_lone_ctas_few_waves(ctx, &d);
    tn_device_props_for_target("a100", &d); /* 108 SMs */
    test_pipeline_few_groups(ctx, &d);
}

/* cols_early: the COL vectors with the row's loads where every CTA runs at once and takes one row group (few long
   rows of a fusion with a weight), not where CTAs loop over row groups, never for a fusion without a COL input;
   the generated kernel then loads the weight before its first reduction. */
static void test_cols_early(tn_context *ctx) {
    tn_device_props d;
    tn_device_props_for_target("h200", &d);
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_fusion *f = NULL;
    tn_fusion_builtin(ctx, TN_BUILTIN_ADD_RMSNORM, &o, &f);
    tn_analysis a;
    tn_analyze(f, &a);
    tn_schedule_request req = {&a, 5, 40960, 16, -1, &d};
    tn_plan_desc p;
    char err[320];
    CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.batch > 2 && p.cols_early &&
              p.grid == 5 * (int64_t)p.cluster && strstr(p.why, "cols_early"),
          "add_rmsnorm 5x40960: cols_early: %s", p.why);
    tn_strbuf sb;
    tn_strbuf_init(&sb, NULL);
    tn_codegen(f, &a, &p, &sb);
    const char *weight = strstr(sb.data, "tn_vload(cc"), *reduce = strstr(sb.data, "tn_cluster_reduce<");
    CHECK(weight && reduce && weight < reduce, "add_rmsnorm 5x40960: the weight loaded after the reduction");
    tn_strbuf_free(&sb);
    req.rows = 4096;
    req.cols = 32768;
    CHECK(tn_schedule(&req, &p, err, sizeof err) && !p.cols_early, "add_rmsnorm 4096x32768: cols_early: %s", p.why);
    p.cols_early = 1; /* valid in any register plan (tune may time it) */
    CHECK(tn_plan_desc_check(&p, &a, &d, 16, err, sizeof err), "cols_early in a register plan: %s", err);
    static tn_plan_desc c[1024];
    req.rows = 5;
    req.cols = 40960;
    int found = 0;
    for (int k = 0, n = tn_schedule_candidates(&req, c, 1024); k < n; k++)
        if (c[k].cols_early) {
            found++;
            CHECK(tn_plan_desc_check(&c[k], &a, &d, 16, err, sizeof err) &&
                      (c[k].batch > TN_COL_IN_REGISTERS_MAX_VECTORS ||
                       req.rows <= TN_COLS_BEHIND_MAX_ROWS_AN_SM * d.sm_count) &&
                      c[k].grid >= 5 * (int64_t)c[k].cluster,
                  "cols_early candidate: %s", err);
        }
    CHECK(found > 0, "add_rmsnorm 5x40960: no cols_early candidate");
    /* ... each once (a plan and its other-bound twin can come down to the same bound). */
    for (int k = 0, n = tn_schedule_candidates(&req, c, 1024); k < n; k++)
        for (int j = 0; j < k && c[k].cols_early; j++)
            CHECK(!tn_plan_desc_same(&c[j], &c[k]), "add_rmsnorm 5x40960: candidates %d and %d are the same", j, k);
    /* Rows of 2 vectors a thread or fewer: cols_early (the COL loads behind the row's, on its live) where the SMs
       hold few rows in one wave; unconditional (ptxas issues them first) where many CTAs an SM come and go. */
    static const struct { int64_t rows, cols; int early; } few[] = {
        {512, 512, 1}, {1, 4096, 1}, {4 * 132, 4096, 1}, {4096, 512, 0}, {4096, 2048, 0}, {16384, 512, 0}};
    for (size_t i = 0; i < sizeof few / sizeof few[0]; i++) {
        req.rows = few[i].rows, req.cols = few[i].cols;
        CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER &&
                  p.batch <= TN_COL_IN_REGISTERS_MAX_VECTORS && p.cols_early == few[i].early,
              "add_rmsnorm %lldx%lld: batch %d, cols_early %d: %s", (long long)req.rows, (long long)req.cols, p.batch,
              p.cols_early, p.why);
        tn_strbuf_init(&sb, NULL);
        tn_codegen(f, &a, &p, &sb);
        const int behind = strstr(sb.data, "if (live && vi < NV) tn_vload(cc") ||
                           strstr(sb.data, "if (live && vi < NV) tn_vload_ro(cc");
        CHECK(strstr(sb.data, "vi < NV) tn_vload") && behind == few[i].early,
              "add_rmsnorm %lldx%lld: the COL loads' predicate against cols_early %d", (long long)req.rows,
              (long long)req.cols, p.cols_early);
        tn_strbuf_free(&sb);
    }
    /* The GPU tier's run_cols_early sets it on such register candidates (several rows a CTA, pipelined), past 2
       vectors a thread and at 2 or fewer: they exist. */
    static const int64_t shapes[2][2] = {{257, 4096}, {65536, 2048}};
    for (int i = 0; i < 2; i++)
        for (int narrow = 0; narrow < 2; narrow++) {
            req.rows = shapes[i][0], req.cols = shapes[i][1];
            found = 0;
            for (int k = 0, n = tn_schedule_candidates(&req, c, 1024); k < n; k++)
                found += c[k].kind == TN_PLAN_REGISTER && (c[k].batch <= TN_COL_IN_REGISTERS_MAX_VECTORS) == narrow &&
                         !c[k].peel && (i ? c[k].pipeline : !c[k].pipeline && c[k].rows_per_cta > 1);
            CHECK(found > 0, "add_rmsnorm %lldx%lld: no register candidate of %s 2 vectors for run_cols_early",
                  (long long)req.rows, (long long)req.cols, narrow ? "at most" : "over");
        }
    tn_fusion_destroy(f);
    tn_fusion_builtin(ctx, TN_BUILTIN_SOFTMAX, &o, &f);
    tn_analyze(f, &a);
    CHECK(tn_schedule(&req, &p, err, sizeof err) && !p.cols_early, "softmax 5x40960: cols_early: %s", p.why);
    p.cols_early = 1;
    CHECK(!tn_plan_desc_check(&p, &a, &d, 16, err, sizeof err) && strstr(err, "cols_early"),
          "cols_early without a COL input: %s", err);
    tn_fusion_destroy(f);
}

/* early_l2: with PDL, a grid of one wave (register or cluster) of a problem that fits the L2 (its first wave's rows
   half of it, where that wave runs 3 or more CTAs an SM) prefetches its first row group into L2 before the wait,
   spans of any alignment inward to 16-byte units; a grid of many waves, a larger problem, a plan without PDL and
   the other kinds do not; the check refuses it there, and tune's candidates carry it as the scheduler would. */
static void test_early_l2(tn_context *ctx) {
    tn_device_props d;
    tn_device_props_for_target("h200", &d);
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_fusion *f = NULL;
    tn_fusion_builtin(ctx, TN_BUILTIN_ADD_RMSNORM, &o, &f);
    tn_analysis a;
    tn_analyze(f, &a);
    static const struct { int64_t rows, cols; int pdl, align, early; tn_plan_kind kind; } v[] = {
        {64, 2048, 1, 16, 1, TN_PLAN_REGISTER}, {5, 40960, 1, 16, 1, TN_PLAN_CLUSTER},
        {3, 12289, 1, 2, 1, TN_PLAN_REGISTER},  /* peeled: odd rows */
        {1, 100001, 1, 2, 1, TN_PLAN_CLUSTER},  /* uneven slices of 1-element vectors */
        {64, 2048, 0, 16, 0, TN_PLAN_REGISTER}, {65536, 4096, 1, 16, 0, -1},
        {64, 131072, 1, 16, 0, TN_PLAN_CLUSTER},   /* one wave, but 67 MB: more than the L2 */
        {64, 65536, 1, 16, 1, TN_PLAN_CLUSTER},    /* 34 MB: over half the L2, 128 CTAs */
        {256, 24576, 1, 16, 1, TN_PLAN_CLUSTER},   /* 50 MB in one wave of lone clusters */
        {1000, 4096, 1, 16, 0, TN_PLAN_REGISTER},  /* 33 MB in one wave of 8 CTAs an SM: crowded */
        {512, 8192, 1, 16, 0, TN_PLAN_REGISTER},   /* 34 MB in one wave of 4 an SM */
        {500, 4096, 1, 16, 1, TN_PLAN_REGISTER},   /* 16 MB, half the L2 or less: at 4 an SM too */
        {700, 8192, 1, 16, 0, TN_PLAN_REGISTER}};  /* 46 MB, no bound: 4+ an SM by registers, one wave */
    for (int i = 0; i < (int)(sizeof v / sizeof v[0]); i++) {
        tn_schedule_request req = {&a, v[i].rows, v[i].cols, v[i].align, -1, &d, v[i].pdl, 0, 0, 0, 0};
        tn_plan_desc p;
        char err[320];
        const int ok = tn_schedule(&req, &p, err, sizeof err);
        CHECK(ok && p.early_l2 == v[i].early && ((int)v[i].kind < 0 || p.kind == v[i].kind) &&
                  !strstr(p.why, "early_l2") == !v[i].early,
              "add_rmsnorm %lldx%lld pdl %d: %s early_l2 %d, expected %d: %s", (long long)v[i].rows,
              (long long)v[i].cols, v[i].pdl, tn_plan_kind_name(p.kind), p.early_l2, v[i].early, ok ? p.why : err);
        if (!ok) continue;
        tn_strbuf sb;
        tn_strbuf_init(&sb, NULL);
        tn_codegen(f, &a, &p, &sb);
        const char *pre = strstr(sb.data, "ull>(in2 + tn_e0 + tn_c0"), *wait = strstr(sb.data, "tn_pdl_wait();"),
                   *res = strstr(sb.data, "ull>(in1 + tn_r0 * in1_ld + tn_e0"); /* the residual's row */
        CHECK(!v[i].early == !pre && !pre == !res && (!pre || (wait && pre < wait && res < wait)),
              "add_rmsnorm %lldx%lld: the weight's prefetch %s the PDL wait", (long long)v[i].rows,
              (long long)v[i].cols, pre ? "after" : "missing before");
        tn_strbuf_free(&sb);
        static tn_plan_desc c[1024];
        int with = 0;
        for (int k = 0, n = tn_schedule_candidates(&req, c, 1024); k < n; k++) {
            with += c[k].early_l2;
            CHECK(!c[k].early_l2 || tn_plan_desc_check(&c[k], &a, &d, v[i].align, err, sizeof err),
                  "early_l2 candidate: %s", err);
        }
        /* (a persistent candidate of many rows is one wave too) */
        CHECK(v[i].early ? with > 0 : !v[i].pdl ? with == 0 : 1, "add_rmsnorm %lldx%lld pdl %d: %d candidates with early_l2",
              (long long)v[i].rows, (long long)v[i].cols, v[i].pdl, with);
        if (i == 0) { /* refused without PDL and in a tma plan */
            tn_plan_desc q = p;
            q.pdl = 0;
            CHECK(!tn_plan_desc_check(&q, &a, &d, 16, err, sizeof err) && strstr(err, "early_l2"),
                  "early_l2 without pdl: %s", err);
            req.kind = TN_PLAN_TMA;
            CHECK(tn_schedule(&req, &q, err, sizeof err) && !q.early_l2, "a tma plan with early_l2");
            q.early_l2 = 1;
            CHECK(!tn_plan_desc_check(&q, &a, &d, 16, err, sizeof err) && strstr(err, "early_l2"),
                  "early_l2 in a tma plan: %s", err);
        }
    }
    tn_fusion_destroy(f);
    /* Crowded grids count their first wave: rmsnorm 1000 x 12288 at 3 CTAs an SM moves 49 MB, 19 MB in its first
       wave (on); 2000 x 4096 without a bound, 33 MB, its first wave's under half the L2 by the registers (on);
       layernorm 800 x 16384 at 2 an SM, 52 MB (on: not crowded; 700 rows, 5.3 an SM, are pipelined). */
    static const struct { tn_builtin op; int64_t rows, cols; int bound; } w[] = {
        {TN_BUILTIN_RMSNORM, 1000, 12288, 3},
        {TN_BUILTIN_RMSNORM, 2000, 4096, 0},
        {TN_BUILTIN_LAYERNORM, 800, 16384, 2}};
    for (int i = 0; i < 3; i++) {
        tn_fusion_builtin(ctx, w[i].op, &o, &f);
        tn_analyze(f, &a);
        tn_schedule_request req = {&a, w[i].rows, w[i].cols, 16, -1, &d, 1, 0, 0, 0, 0};
        tn_plan_desc p;
        char err[320];
        CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER && p.ctas_per_sm == w[i].bound &&
                  p.early_l2 && tn_analysis_bytes(&a, w[i].rows, w[i].cols) > d.l2_bytes / 2,
              "%s %lldx%lld: early_l2 over half the L2: %s", tn_builtin_name(w[i].op), (long long)w[i].rows,
              (long long)w[i].cols, p.why);
        tn_fusion_destroy(f);
    }
}

/* early_stores: add_rmsnorm's sum is stored before the reductions where every CTA (cluster) takes one row group,
   after them where the grid loops (a persistent cluster, a tma ring, a pipelined register plan) and in the kinds
   that read the row again (looped, l2_slice) or tma-ws; never in a fusion whose outputs all need a reduction
   (the check refuses it there). tune's candidates carry both values wherever the kind allows. */
static void test_early_stores_plan(tn_context *ctx) {
    tn_device_props d;
    tn_device_props_for_target("h100", &d);
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_fusion *f = NULL;
    tn_fusion_builtin(ctx, TN_BUILTIN_ADD_RMSNORM, &o, &f);
    tn_analysis a;
    tn_analyze(f, &a);
    CHECK(a.early_row_outputs == 1, "add_rmsnorm: %d early outputs, expected 1 (the sum)", a.early_row_outputs);
    static const struct { int64_t rows, cols; int kind, early; } v[] = {
        {96, 12288, -1, 1},     /* one CTA a row, 96 CTAs */
        {1, 8192, -1, 1},       /* a cluster for the one row */
        {4096, 4096, -1, 1},    /* many waves, one row group a CTA */
        {512, 32768, -1, 0},    /* clusters that loop over the rows */
        {4096, 8192, TN_PLAN_TMA, 0},
        {3, 4097, TN_PLAN_LOOPED, 0},
        {16384, 1024, TN_PLAN_TMA_WS, 0}};
    for (int i = 0; i < (int)(sizeof v / sizeof v[0]); i++) {
        tn_schedule_request req = {&a, v[i].rows, v[i].cols, 16, v[i].kind, &d, 1, 0, 0, 0, 0};
        tn_plan_desc p;
        char err[320];
        const int ok = tn_schedule(&req, &p, err, sizeof err);
        CHECK(ok && p.early_stores == v[i].early && (v[i].kind >= 0 || tn_plan_grid_loops(&p) != v[i].early) &&
                  !strstr(p.why, "early_stores") == !v[i].early,
              "add_rmsnorm %lldx%lld: %s early_stores %d, expected %d: %s", (long long)v[i].rows, (long long)v[i].cols,
              tn_plan_kind_name(p.kind), p.early_stores, v[i].early, ok ? p.why : err);
        if (!ok) continue;
        tn_plan_desc q = p;
        q.early_stores = !p.early_stores;
        const int allowed = tn_plan_early_stores_kind(&p);
        CHECK(tn_plan_desc_check(&q, &a, &d, 16, err, sizeof err) == allowed,
              "add_rmsnorm %lldx%lld, %s: early_stores %d %s", (long long)v[i].rows, (long long)v[i].cols,
              tn_plan_kind_name(p.kind), q.early_stores, allowed ? err : "passed the check");
        static tn_plan_desc c[2048];
        int on = 0, off = 0;
        for (int k = 0, n = tn_schedule_candidates(&req, c, 2048); k < n; k++) {
            if (!tn_plan_early_stores_kind(&c[k])) continue;
            on += c[k].early_stores, off += !c[k].early_stores;
            CHECK(tn_plan_desc_check(&c[k], &a, &d, 16, err, sizeof err), "early_stores candidate: %s", err);
        }
        CHECK(!allowed || (on > 0 && off > 0), "add_rmsnorm %lldx%lld: %d candidates with early_stores, %d without",
              (long long)v[i].rows, (long long)v[i].cols, on, off);
    }
    tn_fusion_destroy(f);
    tn_fusion_builtin(ctx, TN_BUILTIN_RMSNORM, &o, &f);
    tn_analyze(f, &a);
    tn_schedule_request req = {&a, 96, 32768, 16, -1, &d, 1, 0, 0, 0, 0};
    tn_plan_desc p;
    char err[320];
    CHECK(a.early_row_outputs == 0 && tn_schedule(&req, &p, err, sizeof err) && !p.early_stores,
          "rmsnorm: early outputs %d, early_stores %d", a.early_row_outputs, p.early_stores);
    p.early_stores = 1;
    CHECK(!tn_plan_desc_check(&p, &a, &d, 16, err, sizeof err) && strstr(err, "early_stores"),
          "rmsnorm with early_stores: %s", err);
    tn_fusion_destroy(f);
}

/* pdl 2: the scheduler's cluster plans trigger the next kernel at each CTA's last row group, other kinds keep
   the trigger at the top; tune twins every candidate whose grid loops with the other trigger (the GPU tier's
   run_late_trigger takes its register, looped and tma ones at these shapes), and again with none (pdl 3); the plan
   check takes 0 to 3, and 2 in every kind but tma-ws. */
static void test_late_trigger(tn_context *ctx) {
    tn_device_props d;
    tn_device_props_for_target("h200", &d);
    char err[320];
    static const struct { int64_t rows, cols; } shapes[] = {{20000, 1024}, {4099, 4097}, {1000, 20480}, {512, 65536},
                                                            {5, 40960}, {64, 131072}};
    for (int op = 0; op < TN_BUILTIN_COUNT; op++) {
        tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
        tn_fusion *f = NULL;
        tn_fusion_builtin(ctx, (tn_builtin)op, &o, &f);
        tn_analysis a;
        tn_analyze(f, &a);
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            for (int pdl = 0; pdl <= 1; pdl++) {
                tn_schedule_request req = {&a, shapes[i].rows, shapes[i].cols, 16, -1, &d, pdl};
                tn_plan_desc p;
                CHECK(tn_schedule(&req, &p, err, sizeof err), "%s", err);
                const int want = !pdl ? 0 : p.kind == TN_PLAN_CLUSTER ? 2 : 1;
                CHECK(p.pdl == want, "%s %lld x %lld pdl %d: a %s plan with pdl %d, not %d",
                      tn_builtin_name((tn_builtin)op), (long long)shapes[i].rows, (long long)shapes[i].cols, pdl,
                      tn_plan_kind_name(p.kind), p.pdl, want);
            }
            tn_schedule_request req = {&a, shapes[i].rows, shapes[i].cols, 16, -1, &d, 1};
            static tn_plan_desc c[2048];
            const int n = tn_schedule_candidates(&req, c, 2048);
            int late_other = 0;
            for (int k = 0; k < n; k++) {
                CHECK(tn_plan_desc_check(&c[k], &a, &d, 16, err, sizeof err), "candidate refused: %s", err);
                late_other += c[k].pdl == 2 && c[k].kind != TN_PLAN_CLUSTER;
                if (!tn_plan_grid_loops(&c[k])) {
                    CHECK(c[k].pdl == (c[k].kind == TN_PLAN_CLUSTER ? 2 : 1), "a %s candidate that does not loop "
                          "with pdl %d", tn_plan_kind_name(c[k].kind), c[k].pdl);
                    continue;
                }
                for (int other = 1; other <= 3; other++) { /* the same plan with each other trigger */
                    if (other == c[k].pdl) continue;
                    int twin = 0;
                    for (int j = 0; j < n && !twin; j++) {
                        tn_plan_desc t = c[j];
                        t.pdl = c[k].pdl;
                        twin = j != k && c[j].pdl == other && tn_plan_desc_same(&t, &c[k]);
                    }
                    CHECK(twin, "%s %lld x %lld: a %s candidate whose grid loops, pdl %d, without its pdl %d twin",
                          tn_builtin_name((tn_builtin)op), (long long)shapes[i].rows, (long long)shapes[i].cols,
                          tn_plan_kind_name(c[k].kind), c[k].pdl, other);
                }
            }
            if (i < 3) CHECK(late_other, "%s %lld x %lld: no pdl 2 candidate of a kind but cluster",
                             tn_builtin_name((tn_builtin)op), (long long)shapes[i].rows, (long long)shapes[i].cols);
            for (int k = 0; k < n; k++) { /* the plan check's range */
                tn_plan_desc q = c[k];
                q.pdl = 4;
                CHECK(!tn_plan_desc_check(&q, &a, &d, 16, err, sizeof err) && strstr(err, "pdl"), "pdl 4 taken");
                q.pdl = -1;
                CHECK(!tn_plan_desc_check(&q, &a, &d, 16, err, sizeof err) && strstr(err, "pdl"), "pdl -1 taken");
                q.pdl = 3;
                CHECK(tn_plan_desc_check(&q, &a, &d, 16, err, sizeof err), "pdl 3 in a %s plan: %s",
                      tn_plan_kind_name(q.kind), err);
                q.pdl = 2;
                const int ok = tn_plan_desc_check(&q, &a, &d, 16, err, sizeof err);
                CHECK(ok == (q.kind != TN_PLAN_TMA_WS), "pdl 2 in a %s plan: %s", tn_plan_kind_name(q.kind),
                      ok ? "taken" : err);
            }
        }
        tn_fusion_destroy(f);
    }
}

/* Slices left in L2 (plan field l2_slice): every such candidate passes the plan check; the check refuses the field
   outside a cluster plan, beside stages, shared slices, carry, cached or early COL vectors or the L2 prefetch,
   above batch 16 and at values other than 0 and 1; the scheduler picks it only where no cluster holds the row. */
static void test_l2_slice(tn_context *ctx) {
    tn_device_props d;
    tn_device_props_for_target("h200", &d);
    char err[320];
    for (int op = 0; op < TN_BUILTIN_COUNT; op++) {
        tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, op == TN_BUILTIN_LAYERNORM};
        tn_fusion *f = NULL;
        tn_fusion_builtin(ctx, (tn_builtin)op, &o, &f);
        tn_analysis a;
        tn_analyze(f, &a);
        tn_schedule_request req = {&a, 64, 524288, 16, -1, &d};
        tn_plan_desc p;
        /* Too long for any cluster to hold on chip: the scheduler's, clusters of 16 at these few rows. */
        CHECK(tn_schedule(&req, &p, err, sizeof err) && p.l2_slice && p.cluster == 16 && p.threads_per_row == 512,
              "%s 64 x 524288: not scheduled with l2_slice over 16 CTAs of 512 (%s, cluster %d)",
              tn_builtin_name((tn_builtin)op), tn_plan_kind_name(p.kind), p.cluster);
        /* Where on-chip clusters hold the row, never. */
        tn_schedule_request held = {&a, 64, 131072, 16, -1, &d};
        CHECK(tn_schedule(&held, &p, err, sizeof err) && !p.l2_slice, "%s 64 x 131072: scheduled with l2_slice",
              tn_builtin_name((tn_builtin)op));
        static tn_plan_desc c[1024];
        tn_plan_desc one = {0};
        int with = 0;
        for (int k = 0, n = tn_schedule_candidates(&req, c, 1024); k < n; k++) {
            if (!c[k].l2_slice) continue;
            if (!with++) one = c[k];
            CHECK(tn_plan_desc_check(&c[k], &a, &d, 16, err, sizeof err), "l2_slice candidate refused: %s", err);
        }
        CHECK(with >= 4, "%s 64 x 524288: %d l2_slice candidates", tn_builtin_name((tn_builtin)op), with);
        if (!with) {
            tn_fusion_destroy(f);
            continue;
        }
        struct { const char *what; int field; } bad[] = {{"stages", 0}, {"shared_slice", 1}, {"carry", 2},
                                                          {"col_cache", 3}, {"cols_early", 4}, {"prefetch", 5},
                                                          {"batch", 6}, {"l2_slice", 7}, {"l2_slice", 8}};
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            tn_plan_desc q = one;
            switch (bad[b].field) {
            case 0: q.stages = 1; break;
            case 1: q.stages = 1, q.shared_slice = 1; break;
            case 2: q.carry = 1; break;
            case 3: q.col_cache = 1; break;
            case 4: q.cols_early = 1; break;
            case 5: q.prefetch = 1; break;
            case 6: q.batch = 17; break;
            case 7: q.l2_slice = 2; break;
            default: q.kind = TN_PLAN_LOOPED, q.cluster = 1, q.grid = 64; break; /* a looped plan with the field */
            }
            /* (softmax has no COL input: col_cache and cols_early are refused for that first) */
            CHECK(!tn_plan_desc_check(&q, &a, &d, 16, err, sizeof err) &&
                      (strstr(err, "l2_slice") || (op == TN_BUILTIN_SOFTMAX && (bad[b].field == 3 || bad[b].field == 4)) ||
                       bad[b].field == 2),
                  "%s: l2_slice with a bad %s taken (%s)", tn_builtin_name((tn_builtin)op), bad[b].what, err);
        }
        tn_fusion_destroy(f);
    }
}

/* Rows or slices that do not divide among the threads, 3 or more vectors a thread (ptxas loads the last one
   late): half the threads where those divide them, in register and cluster plans. */
static void test_ragged(tn_context *ctx) {
    tn_device_props d;
    tn_device_props_for_target("h200", &d);
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    static const struct { tn_builtin op; int64_t rows, cols; tn_plan_kind kind; int threads, batch; } v[] = {
        {TN_BUILTIN_SOFTMAX, 1000, 9216, TN_PLAN_REGISTER, 128, 9}, /* 1152 vectors: not 256 x 5 */
        {TN_BUILTIN_RMSNORM, 65536, 9216, TN_PLAN_REGISTER, 128, 9},
        {TN_BUILTIN_ADD_RMSNORM, 5, 40960, TN_PLAN_CLUSTER, 128, 5}, /* slices of 640: not 256 x 3 */
        {TN_BUILTIN_LAYERNORM, 2000, 40960, TN_PLAN_CLUSTER, 512, 5}};
    for (int i = 0; i < (int)(sizeof v / sizeof v[0]); i++) {
        tn_fusion *f = NULL;
        tn_fusion_builtin(ctx, v[i].op, &o, &f);
        tn_analysis a;
        tn_analyze(f, &a);
        tn_schedule_request req = {&a, v[i].rows, v[i].cols, 16, -1, &d};
        tn_plan_desc p;
        char err[320];
        CHECK(tn_schedule(&req, &p, err, sizeof err) && p.kind == v[i].kind && p.threads_per_row == v[i].threads &&
                  p.batch == v[i].batch,
              "%s %lldx%lld: %s %d x %d, not %d x %d: %s", tn_builtin_name(v[i].op), (long long)v[i].rows,
              (long long)v[i].cols, tn_plan_kind_name(p.kind), p.threads_per_row, p.batch, v[i].threads, v[i].batch,
              p.why);
        tn_fusion_destroy(f);
    }
}

/* Peeled clusters (peeled_cluster): the kernel's index map brute-forced for every offset H of a row's first 16-byte
   boundary: CTA `rank` takes vectors VB + vl of the NVB = (N - H) / V from there (vl = p T + tr, p < PF or vl <
   NVL), the first CTA's threads tr < NX the columns outside them; every column exactly once. Then the scheduler:
   odd rows too long for one CTA take a peeled cluster plan in registers (16-byte vectors, no stages, COL cache,
   prefetch or carry), for every built-in, dtype and row count; rows one CTA holds keep the peeled register plan;
   JSON plans that peel a cluster with stages or a COL cache are refused. */
static void test_peeled_clusters(tn_context *ctx) {
    static unsigned char seen[40000];
    long long maps = 0;
    for (int n = 57; n < 40000; n += 1 + n / 16)
        for (int cl = 2; cl <= TN_MAX_CLUSTER; cl *= 2)
            for (int t = 32; t <= 1024; t *= 4) {
                const int v = 8;
                if (!tn_cluster_peeled_slices_fit(n, v, cl)) continue;
                const int nvc = (int)tn_cluster_slice_vectors(n / v, cl), pp = (nvc + t - 1) / t;
                const int pf = ((n - v + 1) / v - (cl - 1) * nvc) / t;
                for (int h = 0; h < v; h++) {
                    const int nvb = (n - h) / v;
                    int bad = pf < 0 || pf > pp;
                    memset(seen, 0, (size_t)n);
                    for (int rank = 0; rank < cl; rank++) {
                        const int nvl = rank + 1 < cl ? nvc : nvb - (cl - 1) * nvc, nx = rank == 0 ? n - nvb * v : 0;
                        bad |= nvl < 1 || nx > t;
                        for (int p = 0; p < pp; p++)
                            for (int tr = 0; tr < t; tr++) {
                                const int vl = p * t + tr;
                                if (!(p < pf || vl < nvl)) continue;
                                if (vl >= nvl || vl >= nvc) bad = 1;
                                else
                                    for (int e = 0; e < v; e++) seen[h + (rank * nvc + vl) * v + e]++;
                            }
                        for (int tr = 0; tr < nx; tr++) seen[tr < h ? tr : nvb * v + tr]++;
                    }
                    for (int c = 0; c < n; c++) bad |= seen[c] != 1;
                    CHECK(!bad, "peeled index map: %d columns, head %d, over %d CTAs of %d threads", n, h, cl, t);
                    maps++;
                }
            }
    CHECK(maps > 1000, "%lld peeled index maps", maps);
    CHECK(!tn_cluster_peeled_slices_fit(65, 8, 8) && tn_cluster_peeled_slices_fit(65537, 8, 8) &&
              !tn_cluster_peeled_slices_fit(121, 8, 8) && tn_cluster_peeled_slices_fit(127, 8, 8),
          "a peeled row's last slice is at least one vector at every head");
    static const char *targets[] = {"h100", "h200"};
    static const tn_dtype dts[] = {TN_DTYPE_BF16, TN_DTYPE_F16, TN_DTYPE_F32};
    static const int64_t cols[] = {65537, 65538, 100001, 131073, 200003};
    static const int64_t rows[] = {1, 3, 64, 1000, 2000, 10000};
    int peeled = 0;
    for (int ti = 0; ti < 2; ti++) {
        tn_device_props d;
        tn_device_props_for_target(targets[ti], &d);
        for (int op = 0; op < TN_BUILTIN_COUNT; op++)
            for (int di = 0; di < 3; di++) {
                tn_builtin_options o = {dts[di], dts[di], dts[di], 0};
                tn_fusion *f = NULL;
                tn_fusion_builtin(ctx, (tn_builtin)op, &o, &f);
                tn_analysis a;
                tn_analyze(f, &a);
                for (size_t ci = 0; ci < sizeof cols / sizeof cols[0]; ci++)
                    for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
                        if (dts[di] == TN_DTYPE_F32 && cols[ci] > 131073) continue;
                        tn_schedule_request req = {&a, rows[ri], cols[ci], 16, -1, &d};
                        tn_plan_desc p;
                        char err[320], what[96];
                        const int ok = tn_schedule(&req, &p, err, sizeof err);
                        snprintf(what, sizeof what, "%s %s %s %lldx%lld", targets[ti], tn_builtin_name((tn_builtin)op),
                                 tn_dtype_name(dts[di]), (long long)rows[ri], (long long)cols[ci]);
                        CHECK(ok && p.kind == TN_PLAN_CLUSTER && p.peel && p.vec * a.min_row_elem_size == 16 &&
                                  !p.stages && !p.col_cache && !p.prefetch && !p.carry && !p.l2_slice &&
                                  strstr(p.why, "cluster, peeled"),
                              "%s: a peeled cluster plan in registers: %s", what, ok ? p.why : err);
                        if (ok) check_invariants(&p, &a, &d, 16, what);
                        peeled += ok && p.peel;
                        /* Not where the tensors are at different offsets from a 16-byte boundary. */
                        req.no_peel = 1;
                        CHECK(tn_schedule(&req, &p, err, sizeof err) && !p.peel, "%s, no_peel: %s", what, p.why);
                    }
                tn_fusion_destroy(f);
            }
    }
    tn_device_props d;
    tn_device_props_for_target("h100", &d);
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_fusion *f = NULL;
    tn_fusion_builtin(ctx, TN_BUILTIN_LAYERNORM, &o, &f);
    tn_analysis a;
    tn_analyze(f, &a);
    tn_plan_desc p;
    char err[320];
    tn_schedule_request held = {&a, 64, 12289, 16, -1, &d}, odd = {&a, 2000, 65537, 16, -1, &d};
    CHECK(tn_schedule(&held, &p, err, sizeof err) && p.kind == TN_PLAN_REGISTER && p.peel, "layernorm 64x12289: %s",
          p.why);
    CHECK(tn_schedule(&odd, &p, err, sizeof err) && p.kind == TN_PLAN_CLUSTER && p.peel, "layernorm 2000x65537: %s",
          p.why);
    tn_plan_desc bad = p;
    bad.stages = 1;
    bad.smem_bytes = (int)tn_cluster_dynamic_smem(&a, &bad);
    CHECK(!tn_plan_desc_check(&bad, &a, &d, 1, err, sizeof err) && strstr(err, "peel"), "peel with stages: %s", err);
    bad = p;
    bad.col_cache = 1;
    bad.smem_bytes = (int)tn_cluster_dynamic_smem(&a, &bad);
    CHECK(!tn_plan_desc_check(&bad, &a, &d, 1, err, sizeof err) && strstr(err, "peel"), "peel with col_cache: %s", err);
    bad = p;
    bad.cols = 121; /* slices of 2 of its 15 vectors, 14 at the latest boundary: none left for the last of 8 CTAs */
    bad.cluster = 8;
    bad.grid = 8;
    CHECK(!tn_plan_desc_check(&bad, &a, &d, 1, err, sizeof err) && strstr(err, "too few for the last"),
          "peel over 8 CTAs at 121 columns: refused: %s", err);
    /* tune's candidates hold peeled clusters, persistent with the next row's L2 prefetch among them, each a valid
       plan. */
    static tn_plan_desc cands[512];
    const int nc = tn_schedule_candidates(&odd, cands, 512);
    int peeled_cands = 0, peeled_prefetch = 0;
    for (int i = 0; i < nc; i++) {
        if (cands[i].kind != TN_PLAN_CLUSTER || !cands[i].peel) continue;
        check_invariants(&cands[i], &a, &d, 16, "peeled candidate of layernorm 2000x65537");
        peeled_cands++;
        peeled_prefetch += cands[i].prefetch && tn_plan_grid_loops(&cands[i]);
    }
    CHECK(peeled_cands >= 8 && peeled_prefetch >= 2, "layernorm 2000x65537: %d peeled candidates, %d prefetching",
          peeled_cands, peeled_prefetch);
    tn_fusion_destroy(f);
    /* Where the row's loads are whole 16-byte vectors already and only a narrower COL input or an f8 output
       narrows vec, the cluster keeps the aligned plan (its COL cache, carry): f32 rows beside a bf16 weight at
       65540 columns, bf16 rows to an f8 output at 65544. */
    tn_builtin_options mixed = {TN_DTYPE_F32, TN_DTYPE_BF16, TN_DTYPE_F32, 0}, f8 = {TN_DTYPE_BF16, TN_DTYPE_BF16,
                                                                                    TN_DTYPE_F8E4M3, 0};
    const struct { tn_builtin op; const tn_builtin_options *o; int64_t rows, cols; } whole[] = {
        {TN_BUILTIN_RMSNORM, &mixed, 64, 65540}, {TN_BUILTIN_LAYERNORM, &mixed, 2000, 131076},
        {TN_BUILTIN_SOFTMAX, &f8, 2000, 65544}, {TN_BUILTIN_RMSNORM, &f8, 3, 98312}};
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++) {
        tn_fusion *g = NULL;
        tn_fusion_builtin(ctx, whole[i].op, whole[i].o, &g);
        tn_analysis b;
        tn_analyze(g, &b);
        tn_schedule_request req = {&b, whole[i].rows, whole[i].cols, 16, -1, &d};
        CHECK(tn_schedule(&req, &p, err, sizeof err) && !p.peel &&
                  p.vec * (int)tn_dtype_size(whole[i].o->input_dtype) >= 16,
              "%s %lldx%lld: rows in whole vectors, not peeled: %s", tn_builtin_name(whole[i].op),
              (long long)whole[i].rows, (long long)whole[i].cols, p.why);
        tn_fusion_destroy(g);
    }
    printf("sched peeled clusters: %lld index maps, %d plans\n", maps, peeled);
}

void test_sched(void) {
    tn_context *ctx = test_context();
    test_candidates(ctx);
    test_carries(ctx);
    test_grid(ctx);
    test_decisions(ctx);
    test_json_rejections();
    test_json_forms();
    test_register_split();
    test_uneven_slices(ctx);
    test_peeled_clusters(ctx);
    test_pipeline(ctx);
    test_cols_early(ctx);
    test_early_l2(ctx);
    test_early_stores_plan(ctx);
    test_l2_slice(ctx);
    test_late_trigger(ctx);
    test_ragged(ctx);
    tn_context_destroy(ctx);
}
