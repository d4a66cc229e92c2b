/* The verifier: every rule a fusion must satisfy, each failure naming the
   value and the rule. Planning and the reference run only verified fusions. */
#include <string.h>

#include "util/base.h"
#include "ir/ir.h"
#include "util/dtype.h"

#define FAIL(...) return tn_set_error(f->ctx, TN_STATUS_INVALID_FUSION, __VA_ARGS__)

static const char *describe(const tn_node *n) {
    switch (n->kind) {
    case TN_OP_UNARY: return tn_unary_name(n->op);
    case TN_OP_BINARY: return tn_binary_name(n->op);
    case TN_OP_REDUCE: return tn_reduce_name(n->op);
    default: return tn_op_kind_name(n->kind);
    }
}

static int valid_shape(tn_shape_class s) { return (unsigned)s <= TN_SHAPE_SCALAR; }

tn_status tn_fusion_verify(const tn_fusion *f) {
    if (!f) return TN_STATUS_INVALID_ARGUMENT;
    /* outer[i]: value i is (derived from) an outer reduction, known only after all rows. */
    unsigned char outer[TN_MAX_NODES] = {0};
    /* The builder refuses more; a fusion is checked whole in case it was built some other way. */
    if (f->num_nodes > TN_MAX_VALUES || f->num_inputs > TN_MAX_INPUTS || f->num_params > TN_MAX_PARAMS ||
        f->num_outputs > TN_MAX_OUTPUTS)
        FAIL("fusion '%s' is too large: %d values (at most %d), %d inputs (%d), %d params (%d), %d outputs (%d)",
             f->name, f->num_nodes, TN_MAX_VALUES, f->num_inputs, TN_MAX_INPUTS, f->num_params, TN_MAX_PARAMS,
             f->num_outputs, TN_MAX_OUTPUTS);
    if (f->num_nodes == 0 || f->num_outputs == 0)
        FAIL("fusion '%s' is empty: it has %d values and %d outputs; a fusion needs at least one output",
             f->name, f->num_nodes, f->num_outputs);
    for (int i = 0; i < f->num_nodes; i++) {
        const tn_node *n = &f->nodes[i];
        const char *what = describe(n);
        if ((unsigned)n->kind >= TN_OP_KIND_COUNT) FAIL("fusion '%s': value %%%d has an unknown op kind", f->name, i);
        for (int a = 0; a < n->nargs; a++) {
            tn_value v = n->args[a];
            if (v.fusion_id != f->id)
                FAIL("fusion '%s': value %%%d (%s): operand %d is a value of another fusion",
                     f->name, i, what, a);
            if (v.index >= (uint32_t)i)
                FAIL("fusion '%s': value %%%d (%s): operand %d (%%%u) is not an earlier value",
                     f->name, i, what, a, v.index);
            if (outer[v.index])
                FAIL("fusion '%s': value %%%d (%s): shape-class mismatch: operand %%%u is the result of "
                     "an outer reduction (over M), known only after every row; it can only be an output",
                     f->name, i, what, v.index);
        }
        if (!tn_dtype_is_valid(n->dtype))
            FAIL("fusion '%s': value %%%d (%s): unsupported dtype %d", f->name, i, what, (int)n->dtype);
        if (n->dtype == TN_DTYPE_F8E4M3)
            FAIL("fusion '%s': value %%%d (%s): unsupported dtype f8e4m3: it is an output storage dtype "
                 "only (give it to tn_fusion_output)", f->name, i, what);
        const tn_node *x = n->nargs > 0 ? &f->nodes[n->args[0].index] : NULL;
        const tn_node *y = n->nargs > 1 ? &f->nodes[n->args[1].index] : NULL;
        tn_shape_class shape = TN_SHAPE_SCALAR;
        switch (n->kind) {
        case TN_OP_INPUT:
            if (!valid_shape(n->shape))
                FAIL("fusion '%s': input '%s' (%%%d): unknown shape class %d", f->name, n->name, i, (int)n->shape);
            if (n->shape == TN_SHAPE_SCALAR)
                FAIL("fusion '%s': input '%s' (%%%d): shape-class mismatch: an input cannot be SCALAR; "
                     "use tn_fusion_param for a run-time scalar", f->name, n->name, i);
            shape = n->shape;
            break;
        case TN_OP_PARAM:
        case TN_OP_CONSTANT:
        case TN_OP_ROW_LENGTH: break;
        case TN_OP_CAST: shape = x->shape; break;
        case TN_OP_UNARY:
            if ((unsigned)n->op >= TN_UNARY_COUNT) FAIL("fusion '%s': value %%%d: unknown unary op %d", f->name, i, n->op);
            shape = x->shape;
            break;
        case TN_OP_BINARY:
            if ((unsigned)n->op >= TN_BINARY_COUNT) FAIL("fusion '%s': value %%%d: unknown binary op %d", f->name, i, n->op);
            if (x->dtype != y->dtype)
                FAIL("fusion '%s': value %%%d (%s): dtype mismatch: %%%u is %s and %%%u is %s; cast one of them",
                     f->name, i, what, n->args[0].index, tn_dtype_name(x->dtype), n->args[1].index,
                     tn_dtype_name(y->dtype));
            shape = x->shape == y->shape ? x->shape
                    : x->shape == TN_SHAPE_SCALAR ? y->shape
                    : y->shape == TN_SHAPE_SCALAR ? x->shape : TN_SHAPE_ROW;
            break;
        case TN_OP_REDUCE:
            if ((unsigned)n->op >= TN_REDUCE_COUNT) FAIL("fusion '%s': value %%%d: unknown reduction %d", f->name, i, n->op);
            if (n->axis != TN_AXIS_INNER && n->axis != TN_AXIS_OUTER)
                FAIL("fusion '%s': value %%%d (%s): unknown axis %d", f->name, i, what, (int)n->axis);
            if (x->shape != TN_SHAPE_ROW)
                FAIL("fusion '%s': value %%%d (%s): reduction of a non-ROW value: %%%u is %s; only ROW "
                     "values are reduced", f->name, i, what, n->args[0].index, tn_shape_class_name(x->shape));
            shape = n->axis == TN_AXIS_INNER ? TN_SHAPE_ROWSCALAR : TN_SHAPE_COL;
            outer[i] = n->axis == TN_AXIS_OUTER;
            break;
        default: break;
        }
        if (shape != n->shape)
            FAIL("fusion '%s': value %%%d (%s): shape class %s does not match its operands' (%s)", f->name, i,
                 what, tn_shape_class_name(n->shape), tn_shape_class_name(shape));
        if (n->name)
            for (int j = 0; j < i; j++)
                if (f->nodes[j].name && strcmp(f->nodes[j].name, n->name) == 0)
                    FAIL("fusion '%s': the name '%s' is used by %%%d and %%%d", f->name, n->name, j, i);
    }
    for (int o = 0; o < f->num_outputs; o++) {
        const tn_output *out = &f->outputs[o];
        if (out->value.fusion_id != f->id)
            FAIL("fusion '%s': output '%s' is a value of another fusion", f->name, out->name);
        if (out->value.index >= (uint32_t)f->num_nodes)
            FAIL("fusion '%s': output '%s' names unknown value %%%u", f->name, out->name, out->value.index);
        if (!tn_dtype_is_valid(out->dtype))
            FAIL("fusion '%s': output '%s': unsupported dtype %d", f->name, out->name, (int)out->dtype);
        tn_shape_class s = f->nodes[out->value.index].shape;
        if (s == TN_SHAPE_SCALAR)
            FAIL("fusion '%s': output '%s' (%%%u): shape-class mismatch: it is SCALAR; outputs are ROW, "
                 "ROWSCALAR or COL", f->name, out->name, out->value.index);
        if (s == TN_SHAPE_COL && !outer[out->value.index])
            FAIL("fusion '%s': output '%s' (%%%u): shape-class mismatch: a COL output must be an outer "
                 "reduction", f->name, out->name, out->value.index);
        for (int p = 0; p < o; p++)
            if (strcmp(f->outputs[p].name, out->name) == 0)
                FAIL("fusion '%s': two outputs are named '%s'", f->name, out->name);
    }
    return TN_STATUS_OK;
}
