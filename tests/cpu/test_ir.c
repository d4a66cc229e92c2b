/* IR tests: builder, verifier (every rejection), printer, structural hash,
   and allocation failure at every step of building a fusion. */
#include <stdlib.h>
#include <string.h>

#include "test.h"

tn_context *test_context(void) {
    tn_context_options o = {0, NULL, "h200", 1};
    tn_context *ctx = NULL;
    tn_context_create(&o, &ctx);
    return ctx;
}

/* Verify f; expect rejection with a message holding each needle. */
static void expect_reject(tn_context *ctx, tn_fusion *f, const char *rule, const char *needle) {
    tn_status st = tn_fusion_verify(f);
    const char *msg = tn_context_last_error(ctx);
    CHECK(st == TN_STATUS_INVALID_FUSION, "%s: status %s", rule, tn_status_string(st));
    CHECK(strstr(msg, rule) != NULL, "message '%s' lacks the rule '%s'", msg, rule);
    CHECK(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg, needle);
}

static void test_rejections(tn_context *ctx) {
    tn_fusion *f, *g;
    tn_value x, w, s, y, n, e;

    tn_fusion_create(ctx, "empty", &f);
    expect_reject(ctx, f, "is empty", "'empty'");
    tn_fusion_input(f, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &x);
    expect_reject(ctx, f, "is empty", "0 outputs");
    tn_fusion_destroy(f);

    tn_fusion_create(ctx, "scalar_input", &f);
    tn_fusion_input(f, "x", TN_DTYPE_F32, TN_SHAPE_SCALAR, &x);
    tn_fusion_output(f, "y", x, TN_DTYPE_F32);
    expect_reject(ctx, f, "shape-class mismatch", "input 'x' (%0)");
    tn_fusion_destroy(f);

    tn_fusion_create(ctx, "col_reduce", &f);
    tn_fusion_input(f, "w", TN_DTYPE_F32, TN_SHAPE_COL, &w);
    tn_fusion_reduce(f, TN_REDUCE_SUM, TN_AXIS_INNER, w, &s);
    tn_fusion_output(f, "s", s, TN_DTYPE_F32);
    expect_reject(ctx, f, "reduction of a non-ROW value", "value %1 (sum)");
    tn_fusion_destroy(f);

    tn_fusion_create(ctx, "a", &f);
    tn_fusion_create(ctx, "b", &g);
    tn_fusion_input(f, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &x);
    tn_fusion_input(g, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &y);
    tn_fusion_output(f, "y", y, TN_DTYPE_F32);
    expect_reject(ctx, f, "a value of another fusion", "output 'y'");
    tn_fusion_destroy(f);
    tn_fusion_create(ctx, "a2", &f);
    tn_fusion_input(f, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &x);
    tn_fusion_binary(f, TN_BINARY_ADD, x, y, &s);
    tn_fusion_output(f, "s", s, TN_DTYPE_F32);
    expect_reject(ctx, f, "a value of another fusion", "value %1 (add): operand 1");
    tn_fusion_destroy(f);
    tn_fusion_destroy(g);

    tn_fusion_create(ctx, "f8_input", &f);
    tn_fusion_input(f, "x", TN_DTYPE_F8E4M3, TN_SHAPE_ROW, &x);
    tn_fusion_output(f, "y", x, TN_DTYPE_F32);
    expect_reject(ctx, f, "unsupported dtype", "value %0 (input)");
    tn_fusion_destroy(f);

    tn_fusion_create(ctx, "bad_dtype", &f);
    tn_fusion_input(f, "x", (tn_dtype)99, TN_SHAPE_ROW, &x);
    tn_fusion_output(f, "y", x, TN_DTYPE_F32);
    expect_reject(ctx, f, "unsupported dtype", "99");
    tn_fusion_destroy(f);

    tn_fusion_create(ctx, "bad_out_dtype", &f);
    tn_fusion_input(f, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &x);
    tn_fusion_output(f, "y", x, (tn_dtype)7);
    expect_reject(ctx, f, "unsupported dtype", "output 'y'");
    tn_fusion_destroy(f);

    tn_fusion_create(ctx, "mixed", &f);
    tn_fusion_input(f, "x", TN_DTYPE_BF16, TN_SHAPE_ROW, &x);
    tn_fusion_input(f, "w", TN_DTYPE_F32, TN_SHAPE_COL, &w);
    tn_fusion_binary(f, TN_BINARY_MUL, x, w, &y);
    tn_fusion_output(f, "y", y, TN_DTYPE_F32);
    expect_reject(ctx, f, "dtype mismatch", "%0 is bf16 and %1 is f32");
    tn_fusion_destroy(f);

    tn_fusion_create(ctx, "scalar_out", &f);
    tn_fusion_row_length(f, &n);
    tn_fusion_output(f, "n", n, TN_DTYPE_F32);
    expect_reject(ctx, f, "shape-class mismatch", "output 'n' (%0)");
    tn_fusion_destroy(f);

    tn_fusion_create(ctx, "outer_reuse", &f);
    tn_fusion_input(f, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &x);
    tn_fusion_reduce(f, TN_REDUCE_SUM, TN_AXIS_OUTER, x, &s);
    tn_fusion_binary(f, TN_BINARY_MUL, x, s, &y);
    tn_fusion_output(f, "y", y, TN_DTYPE_F32);
    expect_reject(ctx, f, "shape-class mismatch", "outer reduction");
    tn_fusion_destroy(f);

    tn_fusion_create(ctx, "col_out", &f);
    tn_fusion_input(f, "w", TN_DTYPE_F32, TN_SHAPE_COL, &w);
    tn_fusion_output(f, "w2", w, TN_DTYPE_F32);
    expect_reject(ctx, f, "shape-class mismatch", "COL output");
    tn_fusion_destroy(f);

    tn_fusion_create(ctx, "dup", &f);
    tn_fusion_input(f, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &x);
    tn_fusion_input(f, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &e);
    tn_fusion_output(f, "y", x, TN_DTYPE_F32);
    expect_reject(ctx, f, "the name 'x' is used", "%0 and %1");
    tn_fusion_destroy(f);

    tn_fusion_create(ctx, "bad_op", &f);
    tn_fusion_input(f, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &x);
    tn_fusion_unary(f, (tn_unary_op)77, x, &y);
    tn_fusion_output(f, "y", y, TN_DTYPE_F32);
    expect_reject(ctx, f, "unknown unary op", "%1");
    tn_fusion_destroy(f);

    /* An outer reduction as an output is a valid fusion (planned later). */
    tn_fusion_create(ctx, "outer_ok", &f);
    tn_fusion_input(f, "x", TN_DTYPE_F32, TN_SHAPE_ROW, &x);
    tn_fusion_reduce(f, TN_REDUCE_SUM, TN_AXIS_OUTER, x, &s);
    tn_fusion_output(f, "dw", s, TN_DTYPE_F32);
    CHECK(tn_fusion_verify(f) == TN_STATUS_OK, "outer reduction output: %s", tn_context_last_error(ctx));
    tn_fusion_destroy(f);
}

static char *print_fusion(const tn_fusion *f) {
    size_t n = 0;
    tn_fusion_print(f, NULL, 0, &n);
    char *text = malloc(n);
    tn_fusion_print(f, text, n, NULL);
    return text;
}

static void test_builtins_print_hash(tn_context *ctx) {
    const tn_dtype dts[] = {TN_DTYPE_F32, TN_DTYPE_F16, TN_DTYPE_BF16};
    for (int op = 0; op < TN_BUILTIN_COUNT; op++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                for (int stats = 0; stats < 2; stats++) {
                    tn_builtin_options o = {dts[a], dts[b], dts[(a + b) % 3], stats};
                    tn_fusion *f = NULL;
                    tn_status st = tn_fusion_builtin(ctx, (tn_builtin)op, &o, &f);
                    CHECK(st == TN_STATUS_OK, "%s: %s", tn_builtin_name((tn_builtin)op), tn_context_last_error(ctx));
                    int want_out = 1 + (op == TN_BUILTIN_ADD_RMSNORM) + (op == TN_BUILTIN_SOFTMAX ? 0 : stats) +
                                   (op == TN_BUILTIN_LAYERNORM ? stats : 0);
                    CHECK(tn_fusion_io_count(f, TN_IO_OUTPUT) == want_out, "%s outputs %d", tn_builtin_name((tn_builtin)op),
                          tn_fusion_io_count(f, TN_IO_OUTPUT));
                    tn_fusion_destroy(f);
                }
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_fusion *f1, *f2, *f3;
    tn_fusion_builtin(ctx, TN_BUILTIN_RMSNORM, &o, &f1);
    tn_fusion_builtin(ctx, TN_BUILTIN_RMSNORM, &o, &f2);
    o.output_dtype = TN_DTYPE_F32;
    tn_fusion_builtin(ctx, TN_BUILTIN_RMSNORM, &o, &f3);
    uint64_t h1, h2, h3;
    tn_fusion_hash(f1, &h1);
    tn_fusion_hash(f2, &h2);
    tn_fusion_hash(f3, &h3);
    CHECK(h1 == h2, "same fusion, different hashes");
    CHECK(h1 != h3, "different output dtype, same hash");
    char *text = print_fusion(f1);
    const char *want =
        "fusion rmsnorm {\n"
        "  %0 = input \"x\" : bf16 ROW\n"
        "  %1 = input \"w\" : bf16 COL\n"
        "  %2 = cast %0 : f32 ROW\n"
        "  %3 = mul %2 %2 : f32 ROW\n"
        "  %4 = reduce_sum.inner %3 : f32 ROWSCALAR\n"
        "  %5 = row_length : f32 SCALAR\n"
        "  %6 = div %4 %5 : f32 ROWSCALAR\n"
        "  %7 = param \"eps\" : f32 SCALAR\n"
        "  %8 = add %6 %7 : f32 ROWSCALAR\n"
        "  %9 = rsqrt %8 : f32 ROWSCALAR\n"
        "  %10 = mul %2 %9 : f32 ROW\n"
        "  %11 = cast %1 : f32 COL\n"
        "  %12 = mul %10 %11 : f32 ROW\n"
        "  output \"y\" = %12 as bf16\n"
        "}\n";
    CHECK(strcmp(text, want) == 0, "printer:\n%s", text);
    /* A short buffer gets a truncated, terminated copy and the size it needs. */
    char small[8];
    size_t needed = 0;
    CHECK(tn_fusion_print(f1, small, sizeof small, &needed) == TN_STATUS_OK && needed == strlen(want) + 1 &&
              strlen(small) == 7, "short buffer: needed %zu", needed);
    free(text);
    tn_fusion_destroy(f1);
    tn_fusion_destroy(f2);
    tn_fusion_destroy(f3);
}


static void test_alloc_failures(void) {
    int saw_ok = 0;
    for (int k = 0; k < 400 && !saw_ok; k++) {
        failing s = {k, 0};
        tn_allocator a = failing_allocator(&s);
        tn_context_options o = {0, &a, "h200", 1};
        tn_context *ctx = NULL;
        tn_status st = tn_context_create(&o, &ctx);
        if (st == TN_STATUS_OK) {
            tn_builtin_options bo = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 1};
            tn_fusion *f = NULL;
            st = tn_fusion_builtin(ctx, TN_BUILTIN_LAYERNORM, &bo, &f);
            if (st == TN_STATUS_OK) {
                char buf[64];
                st = tn_fusion_print(f, buf, sizeof buf, NULL);
                saw_ok = st == TN_STATUS_OK;
            }
            CHECK(st == TN_STATUS_OK || st == TN_STATUS_OUT_OF_MEMORY, "failure at allocation %d gave %s", k,
                  tn_status_string(st));
            tn_fusion_destroy(f);
            tn_context_destroy(ctx);
        } else {
            CHECK(st == TN_STATUS_OUT_OF_MEMORY, "context at allocation %d gave %s", k, tn_status_string(st));
        }
        CHECK(s.live == 0, "allocation %d failing leaked %d blocks", k, s.live);
    }
    CHECK(saw_ok, "never got past allocation failures");
}

void test_ir(void) {
    tn_context *ctx = test_context();
    CHECK(ctx != NULL, "context");
    test_rejections(ctx);
    test_builtins_print_hash(ctx);
    test_alloc_failures();
    tn_context_destroy(ctx);
}
