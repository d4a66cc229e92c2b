/* tmanorm: the command-line tool.
 *   tmanorm demo                       every built-in at a default shape: plan, compile, run, check
 *   tmanorm explain --op OP --rows M --cols N --dtype DT [--json] [--source]
 *   tmanorm run --op OP --rows M --cols N --dtype DT
 *   tmanorm tune --op OP --rows M --cols N --dtype DT   every candidate plan, timed
 * Run `tmanorm help` for every option. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/context.h"
#include "gpu_check.h"
#include "tune.h"
#include "tmanorm.h"

typedef struct cli {
    const char *command;
    const char *op;
    int64_t rows, cols;
    tn_dtype dtype, weight_dtype, out_dtype;
    int have_weight_dtype, have_out_dtype;
    int json, source, stats, overhead;
    const char *kind, *plan_file, *target;
    int align;
    float eps;
    int sample_rows;
} cli;

static void usage(FILE *to) {
    fprintf(to,
            "usage: tmanorm COMMAND [options]\n"
            "commands:\n"
            "  demo      build every built-in fusion at a default shape, print its plan, compile it\n"
            "            and, on a GPU, run it, check it against the reference and time it\n"
            "  explain   print the plan for a fusion and shape, why it was chosen, and the\n"
            "            compiler's resource report (works without a GPU)\n"
            "  run       run on the GPU, check against the reference, print time and GB/s\n"
            "  tune      check and time every candidate plan on the GPU, fastest first\n"
            "  help      this text\n"
            "options:\n"
            "  --op OP              rmsnorm | layernorm | softmax | add_rmsnorm\n"
            "  --rows M, --cols N   the shape [M, N] (demo: 4096 x 4096)\n"
            "  --dtype DT           f32 | f16 | bf16: input, weight and output dtype (default bf16)\n"
            "  --weight-dtype DT    weight (and bias) dtype, if different\n"
            "  --out-dtype DT       output dtype, if different (f8e4m3 too)\n"
            "  --stats              also output rstd (and mean for layernorm)\n"
            "  --eps E              epsilon (default 1e-6)\n"
            "  --kind K             force a plan kind: register | looped\n"
            "  --plan FILE          replay a plan saved as JSON (explain --json prints one)\n"
            "  --align B            alignment in bytes the tensors are promised (default 16)\n"
            "  --target T           without a GPU, plan for h200 | h100 | a100 (default h200)\n"
            "  --json               explain: print JSON\n"
            "  --source             explain: print the generated CUDA C too\n"
            "  --check-rows K       run: rows compared with the reference (default 64)\n"
            "  --overhead           run: also measure the host cost per launch\n");
}

static int parse_dtype(const char *s, tn_dtype *out) {
    if (tn_dtype_from_name(s, out) == TN_STATUS_OK) return 1;
    fprintf(stderr, "tmanorm: unknown dtype '%s' (f32, f16, bf16)\n", s);
    return 0;
}

static int parse_args(int argc, char **argv, cli *c) {
    memset(c, 0, sizeof *c);
    c->dtype = TN_DTYPE_BF16;
    c->eps = 1e-6f;
    c->sample_rows = 64;
    c->command = argc > 1 ? argv[1] : "help";
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDS_VALUE \
    if (!v) { fprintf(stderr, "tmanorm: %s needs a value\n", a); return 0; } \
    i++
        if (!strcmp(a, "--op")) { NEEDS_VALUE; c->op = v; }
        else if (!strcmp(a, "--rows")) { NEEDS_VALUE; c->rows = strtoll(v, NULL, 10); }
        else if (!strcmp(a, "--cols")) { NEEDS_VALUE; c->cols = strtoll(v, NULL, 10); }
        else if (!strcmp(a, "--dtype")) { NEEDS_VALUE; if (!parse_dtype(v, &c->dtype)) return 0; }
        else if (!strcmp(a, "--weight-dtype")) { NEEDS_VALUE; if (!parse_dtype(v, &c->weight_dtype)) return 0; c->have_weight_dtype = 1; }
        else if (!strcmp(a, "--out-dtype")) { NEEDS_VALUE; if (!parse_dtype(v, &c->out_dtype)) return 0; c->have_out_dtype = 1; }
        else if (!strcmp(a, "--eps")) { NEEDS_VALUE; c->eps = strtof(v, NULL); }
        else if (!strcmp(a, "--kind")) { NEEDS_VALUE; c->kind = v; }
        else if (!strcmp(a, "--plan")) { NEEDS_VALUE; c->plan_file = v; }
        else if (!strcmp(a, "--align")) { NEEDS_VALUE; c->align = atoi(v); }
        else if (!strcmp(a, "--target")) { NEEDS_VALUE; c->target = v; }
        else if (!strcmp(a, "--check-rows")) { NEEDS_VALUE; c->sample_rows = atoi(v); }
        else if (!strcmp(a, "--json")) c->json = 1;
        else if (!strcmp(a, "--source")) c->source = 1;
        else if (!strcmp(a, "--stats")) c->stats = 1;
        else if (!strcmp(a, "--overhead")) c->overhead = 1;
        else { fprintf(stderr, "tmanorm: unknown option '%s'\n", a); return 0; }
#undef NEEDS_VALUE
    }
    if (!c->have_weight_dtype) c->weight_dtype = c->dtype;
    if (!c->have_out_dtype) c->out_dtype = c->dtype;
    if (c->sample_rows < 1) c->sample_rows = 1;
    return 1;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
        free(text);
        text = NULL;
    }
    if (text) text[n] = '\0';
    fclose(f);
    return text;
}

static int fail(tn_context *ctx, tn_status st, const char *what) {
    fprintf(stderr, "tmanorm: %s: %s: %s\n", what, tn_status_string(st), ctx ? tn_context_last_error(ctx) : "");
    return 2;
}

/* Prints a describe() text to stdout. */
static void print_described(const tn_plan *plan, tn_describe_what what) {
    size_t n = 0;
    tn_plan_describe(plan, what, NULL, 0, &n);
    char *text = malloc(n);
    if (text && tn_plan_describe(plan, what, text, n, NULL) == TN_STATUS_OK) fputs(text, stdout);
    free(text);
}

static void print_fusion(const tn_fusion *f) {
    size_t n = 0;
    tn_fusion_print(f, NULL, 0, &n);
    char *text = malloc(n);
    if (text && tn_fusion_print(f, text, n, NULL) == TN_STATUS_OK) fputs(text, stdout);
    free(text);
}

static tn_status make_plan(tn_context *ctx, const cli *c, tn_builtin op, tn_fusion **f, tn_plan **plan) {
    tn_builtin_options bo = {c->dtype, c->weight_dtype, c->out_dtype, c->stats};
    tn_status st = tn_fusion_builtin(ctx, op, &bo, f);
    if (st != TN_STATUS_OK) return st;
    char *json = NULL;
    if (c->plan_file && !(json = read_file(c->plan_file)))
        return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "cannot read plan file '%s'", c->plan_file);
    tn_plan_options po = {c->align, json, c->kind};
    st = tn_plan_create(ctx, *f, c->rows, c->cols, &po, plan);
    free(json);
    return st;
}

static int cmd_explain(tn_context *ctx, const cli *c, tn_builtin op) {
    tn_fusion *f = NULL;
    tn_plan *plan = NULL;
    tn_status st = make_plan(ctx, c, op, &f, &plan);
    if (st != TN_STATUS_OK) {
        tn_fusion_destroy(f);
        return fail(ctx, st, "explain");
    }
    tn_resources r;
    tn_plan_resources(plan, &r);
    int64_t bytes = 0;
    tn_plan_bytes(plan, &bytes);
    if (c->json) {
        printf("{\"op\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"dtype\": \"%s\", \"target\": \"%s\", \"arch\": \"%s\", "
               "\"bytes\": %lld,\n \"plan\": ", tn_builtin_name(op), (long long)c->rows, (long long)c->cols,
               tn_dtype_name(c->dtype), ctx->props.name, ctx->arch, (long long)bytes);
        print_described(plan, TN_DESCRIBE_JSON);
        printf(",\n \"resources\": {\"registers\": %d, \"spill_store_bytes\": %d, \"spill_load_bytes\": %d, "
               "\"stack_bytes\": %d, \"static_smem_bytes\": %d, \"block_threads\": %d, \"grid_blocks\": %lld, "
               "\"compile_ms\": %.1f}}\n", r.registers, r.spill_store_bytes, r.spill_load_bytes, r.stack_bytes,
               r.static_smem_bytes, r.block_threads, (long long)r.grid_blocks, r.compile_ms);
    } else {
        printf("target: %s (%s, %d SMs)%s\n", ctx->props.name, ctx->arch, ctx->props.sm_count,
               ctx->has_gpu ? "" : " -- no GPU here, planned for the target");
        print_fusion(f);
        print_described(plan, TN_DESCRIBE_TEXT);
        print_described(plan, TN_DESCRIBE_RESOURCES);
    }
    if (c->source) print_described(plan, TN_DESCRIBE_SOURCE);
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
    return 0;
}

/* Check, time and report one plan on the GPU; 1 if the check failed. */
static int check_and_time(tn_context *ctx, tn_plan *plan, const cli *c, double ceiling, const char *label) {
    float params[1] = {c->eps};
    tn_check_options co = {42, c->sample_rows, 0, 0};
    tn_check_result cr;
    tn_status st = tn_gpu_check(plan, params, &co, &cr);
    if (st != TN_STATUS_OK) return fail(ctx, st, "check");
    printf("%s check: %s (%d rows sampled, max rel err %.2e, norm err %.2e, %lld unwritten)%s%s\n", label,
           cr.passed ? "passed" : "FAILED", (int)(c->rows < c->sample_rows ? c->rows : c->sample_rows),
           cr.max_rel_err, cr.norm_err, (long long)cr.unwritten, cr.detail[0] ? ": " : "", cr.detail);
    tn_timing t;
    st = tn_gpu_time(plan, params, &t);
    if (st != TN_STATUS_OK) return fail(ctx, st, "time");
    printf("%s time: %.2f us (spread %.2f us over replays, %d buffer sets), %.0f GB/s", label, t.us, t.us_spread,
           t.buffer_sets, t.gbs);
    if (ceiling > 0) printf(", %.1f%% of the copy ceiling (%.0f GB/s)", 100.0 * t.gbs / ceiling, ceiling);
    printf("\n");
    if (c->overhead) {
        double tn_us = 0, raw_us = 0;
        st = tn_gpu_launch_overhead(plan, params, 2000, &tn_us, &raw_us);
        if (st != TN_STATUS_OK) return fail(ctx, st, "overhead");
        printf("%s host: tn_plan_launch %.2f us/call, bare cuLaunchKernel %.2f us/call: tmanorm adds %.2f us\n", label,
               tn_us, raw_us, tn_us - raw_us);
    }
    return cr.passed ? 0 : 1;
}

static double measure_ceiling(tn_context *ctx) {
    double gbs = 0;
    if (tn_gpu_copy_ceiling(ctx, (size_t)1 << 30, &gbs) != TN_STATUS_OK) return 0;
    printf("copy ceiling: %.0f GB/s (1 GiB device-to-device copy, read + write)\n", gbs);
    return gbs;
}

static int cmd_run(tn_context *ctx, const cli *c, tn_builtin op) {
    if (!tn_context_has_gpu(ctx)) {
        fprintf(stderr, "tmanorm: run needs a GPU: %s\n", ctx->no_gpu_reason);
        return 2;
    }
    tn_fusion *f = NULL;
    tn_plan *plan = NULL;
    tn_status st = make_plan(ctx, c, op, &f, &plan);
    if (st != TN_STATUS_OK) {
        tn_fusion_destroy(f);
        return fail(ctx, st, "run");
    }
    printf("device: %s (%s)\n", ctx->props.name, ctx->arch);
    double ceiling = measure_ceiling(ctx);
    print_described(plan, TN_DESCRIBE_TEXT);
    print_described(plan, TN_DESCRIBE_RESOURCES);
    char label[128];
    snprintf(label, sizeof label, "%s %s [%lld x %lld]", tn_builtin_name(op), tn_dtype_name(c->dtype),
             (long long)c->rows, (long long)c->cols);
    int rc = check_and_time(ctx, plan, c, ceiling, label);
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
    return rc;
}

static int cmd_tune(tn_context *ctx, const cli *c, tn_builtin op) {
    if (!tn_context_has_gpu(ctx)) {
        fprintf(stderr, "tmanorm: tune needs a GPU: %s\n", ctx->no_gpu_reason);
        return 2;
    }
    tn_builtin_options bo = {c->dtype, c->weight_dtype, c->out_dtype, c->stats};
    tn_fusion *f = NULL;
    tn_status st = tn_fusion_builtin(ctx, op, &bo, &f);
    if (st != TN_STATUS_OK) return fail(ctx, st, "tune");
    float params[1] = {c->eps};
    int rc = tn_tune(ctx, f, c->rows, c->cols, params);
    tn_fusion_destroy(f);
    return rc;
}

static int cmd_demo(tn_context *ctx, cli *c) {
    if (!c->rows) c->rows = 4096;
    if (!c->cols) c->cols = 4096;
    printf("tmanorm demo: every built-in at [%lld x %lld] %s on %s (%s)\n\n", (long long)c->rows, (long long)c->cols,
           tn_dtype_name(c->dtype), ctx->props.name, ctx->arch);
    double ceiling = ctx->has_gpu ? measure_ceiling(ctx) : 0;
    int rc = 0;
    for (int op = 0; op < TN_BUILTIN_COUNT; op++) {
        tn_fusion *f = NULL;
        tn_plan *plan = NULL;
        tn_status st = make_plan(ctx, c, (tn_builtin)op, &f, &plan);
        printf("== %s ==\n", tn_builtin_name((tn_builtin)op));
        if (st != TN_STATUS_OK) {
            rc = fail(ctx, st, tn_builtin_name((tn_builtin)op));
            tn_fusion_destroy(f);
            continue;
        }
        print_fusion(f);
        print_described(plan, TN_DESCRIBE_TEXT);
        print_described(plan, TN_DESCRIBE_RESOURCES);
        if (ctx->has_gpu) {
            int r = check_and_time(ctx, plan, c, ceiling, tn_builtin_name((tn_builtin)op));
            if (r) rc = r;
        }
        printf("\n");
        tn_plan_destroy(plan);
        tn_fusion_destroy(f);
    }
    if (!ctx->has_gpu)
        printf("no GPU here (%s): every plan was made and compiled for %s (%s) but not run.\n"
               "On a machine with an NVIDIA GPU (sm_80 or newer) the demo also runs, checks and times them.\n",
               ctx->no_gpu_reason, ctx->props.name, ctx->arch);
    return rc;
}

int main(int argc, char **argv) {
    cli c;
    if (!parse_args(argc, argv, &c)) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(c.command, "help") || !strcmp(c.command, "--help") || !strcmp(c.command, "-h")) {
        usage(stdout);
        return 0;
    }
    int is_demo = !strcmp(c.command, "demo");
    if (!is_demo && strcmp(c.command, "explain") && strcmp(c.command, "run") && strcmp(c.command, "tune")) {
        fprintf(stderr, "tmanorm: unknown command '%s'\n", c.command);
        usage(stderr);
        return 2;
    }
    tn_builtin op = TN_BUILTIN_RMSNORM;
    if (!is_demo) {
        if (!c.op || tn_builtin_from_name(c.op, &op) != TN_STATUS_OK) {
            fprintf(stderr, "tmanorm: %s needs --op rmsnorm|layernorm|softmax|add_rmsnorm\n", c.command);
            return 2;
        }
        if (c.rows < 1 || c.cols < 1) {
            fprintf(stderr, "tmanorm: %s needs --rows M and --cols N, both at least 1\n", c.command);
            return 2;
        }
    }
    int needs_gpu = !strcmp(c.command, "run") || !strcmp(c.command, "tune");
    tn_context_options co = {0, NULL, c.target, c.target != NULL && !needs_gpu};
    tn_context *ctx = NULL;
    tn_status st = tn_context_create(&co, &ctx);
    if (st != TN_STATUS_OK) {
        fprintf(stderr, "tmanorm: cannot create a context: %s\n", tn_status_string(st));
        return 2;
    }
    int rc = is_demo                          ? cmd_demo(ctx, &c)
             : !strcmp(c.command, "explain") ? cmd_explain(ctx, &c, op)
             : !strcmp(c.command, "tune")    ? cmd_tune(ctx, &c, op)
                                             : cmd_run(ctx, &c, op);
    tn_context_destroy(ctx);
    return rc;
}
