/* Random fusions (see random_fusion.h). */
#include "random_fusion.h"

#include <stdio.h>

typedef struct rng {
    uint64_t s;
} rng;

static uint32_t next(rng *r) {
    r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(r->s >> 33);
}
static int pick(rng *r, int n) { return (int)(next(r) % (uint32_t)n); }

typedef struct val {
    tn_value v;
    tn_dtype dtype;
    tn_shape_class shape;
} val;

tn_status tn_random_fusion(tn_context *ctx, uint64_t seed, int valid_only, tn_fusion **out) {
    rng r = {seed * 0x9E3779B97F4A7C15ull + 1};
    char name[32];
    snprintf(name, sizeof name, "random_%llu", (unsigned long long)seed);
    tn_fusion *f = NULL, *other = NULL;
    tn_status st = tn_fusion_create(ctx, name, &f);
    if (st != TN_STATUS_OK) return st;
    val vals[64];
    int n = 0, reductions = 0;
    static const tn_dtype in_dtypes[] = {TN_DTYPE_F32, TN_DTYPE_F16, TN_DTYPE_BF16};
    /* Inputs: one ROW always, maybe a second ROW, a COL and a ROWSCALAR. */
    int num_inputs = 1 + pick(&r, 4);
    for (int i = 0; i < num_inputs && st == TN_STATUS_OK; i++) {
        tn_shape_class shape = i == 0 ? TN_SHAPE_ROW : (tn_shape_class)pick(&r, 3);
        tn_dtype dt = in_dtypes[pick(&r, 3)];
        snprintf(name, sizeof name, "in%d", i);
        val x = {{0, 0}, dt, shape};
        st = tn_fusion_input(f, name, dt, shape, &x.v);
        if (st != TN_STATUS_OK) break;
        /* Everything computes in f32: cast each input once. */
        val c = {{0, 0}, TN_DTYPE_F32, shape};
        st = tn_fusion_cast(f, x.v, TN_DTYPE_F32, &c.v);
        vals[n++] = c;
    }
    if (pick(&r, 2) && st == TN_STATUS_OK) {
        val p = {{0, 0}, TN_DTYPE_F32, TN_SHAPE_SCALAR};
        st = tn_fusion_param(f, "p0", &p.v);
        vals[n++] = p;
    }
    int steps = 2 + pick(&r, 10);
    for (int s = 0; s < steps && st == TN_STATUS_OK && n < 60; s++) {
        val a = vals[pick(&r, n)], b = vals[pick(&r, n)], res = a;
        int what = pick(&r, 10);
        if (what < 3) {
            /* Safe unary ops: their domain is all reals. */
            static const tn_unary_op ops[] = {TN_UNARY_NEG, TN_UNARY_ABS, TN_UNARY_TANH, TN_UNARY_SIGMOID,
                                              TN_UNARY_SILU, TN_UNARY_GELU};
            st = tn_fusion_unary(f, ops[pick(&r, 6)], a.v, &res.v);
        } else if (what < 7) {
            static const tn_binary_op ops[] = {TN_BINARY_ADD, TN_BINARY_SUB, TN_BINARY_MUL, TN_BINARY_MAX, TN_BINARY_MIN};
            st = tn_fusion_binary(f, ops[pick(&r, 5)], a.v, b.v, &res.v);
            res.shape = a.shape == b.shape ? a.shape : a.shape == TN_SHAPE_SCALAR ? b.shape
                        : b.shape == TN_SHAPE_SCALAR ? a.shape : TN_SHAPE_ROW;
        } else if (what < 9 && reductions < 3) {
            if (valid_only && a.shape != TN_SHAPE_ROW) continue;
            st = tn_fusion_reduce(f, pick(&r, 2) ? TN_REDUCE_SUM : TN_REDUCE_MAX, TN_AXIS_INNER, a.v, &res.v);
            res.shape = TN_SHAPE_ROWSCALAR;
            reductions++;
        } else if (!valid_only) {
            /* Malformed on purpose: a bf16 value against f32, or a value of another fusion. */
            if (pick(&r, 2)) {
                tn_value h;
                st = tn_fusion_cast(f, a.v, TN_DTYPE_BF16, &h);
                if (st == TN_STATUS_OK) st = tn_fusion_binary(f, TN_BINARY_ADD, h, b.v, &res.v);
            } else {
                tn_value foreign;
                if (!other) st = tn_fusion_create(ctx, "other", &other);
                if (st == TN_STATUS_OK) st = tn_fusion_input(other, "z", TN_DTYPE_F32, TN_SHAPE_ROW, &foreign);
                if (st == TN_STATUS_OK) st = tn_fusion_binary(f, TN_BINARY_MUL, a.v, foreign, &res.v);
            }
        } else {
            continue;
        }
        if (st == TN_STATUS_OK) vals[n++] = res;
    }
    /* Outputs: the last ROW value, and maybe the last ROWSCALAR one. */
    static const tn_dtype out_dtypes[] = {TN_DTYPE_F32, TN_DTYPE_F16, TN_DTYPE_BF16};
    int outs = 0;
    for (int want = 0; want < 2 && st == TN_STATUS_OK; want++)
        for (int i = n - 1; i >= 0; i--)
            if (vals[i].shape == (want ? TN_SHAPE_ROWSCALAR : TN_SHAPE_ROW)) {
                snprintf(name, sizeof name, "out%d", outs++);
                st = tn_fusion_output(f, name, vals[i].v, out_dtypes[pick(&r, 3)]);
                break;
            }
    tn_fusion_destroy(other);
    if (st != TN_STATUS_OK) {
        tn_fusion_destroy(f);
        return st;
    }
    *out = f;
    return TN_STATUS_OK;
}
