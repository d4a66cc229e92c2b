/* The built-in fusions, written with the public builder like any user's. */
#include <string.h>

#include "util/base.h"
#include "ir/ir.h"

static const char *const k_builtin_names[TN_BUILTIN_COUNT] = {"rmsnorm", "layernorm", "softmax",
                                                              "add_rmsnorm"};

const char *tn_builtin_name(tn_builtin op) {
    return (unsigned)op < TN_BUILTIN_COUNT ? k_builtin_names[op] : "invalid";
}

tn_status tn_builtin_from_name(const char *name, tn_builtin *out) {
    if (!name || !out) return TN_STATUS_INVALID_ARGUMENT;
    for (int i = 0; i < TN_BUILTIN_COUNT; i++)
        if (strcmp(name, k_builtin_names[i]) == 0) {
            *out = (tn_builtin)i;
            return TN_STATUS_OK;
        }
    return TN_STATUS_INVALID_ARGUMENT;
}

/* Short-circuits the builder calls: each step runs only while st is OK. */
#define B(call) \
    do { if (st == TN_STATUS_OK) st = (call); } while (0)

/* r = rsqrt(sum(xf * xf) / N + eps); y = xf * r * wf. Shared by rmsnorm and add_rmsnorm. */
static tn_status rms_tail(tn_fusion *f, tn_value xf, tn_value w, const tn_builtin_options *o) {
    tn_status st = TN_STATUS_OK;
    tn_value sq, ss, n, ms, eps, mse, r, xr, wf, y;
    B(tn_fusion_binary(f, TN_BINARY_MUL, xf, xf, &sq));
    B(tn_fusion_reduce(f, TN_REDUCE_SUM, TN_AXIS_INNER, sq, &ss));
    B(tn_fusion_row_length(f, &n));
    B(tn_fusion_binary(f, TN_BINARY_DIV, ss, n, &ms));
    B(tn_fusion_param(f, "eps", &eps));
    B(tn_fusion_binary(f, TN_BINARY_ADD, ms, eps, &mse));
    B(tn_fusion_unary(f, TN_UNARY_RSQRT, mse, &r));
    B(tn_fusion_binary(f, TN_BINARY_MUL, xf, r, &xr));
    B(tn_fusion_cast(f, w, TN_DTYPE_F32, &wf));
    B(tn_fusion_binary(f, TN_BINARY_MUL, xr, wf, &y));
    B(tn_fusion_output(f, "y", y, o->output_dtype));
    if (o->save_stats) B(tn_fusion_output(f, "rstd", r, TN_DTYPE_F32));
    return st;
}

static tn_status build_rmsnorm(tn_fusion *f, const tn_builtin_options *o) {
    tn_status st = TN_STATUS_OK;
    tn_value x, w, xf;
    B(tn_fusion_input(f, "x", o->input_dtype, TN_SHAPE_ROW, &x));
    B(tn_fusion_input(f, "w", o->weight_dtype, TN_SHAPE_COL, &w));
    B(tn_fusion_cast(f, x, TN_DTYPE_F32, &xf));
    B(rms_tail(f, xf, w, o));
    return st;
}

static tn_status build_add_rmsnorm(tn_fusion *f, const tn_builtin_options *o) {
    tn_status st = TN_STATUS_OK;
    tn_value x, res, w, xf, rf, hf, h, h32;
    B(tn_fusion_input(f, "x", o->input_dtype, TN_SHAPE_ROW, &x));
    B(tn_fusion_input(f, "residual", o->input_dtype, TN_SHAPE_ROW, &res));
    B(tn_fusion_input(f, "w", o->weight_dtype, TN_SHAPE_COL, &w));
    B(tn_fusion_cast(f, x, TN_DTYPE_F32, &xf));
    B(tn_fusion_cast(f, res, TN_DTYPE_F32, &rf));
    B(tn_fusion_binary(f, TN_BINARY_ADD, xf, rf, &hf));
    /* The sum is rounded to the residual's dtype, as it is stored, before it is normalized. */
    B(tn_fusion_cast(f, hf, o->input_dtype, &h));
    B(tn_fusion_cast(f, h, TN_DTYPE_F32, &h32));
    B(rms_tail(f, h32, w, o));
    B(tn_fusion_output(f, "sum", h, o->input_dtype));
    return st;
}

static tn_status build_layernorm(tn_fusion *f, const tn_builtin_options *o) {
    tn_status st = TN_STATUS_OK;
    tn_value x, w, b, xf, s, n, mean, d, d2, ss, var, eps, ve, r, xn, wf, bf, xw, y;
    B(tn_fusion_input(f, "x", o->input_dtype, TN_SHAPE_ROW, &x));
    B(tn_fusion_input(f, "w", o->weight_dtype, TN_SHAPE_COL, &w));
    B(tn_fusion_input(f, "b", o->weight_dtype, TN_SHAPE_COL, &b));
    B(tn_fusion_cast(f, x, TN_DTYPE_F32, &xf));
    B(tn_fusion_reduce(f, TN_REDUCE_SUM, TN_AXIS_INNER, xf, &s));
    B(tn_fusion_row_length(f, &n));
    B(tn_fusion_binary(f, TN_BINARY_DIV, s, n, &mean));
    /* Two passes: the variance of (x - mean), not E[x^2] - mean^2. */
    B(tn_fusion_binary(f, TN_BINARY_SUB, xf, mean, &d));
    B(tn_fusion_binary(f, TN_BINARY_MUL, d, d, &d2));
    B(tn_fusion_reduce(f, TN_REDUCE_SUM, TN_AXIS_INNER, d2, &ss));
    B(tn_fusion_binary(f, TN_BINARY_DIV, ss, n, &var));
    B(tn_fusion_param(f, "eps", &eps));
    B(tn_fusion_binary(f, TN_BINARY_ADD, var, eps, &ve));
    B(tn_fusion_unary(f, TN_UNARY_RSQRT, ve, &r));
    B(tn_fusion_binary(f, TN_BINARY_MUL, d, r, &xn));
    B(tn_fusion_cast(f, w, TN_DTYPE_F32, &wf));
    B(tn_fusion_cast(f, b, TN_DTYPE_F32, &bf));
    B(tn_fusion_binary(f, TN_BINARY_MUL, xn, wf, &xw));
    B(tn_fusion_binary(f, TN_BINARY_ADD, xw, bf, &y));
    B(tn_fusion_output(f, "y", y, o->output_dtype));
    if (o->save_stats) {
        B(tn_fusion_output(f, "mean", mean, TN_DTYPE_F32));
        B(tn_fusion_output(f, "rstd", r, TN_DTYPE_F32));
    }
    return st;
}

static tn_status build_softmax(tn_fusion *f, const tn_builtin_options *o) {
    tn_status st = TN_STATUS_OK;
    tn_value x, xf, mx, d, e, s, y;
    B(tn_fusion_input(f, "x", o->input_dtype, TN_SHAPE_ROW, &x));
    B(tn_fusion_cast(f, x, TN_DTYPE_F32, &xf));
    B(tn_fusion_reduce(f, TN_REDUCE_MAX, TN_AXIS_INNER, xf, &mx));
    B(tn_fusion_binary(f, TN_BINARY_SUB, xf, mx, &d));
    B(tn_fusion_unary(f, TN_UNARY_EXP, d, &e));
    B(tn_fusion_reduce(f, TN_REDUCE_SUM, TN_AXIS_INNER, e, &s));
    B(tn_fusion_binary(f, TN_BINARY_DIV, e, s, &y));
    B(tn_fusion_output(f, "y", y, o->output_dtype));
    return st;
}

tn_status tn_fusion_builtin(tn_context *ctx, tn_builtin op, const tn_builtin_options *options,
                            tn_fusion **out) {
    if (!ctx || !options || !out) return TN_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    static tn_status (*const k_builders[TN_BUILTIN_COUNT])(tn_fusion *, const tn_builtin_options *) = {
        build_rmsnorm, build_layernorm, build_softmax, build_add_rmsnorm};
    if ((unsigned)op >= TN_BUILTIN_COUNT)
        return tn_set_error(ctx, TN_STATUS_INVALID_ARGUMENT, "unknown built-in fusion %d", (int)op);
    tn_fusion *f = NULL;
    tn_status st = tn_fusion_create(ctx, tn_builtin_name(op), &f);
    if (st == TN_STATUS_OK) st = k_builders[op](f, options);
    if (st == TN_STATUS_OK) st = tn_fusion_verify(f);
    if (st != TN_STATUS_OK) {
        tn_fusion_destroy(f);
        return st;
    }
    *out = f;
    return TN_STATUS_OK;
}
