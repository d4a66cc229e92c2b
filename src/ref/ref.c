/* The reference interpreter (see ref.h). */
#include "ref/ref.h"

#include <math.h>

#include "util/base.h"
#include "ir/ir.h"
#include "util/alloc.h"
#include "util/dtype.h"

static double unary(int op, double x) {
    switch (op) {
    case TN_UNARY_NEG: return -x;
    case TN_UNARY_ABS: return fabs(x);
    case TN_UNARY_EXP: return exp(x);
    case TN_UNARY_LOG: return log(x);
    case TN_UNARY_SQRT: return sqrt(x);
    case TN_UNARY_RSQRT: return 1.0 / sqrt(x);
    case TN_UNARY_RECIPROCAL: return 1.0 / x;
    case TN_UNARY_TANH: return tanh(x);
    case TN_UNARY_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case TN_UNARY_SILU: return x / (1.0 + exp(-x));
    case TN_UNARY_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    default: return NAN;
    }
}

static double binary(int op, double a, double b) {
    switch (op) {
    case TN_BINARY_ADD: return a + b;
    case TN_BINARY_SUB: return a - b;
    case TN_BINARY_MUL: return a * b;
    case TN_BINARY_DIV: return a / b;
    case TN_BINARY_MAX: return fmax(a, b);
    case TN_BINARY_MIN: return fmin(a, b);
    default: return NAN;
    }
}

static int is_vector(tn_shape_class s) { return s == TN_SHAPE_ROW || s == TN_SHAPE_COL; }

tn_status tn_ref_run(const tn_fusion *f, int64_t rows, int64_t cols, const tn_tensor *inputs,
                     const float *params, double *const *outputs) {
    if (!f || rows < 1 || cols < 1 || (f->num_inputs && !inputs) || (f->num_params && !params) || !outputs)
        return TN_STATUS_INVALID_ARGUMENT;
    tn_status st = tn_fusion_verify(f);
    if (st != TN_STATUS_OK) return st;
    const int nn = f->num_nodes;
    double **val = tn_calloc(&f->alloc, (size_t)nn, sizeof *val);
    if (!val) return tn_set_error(f->ctx, TN_STATUS_OUT_OF_MEMORY, "reference: out of memory");
    for (int i = 0; i < nn && st == TN_STATUS_OK; i++) {
        const tn_node *n = &f->nodes[i];
        size_t len = is_vector(n->shape) ? (size_t)cols : 1;
        val[i] = tn_calloc(&f->alloc, len, sizeof(double));
        if (!val[i]) st = tn_set_error(f->ctx, TN_STATUS_OUT_OF_MEMORY, "reference: out of memory");
    }
    for (int64_t r = 0; r < rows && st == TN_STATUS_OK; r++) {
        for (int i = 0; i < nn; i++) {
            const tn_node *n = &f->nodes[i];
            double *v = val[i];
            const int64_t len = is_vector(n->shape) ? cols : 1;
            const double *a = n->nargs > 0 ? val[n->args[0].index] : NULL;
            const double *b = n->nargs > 1 ? val[n->args[1].index] : NULL;
            const int va = n->nargs > 0 && is_vector(f->nodes[n->args[0].index].shape);
            const int vb = n->nargs > 1 && is_vector(f->nodes[n->args[1].index].shape);
            switch (n->kind) {
            case TN_OP_INPUT: {
                const tn_tensor *t = &inputs[n->io_index];
                if (n->shape == TN_SHAPE_ROW) {
                    int64_t stride = t->row_stride ? t->row_stride : cols;
                    for (int64_t c = 0; c < cols; c++) v[c] = tn_load_elem(n->dtype, t->data, r * stride + c);
                } else if (n->shape == TN_SHAPE_COL) {
                    if (r == 0)
                        for (int64_t c = 0; c < cols; c++) v[c] = tn_load_elem(n->dtype, t->data, c);
                } else {
                    v[0] = tn_load_elem(n->dtype, t->data, r);
                }
                continue;
            }
            case TN_OP_PARAM: v[0] = params[n->io_index]; continue;
            case TN_OP_CONSTANT: v[0] = (float)n->constant; continue;
            case TN_OP_ROW_LENGTH: v[0] = (double)cols; continue;
            case TN_OP_REDUCE:
                if (n->axis == TN_AXIS_INNER) {
                    double acc = n->op == TN_REDUCE_SUM ? 0.0 : -INFINITY;
                    for (int64_t c = 0; c < cols; c++)
                        acc = n->op == TN_REDUCE_SUM ? acc + a[c] : fmax(acc, a[c]);
                    v[0] = acc;
                } else {
                    for (int64_t c = 0; c < cols; c++)
                        v[c] = r == 0 ? a[c] : n->op == TN_REDUCE_SUM ? v[c] + a[c] : fmax(v[c], a[c]);
                }
                break;
            case TN_OP_CAST:
                for (int64_t c = 0; c < len; c++) v[c] = a[va ? c : 0];
                break;
            case TN_OP_UNARY:
                for (int64_t c = 0; c < len; c++) v[c] = unary(n->op, a[va ? c : 0]);
                break;
            case TN_OP_BINARY:
                for (int64_t c = 0; c < len; c++) v[c] = binary(n->op, a[va ? c : 0], b[vb ? c : 0]);
                break;
            default: break;
            }
            if (n->dtype != TN_DTYPE_F32 && !(n->kind == TN_OP_REDUCE && n->axis == TN_AXIS_OUTER && r + 1 < rows))
                for (int64_t c = 0; c < len; c++) v[c] = tn_round_to_dtype(n->dtype, v[c]);
        }
        for (int o = 0; o < f->num_outputs; o++) {
            const tn_node *n = &f->nodes[f->outputs[o].value.index];
            const double *v = val[f->outputs[o].value.index];
            if (n->shape == TN_SHAPE_ROW)
                for (int64_t c = 0; c < cols; c++) outputs[o][r * cols + c] = v[c];
            else if (n->shape == TN_SHAPE_ROWSCALAR)
                outputs[o][r] = v[0];
            else if (r + 1 == rows)
                for (int64_t c = 0; c < cols; c++) outputs[o][c] = v[c];
        }
    }
    for (int i = 0; i < nn; i++) tn_free(&f->alloc, val ? val[i] : NULL);
    tn_free(&f->alloc, val);
    return st;
}
