/* Fuzz tier on the CPU: random fusions (valid and malformed) through the
 * verifier, the reference and the scheduler at random shapes; every valid one
 * generates source, and one in eight is compiled with NVRTC (no spills).
 *   test_fuzz [SEEDS] [FIRST_SEED]    (ctest runs 400 seeds)
 * The GPU tier runs valid random fusions on the device against the reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "random_fusion.h"
#include "ref/ref.h"
#include "tmanorm.h"

/* The plan again with `carry` (special-function values kept from the phase that
   computes them) turned over: turned on, it compiles, or the plan check refuses
   it saying why (a kind that does not keep the row in registers, a fusion
   without carried values, too many to keep); turned off, it compiles. */
static int carry_compiles(tn_context *ctx, tn_fusion *f, const tn_plan *plan, int64_t rows, int64_t cols, uint64_t s,
                          int *carried) {
    size_t n = 0;
    tn_plan_describe(plan, TN_DESCRIBE_JSON, NULL, 0, &n);
    char *json = malloc(n + 1);
    tn_plan_describe(plan, TN_DESCRIBE_JSON, json, n, NULL);
    char *at = strstr(json, "\"carry\": 0");
    const int chosen = !at && (at = strstr(json, "\"carry\": 1")) != NULL;
    int ok = at != NULL;
    if (at) {
        at[strlen("\"carry\": ")] = chosen ? '0' : '1';
        tn_plan_options po = {0, json, NULL};
        tn_plan *again = NULL;
        const tn_status st = tn_plan_create(ctx, f, rows, cols, &po, &again);
        ok = st == TN_STATUS_OK ||
             (!chosen && st == TN_STATUS_INVALID_ARGUMENT && strstr(tn_context_last_error(ctx), "carry"));
        if (!ok) printf("FAIL seed %llu: carry %s: %s\n", (unsigned long long)s, chosen ? "off" : "on",
                        tn_context_last_error(ctx));
        *carried += st == TN_STATUS_OK || chosen;
        if (st == TN_STATUS_OK) { /* and, like every scheduled plan, without local memory */
            tn_resources res;
            tn_plan_resources(again, &res);
            if (res.spill_store_bytes || res.stack_bytes) {
                printf("FAIL seed %llu: carry: %d spill bytes\n", (unsigned long long)s, res.spill_store_bytes);
                ok = 0;
            }
        }
        tn_plan_destroy(again);
    }
    if (!ok && !at) printf("FAIL seed %llu: carry: no carry field in %s\n", (unsigned long long)s, json);
    free(json);
    return ok;
}

int main(int argc, char **argv) {
    int seeds = argc > 1 ? atoi(argv[1]) : 400;
    uint64_t first = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    tn_context_options o = {0, NULL, "h200", 1};
    tn_context *ctx = NULL;
    if (tn_context_create(&o, &ctx) != TN_STATUS_OK) return 2;
    int valid = 0, rejected = 0, planned = 0, compiled = 0, carried = 0, failures = 0;
    int long_rows = 0, long_shared = 0, long_streamed = 0, long_peeled = 0; /* long-row plans compiled, by rule */
    for (uint64_t s = first; s < first + (uint64_t)seeds; s++) {
        tn_fusion *f = NULL;
        int valid_only = (int)(s % 2);
        if (tn_random_fusion(ctx, s, valid_only, &f) != TN_STATUS_OK) {
            printf("FAIL seed %llu: builder: %s\n", (unsigned long long)s, tn_context_last_error(ctx));
            failures++;
            continue;
        }
        tn_status st = tn_fusion_verify(f);
        if (st != TN_STATUS_OK) {
            rejected++;
            if (valid_only || st != TN_STATUS_INVALID_FUSION || !strstr(tn_context_last_error(ctx), "fusion '")) {
                printf("FAIL seed %llu: %s: %s\n", (unsigned long long)s, tn_status_string(st), tn_context_last_error(ctx));
                failures++;
            }
            tn_fusion_destroy(f);
            continue;
        }
        valid++;
        /* The reference runs on any valid fusion; inputs are small random values. */
        int64_t rows = 1 + (int64_t)(s % 5), cols = 1 + (int64_t)((s * 7919) % 300);
        tn_tensor in[8];
        void *bufs[8] = {0};
        double *outs[4] = {0};
        int ni = tn_fusion_io_count(f, TN_IO_INPUT), no = tn_fusion_io_count(f, TN_IO_OUTPUT);
        for (int i = 0; i < ni; i++) {
            tn_io_info info;
            tn_fusion_io_info(f, TN_IO_INPUT, i, &info);
            bufs[i] = calloc((size_t)(rows * cols), 4);
            for (int64_t k = 0; k < rows * cols; k++) {
                float v = (float)((k * 37 + i * 11) % 17) / 8.0f - 1.0f;
                if (info.dtype == TN_DTYPE_F32) ((float *)bufs[i])[k] = v;
                else ((uint16_t *)bufs[i])[k] = info.dtype == TN_DTYPE_BF16 ? 0x3f80 : 0x3c00; /* 1.0 */
            }
            in[i] = (tn_tensor){bufs[i], info.dtype, 0};
        }
        for (int k = 0; k < no; k++) outs[k] = calloc((size_t)(rows * cols), sizeof(double));
        float params[1] = {0.5f};
        st = tn_ref_run(f, rows, cols, in, params, outs);
        if (st != TN_STATUS_OK) {
            printf("FAIL seed %llu: reference: %s\n", (unsigned long long)s, tn_context_last_error(ctx));
            failures++;
        }
        /* Scheduling and codegen; compiling one in eight keeps the tier fast. */
        tn_plan_options po = {0, NULL, s % 3 == 0 ? "looped" : NULL};
        tn_plan *plan = NULL;
        if (s % 8 == 1) {
            st = tn_plan_create(ctx, f, rows * 1000, cols * 13, &po, &plan);
            if (st == TN_STATUS_OK) {
                tn_resources res;
                tn_plan_resources(plan, &res);
                compiled++;
                planned++;
                if (res.spill_store_bytes || res.stack_bytes) {
                    printf("FAIL seed %llu: %d spill bytes\n", (unsigned long long)s, res.spill_store_bytes);
                    failures++;
                }
                failures += !carry_compiles(ctx, f, plan, rows * 1000, cols * 13, s, &carried);
            } else {
                printf("FAIL seed %llu: plan: %s\n", (unsigned long long)s, tn_context_last_error(ctx));
                failures++;
            }
        } else {
            planned++;
        }
        tn_plan_destroy(plan);
        plan = NULL;
        /* One in sixteen also at rows a CTA's registers cannot hold, many of them (the cluster plan's shared
           slices, a cluster a row) and fewer (persistent clusters streaming the next row into a stage), rows
           whose vectors no cluster divides (uneven slices), and rows two of which fit in shared memory over a
           few rows an SM (heavy fusions' clusters at 2 CTAs an SM): the scheduler's plan compiles without
           spills. */
        static const int64_t long_shapes[][2] = {{3200, 65536}, {600, 98304}, {1000, 100008}, {512, 24576},
                                                 {700, 65537}}; /* the last odd: a peeled cluster, where one fits */
        for (int i = 0; i < (int)(sizeof long_shapes / sizeof long_shapes[0]) && s % 16 == 1; i++) {
            const int64_t lr = long_shapes[i][0], ln = long_shapes[i][1];
            tn_plan_options dflt = {0, NULL, NULL};
            st = tn_plan_create(ctx, f, lr, ln, &dflt, &plan);
            if (st != TN_STATUS_OK) {
                printf("FAIL seed %llu: plan %lldx%lld: %s\n", (unsigned long long)s, (long long)lr, (long long)ln,
                       tn_context_last_error(ctx));
                failures++;
                continue;
            }
            tn_resources res;
            tn_plan_resources(plan, &res);
            char json[4096] = "";
            tn_plan_describe(plan, TN_DESCRIBE_JSON, json, sizeof json, NULL);
            long_rows++;
            long_shared += strstr(json, "\"shared_slice\": 1") != NULL;
            long_peeled += strstr(json, "\"kind\": \"cluster\"") && strstr(json, "\"peel\": 1");
            /* Shared slices that ptxas's spills pushed under 2 CTAs an SM give way to the plan without them, or
               say why they stay (that plan spilled more). */
            const char *bound = strstr(json, "\"ctas_per_sm\": ");
            if (strstr(json, "\"shared_slice\": 1") && (!bound || atoi(bound + strlen("\"ctas_per_sm\": ")) < 2) &&
                !strstr(json, "shared slices kept")) {
                printf("FAIL seed %llu: %lldx%lld: shared slices at under 2 CTAs an SM\n", (unsigned long long)s,
                       (long long)lr, (long long)ln);
                failures++;
            }
            long_streamed += strstr(json, "\"kind\": \"cluster\"") && strstr(json, "\"shared_slice\": 0") &&
                             strstr(json, "\"stages\": 1");
            if (res.spill_store_bytes || res.stack_bytes) {
                printf("FAIL seed %llu: %lldx%lld: %d spill bytes\n", (unsigned long long)s, (long long)lr,
                       (long long)ln, res.spill_store_bytes);
                failures++;
            }
            tn_plan_destroy(plan);
            plan = NULL;
        }
        for (int i = 0; i < ni; i++) free(bufs[i]);
        for (int k = 0; k < no; k++) free(outs[k]);
        tn_fusion_destroy(f);
    }
    printf("fuzz: %d seeds, %d valid, %d rejected by the verifier, %d planned, %d compiled (%d again with carry)\n",
           seeds, valid, rejected, planned, compiled, carried);
    printf("fuzz: %d long-row plans compiled, %d with shared slices, %d streaming the next row, %d peeled clusters\n",
           long_rows, long_shared, long_streamed, long_peeled);
    /* Over enough seeds every cluster rule must have been exercised, or this check tests nothing. */
    if (long_rows >= 20 && (!long_shared || !long_streamed || !long_peeled)) {
        printf("FAIL long rows: no plan took the shared slices, the streamed rows or the peeled clusters\n");
        failures++;
    }
    printf("%d passed, %d failed\n", seeds - failures, failures);
    tn_context_destroy(ctx);
    return failures ? 1 : 0;
}
